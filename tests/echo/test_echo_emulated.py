"""The echo motion estimator's GPU path (``echo_filter.cu``, ``echo_tensor.cu``,
``echo_solve.cu`` and their host code, gpu_kernels.echo._gpu) run on the CPU through the test
suite's CUDA emulator (tests/cuda_emu), against the NumPy path. This checks the kernels'
indexing, shared-memory tiles, warp reductions, constant-memory filter taps, colour ordering
and half-precision storage in CI, where there is no GPU; tests/echo/test_echo_gpu.py runs
them on a real GPU."""

import re

import cuda_emu
import numpy as np
import pytest

from gpu_kernels.echo import estimate_motion
from gpu_kernels.echo.defaults import DEFAULT_PRECISION
from gpu_kernels.echo.synthetic import make_pair

if cuda_emu.available():
    pytest.skip(cuda_emu.available(), allow_module_level=True)

BE = cuda_emu.emu_backend()
# X and Y not multiples of the 32 x 8 thread tiles; two pyramid levels (resampling)
SHAPE = (16, 20, 26)
KW = dict(levels=2, warps=2, iters=16, check_every=4)


@pytest.fixture(scope="module")
def pair():
    f, m, u = make_pair(SHAPE, shift=(0.6, -0.3, 0.8), seed=3)
    return np.asarray(f), np.asarray(m), np.asarray(u)


def _run(pair, device, **kw):
    f, m, _ = pair
    return np.asarray(estimate_motion(f, m, device=device, **KW, **kw))


# both storage precisions of the per-voxel system, whichever is the default
CASES = [
    dict(solver="sor", variant="cache", precision="float32"),
    dict(solver="jacobi", variant="smem", precision="float32"),
    dict(solver="sor", variant="cache", precision="float16"),
]
SLOW = [pytest.param(c, marks=pytest.mark.slow) for c in (
    dict(solver="jacobi", variant="cache", precision="float32"),
    dict(solver="sor", variant="smem", precision="float32"),
    dict(solver="sor", variant="smem", derivative="forward", beta=0.0),
    dict(solver="jacobi", variant="smem", precision="float16"),
)]


@pytest.mark.parametrize("kw", CASES + SLOW, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_emulated_kernels_give_the_numpy_field(pair, kw):
    a = _run(pair, "cpu", **kw)
    b = _run(pair, BE, **kw)
    assert b.shape == a.shape == (3,) + SHAPE and b.dtype == np.float32
    assert np.isfinite(b).all()
    # float sums in another order; a half-precision system can round the other way at a tie
    tol = 2e-3 if kw.get("precision", DEFAULT_PRECISION) == "float16" else 2e-5
    np.testing.assert_allclose(b, a, atol=tol)
    if "derivative" not in kw:
        # and it is a motion estimate, not zeros: the shift is found to within a fraction of a voxel
        err = np.abs(b - pair[2])[:, 3:-3, 3:-3, 3:-3].mean()
        assert err < 0.25, err


def test_a_broken_sweep_is_caught(pair, monkeypatch):
    """The comparison can fail: with the relaxation kernels' launches dropped (found by name:
    sor or jacobi), the emulated field is no longer the NumPy one."""
    from gpu_kernels.echo import _gpu

    real = _gpu.kernel
    dropped = []

    def kernel(be, source, name, *a, **k):
        fn = real(be, source, name, *a, **k)
        if re.search(r"sor|jacobi", name):
            dropped.append(name)
            return lambda *args, **kw: None
        return fn

    monkeypatch.setattr(_gpu, "kernel", kernel)
    a = _run(pair, "cpu", solver="sor", variant="cache")
    b = _run(pair, BE, solver="sor", variant="cache")
    assert dropped
    assert np.abs(b - a).max() > 0.05


@pytest.mark.parametrize("D", [1, 2, 3, 5])
def test_wavefront_sweep_equals_the_four_passes(monkeypatch, D):
    """Issue 24: echo_sor_wave (one SOR sweep as a wavefront along z, each colour D + 1 planes
    behind the one before) gives the four passes' field to the bit, for slabs that do not
    divide the volume and a slab deeper than a third of it; and the comparison can fail (the
    colours in the wrong order: no lag between them)."""
    from gpu_kernels.echo import _gpu

    rng = np.random.default_rng(7)
    shape = (11, 10, 13)
    ops = _gpu.GpuOps(BE, "cache", half=True)
    J = rng.random((6,) + shape).astype(np.float32) * 0.5
    J[:3] += 0.5
    Tc = ops.system(J, 0.02, 0.05)
    ops.rhs(Tc, J, rng.standard_normal((3,) + shape).astype(np.float32) * 0.1, None)
    u0 = rng.standard_normal((3,) + shape).astype(np.float32)
    monkeypatch.setattr(_gpu, "WAVE_MIN_VOXELS", 0)
    monkeypatch.setattr(_gpu, "WAVE_D", D)
    a, b = u0.copy(), u0.copy()
    for _ in range(2):
        for c in range(4):
            ops.sweep(Tc, a, a, c, 1.8, 0.02, 0.05)
        ops.sor_sweep(Tc, b, 1.8, 0.02, 0.05)
    assert np.abs(a - u0).max() > 1e-3
    np.testing.assert_array_equal(b, a)
    if D == 2:   # the lag is what makes it exact: a wavefront whose colours run together is not
        bad = u0.copy()
        ops._plans.clear()
        ops._sweep_wave(Tc, bad, 1.8, 0.02, 0.05, None, None, D, lag=D - 1)
        ops._sweep_wave(Tc, bad, 1.8, 0.02, 0.05, None, None, D, lag=D - 1)
        assert np.abs(bad - a).max() > 1e-4


@pytest.mark.parametrize("sigma", [0.6, 3.5, (9.0, 0.0, 1.2)])
def test_emulated_gaussian_passes_give_scipys(sigma):
    """The y and z passes (echo_gauss_line: four consecutive outputs a thread, the taps'
    windows shifted in registers) and the x pass against the NumPy path, on lines that are no
    multiple of the 32 outputs a block computes at once and a radius longer than a line."""
    from gpu_kernels.echo import _cpu, _gpu

    v = np.random.default_rng(3).random((7, 37, 45)).astype(np.float32)
    ops = _gpu.GpuOps(BE, "cache")
    np.testing.assert_allclose(np.asarray(ops.gaussian(v, sigma)), _cpu.gaussian(v, sigma), atol=2e-6)
    T = np.random.default_rng(4).random((3, 9, 11, 34)).astype(np.float32)
    ref = _cpu.smooth_channels(T.copy(), 2.0)
    np.testing.assert_allclose(np.asarray(ops.smooth_channels(T, 2.0)), ref, atol=2e-6)


def _random_system(ops, shape, seed=7):
    rng = np.random.default_rng(seed)
    J = rng.random((6,) + shape).astype(np.float32) * 0.5
    J[:3] += 0.5
    Tc = ops.system(J, 0.02, 0.05)
    ops.rhs(Tc, J, rng.standard_normal((3,) + shape).astype(np.float32) * 0.1, None)
    return Tc, rng.standard_normal((3,) + shape).astype(np.float32)


@pytest.mark.parametrize("per_sm", [1, 3])
def test_marching_passes_equal_one_plane_a_thread(monkeypatch, per_sm):
    """Issue 24: echo_sor_march (each thread marches through a chunk of planes, z neighbours
    from L1) gives echo_sor_cache's field to the bit, with the residual sum; and the wavefront
    whose blocks march through their slab (WAVE_M) too."""
    from gpu_kernels.echo import _gpu

    shape = (13, 10, 13)
    ops = _gpu.GpuOps(BE, "cache", half=True)
    Tc, u0 = _random_system(ops, shape)
    monkeypatch.setattr(_gpu, "MARCH_BLOCKS_PER_SM", 0)
    a = u0.copy()
    sa = ops.new_stats()
    for c in range(4):
        ops.sweep(Tc, a, a, c, 1.8, 0.02, 0.05, sa)
    monkeypatch.setattr(_gpu, "MARCH_BLOCKS_PER_SM", per_sm)
    launched = []
    real = ops.k_march
    monkeypatch.setattr(ops, "k_march", lambda g, b, args: (launched.append(g), real(g, b, args)))
    ops._plans.clear()
    b = u0.copy()
    sb = ops.new_stats()
    for c in range(4):
        ops.sweep(Tc, b, b, c, 1.8, 0.02, 0.05, sb)
    assert launched and all(g[2] < shape[0] for g in launched)    # several planes a block
    assert np.abs(a - u0).max() > 1e-3
    np.testing.assert_array_equal(b, a)
    np.testing.assert_allclose(sb, sa, rtol=1e-5)
    monkeypatch.setattr(_gpu, "WAVE_MIN_VOXELS", 0)
    for D, M in ((2, 2), (4, 2), (3, 3)):
        monkeypatch.setattr(_gpu, "WAVE_D", D)
        monkeypatch.setattr(_gpu, "WAVE_M", M)
        w = u0.copy()
        ops.sor_sweep(Tc, w, 1.8, 0.02, 0.05)
        np.testing.assert_array_equal(w, a)


def test_offset_loads_equal_clamped_loads():
    """Issue 24: the sweeps' neighbour loads through per-axis clamped offsets read the values
    the per-load clamped indices read (ECHO_CLAMP_LOADS): the same field to the bit, SOR and
    Jacobi, on a volume with every face, edge and corner; and a wrong offset is caught."""
    from gpu_kernels.echo import _gpu

    shape = (5, 6, 7)
    new = _gpu.GpuOps(BE, "cache", half=True)
    old = _gpu.GpuOps(BE, "cache", half=True, solve_defines={"ECHO_CLAMP_LOADS": 1})
    Tc, u0 = _random_system(new, shape, seed=9)
    a, b = u0.copy(), u0.copy()
    for _ in range(2):
        for c in range(4):
            new.sweep(Tc, a, a, c, 1.8, 0.02, 0.05)
            old.sweep(Tc, b, b, c, 1.8, 0.02, 0.05)
    assert np.abs(a - u0).max() > 1e-3
    np.testing.assert_array_equal(a, b)
    ja, jb = np.empty_like(u0), np.empty_like(u0)
    new.sweep(Tc, u0, ja, -1, 0.9, 0.02, 0.05)
    old.sweep(Tc, u0, jb, -1, 0.9, 0.02, 0.05)
    np.testing.assert_array_equal(ja, jb)
    wrong = _gpu.GpuOps(BE, "cache", half=True, solve_defines={"ECHO_TEST_WRONG_OFFSET": 1})
    c_ = u0.copy()
    for c in range(4):
        wrong.sweep(Tc, c_, c_, c, 1.8, 0.02, 0.05)
    first = u0.copy()
    for c in range(4):
        new.sweep(Tc, first, first, c, 1.8, 0.02, 0.05)
    assert np.abs(c_ - first).max() > 1e-4
