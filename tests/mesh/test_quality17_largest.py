"""The learned merges' 22nd feature ``largest_share`` (issue 22, session 17, helper mesh-q9: gpu_kernels/mesh/learned.py
and the compiled loop gpu_kernels/mesh/_numba_merge.py): the largest cluster's share of the pair's component's area at
this round (one value per component).

- the NumPy features' column is the largest cluster's area over the component's, from the over-segmentation itself,
  the same for every pair of a component, and it grows as the merges join clusters;
- the compiled loop fills it with the same floats: a model that splits on it gives the same labels, merges and
  strengths in both loops (and other merges than a model that splits the other way: the column matters);
- the integer k's shipped model (recipe L, session 17) splits on it; k = "auto"'s never reads it (it is trained on the
  first 20 columns)."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

_overseg, fish, prep = fx.overseg, fx.fish, fx.prep
COL = ln.FEATURES.index("largest_share")


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


def _rounds(prep, monkeypatch, n=30, seed=0, k=None):
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, n, seed=seed)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    seen = fx.spy_predictions(monkeypatch)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    ln.learned_merge(g, lab, {0: k or int(lab.max())}, lc, min_area=0.0, policy="learned", model=ln.shipped_model())
    return g, lab, lc, [x for x, _ in seen]


def test_the_column_is_the_largest_clusters_share(prep, monkeypatch):
    g, lab, _, Xs = _rounds(prep, monkeypatch, k=4)
    X = Xs[0]
    assert X.shape[1] == len(ln.FEATURES) == 22 and COL == 21
    area = np.bincount(lab, weights=g.areas)
    # round one: the over-segmentation's largest cluster over the whole (one component), on every pair
    assert np.allclose(X[:, COL], area.max() / area.sum(), rtol=1e-12) and np.ptp(X[:, COL]) == 0
    # it never falls as the merges go on (a merge only grows a cluster), and does grow, up to at most 1
    first = np.array([x[0, COL] for x in Xs])
    assert np.all(np.diff(first) >= 0) and first[-1] > first[0] and first[-1] <= 1.0
    # at least the larger cluster's share of every pair, in every round
    assert all(np.all(x[:, COL] >= x[:, ln.FEATURES.index("share_large")]) for x in Xs)


def test_the_column_is_per_component(prep, monkeypatch):
    """Two components (the over-segmentation's clusters split in two halves): each pair sees its own component's
    largest cluster."""
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 30, seed=3)
    K = int(lab.max()) + 1
    lc = (np.arange(K) >= K // 2).astype(np.int64)
    seen = fx.spy_predictions(monkeypatch)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    ln.learned_merge(g, lab, {0: 3, 1: 3}, lc, min_area=0.0, policy="learned", model=ln.shipped_model())
    X = seen[0][0]
    area = np.bincount(lab, weights=g.areas, minlength=K)
    want = {c: area[lc == c].max() / area[lc == c].sum() for c in (0, 1)}
    sm = X[:, ln.FEATURES.index("share_small")]
    got = set(np.round(X[:, COL], 12).tolist())
    assert got <= {round(want[0], 12), round(want[1], 12)} and len(got) == 2 and sm.size


@pytest.mark.parametrize("policy,k,seed", [("gain", 4, 0), ("learned", 6, 1), ("gain", 10, 2)])
def test_the_compiled_loop_fills_the_column_as_numpy(prep, monkeypatch, policy, k, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    g, lab, lc, Xs = _rounds(prep, monkeypatch, seed=seed, k=k)
    monkeypatch.undo()
    lab = _overseg(prep.graph, 30, seed=seed)
    split = float(np.median(np.concatenate([x[:1, COL] for x in Xs])))
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
    """The integer k's shipped model (recipe L, session 17) was trained with the column and splits on it; k = "auto"'s
    model (session 11) never reads it."""
    assert int((ln.shipped_model().feature == COL).sum()) > 0
    assert int(ln.shipped_auto_model().feature.max()) < COL
