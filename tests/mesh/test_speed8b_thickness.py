"""Issue 22, session 8b: the GPU thickness's nearest-sample search does the steps after the
product in one kernel per chunk (``thickness.FUSED_ROW_MIN``, ``row_argmin``) instead of ~10
CuPy operations (off by default: no gain measured; these tests switch it on). Same arithmetic in the same order: the indices, the distances and the
thickness are the same bit for bit (GPU tests), ties included (first smallest, as argmin)."""

from __future__ import annotations

import numpy as np
import pytest
from test_speed8_simplify import _sphere

from gpu_kernels.mesh import thickness
from gpu_kernels.mesh.dualgraph import dual_graph


def _both(cupy, samples, queries, monkeypatch):
    monkeypatch.setattr(thickness, "FUSED_ROW_MIN", False)
    d0, j0 = thickness._nearest_on_device(cupy, samples)(queries)
    monkeypatch.setattr(thickness, "FUSED_ROW_MIN", True)
    d1, j1 = thickness._nearest_on_device(cupy, samples)(queries)
    return (d0, j0), (d1, j1)


@pytest.mark.gpu
@pytest.mark.parametrize("n_query", [1, 255, 2048, 2049, 5000])
def test_the_fused_search_equals_the_plain_one_bit_for_bit(monkeypatch, n_query):
    cupy = pytest.importorskip("cupy")
    rng = np.random.default_rng(n_query)
    samples = rng.normal(size=(6001, 3)) * [3.0, 1.0, 0.2]
    queries = rng.normal(size=(n_query, 3))
    (d0, j0), (d1, j1) = _both(cupy, samples, queries, monkeypatch)
    assert j1.dtype == j0.dtype and np.array_equal(j1, j0)
    assert np.array_equal(d1.view(np.int64), d0.view(np.int64))


@pytest.mark.gpu
def test_ties_go_to_the_first_sample_as_argmin(monkeypatch):
    cupy = pytest.importorskip("cupy")
    base = np.array([[1.0, 0, 0], [0, 1.0, 0], [-1.0, 0, 0], [0, -1.0, 0]])
    samples = np.vstack([np.full((300, 3), 9.0), np.tile(base, (200, 1))])   # equal points, far apart indices
    queries = np.vstack([np.zeros((1, 3)), base, base * 0.5, [[0.5, 0.5, 0.0]]])
    (d0, j0), (d1, j1) = _both(cupy, samples, queries, monkeypatch)
    assert np.array_equal(j1, j0) and np.array_equal(d1, d0)
    assert j1[1] == 300 and j1[2] == 301   # the first of the equal samples


@pytest.mark.gpu
def test_the_thickness_is_the_same_bit_for_bit(monkeypatch):
    cupy = pytest.importorskip("cupy")
    v, f = _sphere(45)
    v = v * [2.0, 1.0, 0.3]
    g = dual_graph(v, f, delta=0.5, eta_convex=0.5)
    out = []
    for fused in (False, True):
        monkeypatch.setattr(thickness, "FUSED_ROW_MIN", fused)
        out.append(thickness.face_thickness(v, f, g.centroids, g.normals, src=g.src, dst=g.dst, areas=g.areas,
                                            xp=cupy))
    assert np.array_equal(out[0], out[1])


@pytest.mark.gpu
def test_the_fused_kernel_is_what_runs(monkeypatch):
    """Fails if the flag is ignored (the plain path)."""
    cupy = pytest.importorskip("cupy")
    calls = []
    real = thickness._row_argmin_kernel
    monkeypatch.setattr(thickness, "_row_argmin_kernel", lambda xp: calls.append(1) or real(xp))
    monkeypatch.setattr(thickness, "FUSED_ROW_MIN", True)
    rng = np.random.default_rng(3)
    thickness._nearest_on_device(cupy, rng.random((500, 3)))(rng.random((100, 3)))
    assert calls == [1]
