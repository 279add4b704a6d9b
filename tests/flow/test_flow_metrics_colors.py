"""Middlebury colour wheel, flow metrics, sparsification and forward-backward confidence."""

import numpy as np
import pytest
from flow_colorwheel_reference import wheel_whole_image

from gpu_kernels.flow import (
    FlowInputError,
    flow_metrics,
    flow_to_color,
    forward_backward_confidence,
    make_colorwheel,
)
from gpu_kernels.flow.metrics import angular_error, sparsification


def test_wheel_has_55_colours_in_six_segments():
    w = make_colorwheel()
    assert w.shape == (55, 3)
    # segment starts: red, yellow, green, cyan, blue, magenta
    starts = np.cumsum([0, 15, 6, 4, 11, 13])
    assert [tuple(w[i]) for i in starts] == [(255, 0, 0), (255, 255, 0), (0, 255, 0), (0, 255, 255),
                                             (0, 0, 255), (255, 0, 255)]
    assert tuple(w[14]) == (255, 238, 0)          # floor(255 * 14 / 15)


def _c(u, v, **kw):
    return tuple(int(x) for x in flow_to_color(np.array([[u]]), np.array([[v]]), **kw)[0, 0])


def test_known_vectors_known_colours():
    # hand-computed from the published algorithm (colorcode.cpp), radius 1
    assert _c(1.0, 0.0, max_flow=1) == (255, 0, 0)          # right: red (fk = 0)
    assert _c(-1.0, 0.0, max_flow=1) == (0, 209, 255)       # left: fk = 27, CB step 2: g = 255 - 46
    assert _c(0.0, -1.0, max_flow=1) == (88, 0, 255)        # up: fk = 40.5, between BM steps 4 and 5
    g = _c(0.0, 1.0, max_flow=1)                            # down: fk = 13.5, RY 13 and 14: g = 229.5
    assert g[0] == 255 and g[2] == 0 and g[1] in (229, 230)
    assert _c(0.0, 0.0, max_flow=1) == (255, 255, 255)      # at rest: white
    assert _c(0.5, 0.0, max_flow=1) == (255, 127, 127)      # half saturation
    assert _c(2.0, 0.0, max_flow=1) == (191, 0, 0)          # beyond the radius: 75 %


def test_colour_normalisation_and_unknown():
    u = np.array([[1.0, 4.0, 1e10]])
    v = np.zeros((1, 3))
    img = flow_to_color(u, v)               # max over known pixels: 4
    assert tuple(img[0, 1]) == (255, 0, 0)
    assert tuple(img[0, 0]) == (255, 191, 191)
    assert tuple(img[0, 2]) == (0, 0, 0)    # unknown: black
    with pytest.raises(FlowInputError):
        flow_to_color(u, v, max_flow=0)


def test_metrics_known_values():
    gt = np.zeros((10, 10, 2), np.float32)
    gt[..., 0] = 1.0
    u = np.full((10, 10), 1.0)
    v = np.zeros((10, 10))
    u[:5] = 4.0                               # half the pixels off by 3 along u
    valid = np.ones((10, 10), bool)
    valid[9] = False
    m = flow_metrics(u, v, gt, valid)
    assert m["n"] == 90
    assert m["aee"] == pytest.approx((50 * 3.0) / 90)
    assert m["r1"] == pytest.approx(100 * 50 / 90) and m["r3"] == 0.0   # EPE exactly 3 is not > 3
    # angle between (4, 0, 1) and (1, 0, 1)
    ang = np.degrees(np.arccos((4 + 1) / np.sqrt(17 * 2)))
    assert m["aae"] == pytest.approx(ang * 50 / 90)
    assert np.isnan(angular_error(u, v, gt, valid)[9]).all()


def test_sparsification_oracle_and_random():
    rng = np.random.default_rng(0)
    e = rng.exponential(1.0, 10000)
    perfect = sparsification(e, -e)
    assert perfect["ause"] == pytest.approx(0.0, abs=1e-12)
    assert np.all(np.diff(perfect["oracle"]) <= 1e-12)
    rand = sparsification(e, rng.random(e.size))
    assert rand["ause"] > 0.5                 # a random ranking is far from the oracle
    inverted = sparsification(e, e)
    assert inverted["ause"] > rand["ause"]


def test_forward_backward_consistency():
    H, W = 20, 30
    u = np.full((H, W), 2.0, np.float32)
    v = np.full((H, W), -1.0, np.float32)
    c = forward_backward_confidence(u, v, -u, -v)
    inside = c[2:-2, 2:-2]
    assert np.allclose(inside, 1.0)
    bad = forward_backward_confidence(u, v, u, v)   # not inverse: |f + b| = |2 f|
    assert bad[2:-2, 2:-2].max() < 1e-6
    assert c[:, -2:].max() == 0.0                   # x + u leaves the image


def _wheel_whole_image(u, v, max_flow=None, valid=None):
    """The colour coding in whole-image passes (the code before the bands), as the reference."""
    return wheel_whole_image(u, v, max_flow, valid, hypot=True)


@pytest.mark.parametrize("max_flow", [None, 7.5])
def test_banded_colour_coding_equals_whole_image_passes(monkeypatch, max_flow):
    """Issue 20: the colour wheel is computed in bands of rows on threads (280 ms of a 1080p live
    flow edit on the H100 host went there); the bytes are those of whole-image passes, across band
    edges, unknown pixels and the automatic radius."""
    import gpu_kernels.flow.colorwheel as cw

    monkeypatch.setattr(cw, "_BAND_PIXELS", 1000)     # bands of 9 rows of 111: many band edges
    rng = np.random.default_rng(3)
    u = (rng.standard_normal((97, 111)) * 6).astype(np.float32)
    v = (rng.standard_normal((97, 111)) * 6).astype(np.float32)
    u[4, 5], v[50, 60], u[90, 3] = np.nan, np.inf, 2e9
    valid = rng.random(u.shape) > 0.1
    got = cw.flow_to_color(u, v, max_flow=max_flow, valid=valid)
    np.testing.assert_array_equal(got, _wheel_whole_image(u, v, max_flow, valid))
    assert (got[~valid] == 0).all() and got.reshape(-1, 3).max(axis=0).min() > 0
