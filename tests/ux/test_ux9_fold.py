"""Session 9 (session 8's L5): in an 800 px window the mesh view got ~95 px beside the 340 px side
panel (two pinned halves ~40 px each). Below 240 px for the view(s) the side panel now folds away,
with a visible cue: a button at the window's right edge that shows it again (so does dragging its
handle, or a wider window). CPU, offscreen."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")


pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "dumbbell.ply"


@pytest.fixture
def mesh_tab(qtbot, open_tab, tab_runner):
    from app.tabs.mesh_tab import MeshTab

    tab = open_tab(MeshTab, (1280, 760))
    tab.live_check.setChecked(False)
    tab.form.set_value("apsp", "cpu")
    tab_runner.load(tab, SAMPLE)
    assert tab_runner.run(tab, k=3) is not None
    qtbot.wait(200)
    return tab


def _side(tab):
    sp = tab.splitter
    return sp.sizes()[sp.count() - 1], getattr(sp._balance, "unfold_button", None)


def test_a_narrow_window_folds_the_side_panel_and_says_so(qtbot, mesh_tab):
    tab = mesh_tab
    size, button = _side(tab)
    assert size >= tab._side_scroll.minimumWidth() and (button is None or button.isHidden())
    tab.resize(800, 560)
    qtbot.wait(300)
    sizes = tab.splitter.sizes()
    size, button = _side(tab)
    assert size == 0 and sizes[1] >= 240, sizes                 # the view keeps the room
    assert button is not None and button.isVisible()             # the visible cue, at the right edge
    r = button.geometry()
    assert abs(r.right() - tab.splitter.geometry().right()) <= 2 and "side panel" in button.toolTip()
    tab.resize(1280, 760)                                         # wide again: the panel comes back
    qtbot.wait(300)
    size, button = _side(tab)
    assert size >= tab._side_scroll.minimumWidth() and button.isHidden()


def test_the_button_shows_the_folded_panel_and_it_stays(qtbot, mesh_tab):
    tab = mesh_tab
    tab.resize(800, 560)
    qtbot.wait(300)
    _, button = _side(tab)
    button.click()
    qtbot.wait(100)
    size, button = _side(tab)
    assert size >= tab._side_scroll.minimumWidth() - 1 and button.isHidden()
    tab.resize(820, 560)                                          # the user's choice is kept
    qtbot.wait(300)
    assert _side(tab)[0] > 0


def test_dragging_the_handle_out_hides_the_cue(qtbot, mesh_tab):
    tab = mesh_tab
    tab.resize(800, 560)
    qtbot.wait(300)
    sp = tab.splitter
    n = sp.count()
    sp.moveSplitter(sp.width() - 200, n - 1)                       # as a drag of the handle does
    qtbot.wait(100)
    size, button = _side(tab)
    assert size > 0 and button.isHidden()


def test_after_a_drag_of_the_left_handle_the_cue_follows_and_a_wide_window_shows_the_panel(qtbot, mesh_tab):
    """Reviewer B: a drag of another handle (the left panel's) while the panel was folded left the
    cue in the middle of the view after a resize, and the panel folded in a wide window."""
    tab = mesh_tab
    tab.resize(800, 560)
    qtbot.wait(300)
    sp = tab.splitter
    sp.moveSplitter(sp.sizes()[0] - 20, 1)                        # the left panel's handle, dragged
    qtbot.wait(100)
    tab.resize(860, 560)                                          # still narrow: folded, cue at the edge
    qtbot.wait(300)
    size, button = _side(tab)
    assert size == 0 and button.isVisible()
    assert abs(button.geometry().right() - sp.geometry().right()) <= 2
    tab.resize(1400, 760)                                         # wide: the panel comes back
    qtbot.wait(300)
    size, button = _side(tab)
    assert size >= tab._side_scroll.minimumWidth() - 1 and button.isHidden()
