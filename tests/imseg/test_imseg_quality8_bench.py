"""benchmarks/imseg_session8_quality.py and imseg_session8_hist.py (issue 21, session 8: the
pre-registered re-tests) decide the way their rule (benchmarks/results/imseg_quality_session8.md)
says: the margin rule picks the candidate with the largest smallest margin over the default,
a permutation passes only if its held-out figure beats the default on all three, acceptance
needs 7 of 8 and the mean; the colour-histogram factor is the chi-squared it claims, its
histograms are carried through the merge, and with h 0 it is the production merge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations

from gpu_kernels.imseg import contours as C


@pytest.fixture(scope="module")
def s8():
    return load_benchmark("imseg_session8_quality")


@pytest.fixture(scope="module")
def hist():
    return load_benchmark("imseg_session8_hist")


def _base(n=80, seed=0):
    rng = np.random.default_rng(seed)
    return np.c_[rng.uniform(0.4, 0.7, n), rng.uniform(0.7, 0.9, n), rng.uniform(1.5, 2.0, n), np.full(n, 25.0)]


def test_margin_rule_prefers_the_uniformly_better_row(s8):
    """Of two qualifiers the one whose smallest margin is larger wins, although the other has
    more covering; none qualifying leaves the default."""
    base = _base()
    dk = "kind=thr|c=3.3"
    rows = {dk: base, "even": base + [0.01, 0.004, -0.05, 0], "cov": base + [0.03, 0.001, -0.05, 0]}
    idx = np.arange(len(base))
    assert s8.pick(rows, idx) == "even"
    rows = {dk: base, "pri_loss": base + [0.03, -0.001, -0.05, 0], "too_many": base + [0.03, 0.01, -0.1, 30]}
    assert s8.pick(rows, idx) == dk


def test_acceptance_needs_seven_of_eight_and_the_mean(s8):
    base = _base()
    dk = "kind=thr|c=3.3"
    better = base + [0.01, 0.004, -0.05, 0]
    res = s8.cv({dk: base, "better": better})
    assert res["n_pass"] == 8 and res["mean_beats"] and res["accepted"] and res["pick_all200"] == "better"
    np.testing.assert_allclose(res["mean_held_out"], better.mean(0), atol=1e-4)
    # better on average but not on PRI on some images: qualifies on some training parts and
    # loses PRI held out, or never qualifies; either way it is not accepted
    mixed = base + np.c_[np.full(80, 0.01), np.where(np.arange(80) % 2 == 0, 0.006, -0.0062), np.full(80, -0.05),
                         np.zeros(80)]
    res = s8.cv({dk: base, "mixed": mixed})
    assert not res["accepted"] and res["n_pass"] < 7


def test_chi2_on_hand_computed_histograms(hist):
    area = np.array([4, 4, 4], np.int64)
    h = np.zeros((3, 48), np.int64)
    h[0, [0, 16, 32]] = 4           # all four pixels in bin 0 of L, a and b
    h[1] = h[0]                     # the same
    h[2, [1, 16, 33]] = 4           # L and b in other bins, a the same
    a, b = np.array([0, 0]), np.array([1, 2])
    np.testing.assert_allclose(hist.chi2(area, h, a, b), [0.0, 2.0 / 3.0])


def test_histograms_are_carried_through_the_merge_and_h0_is_the_production_merge(hist):
    img, gts = _scene()
    d = hist.prepare(("s", img, gts, None))
    g = d["graph"]
    assert g["hist"].shape == (g["R"], 48) and (g["hist"].sum(1) == 3 * g["area"]).all()
    n = d["h"] * d["w"]
    S7 = hist.S7
    seen = []
    cost = hist.cost_hist(8.0)
    into = S7.merge(g, lambda st, *a: seen.append(st) or cost(st, *a), 1 / math.sqrt(n), C.min_region_area(d["S"]),
                    C.SIZE_K, {"kind": "thr", "c": 3.6})
    seg, count = C._resolve(into)
    assert 1 < count < g["R"]
    expect = np.zeros((count, 48), np.int64)
    np.add.at(expect, seg - 1, g["hist"])
    roots = np.flatnonzero(into == np.arange(g["R"]))
    np.testing.assert_array_equal(seen[-1]["hist"][roots], expect)  # the carried sums of each final segment
    ref, _, _ = C.merge_np(g, 0, C.coarseness_threshold(3.3), 1 / math.sqrt(n), min_area=C.min_region_area(d["S"]))
    got = S7.merge(g, hist.cost_hist(0.0), 1 / math.sqrt(n), C.min_region_area(d["S"]), C.SIZE_K,
                   {"kind": "thr", "c": 3.3})
    np.testing.assert_array_equal(C._resolve(got)[0], C._resolve(ref)[0])
    assert hist.run(d, {"c": 3.3}) == hist.run(d, {"c": 3.3, "h": 0})
