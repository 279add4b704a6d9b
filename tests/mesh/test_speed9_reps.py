"""Issue 22 (session 9): the full-resolution representatives of ``segment._recut_full`` (the
input face nearest each working representative) come from ``_nearest_centroids``, whose squared
distances are ``((centroids - c) ** 2).sum(axis=1)`` bit for bit (NumPy sums three terms left to
right), so the same faces as before, without the (F, 3) temporaries."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment

PSB = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "psb" / "off"


def _old(centroids, points):
    return np.asarray([int(np.argmin(((centroids - c) ** 2).sum(axis=1))) for c in points], dtype=np.int64)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_squared_distances_are_the_summed_squares_bit_for_bit(dtype):
    rng = np.random.default_rng(3)
    C = (rng.normal(size=(5000, 3)) * [1.0, 1e3, 1e-3] + [100.0, -2.0, 0.5]).astype(dtype)
    ct = np.ascontiguousarray(C.T)
    for c in C[rng.integers(0, len(C), 20)] + np.asarray([1e-3, -2.0, 5e-4], dtype=dtype):
        a = ((C - c) ** 2).sum(axis=1)
        b = segment._squared_distances(ct, c)
        assert a.dtype == b.dtype == dtype
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_the_nearest_centroids_are_the_old_search_with_ties():
    rng = np.random.default_rng(4)
    C = rng.normal(size=(3000, 3))
    C[2000] = C[17]                                  # equal distances: the first face wins
    pts = np.concatenate([C[[17, 5, 2999]], rng.normal(size=(30, 3))])
    got = segment._nearest_centroids(C, pts)
    assert got.dtype == np.int64 and got[0] == 17
    np.testing.assert_array_equal(got, _old(C, pts))
    assert segment._nearest_centroids(C, np.zeros((0, 3))).shape == (0,)


def test_on_a_psb_mesh_and_in_the_pipeline(monkeypatch):
    if not (PSB / "101.off").is_file():
        pytest.skip(f"PSB meshes not found at {PSB}")
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh.dualgraph import dual_graph

    v, f = read_mesh(PSB / "101.off")
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    rng = np.random.default_rng(5)
    pts = g.centroids[rng.integers(0, g.n, 40)] + rng.normal(size=(40, 3)) * 1e-3
    np.testing.assert_array_equal(segment._nearest_centroids(g.centroids, pts), _old(g.centroids, pts))
    calls = []
    real = segment._nearest_centroids

    def spy(*a):
        out = real(*a)
        calls.append(_old(*a))
        np.testing.assert_array_equal(out, calls[-1])
        return out
    monkeypatch.setattr(segment, "_nearest_centroids", spy)
    seg = segment.segment_mesh(v, f, k=4, device="cpu", max_faces=1500)
    assert seg.labels.shape == (f.shape[0],)
    assert len(calls) == 1 and calls[0].size == 4
