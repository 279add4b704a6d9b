"""Session 8 review: the automatic working resolution's simplification, started on a thread of
its own before the full mesh's dual graph (``segment.prepare_mesh``,
``simplify.simplify_in_background``), has ended whatever way the call ends. Before the mend a
cancel right after the dual graph (or any error before ``working_graph`` picked the job) returned
at once and left the decimation running, unjoined: in the window the next run's simplification
then ran beside it."""

from __future__ import annotations

import threading
import time

import pytest
from test_speed8_simplify import _sphere

from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import segment
from gpu_kernels.mesh import simplify as simp


def _slow_simplify(log):
    real = segment.simplify_mesh

    def slow(*a, **kw):
        log.append("start")
        time.sleep(0.4)   # longer than the rest of the call up to the cancel
        out = real(*a, **kw)
        log.append("end")
        return out
    return slow


def _simplifying() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gpulab-simplify" and t.is_alive()]


@pytest.fixture
def small_working(monkeypatch):
    if not simp.available_simplifiers():
        pytest.skip("no simplifier is installed here")
    monkeypatch.setattr(segment, "WORKING_FACES", 1000)
    monkeypatch.setattr(simp, "BACKGROUND_FAST", True)   # a thread also where only fast is installed
    v, f = _sphere(30)
    assert f.shape[0] > 3 * segment.WORKING_FACES
    return v, f


@pytest.mark.parametrize("where", ["cancel after the dual graph", "error in the dual graph"])
def test_a_call_that_stops_before_picking_the_early_simplification_waits_for_it(monkeypatch, small_working, where):
    v, f = small_working
    log = []
    monkeypatch.setattr(segment, "simplify_mesh", _slow_simplify(log))
    stop = Progress()
    real_dual = segment.dual_graph

    def dual(*a, **kw):
        if where.startswith("error"):
            raise MemoryError("no room for the dual graph")
        out = real_dual(*a, **kw)
        stop.cancel()   # the user's cancel while the dual graph was built: seen at the next update
        return out

    monkeypatch.setattr(segment, "dual_graph", dual)
    with pytest.raises(Cancelled if where.startswith("cancel") else MemoryError):
        segment.prepare_mesh(v, f, device="cpu", progress=stop)
    assert log == ["start", "end"]   # the decimation ended before the call did
    assert not _simplifying()


def test_an_early_simplification_that_fails_unpicked_does_not_replace_the_calls_error(monkeypatch, small_working):
    v, f = small_working

    def broken(*a, **kw):
        time.sleep(0.2)
        raise RuntimeError("the simplifier broke")

    monkeypatch.setattr(segment, "simplify_mesh", broken)
    monkeypatch.setattr(segment, "dual_graph", lambda *a, **kw: (_ for _ in ()).throw(MemoryError("dual")))
    with pytest.raises(MemoryError, match="dual"):
        segment.prepare_mesh(v, f, device="cpu")
    assert not _simplifying()


def test_the_picked_simplification_is_still_used_once(monkeypatch, small_working):
    """The mend changes nothing on the way through: one simplification, on its own thread."""
    v, f = small_working
    before = set(_simplifying())   # (another test's, on code without the mend)
    seen = []
    real = segment.simplify_mesh
    monkeypatch.setattr(segment, "simplify_mesh",
                        lambda *a, **kw: seen.append(threading.current_thread() is threading.main_thread())
                        or real(*a, **kw))
    prep = segment.prepare_mesh(v, f, device="cpu")
    assert seen == [False] and prep.info["simplified"] and set(_simplifying()) <= before
