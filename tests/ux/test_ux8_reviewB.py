"""Session-8 review (B): what a long file name's zero-width wrap points give away, and the cut
caption's screen-reader name (CPU, offscreen)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import shown  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QAccessible, QGuiApplication  # noqa: E402

pytestmark = pytest.mark.gui

LONG = "experiment_2026-11-26_session_04_camera_left_<b>_frame_000123.jpg"
ZWSP = "\u200b"


def _label(qtbot):
    from app.ui.widgets import NameLabel, name_html

    lab = NameLabel("No image loaded.")
    lab.setWordWrap(True)
    lab.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    shown(qtbot, lab, (220, 120))
    lab.setText(f"<b>{name_html(LONG)}</b><br>481 x 321, RGB")
    assert ZWSP in lab.selectedText() or ZWSP in lab.text()   # the case: the label holds wrap points
    return lab


def test_copying_a_wrapped_file_name_gives_the_name_as_written(qtbot):
    # before: the input line (a selectable QLabel) copied "experiment_\u200b2026-\u200b11-…": a
    # pasted name named no file; the accessible name (what a screen reader reads) held them too
    from PySide6.QtTest import QTest

    lab = _label(qtbot)
    n = len(lab._shown_text().split("\n")[0])
    lab.setSelection(0, n)                       # the whole name, as a mouse drag selects it
    QGuiApplication.clipboard().clear()
    QTest.keyClick(lab, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == LONG

    QGuiApplication.clipboard().clear()
    menu = lab.context_menu()                    # the right-click menu's Copy
    copy = next(a for a in menu.actions() if a.text().replace("&", "") == "Copy")
    assert copy.isEnabled()
    copy.trigger()
    assert QGuiApplication.clipboard().text() == LONG

    iface = QAccessible.queryAccessibleInterface(lab)
    assert iface.text(QAccessible.Text.Name) == f"{LONG}\n481 x 321, RGB"
    assert lab.plain_text() == f"{LONG}\n481 x 321, RGB"


def test_select_all_then_copy_gives_the_whole_text_without_wrap_points(qtbot):
    lab = _label(qtbot)
    menu = lab.context_menu()
    assert not next(a for a in menu.actions() if a.text().replace("&", "") == "Copy").isEnabled()
    next(a for a in menu.actions() if a.text() == "Select All").trigger()
    QGuiApplication.clipboard().clear()
    lab.context_menu().actions()[0].trigger()
    assert QGuiApplication.clipboard().text() == f"{LONG}\n481 x 321, RGB"


def test_a_cut_caption_is_read_out_whole(qtbot):
    # before: a screen reader read the cut caption ("Pinned — a <b…"), not the whole text
    from app.ui.widgets import ElidedLabel

    lab = ElidedLabel()
    qtbot.addWidget(lab)
    lab.resize(90, 20)
    lab.show()
    full = "Pinned — a <b>x & y ü.png, k 5"
    lab.set_full_text(full)
    assert lab.text().endswith("…")
    assert QAccessible.queryAccessibleInterface(lab).text(QAccessible.Text.Name) == full


@pytest.mark.parametrize("name", [
    "a" * 23 + "u\u0308berlange_Messung.png",                           # macOS (NFD) "ü" at the cut
    "x" + "\u1112\u1161\u11ab" * 12 + ".png",                          # decomposed Korean (NFD)
    "family_" + "y" * 22 + "\U0001f468\u200d\U0001f469\u200d\U0001f467.png",  # a joined emoji
])
def test_a_long_name_never_wraps_inside_a_letter(name):
    # before: name_html put a zero-width space after every 24 characters, also between a letter
    # and its combining mark or between a Hangul syllable's parts: the mark or the syllable's
    # last part was drawn apart from its letter
    import html
    import unicodedata

    from app.ui.widgets import name_html, without_breaks

    out = html.unescape(name_html(name))
    assert ZWSP in out and without_breaks(out) == name
    for i, c in enumerate(out[:-1]):
        if c == ZWSP:
            nxt = out[i + 1]
            assert unicodedata.category(nxt) not in ("Mn", "Mc", "Me"), (name, i)
            assert not "\u1160" <= nxt <= "\u11ff" and nxt != "\u200d", (name, i)
            assert out[i - 1] != "\u200d", (name, i)


def test_side_by_side_flow_titles_fit_their_half(qtbot):
    # the flow view's two panes side by side: each title gets half the width (set_fitted_title's
    # columns=2); with the whole width a long title widened its column and the frames were cut
    import numpy as np

    from app.tabs.flow_view import FlowView

    v = shown(qtbot, FlowView(), (520, 260))
    img = np.zeros((120, 160, 3), np.uint8)
    v.set_frames(img, img)
    long = "First frame, flow as colour wheel + quality (grey), occlusions (blue), failures (red)"
    v.set_title(v.left_title, long)
    v.set_title(v.right_title, "Second frame, warped to the first by the flow (a long title)")
    qtbot.wait(100)
    assert not v.vertical                                        # the case: side by side
    half = v.glw.width() / 2
    cut = v.left_title.item.toPlainText()
    assert cut.endswith("…") and long.startswith(cut[:-1])
    assert v.left_title.item.boundingRect().width() <= half + 1
    assert v.left.sceneBoundingRect().right() <= half + 2, (v.left.sceneBoundingRect(), half)
