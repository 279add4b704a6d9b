"""Session-8 walkthrough items in the tab framework (app/tabs/base.py), CPU, offscreen: a size
note that no parameter can act on is still shown (L6), and cancelling a first run says that
nothing was computed (L7)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "imseg" / "coffee.jpg"


def _imseg_tab(open_tab, tab_runner, monkeypatch):
    from app.tabs.imseg_tab import ImsegTab
    from app.tools import imseg_report

    monkeypatch.setattr(imseg_report, "CPU_COMFORT_PIXELS", 1000)   # the sample counts as a huge image
    tab = open_tab(ImsegTab, (1200, 760))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLE)
    return tab


def test_a_size_note_without_a_parameter_is_shown_and_the_run_goes_on(qtbot, open_tab, tab_runner, monkeypatch):
    # before: imseg's note (no parameter sets a working size) was dropped in the window; the CLI
    # printed it and the README promised it
    tab = _imseg_tab(open_tab, tab_runner, monkeypatch)
    seen = []
    tab.status_message.connect(seen.append)
    res = tab_runner.run(tab, device="cpu")
    assert res is not None                                   # it ran, no dialog stopped it
    note = [m for m in seen if "on the CPU take about" in m]
    assert note and note[0].startswith(f"{tab.run_label}: running on coffee.jpg")


def test_cancelling_a_first_run_says_nothing_was_computed(qtbot, open_tab, tab_runner, monkeypatch):
    tab = _imseg_tab(open_tab, tab_runner, monkeypatch)
    assert tab.result is None
    with qtbot.waitSignal(tab.runner.cancelled, timeout=60000):
        assert tab.run(device="cpu")
        tab.runner.cancel()
    assert tab._last_status == "Cancelled; nothing was computed."
    # with a result shown, a cancelled run keeps it and says so
    assert tab_runner.run(tab, device="cpu") is not None
    with qtbot.waitSignal(tab.runner.cancelled, timeout=60000):
        assert tab.run(device="cpu", overrides={"coarseness": 2.0})
        tab.runner.cancel()
    assert "nothing was computed" not in tab._last_status and tab.result is not None


def test_copying_a_long_file_name_from_the_input_line_gives_the_name(tmp_path, qtbot, open_tab, tab_runner):
    # reviewer B's F1 in the tab: the input line wraps a long name at zero-width spaces; Copy and the
    # screen reader's name must give the file's name without them
    import shutil

    from PySide6.QtGui import QGuiApplication

    from app.tabs.imseg_tab import ImsegTab

    name = "experiment_2026-11-26_session_04_camera_left_000123.jpg"
    shutil.copy(SAMPLE, tmp_path / name)
    tab = open_tab(ImsegTab, (1200, 760))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, tmp_path / name)
    label = tab.input_info
    assert "\u200b" in label.text()                      # it may wrap on screen
    assert name in label.accessibleName() and "\u200b" not in label.accessibleName()
    label.setSelection(0, len(label._shown_text()))
    label.copy_selection()
    copied = QGuiApplication.clipboard().text()
    assert name in copied and "\u200b" not in copied
