"""The motion estimator on the CPU: solvers, known motions, stopping, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.echo import EchoInputError, _cpu, endpoint_error, estimate_motion
from gpu_kernels.echo.motion import _mu_max, jacobi_damping, jacobi_lambda_max
from gpu_kernels.echo.synthetic import make_pair, rotation_matrix


@pytest.fixture(scope="module")
def shifted():
    return make_pair(32, shift=(0.6, -0.4, 0.8), seed=3)


def _inner(shape, b=4):
    m = np.zeros(shape, bool)
    m[b:-b, b:-b, b:-b] = True
    return m


def test_known_translation_recovered(shifted):
    f, m, gt = shifted
    u = estimate_motion(f, m, device="cpu", levels=2)
    e = endpoint_error(u, gt, mask=_inner(f.shape))
    assert e["mean"] < 0.1, e
    for i in range(3):
        assert abs(float(np.median(u[i])) - float(gt[i].mean())) < 0.05


def test_larger_translation_needs_the_pyramid():
    f, m, gt = make_pair(40, shift=(2.6, -1.9, 3.1), seed=4)
    inner = _inner(f.shape, 6)
    one = endpoint_error(estimate_motion(f, m, device="cpu", levels=1, warps=2), gt, mask=inner)["mean"]
    pyr = endpoint_error(estimate_motion(f, m, device="cpu", levels=3), gt, mask=inner)["mean"]
    assert pyr < 0.15 and pyr < 0.5 * one, (pyr, one)


def test_known_rotation_recovered():
    f, m, gt = make_pair(40, matrix=rotation_matrix(0, 4.0), seed=5)
    u = estimate_motion(f, m, device="cpu", levels=3)
    e = endpoint_error(u, gt, mask=_inner(f.shape))
    assert e["mean"] < 0.06 and float(np.abs(gt).max()) > 1.2, e


def test_jacobi_and_sor_reach_the_same_solution():
    f, m, _ = make_pair(16, shift=(0.6, -0.4, 0.8), seed=3)  # 16^3: both still agree to ~1e-6
    kw = dict(device="cpu", levels=1, warps=1, tol=0, beta=0.02)
    sor = estimate_motion(f, m, solver="sor", iters=200, **kw)
    jac, info = estimate_motion(f, m, solver="jacobi", iters=900, return_info=True, **kw)
    assert np.abs(sor - jac).max() < 2e-3, np.abs(sor - jac).max()
    # and SOR gets there in far fewer sweeps
    sor30 = estimate_motion(f, m, solver="sor", iters=40, **kw)
    jac30 = estimate_motion(f, m, solver="jacobi", iters=40, **kw)
    assert np.abs(sor30 - sor).mean() < 0.2 * np.abs(jac30 - sor).mean()


def _homogeneous_error(alpha, beta, solver, omega, sweeps, shape=(10, 10, 10)):
    """Relax A u = 0 (no data term: the hardest case) from noise; return |u| / |u0|."""
    rng = np.random.default_rng(1)
    T = np.zeros((9,) + shape, np.float32)
    _cpu.finish(T, None, alpha, beta)
    a = rng.standard_normal((3,) + shape).astype(np.float32)
    a -= a.mean(axis=(1, 2, 3), keepdims=True)
    n0 = np.linalg.norm(a)
    b = np.empty_like(a)
    cache: dict = {}
    with np.errstate(all="ignore"):
        for _ in range(sweeps):
            if solver == "jacobi":
                _cpu.sweep(T, a, b, -1, omega, alpha, beta, None, cache)
                a, b = b, a
            else:
                for c in range(4):
                    _cpu.sweep(T, a, a, c, omega, alpha, beta, None, cache)
    a = a - a.mean(axis=(1, 2, 3), keepdims=True)
    return float(np.linalg.norm(a) / n0)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_jacobi_needs_damping_above_three_alpha():
    # interior Fourier analysis: the largest eigenvalue of D^-1 A is 2 up to beta = 3 alpha
    assert abs(_mu_max(3.0) - 2.0) < 1e-9 and _mu_max(4.0) > 2.005 and _mu_max(2.0) <= 2.0 + 1e-9
    assert jacobi_damping(1.0, 0.0) == 1.0
    assert jacobi_damping(1.0, 10.0) < 0.9 and jacobi_lambda_max(10.0) > 2.2
    undamped = _homogeneous_error(1.0, 10.0, "jacobi", 1.0, 300)
    damped = _homogeneous_error(1.0, 10.0, "jacobi", jacobi_damping(1.0, 10.0), 300)
    assert not np.isfinite(undamped) or undamped > 10, undamped
    assert damped < 0.1, damped


@pytest.mark.parametrize("ratio", [0.5, 10.0, 100.0])
def test_sor_converges_for_any_beta(ratio):
    e30 = _homogeneous_error(1.0, ratio, "sor", 1.9, 30)
    e60 = _homogeneous_error(1.0, ratio, "sor", 1.9, 60)
    assert e60 < e30 < 0.7, (e30, e60)


def test_residual_tolerance_stops_early(shifted):
    f, m, _ = shifted
    _, loose = estimate_motion(f, m, device="cpu", levels=1, warps=1, iters=400, tol=5e-3, return_info=True)
    _, tight = estimate_motion(f, m, device="cpu", levels=1, warps=1, iters=400, tol=1e-5, return_info=True)
    w_loose, w_tight = loose.levels[0]["warps"][0], tight.levels[0]["warps"][0]
    assert w_loose["sweeps"] < w_tight["sweeps"] <= 400
    assert w_loose["residual"] < 5e-3 and w_tight["residual"] < w_loose["residual"]


def test_divergence_term_reduces_volume_change(shifted):
    from gpu_kernels.echo import jacobian_determinant

    f, m, _ = shifted
    low = estimate_motion(f, m, device="cpu", levels=2, beta=0.0)
    high = estimate_motion(f, m, device="cpu", levels=2, beta=0.5)
    inner = _inner(f.shape)
    err = [float(np.abs(jacobian_determinant(u)[inner] - 1).mean()) for u in (low, high)]
    assert err[1] < 0.7 * err[0], err


def test_initial_flow_is_used(shifted):
    f, m, gt = shifted
    u = estimate_motion(f, m, device="cpu", levels=1, warps=1, iters=1, initial_flow=gt)
    assert endpoint_error(u, gt, mask=_inner(f.shape))["mean"] < 0.1


@pytest.mark.parametrize(
    "fixed, moving, kw, match",
    [
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 9)), {}, "differ in shape"),
        (np.zeros((8, 8)), np.zeros((8, 8)), {}, "must be 3-D"),
        (np.full((8, 8, 8), np.nan), np.zeros((8, 8, 8)), {}, "NaN"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"alpha": 0}, "alpha"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"beta": -1}, "beta"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"solver": "cg"}, "solver"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"variant": "tex"}, "variant"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"levels": -1}, "levels"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"omega": 2.5}, "omega"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"alpha": "x"}, "alpha"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"levels": "a"}, "levels"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"iters": 2.5}, "iters"),
        (np.zeros((8, 8, 8)), np.zeros((8, 8, 8)), {"initial_flow": np.zeros((3, 8, 8, 7))}, "initial_flow"),
        (np.zeros((2, 8, 8)), np.zeros((2, 8, 8)), {}, "too small"),
        (np.zeros((8, 8, 8), complex), np.zeros((8, 8, 8), complex), {}, "real numbers"),
    ],
)
def test_bad_input_gives_one_clear_line(fixed, moving, kw, match):
    with pytest.raises(EchoInputError, match=match) as ei:
        estimate_motion(fixed, moving, device="cpu", **kw)
    assert "\n" not in str(ei.value)


def test_constant_volumes_give_zero_motion():
    v = np.full((12, 12, 12), 3.0, np.float32)
    u = estimate_motion(v, v, device="cpu", levels=1)
    assert np.all(np.isfinite(u)) and np.abs(u).max() < 1e-6
