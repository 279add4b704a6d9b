"""First start: every tab's empty view says what to open (session-6 walkthrough; CPU, offscreen)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tabs.echo_tab import EchoTab  # noqa: E402
from app.tabs.flow_tab import FlowTab  # noqa: E402
from app.tabs.imseg_tab import ImsegTab  # noqa: E402
from app.tabs.mvs_tab import MvsTab  # noqa: E402

pytestmark = pytest.mark.gui

CASES = [(FlowTab, lambda t: t.view, "No frames loaded"),
         (EchoTab, lambda t: t.view, "No volumes loaded"),
         (MvsTab, lambda t: t.map_view, "No scene loaded"),
         (ImsegTab, lambda t: t.view, "No image loaded")]


@pytest.mark.parametrize("cls, view_of, title", CASES, ids=["flow", "echo", "mvs", "imseg"])
def test_the_empty_view_says_what_to_open_until_an_input_comes(qtbot, open_tab, tab_runner, cls, view_of, title):
    # before: flow showed two blank panes, echo three blank squares crossed by the crosshair,
    # MVS a full-height 0..1 colour bar; only the mesh and imseg views said what to do
    tab = open_tab(cls, (1300, 800))
    view = view_of(tab)
    hint = view.empty_hint
    assert hint.isVisible() and title in hint.text() and "bundled sample" in hint.text()
    assert hint.geometry() == view.rect()
    top = view.childAt(view.rect().center())        # on top of the view's own widgets
    assert top is hint or hint.isAncestorOf(top), top
    if cls is MvsTab:
        assert not view.bar.isVisible()
    tab.resize(1000, 700)
    qtbot.wait(20)
    assert hint.geometry() == view.rect()
    tab.live_check.setChecked(False)
    tab_runner.load(tab, tab.samples()[0])
    assert not hint.isVisible()


def test_the_mvs_3d_placeholder_is_not_cut_at_1280(qtbot, open_tab):
    # before: "Run to see the reconstructed points and the came" (one unwrapped line)
    tab = open_tab(MvsTab, (1280, 760))
    qtbot.wait(50)
    cloud = tab.cloud_view
    label = cloud.placeholder
    fits = label.sizeHint().width() <= cloud.width() or label.wordWrap()
    assert fits and label.heightForWidth(cloud.width()) <= cloud.height(), (label.sizeHint(), cloud.width())
