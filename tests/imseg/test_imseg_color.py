"""CIELAB against scikit-image, the bilateral filter against a per-pixel reference, and the
quantised codes; the CUDA kernels through the host emulator (GPU-marked tests: test_imseg_gpu)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from skimage.color import rgb2lab as sk_rgb2lab

from gpu_kernels.imseg import ImsegInputError, bilateral_lab, quantize_lab, rgb2lab
from gpu_kernels.imseg.color import LAB_HI, LAB_LO, code_centres

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _cube_samples(rng, n=4000):
    corners = np.array([[a, b, c] for a in (0, 255) for b in (0, 255) for c in (0, 255)], np.uint8)
    ramp = np.stack([np.arange(256)] * 3, axis=1).astype(np.uint8)
    rnd = rng.integers(0, 256, size=(n, 3)).astype(np.uint8)
    return np.concatenate([corners, ramp, rnd])[None]


def test_lab_matches_skimage_uint8():
    rng = np.random.default_rng(0)
    img = _cube_samples(rng)
    ours = rgb2lab(img, device="cpu")
    ref = sk_rgb2lab(img)
    assert ours.dtype == np.float32 and ours.shape == ref.shape
    assert np.abs(ours - ref).max() < 1e-3


@pytest.mark.parametrize("dtype", [np.uint16, np.float32, np.float64])
def test_lab_matches_skimage_other_dtypes(dtype):
    rng = np.random.default_rng(1)
    if dtype == np.uint16:
        img = rng.integers(0, 65536, size=(17, 23, 3)).astype(np.uint16)
    else:
        img = rng.random((17, 23, 3)).astype(dtype)
    assert np.abs(rgb2lab(img, device="cpu") - sk_rgb2lab(img)).max() < 1e-3


def test_lab_rgba_ignores_alpha_and_grey_is_lightness_only():
    rng = np.random.default_rng(2)
    rgb = rng.integers(0, 256, size=(9, 11, 3)).astype(np.uint8)
    rgba = np.concatenate([rgb, rng.integers(0, 256, size=(9, 11, 1)).astype(np.uint8)], axis=2)
    np.testing.assert_array_equal(rgb2lab(rgba, device="cpu"), rgb2lab(rgb, device="cpu"))
    grey = rgb[..., 0]
    lab = rgb2lab(grey, device="cpu")
    assert np.all(lab[..., 1:] == 0)
    ref = sk_rgb2lab(np.repeat(grey[..., None], 3, axis=2))
    assert np.abs(lab[..., 0] - ref[..., 0]).max() < 1e-3


def test_gamut_fits_the_quantisation_range():
    rng = np.random.default_rng(3)
    lab = sk_rgb2lab(_cube_samples(rng, 20000))
    for ch in range(3):
        assert LAB_LO[ch] <= lab[..., ch].min() and lab[..., ch].max() <= LAB_HI[ch]


def test_codes_and_bin_centres():
    rng = np.random.default_rng(4)
    lab = sk_rgb2lab(_cube_samples(rng)).astype(np.float32)
    for q in (3, 5):
        codes = quantize_lab(lab, q=q, device="cpu")
        assert codes.min() >= 0 and codes.max() < 2 ** (3 * q)
        centres = code_centres(codes, q)
        width = (np.array(LAB_HI) - np.array(LAB_LO)) / 2**q
        # every colour lies in its bin: within half a bin of the bin's centre
        assert np.all(np.abs(centres - lab) <= width / 2 + 1e-4)


def _bilateral_reference(lab, radius, ss, sr):
    h, w, _ = lab.shape
    out = np.empty_like(lab, dtype=np.float64)
    lab64 = lab.astype(np.float64)
    for y in range(h):
        for x in range(w):
            y0, y1, x0, x1 = max(0, y - radius), min(h, y + radius + 1), max(0, x - radius), min(w, x + radius + 1)
            win = lab64[y0:y1, x0:x1]
            yy, xx = np.mgrid[y0:y1, x0:x1]
            wgt = np.exp(-((yy - y) ** 2 + (xx - x) ** 2) / (2 * ss * ss)
                         - ((win - lab64[y, x]) ** 2).sum(-1) / (2 * sr * sr))
            out[y, x] = (wgt[..., None] * win).sum((0, 1)) / wgt.sum()
    return out


def test_bilateral_matches_reference_and_keeps_edges():
    rng = np.random.default_rng(5)
    lab = np.zeros((14, 19, 3), np.float32)
    lab[:, 9:] = (80.0, 20.0, -30.0)
    lab += rng.normal(0, 1.5, lab.shape).astype(np.float32)
    one = bilateral_lab(lab, window=5, sigma_spatial=2.0, sigma_color=6.0, passes=1, device="cpu")
    np.testing.assert_allclose(one, _bilateral_reference(lab, 2, 2.0, 6.0), atol=2e-4)
    five = bilateral_lab(lab, window=5, sigma_spatial=2.0, sigma_color=6.0, passes=5, device="cpu")
    assert five[:, 2:7].std(axis=(0, 1)).max() < lab[:, 2:7].std(axis=(0, 1)).min() / 2  # noise smoothed
    assert abs(float(five[:, 8, 0].mean()) - float(lab[:, 8, 0].mean())) < 1.0   # the edge stays
    assert abs(float(five[:, 9, 0].mean()) - float(lab[:, 9, 0].mean())) < 1.0


@pytest.mark.parametrize("kwargs,match", [
    ({"window": 4}, "odd"), ({"window": 19}, "odd"), ({"sigma_color": 0}, "positive"),
    ({"sigma_spatial": float("nan")}, "positive"), ({"passes": -1}, "passes"), ({"passes": 2.5}, "passes"),
])
def test_bilateral_bad_parameters(kwargs, match):
    with pytest.raises(ImsegInputError, match=match):
        bilateral_lab(np.zeros((4, 4, 3), np.float32), device="cpu", **kwargs)


@needs_emu
def test_cuda_colour_kernels_match_cpu():
    be = emu_backend()
    rng = np.random.default_rng(6)
    img = rng.integers(0, 256, size=(13, 21, 3)).astype(np.uint8)
    np.testing.assert_allclose(rgb2lab(img, device=be), rgb2lab(img, device="cpu"), atol=2e-4)
    grey16 = rng.integers(0, 65536, size=(13, 21)).astype(np.uint16)
    np.testing.assert_allclose(rgb2lab(grey16, device=be), rgb2lab(grey16, device="cpu"), atol=2e-4)
    lab = rgb2lab(img, device="cpu")
    np.testing.assert_allclose(bilateral_lab(lab, passes=2, device=be), bilateral_lab(lab, passes=2, device="cpu"),
                               atol=2e-3)
    assert (quantize_lab(lab, q=5, device=be) == quantize_lab(lab, q=5, device="cpu")).mean() > 0.99
