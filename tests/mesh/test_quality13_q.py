"""The learned merges' ``"gain"`` policy (issue 22, session 13, helper mesh-q: gpu_kernels/mesh/learned.py and the
compiled loop gpu_kernels/mesh/_numba_merge.py): each round merges the pair with the lowest expected change of the
Rand Index error, ``(2 p - 1) x share_small x share_large`` (p: the model's chance of "different").

- the compiled loop and the NumPy loop give the same labels, merges and strengths (bit for bit);
- round one merges the pair of the lowest expected change (the model's p and the shares of the features);
- the order is not the "learned" policy's (the area weights change it on the fish), and k is reached."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

# the fish, its prepared mesh and the over-segmentation (one copy: tests/mesh/_quality_fixtures.py)
_overseg, fish, prep = fx.overseg, fx.fish, fx.prep


def test_the_share_columns_are_the_features_named():
    assert [ln.FEATURES[c] for c in ln.SHARE_COLS] == ["share_small", "share_large"]
    assert ln.POLICIES["gain"] == 3


@pytest.mark.parametrize("k,min_area,seed", [(3, 0.0, 0), (6, sg.MIN_PART_AREA, 1), (10, sg.MIN_PART_AREA, 2)])
def test_the_compiled_gain_merges_are_the_numpy_ones(prep, monkeypatch, k, min_area, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 30, seed=seed)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    m = ln.shipped_model()
    st_c, st_n = [], []
    a, ma = ln.learned_merge(g, lab, {0: k}, lc, min_area=min_area, policy="gain", model=m, strengths=st_c)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    b, mb = ln.learned_merge(g, lab, {0: k}, lc, min_area=min_area, policy="gain", model=m, strengths=st_n)
    assert np.array_equal(a, b) and [tuple(map(int, x)) for x in ma] == [tuple(map(int, x)) for x in mb]
    assert np.array_equal(np.asarray(st_c), np.asarray(st_n)) and len(np.unique(a)) == k


def test_gain_merges_the_pair_of_the_lowest_expected_change(prep, monkeypatch):
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 20, seed=2)  # (seed 1 until session 25: its model merges alike by both orders there)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    m = ln.shipped_model()
    seen = fx.spy_predictions(monkeypatch)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    out, mg = ln.learned_merge(g, lab, {0: 4}, lc, min_area=0.0, policy="gain", model=m)
    n_gain = len(seen)
    learned, ml = ln.learned_merge(g, lab, {0: 4}, lc, min_area=0.0, policy="learned", model=m)
    assert n_gain == len(mg) == int(lab.max()) + 1 - 4 and len(np.unique(out)) == 4
    X, p = seen[0]
    # (session 19: the area product to the power learned.GAIN_POWER, 0.5 shipped; session 13's formula is 1.0)
    gain = (2.0 * p - 1.0) * (X[:, 10] * X[:, 11]) ** ln.GAIN_POWER
    j = int(np.argmin(gain))
    pair = {int(x) for x in mg[0]}
    # the first merge joins the pair of the lowest expected change (read back from the features' row)
    a = lab == sorted(pair)[0]
    b = lab == sorted(pair)[1]
    sa, sb = prep.graph.areas[a].sum(), prep.graph.areas[b].sum()
    tot = prep.graph.areas.sum()
    assert np.isclose(sorted([sa / tot, sb / tot]), sorted([X[j, 10], X[j, 11]]), rtol=1e-6).all()
    assert not np.array_equal(out, learned)  # (the area weights change the order on this fish)


def test_an_unknown_policy_is_refused_with_the_list(prep):
    lab = _overseg(prep.graph, 8)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    with pytest.raises(ValueError, match="hand, learned, blend or gain"):
        ln.learned_merge(prep.graph, lab, {0: 2}, lc, policy="rand")
