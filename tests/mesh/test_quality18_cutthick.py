"""The learned merges' 22nd feature ``log_cut_over_thickness`` (issue 22, session 18, helper mesh-q10:
gpu_kernels/mesh/learned.py and the compiled loop gpu_kernels/mesh/_numba_merge.py): log(the pair's boundary length /
(pi x the smaller cluster's thickness, its area-weighted geometric mean)): how narrow a cut is for the part it cuts off.

- the NumPy features' column equals that quantity computed here from the graph and the labels alone (the boundary's
  mesh edges, the faces' thickness), on the plain graph and on the integer k's merge graph (whose thickness is raised
  to a power: the column takes the thickness itself back, so both give the same values up to rounding);
- it is scale-free: the mesh scaled by 7 gives the same column;
- the compiled loop fills it with the same floats: a model that splits on it gives the same labels, merges and
  strengths in both loops (and other merges than a model that splits the other way: the column matters);
- the shipped models never read it while they are the 21- and 20-column ones."""

from __future__ import annotations

import math
from dataclasses import replace

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

_overseg, fish, prep = fx.overseg, fx.fish, fx.prep
COL = ln.FEATURES.index("log_cut_over_thickness")


def _model(split: float, sign: float = 1.0) -> ln.TreeModel:
    """Two trees: the new column at ``split`` and then the smaller cluster's share (leaf values -sign / +sign x 0.3
    for the column), and a stump on the hand-made strength's log (column 0) at 0."""
    ss = ln.FEATURES.index("share_small")
    feat = np.array([[COL, ss, ss, -1, -1, -1, -1], [0, -1, -1, -1, -1, -1, -1]], dtype=np.int64)
    thr = np.array([[split, 0.05, 0.05, 0, 0, 0, 0], [0.0, 0, 0, 0, 0, 0, 0]])
    left = np.array([[1, 3, 5, 3, 4, 5, 6], [1, 1, 2, 3, 4, 5, 6]], dtype=np.int64)
    right = np.array([[2, 4, 6, 3, 4, 5, 6], [2, 1, 2, 3, 4, 5, 6]], dtype=np.int64)
    val = np.array([[0, 0, 0, -0.3 * sign, 0.1 * sign, 0.3 * sign, -0.1 * sign], [0.0, -0.1, 0.1, 0, 0, 0, 0]])
    return ln.TreeModel(feat, thr, left, right, val, 0.5, 1.0, 2)


def _first_round(graph, lab, monkeypatch):
    """The first round's features of every candidate pair (NumPy loop), with the pairs (lo, hi) in their order."""
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    seen = fx.spy_predictions(monkeypatch)
    pairs: list = []
    orig = ln._features

    def spy(strength, bnd, inner, bl, ulo, uhi, *a, **k):
        pairs.append((np.asarray(ulo).copy(), np.asarray(uhi).copy()))
        return orig(strength, bnd, inner, bl, ulo, uhi, *a, **k)

    monkeypatch.setattr(ln, "_features", spy)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    ln.learned_merge(graph, lab, {0: int(lab.max())}, lc, min_area=0.0, policy="learned", model=ln.shipped_model())
    monkeypatch.undo()
    return seen[0][0], pairs[0]


def _expected(graph, lab, ulo, uhi):
    """log(boundary length / (pi x geometric-mean thickness of the smaller cluster)), from the graph directly."""
    s, d = np.asarray(graph.src), np.asarray(graph.dst)
    L = np.asarray(graph.edge_length)
    a, b = lab[s], lab[d]
    th = np.asarray(graph.thickness, dtype=np.float64) ** (1.0 / float(getattr(graph, "thickness_power", 1.0)))
    area = np.bincount(lab, weights=graph.areas)
    mlog = np.bincount(lab, weights=np.log(th) * graph.areas) / area
    out = []
    for p, q in zip(ulo.tolist(), uhi.tolist(), strict=True):
        bl = L[((a == p) & (b == q)) | ((a == q) & (b == p))].sum()
        sm = p if area[p] <= area[q] else q
        out.append(math.log(bl / math.pi) - mlog[sm])
    return np.array(out)


def test_the_column_is_the_cut_over_the_small_parts_thickness(prep, monkeypatch):
    assert len(ln.FEATURES) == 22 and COL == 21
    lab = _overseg(prep.graph, 30, seed=0)
    for g in (prep.graph, sg.k_merge_graph(prep.graph)):
        X, (ulo, uhi) = _first_round(g, lab, monkeypatch)
        assert X.shape[1] == 22
        assert np.allclose(X[:, COL], _expected(g, lab, ulo, uhi), rtol=0, atol=1e-9)
    # the merge graph's thickness is the plain one to a power: the column is the same (the power taken back)
    assert float(getattr(sg.k_merge_graph(prep.graph), "thickness_power", 1.0)) != 1.0
    X1, _ = _first_round(prep.graph, lab, monkeypatch)
    X4, _ = _first_round(sg.k_merge_graph(prep.graph), lab, monkeypatch)
    assert np.allclose(X1[:, COL], X4[:, COL], rtol=0, atol=1e-9)
    assert np.ptp(X1[:, COL]) > 0.5  # (it tells the pairs apart)


def test_the_column_is_scale_free(prep, monkeypatch):
    """The mesh 7 times larger (lengths x 7, areas x 49, thickness x 7): the same column."""
    g = sg.k_merge_graph(prep.graph)
    pw = float(getattr(g, "thickness_power", 1.0))
    big = replace(g, edge_length=np.asarray(g.edge_length) * 7.0, areas=np.asarray(g.areas) * 49.0,
                  thickness=np.asarray(g.thickness) * 7.0 ** pw, centroids=np.asarray(g.centroids) * 7.0)
    big.thickness_power = pw
    lab = _overseg(prep.graph, 30, seed=1)
    X, _ = _first_round(g, lab, monkeypatch)
    Xb, _ = _first_round(big, lab, monkeypatch)
    assert np.allclose(X[:, COL], Xb[:, COL], rtol=0, atol=1e-9)


@pytest.mark.parametrize("policy,k,seed", [("gain", 4, 0), ("learned", 6, 1), ("gain", 10, 2)])
def test_the_compiled_loop_fills_the_column_as_numpy(prep, monkeypatch, policy, k, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 30, seed=seed)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    X, _ = _first_round(g, lab, monkeypatch)
    split = float(np.median(X[:, COL]))
    out = {}
    for sign in (1.0, -1.0):
        m = _model(split, sign)
        st_c, st_n = [], []
        a, ma = ln.learned_merge(g, lab, {0: k}, lc, min_area=sg.MIN_PART_AREA, policy=policy, model=m, strengths=st_c)
        with monkeypatch.context() as mp:
            mp.setattr(bd, "COMPILED_MERGE", False)
            b, mb = ln.learned_merge(g, lab, {0: k}, lc, min_area=sg.MIN_PART_AREA, policy=policy, model=m,
                                     strengths=st_n)
        assert np.array_equal(a, b) and [tuple(map(int, x)) for x in ma] == [tuple(map(int, x)) for x in mb]
        assert np.array_equal(np.asarray(st_c), np.asarray(st_n)) and len(np.unique(a)) == k
        out[sign] = [tuple(map(int, x)) for x in ma]
    assert out[1.0] != out[-1.0]  # (the column decides merges: a wrong fill could not pass the equalities above)


def test_the_shipped_models_do_not_read_the_column():
    """While the shipped integer-k model is recipe S (21 columns) and k = "auto"'s the 20-column one, the new column
    changes no label of the defaults."""
    assert int(ln.shipped_model().feature.max()) < COL
    assert int(ln.shipped_auto_model().feature.max()) < COL
