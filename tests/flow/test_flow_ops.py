"""Shared image operations (gpu_kernels.ops) against SciPy / OpenCV references, CPU path."""

import numpy as np
import pytest
from scipy import ndimage

from gpu_kernels import ops
from gpu_kernels.errors import InputError

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("shape,axes,sigma", [((17, 23), None, 1.3), ((9, 11, 3), (0, 1), 2.0),
                                              ((5, 6, 7), None, (0.5, 1.0, 1.5)), ((40,), None, 3.0)])
def test_gaussian_filter_matches_scipy(shape, axes, sigma):
    x = RNG.random(shape).astype(np.float32)
    ours = ops.gaussian_filter(x, sigma, axes=axes, device="cpu")
    if axes is None:
        ref = ndimage.gaussian_filter(x.astype(np.float64), sigma, mode="reflect")
    else:
        s = [0.0] * x.ndim
        for a in axes:
            s[a] = sigma
        ref = ndimage.gaussian_filter(x.astype(np.float64), s, mode="reflect")
    assert ours.dtype == np.float32 and ours.shape == x.shape
    np.testing.assert_allclose(ours, ref, atol=2e-6)


def test_uniform_filter_matches_scipy():
    x = RNG.random((12, 15)).astype(np.float32)
    np.testing.assert_allclose(ops.uniform_filter(x, 5, mode="nearest", device="cpu"),
                               ndimage.uniform_filter(x.astype(np.float64), 5, mode="nearest"), atol=2e-6)


def test_correlate_axis_direction_and_decimation():
    x = np.arange(10, dtype=np.float32)
    # taps [0, 0, 1]: out[i] = x[i + 1] (correlation, not convolution)
    assert ops.correlate_axis(x, [0, 0, 1], device="cpu").tolist()[:3] == [1.0, 2.0, 3.0]
    dec = ops.correlate_axis(x, [0, 1, 0], step=2, device="cpu")
    assert dec.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert ops.correlate_axis(np.arange(9.0), [1.0], step=2, device="cpu").shape == (5,)


def test_pyramid_shapes_and_content():
    x = RNG.random((37, 50)).astype(np.float32)
    pyr = ops.gaussian_pyramid(x, 5, device="cpu")
    assert [p.shape for p in pyr] == [(37, 50), (19, 25), (10, 13), (5, 7), (3, 4)]
    taps = ops.gaussian_kernel1d(ops.DEFAULT_PYR_SIGMA, truncate=ops.DEFAULT_PYR_TRUNCATE)
    ref = ndimage.correlate1d(ndimage.correlate1d(x.astype(np.float64), taps, 0, mode="reflect"), taps, 1,
                              mode="reflect")[::2, ::2]
    np.testing.assert_allclose(pyr[1], ref, atol=2e-6)
    # min_size stops early
    assert len(ops.gaussian_pyramid(x, 5, min_size=8, device="cpu")) == 3


def test_pyr_up_alignment_and_scale():
    # coarse sample i sits at fine 2i: a linear ramp goes up exactly (inside the range)
    coarse = np.arange(6, dtype=np.float32)[None, :].repeat(3, 0)
    fine = ops.pyr_up(coarse, (3, 11), value_scale=2.0, device="cpu")
    np.testing.assert_allclose(fine[0], 2 * np.arange(11) / 2.0, atol=1e-6)
    vol = RNG.random((3, 4, 5)).astype(np.float32)
    assert ops.pyr_up(vol, (5, 7, 9), device="cpu").shape == (5, 7, 9)


def test_resize_matches_opencv():
    cv2 = pytest.importorskip("cv2")
    x = RNG.random((20, 30)).astype(np.float32)
    ours = ops.resize(x, (33, 47), device="cpu")
    ref = cv2.resize(x, (47, 33), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_allclose(ours, ref, atol=1e-5)


def test_warp_matches_scipy_map_coordinates():
    img = RNG.random((21, 26)).astype(np.float32)
    d = (RNG.standard_normal((2, 21, 26)) * 4).astype(np.float32)
    ours, inside = ops.warp(img, d, return_inside=True, device="cpu")
    grid = np.indices(img.shape).astype(np.float64)
    ref = ndimage.map_coordinates(img.astype(np.float64), grid + d, order=1, mode="nearest")
    np.testing.assert_allclose(ours, ref, atol=2e-6)
    tgt = grid + d
    exp_inside = (tgt[0] >= 0) & (tgt[0] <= 20) & (tgt[1] >= 0) & (tgt[1] <= 25)
    assert np.array_equal(inside > 0, exp_inside)
    vol = RNG.random((6, 7, 8)).astype(np.float32)
    d3 = (RNG.standard_normal((3, 6, 7, 8)) * 2).astype(np.float32)
    ref3 = ndimage.map_coordinates(vol.astype(np.float64), np.indices(vol.shape) + d3, order=1, mode="nearest")
    np.testing.assert_allclose(ops.warp(vol, d3, device="cpu"), ref3, atol=2e-6)


def test_warp_flow_convention_and_channels():
    img = np.zeros((10, 12, 3), np.float32)
    img[4, 7] = [1, 2, 3]
    u = np.full((10, 12), 2.0, np.float32)
    v = np.full((10, 12), -1.0, np.float32)
    out = ops.warp_flow(img, u, v, channel_axis=2, device="cpu")
    # out(x, y) = img(x + 2, y - 1): the bright pixel (7, 4) appears at (5, 5)
    assert out[5, 5].tolist() == [1.0, 2.0, 3.0]
    assert out.sum() == pytest.approx(6.0)


@pytest.mark.parametrize("dtype,scale", [(np.uint8, 255.0), (np.uint16, 65535.0), (np.float32, 1.0)])
@pytest.mark.parametrize("channels", [0, 1, 2, 3, 4])
def test_to_gray(dtype, scale, channels):
    shape = (5, 6) if channels == 0 else (5, 6, channels)
    x = (RNG.random(shape) * (scale if dtype != np.float32 else 1)).astype(dtype)
    g = ops.to_gray(x, device="cpu")
    xf = x.astype(np.float64) / scale
    if channels >= 3:
        ref = 0.299 * xf[..., 0] + 0.587 * xf[..., 1] + 0.114 * xf[..., 2]
    else:
        ref = xf if channels == 0 else xf[..., 0]
    assert g.dtype == np.float32 and g.shape == (5, 6)
    np.testing.assert_allclose(g, ref, atol=1e-6)


def test_bad_inputs():
    with pytest.raises(InputError, match="sigma"):
        ops.gaussian_filter(np.zeros((4, 4)), -1, device="cpu")
    with pytest.raises(InputError, match="mode"):
        ops.gaussian_filter(np.zeros((4, 4)), 1, mode="wrap", device="cpu")
    with pytest.raises(InputError, match="odd"):
        ops.correlate_axis(np.zeros(4), [1, 1], device="cpu")
    with pytest.raises(InputError, match="axis"):
        ops.gaussian_filter(np.zeros((4, 4)), 1, axes=(2,), device="cpu")
    with pytest.raises(InputError, match="displacement"):
        ops.warp(np.zeros((4, 4)), [np.zeros((4, 4))], device="cpu")
    with pytest.raises(InputError, match="shape"):
        ops.warp(np.zeros((4, 4)), [np.zeros((4, 5)), np.zeros((4, 5))], device="cpu")
    with pytest.raises(InputError, match="channels"):
        ops.to_gray(np.zeros((4, 4, 5), np.uint8), device="cpu")
    with pytest.raises(InputError, match="unsupported"):
        ops.to_gray(np.zeros((4, 4), np.int32), device="cpu")
    with pytest.raises(InputError, match="size must stay"):
        ops.pyr_up(np.zeros((2, 3)), (4, 5), axes=(0,), device="cpu")
