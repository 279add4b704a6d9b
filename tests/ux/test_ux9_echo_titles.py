"""Session 9: echo slice titles below 800 px (session 8's walkthrough: at 800 px, pinned, the titles
were cut at the pane's edge, "Axial, z =", and widened their columns, so the slices were cut too).
Each title now shows the longest of its forms that fits its column ("Axial, z = 24 (frame 2)",
"Axial, z = 24", "z = 24"), the whole title in its tooltip. CPU, offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import loaded_tab  # noqa: E402
from PySide6.QtCore import QPointF  # noqa: E402
from test_ux_echo import SAMPLE, pinned_pair  # noqa: E402

from app.tabs.echo_tab import EchoTab  # noqa: E402

pytestmark = pytest.mark.gui


def _fits(view) -> None:
    w = view.glw.width()
    for p in view.planes:
        r = p.vb.sceneBoundingRect()
        right = view.glw.mapFromScene(QPointF(r.right(), r.center().y())).x()
        assert right <= w + 1, ("the slice is cut", p.title.text, right, w)
        assert p.title.item.boundingRect().width() <= p.vb.width() + 4, ("the title is cut", p.title.text)
        assert f"{'zyx'[p.normal]} = {view.pos[p.normal]}" in p.title.text   # it still says where the slice is
        if "frame" not in p.title.text:
            assert "frame" in p.title.toolTip()                             # the whole title on hover


@pytest.fixture(autouse=True)
def _side_panel_kept(monkeypatch):
    """The side panel kept (it folds away below 240 px for the views, which gives the pinned halves
    ~200 px at 800 px): the case is the narrow views, as with the panel dragged out."""
    from app.ui import widgets

    monkeypatch.setattr(widgets._SplitterBalance, "MIN_VIEWS", 0)


@pytest.mark.slow
def test_pinned_slice_titles_fit_an_800_px_window(qtbot, open_tab, tab_runner):
    tab = pinned_pair(qtbot, open_tab, tab_runner)
    tab.resize(800, 600)
    qtbot.wait(150)
    pinned = tab._pinned_slot["view"]
    assert pinned.glw.width() < 200, "the test needs the halves narrow"
    for view in (tab.view, pinned):
        _fits(view)
    tab.resize(1300, 800)                      # wide again: the whole titles come back
    qtbot.wait(150)
    for view in (tab.view, pinned):
        _fits(view)
        assert all("(frame " in p.title.text for p in view.planes)


def test_a_narrow_unpinned_view_keeps_its_titles_in_their_column(qtbot, open_tab, tab_runner):
    tab = loaded_tab(open_tab, tab_runner, EchoTab, SAMPLE, (700, 560))
    qtbot.wait(150)
    assert tab.view.glw.width() < 170
    _fits(tab.view)
