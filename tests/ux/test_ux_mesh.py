"""The mesh tab as the session-6 walkthrough used it: pin, k edits, undo, a short window (CPU, offscreen)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QPoint  # noqa: E402

from app.tabs.mesh_tab import MeshTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "dumbbell.ply"


@pytest.fixture
def tab(open_tab, tab_runner):
    t = open_tab(MeshTab, (1200, 760))
    t.live_check.setChecked(False)
    t.form.set_value("apsp", "cpu")
    tab_runner.load(t, SAMPLE)
    return t


def test_the_pinned_view_shows_part_numbers_and_follows_the_toggles(qtbot, tab, tab_runner):
    # before: the pinned copy never got the Display toggles: no part numbers, no edges
    assert tab_runner.run(tab, k=2) is not None
    tab.edges_check.setChecked(True)
    assert tab.pin()
    pinned = tab._pinned_slot["view"]
    assert pinned.show_reps and pinned.show_edges and not pinned.show_fuzzy
    tab.reps_check.setChecked(False)
    tab.fuzzy_check.setChecked(True)
    assert not pinned.show_reps and pinned.show_fuzzy
    assert not tab.view.show_reps and tab.view.show_fuzzy
    tab.unpin()
    qtbot.wait(50)
    tab.reps_check.setChecked(True)       # the deleted pinned view is no longer connected
    assert tab.view.show_reps


def test_the_summary_does_not_mix_cached_and_fresh_times(qtbot, tab, tab_runner):
    # before: "3 parts in 0.05 s ... time: ..., APSP 4.2 s" after a k edit (the APSP time was the
    # first run's) and "in 0.00 s" for a result shown again from the cache
    assert tab_runner.run(tab, k=2) is not None
    assert "re-used from the cache" not in tab.summary_label.text()
    assert tab_runner.run(tab, k=3) is not None
    assert tab.last_report.reused
    text = tab.summary_label.text()
    assert "re-used from the cache" in text and "times are from the run that made them" in text
    assert tab_runner.run(tab, k=2) is not None           # every stage cached
    assert not tab.last_report.ran
    text = tab.summary_label.text()
    assert "shown from the cache" in text and "in 0.00 s" not in text


def test_a_short_window_does_not_draw_the_summary_over_the_parts_table(qtbot, tab, tab_runner):
    assert tab_runner.run(tab, k=4) is not None
    tab.resize(938, 520)
    qtbot.wait(100)
    legend, summary = tab.legend, tab.summary_label
    top_of_summary = summary.mapTo(tab, QPoint(0, 0)).y()
    bottom_of_legend = legend.mapTo(tab, QPoint(0, legend.height())).y()
    assert top_of_summary >= bottom_of_legend, (top_of_summary, bottom_of_legend)
    assert summary.height() >= summary.heightForWidth(summary.width()) - 2


def test_the_parts_table_is_not_cut_at_the_right(qtbot, tab, tab_runner):
    # the side panel in its scroll area must stay as wide as the table's columns
    assert tab_runner.run(tab, k=4) is not None
    tab.resize(1280, 760)
    qtbot.wait(100)
    legend = tab.legend
    right = legend.mapTo(tab, legend.rect().topRight()).x()
    viewport = tab._side_scroll.viewport()
    assert right <= viewport.mapTo(tab, viewport.rect().topRight()).x() + 1
    assert legend.width() >= legend.minimumWidth()
