"""The estimator's building blocks (CPU path) against scipy.ndimage and first principles."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage as ndi

from gpu_kernels.echo import _cpu
from gpu_kernels.echo.motion import _CpuOps, _downsample, _upsample_flow, pyramid_shapes


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def test_derivatives_central_and_forward(rng):
    v = rng.random((9, 10, 11)).astype(np.float32)
    g = _cpu.derivatives(v, "central")
    for ax in range(3):
        ref = np.gradient(v.astype(np.float64), axis=ax)
        inner = [slice(None)] * 3
        inner[ax] = slice(1, -1)
        np.testing.assert_allclose(g[ax][tuple(inner)], ref[tuple(inner)], atol=1e-6)
        first = [slice(None)] * 3
        first[ax] = 0
        assert np.all(g[ax][tuple(first)] == 0), "central derivative must be zero on the border"
    f = _cpu.derivatives(v, "forward")
    for ax in range(3):
        ref = np.diff(v.astype(np.float64), axis=ax)
        sl = [slice(None)] * 3
        sl[ax] = slice(0, -1)
        np.testing.assert_allclose(f[ax][tuple(sl)], ref, atol=1e-6)
        last = [slice(None)] * 3
        last[ax] = -1
        assert np.all(f[ax][tuple(last)] == 0)


@pytest.mark.parametrize("sigma", [0.7, 1.5, (2.0, 0.0, 1.0)])
def test_gaussian_matches_scipy(rng, sigma):
    v = rng.random((12, 13, 14)).astype(np.float32)
    out = _cpu.gaussian(v, sigma)
    ref = ndi.gaussian_filter(v.astype(np.float64), sigma, mode="nearest", truncate=_cpu.TRUNCATE)
    np.testing.assert_allclose(out, ref, atol=2e-6)
    w = _cpu.gaussian_kernel1d(1.5)
    assert abs(w.sum() - 1) < 1e-6 and len(w) == 2 * int(_cpu.TRUNCATE * 1.5 + 0.5) + 1


def test_warp_matches_map_coordinates(rng):
    v = rng.random((10, 11, 12)).astype(np.float32)
    u = (rng.standard_normal((3, 10, 11, 12)) * 2.5).astype(np.float32)   # also outside the volume
    out = _cpu.warp(v, u)
    grid = np.meshgrid(*[np.arange(n) for n in v.shape], indexing="ij")
    coords = [np.clip(grid[i] + u[i], 0, v.shape[i] - 1) for i in range(3)]
    ref = ndi.map_coordinates(v.astype(np.float64), coords, order=1, mode="nearest")
    np.testing.assert_allclose(out, ref, atol=1e-5)
    # an integer shift moves voxels exactly
    s = np.zeros_like(u)
    s[2] = 1.0
    np.testing.assert_allclose(_cpu.warp(v, s)[:, :, :-1], v[:, :, 1:], atol=1e-6)


def test_tensor_products(rng):
    f = rng.random((8, 9, 10)).astype(np.float32)
    m = rng.random((8, 9, 10)).astype(np.float32)
    u = (rng.standard_normal((3, 8, 9, 10)) * 0.7).astype(np.float32)
    T = _cpu.tensor(f, m, u, "central")
    g = np.stack(np.gradient(f.astype(np.float64)))
    for ax in range(3):     # zero on the border voxels of each axis
        sl = [slice(None)] * 3
        sl[ax] = [0, -1]
        g[ax][tuple(sl)] = 0
    it = _cpu.warp(m, u).astype(np.float64) - f
    want = [g[0] ** 2, g[1] ** 2, g[2] ** 2, g[0] * g[1], g[0] * g[2], g[1] * g[2], g[0] * it, g[1] * it, g[2] * it]
    for c in range(9):
        np.testing.assert_allclose(T[c], want[c], atol=1e-5)


def _operator_matrix(shape, alpha, beta):
    """Dense matrix of the relaxation system (J = 0) from single sweeps on unit vectors."""
    nv = int(np.prod(shape))
    T = np.zeros((9,) + shape, np.float32)
    _cpu.finish(T, None, alpha, beta)
    cnt = _cpu.neighbour_counts(shape)
    ntot = cnt.sum(0)
    w = _cpu.mixed_weights(shape)
    g0 = [np.broadcast_to(w[a][0][1], shape) for a in range(3)]
    K = np.zeros(shape + (3, 3))
    for i in range(3):
        K[..., i, i] = alpha * ntot + beta * cnt[i]
    for i, k in ((0, 1), (0, 2), (1, 2)):
        K[..., i, k] = K[..., k, i] = 0.25 * beta * g0[i] * g0[k]
    cols = []
    for j in range(3 * nv):
        u = np.zeros(3 * nv, np.float32)
        u[j] = 1
        u = u.reshape((3,) + shape)
        v = np.empty_like(u)
        _cpu.sweep(T, u, v, -1, 1.0, alpha, beta)
        d = np.moveaxis(u - v, 0, -1)
        cols.append(np.moveaxis(np.einsum("...ij,...j->...i", K, d), -1, 0).ravel())
    return np.array(cols, dtype=np.float64).T


def test_operator_is_symmetric_positive_semidefinite():
    A = _operator_matrix((4, 5, 4), 1.0, 5.0)
    assert np.abs(A - A.T).max() < 1e-5
    ev = np.linalg.eigvalsh((A + A.T) / 2)
    assert ev.min() > -1e-5
    assert int((ev < 1e-4).sum()) == 3, "only the three constant translations cost nothing"


def test_operator_interior_is_the_standard_stencil(rng):
    """Inside the volume: -alpha Lap u - beta grad div u with 3-point d_ii and central d_ik."""
    shape = (9, 9, 9)
    alpha, beta = 0.7, 1.3
    u = rng.standard_normal((3,) + shape).astype(np.float64)
    A = _operator_matrix(shape, alpha, beta)
    Au = (A @ u.ravel()).reshape((3,) + shape)

    def d2(f, ax):
        return np.roll(f, -1, ax) - 2 * f + np.roll(f, 1, ax)

    def dc(f, ax):
        return 0.5 * (np.roll(f, -1, ax) - np.roll(f, 1, ax))

    for i in range(3):
        lap = sum(d2(u[i], a) for a in range(3))
        gd = d2(u[i], i) + sum(dc(dc(u[k], k), i) for k in range(3) if k != i)
        ref = -alpha * lap - beta * gd
        sl = (slice(2, -2),) * 3
        np.testing.assert_allclose(Au[i][sl], ref[sl], atol=1e-4)


def test_colouring_separates_coupled_voxels():
    col = _cpu.colours((6, 6, 6))
    for dz, dy, dx in [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1),
                       (0, 1, 1), (0, 1, -1)]:
        a = col[1:5, 1:5, 1:5]
        b = col[1 + dz:5 + dz, 1 + dy:5 + dy, 1 + dx:5 + dx]
        assert np.all(a != b), (dz, dy, dx)
    assert sorted(np.unique(col)) == [0, 1, 2, 3]


def test_pyramid_keeps_thick_slices():
    pyr = pyramid_shapes((10, 192, 192), 5, spacing=(10.0, 1.0, 1.0))
    assert [s for s, _ in pyr] == [(10, 192, 192), (10, 96, 96), (10, 48, 48), (10, 24, 24), (10, 12, 12)]
    iso = pyramid_shapes((64, 64, 64), 10)
    assert iso[-1][0] == (8, 8, 8) and len(iso) == 4


def test_up_and_down_sampling_consistent(rng):
    ops = _CpuOps(None)
    ramp = np.fromfunction(lambda z, y, x: 0.5 * x + 0.25 * y - 0.1 * z, (16, 16, 16)).astype(np.float32)
    small = _downsample(ops, ramp, (8, 8, 8), (2, 2, 2))
    # cell-centred: coarse voxel c covers fine voxels 2c, 2c + 1 (centre 2c + 0.5)
    c = np.fromfunction(lambda z, y, x: 0.5 * (2 * x + 0.5) + 0.25 * (2 * y + 0.5) - 0.1 * (2 * z + 0.5), (8, 8, 8))
    np.testing.assert_allclose(small[2:-2, 2:-2, 2:-2], c[2:-2, 2:-2, 2:-2], atol=1e-4)
    u = np.ones((3, 8, 8, 8), np.float32)
    up = _upsample_flow(ops, u, (16, 16, 16), (2, 2, 2))
    np.testing.assert_allclose(up, 2.0)
