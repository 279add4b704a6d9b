"""Calls queued for the next event-loop turn that draw into pyqtgraph items (session 10's use-after-free:
a queued title refit read a deleted title's text item). pyqtgraph items are not QObjects that PySide
guards (a ``QGraphicsTextItem`` inside a ``LabelItem``), so each queued call into them is one of two
patterns, tested here by deleting what it draws into while it is queued:

* guarded inside: the call checks ``shiboken6.isValid`` of the items it touches (the flow view's
  ``_refit``, :func:`app.ui.widgets.set_fitted_title`);
* bound to the owner: the call is queued with the QObject that owns every item it touches as its
  context (``QTimer.singleShot(0, owner, ...)``, a signal into the owner's method), so Qt drops the
  call with the owner (the flow tab's swipe refresh; the MVS tab's growing-map preview, a signal of
  the tab into its own method, is dropped with the tab the same way).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

pytestmark = pytest.mark.gui


@pytest.fixture
def errors(monkeypatch):
    """Exceptions raised in Qt callbacks (PySide hands them to sys.excepthook)."""
    seen = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: seen.append(a[1]))
    return seen


@pytest.mark.parametrize("gone", ["left_title", "right_title", "glw"])
def test_flow_views_queued_refit_leaves_deleted_items_alone(qtbot, errors, gone):
    """Guarded inside: a show queues ``_refit``; a title (its text item with it) or the whole
    pyqtgraph layout widget is deleted before it runs."""
    import shiboken6
    from PySide6.QtWidgets import QApplication

    from app.tabs.flow_view import FlowView

    view = FlowView()
    qtbot.addWidget(view)
    view.resize(700, 400)
    img = np.random.default_rng(1101).random((60, 80)).astype(np.float32)
    view.set_frames(img, img)
    view.show()                        # queues the refit
    shiboken6.delete(getattr(view, gone))
    QApplication.processEvents()
    qtbot.wait(20)
    assert errors == []


def test_flow_tabs_queued_swipe_refresh_goes_with_the_tab(qtbot, tab_runner, errors):
    """Bound to the owner: a redraw of the pinned side queues the swipe view's new pictures
    (``QTimer.singleShot(0, tab, ...)``); the tab, and every view it would grab, is deleted first."""
    from pathlib import Path

    import shiboken6
    from PySide6.QtWidgets import QApplication

    from app.tabs.flow_tab import FlowTab

    tab = FlowTab()
    tab.resize(1300, 800)
    tab.show()
    qtbot.waitExposed(tab)
    tab.live_check.setChecked(False)
    tab_runner.load(tab, Path(__file__).resolve().parents[2] / "resources" / "samples" / "flow" / "frame1.png")
    assert tab_runner.run(tab, method="lk", window=5) is not None
    assert tab.pin()
    tab.set_swipe(True)
    QApplication.processEvents()
    queued = []
    real = tab._refresh_swipe
    tab._refresh_swipe = lambda *a, **k: (queued.append(1), real(*a, **k))
    tab._drawing_pinned = True         # as the pinned side's redraw: it queues the swipe refresh
    try:
        tab._redraw()
    finally:
        tab._drawing_pinned = False
    tab.runner.shutdown(10000)
    shiboken6.delete(tab)
    QApplication.processEvents()
    qtbot.wait(20)
    assert (queued, errors) == ([], [])

