"""Session 9: the X11-selection path of ``NameLabel`` (session 8 left it untested: offscreen has no
selection). Selecting a wrapped file name with the mouse puts the name, without the zero-width
places to wrap, into the selection clipboard (a middle-click paste names the file). Needs a
platform with a selection (X11: run under Xvfb, ``xvfb-run``); skipped with the reason elsewhere."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import loaded_tab  # noqa: E402
from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QClipboard, QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402
from test_ux8_reviewB import LONG, ZWSP, _label  # noqa: E402 - a wrapped name in a NameLabel

pytestmark = pytest.mark.gui

SHOWN = f"{LONG}\n481 x 321, RGB"   # _label's text: the name, then a line about the picture


@pytest.fixture
def selection(qapp):
    cb = QGuiApplication.clipboard()
    if not cb.supportsSelection():
        pytest.skip(f"the Qt platform {QGuiApplication.platformName()!r} has no selection clipboard "
                    "(X11's primary selection): run under Xvfb (xvfb-run) to test it")
    cb.clear(QClipboard.Mode.Selection)
    return cb


def _drag_over_all(qtbot, lab) -> None:
    """Press before the first letter, move past the last line, release: a mouse selection."""
    from PySide6.QtTest import QTest

    start, end = QPoint(1, 2), QPoint(lab.width() - 2, lab.height() - 2)
    QTest.mousePress(lab, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for k in range(1, 9):
        QTest.mouseMove(lab, start + (end - start) * (k / 8))
    QTest.mouseRelease(lab, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, end)
    qtbot.wait(50)


def test_a_mouse_selection_puts_the_name_without_wrap_points_into_the_selection(qtbot, selection):
    lab = _label(qtbot)
    _drag_over_all(qtbot, lab)
    assert lab.hasSelectedText() and ZWSP in lab.selectedText()   # the label's own selection has them
    assert selection.text(QClipboard.Mode.Selection) == SHOWN


def test_without_the_label_s_release_the_selection_holds_the_wrap_points(qtbot, selection, monkeypatch):
    """The case the label mends: Qt's own mouse release puts the raw selection (wrap points and
    all) into the X11 selection (a guard that the test above can fail)."""
    from app.ui.widgets import NameLabel

    monkeypatch.setattr(NameLabel, "mouseReleaseEvent", QLabel.mouseReleaseEvent)
    lab = _label(qtbot)
    _drag_over_all(qtbot, lab)
    got = selection.text(QClipboard.Mode.Selection)
    assert ZWSP in got and got.replace(ZWSP, "") == SHOWN


def test_selecting_the_input_line_of_a_tab_puts_the_file_name_into_the_selection(tmp_path, qtbot, selection,
                                                                                  open_tab, tab_runner):
    """The same in a tab's input line (app/tabs/base.py makes it a NameLabel, selectable by mouse)."""
    import shutil
    from pathlib import Path

    from app.tabs.imseg_tab import ImsegTab

    sample = Path(__file__).resolve().parents[2] / "resources" / "samples" / "imseg" / "coffee.jpg"
    name = "experiment_2026-11-26_session_04_camera_left_000123.jpg"
    shutil.copy(sample, tmp_path / name)
    tab = loaded_tab(open_tab, tab_runner, ImsegTab, tmp_path / name, (1200, 760))
    label = tab.input_info
    assert ZWSP in label.text()
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()))  # laid out: all lines shown
    _drag_over_all(qtbot, label)
    got = selection.text(QClipboard.Mode.Selection)
    assert name in got and ZWSP not in got
