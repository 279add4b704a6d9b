"""benchmarks/imseg_session11_gala.py (issue 21, session 11: session 10's learned merge with examples
weighted by the pixels at stake and a second, active epoch) computes what its pre-registered rule
(benchmarks/results/imseg_q_session11.md) says: the weights are the smaller region's share of the image,
the active epoch's examples come from the first model's own merge, the held-out rows at a fold's pick
are the all-τ rows' column, and the decision needs 7 of 8 permutations, their mean and an all-200 pick.
Synthetic scene, CPU, no BSDS data, no scikit-learn (the trees are built by hand)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations
from test_quality10_gala_bench import _stump


@pytest.fixture(scope="module")
def S():
    return load_benchmark("imseg_session11_gala")


@pytest.fixture(scope="module")
def scene(S):
    img, gts = _scene(3)
    return S.G.prepare(("7", img, gts, None))


def test_the_weights_are_the_smaller_regions_share(S, scene):
    G = S.G
    st, ea, eb, el, eg, gh = G.init_state(scene)
    npx = float(st["area"].sum())
    X, _ = G.edge_features(st, ea, eb, el, eg, gh, 1 / math.sqrt(scene["h"] * scene["w"]), npx,
                           len(st["area"]), len(st["area"]))
    want = np.minimum(st["area"][ea], st["area"][eb]) / npx
    np.testing.assert_allclose(S.stake(X.astype(np.float32)), want, rtol=1e-6)


def test_the_active_examples_follow_the_models_merge(S, scene):
    """A stump on the colour distance: the first model's own merge records examples of its rounds
    (features of the merge state it reaches), labelled in [0, 1]."""
    G = S.G
    G._D = [scene]
    m = _stump(2, math.log(4.0), 0.0, 1.0)
    ((X, Y),) = S._act_job((m, np.array([0])))
    assert X.shape[1] == G.NFEAT and len(X) == len(Y) > 0
    assert ((Y >= 0) & (Y <= 1)).all()
    assert np.isfinite(X).all()


def test_held_out_rows_at_the_pick_are_the_columns(S, scene):
    G = S.G
    G._D = [scene, scene]
    m = _stump(2, math.log(4.0), 0.0, 1.0)
    run = lambda f, xs: list(map(f, xs))  # noqa: E731
    (full,) = S.rows_for(run, [m], [np.array([0, 1])], (0.3, 0.6), 1)
    a, b = S.rows_for(run, [m, m], [np.array([0, 1]), np.array([1])], [(0.6,), (0.3,)], 1)
    np.testing.assert_array_equal(a[:, 0], full[:, 1])
    np.testing.assert_array_equal(b[:, 0], full[1:, 0])


def _part(beats: list, held=None):
    return {"default_train": [0.5, 0.8, 1.8, 27.0], "taus": [0.36, 0.39, 0.42],
            "perms": [{"seed": 1101 + k, "picks": [0.39] * 5, "held": held or [0.6, 0.81, 1.7, 22.0] if b
                       else [0.6, 0.81, 1.9, 22.0], "beats": b} for k, b in enumerate(beats)]}


def test_the_decision(S):
    all200 = {"default_train": [0.5, 0.8, 1.8, 27.0], "taus": [0.36, 0.39, 0.42], "all200_rows": [],
              "all200_pick_index": 1}
    assert S.combine([_part([True] * 7 + [False]), all200])["accepted"]
    assert not S.combine([_part([True] * 6 + [False] * 2), all200])["accepted"]
    assert not S.combine([_part([True] * 7), all200])["accepted"]  # all 8 needed
    assert not S.combine([_part([True] * 8), {**all200, "all200_pick_index": -1}])["accepted"]
    assert not S.combine([_part([True] * 8)])["accepted"]  # no all-200 part
    res = S.combine([_part([True] * 7 + [False]), all200])
    assert res["n_beat"] == 7 and res["all200_pick"] == 0.39
