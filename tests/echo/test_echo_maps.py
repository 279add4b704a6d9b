"""Derived maps, composition, metrics and sequences (CPU)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.echo import (
    EchoInputError,
    compose,
    divergence,
    endpoint_error,
    estimate_sequence,
    jacobian_determinant,
    magnitude,
    mean_squared_difference,
    ncc,
    warp_volume,
)
from gpu_kernels.echo.synthetic import make_sequence


def _affine_field(A, shape=(10, 11, 12)):
    g = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing="ij"))
    return np.einsum("ij,j...->i...", np.asarray(A) - np.eye(3), g).astype(np.float32)


def test_jacobian_divergence_of_affine_fields():
    A = np.array([[1.1, 0.05, 0.0], [0.0, 0.9, 0.1], [0.02, 0.0, 1.05]])
    u = _affine_field(A)
    np.testing.assert_allclose(jacobian_determinant(u), np.linalg.det(A), rtol=1e-5)
    np.testing.assert_allclose(divergence(u), np.trace(A) - 3, atol=1e-5)
    R = np.array([[np.cos(0.3), -np.sin(0.3), 0], [np.sin(0.3), np.cos(0.3), 0], [0, 0, 1]])
    np.testing.assert_allclose(jacobian_determinant(_affine_field(R)), 1.0, atol=1e-5)


def test_magnitude_in_mm():
    u = np.zeros((3, 4, 4, 4), np.float32)
    u[0], u[2] = 1.0, 2.0
    np.testing.assert_allclose(magnitude(u), np.sqrt(5.0))
    np.testing.assert_allclose(magnitude(u, spacing=(10.0, 1.0, 0.5)), np.sqrt(100.0 + 1.0))


def test_compose_of_translations_and_warp():
    a = np.zeros((3, 8, 9, 10), np.float32)
    b = np.zeros_like(a)
    a[0], b[2] = 1.0, -2.0
    c = compose(a, b)
    np.testing.assert_allclose(c[0], 1.0)
    np.testing.assert_allclose(c[2], -2.0)
    v = np.random.default_rng(0).random((8, 9, 10)).astype(np.float32)
    np.testing.assert_allclose(warp_volume(v, a)[:-1], v[1:], atol=1e-6)


def test_metrics():
    u = np.zeros((3, 5, 5, 5), np.float32)
    gt = np.zeros_like(u)
    gt[1] = 3.0
    gt[2] = 4.0
    e = endpoint_error(u, gt, spacing=(1.0, 2.0, 1.0))
    assert e["mean"] == pytest.approx(5.0) and e["p95"] == pytest.approx(5.0)
    assert e["mean_mm"] == pytest.approx(np.sqrt(36 + 16))
    mask = np.zeros((5, 5, 5), bool)
    mask[0, 0, 0] = True
    assert endpoint_error(u, gt, mask=mask)["voxels"] == 1
    with pytest.raises(EchoInputError, match="voxels but the volume"):
        endpoint_error(u, gt[:, :4])
    with pytest.raises(EchoInputError, match="shape"):
        endpoint_error(u[:2], gt)
    a = np.random.default_rng(1).random((6, 6, 6))
    assert ncc(a, 2 * a + 1) == pytest.approx(1.0)
    assert mean_squared_difference(a, a + 0.5) == pytest.approx(0.25)


@pytest.mark.slow
def test_sequence_pairwise_and_trajectory():
    seq = make_sequence(32, frames=4, seed=5)
    kw = dict(levels=3, device="cpu")
    res = estimate_sequence(seq.frames, reference=0, **kw)
    assert res.pairwise.shape == (3, 3, 32, 32, 32) and res.trajectory.shape == (4, 3, 32, 32, 32)
    assert np.abs(res.trajectory[0]).max() == 0
    inner = (slice(None),) + (slice(4, -4),) * 3
    for k in range(3):
        gt = seq.displacement(k, k + 1)
        e = np.linalg.norm(res.pairwise[k] - gt, axis=0)[inner[1:]].mean()
        z = np.linalg.norm(gt, axis=0)[inner[1:]].mean()
        assert e < 0.5 * z, (k, e, z)
    gt = seq.displacement(0, 3)
    e = np.linalg.norm(res.trajectory[3] - gt, axis=0)[inner[1:]].mean()
    assert e < 0.5 * np.linalg.norm(gt, axis=0)[inner[1:]].mean()
    # the composed trajectory equals composing the pairwise fields by hand
    np.testing.assert_allclose(res.trajectory[2], compose(res.pairwise[0], res.pairwise[1]), atol=1e-5)
    # a reference in the middle goes backwards too
    mid = estimate_sequence(seq.frames[:3], reference=1, **kw)
    gt = seq.displacement(1, 0)
    e = np.linalg.norm(mid.trajectory[0] - gt, axis=0)[inner[1:]].mean()
    assert e < 0.5 * np.linalg.norm(gt, axis=0)[inner[1:]].mean()


def test_sequence_bad_input():
    v = np.zeros((8, 8, 8), np.float32)
    with pytest.raises(EchoInputError, match="at least 2"):
        estimate_sequence([v], device="cpu")
    with pytest.raises(EchoInputError, match="does not exist"):
        estimate_sequence([v, v], reference=5, device="cpu")
    with pytest.raises(EchoInputError, match="frame 1"):
        estimate_sequence([v, np.zeros((8, 8, 9))], device="cpu")
