"""Region features against scikit-image's regionprops (CPU path and the emulated CUDA kernels)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from skimage.measure import regionprops_table

from gpu_kernels.imseg import ImsegInputError, features_table, region_features, rgb2lab

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")
PROPS = ("label", "area", "bbox", "centroid", "intensity_mean", "moments_central")


def _case(seed=0, h=37, w=53):
    rng = np.random.default_rng(seed)
    # blocky random regions, relabelled 1..R without gaps, some non-convex
    small = rng.integers(1, 12, size=(h // 5 + 1, w // 5 + 1))
    labels = np.kron(small, np.ones((5, 5), np.int64))[:h, :w]
    labels[h // 2, :] = 12  # a thin line across the image
    _, labels = np.unique(labels, return_inverse=True)
    labels = labels.reshape(h, w) + 1
    img = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
    return labels.astype(np.int32), img


def _check(f, labels, img):
    ref = regionprops_table(labels, img, properties=PROPS)
    np.testing.assert_array_equal(f["label"], ref["label"])
    np.testing.assert_array_equal(f["area"], ref["area"])
    for i in range(4):
        np.testing.assert_array_equal(f["bbox"][:, i], ref[f"bbox-{i}"])
    for i in range(2):
        np.testing.assert_allclose(f["centroid"][:, i], ref[f"centroid-{i}"], rtol=1e-12)
    for i in range(3):
        np.testing.assert_allclose(f["intensity_mean"][:, i], ref[f"intensity_mean-{i}"], rtol=1e-10)
    for i in range(4):
        for j in range(4):
            r = ref[f"moments_central-{i}-{j}"]
            np.testing.assert_allclose(f["moments_central"][:, i, j], r, rtol=1e-8, atol=1e-8 * np.abs(r).max() + 1e-9)
    lab = rgb2lab(img, device="cpu")
    lab_ref = regionprops_table(labels, lab, properties=("intensity_mean",))
    for i in range(3):
        np.testing.assert_allclose(f["intensity_mean_lab"][:, i], lab_ref[f"intensity_mean-{i}"], atol=2e-4)


def test_cpu_features_equal_regionprops():
    labels, img = _case()
    _check(region_features(labels, img, device="cpu"), labels, img)


def test_grey_and_table_columns():
    labels, img = _case(1)
    grey = img[..., 0]
    f = region_features(labels, grey, device="cpu")
    ref = regionprops_table(labels, grey, properties=("intensity_mean",))
    np.testing.assert_allclose(f["intensity_mean"][:, 0], ref["intensity_mean"])
    assert np.all(f["intensity_mean_lab"][:, 1:] == 0)
    cols = features_table(f)
    assert {"bbox-0", "centroid-1", "moments_central-3-3", "intensity_mean-0"} <= set(cols)


def test_bad_labels():
    labels, img = _case()
    with pytest.raises(ImsegInputError, match="shape"):
        region_features(labels[:-1], img, device="cpu")
    with pytest.raises(ImsegInputError, match=">= 0"):
        region_features(labels - 5, img, device="cpu")


@needs_emu
@pytest.mark.parametrize("method", ["runs", "sort"])
def test_cuda_features_equal_regionprops(method):
    labels, img = _case(2, 29, 41)
    _check(region_features(labels, img, method=method, device=emu_backend()), labels, img)
