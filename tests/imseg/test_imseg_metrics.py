"""Quality measures against brute-force definitions and scikit-image."""

from __future__ import annotations

import itertools

import numpy as np
from skimage.metrics import variation_of_information as sk_voi

from gpu_kernels.imseg.metrics import (
    boundary_recall,
    evaluate,
    rand_index,
    segmentation_covering,
    undersegmentation_error,
    variation_of_information,
)


def _pairs_ri(a, b):
    a, b = a.ravel(), b.ravel()
    agree = total = 0
    for i, j in itertools.combinations(range(a.size), 2):
        agree += (a[i] == a[j]) == (b[i] == b[j])
        total += 1
    return agree / total


def test_rand_index_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(3):
        a, b = rng.integers(0, 3, (5, 6)), rng.integers(0, 4, (5, 6))
        assert abs(rand_index(a, b) - _pairs_ri(a, b)) < 1e-12


def test_voi_matches_skimage_in_bits():
    rng = np.random.default_rng(1)
    a, b = rng.integers(1, 5, (20, 30)), rng.integers(1, 7, (20, 30))
    assert abs(variation_of_information(a, b) - sum(sk_voi(a, b))) < 1e-9  # both in bits


def test_covering_and_undersegmentation_by_hand():
    gt = np.array([[1, 1, 2, 2]] * 2)
    seg = np.array([[1, 1, 1, 2]] * 2)
    # gt region 1 (4 px): best overlap 4 / 6 (seg 1); gt region 2 (4 px): best 2 / 4 (seg 2)
    assert abs(segmentation_covering(seg, gt) - (4 * 2 / 3 + 4 * 0.5) / 8) < 1e-12
    # seg region 1 meets gt 2 in 2 px with 4 px outside -> min 2; meets gt 1 in 4 px, 2 outside -> min 2
    assert abs(undersegmentation_error(seg, gt) - 4 / 8) < 1e-12
    r = evaluate(gt, [gt, seg])
    assert r["segments"] == 2 and 0 < r["pri"] < 1


def test_boundary_recall_tolerance():
    gt = np.zeros((10, 10), int)
    gt[:, 5:] = 1
    seg = np.zeros((10, 10), int)
    seg[:, 7:] = 1  # boundary two columns away
    assert boundary_recall(seg, gt, tolerance=0) == 0.0
    assert boundary_recall(seg, gt, tolerance=2) == 1.0
