"""Session 10 mends of review A in gpu_kernels/mesh/segment.py (issue 22), on the fish of the layout tests at a
working resolution of 2,000 faces (CPU):

- #4: a cancel (or error) while the integer k clusters, with k = "auto"'s full-resolution cut on its thread
  (``LAYOUT_OVERLAP``), re-raises the original exception after the thread has ended, and the thread stops at
  the job's cancel flag;
- #2: rows with the same clustering (a factor's and a start's) are settled once: at k = 12 five cuts and
  merges, not seven, with the same result, ``EARLY_SETTLE_CPU`` on and off."""

from __future__ import annotations

import hashlib
import threading
import time

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import pytest

from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import autok
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh import simplify as simp

KW = {"device": "cpu", "apsp_method": "cpu"}

if not simp.available_simplifiers():  # (the working resolution is a simplified copy: the installed default)
    pytest.skip("no simplifier installed (fast-simplification or pymeshlab)", allow_module_level=True)


fish = fx.fish  # the stored fish (one copy: tests/mesh/_quality_fixtures.py)


def _prep(fish):
    v, f = fish
    return sg.prepare_mesh(v, f, max_faces=2000, device="cpu", apsp_method="cpu")


@pytest.fixture(scope="module")
def clustered(fish):
    prep = _prep(fish)
    return prep, sg.cluster_prepared(prep, k="auto", **KW)


@pytest.fixture
def overlap(monkeypatch):
    monkeypatch.setattr(autok, "LAYOUT_DECIDE", "full")  # (the path with the thread: decided on the full mesh)
    monkeypatch.setattr(sg, "LAYOUT_OVERLAP", True)


def test_a_cancel_during_the_overlap_waits_for_the_thread_and_keeps_its_exception(fish, clustered, monkeypatch,
                                                                                 overlap):
    prep, cm = clustered
    cm.layouts.clear()
    ended, started = [], threading.Event()

    def slow_failing_cut(*a, **k):
        started.set()
        time.sleep(0.3)
        ended.append(1)
        raise RuntimeError("the thread's own error")

    def cancelled_layout(*a, **k):
        assert started.wait(30)   # (the cut is running: a future not started yet is cancelled, not waited)
        raise Cancelled()

    monkeypatch.setattr(sg, "_cut_labels", slow_failing_cut)
    monkeypatch.setattr(sg, "_kept_layout", cancelled_layout)
    with pytest.raises(Cancelled):
        sg.segment_mesh(*fish, prepared=prep, clustered=cm, auto_layout="concave", **KW)
    assert ended == [1]  # waited for the thread before re-raising


def test_the_overlap_thread_stops_at_the_jobs_cancel_flag(clustered, monkeypatch):
    prep, cm = clustered
    seen = []

    def cut(prep_, cm_, refine, progress):
        seen.append(progress)
        progress.check()
        return "cut"

    monkeypatch.setattr(sg, "_cut_labels", cut)
    job = Progress(lambda f, s: None, threading.Event())
    assert sg._cut_labels_on(sg.get_backend("cpu"), prep, cm, True, job) == "cut"
    job.cancel()
    with pytest.raises(Cancelled):
        sg._cut_labels_on(sg.get_backend("cpu"), prep, cm, True, job)
    assert seen[0]._callback is None  # (no reports from the thread)


def _digest(seg):
    return hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes() + seg.memberships.tobytes()).hexdigest()


def _counted(monkeypatch, name):
    calls = []
    real = getattr(sg, name)
    monkeypatch.setattr(sg, name, lambda *a, **k: (calls.append(1), real(*a, **k))[1])
    return calls


def test_rows_with_the_same_clustering_are_settled_once(fish, monkeypatch):
    """k = 12: four factors' rows and three auto-k starts' (seven), two of them the same clusterings as a
    factor's: five cuts and merges (session 10's code before 40b08ed: seven), the same result with the cuts
    on the early-settle thread (the GPU's path, ``EARLY_SETTLE_CPU``) as without."""
    assert len(sg.AUTO_K_STARTS) == 3
    monkeypatch.setattr(sg, "K_STARTS_ONLY", False)  # (the factors' rows beside the starts', as before session 20)
    monkeypatch.setattr(sg, "K_STARTS", None)  # (the auto-k starts 24/30/36, as before session 20)
    monkeypatch.setattr(sg, "EARLY_SETTLE_CPU", False)
    cuts = _counted(monkeypatch, "_assemble_and_cut")
    serial = sg.segment_prepared(_prep(fish), k=12, auto_layout="auto", **KW)
    assert len(cuts) == 5
    monkeypatch.setattr(sg, "EARLY_SETTLE_CPU", True)
    # (a row is cut early on the thread (_settle_one) or, where its early cut had not started when the clusterings
    # were done, here: which one is a race, the count of all cuts is not. Before session 25 this counted the
    # thread's cuts alone (four); the exact hull's slower integer-k merges moved one of them here)
    ones = _counted(monkeypatch, "_settle_one")
    prep = _prep(fish)
    sg.segment_prepared(prep, k=12, auto_layout="auto", **KW)
    ones.clear()
    cuts.clear()
    early = sg.segment_prepared(prep, k=12, auto_layout="auto", **KW)  # (the starts' clusterings from the memo)
    assert len(ones) >= 1 and len(cuts) == 5  # (five clusterings, each cut once; before 40b08ed seven)
    assert serial.k == early.k == 12 and _digest(serial) == _digest(early)
