"""Issue 22 (session 14): the two bit-identical candidates for the 17k median, and what session 13 left.

- ``simplify.REUSE_THREAD``: pymeshlab's step (every :func:`simplify_in_background` job) on the process's long-lived
  thread instead of a fresh one per call: the same working mesh, labels and colours; one thread across calls;
  errors surface on the caller; a forked child makes its own.
- ``segment.NEAREST_BESIDE`` (GPU; ``NEAREST_BESIDE_CPU`` here): the full-to-working nearest faces on a thread of
  their own, started as soon as the working mesh's dual graph is built and joined after the APSP: the same
  labels and colours; the search runs beside the APSP; an error surfaces; the thread has ended whatever way the
  call ends.
- ``segment.SIMPLIFY_ON_CALLER`` (its rule failed twice) is gone with its code path; ``_check_span_full`` is
  inlined; the two optional compiled modules share one loader (moved from ``test_speed13_swap.py``)."""

from __future__ import annotations

import hashlib
import inspect
import os
import threading

import numpy as np
import pytest
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import dualgraph as dg
from gpu_kernels.mesh import segment
from gpu_kernels.mesh import simplify as simp


def _sha(seg) -> str:
    return hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()


def _stand_in(events: dict):
    """A stand-in simplification (a coarser sphere) that records its thread."""
    vs, fs = _sphere(22)

    def simplify(vertices, faces, target, method=None):
        events.setdefault("simplify_threads", []).append(threading.current_thread())
        return vs.copy(), fs.astype(np.int64)

    return simplify


def _segment(monkeypatch, *, reuse=False, near=False, k=3, events=None):
    events = {} if events is None else events
    v, f = _sphere(50)   # ~9.8k faces: above the working resolution
    monkeypatch.setattr(segment, "simplify_mesh", _stand_in(events))
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    monkeypatch.setattr(simp, "REUSE_THREAD", reuse)
    monkeypatch.setattr(segment, "NEAREST_BESIDE", near)
    monkeypatch.setattr(segment, "NEAREST_BESIDE_CPU", near)
    seg = segment.segment_mesh(v, f, k=k, device="cpu")
    assert seg.info["simplified"]
    return seg, events


def test_both_are_off_until_the_gpu_ab_says_otherwise():
    assert simp.REUSE_THREAD is False and segment.NEAREST_BESIDE is False and segment.NEAREST_BESIDE_CPU is False


# ------------------------------------------------------------------ REUSE_THREAD
@pytest.mark.parametrize("k", [3, "auto"])
def test_the_same_labels_and_colours_on_a_reused_thread(monkeypatch, k):
    off, _ = _segment(monkeypatch, k=k)
    on, _ = _segment(monkeypatch, reuse=True, k=k)
    assert _sha(on) == _sha(off)


def test_one_long_lived_thread_serves_every_call(monkeypatch):
    events: dict = {}
    _segment(monkeypatch, reuse=True, events=events)
    _segment(monkeypatch, reuse=True, events=events)
    a, b = events["simplify_threads"]
    me = threading.current_thread()
    assert a is b and a is not me and a.is_alive() and a.name.startswith("gpulab-simplify")
    events.clear()
    _segment(monkeypatch, reuse=False, events=events)   # off: a fresh thread, ended once the call is done
    (c,) = events["simplify_threads"]
    assert c is not a and c.name == "gpulab-simplify" and not c.is_alive()


def test_a_failure_on_the_reused_thread_surfaces_on_the_caller(monkeypatch):
    monkeypatch.setattr(simp, "REUSE_THREAD", True)

    def bad(v, f, t):
        raise RuntimeError("the simplifier broke")

    job = simp.simplify_in_background(*_sphere(10), 50, fn=bad)
    with pytest.raises(RuntimeError, match="the simplifier broke"):
        job.result()
    job.join()
    assert job.done()
    ok = simp.simplify_in_background(*_sphere(10), 50, fn=lambda v, f, t: ("ok", t))
    assert ok.result() == ("ok", 50)   # the thread is still there for the next call


@pytest.mark.skipif("fast+pymeshlab" not in simp.available_simplifiers(),
                    reason="fast-simplification and pymeshlab are not both installed")
def test_the_real_simplifiers_give_the_same_working_mesh_on_a_reused_thread(monkeypatch):
    v, f = _sphere(60)
    off = simp.simplify_in_background(v, f, 700).result()
    monkeypatch.setattr(simp, "REUSE_THREAD", True)
    on = simp.simplify_in_background(v, f, 700).result()
    assert on[0].tobytes() == off[0].tobytes() and on[1].tobytes() == off[1].tobytes()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_makes_its_own_thread(monkeypatch):
    monkeypatch.setattr(simp, "REUSE_THREAD", True)
    assert simp.simplify_in_background(*_sphere(6), 20, fn=lambda v, f, t: t).result() == 20
    parent = simp._REUSED[0][1]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: the parent's executor is forgotten, a new one runs the job
        ok = False
        try:
            ok = (not simp._REUSED
                  and simp.simplify_in_background(*_sphere(6), 21, fn=lambda v, f, t: t).result() == 21
                  and simp._REUSED[0][1] is not parent)
        finally:
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.waitpid(pid, 0)
    assert got == b"1"


# ------------------------------------------------------------------ NEAREST_BESIDE
@pytest.mark.parametrize("k", [3, "auto"])
def test_the_same_labels_and_colours_with_the_nearest_faces_beside(monkeypatch, k):
    off, _ = _segment(monkeypatch, k=k)
    on, _ = _segment(monkeypatch, near=True, k=k)
    assert _sha(on) == _sha(off)
    both, _ = _segment(monkeypatch, reuse=True, near=True, k=k)
    assert _sha(both) == _sha(off)


def _spy_nearest(monkeypatch, log: list, fail: bool = False):
    real = segment._nearest_faces
    gate = threading.Event()

    def nearest(cs, c):
        log.append(("nearest start", threading.current_thread().name))
        gate.wait(2.0)   # until the APSP has started (or 2 s)
        if fail:
            raise MemoryError("no room for the search")
        out = real(cs, c)
        log.append(("nearest end", threading.current_thread().name))
        return out

    real_apsp = segment.graph_distances

    def distances(*a, **kw):
        log.append(("apsp", threading.current_thread().name))
        gate.set()
        return real_apsp(*a, **kw)

    monkeypatch.setattr(segment, "_nearest_faces", nearest)
    monkeypatch.setattr(segment, "graph_distances", distances)


def test_the_nearest_faces_run_on_their_own_thread_beside_the_apsp(monkeypatch):
    log: list = []
    _spy_nearest(monkeypatch, log)
    _segment(monkeypatch, near=True)
    me = threading.current_thread().name
    assert log[0] == ("nearest start", "gpulab-kd-nearest")
    assert ("apsp", me) in log and log.index(("apsp", me)) < log.index(("nearest end", "gpulab-kd-nearest"))
    log.clear()
    _segment(monkeypatch)   # off: after the APSP, on the caller (the gate is open by then)
    assert log[0] == ("apsp", me) and ("nearest start", me) in log


def test_a_failing_nearest_search_surfaces(monkeypatch):
    _spy_nearest(monkeypatch, [], fail=True)
    with pytest.raises(MemoryError, match="no room for the search"):
        _segment(monkeypatch, near=True)


def test_the_nearest_thread_has_ended_when_the_apsp_fails(monkeypatch):
    threads: list = []
    real = segment._nearest_faces

    def nearest(cs, c):
        threads.append(threading.current_thread())
        threading.Event().wait(0.3)   # still searching when the APSP fails
        return real(cs, c)

    def broken(*a, **kw):
        raise MemoryError("no room for the distances")

    monkeypatch.setattr(segment, "_nearest_faces", nearest)
    monkeypatch.setattr(segment, "graph_distances", broken)
    with pytest.raises(MemoryError, match="no room for the distances"):
        _segment(monkeypatch, near=True)
    assert len(threads) == 1 and threads[0].name == "gpulab-kd-nearest" and not threads[0].is_alive()


# ------------------------------------------------------------------ what session 13 left
def test_simplify_on_caller_is_gone():
    assert not hasattr(segment, "SIMPLIFY_ON_CALLER") and not hasattr(segment, "_full_graph")
    assert "beside" not in inspect.signature(simp.simplify_in_background).parameters
    assert "before" not in inspect.signature(simp._simplify_pymeshlab).parameters
    assert not hasattr(dg, "_check_span_full")
    assert "prog = progress" not in inspect.getsource(segment._merge_to_targets)


def test_the_two_optional_compiled_modules_share_one_loader(monkeypatch):
    """Session 13 (final read of session 12): ``compiled()`` and ``compiled_merge()`` load through one helper: the
    module once, None where it does not import or COMPILED is off (moved from ``test_speed13_swap.py``)."""
    import importlib

    from gpu_kernels.mesh import boundary as bd

    monkeypatch.setattr(bd, "_KERNELS", [])
    monkeypatch.setattr(bd, "_MERGE_KERNEL", [])
    assert bd.compiled() is importlib.import_module("gpu_kernels.mesh._numba_cut")
    assert bd.compiled_merge() is importlib.import_module("gpu_kernels.mesh._numba_merge")
    monkeypatch.setattr(bd, "COMPILED", False)
    assert bd.compiled() is None and bd.compiled_merge() is None
    monkeypatch.setattr(bd, "COMPILED", True)
    monkeypatch.setattr(bd, "_MERGE_KERNEL", [])
    real = importlib.import_module

    def broken(name, *a, **kw):
        if name == "gpu_kernels.mesh._numba_merge":
            raise ImportError("numba is broken")
        return real(name, *a, **kw)

    monkeypatch.setattr(bd.importlib, "import_module", broken)
    assert bd.compiled_merge() is None and bd._MERGE_KERNEL == [None]
    assert bd.compiled() is not None   # (kept from before)
