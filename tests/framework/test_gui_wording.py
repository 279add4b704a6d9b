"""What the window says (issue 18, case 17, the window's half)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from gui_helpers import OtherTab, SlowTab  # noqa: E402

from app.gui.main_window import MainWindow  # noqa: E402
from app.tabs import tab_classes  # noqa: E402

pytestmark = pytest.mark.gui


def test_no_input_line_is_plain_english(qtbot):
    texts = {}
    for cls in tab_classes():
        t = cls()
        qtbot.addWidget(t)
        texts[cls.settings_key] = t.input_info.text()
    assert texts["mesh"] == "No mesh loaded."                      # was "No meshe loaded."
    assert texts["flow"] == "No frames loaded."
    assert all("meshe " not in x and "video loaded" not in x for x in texts.values()), texts


def test_a_failed_open_says_what_failed_in_the_status_bar(qtbot, tmp_path, errors):
    win = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    bad = tmp_path / "bad.slow"
    bad.write_text("bad")                                          # load_slow refuses it
    tab = win.tabs[0]
    with qtbot.waitSignal(tab.runner.failed, timeout=10000):
        assert win.open_path(bad)
    qtbot.wait(50)
    msg = win.statusBar().currentMessage()
    assert msg.startswith("Could not open bad.slow"), msg           # not "Slow tool: failed"
    assert errors and errors[-1][0] == "Cannot open file"
    win.close()


def test_a_tabs_status_line_does_not_follow_to_the_next_tab(qtbot, tmp_path, errors):
    win = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(win)
    win.show()
    win.tabs[0].status_message.emit("Segmented a.slow into 3 parts")
    assert win.statusBar().currentMessage() == "Segmented a.slow into 3 parts"
    win.tab_widget.setCurrentIndex(1)
    assert win.statusBar().currentMessage() == ""
    win.close()


def test_a_long_status_line_is_elided_and_kept_whole_in_the_tool_tip(qtbot):
    """A message longer than the room beside the permanent widgets ends in "…" (it used to be
    cut off mid-word behind the "Ready" label) and the whole text is the status bar's tool tip."""
    win = MainWindow(tab_classes=[SlowTab, OtherTab])
    qtbot.addWidget(win)
    win.resize(900, 600)
    win.show()
    qtbot.waitExposed(win)
    long = "Echo: " + ", ".join(f"pair {i}: mean |u| {i * 0.37:.2f} px" for i in range(30))
    win.tabs[0].status_message.emit(long)
    shown = win.statusBar().currentMessage()
    assert shown.endswith("…") and long.startswith(shown[:-1]), shown
    fm = win.statusBar().fontMetrics()
    room = win.statusBar().width() - win.stage_label.width() - win.progress_bar.width()
    assert fm.horizontalAdvance(shown) <= room, (fm.horizontalAdvance(shown), room)
    assert win.statusBar().toolTip() == long
    win.tabs[0].status_message.emit("Segmented a.slow into 3 parts")  # short: whole, no tool tip
    assert win.statusBar().currentMessage() == "Segmented a.slow into 3 parts"
    assert win.statusBar().toolTip() == ""
    win.close()
