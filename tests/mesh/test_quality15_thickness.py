"""The learned merges' 21st feature ``thickness_small_minus_large`` (issue 22, session 15, helper mesh-q4:
gpu_kernels/mesh/learned.py and the compiled loop gpu_kernels/mesh/_numba_merge.py): the smaller cluster's mean log
thickness minus the larger's (signed: the union's thickness against its parts).

- the NumPy features' column is the signed twin of ``dlog_thickness`` and the clusters' own mean log thickness;
- the compiled loop fills it with the same floats: a model that splits on it gives the same labels, merges and
  strengths in both loops (and other merges than a model that splits the other way: the column matters);
- the integer k's shipped model reads it; k = "auto"'s does not."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

_overseg, fish, prep = fx.overseg, fx.fish, fx.prep
COL = ln.FEATURES.index("thickness_small_minus_large")


def _model(split: float, sign: float = 1.0) -> ln.TreeModel:
    """Two stumps: one on the new column at ``split`` (leaf values -sign / +sign x 0.3), one on the hand-made
    strength's log (column 0) at 0."""
    feat = np.array([[COL, -1, -1], [0, -1, -1]], dtype=np.int64)
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
    assert X.shape[1] == ln.n_columns() == 22 and len(ln.FEATURES) == 21 and COL == 20  # (22nd: the hull's)
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


@pytest.mark.parametrize("policy,k,seed", [("gain", 4, 0), ("learned", 6, 1), ("gain", 10, 2)])
def test_the_compiled_loop_fills_the_column_as_numpy(prep, monkeypatch, policy, k, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    g, lab, lc, X = _round_one(prep, monkeypatch, seed=seed)
    monkeypatch.undo()
    lab = _overseg(prep.graph, 30, seed=seed)
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


def test_the_shipped_models_and_the_new_column():
    """The integer k's shipped model was trained with the column (session 15) and splits on it; k = "auto"'s model
    (session 11) never reads it."""
    assert int((ln.shipped_model().feature == COL).sum()) > 0
    assert int(ln.shipped_auto_model().feature.max()) < COL
