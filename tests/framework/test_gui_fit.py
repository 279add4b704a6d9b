"""Every tab fits the window at 1280x800 and uses its space at 1920x1080 (issue 18, case 11).

Geometry, not pixels: after each tool has run on its bundled sample, every visible control
must lie inside its parent (a panel that scrolls vertically may run past the bottom, never
past the right edge), no button, spin box or combo box may be squeezed below the width its
text needs, no legend table may need sideways scrolling, and at 1920x1080 the view gets the
extra room.
"""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, QRect  # noqa: E402
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QComboBox,
    QScrollArea,
    QWidget,
)

#: every tool runs once on its sample for the module (about 40 s on 2 CPU cores)
pytestmark = pytest.mark.slow

SIZES = [(1280, 800), (1920, 1080)]


def _rect(w: QWidget, top: QWidget) -> QRect:
    return QRect(w.mapTo(top, QPoint(0, 0)), w.size())


def clipped_controls(top: QWidget) -> list[str]:
    """Every visible widget of ``top`` that is cut off (see the module docstring)."""
    bad = []
    for w in top.findChildren(QWidget):
        if not w.isVisibleTo(top) or w.isWindow() or w.width() <= 0:
            continue
        name = f"{type(w).__name__} {w.objectName() or ''} {getattr(w, 'text', lambda: '')() if isinstance(w, QAbstractButton) else ''}".strip()
        p = w.parentWidget()
        if p is not None and p is not top:
            r, pr = w.geometry(), p.rect()
            in_scroll = isinstance(p.parentWidget(), QScrollArea) and p is p.parentWidget().viewport()
            if in_scroll:  # a scrolled panel: may run past the bottom, never past the sides
                if r.left() < 0 or r.right() > pr.right():
                    bad.append(f"{name}: {r.width()} px wide in a {pr.width()} px scroll viewport")
            elif not isinstance(p.parentWidget(), QAbstractScrollArea) and not pr.contains(r):
                bad.append(f"{name}: {r.x()},{r.y()} {r.width()}x{r.height()} outside its parent "
                           f"{type(p).__name__} {pr.width()}x{pr.height()}")
        if isinstance(w, QAbstractSpinBox | QComboBox) or (isinstance(w, QAbstractButton) and w.text()):
            # a button needs its text (a one-glyph button may be narrower than the style's
            # minimum); a spin box its arrows; a combo box its arrow and a few characters
            need = (w.fontMetrics().horizontalAdvance(w.text().replace("&", "")) + 8
                    if isinstance(w, QAbstractButton) else w.minimumSizeHint().width())
            if w.width() + 1 < need:
                bad.append(f"{name}: {w.width()} px wide, needs {need}")
        if isinstance(w, QAbstractItemView) and w.objectName() in ("mesh-legend", "imseg-regions"):
            if w.horizontalScrollBar().maximum() > 0 or w.horizontalScrollBar().isVisible():
                bad.append(f"{name}: scrolls sideways ({w.horizontalScrollBar().maximum()} px)")
    return bad


def _settle(app, ms=150):
    import time

    t0 = time.time()
    while time.time() - t0 < ms / 1000:
        app.processEvents()
        time.sleep(0.01)


def _wait_idle(app, tab, timeout=240):
    import time

    t0 = time.time()
    while tab.runner.is_running() and time.time() - t0 < timeout:
        app.processEvents()
        time.sleep(0.02)
    assert not tab.runner.is_running(), f"{tab.title} still running after {timeout} s"


#: small, quick runs on the bundled samples (the layout, not the result, is tested); the echo sample with
#: test_echo_tab's quick settings (two levels, one warp of two sweeps: 0.7-1.1 s against 5.4-6.0 s for the
#: defaults on a loaded 2-core box)
QUICK = {"mvs": {"views": "0,1", "max_iter": 2}, "echo": {"levels": 2, "iters": 2, "warps": 1}}


@pytest.fixture(scope="module")
def window(qapp):
    from app.gui.main_window import MainWindow

    win = MainWindow(device="cpu")
    win.resize(1280, 800)
    win.show()
    win.open_samples()
    for tab in win.tabs:
        win.tab_widget.setCurrentWidget(tab)
        _wait_idle(qapp, tab)
        if tab.data is not None:
            if tab.settings_key in QUICK:
                tab.form.set_values(QUICK[tab.settings_key])
            assert tab.run(device="cpu"), tab.title
            _wait_idle(qapp, tab)
            assert tab.result is not None, f"{tab.title}: no result"
    yield win
    for tab in win.tabs:
        tab.runner.shutdown(10000)
    win.close()


TAB_KEYS = ["mesh", "flow", "echo", "mvs", "imseg"]


@pytest.mark.gui
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("key", TAB_KEYS)
def test_no_control_is_cut_off(window, qapp, key, size):
    tab = next(t for t in window.tabs if t.settings_key == key)
    window.resize(*size)
    window.tab_widget.setCurrentWidget(tab)
    _settle(qapp)
    assert window.width() == size[0]
    bad = clipped_controls(window)
    assert not bad, f"{tab.title} at {size[0]}x{size[1]}:\n" + "\n".join(bad)


@pytest.mark.gui
@pytest.mark.parametrize("key", TAB_KEYS)
def test_the_view_gets_the_room_of_a_large_window(window, qapp, key):
    tab = next(t for t in window.tabs if t.settings_key == key)
    window.tab_widget.setCurrentWidget(tab)
    widths = {}
    for size in SIZES:
        window.resize(*size)
        _settle(qapp)
        widths[size] = tab.view.width()
    small, large = widths[SIZES[0]], widths[SIZES[1]]
    assert large >= small + 0.6 * (SIZES[1][0] - SIZES[0][0]), widths
    assert large >= 0.55 * SIZES[1][0], widths


@pytest.mark.gui
@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_flow_frames_fill_their_panes(window, qapp, size):
    """The flow tab drew a 584x388 pair about 246 px wide inside large empty margins."""
    tab = next(t for t in window.tabs if t.settings_key == "flow")
    window.resize(*size)
    window.tab_widget.setCurrentWidget(tab)
    _settle(qapp, 300)
    w, h = tab.view.image_rect_on_screen()
    vw, vh = tab.view.width(), tab.view.height()
    H, W = tab.data.shape
    # the larger of the two arrangements: at least 80 % of the scale the best one allows
    best = max(min(vw / W, (vh - 60) / 2 / H), min(vw / 2 / W, (vh - 30) / H))
    assert w >= 0.8 * best * W, (w, h, vw, vh, tab.view.vertical)


@pytest.mark.gui
@pytest.mark.parametrize("key", ["flow", "imseg"])
def test_nothing_is_cut_off_with_a_pinned_result(window, qapp, key):
    """Pin puts a second copy of the view beside the live one: both still fit at 1280x800."""
    tab = next(t for t in window.tabs if t.settings_key == key)
    window.resize(*SIZES[0])
    window.tab_widget.setCurrentWidget(tab)
    _settle(qapp)
    assert tab.pin()
    try:
        _settle(qapp, 300)
        bad = clipped_controls(window)
        assert not bad, "\n".join(bad)
        if key == "flow":  # the live frames still fill their (halved) pane
            w, _h = tab.view.image_rect_on_screen()
            assert w >= 0.6 * tab.view.width(), (w, tab.view.width())
    finally:
        tab.unpin()
        _settle(qapp)


@pytest.mark.gui
@pytest.mark.parametrize("key", TAB_KEYS)
def test_opening_advanced_cuts_nothing(window, qapp, key):
    """The left panel follows its content: the Advanced section's longer labels widen it."""
    tab = next(t for t in window.tabs if t.settings_key == key)
    window.resize(*SIZES[0])
    window.tab_widget.setCurrentWidget(tab)
    button = getattr(tab.form, "advanced_button", None)
    assert button is not None, f"{tab.title} has no Advanced section"
    button.setChecked(True)
    try:
        _settle(qapp, 300)
        bad = clipped_controls(window)
        assert not bad, f"{tab.title}, Advanced open:\n" + "\n".join(bad)
    finally:
        button.setChecked(False)
        _settle(qapp)
