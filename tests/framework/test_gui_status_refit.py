"""The status line is elided again when the window narrows (reviewer B, session 9): it was elided
once, to the width it was shown at, and a narrower window then clipped it mid-letter against the
"Ready" label with no "…" (seen in the imseg and echo tabs at 899 px)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import OtherTab, SlowTab  # noqa: E402

from app.gui.main_window import MainWindow  # noqa: E402

pytestmark = pytest.mark.gui


def _fits(win, shown) -> None:
    sb = win.statusBar()
    room = sb.width() - sum(w.width() for w in (win.stage_label, win.progress_bar, win.cancel_button,
                                                 win.device_label) if w.isVisible())
    assert sb.fontMetrics().horizontalAdvance(shown) <= room, (shown, room)


def test_a_narrower_window_elides_the_status_line_again(qtbot):
    win = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(win)
    win.resize(1400, 600)
    win.show()
    qtbot.waitExposed(win)
    msg = "Segmented coffee.jpg into 71 regions (1295 superpixel pieces) in 70 ms on cpu — re-ran from stage 3"
    win.tabs[0].status_message.emit(msg)
    assert win.statusBar().currentMessage() == msg                 # the whole line fits at 1400 px
    win.resize(900, 600)
    qtbot.wait(100)
    shown = win.statusBar().currentMessage()
    assert shown.endswith("…") and msg.startswith(shown[:-1]), shown
    _fits(win, shown)
    assert win.statusBar().toolTip() == msg
    win.resize(1400, 600)                                          # wide again: whole again
    qtbot.wait(100)
    assert win.statusBar().currentMessage() == msg and win.statusBar().toolTip() == ""
    win.statusBar().showMessage("a menu's status tip")            # another message: left alone
    win.resize(900, 600)
    qtbot.wait(100)
    assert win.statusBar().currentMessage() == "a menu's status tip"
    win.close()
