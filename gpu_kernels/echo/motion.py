"""Volume-preserving 3-D CLG motion estimation (Bruhn's combined local-global optical flow
in 3-D with Song & Leahy's divergence term), on the GPU or the CPU.

For a fixed volume ``I1`` and a moving volume ``I2`` (arrays indexed [z, y, x]) the
displacement ``u`` (3, Z, Y, X), in voxels along the array axes, minimises

    sum_x  w^T J_rho w  +  alpha |grad u|^2  +  beta (div u)^2,      w = (u - u0, 1)

where ``J_rho = K_rho * (grad4 I grad4 I^T)`` is the spatio-temporal structure tensor at the
linearisation point ``u0``: the spatial derivatives of the fixed volume (forward or central
differences, zero on the border) and ``It = I2(x + u0) - I1``, each of the nine products
smoothed by a separable 3-D Gaussian of standard deviation ``rho``. ``moving(x + u(x))``
then matches ``fixed(x)`` (scikit-image's convention).

Solver: the Euler-Lagrange equations, discretised with the 7-point Laplacian and the
standard second differences (``d_ii`` 3-point, mixed ``d_ik`` central), are relaxed voxel by
voxel with the 3x3 system of each voxel solved exactly (coupled point relaxation):

* ``"jacobi"`` (the paper's method): all voxels from the previous iterate. Undamped Jacobi
  diverges once ``beta > 3 alpha`` (Fourier analysis of the discrete operator: the largest
  eigenvalue of D^-1 A exceeds 2 exactly there; the volume's faces push it slightly above 2
  for any beta > 0); it is then damped automatically (:func:`jacobi_damping`).
* ``"sor"``: multi-colour successive over-relaxation. Red-black ordering is not a valid
  Gauss-Seidel ordering here: the mixed derivatives couple a voxel to its in-plane diagonal
  neighbours, which have its own red-black colour. The 4-colouring
  ``((x + z) % 2) + 2 ((y + z) % 2)`` separates every coupled pair (4 colours are the
  fewest: a voxel and three mutually coupled neighbours form a 4-clique), so one sweep is 4
  in-place passes, each updating one colour in parallel: an exact block Gauss-Seidel sweep.
  The discrete operator is symmetric positive semi-definite (the mixed derivatives are
  discretised on plaquettes, see ``_cpu.mixed_weights``), so SOR converges for every
  omega in (0, 2), for any beta.

Each level stops on a residual tolerance (the RMS of the block-Jacobi-preconditioned
residual, i.e. of the change a point solve would make, in voxels of that level, checked
every ``check_every`` sweeps) or on the sweep cap ``iters``. On the GPU the check is made on
the device: the remaining passes of a converged warp return at once, so the host queues a
warp's whole budget without waiting, and on levels of at most 64^3 voxels a warp's sweeps run
in one launch (grid-wide barriers between the colour passes; ``_gpu.PERSIST_MAX_VOXELS``).

Warping and multiresolution: on each level of a pyramid (axes halved while they stay at
least ``MIN_LEVEL_SIZE`` voxels and no coarser than about 1.5x the finest spacing, so thick
slices are not halved), ``warps`` times: warp the moving volume by the current field
(trilinear, fused into the data-term kernel), rebuild the data term and re-solve for the
total field. Only the three channels ``K_rho * (grad I It)`` change with the warp: the six
spatial channels of ``J_rho`` and the inverse of each voxel's 3x3 matrix are built once per
level, and :func:`prepare_motion` keeps the pyramids and spatial tensors, which none of the
solver's parameters change, for any number of :func:`solve_motion` calls (the window's live
tuning re-runs only the solver on an alpha edit).

System precision (``precision``): the per-voxel system every sweep reads (inverse matrix and
right-hand side) is stored as IEEE halves by default: the same EPE to 4 digits at 128^3 and
256^3 and the same ACDC registration as float32, the same sweeps to every residual down to
1e-4, 18.5 instead of 24 floats per voxel at the peak (benchmarks/results/echo_issue24.md, H100).

Kernel variants (``variant``), the paper's central experiment: ``"smem"`` tiles z-slices of
the volume with halos in shared memory and marches through z (gradient/tensor kernel and
relaxation kernel), ``"cache"`` reads global memory through the L1/L2 caches. On an H100 the
cache variant is faster (128^3 pair 16.7 ms against 20.8 ms), as the paper found on Fermi.

Defaults, chosen on synthetic 3-D echo pairs (benchmarks/results/echo.md, H100): central
differences (the paper's forward differences bias the gradient by half a voxel: EPE 8.07
against 0.103 at 128^3), no pre-smoothing (sigma 1 raises the EPE from 0.103 to 0.163),
``rho = 3.5`` (0.101; 3.0: 0.103, 1.5: 0.118), ``alpha = 0.02`` (0.01: 0.109, 0.04: 0.107),
``beta = 0.02`` (beta 0 gives 0.099 but a larger volume-change error in the myocardium,
0.0139 against 0.0126; 0.2 over-constrains: 0.162), SOR with omega 1.8, 3 warps, automatic
levels (3 at 128^3: same EPE as 4, 2.6 ms faster), and the residual tolerance 1e-3 with a cap
of 7 sweeps per warp (issue 24: chosen by a rule fixed before the run, the fastest cap whose
EPE is no higher than the cap of 10's on six synthetic pairs, 96^3-256^3, and whose ACDC NCC is
within 0.0002: EPE 0.0997 against 0.1006 at 128^3, 0.0985 against 0.0985 at 256^3, NCC 0.9265
against 0.9266; no tolerance at all costs 2.3x the time for no gain). With these defaults the
H100 takes 7.1 ms for a 128^3 pair and 28.3 ms for 256^3 end to end
(benchmarks/results/echo_session4.md).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.echo.synthetic import make_pair
>>> fixed, moving, gt = make_pair(32, shift=(0.6, -0.4, 0.3), seed=3)
>>> u = estimate_motion(fixed, moving, device="cpu", levels=2)
>>> [round(float(np.median(c)), 1) for c in u]
[0.6, -0.4, 0.3]
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
import time
from dataclasses import InitVar, dataclass, field

import numpy as np

from gpu_kernels.backend import Backend, asnumpy, get_backend
from gpu_kernels.checks import check_float, check_int
from gpu_kernels.echo import _cpu
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.errors import TooLargeError
from gpu_kernels.jobs import as_progress

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "DEFAULT_RHO",
    "DEFAULT_SIGMA",
    "DEFAULT_LEVELS",
    "DEFAULT_WARPS",
    "DEFAULT_ITERS",
    "DEFAULT_TOL",
    "DEFAULT_SOLVER",
    "DEFAULT_SOR_OMEGA",
    "DEFAULT_VARIANT",
    "DEFAULT_DERIVATIVE",
    "DEFAULT_CHECK_EVERY",
    "DEFAULT_PRECISION",
    "PRECISIONS",
    "SOLVERS",
    "VARIANTS",
    "DERIVATIVES",
    "MIN_LEVEL_SIZE",
    "FLOATS_PER_VOXEL",
    "MotionInfo",
    "Prepared",
    "PREPARE_KEYS",
    "SOLVE_KEYS",
    "estimate_motion",
    "prepare_motion",
    "with_tensors",
    "solve_motion",
    "jacobi_damping",
    "jacobi_lambda_max",
    "pyramid_shapes",
    "auto_levels",
    "memory_bytes",
    "max_voxels_for_memory",
]

# the defaults and choices (DEFAULT_LEVELS = 0: automatic, see auto_levels) live in
# gpu_kernels.echo.defaults, free of NumPy, so that declaring the tool stays light
from gpu_kernels.echo.defaults import (  # noqa: E402
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_CHECK_EVERY,
    DEFAULT_DERIVATIVE,
    DEFAULT_ITERS,
    DEFAULT_LEVELS,
    DEFAULT_PRECISION,
    DEFAULT_RHO,
    DEFAULT_SIGMA,
    DEFAULT_SOLVER,
    DEFAULT_SOR_OMEGA,
    DEFAULT_TOL,
    DEFAULT_VARIANT,
    DEFAULT_WARPS,
    DERIVATIVES,
    PRECISIONS,
    PREPARE_KEYS,
    SOLVE_KEYS,
    SOLVERS,
    VARIANTS,
)

MIN_LEVEL_SIZE = 8
#: device float32 values per voxel of the finest level at the peak (see memory_bytes)
FLOATS_PER_VOXEL = 23.0


@dataclass
class MotionInfo:
    """What a run did: per level the shape and, per warp, the sweeps and the final residual."""

    levels: list = field(default_factory=list)
    sweeps: int = 0
    seconds: float = 0.0
    omega: float = 1.0
    device: str = "cpu"
    variant: str = ""
    scale: float = 1.0

    def as_dict(self) -> dict:
        return {"levels": self.levels, "sweeps": self.sweeps, "seconds": self.seconds,
                "omega": self.omega, "device": self.device, "variant": self.variant}


# --------------------------------------------------------------------------- analysis
@functools.lru_cache(maxsize=64)
def _mu_max(ratio: float) -> float:
    """Largest eigenvalue of D^-1 A of the interior operator with J = 0 (alpha = 1, beta = ratio)."""
    k = np.linspace(0.0, np.pi, 49)
    kz, ky, kx = np.meshgrid(k, k, k, indexing="ij")
    K = (kz, ky, kx)
    a = [4.0 * np.sin(q / 2.0) ** 2 for q in K]
    s = [np.sin(q) for q in K]
    lap = a[0] + a[1] + a[2]
    M = np.empty(kz.shape + (3, 3))
    for i in range(3):
        for j in range(3):
            M[..., i, j] = a[i] if i == j else s[i] * s[j]
    ev = np.linalg.eigvalsh(M)[..., -1]
    return float((lap + ratio * ev).max() / (6.0 + 2.0 * ratio))


#: Largest eigenvalue of K^-1 A (block-Jacobi operator, J = 0) against beta / alpha, with the
#: volume's faces, edges and corners: the maximum over grids of 4^3 .. 6^3 voxels (the extreme
#: modes are local to the border, larger grids give smaller values). Computed by
#: ``benchmarks/echo.py --jacobi-table``; interior Fourier analysis gives exactly 2 up to
#: beta = 3 alpha and :func:`_mu_max` above.
_JACOBI_LAMBDA = (
    (0.0, 2.0), (0.25, 2.00095), (0.5, 2.0031), (1.0, 2.0090), (2.0, 2.0229), (3.0, 2.0680),
    (5.0, 2.1672), (10.0, 2.3414), (20.0, 2.4768), (50.0, 2.5890), (100.0, 2.6408), (1000.0, 2.6906),
)


def jacobi_lambda_max(ratio: float) -> float:
    """Bound on the largest eigenvalue of the block-Jacobi operator for ``beta / alpha``."""
    r = max(float(ratio), 0.0)
    xs = np.log1p([t[0] for t in _JACOBI_LAMBDA])
    ys = [t[1] for t in _JACOBI_LAMBDA]
    interior = _mu_max(round(r, 4)) if r <= 1000 else ys[-1]
    return float(max(np.interp(np.log1p(r), xs, ys), interior))


def jacobi_damping(alpha: float, beta: float) -> float:
    """Relaxation factor that keeps Jacobi convergent.

    Without the divergence term (``beta = 0``) the paper's undamped Jacobi is used (the
    largest eigenvalue of ``D^-1 A`` is 2, reached only by the checkerboard mode where the
    data term vanishes). With it, the largest eigenvalue exceeds 2: inside the volume once
    ``beta > 3 alpha`` (Fourier analysis), and already slightly below that on the volume's
    faces, so Jacobi is damped to ``omega = 1.96 / (1.01 lambda_max)``.

    Example
    -------
    >>> jacobi_damping(1.0, 0.0), round(jacobi_damping(1.0, 10.0), 3)
    (1.0, 0.829)
    """
    if alpha <= 0 or beta <= 0:
        return 1.0
    lam = 1.01 * jacobi_lambda_max(float(beta) / float(alpha))
    return float(min(1.0, 1.96 / lam))


def auto_levels(shape, spacing=None) -> int:
    """Levels until the smallest halvable axis is below 48 voxels (at least 1).

    Example
    -------
    >>> auto_levels((64, 64, 64)), auto_levels((128,) * 3), auto_levels((256,) * 3), auto_levels((10, 192, 192), (10, 1, 1))
    (2, 3, 4, 4)
    """
    pyr = pyramid_shapes(shape, 12, spacing)
    n = 1
    for _shape, fac in pyr[1:]:
        prev = pyr[n - 1][0]
        halved = [prev[ax] for ax in range(3) if fac[ax] == 2]
        if not halved or min(halved) < 48:
            break
        n += 1
    return n


def pyramid_shapes(shape, levels: int, spacing=None) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The pyramid, finest first: ``[(shape, factors_from_previous), ...]``.

    An axis is halved while the halved size stays >= ``MIN_LEVEL_SIZE`` and its voxel size
    stays below 1.5x the smallest voxel size (thick slices are kept).
    """
    sp = np.ones(3) if spacing is None else np.asarray(spacing, dtype=np.float64).copy()
    out = [(tuple(int(s) for s in shape), (1, 1, 1))]
    cur = list(shape)
    for _ in range(int(levels) - 1):
        fac = []
        for ax in range(3):
            ok = (cur[ax] + 1) // 2 >= MIN_LEVEL_SIZE and sp[ax] < 1.5 * sp.min()
            fac.append(2 if ok else 1)
        if fac == [1, 1, 1]:
            break
        cur = [(c + f - 1) // f for c, f in zip(cur, fac, strict=True)]
        sp = sp * np.asarray(fac)
        out.append((tuple(cur), tuple(fac)))
    return out


def memory_bytes(shape, *, levels: int = DEFAULT_LEVELS) -> int:
    """Peak device bytes of one pair estimate (float32): the two volumes and their pyramids,
    the 9-channel tensor, the field and its second buffer, the warped/finished temporaries."""
    n = int(np.prod(shape))
    return int(FLOATS_PER_VOXEL * 4 * n)


def max_voxels_for_memory(free_bytes: int) -> int:
    return int(free_bytes // (FLOATS_PER_VOXEL * 4))


# --------------------------------------------------------------------------- validation
def _check_volume(name, v, be):
    xp = be.xp
    if v is None:
        raise EchoInputError(f"the {name} volume is missing")
    shape = getattr(v, "shape", None)
    if shape is None:
        v = np.asarray(v)
        shape = v.shape
    if len(shape) != 3:
        raise EchoInputError(f"the {name} volume must be 3-D [z, y, x], got {len(shape)}-D shape {tuple(shape)}")
    if min(shape) < 4:
        raise EchoInputError(f"the {name} volume is too small ({tuple(shape)}): every axis needs at least 4 voxels")
    dt = np.dtype(getattr(v, "dtype", np.float32))
    if dt.kind not in "uif" or dt.kind == "c":
        raise EchoInputError(f"the {name} volume must hold real numbers, not {dt}")
    with be.activate():
        a = xp.asarray(v)
        if dt.kind == "f" and not bool(xp.isfinite(a).all()):
            raise EchoInputError(f"the {name} volume contains NaN or infinite values: fill or mask them first")
        return xp.ascontiguousarray(a, dtype=xp.float32)


def _check_params(alpha, beta, rho, sigma, levels, warps, iters, tol, solver, variant, derivative, omega,
                  precision=DEFAULT_PRECISION):
    """The numeric parameters converted (``alpha, beta, rho, sigma, tol, omega``), or one clear line."""
    err = {"error": EchoInputError}
    alpha = check_float("alpha (smoothness weight)", alpha, 0, lo_open=True, **err)
    beta = check_float("beta (divergence weight)", beta, 0, **err)
    rho = check_float("rho (integration scale, voxels)", rho, 0, 20, **err)
    sigma = check_float("sigma (pre-smoothing, voxels)", sigma, 0, 20, **err)
    check_int("levels (0: automatic)", levels, 0, 12, **err)
    check_int("warps", warps, 1, 100, **err)
    check_int("iters", iters, 1, 100000, **err)
    tol = check_float("tol", tol, 0, **err)
    if solver not in SOLVERS:
        raise EchoInputError(f"unknown solver {solver!r}: use one of {', '.join(SOLVERS)}")
    if variant not in VARIANTS:
        raise EchoInputError(f"unknown kernel variant {variant!r}: use one of {', '.join(VARIANTS)}")
    if derivative not in DERIVATIVES:
        raise EchoInputError(f"unknown derivative {derivative!r}: use one of {', '.join(DERIVATIVES)}")
    if precision not in PRECISIONS:
        raise EchoInputError(f"unknown precision {precision!r}: use one of {', '.join(PRECISIONS)}")
    if omega is not None:
        omega = check_float("omega (relaxation factor)", omega, 0, 2, lo_open=True, **err)
        if omega == 2:
            raise EchoInputError("omega (relaxation factor) must be below 2, got 2.0")
    return alpha, beta, rho, sigma, tol, omega


# --------------------------------------------------------------------------- ops facade
class _CpuOps:
    """The NumPy facade: the same methods as :class:`gpu_kernels.echo._gpu.GpuOps`."""

    def __init__(self, be, half: bool = False):
        self.be = be
        self.xp = np
        self.half = bool(half)
        self._caches: dict = {}

    def gaussian(self, v, sigma):
        return _cpu.gaussian(v, sigma)

    def resample(self, v, shape, scale, offset):
        return _cpu.resample(v, shape, scale, offset)

    def tensor(self, f, m, u0, kind, parts=3):
        return _cpu.tensor(f, m, u0, kind, parts)

    def smooth_channels(self, T, rho):
        return _cpu.smooth_channels(T, rho)

    def system(self, J, alpha, beta):
        T = np.empty((9,) + J.shape[1:], dtype=np.float32)
        _cpu.system_inverse(J, alpha, beta, T)
        if self.half:
            _cpu.to_half(T[:6])
        return T

    def rhs(self, T, J, B, u0):
        _cpu.rhs(J, B, u0, T)
        if self.half:
            _cpu.to_half(T[6:])
        return T

    def new_stats(self):
        return np.zeros(1, dtype=np.float64)

    def new_control(self, n_slots):
        return np.zeros(1, dtype=np.int32), np.full(2 * max(int(n_slots), 1), np.nan, dtype=np.float32)

    def reset(self, done):
        done[0] = 0

    def check(self, stats, done, log, slot, sweeps, nvox, tol):
        if not done[0]:
            res = math.sqrt(max(float(stats[0]), 0.0) / nvox)
            log[2 * slot], log[2 * slot + 1] = sweeps, res
            if res < tol or not math.isfinite(res):
                done[0] = 1
        stats[:] = 0

    def is_done(self, done) -> bool:
        return bool(done[0])

    def sweep(self, T, src, dst, colour, omega, alpha, beta, stats=None, done=None):
        if done is not None and done[0]:
            return
        cache = self._caches.setdefault(src.shape, {})
        _cpu.sweep(T, src, dst, colour, omega, alpha, beta, stats, cache)

    def read_stats(self, stats) -> float:
        s = float(stats[0])
        stats[:] = 0
        return s

    def to_host(self, a):
        return np.asarray(a)

    def warp(self, v, u):
        return _cpu.warp(v, u)

    def sync(self):
        pass


_OPS: dict = {}


def _ops_for(be: Backend, variant: str, half: bool = False):
    if be.is_gpu:
        from gpu_kernels.echo import _gpu

        # one facade per device, variant, precision, thread and kernel loader (building one
        # looks up eight kernels: a measurable share of a 128^3 estimate)
        key = (id(be), be.device_id, variant, bool(half), threading.get_ident(), _gpu.kernel, _gpu.SOR_MIN_BLOCKS)
        ops = _OPS.get(key)
        if ops is None:
            if len(_OPS) > 64:
                _OPS.clear()
            ops = _OPS[key] = _gpu.GpuOps(be, variant, half=half)
        return ops
    return _CpuOps(be, half=half)


# --------------------------------------------------------------------------- the estimator
def _upsample_flow(ops, u, fine_shape, fac):
    xp = ops.xp
    out = xp.empty((3,) + tuple(fine_shape), dtype=xp.float32)
    scale = [1.0 / f for f in fac]
    offset = [-0.5 * (f - 1) / f for f in fac]
    for i in range(3):
        out[i] = ops.resample(u[i], fine_shape, scale, offset)
        if fac[i] != 1:
            out[i] *= float(fac[i])
    return out


def _downsample(ops, v, coarse_shape, fac):
    sig = [0.6 if f == 2 else 0.0 for f in fac]
    sm = ops.gaussian(v, sig)
    scale = [float(f) for f in fac]
    offset = [0.5 * (f - 1) for f in fac]
    return ops.resample(sm, coarse_shape, scale, offset)


def _restrict_flow(ops, u, coarse_shape, fac):
    xp = ops.xp
    out = xp.empty((3,) + tuple(coarse_shape), dtype=xp.float32)
    for i in range(3):
        out[i] = ops.resample(u[i], coarse_shape, [float(f) for f in fac], [0.5 * (f - 1) for f in fac])
        if fac[i] != 1:
            out[i] /= float(fac[i])
    return out


#: the parameters of :func:`prepare_motion` and of :func:`solve_motion` (declared in
#: gpu_kernels.echo.defaults, imported above)

#: volumes from this many voxels release the pool's cached blocks before the finest level,
#: when the estimate needs more than this share of the free device memory
_RELEASE_CACHED_FROM = 64 ** 3
_TIGHT_SHARE = 0.25
#: with SOR the host waits for the device's convergence flag only every this many sweeps (the
#: sweeps after convergence return at once on the device, so a small cap needs no wait at all)
_SYNC_EVERY = 32
#: the sweep cap of the coarser levels, as a multiple of ``iters`` (see _level_iters)
_COARSE_ITERS_FACTOR = 1.0


@dataclass
class Prepared:
    """The part of an estimate that the solver's parameters (alpha, beta, warps, iters, tol,
    solver, omega, precision) do not change: the normalised pyramids of both volumes
    (pre-smoothed by ``sigma``) and, per level, the smoothed spatial structure tensor
    ``J_rho`` of the fixed volume (6 channels). :func:`prepare_motion` makes it and
    :func:`solve_motion` uses it without changing it, so one can serve many solves (the
    window's live tuning re-runs only the solver when alpha changes)."""

    shape: tuple
    pyr: list
    fixed: list
    moving: list
    tensors: list
    scale: float
    rho: object
    derivative: str
    variant: str
    backend: InitVar[Backend]
    cupy_in: bool = False
    seconds: float = 0.0
    #: the estimate needs a large share of the free device memory (see :func:`_solve`)
    tight: bool = False

    def __post_init__(self, backend):
        # an attribute, not a field: whatever walks the fields (a stage cache sizing the
        # arrays) sees the arrays alone
        self.be = backend

    @property
    def device(self) -> str:
        return self.be.label


def _spatial_tensor(ops, f_l, rho, derivative):
    J = ops.tensor(f_l, None, None, derivative, parts=1)
    return ops.smooth_channels(J, rho)


def prepare_motion(
    fixed,
    moving,
    *,
    rho: float = DEFAULT_RHO,
    sigma: float = DEFAULT_SIGMA,
    levels: int = DEFAULT_LEVELS,
    derivative: str = DEFAULT_DERIVATIVE,
    variant: str = DEFAULT_VARIANT,
    spacing=None,
    normalize: bool = True,
    tensors: bool = True,
    device=None,
) -> Prepared:
    """Validate the pair, normalise it and build what :func:`solve_motion` needs (see
    :class:`Prepared`); the parameters are those of :func:`estimate_motion`. With
    ``tensors=False`` the per-level tensors are left to the solve (lower peak memory for a
    single estimate)."""
    t0 = time.perf_counter()
    be = get_backend(device)
    _alpha, _beta, rho, sigma, _tol, _omega = _check_params(1.0, 0.0, rho, sigma, levels, 1, 1, 0.0, DEFAULT_SOLVER,
                                                            variant, derivative, None, DEFAULT_PRECISION)
    cupy_in = be.is_gpu and hasattr(fixed, "__cuda_array_interface__")
    xp = be.xp
    with be.activate():
        f = _check_volume("fixed", fixed, be)
        m = _check_volume("moving", moving, be)
        if f.shape != m.shape:
            raise EchoInputError(
                f"the volumes differ in shape: fixed {tuple(f.shape)}, moving {tuple(m.shape)}; resample one onto the other's grid")
        shape = tuple(int(s) for s in f.shape)
        tight = False
        if be.is_gpu:
            free, _total = be.mem_info()
            need = memory_bytes(shape, levels=levels)
            tight = need > _TIGHT_SHARE * free
            if need > free:
                raise TooLargeError(int(np.prod(shape)), max_voxels_for_memory(free), unit="voxels",
                                    remedy="crop or downsample the volumes, or use --device cpu",
                                    where="the GPU")
        ops = _ops_for(be, variant)
        scale = 1.0
        if normalize:  # one affine map for both volumes
            sub = f[::2, ::2, ::2]
            lo, hi = (float(v) for v in xp.percentile(sub, xp.asarray([1.0, 99.0])))
            if not hi > lo:
                lo, hi = float(f.min()), float(f.max())
            scale = 1.0 / (hi - lo) if hi > lo else 1.0
            # in place (on our own float32 copies): no temporaries that would stay in the pool
            f = f.copy() if f is fixed else f
            m = m.copy() if m is moving else m
            f -= np.float32(lo)
            f *= np.float32(scale)
            m -= np.float32(lo)
            m *= np.float32(scale)
        pyr = pyramid_shapes(shape, int(levels) or auto_levels(shape, spacing), spacing)
        fixed_l, moving_l = [f], [m]
        del f, m
        for shp, fac in pyr[1:]:
            fixed_l.append(_downsample(ops, fixed_l[-1], shp, fac))
            moving_l.append(_downsample(ops, moving_l[-1], shp, fac))
        if sigma > 0:
            fixed_l = [ops.gaussian(v, sigma) for v in fixed_l]
            moving_l = [ops.gaussian(v, sigma) for v in moving_l]
        J_l = [_spatial_tensor(ops, v, rho, derivative) if tensors else None for v in fixed_l]
    return Prepared(shape, pyr, fixed_l, moving_l, J_l, scale, rho, derivative, variant, be, cupy_in,
                    time.perf_counter() - t0, tight)


def with_tensors(prepared: Prepared, *, rho: float = DEFAULT_RHO, derivative: str = DEFAULT_DERIVATIVE) -> Prepared:
    """``prepared`` with the per-level spatial structure tensors of ``rho`` and ``derivative``:
    a new :class:`Prepared` that shares the pyramids, which neither parameter changes (the
    window's live tuning makes only the tensors again when one of them changes). The same
    arrays as :func:`prepare_motion` with these parameters; ``prepared`` is left as it was."""
    t0 = time.perf_counter()
    be = prepared.be
    _a, _b, rho, _s, _t, _o = _check_params(1.0, 0.0, rho, 0.0, 0, 1, 1, 0.0, DEFAULT_SOLVER, prepared.variant,
                                            derivative, None, DEFAULT_PRECISION)
    with be.activate():
        ops = _ops_for(be, prepared.variant)
        J_l = [_spatial_tensor(ops, v, rho, derivative) for v in prepared.fixed]
    return dataclasses.replace(prepared, tensors=J_l, rho=rho, derivative=derivative, backend=be,
                               seconds=prepared.seconds + time.perf_counter() - t0)


def solve_motion(
    prepared: Prepared,
    *,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    warps: int = DEFAULT_WARPS,
    iters: int = DEFAULT_ITERS,
    tol: float = DEFAULT_TOL,
    solver: str = DEFAULT_SOLVER,
    omega: float | None = None,
    precision: str = DEFAULT_PRECISION,
    variant: str | None = None,
    check_every: int = DEFAULT_CHECK_EVERY,
    initial_flow=None,
    return_info: bool = False,
    progress=None,
):
    """The displacement field of a :class:`Prepared` pair (see :func:`estimate_motion`, whose
    solver parameters these are). ``prepared`` is left as it was. ``variant``: the GPU kernels
    of the solve (None: the one ``prepared`` was made with); the prepared pyramids and tensors
    are the same in both variants (the tensor kernels do the same float32 arithmetic), so one
    preparation serves either."""
    return _solve(prepared, alpha=alpha, beta=beta, warps=warps, iters=iters, tol=tol, solver=solver, omega=omega,
                  precision=precision, variant=variant, check_every=check_every, initial_flow=initial_flow,
                  return_info=return_info, progress=progress, own=False)


def _solve(prep: Prepared, **kw):
    try:
        return _solve_levels(prep, **kw)
    finally:
        # the cached facades' launches hold this solve's arrays: let them go, cancelled or not
        me = threading.get_ident()
        for key, ops in list(_OPS.items()):
            if key[4] == me:
                ops.release()


def _solve_levels(prep: Prepared, *, alpha, beta, warps, iters, tol, solver, omega, precision, check_every,
                  initial_flow, return_info, progress, own: bool, t_start: float | None = None,
                  variant: str | None = None):
    t_start = time.perf_counter() if t_start is None else t_start
    be = prep.be
    progress = as_progress(progress)
    variant = prep.variant if variant is None else variant
    alpha, beta, _rho, _sigma, tol, omega = _check_params(alpha, beta, 1.0, 0.0, 0, warps, iters, tol, solver,
                                                          variant, prep.derivative, omega, precision)
    check_every = max(1, int(check_every))
    xp = be.xp
    shape, pyr = prep.shape, prep.pyr
    rho, derivative = prep.rho, prep.derivative
    with be.activate():
        if initial_flow is not None:
            u_init = xp.asarray(initial_flow, dtype=xp.float32)
            if u_init.shape != (3,) + shape:
                raise EchoInputError(f"initial_flow must have shape {(3,) + shape}, got {tuple(u_init.shape)}")
            if not bool(xp.isfinite(u_init).all()):
                raise EchoInputError("initial_flow contains NaN or infinite values")
        else:
            u_init = None
        ops = _ops_for(be, variant, half=precision == "float16")
        info = MotionInfo(device=be.label, variant=variant if be.is_gpu else "cpu", scale=prep.scale)
        fixed_l, moving_l, J_l = list(prep.fixed), list(prep.moving), list(prep.tensors)
        if own:  # free each level's arrays once it is solved
            prep.fixed = prep.moving = prep.tensors = []
        init_l = [u_init]
        if u_init is not None:
            for shp, fac in pyr[1:]:
                init_l.append(_restrict_flow(ops, init_l[-1], shp, fac))
        if solver == "jacobi":
            om = jacobi_damping(alpha, beta) if omega is None else float(omega)
        else:
            om = DEFAULT_SOR_OMEGA if omega is None else float(omega)
        info.omega = om
        nlev = len(pyr)
        nvox_fine = float(np.prod(shape))
        u = None
        stats = ops.new_stats()
        done, log = ops.new_control(nlev * warps)
        work = [float(np.prod(s)) for s, _ in pyr]
        total_work = sum(work) * warps
        done_work = 0.0
        slots, caps = [], []
        for lev in range(nlev - 1, -1, -1):
            shp = pyr[lev][0]
            if u is None:
                u = init_l[lev].copy() if u_init is not None else xp.zeros((3,) + shp, dtype=xp.float32)
            else:
                u = _upsample_flow(ops, u, shp, pyr[lev + 1][1])
            f_l, m_l, J = fixed_l[lev], moving_l[lev], J_l[lev]
            fixed_l[lev] = moving_l[lev] = J_l[lev] = None
            if own and prep.tight and lev == 0 and nlev > 1 and be.is_gpu and nvox_fine >= _RELEASE_CACHED_FROM:
                # The coarser levels' arrays are free now but stay cached in CuPy's pool, where
                # blocks of their sizes cannot serve the finest level's allocations: where memory
                # is short, hand them back first, so the peak is the finest level's own need (a
                # synchronisation, and new allocations for the finest level: ~1 ms, paid only then)
                be.free_memory_pool()
            if J is None:
                J = _spatial_tensor(ops, f_l, rho, derivative)
            # K^-1 depends on J, alpha and beta only: once per level, R once per warp
            Tc = ops.system(J, alpha, beta)
            lev_info = {"shape": shp, "warps": []}
            nvox = float(np.prod(shp))
            lev_iters = _level_iters(iters, lev)
            for w in range(warps):
                progress.update(done_work / total_work, f"level {nlev - lev}/{nlev}, warp {w + 1}/{warps}")
                B = ops.tensor(f_l, m_l, u, derivative, parts=2)
                ops.smooth_channels(B, rho)
                ops.rhs(Tc, J, B, u)
                del B
                slot = len(slots)
                if solver == "jacobi":
                    u, n_sw, res = _relax_jacobi(ops, Tc, u, om, alpha, beta, lev_iters, tol, check_every, stats,
                                                 nvox, progress)
                    log_entry = (n_sw, res)
                else:
                    _relax_sor(ops, Tc, u, om, alpha, beta, lev_iters, tol, check_every, stats, done, log, slot, nvox,
                               progress)
                    log_entry = None
                slots.append(log_entry)
                caps.append(lev_iters)
                lev_info["warps"].append(slot)
                done_work += work[lev]
            del Tc, J
            info.levels.append(lev_info)
        # one read of the device's convergence log for the whole estimate
        host_log = ops.to_host(log) if any(e is None for e in slots) else None
        for lev_info in info.levels:
            ws = []
            for slot in lev_info["warps"]:
                if slots[slot] is not None:
                    n_sw, res = slots[slot]
                elif tol > 0:
                    n_sw, res = int(host_log[2 * slot]), float(host_log[2 * slot + 1])
                else:
                    n_sw, res = int(caps[slot]), float("nan")
                info.sweeps += n_sw
                ws.append({"sweeps": n_sw, "residual": res})
            lev_info["warps"] = ws
        ops.sync()
        progress.update(1.0, "done")
        out = u if prep.cupy_in else asnumpy(u)
    info.seconds = time.perf_counter() - t_start
    if not prep.cupy_in:
        out = np.ascontiguousarray(out, dtype=np.float32)
    return (out, info) if return_info else out


def _level_iters(iters: int, lev: int) -> int:
    """The sweep cap of a warp on pyramid level ``lev`` (0: the finest): ``iters`` there, and
    ``_COARSE_ITERS_FACTOR`` times that on the coarser levels, where a sweep costs 8x less."""
    return int(iters) if lev == 0 else max(1, int(round(int(iters) * _COARSE_ITERS_FACTOR)))


def _relax_sor(ops, Tc, u, om, alpha, beta, iters, tol, check_every, stats, done, log, slot, nvox, progress):
    """One warp's SOR sweeps, queued without waiting: the device stops them (``done``) once a
    check finds the residual below ``tol``; the host looks every ``_SYNC_EVERY`` sweeps. On a
    GPU, small levels run them all in one launch (the same arithmetic)."""
    ops.reset(done)
    if getattr(ops, "persistent", True) and hasattr(ops, "relax_sor") and ops.relax_sor(
            Tc, u, om, alpha, beta, int(iters), check_every, tol, nvox, stats, done, log, slot):
        progress.check()
        return
    whole = getattr(ops, "sor_sweep", None)   # the GPU's: one sweep as a wavefront on large levels
    for it in range(int(iters)):
        check = tol > 0 and ((it + 1) % check_every == 0 or it + 1 == int(iters))
        st = stats if check else None
        if whole is not None:
            whole(Tc, u, om, alpha, beta, st, done)
        else:
            for c in range(4):
                ops.sweep(Tc, u, u, c, om, alpha, beta, st, done)
        if check:
            ops.check(stats, done, log, slot, it + 1, nvox, tol)
            if (it + 1) % _SYNC_EVERY == 0 and it + 1 < int(iters) and ops.is_done(done):
                break
        if (it & 7) == 7:
            progress.check()


def _relax_jacobi(ops, Tc, u, om, alpha, beta, iters, tol, check_every, stats, nvox, progress):
    """One warp's Jacobi sweeps (two buffers; the host reads each residual check)."""
    xp = ops.xp
    a, b = u, xp.empty_like(u)
    res = float("nan")
    n_sw = 0
    for it in range(int(iters)):
        check = (it + 1) % check_every == 0 or it + 1 == int(iters)
        st = stats if check and tol > 0 else None
        ops.sweep(Tc, a, b, -1, om, alpha, beta, st)
        a, b = b, a
        n_sw += 1
        if st is not None:
            res = math.sqrt(max(ops.read_stats(stats), 0.0) / nvox)
            if not math.isfinite(res) or res < tol:
                break
        if (it & 7) == 7:
            progress.check()
    return a, n_sw, res


def estimate_motion(
    fixed,
    moving,
    *,
    alpha: float = DEFAULT_ALPHA,
    beta: float = DEFAULT_BETA,
    rho: float = DEFAULT_RHO,
    sigma: float = DEFAULT_SIGMA,
    levels: int = DEFAULT_LEVELS,
    warps: int = DEFAULT_WARPS,
    iters: int = DEFAULT_ITERS,
    tol: float = DEFAULT_TOL,
    solver: str = DEFAULT_SOLVER,
    omega: float | None = None,
    variant: str = DEFAULT_VARIANT,
    derivative: str = DEFAULT_DERIVATIVE,
    precision: str = DEFAULT_PRECISION,
    check_every: int = DEFAULT_CHECK_EVERY,
    spacing=None,
    initial_flow=None,
    normalize: bool = True,
    return_info: bool = False,
    device=None,
    progress=None,
):
    """Displacement field from ``fixed`` to ``moving`` (scikit-image's convention).

    Parameters
    ----------
    fixed, moving : array, (Z, Y, X)
        The two volumes (any real dtype; NumPy or, on the GPU, CuPy arrays).
    alpha : float
        Smoothness weight (intensities are normalised to [0, 1] by the fixed volume's 1st and
        99th percentiles unless ``normalize=False``).
    beta : float
        Weight of ``(div u)^2``, the volume-preservation term (0: plain CLG).
    rho : float
        Standard deviation (voxels of each level) of the Gaussian that integrates the tensor.
    sigma : float
        Pre-smoothing of both volumes on each level (voxels; 0: none).
    levels : int
        Pyramid levels (1: no pyramid; 0: :func:`auto_levels`); fewer are used when the volume
        is small.
    warps : int
        Outer warping iterations per level.
    iters : int
        Cap on relaxation sweeps per warp.
    tol : float
        Stop a warp's relaxation once the RMS preconditioned residual (voxels) is below this.
    solver : {"sor", "jacobi"}
    omega : float, optional
        Relaxation factor; default ``DEFAULT_SOR_OMEGA`` for SOR and :func:`jacobi_damping`
        for Jacobi.
    variant : {"cache", "smem"}
        GPU kernel variant (ignored on the CPU).
    derivative : {"central", "forward"}
        Spatial derivative of the fixed volume (the paper uses forward differences).
    precision : {"float32", "float16"}
        Storage of the per-voxel system (inverse matrix and right-hand side) that every sweep
        reads: float16 halves those bytes (the arithmetic stays float32).
    check_every : int
        Sweeps between residual checks.
    spacing : 3 floats, optional
        Voxel size (z, y, x); only decides which axes the pyramid halves.
    initial_flow : array (3, Z, Y, X), optional
        Start from this field (voxels) instead of zero; the pyramid then starts at the finest
        level that can still represent it (its restriction is used on coarser levels).
    return_info : bool
        Also return a :class:`MotionInfo`.
    device : str or Backend, optional
    progress : callable or Progress, optional

    Returns
    -------
    u : ndarray, (3, Z, Y, X) float32
        On the GPU, a CuPy array when ``fixed`` was one, else NumPy.
    info : MotionInfo
        Only with ``return_info=True``.
    """
    t_start = time.perf_counter()
    _check_params(alpha, beta, rho, sigma, levels, warps, iters, tol, solver, variant, derivative, omega, precision)
    prep = prepare_motion(fixed, moving, rho=rho, sigma=sigma, levels=levels, derivative=derivative, variant=variant,
                          spacing=spacing, normalize=normalize, tensors=False, device=device)
    return _solve(prep, alpha=alpha, beta=beta, warps=warps, iters=iters, tol=tol, solver=solver, omega=omega,
                  precision=precision, check_every=check_every, initial_flow=initial_flow, return_info=return_info,
                  progress=progress, own=True, t_start=t_start)
