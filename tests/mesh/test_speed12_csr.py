"""Issue 22 (session 12): the full graph's weight matrix (``DualGraph.csr()``) is cached on the graph and built
while the working resolution's simplification runs: the same matrix bit for bit, the same labels and colours as a
matrix built afresh at every call (session 13: no switches; the reference is an uncached ``csr``), built before the
simplification's result is taken, on the caller's thread (session 14: ``segment.SIMPLIFY_ON_CALLER``, which built
it on a thread of its own, is gone)."""

from __future__ import annotations

import hashlib
import threading

import numpy as np
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import dualgraph as dg
from gpu_kernels.mesh import segment


def _graph(n=30):
    v, f = _sphere(n)
    return dg.dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)


def _same(a, b) -> bool:
    return (a.shape == b.shape and a.data.tobytes() == b.data.tobytes() and a.indices.tobytes() == b.indices.tobytes()
            and a.indptr.tobytes() == b.indptr.tobytes())


def _uncached(monkeypatch):
    """The reference: ``csr()`` built afresh at every call (as before session 12's cache)."""
    real = dg.DualGraph.csr
    monkeypatch.setattr(dg.DualGraph, "csr", lambda self, values=None: real(self, self.weight if values is None
                                                                               else values))


def test_the_weight_matrix_is_built_once_and_equals_a_fresh_build(monkeypatch):
    g = _graph()
    m1 = g.csr()
    assert g.csr() is m1
    _uncached(monkeypatch)
    fresh = g.csr()
    assert fresh is not m1 and _same(fresh, m1)
    assert g.csr() is not fresh


def test_other_values_are_not_cached_and_a_replaced_graph_has_its_own():
    from dataclasses import replace

    g = _graph()
    w = g.csr()
    other = g.csr(np.arange(1, g.n_edges + 1, dtype=np.int64))
    assert other.dtype == np.int64 and not _same(other, w)
    assert g.csr() is w
    g2 = replace(g, weight=g.weight * 2.0)
    assert np.allclose(g2.csr().data, 2.0 * w.data) and g.csr() is w


def _slow_simplifier(events: dict):
    """A stand-in simplification (a coarser sphere) that waits until the full graph's matrix has been built,
    or 2 s; it records whether the build came first."""
    vs, fs = _sphere(22)

    def simplify(vertices, faces, target, method=None):
        events["built_first"] = events["csr"].wait(2.0)
        return vs.copy(), fs.astype(np.int64)

    return simplify


def _run(monkeypatch, cached: bool = True):
    events = {"csr": threading.Event()}
    v, f = _sphere(50)   # ~9.8k faces: above the working resolution
    real = dg.DualGraph.csr

    def spy(self, values=None):
        if values is None and self.n == f.shape[0]:
            events.setdefault("thread", threading.current_thread().name)
            events["csr"].set()
        return real(self, values) if cached else real(self, self.weight if values is None else values)

    monkeypatch.setattr(dg.DualGraph, "csr", spy)
    monkeypatch.setattr(segment, "simplify_mesh", _slow_simplifier(events))
    monkeypatch.setattr(segment, "_can_simplify", lambda: True)
    seg = segment.segment_mesh(v, f, k=3, device="cpu")
    assert seg.info["simplified"]
    return events, hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()


def test_the_matrix_is_built_while_the_simplification_runs(monkeypatch):
    events, _ = _run(monkeypatch)
    assert events["built_first"] is True
    assert events["thread"] == threading.current_thread().name


def test_the_same_labels_and_colours_with_and_without_the_cache(monkeypatch):
    _, on = _run(monkeypatch, True)
    _, off = _run(monkeypatch, False)
    assert on == off
