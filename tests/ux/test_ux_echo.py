"""The echo tab as the session-6 walkthrough used it: pinned slices side by side (CPU, offscreen)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPointF  # noqa: E402

from app.tabs.echo_tab import EchoTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "echo" / "lv_synthetic.npz"


def _right_edge(view, plane) -> float:
    """The right edge of ``plane``'s picture area in the slice widget's pixels."""
    r = plane.vb.sceneBoundingRect()
    return view.glw.mapFromScene(QPointF(r.right(), r.center().y())).x()


def test_pinned_slice_views_fit_their_halves(qtbot, open_tab, tab_runner):
    # before: the three titles "Sagittal, x = 24 (frame 2)" forced each half wider than it is,
    # so the sagittal view and its title were cut off at the right edge (1300 px window, pinned)
    tab = open_tab(EchoTab, (1300, 800))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLE)
    assert tab_runner.run(tab, levels=1, iters=3) is not None
    assert tab.pin()
    assert tab_runner.run(tab, levels=1, iters=3, alpha=0.2) is not None
    qtbot.wait(100)
    pinned_view = tab._pinned_slot["view"]
    for view in (tab.view, pinned_view):
        w = view.glw.width()
        assert w < 520, "the test needs the halves narrow"
        for p in view.planes:
            assert _right_edge(view, p) <= w + 1, (p.title.text, _right_edge(view, p), w)
            assert p.title.item.boundingRect().width() <= p.vb.width() + 4, p.title.text
    assert "Sagittal, x = " in tab.view.planes[2].title.text and "frame" in tab.view.planes[2].title.text
