"""Issue 20, mesh: the boundary cut's compiled searches (gpu_kernels/mesh/_numba_cut.py, numba)
give exactly SciPy's results: the minimum cut's source side, the connected components and
their numbering, the two best clusters of a face; and a whole segmentation is the same with
them and without them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import boundary
from gpu_kernels.mesh import segment as segmod

nc = pytest.importorskip("gpu_kernels.mesh._numba_cut", reason="numba is not installed (pip install gpulab[fast])")


@pytest.fixture
def scipy_only(monkeypatch):
    monkeypatch.setattr(boundary, "COMPILED", False)


def _random_cut_problem(rng, m):
    """A grid-like graph (a strip of faces with random extra arcs, duplicates included) with
    sources on the left end and sinks on the right, integer capacities with many ties."""
    w = max(2, int(np.sqrt(m)))
    idx = np.arange(m)
    right = idx[(idx % w) < w - 1]
    ei = [right, idx[:-w]]
    ej = [right + 1, idx[w:]]
    extra = rng.integers(0, m, size=(m // 10, 2))
    extra = extra[extra[:, 0] != extra[:, 1]]
    ei.append(extra[:, 0])
    ej.append(extra[:, 1])
    ei, ej = np.concatenate(ei), np.concatenate(ej)
    cap = rng.integers(1, 6, size=ei.size) * rng.choice([1, 10, 100], size=ei.size)
    src = np.where((idx % w) < max(1, w // 5), rng.integers(0, 40, size=m), 0)
    snk = np.where((idx % w) >= w - max(1, w // 5), rng.integers(0, 40, size=m), 0)
    src[rng.random(m) < 0.02] = boundary.INF_CAP + 5  # clipped to the infinite capacity
    return m, ei, ej, cap, src, snk


@pytest.mark.parametrize("seed", range(12))
def test_the_compiled_min_cut_is_scipys(seed, monkeypatch):
    rng = np.random.default_rng(seed)
    prob = _random_cut_problem(rng, int(rng.integers(5, 900)))
    fast = boundary._min_cut_source_side(*prob)
    monkeypatch.setattr(boundary, "COMPILED", False)
    ref = boundary._min_cut_source_side(*prob)
    np.testing.assert_array_equal(fast, ref)


def test_the_compiled_min_cut_is_the_smallest_cut_on_a_tie():
    # a path s - 0 - 1 - 2 - t whose arcs all have capacity 1: every cut is minimum; the
    # source side is the smallest one, {} (nothing but s itself)
    side = nc.min_cut_source_side(3, np.array([0, 1]), np.array([1, 2]), np.array([1, 1]),
                                  np.array([1, 0, 0]), np.array([0, 0, 1]))
    assert not side.any()
    # a bottleneck after node 1: {0, 1} on the source side
    side = nc.min_cut_source_side(3, np.array([0, 1]), np.array([1, 2]), np.array([5, 1]),
                                  np.array([5, 0, 0]), np.array([0, 0, 5]))
    np.testing.assert_array_equal(side, [True, True, False])


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_components_are_scipys_and_numbered_alike(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 400))
    e = int(rng.integers(0, 2 * n))
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    keep = rng.random(e) < 0.6
    count, lab = nc.components(n, src, dst, keep)
    A = sp.coo_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n))
    ref_count, ref = connected_components(A, directed=False)
    assert count == ref_count
    np.testing.assert_array_equal(lab, ref)


def test_the_compiled_top_two_is_numpys():
    rng = np.random.default_rng(7)
    P = rng.integers(0, 5, size=(500, 7)).astype(np.float32) / 4  # many ties
    p1, p2, i1, i2 = nc.top_two(P)
    ref = -np.partition(-P, 1, axis=1)[:, :2]
    np.testing.assert_array_equal(p1, ref[:, 0])
    np.testing.assert_array_equal(p2, ref[:, 1])
    np.testing.assert_array_equal(i1, P.argmax(axis=1))
    Q = P.copy()
    Q[np.arange(500), i1] = -np.inf
    np.testing.assert_array_equal(i2, Q.argmax(axis=1))
    for eps in (0.0, 0.2, 0.5):
        fast = boundary.fuzzy_faces(P, eps)
        s = ref[:, 0] + ref[:, 1]
        np.testing.assert_array_equal(fast, (ref[:, 0] - ref[:, 1]) / np.where(s > 0, s, 1.0) <= eps)


def _segment(v, f, **kw):
    seg = segmod.segment_mesh(v, f, device="cpu", **kw)
    return seg.labels, seg.memberships, seg.fuzzy


@pytest.mark.parametrize("kw", [{"k": 3, "max_faces": None}, {"k": 5, "max_faces": None, "epsilon": 0.2},
                                {"k": 4, "max_faces": 300}])
def test_a_segmentation_is_the_same_with_and_without_the_compiled_searches(kw, monkeypatch):
    v, f, _ = box_bar_box()
    fast = _segment(v, f, **kw)
    monkeypatch.setattr(boundary, "COMPILED", False)
    ref = _segment(v, f, **kw)
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_array_equal(a, b)
