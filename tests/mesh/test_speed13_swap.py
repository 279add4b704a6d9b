"""Issue 22 (session 13): ``segment.SIMPLIFY_ON_CALLER`` — the automatic working resolution's simplification on the
calling thread and the full mesh's dual graph (with its weight matrix) on a thread of its own: the same labels and
colours, pymeshlab's step on the caller with the graph's thread running beside it, the graph's thread started after
fast-simplification's step (which holds the GIL), errors from either side surfacing as before."""

from __future__ import annotations

import hashlib
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
    """A stand-in simplification (a coarser sphere) that records its thread and waits until the full graph's
    weight matrix has been built (or 2 s)."""
    vs, fs = _sphere(22)

    def simplify(vertices, faces, target, method=None):
        events["simplify_thread"] = threading.current_thread().name
        events["built_first"] = events["csr"].wait(2.0)
        return vs.copy(), fs.astype(np.int64)

    return simplify


def _run(monkeypatch, on: bool, k=3):
    events = {"csr": threading.Event()}
    v, f = _sphere(50)   # ~9.8k faces: above the working resolution
    real = dg.DualGraph.csr

    def spy(self, values=None):
        if values is None and self.n == f.shape[0]:
            events.setdefault("csr_thread", threading.current_thread().name)
            events["csr"].set()
        return real(self, values)

    monkeypatch.setattr(dg.DualGraph, "csr", spy)
    monkeypatch.setattr(segment, "simplify_mesh", _stand_in(events))
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    monkeypatch.setattr(segment, "SIMPLIFY_ON_CALLER", on)
    seg = segment.segment_mesh(v, f, k=k, device="cpu")
    assert seg.info["simplified"]
    return events, _sha(seg)


def test_off_until_the_gpu_ab_says_otherwise():
    """Device call 1 (first version, the thread started before the hand-over to pymeshlab) gained nothing at the
    median; the corrected version waits for the pre-registered A/B (benchmarks/results/mesh_speed_session13.md)."""
    assert segment.SIMPLIFY_ON_CALLER is False


@pytest.mark.parametrize("on", [True, False])
def test_where_the_simplification_and_the_full_graph_run(monkeypatch, on):
    events, _ = _run(monkeypatch, on)
    me = threading.current_thread().name
    assert events["built_first"] is True   # the matrix is built while the simplification runs, either way
    if on:
        assert events["simplify_thread"] == me and events["csr_thread"] == "gpulab-dual-graph"
    else:
        assert events["simplify_thread"] == "gpulab-simplify" and events["csr_thread"] == me


@pytest.mark.parametrize("k", [3, "auto"])
def test_the_same_labels_and_colours_either_way(monkeypatch, k):
    _, on = _run(monkeypatch, True, k)
    _, off = _run(monkeypatch, False, k)
    assert on == off


def test_the_graph_thread_starts_after_the_fast_step_and_the_hand_over_to_pymeshlab(monkeypatch):
    """With "fast+pymeshlab": fast-simplification's step and its clean-up first, then the mesh's hand-over to
    pymeshlab (all of them hold the GIL), then the caller's thread is started, then pymeshlab's decimation runs on
    the caller; the result is pymeshlab's, as without ``beside``."""
    import sys
    import types

    order: list = []

    class Mesh:
        def __init__(self, vertex_matrix, face_matrix):
            order.append(("hand-over", face_matrix.shape[0]))
            self._v, self._f = np.asarray(vertex_matrix), np.asarray(face_matrix)

        def vertex_matrix(self):
            return self._v

        def face_matrix(self):
            return self._f[:3]

    class MeshSet:
        def add_mesh(self, m):
            self._m = m

        def meshing_decimation_quadric_edge_collapse(self, **kw):
            order.append(("decimation", kw["targetfacenum"], threading.current_thread().name))

        def current_mesh(self):
            return self._m

    mod = types.ModuleType("pymeshlab")
    mod.Mesh, mod.MeshSet = Mesh, MeshSet
    monkeypatch.setitem(sys.modules, "pymeshlab", mod)
    monkeypatch.setattr(simp, "_resolve", lambda method: "fast+pymeshlab")
    monkeypatch.setattr(simp, "_MODULES", {"fast": "math", "pymeshlab": "math"})
    small = _sphere(20)
    monkeypatch.setattr(simp, "_simplify_fast", lambda v, f, t: order.append(("fast", t)) or small)
    v, f = _sphere(40)
    me = threading.current_thread().name
    job = simp.simplify_in_background(v, f, 700, beside=lambda: order.append(("beside",)))
    assert job.done()
    n = order[1][1]
    assert order == [("fast", 2100), ("hand-over", n), ("beside",), ("decimation", 700, me)]
    vo, fo = job.result()
    assert fo.shape == (3, 3) and fo.dtype == np.int64 and vo.dtype == np.float64
    order.clear()
    job = simp.simplify_in_background(v, f, 700)   # without it: pymeshlab's step on a thread
    assert job.result()[1].shape == (3, 3) and order[-1] == ("decimation", 700, "gpulab-simplify")


def test_beside_is_not_called_when_the_fast_step_fails_and_the_caller_builds_the_graph(monkeypatch):
    calls: list = []
    monkeypatch.setattr(simp, "_resolve", lambda method: "fast+pymeshlab")
    monkeypatch.setattr(simp, "_MODULES", {"fast": "math", "pymeshlab": "math"})

    def boom(v, f, t):
        raise RuntimeError("fast failed")

    monkeypatch.setattr(simp, "_simplify_fast", boom)
    v, f = _sphere(40)
    job = simp.simplify_in_background(v, f, 700, beside=lambda: calls.append(1))
    assert calls == []
    with pytest.raises(RuntimeError, match="fast failed"):
        job.result()
    # through the pipeline: the error surfaces where it did, after the full graph was built on the caller
    built: list = []
    real = segment.dual_graph

    def graph(*a, **kw):
        built.append(threading.current_thread().name)
        return real(*a, **kw)

    monkeypatch.setattr(segment, "dual_graph", graph)
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    monkeypatch.setattr(segment, "SIMPLIFY_ON_CALLER", True)
    monkeypatch.setattr(simp, "PRE_FACTOR", 1.5)   # (the split path at ~9.8k faces)
    v, f = _sphere(50)
    with pytest.raises(RuntimeError, match="fast failed"):
        segment.segment_mesh(v, f, k=3, device="cpu")
    assert built == [threading.current_thread().name]


def test_a_failing_simplification_surfaces_and_the_graph_thread_has_ended(monkeypatch):
    v, f = _sphere(50)
    threads: list = []
    real_full = segment._full_graph

    def full(*a):
        threads.append(threading.current_thread())
        return real_full(*a)

    def bad(vertices, faces, target, method=None):
        raise RuntimeError("the simplifier failed")

    monkeypatch.setattr(segment, "_full_graph", full)
    monkeypatch.setattr(segment, "simplify_mesh", bad)
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    monkeypatch.setattr(segment, "SIMPLIFY_ON_CALLER", True)
    with pytest.raises(RuntimeError, match="the simplifier failed"):
        segment.segment_mesh(v, f, k=3, device="cpu")
    assert len(threads) == 1 and not threads[0].is_alive()


def test_a_failing_full_graph_surfaces_after_the_simplification(monkeypatch):
    v, f = _sphere(50)
    events = {"csr": threading.Event()}
    events["csr"].set()

    def bad_graph(*a):
        raise ValueError("the graph failed")

    monkeypatch.setattr(segment, "_full_graph", bad_graph)
    monkeypatch.setattr(segment, "simplify_mesh", _stand_in(events))
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    monkeypatch.setattr(segment, "SIMPLIFY_ON_CALLER", True)
    with pytest.raises(ValueError, match="the graph failed"):
        segment.segment_mesh(v, f, k=3, device="cpu")
    assert events["simplify_thread"] == threading.current_thread().name


@pytest.mark.skipif("fast+pymeshlab" not in simp.available_simplifiers(),
                    reason="fast-simplification and pymeshlab are not both installed")
def test_the_real_simplifiers_give_the_same_working_mesh_on_the_caller(monkeypatch):
    v, f = _sphere(60)
    on = simp.simplify_in_background(v, f, 700, beside=lambda: None).result()
    off = simp.simplify_in_background(v, f, 700).result()
    assert on[0].tobytes() == off[0].tobytes() and on[1].tobytes() == off[1].tobytes()


def test_the_two_optional_compiled_modules_share_one_loader(monkeypatch):
    """Session 13 (final read of session 12): ``compiled()`` and ``compiled_merge()`` load through one helper: the
    module once, None where it does not import or COMPILED is off."""
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
