"""GPU path against the CPU path: every building block, both kernel variants, end to end.

Runs where CuPy finds a CUDA device (``pytest -m gpu``); needs only numpy, scipy, cupy.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.echo import _cpu

pytestmark = pytest.mark.gpu

VARIANTS = ("cache", "smem")
SHAPES = [(19, 23, 29), (40, 33, 70)]


@pytest.fixture(scope="module")
def be():
    from gpu_kernels.backend import get_backend

    return get_backend("cuda")


def _ops(be, variant, half=False):
    from gpu_kernels.echo._gpu import GpuOps

    return GpuOps(be, variant, half=half)


def _get(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _natural(Tc, shape):
    """The colour layout [9][colour][z][y/2][x/2] back in [9][z][y][x] order."""
    Tc = _get(Tc)
    Z, Y, X = shape
    col = _cpu.colours(shape)
    zz, yy, xx = np.meshgrid(np.arange(Z), np.arange(Y), np.arange(X), indexing="ij")
    return Tc[:, col, zz, yy // 2, xx // 2]


@pytest.mark.parametrize("shape", SHAPES)
def test_gaussian_and_channels(be, shape):
    cp = be.xp
    rng = np.random.default_rng(0)
    v = rng.random(shape).astype(np.float32)
    ops = _ops(be, "cache")
    for sigma in (0.6, 1.5, (2.0, 0.0, 1.0)):
        np.testing.assert_allclose(_get(ops.gaussian(cp.asarray(v), sigma)), _cpu.gaussian(v, sigma), atol=2e-6)
    T = rng.random((9,) + shape).astype(np.float32)
    ref = _cpu.smooth_channels(T.copy(), 2.5)
    got = ops.smooth_channels(cp.asarray(T), 2.5)
    np.testing.assert_allclose(_get(got), ref, atol=2e-6)


def test_constant_memory_slots_are_reused_safely(be):
    cp = be.xp
    v = np.random.default_rng(1).random((12, 13, 14)).astype(np.float32)
    ops = _ops(be, "cache")
    for k in range(12):       # more sigmas than constant-memory slots
        s = 0.5 + 0.2 * k
        np.testing.assert_allclose(_get(ops.gaussian(cp.asarray(v), s)), _cpu.gaussian(v, s), atol=2e-6)


@pytest.mark.parametrize("shape", SHAPES)
def test_resample_and_warp(be, shape):
    cp = be.xp
    rng = np.random.default_rng(2)
    v = rng.random(shape).astype(np.float32)
    u = (rng.standard_normal((3,) + shape) * 3).astype(np.float32)
    ops = _ops(be, "cache")
    np.testing.assert_allclose(_get(ops.warp(cp.asarray(v), cp.asarray(u))), _cpu.warp(v, u), atol=1e-5)
    small = tuple((s + 1) // 2 for s in shape)
    np.testing.assert_allclose(_get(ops.resample(cp.asarray(v), small, (2, 2, 2), (0.5, 0.5, 0.5))),
                               _cpu.resample(v, small, (2, 2, 2), (0.5, 0.5, 0.5)), atol=1e-5)
    np.testing.assert_allclose(_get(ops.resample(cp.asarray(v[:small[0], :small[1], :small[2]].copy()), shape,
                                                 (0.5, 0.5, 0.5), (-0.25, -0.25, -0.25))),
                               _cpu.resample(v[:small[0], :small[1], :small[2]].copy(), shape, (0.5, 0.5, 0.5),
                                             (-0.25, -0.25, -0.25)), atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("kind", ["central", "forward"])
@pytest.mark.parametrize("shape", SHAPES)
def test_tensor(be, variant, kind, shape):
    cp = be.xp
    rng = np.random.default_rng(3)
    f = rng.random(shape).astype(np.float32)
    m = rng.random(shape).astype(np.float32)
    u = (rng.standard_normal((3,) + shape)).astype(np.float32)
    got = _ops(be, variant).tensor(cp.asarray(f), cp.asarray(m), cp.asarray(u), kind)
    np.testing.assert_allclose(_get(got), _cpu.tensor(f, m, u, kind), atol=2e-5)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("parts", [1, 2])
def test_tensor_parts(be, variant, parts):
    cp = be.xp
    shape = SHAPES[1]
    rng = np.random.default_rng(13)
    f, m = (rng.random(shape).astype(np.float32) for _ in range(2))
    u = rng.standard_normal((3,) + shape).astype(np.float32)
    got = _ops(be, variant).tensor(cp.asarray(f), cp.asarray(m), cp.asarray(u), "central", parts=parts)
    full = _cpu.tensor(f, m, u, "central")
    np.testing.assert_allclose(_get(got), full[:6] if parts == 1 else full[6:], atol=2e-5)
    np.testing.assert_array_equal(_cpu.tensor(f, m, u, "central", parts=parts), full[:6] if parts == 1 else full[6:])


@pytest.mark.parametrize("half", [False, True])
def test_system_and_rhs_equal_finish(be, half):
    """Kinv once per level (system) and R per warp (rhs) give what finish gives in one pass;
    in half precision, what the CPU's rounding gives."""
    cp = be.xp
    shape = SHAPES[1]
    rng = np.random.default_rng(14)
    T = _cpu.smooth_channels(_cpu.tensor(rng.random(shape).astype(np.float32), rng.random(shape).astype(np.float32),
                                         rng.standard_normal((3,) + shape).astype(np.float32), "central"), 1.0)
    u0 = rng.standard_normal((3,) + shape).astype(np.float32)
    ref = _cpu.finish(T.copy(), u0, 0.02, 0.05)
    if half:
        _cpu.to_half(ref)
    ops = _ops(be, "cache", half=half)
    J, B = cp.asarray(T[:6]), cp.asarray(T[6:])
    Tc = ops.system(J, 0.02, 0.05)
    assert Tc.dtype == (cp.float16 if half else cp.float32)
    ops.rhs(Tc, J, B, cp.asarray(u0))
    got = _natural(Tc, shape).astype(np.float32)
    np.testing.assert_allclose(got, ref, rtol=2e-3 if half else 2e-4, atol=1e-4)
    if half:   # every value rounds to the same half, or to its neighbour (float32 arithmetic order)
        assert np.mean(got == ref) > 0.99


@pytest.mark.parametrize("shape", SHAPES)
def test_finish_layout(be, shape):
    cp = be.xp
    rng = np.random.default_rng(4)
    T = _cpu.smooth_channels(_cpu.tensor(rng.random(shape).astype(np.float32), rng.random(shape).astype(np.float32),
                                         None, "central"), 1.0)
    u0 = rng.standard_normal((3,) + shape).astype(np.float32)
    ref = _cpu.finish(T.copy(), u0, 0.02, 0.05)
    got = _ops(be, "cache").finish(cp.asarray(T), cp.asarray(u0), 0.02, 0.05)
    np.testing.assert_allclose(_natural(got, shape), ref, rtol=2e-4, atol=1e-4)


def _system(shape, seed=5, alpha=0.03, beta=0.05):
    rng = np.random.default_rng(seed)
    T = _cpu.smooth_channels(_cpu.tensor(rng.random(shape).astype(np.float32), rng.random(shape).astype(np.float32),
                                         None, "central"), 1.0)
    u0 = rng.standard_normal((3,) + shape).astype(np.float32)
    Tn = _cpu.finish(T.copy(), u0, alpha, beta)
    return T, u0, Tn, rng.standard_normal((3,) + shape).astype(np.float32)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_jacobi_sweep(be, variant, shape):
    cp = be.xp
    alpha, beta = 0.03, 0.05
    T, u0, Tn, u = _system(shape)
    ops = _ops(be, variant)
    Tc = ops.finish(cp.asarray(T), cp.asarray(u0), alpha, beta)
    ref = np.empty_like(u)
    st_ref = np.zeros(1)
    _cpu.sweep(Tn, u, ref, -1, 0.9, alpha, beta, st_ref)
    dst = cp.full(u.shape, cp.nan, dtype=cp.float32)        # every voxel must be written
    st = ops.new_stats()
    ops.sweep(Tc, cp.asarray(u), dst, -1, 0.9, alpha, beta, st)
    np.testing.assert_allclose(_get(dst), ref, rtol=1e-4, atol=2e-4)
    assert abs(ops.read_stats(st) - st_ref[0]) <= 1e-3 * st_ref[0]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_sor_sweep(be, variant, shape):
    cp = be.xp
    alpha, beta = 0.03, 0.05
    T, u0, Tn, u = _system(shape, seed=6)
    ops = _ops(be, variant)
    Tc = ops.finish(cp.asarray(T), cp.asarray(u0), alpha, beta)
    ref = u.copy()
    st_ref = np.zeros(1)
    got = cp.asarray(u)
    st = ops.new_stats()
    for sweep in range(2):
        for c in range(4):
            _cpu.sweep(Tn, ref, ref, c, 1.7, alpha, beta, st_ref)
            ops.sweep(Tc, got, got, c, 1.7, alpha, beta, st)
            np.testing.assert_allclose(_get(got), ref, rtol=1e-4, atol=2e-4, err_msg=f"sweep {sweep} colour {c}")
    assert abs(ops.read_stats(st) - st_ref[0]) <= 1e-3 * st_ref[0]


@pytest.mark.parametrize("variant", VARIANTS)
def test_half_precision_sor_sweep(be, variant):
    cp = be.xp
    alpha, beta = 0.03, 0.05
    shape = SHAPES[1]
    T, u0, Tn, u = _system(shape, seed=7)
    _cpu.to_half(Tn)
    ops = _ops(be, variant, half=True)
    J = cp.asarray(T[:6])
    Tc = ops.system(J, alpha, beta)
    ops.rhs(Tc, J, cp.asarray(T[6:]), cp.asarray(u0))
    ref, got = u.copy(), cp.asarray(u)
    for c in range(4):
        _cpu.sweep(Tn, ref, ref, c, 1.7, alpha, beta)
        ops.sweep(Tc, got, got, c, 1.7, alpha, beta)
    np.testing.assert_allclose(_get(got), ref, rtol=2e-3, atol=2e-3)


def test_device_convergence_flag_matches_the_host_check(be):
    """The SOR sweeps stop on the device at the same check as the CPU's, with the same residual."""
    from gpu_kernels.echo import estimate_motion
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair((30, 34, 38), shift=(0.8, -0.5, 1.1), seed=11)
    kw = dict(levels=2, warps=2, iters=40, tol=2e-3, check_every=3)
    _, ic = estimate_motion(f, m, device="cpu", return_info=True, **kw)
    _, ig = estimate_motion(f, m, device="cuda", return_info=True, **kw)
    sc = [w["sweeps"] for lev in ic.levels for w in lev["warps"]]
    sg = [w["sweeps"] for lev in ig.levels for w in lev["warps"]]
    assert sg == sc and all(s % 3 == 0 or s == 40 for s in sg), (sc, sg)
    rc = [w["residual"] for lev in ic.levels for w in lev["warps"]]
    rg = [w["residual"] for lev in ig.levels for w in lev["warps"]]
    np.testing.assert_allclose(rg, rc, rtol=2e-2)
    # a cap larger than the host's look-ahead: the host sees the flag and stops queueing
    _, ib = estimate_motion(f, m, device="cuda", return_info=True, levels=1, warps=1, iters=500, tol=5e-3)
    assert ib.sweeps < 500


@pytest.mark.parametrize("tol", [0.0, 2e-3])
def test_one_launch_sweeps_equal_the_queued_passes(be, monkeypatch, tol):
    """echo_sor_persistent (a warp's sweeps in one launch, grid-wide barriers) computes what
    the four launches per sweep compute, stops at the same check, on a volume of many blocks."""
    from gpu_kernels.echo import _gpu, estimate_motion
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair((48, 60, 70), shift=(0.8, -0.5, 1.1), seed=15)
    kw = dict(levels=2, warps=2, iters=12, tol=tol, check_every=3, device=be, return_info=True)
    one, i1 = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), **kw)
    monkeypatch.setattr(_gpu, "PERSIST_MAX_VOXELS", 0)
    four, i4 = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), **kw)
    assert [w["sweeps"] for lev in i1.levels for w in lev["warps"]] == \
        [w["sweeps"] for lev in i4.levels for w in lev["warps"]]
    np.testing.assert_allclose(_get(one), _get(four), atol=1e-5)


def test_persistent_launch_fits_the_device_or_falls_back(be, monkeypatch):
    """Issue 24: echo_sor_persistent's grid barriers need every block resident at once. The
    launch takes no more blocks than the occupancy calculator says fit (registers, shared
    memory), and where none would (or the calculator cannot answer) the passes are queued
    instead, with the same field."""
    from cupy.cuda import driver

    from gpu_kernels.echo import _gpu, estimate_motion, motion
    from gpu_kernels.echo.synthetic import make_pair

    ops = motion._ops_for(be, "cache", half=True)
    per_sm = driver.occupancyMaxActiveBlocksPerMultiprocessor(_gpu._function_ptr(ops.k_persist), 256, 0)
    assert per_sm >= 1
    assert ops.persist_resident() == min(2, per_sm) * ops.sms
    launches = []
    real = ops.k_persist
    monkeypatch.setattr(ops, "k_persist", lambda grid, block, args: (launches.append(grid), real(grid, block, args)))
    f, m, _gt = make_pair((40, 64, 64), shift=(0.8, -0.5, 1.1), seed=4)
    kw = dict(levels=1, warps=1, iters=6, tol=0, device=be)
    one = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), **kw)
    assert launches and all(g[0] <= ops.persist_resident() for g in launches)
    monkeypatch.setattr(ops, "_resident", 0)      # as if no block fitted: the queued passes
    launches.clear()
    queued = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), **kw)
    assert not launches
    np.testing.assert_allclose(_get(one), _get(queued), atol=1e-5)
    monkeypatch.setattr(ops, "k_persist", real)
    monkeypatch.setattr(ops, "_resident", None)   # no calculator: the kernel's registers decide
    monkeypatch.setattr(driver, "occupancyMaxActiveBlocksPerMultiprocessor",
                        lambda *a: (_ for _ in ()).throw(RuntimeError("no calculator")))
    assert ops.persist_resident() == min(2, per_sm) * ops.sms
    monkeypatch.setattr(ops, "_resident", None)
    assert _gpu.PERSIST_MAX_VOXELS >= 40 * 64 * 64


@pytest.mark.parametrize("D, M, per_sm", [(0, 1, 8), (0, 1, 2), (2, 1, 0), (4, 2, 0), (7, 7, 0)])
def test_wavefront_and_marching_sweeps_equal_the_four_passes_on_gpu(be, monkeypatch, D, M, per_sm):
    """Issue 24: echo_sor_march (threads marching through planes) and echo_sor_wave (a sweep
    as a wavefront along z, its blocks marching M planes) give the plain four passes' field to
    the bit on the GPU, over whole estimates (many blocks, every level)."""
    from gpu_kernels.echo import _gpu, estimate_motion
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair((45, 64, 70), shift=(0.8, -0.5, 1.1), seed=6)
    kw = dict(levels=2, warps=2, iters=7, tol=0, device=be)
    monkeypatch.setattr(_gpu, "PERSIST_MAX_VOXELS", 0)
    monkeypatch.setattr(_gpu, "WAVE_MIN_VOXELS", 0)
    monkeypatch.setattr(_gpu, "WAVE_D", 0)
    monkeypatch.setattr(_gpu, "MARCH_BLOCKS_PER_SM", 0)
    four = _get(estimate_motion(be.xp.asarray(f), be.xp.asarray(m), **kw))
    monkeypatch.setattr(_gpu, "WAVE_D", D)
    monkeypatch.setattr(_gpu, "WAVE_M", M)
    monkeypatch.setattr(_gpu, "MARCH_BLOCKS_PER_SM", per_sm)
    other = _get(estimate_motion(be.xp.asarray(f), be.xp.asarray(m), **kw))
    np.testing.assert_array_equal(other, four)


def test_invert_on_gpu_reads_the_flag_rarely(be, monkeypatch):
    """maps.invert on the GPU tests convergence on the device: the host reads it once every
    _INVERT_SYNC steps (not once a step), and a step after convergence changes nothing, so
    the result equals the CPU's, which stops at the first converged step."""
    from gpu_kernels.echo import estimate_motion, invert, maps
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair(24, shift=(0.8, -0.5, 1.1), seed=5)
    u = estimate_motion(f, m, device="cpu", levels=1, iters=20)
    reads = []
    real = maps._read_flag
    monkeypatch.setattr(maps, "_read_flag", lambda d: (reads.append(1), real(d))[1])
    for iters in (3, maps.INVERT_ITERS):
        reads.clear()
        got = _get(invert(be.xp.asarray(u), iters=iters, device=be))
        assert len(reads) <= iters // maps._INVERT_SYNC + 1
        np.testing.assert_allclose(got, invert(u, iters=iters, device="cpu"), atol=1e-5)


def test_prepared_solve_equals_estimate_on_gpu(be):
    from gpu_kernels.echo import estimate_motion, prepare_motion, solve_motion
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair(40, shift=(0.8, -0.5, 1.1), seed=12)
    prep = prepare_motion(be.xp.asarray(f), be.xp.asarray(m), device=be)
    for alpha in (0.02, 0.05):
        a = solve_motion(prep, alpha=alpha, tol=0)
        b = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), device=be, alpha=alpha, tol=0)
        np.testing.assert_array_equal(_get(a), _get(b))


def test_one_preparation_serves_both_variants_on_gpu(be):
    """Issue 20: the kernel variant is a solve parameter (the live stage cache keeps the
    prepared pyramids and tensors when it changes): the spatial tensors of both variants are
    bit-identical, and a solve of a preparation made with the other variant equals the
    whole estimate in that variant."""
    from gpu_kernels.echo import estimate_motion, prepare_motion, solve_motion
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair(40, shift=(0.8, -0.5, 1.1), seed=12)
    preps = {v: prepare_motion(be.xp.asarray(f), be.xp.asarray(m), device=be, variant=v) for v in VARIANTS}
    for a, b in zip(preps["cache"].tensors, preps["smem"].tensors, strict=True):
        np.testing.assert_array_equal(_get(a), _get(b))
    for v in VARIANTS:
        got = solve_motion(preps["cache"], variant=v, tol=0)
        want = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), device=be, variant=v, tol=0)
        np.testing.assert_array_equal(_get(got), _get(want))


def test_invert_on_gpu_equals_cpu(be):
    from gpu_kernels.echo import estimate_motion, invert
    from gpu_kernels.echo.synthetic import make_pair

    f, m, _gt = make_pair(32, matrix=np.diag([1.04, 0.97, 1.02]), shift=(0.8, -0.5, 1.1), seed=3)
    u = estimate_motion(f, m, device="cpu", levels=2)
    np.testing.assert_allclose(_get(invert(be.xp.asarray(u), device=be)), invert(u, device="cpu"), atol=1e-4)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("solver", ["sor", "jacobi"])
def test_estimate_motion_gpu_equals_cpu(be, variant, solver):
    from gpu_kernels.echo import endpoint_error, estimate_motion
    from gpu_kernels.echo.synthetic import make_pair

    f, m, gt = make_pair((36, 40, 44), shift=(1.2, -0.7, 1.6), seed=8)
    kw = dict(levels=3, warps=2, iters=30, tol=0, solver=solver, precision="float32")
    cpu = estimate_motion(f, m, device="cpu", **kw)
    gpu, info = estimate_motion(f, m, device="cuda", variant=variant, return_info=True, **kw)
    assert isinstance(gpu, np.ndarray) and info.device.startswith("cuda")
    assert np.abs(gpu - cpu).max() < 5e-3, np.abs(gpu - cpu).max()
    assert endpoint_error(gpu, gt)["mean"] < 0.2
    # CuPy in, CuPy out
    out = estimate_motion(be.xp.asarray(f), be.xp.asarray(m), device=be, variant=variant, **kw)
    assert hasattr(out, "__cuda_array_interface__")
    # the half-precision system: the GPU computes what the CPU's rounding computes
    kw["precision"] = "float16"
    c16 = estimate_motion(f, m, device="cpu", **kw)
    g16 = estimate_motion(f, m, device="cuda", variant=variant, **kw)
    assert np.abs(g16 - c16).max() < 2e-2, np.abs(g16 - c16).max()
    assert endpoint_error(g16, gt)["mean"] < 0.2


def test_lv_sequence_gpu_accuracy_matches_cpu(be):
    from gpu_kernels.echo import endpoint_error, estimate_motion
    from gpu_kernels.echo.synthetic import make_sequence

    seq = make_sequence(48, frames=6, seed=9, device="cuda")
    cpu_seq = make_sequence(48, frames=2, seed=9, device="cpu")
    assert np.abs(seq.frames[0].astype(int) - cpu_seq.frames[0].astype(int)).max() <= 1
    gt = seq.displacement(1, 2, device="cuda")
    np.testing.assert_allclose(gt, seq.displacement(1, 2, device="cpu"), atol=1e-4)
    cpu = endpoint_error(estimate_motion(seq.frames[1], seq.frames[2], device="cpu"), gt)["mean"]
    gpu = endpoint_error(estimate_motion(seq.frames[1], seq.frames[2], device="cuda"), gt)["mean"]
    assert abs(cpu - gpu) < 0.01 and gpu < 0.3, (cpu, gpu)


def test_maps_on_gpu(be):
    from gpu_kernels.echo import compose, divergence, jacobian_determinant, magnitude

    rng = np.random.default_rng(10)
    u = (rng.standard_normal((3, 12, 13, 14)) * 0.3).astype(np.float32)
    w = (rng.standard_normal((3, 12, 13, 14)) * 0.3).astype(np.float32)
    cu, cw = be.xp.asarray(u), be.xp.asarray(w)
    np.testing.assert_allclose(_get(jacobian_determinant(cu)), jacobian_determinant(u), atol=1e-5)
    np.testing.assert_allclose(_get(divergence(cu)), divergence(u), atol=1e-5)
    np.testing.assert_allclose(_get(magnitude(cu, (2, 1, 1))), magnitude(u, (2, 1, 1)), atol=1e-5)
    np.testing.assert_allclose(_get(compose(cu, cw)), compose(u, w), atol=1e-5)


def test_too_large_is_reported(be, monkeypatch):
    from gpu_kernels.echo import estimate_motion
    from gpu_kernels.errors import TooLargeError

    monkeypatch.setattr(type(be), "mem_info", lambda self: (1000, 1000))
    v = np.zeros((16, 16, 16), np.float32)
    with pytest.raises(TooLargeError, match="voxels"):
        estimate_motion(v, v, device=be)
