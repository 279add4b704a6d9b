"""Review B #8 (session 10): at 860x640 the MVS map pane shrank to ~170 px beside its 220 px side panel,
because the fold threshold (240 px) counted the map and the 3-D view together. The MVS tab asks for
240 px a pane (MIN_VIEW_WIDTH 480), so its side panel folds away first. CPU, offscreen."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

pytestmark = pytest.mark.gui


def test_a_narrow_mvs_window_folds_the_side_panel_before_the_panes_shrink(qtbot, open_tab):
    from app.tabs.mvs_tab import MvsTab

    tab = open_tab(MvsTab, (1280, 760))
    qtbot.wait(200)
    sp = tab.splitter
    assert sp.sizes()[-1] > 0                       # wide: the side panel is shown
    tab.resize(860, 640)
    qtbot.wait(300)
    sizes = sp.sizes()
    assert sizes[-1] == 0 and sizes[1] >= MvsTab.MIN_VIEW_WIDTH, sizes   # folded; the two panes keep the room
    button = sp._balance.unfold_button
    assert button is not None and button.isVisible()
    tab.resize(1280, 760)
    qtbot.wait(300)
    assert sp.sizes()[-1] > 0                       # wide again: back
