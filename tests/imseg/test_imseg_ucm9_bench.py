"""benchmarks/imseg_session9_ucm.py and imseg_session9_direct.py (issue 21, session 9: a per-image
merge level) compute what their pre-registered rules (benchmarks/results/imseg_ucm_session9.md)
say: a ladder of one level is today's direct merge, the ladder's graph sums are exact, each rule's
level is the one the rule names, the margin rule picks as written, and a rule equal to the default
is never accepted."""

from __future__ import annotations

import math

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations


@pytest.fixture(scope="module")
def U():
    return load_benchmark("imseg_session9_ucm")


@pytest.fixture(scope="module")
def R():
    return load_benchmark("imseg_session9_direct")


@pytest.fixture(scope="module")
def scene(U):
    img, gts = _scene(3)
    return U.S7.prepare(("s", img, gts, None))


@pytest.mark.parametrize("c", [2.6, 3.0, 3.3])
def test_a_ladder_of_one_level_is_todays_direct_merge(U, scene, c):
    curve, rho, big, segs = U.ladder(scene, levels=(c,))
    ref = U.S7.run(scene, {"kind": "thr", "c": c})
    np.testing.assert_allclose(curve[0], ref, rtol=1e-12)
    assert rho[0] >= 0 and 0 < big[0] <= 1


def test_the_ladder_goes_on_from_the_lower_level(U, scene):
    """The ladder's rounds at 3.3 start from its state at 3.0: the regions of 3.0 (before the
    clean-up) never split, so every level's segments (which add only the clean-up) are unions of
    the previous state's regions; the counts of the threshold state never rise."""
    from gpu_kernels.imseg import contours as C

    g = scene["graph"]
    inv_norm = 1 / math.sqrt(scene["h"] * scene["w"])
    root = np.arange(g["R"])
    counts = []
    levels = (2.6, 3.0, 3.3, 3.6)
    curve, _, _, segs = U.ladder(scene, levels=levels)
    for c, seg, cnt in zip(levels, segs, curve[:, 3], strict=True):
        into, _, _ = C.merge_np(U.graph_at(g, root), 0, C.coarseness_threshold(c), inv_norm, min_area=0)
        new = U.roots(into)[root]
        # each old region lies in one new region
        for r in np.unique(root):
            assert len(np.unique(new[root == r])) == 1
        root = new
        counts.append(len(np.unique(root)))
        # ladder(): the labels at c are this state plus the clean-up (unions of its regions)
        for r in np.unique(root):
            assert len(np.unique(seg[root == r])) == 1
        assert cnt == seg.max() + 1 <= counts[-1]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_graph_at_sums_are_exact(U, scene):
    g = scene["graph"]
    ident = U.graph_at(g, np.arange(g["R"]))
    for k in ("ea", "eb", "el", "eg", "area", "rsum"):
        np.testing.assert_array_equal(ident[k], g[k])
    root = np.arange(g["R"]) // 3 * 3  # regions of three superpixel ids (named by the lowest)
    gs = U.graph_at(g, root)
    assert gs["area"].sum() == g["area"].sum() and (gs["rsum"].sum(0) == g["rsum"].sum(0)).all()
    assert (gs["ea"] < gs["eb"]).all() and set(np.unique(gs["ea"])) <= set(np.unique(root))
    cross = root[g["ea"]] != root[g["eb"]]
    assert gs["el"].sum() == g["el"][cross].sum() and gs["eg"].sum() == g["eg"][cross].sum()


def test_rule_levels(U):
    assert U.LEVELS[0] == 2.5 and U.LEVELS[-1] == 4.5 and len(U.LEVELS) == 41
    assert U.lvl_index(3.3) == 16 and U.LEVELS[16] == 3.3
    np.testing.assert_array_equal(U.to_index([3.31, 3.33, 1.0, 9.0, 3.2749]), [16, 17, 0, 40, 15])
    rho = np.array([[1.0, 1.5, 2.0, 1.2], [0.5, 0.6, 0.7, 0.8]])
    np.testing.assert_array_equal(U.nc_index(rho, 1.4), [1, 40])  # the lowest level at or above; else 4.50
    np.testing.assert_array_equal(U.nc_index(rho, 0.6), [0, 1])


def test_fit_tau_matches_the_count(U):
    """Counts fall as the level rises; τ* puts the mean count at the target."""
    lv = len(U.LEVELS)
    curves = np.zeros((2, lv, 4))
    curves[:, :, 3] = np.arange(lv, 0, -1)                       # count 41 .. 1
    rho = np.tile(np.linspace(1.0, 5.0, lv), (2, 1))            # ρ rises with the level
    tau = U.fit_tau(curves, rho, target=21.0)
    assert curves[0, U.nc_index(rho, tau)[0], 3] == 21.0


def test_target_is_the_smoothed_argmax(U, R):
    lv = len(U.LEVELS)
    curve = np.zeros((lv, 4))
    curve[:, 0] = 0.5
    curve[U.lvl_index(3.5), 0] = 0.9            # a spike: the 3-level means around it tie ...
    assert U.oracle_level(curve) == 3.45        # ... and a tie goes to the lowest level
    curve[[U.lvl_index(3.45), U.lvl_index(3.55)], 0] = 0.7   # a bump: the smoothed maximum is its top
    curve[U.lvl_index(2.6), 0] = 5.0            # outside [2.8, 4.2]: ignored
    assert U.oracle_level(curve) == 3.5
    assert R.target(curve[None], 1.0)[0] == 3.5
    curve[:, 1] = np.linspace(0, 1, lv)         # PRI rising: weight 2 moves the target up
    assert R.target(curve[None], 50.0)[0] == 4.2


def test_margin_pick_and_acceptance(U):
    dflt = np.array([[0.5, 0.8, 2.0, 25.0]] * 4)
    rows = {U.DK: dflt,
            "better": dflt + [0.01, 0.001, -0.1, 0],          # margin 0.001
            "best_cov": dflt + [0.05, 0.0005, -0.1, 0],       # margin 0.0005
            "few": dflt + [0.1, 0.1, -1, -10],                # 15 segments: does not qualify
            "pri_lost": dflt + [0.1, -0.001, -1, 0]}
    assert U.pick(rows, np.arange(4)) == "better"
    del rows["better"], rows["best_cov"]
    assert U.pick(rows, np.arange(4)) == U.DK


def test_a_rule_that_is_the_default_is_rejected(R, U):
    """With features that carry nothing (constant), every row's level is c0; the c0 3.3 rows are
    the default and the others lose on a monotone trade-off, so nothing is accepted."""
    n, lv = 40, len(U.LEVELS)
    rng = np.random.default_rng(0)
    c = np.asarray(U.LEVELS)
    curves = np.zeros((n, lv, 4))
    curves[:, :, 0] = 0.6 - (c - 3.3) ** 2 + rng.normal(0, 1e-4, (n, 1))
    curves[:, :, 1] = 0.8 - (c - 3.3) ** 2
    curves[:, :, 2] = 1.7 + (c - 3.3) ** 2
    curves[:, :, 3] = 27.0
    T = {"curves": curves, "X": np.ones((n, 8)), "default": curves[:, U.lvl_index(3.3)].copy()}
    rows = R.rows_for(T, np.arange(n))
    np.testing.assert_allclose(rows["Q(w1, lam10, c0 3.3, s0.5)"], T["default"])
    out = R.cv(T, seeds=(1, 2))
    assert not out["accepted"] and out["n_pass"] == 0 and out["pick_all200"] == U.DK


def test_ridge_recovers_a_linear_level(U):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    y = 3.3 + 0.2 * X[:, 0] - 0.1 * X[:, 2]
    f = U.ridge_fit(X, y, lam=1e-6)
    np.testing.assert_allclose(f(X), y, atol=1e-6)


def test_ari_is_the_adjusted_rand_index(R):
    """Against a direct pair count: 1 for the same partition (any names), about 0 for independent
    ones, and the textbook value for a small hand example."""
    x = np.array([0, 0, 0, 1, 1, 1])
    y = np.array([0, 0, 1, 1, 2, 2])
    # pairs: n_ij = [[2, 1, 0], [0, 1, 2]]; Σ C(n_ij, 2) = 2; Σ C(a, 2) = 6; Σ C(b, 2) = 3; C(6, 2) = 15
    exp = 6 * 3 / 15
    assert R.ari(x, y) == pytest.approx((2 - exp) / (0.5 * (6 + 3) - exp))
    assert R.ari(x, 1 - x) == pytest.approx(1.0)
    rng = np.random.default_rng(0)
    assert abs(R.ari(rng.integers(0, 5, 20000), rng.integers(0, 5, 20000))) < 0.01


def test_reach_picks_on_one_half_and_scores_on_the_other(R, U):
    """Two images, two halves of humans: half 0 prefers 3.5, half 1 prefers 3.0 (by covering);
    the cross oracle scores each half at the other's pick."""
    lv = len(U.LEVELS)
    S = np.zeros((2, lv, 2, 4))
    S[:, :, :, 1:3] = (0.8, 1.7)
    S[:, :, :, 3] = 10
    S[:, :, 0, 0] = np.where(np.isclose(U.LEVELS, 3.5), 0.9, 0.5)[None]
    S[:, :, 1, 0] = np.where(np.isclose(U.LEVELS, 3.0), 0.7, 0.3)[None]
    S[:, [U.lvl_index(3.45), U.lvl_index(3.55)], 0, 0] = 0.7   # a bump, not a spike (the smoothing ties)
    S[:, [U.lvl_index(2.95), U.lvl_index(3.05)], 1, 0] = 0.5
    out = R.reach(S)
    # chosen on half 0 (3.5) and scored on half 1 there: 0.3; chosen on half 1 (3.0), on half 0: 0.5
    assert out["oracle chosen on the other half"][0] == pytest.approx(0.4)
    assert out["oracle on the same half (in-sample)"][0] == pytest.approx(0.8)


@pytest.mark.parametrize("argv", [["decide", "--curves", "/no/such/curves.json"],
                                  ["decide", "--curves", "README.md"],
                                  ["explore", "--curves", "benchmarks/results/imseg_ucm_session9_reach.json"],
                                  ["stab", "--report", "/no/such/stab.json"]])
def test_bad_inputs_end_in_one_line(R, argv, capsys):
    import os

    from bench_cli import run

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    old = os.getcwd()
    os.chdir(root)
    try:
        assert run(R.main, argv) == 2
    finally:
        os.chdir(old)
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and ("--curves" in err or "--report" in err) and "Traceback" not in err
