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


def test_on_by_default():
    assert segment.SIMPLIFY_ON_CALLER is True


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


def test_the_graph_thread_starts_after_the_fast_step_and_before_pymeshlabs(monkeypatch):
    """With "fast+pymeshlab": fast-simplification's step and its clean-up first (they hold the GIL), then the
    caller's thread is started, then pymeshlab's step runs on the caller; the result is pymeshlab's on the
    clean fast result, as without ``beside``."""
    order: list = []
    vf = (np.zeros((3, 3)), np.array([[0, 1, 2]]))
    monkeypatch.setattr(simp, "_resolve", lambda method: "fast+pymeshlab")
    monkeypatch.setattr(simp, "_MODULES", {"fast": "math", "pymeshlab": "math"})
    monkeypatch.setattr(simp, "_simplify_fast", lambda v, f, t: order.append(("fast", t)) or _sphere(20))
    monkeypatch.setattr(simp, "_simplify_pymeshlab",
                        lambda v, f, t: order.append(("pymeshlab", t, threading.current_thread().name)) or vf)
    v, f = _sphere(40)
    job = simp.simplify_in_background(v, f, 700, beside=lambda: order.append(("beside",)))
    assert job.done()
    assert order == [("fast", 2100), ("beside",), ("pymeshlab", 700, threading.current_thread().name)]
    assert job.result() is vf
    order.clear()
    job = simp.simplify_in_background(v, f, 700)   # without it: pymeshlab's step on a thread
    assert job.result() is vf and order[1][2] == "gpulab-simplify"


def test_beside_is_called_once_when_the_fast_step_fails(monkeypatch):
    calls: list = []
    monkeypatch.setattr(simp, "_resolve", lambda method: "fast+pymeshlab")
    monkeypatch.setattr(simp, "_MODULES", {"fast": "math", "pymeshlab": "math"})

    def boom(v, f, t):
        raise RuntimeError("fast failed")

    monkeypatch.setattr(simp, "_simplify_fast", boom)
    v, f = _sphere(40)
    job = simp.simplify_in_background(v, f, 700, beside=lambda: calls.append(1))
    assert calls == [1]
    with pytest.raises(RuntimeError, match="fast failed"):
        job.result()


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
