"""CuPy drivers of the echo motion kernels (``gpu_kernels/cuda/echo_*.cu``).

:class:`GpuOps` has the methods of the CPU facade in :mod:`gpu_kernels.echo.motion` and
computes the same functions as :mod:`gpu_kernels.echo._cpu`. Every scalar goes to a kernel
with its exact C type (``np.int32``, ``np.int64``, ``np.float32``).
"""

from __future__ import annotations

import threading

import numpy as np

from gpu_kernels.backend import kernel, module, set_max_dynamic_smem, sm_count
from gpu_kernels.echo import _cpu

__all__ = ["GpuOps", "MAXW", "NSETS"]

TX, TY = 32, 8
MAXW = 2 * _cpu.MAX_RADIUS + 1
NSETS = 8
#: lines longer than this are filtered by cupyx.scipy.ndimage (shared memory would not hold them)
MAX_LINE = 1024
#: consecutive outputs per thread of the Gaussian passes (echo_gauss_x/_line, ECHO_LB)
LINE_BLOCK = 4
#: levels up to this many voxels run a warp's SOR sweeps in one launch (echo_sor_persistent;
#: above, a pass is long enough for its launch not to matter, and the L1 cache that the
#: persistent kernel gives up serves the neighbour reads). Measured on an H100
#: (benchmarks/results/echo_issue24.md), same field to the bit: 128^3 pair 13.5 ms with no
#: level in one launch, 9.5 ms up to 64^3, 15.7 ms up to 128^3; 256^3 44.3 / 40.0 / 42.9 ms
PERSIST_MAX_VOXELS = 64 ** 3
#: ... and sweep caps up to this (a longer kernel could not be cancelled between sweeps)
PERSIST_MAX_ITERS = 64
#: levels from this many voxels run each SOR sweep as a wavefront along z (echo_sor_wave:
#: the four colour passes in one sweep of launches, each colour WAVE_D + 1 planes behind the
#: one before, so a plane's field is read from L2 by the later colours), the same field to the
#: bit as the four passes; below, the field stays in L2 between passes anyway
WAVE_MIN_VOXELS = 160 ** 3
#: planes of one colour per launch in the wavefront (0: never use it), and planes each block
#: of it marches through (divides WAVE_D)
WAVE_D = 0
WAVE_M = 1
#: SOR passes of the cache variant march each thread through consecutive planes
#: (echo_sor_march: the z neighbours from L1), with about this many blocks per multiprocessor
#: (0: one plane per thread, echo_sor_cache); the same field to the bit either way
MARCH_BLOCKS_PER_SM = 0
#: the sweep kernels' __launch_bounds__ minimum of resident blocks (256 threads) per multiprocessor
#: (ECHO_MINB: the compiler keeps registers to 65536 / (256 x this) a thread)
SOR_MIN_BLOCKS = 3

_slots_lock = threading.Lock()
_slots: dict[int, dict] = {}


def _i32(v):
    return np.int32(v)


def _i64(v):
    return np.int64(v)


def _f32(v):
    return np.float32(v)


def _cdiv(a, b):
    return -(-int(a) // int(b))


def _function_ptr(k) -> int:
    """The CUfunction handle of a kernel from :func:`gpu_kernels.backend.kernel` (a
    ``cupy.RawKernel``, whose ``kernel`` is the loaded function, or a module function)."""
    fn = getattr(k, "kernel", k)
    return int(fn.ptr)


class GpuOps:
    """The estimator's building blocks on one CUDA device, in one kernel variant."""

    def __init__(self, be, variant: str = "cache", solve_defines: dict | None = None, half: bool = False):
        self.be = be
        self.xp = be.xp
        self.variant = variant
        self.half = bool(half)
        #: storage of the per-voxel system (Kinv and R): float32, or float16 with ``half``
        self.sys_dtype = self.xp.float16 if self.half else self.xp.float32
        defs = {"ECHO_TX": TX, "ECHO_TY": TY}
        fdefs = dict(defs, ECHO_MAXW=MAXW, ECHO_NSETS=NSETS, ECHO_LB=LINE_BLOCK)
        # solve_defines: kernel-tuning experiments (e.g. {"ECHO_MINB": 4}), benchmarks only
        sdefs = dict(defs, ECHO_MINB=int(SOR_MIN_BLOCKS))
        sdefs.update(solve_defines or {})
        if self.half:
            sdefs["ECHO_HALF"] = 1
        self.m_filter = module(be, "echo_filter.cu", fdefs)  # its constant memory holds the filter taps
        self.k_tensor = kernel(be, "echo_tensor.cu", f"echo_tensor_{variant}", defs)
        self.k_gx = kernel(be, "echo_filter.cu", "echo_gauss_x", fdefs)
        self.k_gl = kernel(be, "echo_filter.cu", "echo_gauss_line", fdefs)
        self.k_resample = kernel(be, "echo_filter.cu", "echo_resample", fdefs)
        self.k_finish = kernel(be, "echo_solve.cu", "echo_finish", sdefs)
        self.k_jacobi = kernel(be, "echo_solve.cu", f"echo_jacobi_{variant}", sdefs)
        self.k_sor = kernel(be, "echo_solve.cu", f"echo_sor_{variant}", sdefs)
        self.k_wave = kernel(be, "echo_solve.cu", "echo_sor_wave", sdefs)
        self.k_march = kernel(be, "echo_solve.cu", "echo_sor_march", sdefs) if variant == "cache" else None
        self.k_check = kernel(be, "echo_solve.cu", "echo_check", sdefs)
        # one launch per warp (grid-wide barriers), on real devices only: an emulator runs the
        # blocks one after another, and a block waiting at a grid barrier would wait forever
        self.k_persist = None if callable(getattr(be, "load_module", None)) else \
            kernel(be, "echo_solve.cu", "echo_sor_persistent", sdefs)
        self._bar = None
        self._resident = None
        self.sms = sm_count(be)
        self._dummy = None
        self._plans: dict = {}

    # -- helpers ---------------------------------------------------------------
    def _zchunk(self, Z, tiles):
        target = _cdiv(4 * self.sms, max(tiles, 1))
        return int(min(32, max(2, _cdiv(Z, target))))

    def _weights_slot(self, sigma: float) -> tuple[int, int]:
        """Slot of the 1-D Gaussian for ``sigma`` in constant memory, and its radius."""
        key = (round(float(sigma), 6),)
        with _slots_lock:
            table = _slots.setdefault(id(self.m_filter), {"map": {}, "next": 0, "radius": {}})
            slot = table["map"].get(key)
            if slot is not None:   # the taps are there already (the usual case: no NumPy work)
                return slot, table["radius"][key]
            w = _cpu.gaussian_kernel1d(sigma)
            r = (len(w) - 1) // 2
            table.setdefault("radius", {})[key] = r
            if slot is None:
                slot = table["next"] % NSETS
                if table["next"] >= NSETS:
                    # reusing a slot: kernels queued with its old taps must finish first
                    self.xp.cuda.get_current_stream().synchronize()
                    table["map"] = {k: v for k, v in table["map"].items() if v != slot}
                table["next"] += 1
                buf = np.zeros(MAXW, dtype=np.float32)
                buf[: len(w)] = w
                src = self.xp.asarray(buf)
                dst = self.m_filter.get_global("c_gauss").ptr + slot * MAXW * 4
                # device-to-device copy into the constant bank, ordered with the kernels
                self.xp.cuda.runtime.memcpyAsync(dst, src.data.ptr, buf.nbytes, 3,
                                                 self.xp.cuda.get_current_stream().ptr)
                table.setdefault("keep", []).append(src)
                del table["keep"][:-NSETS]
                table["map"][key] = slot
        return slot, r

    def _smooth_axis(self, data, C, shape, ax, sigma):
        """In-place 1-D Gaussian along ``ax`` of C consecutive volumes of ``shape`` in ``data``."""
        Z, Y, X = shape
        N = Z * Y * X
        L = shape[ax]
        if L == 1 or sigma <= 0:
            return
        if L > MAX_LINE:
            from cupyx.scipy import ndimage as cndi

            w = self.xp.asarray(_cpu.gaussian_kernel1d(sigma))
            v = data.reshape((C,) + tuple(shape))
            for c in range(C):
                v[c] = cndi.correlate1d(v[c], w, axis=ax, mode="nearest")
            return
        slot, r = self._weights_slot(sigma)
        if ax == 2:
            rows = C * Z * Y
            W = X + 2 * r + LINE_BLOCK - 1                     # see echo_gauss_x: a padded row
            smem = TY * (W + W // 32 + 1) * 4
            set_max_dynamic_smem(self.k_gx, smem)
            self.k_gx((_cdiv(rows, TY),), (TX, TY), (data, _i64(rows), _i32(X), _i32(slot), _i32(r)),
                      shared_mem=smem)
        else:
            smem = (L + 2 * r + LINE_BLOCK - 1) * 32 * 4   # see echo_gauss_line: the windows of the last outputs
            set_max_dynamic_smem(self.k_gl, smem)
            if ax == 1:
                grid = (_cdiv(X, 32), Z, C)
                stride, strideB = X, Y * X
            else:
                grid = (_cdiv(X, 32), Y, C)
                stride, strideB = Y * X, X
            self.k_gl(grid, (32, TY), (data, _i64(N), _i32(L), _i64(stride), _i64(strideB), _i32(X),
                                         _i32(slot), _i32(r)), shared_mem=smem)

    # -- the facade ----------------------------------------------------------------
    def gaussian(self, v, sigma):
        sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (3,))
        out = self.xp.array(v, dtype=self.xp.float32, copy=True, order="C")
        for ax in (0, 1, 2):
            if sig[ax] > 0:
                self._smooth_axis(out, 1, out.shape, ax, float(sig[ax]))
        return out

    def smooth_channels(self, T, rho):
        sig = np.broadcast_to(np.asarray(rho, dtype=np.float64), (3,))
        C = T.shape[0]
        for ax in (0, 1, 2):
            if sig[ax] > 0:
                self._smooth_axis(T, C, T.shape[1:], ax, float(sig[ax]))
        return T

    def resample(self, v, shape, scale, offset, u=None, mult=1.0):
        xp = self.xp
        v = xp.ascontiguousarray(v, dtype=xp.float32)
        Zo, Yo, Xo = (int(s) for s in shape)
        out = xp.empty((Zo, Yo, Xo), dtype=xp.float32)
        Zi, Yi, Xi = v.shape
        if u is None:
            if self._dummy is None:
                self._dummy = xp.zeros(1, dtype=xp.float32)
            uu, has_u = self._dummy, 0
        else:
            uu, has_u = xp.ascontiguousarray(u, dtype=xp.float32), 1
        self.k_resample((_cdiv(Xo, TX), _cdiv(Yo, TY), Zo), (TX, TY),
                        (v, _i32(Zi), _i32(Yi), _i32(Xi), out, _i32(Zo), _i32(Yo), _i32(Xo),
                         _f32(scale[0]), _f32(scale[1]), _f32(scale[2]),
                         _f32(offset[0]), _f32(offset[1]), _f32(offset[2]), uu, _i32(has_u), _f32(mult)))
        return out

    def warp(self, v, u):
        if u is None:
            return self.xp.array(v, dtype=self.xp.float32, copy=True)
        return self.resample(v, v.shape, (1.0, 1.0, 1.0), (0.0, 0.0, 0.0), u=u)

    def tensor(self, f, m, u0, kind, parts=3):
        xp = self.xp
        Z, Y, X = f.shape
        T = xp.empty(((6 if parts & 1 else 0) + (3 if parts & 2 else 0), Z, Y, X), dtype=xp.float32)
        if u0 is None or not parts & 2:
            u0 = self._zeros(3 * Z * Y * X) if parts & 2 else self._zeros(1)
        if m is None:
            m = f
        central = _i32(1 if kind == "central" else 0)
        args = (f, m, u0, T, _i32(Z), _i32(Y), _i32(X), central, _i32(parts))
        if self.variant == "smem":
            gx, gy = _cdiv(X, TX), _cdiv(Y, TY)
            zch = self._zchunk(Z, gx * gy)
            self.k_tensor((gx, gy, _cdiv(Z, zch)), (TX, TY), args + (_i32(zch),))
        else:
            self.k_tensor((_cdiv(X, TX), _cdiv(Y, TY), Z), (TX, TY), args)
        return T

    def _zeros(self, n):
        z = getattr(self, "_zbuf", None)
        if z is None or z.size < n:
            z = self._zbuf = self.xp.zeros(max(int(n), 1), dtype=self.xp.float32)
        return z

    def _finish(self, J, B, u0, Tc, alpha, beta, mode):
        _, Z, Y, X = J.shape
        Yh, Xh = (Y + 1) // 2, (X + 1) // 2
        has_u = u0 is not None and mode & 2
        self.k_finish((_cdiv(X, TX), _cdiv(Y, TY), Z), (TX, TY),
                      (J, J if B is None else B, u0 if has_u else self._zeros(1), Tc, _i32(Z), _i32(Y), _i32(X),
                       _i32(Yh), _i32(Xh), _f32(alpha), _f32(beta), _i32(mode), _i32(1 if has_u else 0)))
        return Tc

    def new_system(self, shape):
        Z, Y, X = shape
        return self.xp.empty((9, 4, Z, (Y + 1) // 2, (X + 1) // 2), dtype=self.sys_dtype)

    def finish(self, T, u0, alpha, beta):
        """The whole system from the 9-channel tensor (Kinv and R in one pass)."""
        return self._finish(T[:6], T[6:], u0, self.new_system(T.shape[1:]), alpha, beta, 3)

    def system(self, J, alpha, beta):
        """A new system with Kinv from the smoothed spatial tensor ``J`` (R not yet written)."""
        self._plans.clear()   # the launches of the last system's sweeps: let its arrays go
        return self._finish(J, None, None, self.new_system(J.shape[1:]), alpha, beta, 1)

    def rhs(self, Tc, J, B, u0):
        """Write R = -(b - J u0) into the system ``Tc``."""
        return self._finish(J, B, u0, Tc, 0.0, 0.0, 2)

    def new_stats(self):
        return self.xp.zeros(1, dtype=self.xp.float32)

    def new_control(self, n_slots):
        """The convergence flag and the log of (sweeps, residual) per warp slot."""
        log = self.xp.full(2 * max(int(n_slots), 1), np.nan, dtype=self.xp.float32)
        return self.xp.zeros(1, dtype=self.xp.int32), log

    def reset(self, done):
        done.fill(0)

    def check(self, stats, done, log, slot, sweeps, nvox, tol):
        self.k_check((1,), (1,), (stats, done, log, _i32(slot), _i32(sweeps), _f32(1.0 / nvox), _f32(tol)))

    def is_done(self, done) -> bool:
        return bool(int(done.get()[0]))

    def sweep(self, Tc, src, dst, colour, omega, alpha, beta, stats=None, done=None):
        _, Z, Y, X = src.shape
        Yh, Xh = (Y + 1) // 2, (X + 1) // 2
        if stats is None:
            st, do = self._zeros(1), 0
        else:
            st, do = stats, 1
        common = (_i32(Z), _i32(Y), _i32(X), _i32(Yh), _i32(Xh))
        if colour < 0:
            args = (Tc, src, dst) + common + (_f32(omega), _f32(alpha), _f32(beta), st, _i32(do))
            if self.variant == "smem":
                gx, gy = _cdiv(X, TX), _cdiv(Y, TY)
                zch = self._zchunk(Z, gx * gy)
                self.k_jacobi((gx, gy, _cdiv(Z, zch)), (TX, TY), args + (_i32(zch),))
            else:
                self.k_jacobi((_cdiv(X, TX), _cdiv(Y, TY), Z), (TX, TY), args)
        else:
            if done is None:
                if getattr(self, "_not_done", None) is None:
                    self._not_done = self.xp.zeros(1, dtype=self.xp.int32)
                done = self._not_done
            # the launch of one colour pass, built once per system and field (a warp queues
            # dozens of them: the host's cost per launch matters at 128^3)
            key = (id(Tc), id(src), id(st), id(done), colour, float(omega), float(alpha), float(beta),
                   MARCH_BLOCKS_PER_SM)
            plan = self._plans.get(key)
            if plan is None:
                args = (Tc, src) + common + (_i32(colour), _f32(omega), _f32(alpha), _f32(beta), st, _i32(do), done)
                if self.variant == "smem":
                    gx, gy = _cdiv(X, 2 * TX), _cdiv(Y, 2 * TY)
                    zch = self._zchunk(Z, gx * gy)
                    plan = ((gx, gy, _cdiv(Z, zch)), (TX, TY), args + (_i32(zch),))
                elif MARCH_BLOCKS_PER_SM > 0:
                    gx, gy = _cdiv(Xh, TX), _cdiv(Yh, TY)
                    zch = int(min(32, max(1, _cdiv(Z, _cdiv(MARCH_BLOCKS_PER_SM * self.sms, gx * gy)))))
                    plan = ((gx, gy, _cdiv(Z, zch)), (TX, TY), args + (_i32(zch),), self.k_march)
                else:
                    plan = ((_cdiv(Xh, TX), _cdiv(Yh, TY), Z), (TX, TY), args)
                if len(self._plans) >= 16:   # the arrays' ids stay valid while the plan holds them
                    self._plans.clear()
                self._plans[key] = plan
            if len(plan) == 4:
                plan[3](*plan[:3])
            else:
                self.k_sor(*plan)

    def sor_sweep(self, Tc, u, omega, alpha, beta, stats=None, done=None):
        """One whole SOR sweep in place (the four colours): as a wavefront along z on levels of
        :data:`WAVE_MIN_VOXELS` voxels and more, else four passes."""
        _, Z, Y, X = u.shape
        if WAVE_D > 0 and Z * Y * X >= WAVE_MIN_VOXELS and Z > 1:
            self._sweep_wave(Tc, u, omega, alpha, beta, stats, done, int(WAVE_D), march=int(WAVE_M))
            return
        for c in range(4):
            self.sweep(Tc, u, u, c, omega, alpha, beta, stats, done)

    def _sweep_wave(self, Tc, u, omega, alpha, beta, stats, done, D, lag=None, march=1):
        """The launches of one wavefront sweep (``lag``: planes between colours, D + 1; a
        smaller one is wrong and exists for the test that shows it)."""
        _, Z, Y, X = u.shape
        Yh, Xh = (Y + 1) // 2, (X + 1) // 2
        st, do = (self._zeros(1), 0) if stats is None else (stats, 1)
        if done is None:
            if getattr(self, "_not_done", None) is None:
                self._not_done = self.xp.zeros(1, dtype=self.xp.int32)
            done = self._not_done
        L = D + 1 if lag is None else int(lag)
        M = march if march >= 1 and D % march == 0 else 1
        key = ("wave", id(Tc), id(u), id(st), id(done), float(omega), float(alpha), float(beta), D, L, M)
        plan = self._plans.get(key)
        if plan is None:
            gx, gy = _cdiv(Xh, TX), _cdiv(Yh, TY)
            plan = []
            for t in range((Z - 1 + 3 * L) // D + 1):
                # the stages with a plane in the volume at step t: [tD - sL, tD - sL + D) meets [0, Z)
                s_lo = max(0, _cdiv(t * D - Z + 1, L))
                s_hi = min(3, (t * D + D - 1) // L)
                if s_lo > s_hi:
                    continue
                args = (Tc, u, _i32(Z), _i32(Y), _i32(X), _i32(Yh), _i32(Xh), _i32(t), _i32(D), _i32(L), _i32(s_lo),
                        _i32(M), _f32(omega), _f32(alpha), _f32(beta), st, _i32(do), done)
                plan.append(((gx, gy, (s_hi - s_lo + 1) * (D // M)), (TX, TY), args))
            if len(self._plans) >= 16:
                self._plans.clear()
            self._plans[key] = plan
        k = self.k_wave
        for grid, block, args in plan:
            k(grid, block, args)

    def relax_sor(self, Tc, u, omega, alpha, beta, iters, check_every, tol, nvox, stats, done, log, slot) -> bool:
        """A warp's SOR sweeps and checks in one launch (:data:`PERSIST_MAX_VOXELS` voxels at
        most, a cap of :data:`PERSIST_MAX_ITERS`); False where the caller must queue them."""
        _, Z, Y, X = u.shape
        if self.k_persist is None or Z * Y * X > PERSIST_MAX_VOXELS or iters > PERSIST_MAX_ITERS:
            return False
        Yh, Xh = (Y + 1) // 2, (X + 1) // 2
        if self._bar is None:
            self._bar = self.xp.zeros(2, dtype=self.xp.uint32)
        resident = self.persist_resident()
        if resident < 1:
            return False
        blocks = int(min(resident, _cdiv(Z * Yh * Xh, 256)))
        self.k_persist((blocks,), (256,), (Tc, u, _i32(Z), _i32(Y), _i32(X), _i32(Yh), _i32(Xh), _f32(omega),
                                           _f32(alpha), _f32(beta), _i32(iters), _i32(check_every), _f32(tol),
                                           _f32(1.0 / nvox), stats, done, log, _i32(slot), self._bar))
        return True

    def persist_resident(self) -> int:
        """How many blocks of echo_sor_persistent can be resident at once on this device (at
        most 2 per multiprocessor, which its launch bounds ask for): its grid-wide barriers
        need every block of the launch resident together, or the blocks that run would wait
        forever for those that cannot start. Asked once, from the driver's occupancy
        calculator for the compiled kernel (its registers and shared memory); 0 (the caller
        then queues the passes) where the calculator cannot be asked."""
        if self._resident is None:
            try:
                from cupy.cuda import driver

                per_sm = int(driver.occupancyMaxActiveBlocksPerMultiprocessor(_function_ptr(self.k_persist), 256, 0))
            except Exception:  # noqa: BLE001 - no calculator: from the kernel's registers (no shared memory)
                try:
                    regs = -(-int(self.k_persist.num_regs) // 8) * 8
                    per_sm = min(2048 // 256, 65536 // max(regs * 256, 1))
                except Exception:  # noqa: BLE001 - nothing known: do not risk a launch that cannot finish
                    per_sm = 0
            self._resident = int(min(2, max(per_sm, 0)) * self.sms)
        return self._resident

    def release(self):
        """Forget the launches built for the last system (they hold its arrays)."""
        self._plans.clear()

    def read_stats(self, stats) -> float:
        s = float(stats.get()[0])
        stats.fill(0)
        return s

    def to_host(self, a):
        return self.xp.asnumpy(a)

    def sync(self):
        self.xp.cuda.get_current_stream().synchronize()


def bytes_per_sweep(shape, solver: str, half: bool = False) -> int:
    """Fewest bytes one sweep must move through device memory (each value once)."""
    n = int(np.prod(shape))
    Z, Y, X = shape
    nc = 4 * Z * ((Y + 1) // 2) * ((X + 1) // 2)
    # the system (9 values per voxel, colour layout) read once; the field read and written once
    return int(9 * (2 if half else 4) * nc + 2 * 3 * 4 * n) if solver in ("sor", "jacobi") else 0


__all__.append("bytes_per_sweep")
