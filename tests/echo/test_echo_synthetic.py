"""The synthetic 3-D echo generator: image statistics and exact ground truth."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from gpu_kernels.echo import EchoInputError, jacobian_determinant, ncc, warp_volume
from gpu_kernels.echo.synthetic import (
    LABEL_BLOOD,
    LABEL_MYOCARDIUM,
    make_pair,
    make_sequence,
)


@pytest.fixture(scope="module")
def seq():
    return make_sequence(40, frames=6, seed=11)


def test_shapes_dtype_and_determinism(seq):
    assert seq.frames.shape == (6, 40, 40, 40) and seq.frames.dtype == np.uint8
    again = make_sequence(40, frames=2, seed=11)
    np.testing.assert_array_equal(again.frames[0], seq.frames[0])
    other = make_sequence(40, frames=2, seed=12)
    assert not np.array_equal(other.frames[0], seq.frames[0])
    f32 = make_sequence((24, 28, 32), frames=2, dtype="float32", seed=1)
    assert f32.frames.shape == (2, 24, 28, 32) and f32.frames.dtype == np.float32
    assert 0.0 <= f32.frames.min() and f32.frames.max() <= 1.0


def test_anatomy_is_bright_myocardium_dark_blood(seq):
    lab = seq.labels(0)
    img = seq.frames[0].astype(np.float64)
    myo, blood, bg = img[lab == LABEL_MYOCARDIUM], img[lab == LABEL_BLOOD], img[lab == 0]
    assert myo.mean() > bg.mean() > blood.mean()
    assert (lab == LABEL_MYOCARDIUM).sum() > 0.03 * lab.size


def test_speckle_envelope_is_rayleigh_like():
    # without log compression: the envelope of fully developed speckle is Rayleigh, whose
    # mean / std is sqrt(pi / (4 - pi)) = 1.91
    f = make_pair(48, dynamic_range=200.0, seed=2)[0].astype(np.float64)
    env = 10 ** ((f - 1.0) * 200.0 / 20.0)
    snr = env.mean() / env.std()
    assert 1.6 < snr < 2.2, snr


def test_ground_truth_matches_what_warping_produces(seq):
    i, j = 1, 2
    u = seq.displacement(i, j)
    assert float(np.abs(u).max()) > 0.5
    fixed = seq.frames[i].astype(np.float32)
    moving = seq.frames[j].astype(np.float32)
    inner = (slice(5, -5),) * 3
    warped = warp_volume(moving, u)
    before = ncc(fixed[inner], moving[inner])
    after = ncc(fixed[inner], warped[inner])
    assert after > before + 0.1 and after > 0.8, (before, after)
    # a wrong field (sign flipped) must not do as well
    assert ncc(fixed[inner], warp_volume(moving, -u)[inner]) < after - 0.1


def test_translation_pair_is_exact():
    f, m, u = make_pair(32, shift=(0.5, 1.25, -0.75), seed=3)
    np.testing.assert_allclose(u[0], 0.5, atol=1e-5)
    np.testing.assert_allclose(u[1], 1.25, atol=1e-5)
    np.testing.assert_allclose(u[2], -0.75, atol=1e-5)
    inner = (slice(4, -4),) * 3
    # trilinear interpolation of rough speckle loses some detail at sub-voxel shifts
    assert ncc(f[inner], warp_volume(m, u)[inner]) > 0.85 > ncc(f[inner], m[inner]) + 0.2
    # with speckle moving rigidly by whole voxels, warping undoes the motion exactly
    f, m, u = make_pair(32, shift=(0.0, 1.0, -2.0), seed=3)
    assert ncc(f[inner], warp_volume(m, u)[inner]) > 0.9999


def test_displacements_compose_and_invert(seq):
    from gpu_kernels.echo import compose

    a, b, c = seq.displacement(1, 2), seq.displacement(2, 3), seq.displacement(1, 3)
    inner = (slice(None),) + (slice(4, -4),) * 3
    assert np.abs(compose(a, b)[inner] - c[inner]).max() < 0.1
    assert np.abs(compose(a, b)[inner] - c[inner]).mean() < 0.01
    back = seq.displacement(2, 1)
    assert np.abs(compose(a, back)[inner]).max() < 0.1
    assert np.abs(compose(a, back)[inner]).mean() < 0.01
    assert np.abs(seq.displacement(3, 3)).max() < 1e-5


def test_wall_motion_preserves_volume(seq):
    u = seq.displacement(0, 3)       # end-diastole to end-systole
    myo = ndi.binary_erosion(seq.myocardium_mask(0), iterations=1)
    det = jacobian_determinant(u)[myo]
    assert float(np.abs(u).max()) > 1.5
    assert float(np.abs(det - 1).mean()) < 0.005 and float(np.abs(det - 1).max()) < 0.05
    # while the blood pool loses volume (ejection)
    blood = ndi.binary_erosion(seq.labels(0) == LABEL_BLOOD, iterations=1)
    assert float(jacobian_determinant(u)[blood].mean()) < 0.9


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"size": 8}, "between"),
        ({"size": (32, 32)}, "three"),
        ({"frames": 0}, "frames"),
        ({"noise": -1}, "noise"),
        ({"decorrelation": 2}, "decorrelation"),
        ({"dtype": "int16"}, "dtype"),
        ({"contraction": 1.2}, "contraction"),
    ],
)
def test_bad_parameters(kw, match):
    kw = dict({"size": 24, "frames": 2}, **kw)
    with pytest.raises(EchoInputError, match=match):
        make_sequence(**kw)
    with pytest.raises(EchoInputError, match="does not exist"):
        make_sequence(24, frames=2).displacement(0, 5)
