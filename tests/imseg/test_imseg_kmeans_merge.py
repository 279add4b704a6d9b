"""k-means on known colour regions, and the minimum region size (CPU and emulated CUDA)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import piecewise_image

from gpu_kernels.imseg import (
    ImsegInputError,
    kmeans_quantized,
    label_components,
    merge_small_regions,
    rgb2lab,
)
from gpu_kernels.imseg.kmeans import sample_grid

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _recovered(cl, truth) -> bool:
    major = [np.bincount(cl[truth == t]).argmax() for t in range(1, truth.max() + 1)]
    pure = all((cl[truth == t] == major[t - 1]).mean() > 0.99 for t in range(1, truth.max() + 1))
    return pure and len(set(major)) == truth.max()


@pytest.mark.parametrize("noise,shading", [(0.0, False), (2.0, False), (2.0, True)])
def test_kmeans_recovers_known_colour_regions(noise, shading):
    img, truth = piecewise_image(np.random.default_rng(0), 90, 120, noise=noise, shading=shading)
    cl, centres = kmeans_quantized(img, device="cpu")
    assert _recovered(cl, truth)
    # each centre of a true region is near that region's mean colour
    lab = rgb2lab(img, device="cpu")
    for t in range(1, 5):
        c = centres[np.bincount(cl[truth == t]).argmax()]
        assert np.linalg.norm(c - lab[truth == t].mean(0)) < 6.0


def test_kmeans_merge_distance_and_k_max_control_k():
    img, _ = piecewise_image(np.random.default_rng(1), 90, 120, noise=2.0)
    _, c1 = kmeans_quantized(img, k_max=1, device="cpu")
    assert len(c1) == 1
    _, many = kmeans_quantized(img, merge_distance=0.0, k_max=64, device="cpu")
    _, few = kmeans_quantized(img, merge_distance=120.0, k_max=64, device="cpu")
    assert len(few) < 4 <= len(many) <= 64


@pytest.mark.parametrize("noise,bilateral", [(6.0, 0), (12.0, 5)])
def test_pipeline_recovers_known_regions_under_noise_and_shading(noise, bilateral):
    from gpu_kernels.imseg import segment_image

    img, truth = piecewise_image(np.random.default_rng(4), 90, 120, noise=noise, shading=True)
    seg = segment_image(img, min_size=100, bilateral=bilateral, device="cpu")
    assert seg.n_regions == 4
    # the regions are the true ones, up to a few pixels along the borders
    agree = sum(np.bincount(seg.labels[truth == t]).max() for t in range(1, 5)) / truth.size
    assert agree > 0.995


def test_sample_grid_is_bounded_and_even():
    for h, w, k in ((1, 1, 64), (1, 500, 64), (480, 640, 64), (2160, 3840, 256), (10, 10, 1024)):
        ny, nx = sample_grid(h, w, k)
        assert 1 <= ny * nx <= k and ny <= h and nx <= w


def test_kmeans_bad_parameters():
    img = np.zeros((4, 4, 3), np.uint8)
    for kw, m in (({"k_max": 10**9}, "k_max"), ({"k_max": 0}, "k_max"), ({"q": 1}, "q"), ({"iterations": -1}, "iter"),
                  ({"merge_distance": -2}, "merge_distance")):
        with pytest.raises(ImsegInputError, match=m):
            kmeans_quantized(img, device="cpu", **kw)


def _noisy_labels(seed=0, h=48, w=64, k=6):
    rng = np.random.default_rng(seed)
    img = (rng.integers(0, k, (h, w)) * (255 // k)).astype(np.uint8)
    img = np.kron(img[::4, ::4], np.ones((4, 4), np.uint8))[:h, :w]
    img[rng.random((h, w)) < 0.08] = 255  # speckle: many one-pixel regions
    labels, n = label_components(img, connectivity=4, device="cpu")
    lab = rgb2lab(np.dstack([img] * 3), device="cpu")
    return labels, n, lab


@pytest.mark.parametrize("S", [2, 10, 50, 400])
def test_min_size_holds(S):
    labels, n, lab = _noisy_labels()
    out, m, rounds = merge_small_regions(labels, lab, min_size=S, connectivity=4, device="cpu")
    sizes = np.bincount(out.ravel())[1:]
    assert len(sizes) == m and sizes.min() >= S and m < n
    # every region is still connected, and regions only merged (each old region in one new)
    for r in range(1, m + 1):
        assert label_components((out == r).astype(np.uint8), connectivity=4, background=0, device="cpu")[1] == 1
    pairs = np.unique(np.stack([labels.ravel(), out.ravel()]), axis=1)
    assert len(np.unique(pairs[0])) == pairs.shape[1]


def test_small_region_joins_its_most_similar_neighbour():
    labels = np.array([[1, 1, 1, 2, 3, 3, 3]] * 3, np.int32)
    lab = np.zeros((3, 7, 3), np.float32)
    lab[:, 3, 0] = 40.0           # region 2: L 40
    lab[:, 4:, 0] = 45.0          # region 3: L 45, nearer than region 1 (L 0)
    out, n, _ = merge_small_regions(labels, lab, min_size=4, device="cpu")
    assert n == 2 and out[0].tolist() == [1, 1, 1, 2, 2, 2, 2]


def test_whole_image_smaller_than_min_size_is_one_region():
    labels, _, lab = _noisy_labels(1, 10, 12)
    out, n, _ = merge_small_regions(labels, lab, min_size=10_000, device="cpu")
    assert n == 1 and np.all(out == 1)


@needs_emu
def test_cuda_kmeans_and_merge_equal_cpu():
    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(3), 40, 52, noise=6.0, shading=True)
    lab = rgb2lab(img, device="cpu")
    cg, eg = kmeans_quantized(img, lab=lab, k_max=16, device=be)
    cc, ec = kmeans_quantized(img, lab=lab, k_max=16, device="cpu")
    np.testing.assert_array_equal(cg, cc)
    np.testing.assert_allclose(eg, ec, rtol=0, atol=1e-12)
    labels, n, lab2 = _noisy_labels(2, 36, 44)
    g = merge_small_regions(labels, lab2, min_size=12, connectivity=8, device=be)
    c = merge_small_regions(labels, lab2, min_size=12, connectivity=8, device="cpu")
    assert g[1:] == c[1:]
    np.testing.assert_array_equal(g[0], c[0])
