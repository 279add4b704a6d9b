"""benchmarks/imseg_session8_boundary.py (issue 21, session 8: the boundary-map screen) computes
what its rule (benchmarks/results/imseg_boundary_session8.md) says: half discs that split a disc
into two mirror halves, a half-disc chi-squared of 1 across a clean step edge and 0 along it or
away from it, scale-normalised gradients that give a step edge about the same peak at every
scale, boundary sums in the region graph's edge order, and a default row that is the production
merge."""

from __future__ import annotations

import math

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import label as L


@pytest.fixture(scope="module")
def bd():
    return load_benchmark("imseg_session8_boundary")


@pytest.mark.parametrize("r", [2, 5, 10])
def test_half_disc_masks_are_disjoint_mirror_halves(bd, r):
    y, x = np.mgrid[-r:r + 1, -r:r + 1]
    disc = x * x + y * y <= r * r
    masks = bd.half_disc_masks(r, 8)
    assert len(masks) == 8
    for ml, mr in masks:
        assert ml.shape == (2 * r + 1, 2 * r + 1)
        np.testing.assert_allclose([ml.sum(), mr.sum()], [1.0, 1.0], rtol=1e-6)
        assert not ((ml > 0) & (mr > 0)).any()                     # disjoint
        assert not (((ml > 0) | (mr > 0)) & ~disc).any()           # inside the disc
        np.testing.assert_array_equal(mr, ml[::-1, ::-1])          # mirror through the centre
        assert (ml > 0).sum() >= 0.3 * disc.sum()                  # a half, not a sliver (r 2: 4 of 13)
    # θ = 0: the line is horizontal, the halves are the disc's rows above and below the centre
    ml, mr = masks[0]
    np.testing.assert_array_equal(ml > 0, disc & (y < 0))
    np.testing.assert_array_equal(mr > 0, disc & (y > 0))
    # θ = π/2: the disc's columns right and left of the centre
    ml, mr = masks[4]
    np.testing.assert_array_equal(ml > 0, disc & (x > 0))
    np.testing.assert_array_equal(mr > 0, disc & (x < 0))


def test_chi2_of_a_step_edge(bd):
    """Bins 3 | 7 split at a vertical line between columns 19 and 20: across the edge the χ² of
    the vertical half discs is 1 (disjoint histograms), along it (horizontal halves) 0, and far
    from it 0; the Pb-lite map (max over orientations) is highest on the edge."""
    r = 5
    bins = np.full((40, 40), 3, np.int64)
    bins[:, 20:] = 7
    chi = bd.chi2_halfdisc(bins, r, 8)
    assert chi.shape == (8, 40, 40)
    np.testing.assert_allclose(chi[4, 20, 20], 1.0, atol=1e-5)     # θ = π/2: x > 0 all 7, x < 0 all 3
    np.testing.assert_allclose(chi[0, 20, 18:22], 0.0, atol=1e-5)  # θ = 0: both halves the same mixture
    np.testing.assert_allclose(chi[:, 20, : 20 - r - 1], 0.0, atol=1e-5)  # farther than r from the edge
    np.testing.assert_allclose(chi[:, 20, 20 + r + 1:], 0.0, atol=1e-5)
    m = chi.max(0)
    assert m[20].argmax() in (19, 20) and 0.0 < m[20, 17] < m[20, 19]
    # the χ² at column 18 (2 columns of 7s in the right half's reach): by hand
    ml, mr = bd.half_disc_masks(r, 8)[4]
    g7 = ml[:, r + 2:].sum()   # left half (x > 0): columns x >= 2 reach 20..23
    h7 = 0.0                   # right half (x < 0): all 3s
    expect = 0.5 * ((g7 - h7) ** 2 / (g7 + h7) + ((1 - g7) - 1) ** 2 / ((1 - g7) + 1))
    np.testing.assert_allclose(chi[4, 20, 18], expect, rtol=1e-4)


def test_pb_lite_map_of_a_two_colour_image(bd):
    """Two flat CIELAB colours differing in L, a and b: P is 1 on the edge (every channel's
    histograms disjoint at both radii) and 0 away from it."""
    q = np.zeros((3, 40, 60), np.int32)
    q[0], q[1], q[2] = 800, 0, 0                                   # L 50, a 0, b 0: bins 8, 8, 8
    q[0][:, 30:], q[1][:, 30:], q[2][:, 30:] = 400, 400, -400      # L 25, a 25, b -25: bins 4, 11, 4
    P = bd.pb_lite(q)
    assert P.shape == (40, 60) and P.dtype == np.float32
    np.testing.assert_allclose(P[20, 30], 1.0, atol=1e-5)
    np.testing.assert_allclose(P[:, :15], 0.0, atol=1e-5)
    np.testing.assert_allclose(P[:, 45:], 0.0, atol=1e-5)


def test_scale_normalised_gradient_peaks_alike_on_a_step(bd):
    """σ·G_σ of a step edge peaks at about the step's σ 1 value at σ 2 and 4 too (within 30 %:
    31.0, 36.9 and 39.0 for this step, the σ 1 central difference sampling the blurred edge more
    coarsely), and the max map is at least today's G everywhere (σ 1 is one of its scales)."""
    img = np.full((64, 96, 3), 60, np.uint8)
    img[:, 48:] = 180
    mx, mn = bd.multiscale(img)
    lab = C.lab_planes_np(img)
    peaks = [s * C.gradient_np(C.blur_np(lab, s))[0][32].max() for s in bd.SIGMAS]
    assert peaks[0] < peaks[1] < peaks[2] < 1.3 * peaks[0]
    G = C.gradient_np(C.blur_np(lab, 1.0))[0]
    assert (mx >= G - 1e-4).all() and mx[32, 47:49].max() == pytest.approx(max(peaks), rel=1e-5)
    np.testing.assert_allclose(mn[32].max(), np.mean(peaks), rtol=1e-5)


def test_edge_sums_follow_the_region_graph_and_default_is_production(bd):
    img, gts = _scene()
    d = bd.prepare((("s", img, gts, None), ("ms_max", "ms_mean", "pb", "pb_g")))
    g = d["graph"]
    # edge_sums of the production's fixed-point gradient are the graph's eg, edge by edge
    sm = C.blur_np(C.lab_planes_np(C.to_u8(img)), C.DEFAULT_SIGMA)
    G, gq, q = C.gradient_np(sm)
    S = C.slic_step(*img.shape[:2], C.DEFAULT_N_SUPERPIXELS)
    comps, R = L.label_np(C.slic_np(sm, q, S, C.DEFAULT_COMPACTNESS, C.SLIC_ITERATIONS), 4)
    np.testing.assert_array_equal(bd.edge_sums(comps, R, gq.astype(np.float64)).astype(np.int64), g["eg"])
    assert {"G", "ms_max", "ms_mean", "P"} <= set(d["raw"]) and all(len(v) == len(g["ea"]) for v in d["raw"].values())
    assert (d["raw"]["ms_max"] >= d["raw"]["G"] - 1e-3).all()
    kappa = 20.0
    np.testing.assert_array_equal(bd.cand_eg(d, "pb_g", kappa),
                                  np.rint(4.0 * (d["raw"]["G"] + kappa * d["raw"]["P"])).astype(np.int64))
    # the default row is the production merge (labels and count)
    n = d["h"] * d["w"]
    ref, count, _ = C.merge_np(g, 0, C.coarseness_threshold(3.3), 1 / math.sqrt(n), min_area=C.min_region_area(S))
    from imseg_session3 import scores

    got = bd.run(d, "default", 3.3, kappa)
    assert got[3] == count and count > 1
    np.testing.assert_allclose(got[:3], scores(d, C._resolve(ref)[0])[:3], rtol=1e-12)
    # a different map changes the boundary sums, and so (at this coarseness) what merges
    assert not np.array_equal(bd.cand_eg(d, "pb", kappa), g["eg"])


def test_screen_pick_takes_the_two_best_margins(bd):
    dk = "kind=thr|c=3.3"
    means = {dk: [0.60, 0.82, 1.70, 27.0],
             "a1": [0.62, 0.81, 1.60, 27.0], "a2": [0.61, 0.825, 1.69, 27.0],   # a: best -0.01, +0.001
             "b1": [0.605, 0.822, 1.68, 27.0],                                  # b: +0.002
             "c1": [0.70, 0.70, 1.00, 27.0]}                                    # c: -0.12
    chosen, best = bd.screen_pick(means, {"a": ["a1", "a2"], "b": ["b1"], "c": ["c1"]})
    assert chosen == ["b", "a"]
    assert best["a"] == pytest.approx(0.001) and best["b"] == pytest.approx(0.002)
