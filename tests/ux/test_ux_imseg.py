"""The imseg tab pinned in a narrow window (CPU, offscreen)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tabs.imseg_tab import ImsegTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "imseg" / "coffee.jpg"


def _drawn(view):
    import pyqtgraph as pg

    h, w = view.shape
    return view.vb.mapViewToScene(pg.QtCore.QRectF(0, 0, w, h)).boundingRect()


def test_pinned_and_live_pictures_fit_their_halves(qtbot, open_tab, tab_runner):
    # before: the title "coffee.jpg — Boundaries over the image: 71 regions" made each half's
    # layout as wide as the text, for good: at a 1024 px window both pictures were drawn larger
    # than their halves and cut at the right
    tab = open_tab(ImsegTab, (900, 640))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLE)
    assert tab_runner.run(tab, coarseness=3.3) is not None
    assert tab.pin()
    assert tab_runner.run(tab, coarseness=2.6) is not None
    qtbot.wait(300)
    views = (tab._pinned_slot["view"], tab.view)
    assert views[1].glw.width() < 300                       # the case: a half narrower than the title
    for v in views:
        assert v.glw.ci.geometry().width() <= v.glw.width()
        r = _drawn(v)
        assert r.left() >= -1 and r.right() <= v.glw.width() + 1, (r, v.glw.width())
        assert v.title.toolTip().startswith(SAMPLE.name)      # the cut title's whole text
    a, b = (_drawn(v) for v in views)
    assert abs(a.width() - b.width()) <= 2
