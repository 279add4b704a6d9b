"""The Qt-free job protocol: progress, sub-ranges, throttling, cancellation."""

from __future__ import annotations

import threading
import time

import pytest

from gpu_kernels.jobs import Cancelled, Progress, as_progress


def test_update_reports_fraction_and_stage():
    seen = []
    p = Progress(lambda f, s: seen.append((f, s)), min_interval=0)
    p.update(0.25, "dual graph")
    p.update(0.5)
    assert seen == [(0.25, "dual graph"), (0.5, "dual graph")]
    assert (p.fraction, p.stage) == (0.5, "dual graph")


def test_fractions_are_clamped():
    seen = []
    p = Progress(lambda f, s: seen.append(f), min_interval=0)
    p.update(-1, "a")
    p.update(7, "a")
    assert seen == [0.0, 1.0]


def test_sub_maps_onto_its_range_and_nests():
    seen = []
    p = Progress(lambda f, s: seen.append((round(f, 4), s)), min_interval=0)
    half = p.sub(0.5, 1.0, prefix="APSP")
    quarter = half.sub(0.5, 1.0)
    half.update(0.0, "tiles")
    quarter.update(0.5, "row 3")
    assert seen == [(0.5, "APSP: tiles"), (0.875, "APSP: row 3")]
    with pytest.raises(ValueError):
        p.sub(0.6, 0.4)


def test_throttling_keeps_stage_changes_and_the_end():
    seen = []
    p = Progress(lambda f, s: seen.append((f, s)), min_interval=10.0)
    for i in range(1000):
        p.update(i / 1000, "loop")
    p.update(0.5, "next stage")
    p.update(1.0)
    assert seen[0] == (0.0, "loop")
    assert (0.999, "next stage") in seen  # a new stage never moves the bar back (monotonic)
    assert seen[-1] == (1.0, "next stage")
    assert len(seen) == 3


def test_cancel_raises_at_next_check_and_update():
    p = Progress()
    p.check()
    p.cancel()
    assert p.cancelled
    with pytest.raises(Cancelled):
        p.check()
    with pytest.raises(Cancelled):
        p.update(0.5, "x")


def test_cancel_is_shared_with_sub_progress():
    ev = threading.Event()
    p = Progress(cancel_event=ev)
    sub = p.sub(0.2, 0.4)
    p.cancel()
    assert ev.is_set()
    with pytest.raises(Cancelled):
        sub.check()


def test_cancel_from_another_thread_stops_a_loop_quickly():
    p = Progress()
    stopped = {}

    def job():
        t0 = time.monotonic()
        try:
            for i in range(10**9):
                time.sleep(0.001)
                p.update(i / 10**9, "working")
        except Cancelled:
            stopped["after"] = time.monotonic() - t0

    t = threading.Thread(target=job)
    t.start()
    time.sleep(0.1)
    t_cancel = time.monotonic()
    p.cancel()
    t.join(2.0)
    assert not t.is_alive()
    assert "after" in stopped
    assert time.monotonic() - t_cancel < 1.0


def test_as_progress_normalises():
    p = Progress()
    assert as_progress(p) is p
    assert isinstance(as_progress(None), Progress)
    seen = []
    q = as_progress(lambda f, s: seen.append(s))
    q.update(0.1, "hello")
    assert seen == ["hello"]
    with pytest.raises(TypeError, match="progress must be"):
        as_progress(42)


def test_cancelled_has_a_readable_message():
    assert str(Cancelled()) == "cancelled by the user"


def test_sub_prefix_is_not_doubled():
    seen = []
    p = Progress(lambda f, s: seen.append(s), min_interval=0.0)
    sub = p.sub(0.0, 1.0, prefix="APSP")
    sub.update(0.1, "APSP: tile round 1/4")
    sub.update(0.2, "Dijkstra sources 10/20")
    assert seen == ["APSP: tile round 1/4", "APSP: Dijkstra sources 10/20"]
