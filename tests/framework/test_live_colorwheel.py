"""The flow colour wheel on the device (issue 20: 127 ms of a 1080p live flow edit was the
colour coding on the host). The CUDA path (gpu_kernels/cuda/flow_colorwheel.cu) must give the
bytes of the NumPy path: on the CPU through the test suite's CUDA emulator, on a GPU for real
(``pytest -m gpu``). The NumPy path itself is checked against a whole-image reference written
from Middlebury's definition."""

from __future__ import annotations

import numpy as np
import pytest
from flow_colorwheel_reference import wheel_whole_image

from gpu_kernels.flow import colorwheel as cw
from gpu_kernels.flow._common import FlowInputError


def _reference(u, v, max_flow=None, valid=None):
    """Whole-image float64 passes, the definition: radius sqrt(u^2 + v^2), hue atan2(-v, -u)."""
    return wheel_whole_image(u, v, max_flow, valid)


def _flows(shape, seed=3):
    """A random flow with the special cases: NaN, inf, huge, exact zeros, the axes (hue knots)."""
    rng = np.random.default_rng(seed)
    u = (rng.standard_normal(shape) * 6).astype(np.float32)
    v = (rng.standard_normal(shape) * 6).astype(np.float32)
    u[0, :8] = [0, 1, -1, 0, 0, 2, -3, 5]
    v[0, :8] = [0, 0, 0, 1, -1, 2, 3, -5]
    u[1, 1], v[2, 2], u[3, 3] = np.nan, np.inf, 2e9
    valid = rng.random(shape) > 0.1
    q = rng.random(shape).astype(np.float32)
    q[4, 4] = np.nan
    return u, v, valid, q


@pytest.mark.parametrize("max_flow", [None, 7.5])
def test_numpy_path_is_the_definition_across_band_edges(monkeypatch, max_flow):
    monkeypatch.setattr(cw, "_BAND_PIXELS", 1000)       # bands of 9 rows of 111: many band edges
    u, v, valid, q = _flows((97, 111))
    rgb = cw.flow_to_color(u, v, max_flow=max_flow, valid=valid, device="cpu")
    np.testing.assert_array_equal(rgb, _reference(u, v, max_flow, valid))
    rgba = cw.flow_to_rgba(u, v, max_flow=max_flow, valid=valid, alpha=200, quality=q, threshold=0.3, device="cpu")
    np.testing.assert_array_equal(rgba[..., :3], rgb)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(rgba[..., 3], np.where(valid & (q >= np.float32(0.3)), 200, 0))
    assert (rgb[~valid] == 0).all() and rgb.reshape(-1, 3).max(axis=0).min() > 0


def test_radius_and_bad_arguments():
    u, v, valid, _q = _flows((20, 30))
    ok = valid & np.isfinite(u) & np.isfinite(v) & (np.abs(u) < 1e9) & (np.abs(v) < 1e9)
    expect = float(np.hypot(u.astype(np.float64), v.astype(np.float64))[ok].max())
    assert cw.flow_radius(u, v, valid=valid, device="cpu") == pytest.approx(expect, rel=1e-15)
    assert cw.flow_radius(np.zeros((3, 3)), np.zeros((3, 3))) == 0.0
    with pytest.raises(FlowInputError, match="alpha"):
        cw.flow_to_rgba(u, v, alpha=300)
    with pytest.raises(FlowInputError, match="max_flow"):
        cw.flow_to_rgba(u, v, max_flow=-1)
    with pytest.raises(FlowInputError, match="quality must have"):
        cw.flow_to_rgba(u, v, quality=np.zeros((3, 3)))
    with pytest.raises(FlowInputError, match="one shape"):
        cw.flow_to_color(u, v[:5])


def _same_everywhere(be, u, v, valid, q, to_dev):
    for max_flow in (None, 4.0):
        for dtype in (np.float32, np.float64):
            uu, vv = u.astype(dtype), v.astype(dtype)
            want = cw.flow_to_rgba(uu, vv, max_flow=max_flow, valid=valid, alpha=77, quality=q, threshold=0.4,
                                   device="cpu")
            got = cw.flow_to_rgba(to_dev(uu), to_dev(vv), max_flow=max_flow, valid=to_dev(valid), alpha=77,
                                  quality=to_dev(q), threshold=0.4, device=be)
            assert isinstance(got, np.ndarray) and got.dtype == np.uint8 and got.shape == u.shape + (4,)
            diff = np.count_nonzero(got != want)
            assert diff == 0, f"{diff} bytes differ ({dtype.__name__}, max_flow {max_flow})"
        got = cw.flow_to_color(to_dev(u), to_dev(v), valid=None, device=be)
        np.testing.assert_array_equal(got, cw.flow_to_color(u, v, device="cpu"))
    assert cw.flow_radius(to_dev(u), to_dev(v), valid=to_dev(valid), device=be) == \
        cw.flow_radius(u, v, valid=valid, device="cpu")


def test_cuda_path_on_the_emulator_gives_the_numpy_bytes():
    import cuda_emu as emu

    if emu.available():
        pytest.skip(emu.available())
    be = emu.emu_backend()
    u, v, valid, q = _flows((23, 41))
    _same_everywhere(be, u, v, valid, q, lambda a: be.xp.asarray(a))


@pytest.mark.gpu
def test_cuda_path_gives_the_numpy_bytes_on_the_gpu():
    import cupy as cp

    u, v, valid, q = _flows((1080, 1920), seed=9)
    _same_everywhere("cuda", u, v, valid, q, cp.asarray)
    # host arrays in, on the GPU: the same bytes, the picture in pinned host memory
    got = cw.flow_to_rgba(u, v, valid=valid, device="cuda")
    np.testing.assert_array_equal(got, cw.flow_to_rgba(u, v, valid=valid, device="cpu"))
    # a smooth real-looking field (sub-pixel magnitudes, every hue)
    yy, xx = np.mgrid[0:540, 0:960].astype(np.float32)
    su, sv = np.sin(xx / 97) * 3.3 + 0.01 * yy, np.cos(yy / 61) * 2.7 - 0.004 * xx
    np.testing.assert_array_equal(cw.flow_to_color(su, sv, device="cuda"), cw.flow_to_color(su, sv, device="cpu"))
