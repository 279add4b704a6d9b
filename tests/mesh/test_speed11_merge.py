"""Issue 22 (session 11): the merge loop of ``boundary._merge_tables`` compiled
(``_numba_cut.merge_contrast``, ``boundary.COMPILED_MERGE``) makes the same merges, the same
strengths and the same labels bit for bit as the NumPy loop, with and without a stop, slivers,
the thickness term and several components."""

from __future__ import annotations

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import boundary, dualgraph
from gpu_kernels.mesh import segment as segmod

pytestmark = pytest.mark.skipif(boundary.compiled() is None, reason="numba is not installed")


@pytest.fixture(scope="module")
def graph_and_labels():
    v, f, _ = box_bar_box()
    rng = np.random.default_rng(1101)
    v = v + rng.normal(scale=0.05, size=v.shape)
    # two copies side by side: two mesh components
    v2 = np.vstack([v, v + np.array([40.0, 0.0, 0.0])])
    f2 = np.vstack([f, f + v.shape[0]])
    prep = segmod.prepare_mesh(v2, f2, device="cpu", max_faces=None)
    g = prep.graph
    assert g.n_components == 2
    th = getattr(g, "thickness", None)
    cell = np.floor((g.centroids - g.centroids.min(axis=0)) / 1.5).astype(np.int64)
    _, lab = np.unique(cell[:, 0] * 10_000 + cell[:, 1] * 100 + cell[:, 2], return_inverse=True)
    lab = lab.astype(np.int64)
    # a label never spans both components
    lab = lab * 2 + g.component.astype(np.int64)
    _, lab = np.unique(lab, return_inverse=True)
    K = int(lab.max()) + 1
    lc = np.zeros(K, dtype=np.int64)
    lc[lab] = g.component[np.arange(g.n)]
    assert K > 24 and th is not None
    return g, lab, lc


def _both(monkeypatch, g, lab, lc, targets, stop, min_area):
    out = []
    for on in (False, True):
        monkeypatch.setattr(boundary, "COMPILED_MERGE", on)
        st: list = []
        labels, merges = boundary._merge_tables(g, lab.copy(), dict(targets), lc.copy(), stop, st, min_area)
        out.append((labels, merges, st))
    return out


CASES = [({0: 2, 1: 3}, None, 0.0), ({0: 5}, None, 0.01), ({0: 1, 1: 1}, {0: 1.2, 1: 0.9}, 0.002),
         ({1: 4}, {1: 1.1}, 0.0), ({0: 3, 1: 2}, {0: 0.5}, 0.05), ({0: 1, 1: 1}, {}, 0.002)]


@pytest.mark.parametrize("targets,stop,min_area", CASES)
def test_the_compiled_merges_are_the_numpy_ones_bit_for_bit(monkeypatch, graph_and_labels, targets, stop, min_area):
    g, lab, lc = graph_and_labels
    (la, ma, sa), (lb, mb, sb) = _both(monkeypatch, g, lab, lc, targets, stop, min_area)
    assert ma and ma == mb
    assert all(isinstance(x, int) for m in mb for x in m)
    np.testing.assert_array_equal(la, lb)
    assert la.dtype == lb.dtype
    assert np.array_equal(np.asarray(sa), np.asarray(sb)) and all(isinstance(x, float) for x in sb)


def test_without_the_thickness_term_too(monkeypatch, graph_and_labels):
    g, lab, lc = graph_and_labels
    monkeypatch.setattr(dualgraph, "SDF_MERGE", 0.0)
    (la, ma, sa), (lb, mb, sb) = _both(monkeypatch, g, lab, lc, {0: 2, 1: 2}, {0: 1.5}, 0.002)
    assert ma == mb and sa == sb
    np.testing.assert_array_equal(la, lb)


def test_ties_and_a_flat_boundary_go_the_same_way(monkeypatch, graph_and_labels):
    """Unjittered voxel faces tie many strengths exactly: both loops take the first of equals."""
    v, f, _ = box_bar_box()
    prep = segmod.prepare_mesh(v, f, device="cpu", max_faces=None)
    g = prep.graph
    cell = np.floor((g.centroids - g.centroids.min(axis=0)) / 1.0).astype(np.int64)
    _, lab = np.unique(cell[:, 0] * 10_000 + cell[:, 1] * 100 + cell[:, 2], return_inverse=True)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    for targets, stop, min_area in (({0: 1}, None, 0.0), ({0: 3}, None, 0.02), ({0: 1}, {0: 1.0}, 0.0)):
        (la, ma, sa), (lb, mb, sb) = _both(monkeypatch, g, lab.astype(np.int64), lc, targets, stop, min_area)
        assert ma == mb and sa == sb
        np.testing.assert_array_equal(la, lb)


def test_the_compiled_loop_is_used_and_only_for_its_criterion(monkeypatch, graph_and_labels):
    g, lab, lc = graph_and_labels
    nb = boundary.compiled_merge()  # (session 12: the loop shared with the learned merges, _numba_merge)
    calls = []
    real = nb.greedy_merge

    def spy(*a):
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(nb, "greedy_merge", spy)
    boundary._merge_tables(g, lab, {0: 2, 1: 2}, lc, None, None, 0.0)
    n = len(calls)  # (blocks of boundary.CANCEL_ROUNDS rounds: one call or more)
    assert n >= 1
    boundary._merge_tables(g, lab, {0: 2, 1: 2}, lc, None, None, 0.0, 0.5, 1.0)   # area weighting: NumPy
    monkeypatch.setattr(boundary, "MERGE_CRITERION", "concavity")
    boundary._merge_tables(g, lab, {0: 2, 1: 2}, lc, None, None, 0.0)
    assert len(calls) == n


def test_the_compiled_nearest_centroids_are_numpys(monkeypatch):
    """``segment._nearest_centroids`` compiled: the first centroid at the smallest squared distance,
    as NumPy's argmin over ``((centroids - p) ** 2).sum(axis=1)``, with ties, a NaN and no points."""
    rng = np.random.default_rng(1102)
    c = rng.normal(size=(5000, 3))
    c[4000:] = np.round(c[4000:] * 4) / 4                # many exact ties on a grid
    c[4500:4600] = c[4000:4100]                         # duplicated centroids
    pts = np.vstack([rng.normal(size=(40, 3)), c[4000:4040], np.round(rng.normal(size=(30, 3)) * 8) / 8 + 1e-9])
    cn = c.copy()
    cn[3, 1] = np.nan
    for cen, p in ((c, pts), (cn, pts), (c, pts[:0]), (c[:1], pts), (c.astype(np.float32), pts)):
        ref = np.asarray([int(np.argmin(((cen - q) ** 2).sum(axis=1))) for q in p], dtype=np.int64)
        for on in (True, False):
            monkeypatch.setattr(segmod, "COMPILED_NEAREST", on)
            got = segmod._nearest_centroids(cen, p)
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got, ref)


def _random_csr(rng, n, m, quantised):
    import scipy.sparse as sp

    a = rng.integers(0, n, m)
    b = rng.integers(0, n, m)
    keep = a != b
    a, b = a[keep], b[keep]
    w = rng.integers(1, 5, a.size).astype(np.float64) if quantised else rng.random(a.size) * 3.0
    if quantised:
        w[::9] = 0.0                                   # explicit zero-weight arcs: SciPy takes them as arcs
    return sp.csr_matrix((np.r_[w, w], (np.r_[a, b], np.r_[b, a])), shape=(n, n))


@pytest.mark.parametrize("quantised", [False, True])
def test_the_compiled_dijkstra_is_scipys_bit_for_bit(quantised):
    from scipy.sparse.csgraph import dijkstra

    nb = boundary.compiled()
    rng = np.random.default_rng(1103 + quantised)
    for n, m in ((1, 0), (50, 60), (2000, 5000), (3000, 9000)):
        G = _random_csr(rng, n, m, quantised)
        for nsrc in (1, 3, 40):
            src = rng.integers(0, n, nsrc)               # repeated sources too
            for limit in (0.0, 2.0, 3.0, 7.5, np.inf):
                ref = dijkstra(G, directed=True, indices=src, min_only=True, limit=limit)
                got = np.empty(n)
                nb.dijkstra_min(G.indptr.astype(np.int64), G.indices.astype(np.int64), G.data, src.astype(np.int64),
                                float(limit), got)
                assert np.array_equal(ref, got)


def test_the_part_memberships_are_scipys_bit_for_bit(monkeypatch, graph_and_labels):
    g, lab, lc = graph_and_labels
    v, f, _ = box_bar_box()
    g2 = segmod.prepare_mesh(v, f, device="cpu", max_faces=None).graph        # unjittered: tied distances
    lab2 = (g2.centroids[:, 0] > np.median(g2.centroids[:, 0])).astype(np.int64) + 2 * (g2.centroids[:, 1] > 0)
    for graph, labels in ((g, lab % 7), (g2, lab2)):
        k = int(labels.max()) + 1
        for scale in (0.3, 1.0, 5.0):
            out = []
            for on, threads in ((False, 8), (True, 8), (True, 1), (True, 3)):
                monkeypatch.setattr(boundary, "COMPILED_DIJKSTRA", on)
                monkeypatch.setattr(boundary, "DIJKSTRA_THREADS", threads)
                out.append(boundary.part_memberships(graph, labels, k + 1, scale=scale))   # k + 1: an empty part
            for P in out[1:]:
                assert P.dtype == out[0].dtype and np.array_equal(P, out[0])


def test_the_part_searches_run_on_several_threads_and_an_error_reaches_the_caller(monkeypatch, graph_and_labels):
    import threading

    g, lab, lc = graph_and_labels
    nb = boundary.compiled()
    seen = set()
    real = nb.dijkstra_min

    def spy(*a):
        seen.add(threading.current_thread().name)
        return real(*a)

    monkeypatch.setattr(nb, "dijkstra_min", spy)
    monkeypatch.setattr(boundary, "DIJKSTRA_THREADS", 4)
    monkeypatch.setattr(boundary.os, "cpu_count", lambda: 4)
    boundary.part_memberships(g, lab % 6, 6, scale=1.0)
    assert "gpulab-part-dijkstra" in seen and threading.current_thread().name in seen

    def boom(*a):
        if threading.current_thread().name == "gpulab-part-dijkstra":
            raise ValueError("boom")
        return real(*a)

    monkeypatch.setattr(nb, "dijkstra_min", boom)
    with pytest.raises(ValueError, match="boom"):
        boundary.part_memberships(g, lab % 6, 6, scale=1.0)
    assert not [t for t in threading.enumerate() if t.name == "gpulab-part-dijkstra"]
