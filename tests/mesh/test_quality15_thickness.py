"""The learned merges' features of the union against its parts (issue 22, session 15, helper mesh-q4:
gpu_kernels/mesh/learned.py and the compiled loop gpu_kernels/mesh/_numba_merge.py): ``thickness_small_minus_large``
(the smaller cluster's mean log thickness minus the larger's) and ``log_union_spread_over_parts`` (the union's
area-weighted positional variance over its parts' mean one).

- the NumPy features' columns: the signed twin of ``dlog_thickness`` and the clusters' own mean log thickness; the
  union's spread from the faces' centroids themselves (>= 0);
- the compiled loop fills them with the same floats: a model that splits on one gives the same labels, merges and
  strengths in both loops (and other merges than a model that splits the other way: the column matters);
- the integer k's shipped model (round 2's S) reads the first and not the second; k = "auto"'s reads neither."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

_overseg, fish, prep = fx.overseg, fx.fish, fx.prep
COL = ln.FEATURES.index("thickness_small_minus_large")
SPREAD = ln.FEATURES.index("log_union_spread_over_parts")


def _model(split: float, sign: float = 1.0, col: int = COL) -> ln.TreeModel:
    """Two stumps: one on column ``col`` at ``split`` (leaf values -sign / +sign x 0.3), one on the hand-made
    strength's log (column 0) at 0."""
    feat = np.array([[col, -1, -1], [0, -1, -1]], dtype=np.int64)
    thr = np.array([[split, 0.0, 0.0], [0.0, 0.0, 0.0]])
    left = np.array([[1, 0, 0], [1, 0, 0]], dtype=np.int64)
    right = np.array([[2, 0, 0], [2, 0, 0]], dtype=np.int64)
    val = np.array([[0.0, -0.3 * sign, 0.3 * sign], [0.0, -0.1, 0.1]])
    return ln.TreeModel(feat, thr, left, right, val, 0.5, 1.0, 1)


def _round_one(prep, monkeypatch, n=30, seed=0):
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, n, seed=seed)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    seen = fx.spy_predictions(monkeypatch)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    ln.learned_merge(g, lab, {0: int(lab.max())}, lc, min_area=0.0, policy="learned", model=ln.shipped_model())
    return g, lab, lc, seen[0][0]


def test_the_column_is_the_signed_thickness_difference(prep, monkeypatch):
    g, lab, _, X = _round_one(prep, monkeypatch)
    assert X.shape[1] == len(ln.FEATURES) and COL == 20 and SPREAD == 21
    d, dlog = X[:, COL], X[:, ln.FEATURES.index("dlog_thickness")]
    assert np.array_equal(np.abs(d), dlog)
    assert (d < 0).any() and (d > 0).any()
    # against the clusters' own area-weighted mean log thickness, from the graph (round one: the start clusters)
    K = int(lab.max()) + 1
    area = np.bincount(lab, weights=g.areas, minlength=K)
    m = np.bincount(lab, weights=np.log(g.thickness) * g.areas, minlength=K) / area
    small = X[:, ln.FEATURES.index("share_small")] * area.sum()
    large = X[:, ln.FEATURES.index("share_large")] * area.sum()
    s = np.array([int(np.argmin(np.abs(area - a))) for a in small])
    lg = np.array([int(np.argmin(np.abs(area - a))) for a in large])
    assert np.allclose(d, m[s] - m[lg], atol=1e-9)


def test_the_union_spread_is_the_faces_own(prep, monkeypatch):
    g, lab, _, X = _round_one(prep, monkeypatch)
    u = X[:, SPREAD]
    assert (u > -1e-9).all() and (u > 0.1).any()
    K = int(lab.max()) + 1
    a = g.areas
    area = np.bincount(lab, weights=a, minlength=K)
    c = np.stack([np.bincount(lab, weights=a * g.centroids[:, j], minlength=K) for j in range(3)], 1) / area[:, None]

    def var(faces, centre):
        d = g.centroids[faces] - centre
        return float((a[faces] * (d * d).sum(axis=1)).sum() / a[faces].sum())

    small = X[:, ln.FEATURES.index("share_small")] * area.sum()
    large = X[:, ln.FEATURES.index("share_large")] * area.sum()
    for t in range(0, X.shape[0], 7):
        s, lg = int(np.argmin(np.abs(area - small[t]))), int(np.argmin(np.abs(area - large[t])))
        fs, fl = np.flatnonzero(lab == s), np.flatnonzero(lab == lg)
        fu = np.concatenate([fs, fl])
        cu = (c[s] * area[s] + c[lg] * area[lg]) / (area[s] + area[lg])
        parts = (area[s] * var(fs, c[s]) + area[lg] * var(fl, c[lg])) / (area[s] + area[lg])
        assert np.isclose(u[t], np.log(var(fu, cu) / parts), rtol=1e-6, atol=1e-9)


def test_the_compiled_union_spread_is_numpys_bit_for_bit(prep):
    """The compiled loop's ``_union_spread`` against the NumPy features' on the same moments (the start clusters and
    again after merges: the moments follow the clusters)."""
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    from gpu_kernels.mesh import _numba_merge as nm

    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 30, seed=3)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    state = bd._MergeState(g, lab, {0: 3}, lc, extra=True)
    ln._add_moments(state, g)
    assert state.nrm.shape[1] == 7
    for merge in [None, (0, 1), (2, 5), (0, 2)]:
        if merge is not None:
            state.merge(*merge)
        lo, hi = np.nonzero(np.triu(state.BN > 0, 1))
        want = ln._union_spread(state.nrm, state.area, lo, hi)
        got = np.array([nm._union_spread(state.nrm, state.area, int(p), int(q)) for p, q in zip(lo, hi, strict=True)])
        assert lo.size > 10 and np.array_equal(got, want)


@pytest.mark.parametrize("col", [COL, SPREAD])
@pytest.mark.parametrize("policy,k,seed", [("gain", 4, 0), ("learned", 6, 1), ("gain", 10, 2)])
def test_the_compiled_loop_fills_the_column_as_numpy(prep, monkeypatch, policy, k, seed, col):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    g, lab, lc, X = _round_one(prep, monkeypatch, seed=seed)
    monkeypatch.undo()
    lab = _overseg(prep.graph, 30, seed=seed)
    split = float(np.median(X[:, col]))
    out = {}
    for sign in (1.0, -1.0):
        m = _model(split, sign, col)
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


def test_the_shipped_models_and_the_new_columns():
    """The integer k's shipped model is round 2's S (session 15, 6a35fa5: trained with ``thickness_small_minus_large``,
    21 columns) and splits on it; it never reads ``log_union_spread_over_parts`` (round 3's U, which reads it, failed
    the lead's second confirmation on s1511-1514: benchmarks/results/mesh_q5_session15.md). k = "auto"'s model
    (session 11) never reads either."""
    m = ln.shipped_model()
    assert int((m.feature == COL).sum()) > 0
    assert int((m.feature == SPREAD).sum()) == 0 and int(m.feature.max()) < SPREAD
    assert int(ln.shipped_auto_model().feature.max()) < COL
