"""A pin queues its halves' sharing for the next event-loop turn (reviewer B, session 9): a tab
deleted before then (a window closed right after Pin, a test ending on a pin) must take the
queued call with it; it ran on the deleted splitter ('Internal C++ object already deleted')."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "imseg" / "coffee.jpg"


def test_a_tab_deleted_right_after_a_pin_leaves_no_queued_call(qtbot, tab_runner, monkeypatch):
    import sys

    import shiboken6

    from app.tabs.imseg_tab import ImsegTab

    errors = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: errors.append(a[1]))
    tab = ImsegTab()
    tab.resize(1300, 800)
    tab.show()
    qtbot.waitExposed(tab)
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLE)
    assert tab_runner.run(tab) is not None
    assert tab.pin()
    tab.runner.shutdown(10000)
    shiboken6.delete(tab)
    qtbot.wait(50)
    assert errors == []
