"""Issue 22 (session 14): the two bit-identical candidates for the 17k median, and what session 13 left.

- ``simplify.REUSE_THREAD`` (pymeshlab's step on a long-lived thread) failed its rule on the H100 (call 1) and is
  gone: every job runs on a fresh ``gpulab-simplify`` thread, as before.
- ``segment.NEAREST_BESIDE`` (GPU; ``NEAREST_BESIDE_CPU`` here): the full-to-working nearest faces on a thread of
  their own (a thread of search per ``NEAREST_BESIDE_ROWS`` faces), started as soon as the working mesh's dual graph is
  built and joined after the APSP: the same labels and colours; the search runs beside the APSP; an error surfaces; the thread has ended whatever way the
  call ends.
- ``segment.SIMPLIFY_ON_CALLER`` (its rule failed twice) is gone with its code path; ``_check_span_full`` is
  inlined; the two optional compiled modules share one loader (moved from ``test_speed13_swap.py``)."""

from __future__ import annotations

import hashlib
import inspect
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


def _segment(monkeypatch, *, near=False, k=3, events=None):
    events = {} if events is None else events
    v, f = _sphere(50)   # ~9.8k faces: above the working resolution
    monkeypatch.setattr(segment, "simplify_mesh", _stand_in(events))
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    monkeypatch.setattr(segment, "NEAREST_BESIDE", near)
    monkeypatch.setattr(segment, "NEAREST_BESIDE_CPU", near)
    seg = segment.segment_mesh(v, f, k=k, device="cpu")
    assert seg.info["simplified"]
    return seg, events


def test_off_until_the_gpu_ab_says_otherwise():
    assert segment.NEAREST_BESIDE is False and segment.NEAREST_BESIDE_CPU is False


def test_the_long_lived_thread_is_gone():
    """``simplify.REUSE_THREAD`` failed its rule (session 14, call 1): every job on a fresh ``gpulab-simplify``."""
    assert not hasattr(simp, "REUSE_THREAD")
    job = simp.simplify_in_background(*_sphere(6), 20, fn=lambda v, f, t: threading.current_thread())
    t = job.result()
    assert t.name == "gpulab-simplify" and t is not threading.current_thread() and not t.is_alive()


# ------------------------------------------------------------------ NEAREST_BESIDE
@pytest.mark.parametrize("k", [3, "auto"])
def test_the_same_labels_and_colours_with_the_nearest_faces_beside(monkeypatch, k):
    off, _ = _segment(monkeypatch, k=k)
    on, _ = _segment(monkeypatch, near=True, k=k)
    assert _sha(on) == _sha(off)


def _spy_nearest(monkeypatch, log: list, fail: bool = False):
    real = segment._nearest_faces
    gate = threading.Event()

    def nearest(cs, c, workers=None):
        log.append(("nearest start", threading.current_thread().name, workers))
        gate.wait(2.0)   # until the APSP has started (or 2 s)
        if fail:
            raise MemoryError("no room for the search")
        out = real(cs, c, workers)
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
    assert segment.NEAREST_BESIDE_ROWS == 9000   # (the sphere's 9,800 faces: two threads of search)
    log: list = []
    _spy_nearest(monkeypatch, log)
    _segment(monkeypatch, near=True)
    me = threading.current_thread().name
    assert log[0] == ("nearest start", "gpulab-kd-nearest", -(-9800 // segment.NEAREST_BESIDE_ROWS))   # (2 threads)
    assert ("apsp", me) in log and log.index(("apsp", me)) < log.index(("nearest end", "gpulab-kd-nearest"))
    log.clear()
    _segment(monkeypatch)   # off: after the APSP, on the caller (the gate is open by then)
    assert log[0] == ("apsp", me) and ("nearest start", me, None) in log


def test_a_failing_nearest_search_surfaces(monkeypatch):
    _spy_nearest(monkeypatch, [], fail=True)
    with pytest.raises(MemoryError, match="no room for the search"):
        _segment(monkeypatch, near=True)


def test_the_nearest_thread_has_ended_when_the_apsp_fails(monkeypatch):
    threads: list = []
    real = segment._nearest_faces

    def nearest(cs, c, workers=None):
        threads.append(threading.current_thread())
        threading.Event().wait(0.3)   # still searching when the APSP fails
        return real(cs, c, workers)

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
