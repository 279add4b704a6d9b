"""k = "auto"'s learned merges in the ``"gain"`` order (issue 22, session 13, helper mesh-q2:
``gpu_kernels.mesh.learned.AUTO_POLICY``; the round is benchmarks/results/mesh_q2_session13.md).

- the stop is the same under both orders: a component stops once none of its candidate pairs is predicted under
  ``AUTO_STOP_P``, so every merge "gain" makes is of a pair with p < AUTO_STOP_P (its gain is negative);
- the compiled loop and the NumPy loop give the same labels, merges and strengths with the stop (bit for bit);
- ``auto_merge`` takes its order from ``AUTO_POLICY``, and the order can change the labels."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

# the fish, its prepared mesh and the over-segmentation (one copy: tests/mesh/_quality_fixtures.py)
_overseg, fish, prep = fx.overseg, fx.fish, fx.prep


def test_the_auto_policy_is_a_known_policy():
    assert ln.AUTO_POLICY in ln.POLICIES and ln.AUTO_POLICY != "hand"
    assert ln.AUTO_STOP_P == 0.5


@pytest.mark.parametrize("seed,min_area", [(0, 0.0), (1, sg.MIN_PART_AREA), (2, sg.MIN_PART_AREA)])
def test_the_compiled_gain_stop_is_the_numpy_one(prep, monkeypatch, seed, min_area):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 30, seed=seed)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    m = ln.shipped_auto_model()
    st_c, st_n = [], []
    a, ma = ln.learned_merge(g, lab, {0: 2}, lc, min_area=min_area, policy="gain", model=m, strengths=st_c,
                             stop_p=ln.AUTO_STOP_P)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    b, mb = ln.learned_merge(g, lab, {0: 2}, lc, min_area=min_area, policy="gain", model=m, strengths=st_n,
                             stop_p=ln.AUTO_STOP_P)
    assert np.array_equal(a, b) and [tuple(map(int, x)) for x in ma] == [tuple(map(int, x)) for x in mb]
    assert np.array_equal(np.asarray(st_c), np.asarray(st_n))
    assert 2 < len(np.unique(a)) < 30  # the stop ended it before the least number of clusters


def test_gain_under_the_stop_merges_only_pairs_under_even_odds(prep, monkeypatch):
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 30, seed=3)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    m = ln.shipped_auto_model()
    seen = fx.spy_predictions(monkeypatch)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    out, mg = ln.learned_merge(g, lab, {0: 2}, lc, policy="gain", model=m, stop_p=ln.AUTO_STOP_P)
    # one prediction a merge, and a last one where no pair is under even odds (the stop)
    assert len(seen) == len(mg) + 1 and len(mg) > 0
    for X, p in seen[:-1]:
        j = int(np.lexsort((np.arange(p.size), (2.0 * p - 1.0) * X[:, 10] * X[:, 11]))[0])
        assert p[j] < ln.AUTO_STOP_P
    assert (seen[-1][1] >= ln.AUTO_STOP_P).all()
    seen.clear()
    learned, ml = ln.learned_merge(g, lab, {0: 2}, lc, policy="learned", model=m, stop_p=ln.AUTO_STOP_P)
    assert (seen[-1][1] >= ln.AUTO_STOP_P).all()


def test_auto_merge_takes_its_order_from_auto_policy(prep, monkeypatch):
    g = sg.k_merge_graph(prep.graph)
    lc = np.zeros(64, dtype=np.int64)
    got, calls = {}, []
    orig = ln.learned_merge

    def spy(*a, **kw):
        calls.append(kw["policy"])
        return orig(*a, **kw)

    monkeypatch.setattr(ln, "learned_merge", spy)
    for seed in range(6):
        lab = _overseg(prep.graph, 30, seed=10 + seed)
        for pol in ("learned", "gain"):
            monkeypatch.setattr(ln, "AUTO_POLICY", pol)
            got[seed, pol] = ln.auto_merge(g, lab, {0: 2}, lc[: int(lab.max()) + 1], [0])[0]
    assert calls == ["learned", "gain"] * 6
    # the order changes which clusters later pairs join, hence their predictions and the labels
    assert any(not np.array_equal(got[s, "learned"], got[s, "gain"]) for s in range(6))
