"""Variational refinement: TV-L1 optical flow, seeded by block matching or Lucas-Kanade.

The refinement the paper names as its next step (section 6.1): a smoothness constraint and a
quality-weighted Gaussian smoothing of the local methods' flow. ``cuda/flow_tvl1.cu``:

1. The seed (``"bm"``, ``"lk"`` or ``"none"``) is computed and smoothed with a Gaussian
   weighted by its quality map (normalised convolution, :func:`quality_weighted_smoothing`),
   so unreliable vectors borrow from reliable neighbours; it starts the coarsest level.
2. Coarse to fine over a Gaussian pyramid (``levels``), ``warps`` times per level: I2 and its
   gradient are sampled at ``x + f0``; the data term is linearised about ``f0`` with the mean
   of I1's and the warped I2's gradients (symmetric, more accurate than either); then
   ``iters`` iterations of Zach, Pock & Bischof's duality-based TV-L1 (thresholding step,
   primal update ``f = v + theta div p``, dual update of ``p``); then a 5 x 5 median of the
   flow (Wedel et al.). Sample points outside the image, and pixels outside the mask, have no
   data term.
3. The quality map is the local normalised cross-correlation of I1 and the warped I2
   (``conf_window`` pixels, clipped to 0..1) divided by ``1 + G|grad f| / kappa``: low where
   the flow fails to align the images (occlusions, mismatches) and at motion boundaries,
   where a smoothed flow's errors gather. On the Middlebury training pairs it ranks errors
   better than a forward-backward check (benchmarks/results/flow.md), in one pass.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow import tvl1_refine
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> img1, img2, gt, valid = synthetic_pair("vortex", size=(96, 128), magnitude=4.0)
>>> res = tvl1_refine(img1, img2, levels=3, iters=10, device="cpu")
>>> err = np.hypot(res.u - gt[..., 0], res.v - gt[..., 1])[valid].mean()
>>> bool(err < 0.3)
True
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import Backend, get_backend, set_max_dynamic_smem
from gpu_kernels.jobs import as_progress
from gpu_kernels.ops import _gpu
from gpu_kernels.ops.color import _gray
from gpu_kernels.ops.filters import _correlate_axis, gaussian_kernel1d
from gpu_kernels.ops.pyramid import _pyr_down, _pyr_up, pyramid_levels
from gpu_kernels.ops.warp import _bilinear_np, _bilinear_take, _inside_np

from . import _numba, _plan
from ._common import (
    FlowInputError,
    FlowResult,
    check_float,
    check_int,
    check_pair,
    prepare_mask,
    prepare_pair,
)

__all__ = [
    "SEEDS",
    "DEFAULT_SEED",
    "DEFAULT_TV_LEVELS",
    "DEFAULT_WARPS",
    "DEFAULT_TV_ITERS",
    "DEFAULT_LAMBDA",
    "DEFAULT_THETA",
    "DEFAULT_TAU",
    "DEFAULT_MEDIAN",
    "DEFAULT_SEED_SIGMA",
    "DEFAULT_CONF_WINDOW",
    "tvl1_refine",
    "quality_weighted_smoothing",
    "ncc_confidence",
]

from gpu_kernels.flow import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

SEEDS = _d.TV_SEEDS
#: what starts the refinement
DEFAULT_SEED = _d.TV_SEED
DEFAULT_TV_LEVELS = 5
#: warps per level
DEFAULT_WARPS = 5
#: TV-L1 iterations per warp
DEFAULT_TV_ITERS = 10
#: weight of the data term (intensities 0..1)
DEFAULT_LAMBDA = _d.TV_LAMBDA
#: coupling of the two TV-L1 sub-problems
DEFAULT_THETA = 0.3
#: dual step (<= 0.25 for convergence)
DEFAULT_TAU = 0.25
#: side of the median filter of the flow after each warp (5, 3, or 0 for none)
DEFAULT_MEDIAN = _d.TV_MEDIAN
#: Gaussian sigma (pixels) of the quality-weighted smoothing of the seed
DEFAULT_SEED_SIGMA = 4.0
#: window of the local-NCC quality map (odd, pixels)
DEFAULT_CONF_WINDOW = 7
#: Gaussian sigma (pixels) of the flow-gradient magnitude in the quality map
DEFAULT_CONF_SIGMA = 2.0
#: flow-gradient magnitude (pixels per pixel) at which the quality map is halved
DEFAULT_CONF_KAPPA = 0.1

_SRC = "flow_tvl1.cu"


# ----------------------------------------------------------------------------- helpers
def _blur2(be: Backend, a, sigma: float):
    taps = gaussian_kernel1d(sigma)
    return _correlate_axis(be, _correlate_axis(be, a, taps, a.ndim - 1), taps, a.ndim - 2)


def _qws(be: Backend, u, v, q, sigma: float):
    """Normalised convolution of (u, v) with weights q."""
    xp = be.xp
    stack = xp.stack([q * u, q * v, q])
    s = _blur2(be, stack, sigma)
    den = s[2] + xp.float32(1e-6)
    return xp.ascontiguousarray(s[0] / den), xp.ascontiguousarray(s[1] / den)


def quality_weighted_smoothing(u, v, quality, *, sigma: float = DEFAULT_SEED_SIGMA, device=None):
    """Gaussian smoothing of a flow weighted by its quality (normalised convolution).

    ``out = G * (q f) / (G * q)``: each vector becomes the quality-weighted mean of its
    neighbourhood, so a vector of low quality is replaced by its reliable neighbours'.

    Example
    -------
    >>> import numpy as np
    >>> u = np.ones((5, 5), np.float32); u[2, 2] = 50      # one outlier ...
    >>> q = np.ones((5, 5), np.float32); q[2, 2] = 0       # ... with quality 0
    >>> su, sv = quality_weighted_smoothing(u, u * 0, q, sigma=1.0, device="cpu")
    >>> round(float(su[2, 2]), 3)
    1.0
    """
    be = get_backend(device)
    sigma = check_float("sigma", sigma, 0.0, lo_open=True)
    with be.activate():
        xp = be.xp
        a = [xp.ascontiguousarray(xp.asarray(x, dtype=xp.float32)) if be.is_gpu else
             np.ascontiguousarray(be.asnumpy(x), dtype=np.float32) for x in (u, v, quality)]
        if a[0].shape != a[1].shape or a[0].shape != a[2].shape or a[0].ndim != 2:
            raise FlowInputError("u, v and quality must be 2-D arrays of one shape")
        return _qws(be, a[0], a[1], a[2], sigma)


def _grad_np(img):
    from .lucas_kanade import _grad_np as g

    return g(img)


def _div_np(px, py):
    d = px + py
    d[:, 1:] -= px[:, :-1]
    d[1:] -= py[:-1]
    return d


def _fgrad_np(u):
    ux = np.zeros_like(u)
    uy = np.zeros_like(u)
    ux[:, :-1] = u[:, 1:] - u[:, :-1]
    uy[:-1] = u[1:] - u[:-1]
    return ux, uy


def _median_np(a, size: int):
    """Median of each (H, W) plane over size x size, edges replicated (scipy's mode "nearest").

    OpenCV's float32 median (3 and 5) gives the same values as ``scipy.ndimage.median_filter``
    some 300x faster (0.8 s against 2.3 ms for a 640 x 480 flow on 2 cores).
    """
    try:
        import cv2
    except ImportError:  # pragma: no cover - OpenCV is a dependency
        from scipy import ndimage

        return ndimage.median_filter(a, size=(1, size, size), mode="nearest").astype(np.float32)
    return np.stack([cv2.medianBlur(np.ascontiguousarray(x, dtype=np.float32), size) for x in a])


# ----------------------------------------------------------------------------- one level
def _warp_np(I1, I2s, u, v, w, i1g=None, occ: float = 0.0):
    H, W = I1.shape
    xs = np.arange(W, dtype=np.float32)[None, :] + u
    ys = np.arange(H, dtype=np.float32)[:, None] + v
    inside = _inside_np(xs, ys, H, W) > 0
    s = _bilinear_take(I2s, xs, ys)
    i1x, i1y = _grad_np(I1) if i1g is None else i1g
    gx = np.float32(0.5) * (s[1] + i1x)
    gy = np.float32(0.5) * (s[2] + i1y)
    r0 = s[0] - I1
    r = r0 - gx * u - gy * v
    if occ > 0:
        z = r0 * np.float32(1.0 / occ)
        w = (np.float32(1) if w is None else w) / (np.float32(1) + z * z)
    if w is not None:
        sw = np.sqrt(w)
        gx, gy, r = gx * sw, gy * sw, r * sw
    z = np.float32(0)
    return np.stack([np.where(inside, gx, z), np.where(inside, gy, z)]), np.where(inside, r, z).astype(np.float32)


def _iterate_np(u, v, p, gxy, rc, lt, theta, taut, iters, ginv=None):
    """``iters`` TV-L1 iterations in place (the kernels tv_primal / tv_dual, with preallocated
    buffers: the thresholding step is ``-clip(rho / |g|^2, -lt, lt) g``)."""
    gx, gy = gxy
    g2 = gx * gx + gy * gy
    inv = np.zeros_like(g2)
    np.divide(np.float32(1), g2, out=inv, where=g2 > np.float32(1e-10))
    lt, theta, taut = np.float32(lt), np.float32(theta), np.float32(taut)
    t = np.empty_like(u)
    d = np.empty_like(u)
    gxx = np.zeros_like(u)
    gyy = np.zeros_like(u)
    nrm = np.empty_like(u)
    tmp = np.empty_like(u)
    for _ in range(iters):
        # primal: rho = rc + g . f; f += -clip(rho / g2) g + theta div p
        np.multiply(gx, u, out=t)
        np.multiply(gy, v, out=tmp)
        t += tmp
        t += rc
        t *= inv
        np.clip(t, -lt, lt, out=t)
        for f, g, pa, pb in ((u, gx, p[0], p[1]), (v, gy, p[2], p[3])):
            np.add(pa, pb, out=d)
            d[:, 1:] -= pa[:, :-1]
            d[1:] -= pb[:-1]
            d *= theta
            np.multiply(t, g, out=tmp)
            d -= tmp
            f += d
        # dual: p = (p + taut grad f) / (1 + taut |grad f|)
        for f, pa, pb in ((u, p[0], p[1]), (v, p[2], p[3])):
            np.subtract(f[:, 1:], f[:, :-1], out=gxx[:, :-1])
            np.subtract(f[1:], f[:-1], out=gyy[:-1])
            np.multiply(gxx, gxx, out=nrm)
            np.multiply(gyy, gyy, out=tmp)
            nrm += tmp
            np.sqrt(nrm, out=nrm)
            if ginv is not None:
                nrm *= ginv
            nrm *= taut
            nrm += np.float32(1)
            gxx *= taut
            gyy *= taut
            pa += gxx
            pa /= nrm
            pb += gyy
            pb /= nrm


class _GpuIter:
    """Launches ``iters`` TV-L1 iterations: a few tiled launches (:func:`tile_plan`), or one block
    (:data:`SMALL_LEVEL`), or two launches an iteration (``TILE_ITERS = 0``); through a CUDA graph
    where CuPy can capture one (inside a pipeline's graph plan they are captured with it)."""

    def __init__(self, be, u, v, p, gxy, rc, lt, theta, taut, iters, H, W, ginv=None):
        self.be = be
        self.kp = _gpu.kernel(be, _SRC, "tv_primal")
        self.kd = _gpu.kernel(be, _SRC, "tv_dual" if ginv is None else "tv_dual_w")
        self.args_p = (u, v, p, gxy, rc, _gpu.f32(lt), _gpu.f32(theta), _gpu.i32(H), _gpu.i32(W))
        self.args_d = ((u, v, p, _gpu.f32(taut), _gpu.i32(H), _gpu.i32(W)) if ginv is None else
                       (u, v, p, ginv, _gpu.f32(taut), _gpu.i32(H), _gpu.i32(W)))
        self.grid = _gpu.grid1d(H * W)
        self.iters = iters
        self.graph = None
        # a small level: every iteration in one block, one launch (tv_iterate_block)
        self.block = H * W <= SMALL_LEVEL
        if self.block:
            self.kb = _gpu.kernel(be, _SRC, "tv_iterate_block")
            self.args_b = (u, v, p, gxy, rc, ginv if ginv is not None else rc, _gpu.i32(ginv is not None),
                           _gpu.f32(lt), _gpu.f32(theta), _gpu.f32(taut), _gpu.i32(H), _gpu.i32(W), _gpu.i32(iters))
        # else: iterations in shared-memory tiles (tv_iterate_tile), a few launches per warp
        self.tiles = tile_plan(H, W, iters) if not self.block and TILE_ITERS > 0 else None
        if self.tiles:
            self.kt = _gpu.kernel(be, _SRC, "tv_iterate_tile", {"TVT_S": TILE_SIDE, "TVT_TY": TILE_ROWS})
            self.smem = 24 * TILE_SIDE * TILE_SIDE
            set_max_dynamic_smem(self.kt, self.smem)
            tail = (gxy, rc, ginv if ginv is not None else rc, _gpu.i32(ginv is not None), _gpu.f32(lt),
                    _gpu.f32(theta), _gpu.f32(taut), _gpu.i32(H), _gpu.i32(W))
            a = (u, v, p)
            if self.tiles[0][0] == (1, 1):          # one window: in place
                self.args_t = [a + a + tail]
            else:                                   # windows read (u, v, p) and write a second set, and back
                b = (be.xp.empty_like(u), be.xp.empty_like(v), be.xp.empty_like(p))
                self.args_t = [a + b + tail, b + a + tail]

    def _launch(self):
        if self.block:
            self.kb((1,), (1024,), self.args_b)
            return
        if self.tiles:
            for j, (grid, k, halo) in enumerate(self.tiles):
                self.kt(grid, (TILE_SIDE, TILE_ROWS), self.args_t[j % len(self.args_t)] + (_gpu.i32(k), _gpu.i32(halo)),
                        shared_mem=self.smem)
            return
        for _ in range(self.iters):
            self.kp(self.grid, (_gpu.THREADS,), self.args_p)
            self.kd(self.grid, (_gpu.THREADS,), self.args_d)

    def capture(self) -> bool:
        if not _USE_GRAPHS or not hasattr(self.be.xp, "cuda"):
            return False
        try:
            cp = self.be.xp
            stream = cp.cuda.get_current_stream()
            if stream.is_capturing():
                return False
            s = cp.cuda.Stream(non_blocking=True)
            s.wait_event(stream.record())
            with s:
                s.begin_capture()
                try:
                    self._launch()
                finally:
                    g = s.end_capture()
            self.graph = g
            self.stream = s
            return True
        except Exception:  # noqa: BLE001 - no graph support: plain launches
            self.graph = None
            return False

    def run(self):
        if self.graph is None:
            self._launch()
            return
        cp = self.be.xp
        cur = cp.cuda.get_current_stream()
        self.stream.wait_event(cur.record())
        self.graph.launch(stream=self.stream)
        cur.wait_event(self.stream.record())


#: capture each level's iteration loop into a CUDA graph and replay it per warp (fewer launches)
_USE_GRAPHS = True
#: levels of at most this many pixels run all their TV-L1 iterations in one block and one launch
#: (tv_iterate_block). Off (0): the kernel agrees with the per-iteration launches on an H100
#: (tests/flow/test_flow_gpu.py), but its 1080p time was not measured; 16384 turns it on.
SMALL_LEVEL = 0


#: TV-L1 iterations in shared-memory tiles (tv_iterate_tile, temporal blocking): each launch runs
#: up to TILE_ITERS iterations over TILE_SIDE x TILE_SIDE windows whose edges, as wide as the
#: iterations, are recomputed by the neighbouring windows (each thread keeps TILE_SIDE / TILE_ROWS
#: pixels in registers); a level that fits one window runs all its iterations in one launch. 0:
#: two launches per iteration (tv_primal, tv_dual). Same arithmetic per pixel
#: (tests/flow/test_flow_gpu.py, tests/flow/test_flow_emulated.py).
#: Measured on an H100 at 1080p (benchmarks/results/flow_session4.md): 7 / 32 / 16 (20 iterations as
#: 4 launches of 5, 2 pixels a thread) 17.3 ms end to end; 10 / 64 / 16 (4 pixels a thread) 21.4 ms;
#: per-iteration launches 21.7 ms.
TILE_ITERS = 7
TILE_SIDE = 32
TILE_ROWS = 16


def tile_plan(H: int, W: int, iters: int, *, max_iters: int | None = None, side: int | None = None):
    """The launches of tiled TV-L1 iterations at an ``H`` x ``W`` level: a list of ``(grid,
    iterations, halo)``. Several windows write to a second set of arrays, so their launch count
    is even (the iterations end in the first set).

    >>> tile_plan(540, 960, 20, max_iters=10, side=64)
    [((22, 13), 10, 10), ((22, 13), 10, 10)]
    >>> tile_plan(34, 60, 20, side=64)
    [((1, 1), 20, 0)]
    """
    max_iters = TILE_ITERS if max_iters is None else max_iters
    s = TILE_SIDE if side is None else side
    if H <= s and W <= s:
        return [((1, 1), iters, 0)]
    m = -(-iters // max(1, max_iters))
    m += m % 2
    out = []
    for j in range(m):
        k = iters // m + (1 if j < iters % m else 0)       # (k = 0: a plain copy)
        if s <= 2 * k:
            raise ValueError(f"a {s} x {s} window cannot hold {k} iterations")
        out.append(((-(-W // (s - 2 * k)), -(-H // (s - 2 * k))), k, k))
    return out


#: smallest smoothness weight of the edge-aware total variation (its inverse caps ginv)
EDGE_MIN = 0.05


def _edge_ginv(be: Backend, I1, alpha: float):
    """``1 / max(exp(-alpha |grad I1|), EDGE_MIN)``: the inverse weight of the edge-aware TV."""
    H, W = I1.shape
    if not be.is_gpu:
        gx, gy = _grad_np(I1)
        g = np.exp(np.float32(-alpha) * np.sqrt(gx * gx + gy * gy))
        return (np.float32(1) / np.fmax(g, np.float32(EDGE_MIN))).astype(np.float32)
    out = be.xp.empty((H, W), be.xp.float32)
    _gpu.kernel(be, _SRC, "tv_edge")(_gpu.grid1d(H * W), (_gpu.THREADS,),
                                     (I1, out, _gpu.f32(alpha), _gpu.f32(EDGE_MIN), _gpu.i32(H), _gpu.i32(W)))
    return out


def _level(be: Backend, I1, I2, u, v, w, *, warps, iters, lam, theta, tau, median, progress=None,
           edge: float = 0.0, occ: float = 0.0):
    """``warps`` x ``iters`` TV-L1 at one level, ``(u, v)`` refined in place. ``edge`` > 0: the
    total variation weighted by ``exp(-edge |grad I1|)`` (edge-aware); ``occ`` > 0: the data term
    weighted by ``1 / (1 + (residual / occ)^2)`` (pixels the flow cannot match pull less)."""
    xp = be.xp
    H, W = I1.shape
    lt = lam * theta
    taut = tau / theta
    p = xp.zeros((4, H, W), xp.float32)
    ginv = _edge_ginv(be, I1, edge) if edge > 0 else None
    if not be.is_gpu:
        i2x, i2y = _grad_np(I2)
        I2s = np.stack([I2, i2x, i2y])
        i1g = _grad_np(I1)
        _numba.prepare(progress)   # the first CPU flow says when it compiles the kernels
        nk = _numba.kernels()      # the compiled twin of _warp_np + _iterate_np (the same arithmetic)
        if nk is not None:
            uo, vo, po = np.empty_like(u), np.empty_like(v), np.empty_like(p)
            f32 = np.float32
            nb = _numba.bands(H, iters)
        for k in range(warps):
            if nk is None:
                gxy, rc = _warp_np(I1, I2s, u, v, w, i1g, occ)
                _iterate_np(u, v, p, gxy, rc, lt, theta, taut, iters, ginv)
            else:
                nk.tv_warp_iterate(I1, I2s, i1g[0], i1g[1], w if w is not None else I1, w is not None, float(occ),
                                   u, v, p, ginv if ginv is not None else I1, ginv is not None, f32(lt), f32(theta),
                                   f32(taut), int(iters), nb, uo, vo, po)
                p, po = po, p
                if not median:
                    u[...] = uo
                    v[...] = vo
            if median:
                uv = _median_np(np.stack([u, v] if nk is None else [uo, vo]), median)
                u[...] = uv[0]
                v[...] = uv[1]
            if progress is not None:
                progress.update((k + 1) / warps)
        return
    n = H * W
    grid = _gpu.grid1d(n)
    T = (_gpu.THREADS,)
    I2s = xp.empty((3, H, W), xp.float32)
    I2s[0] = I2
    _gpu.kernel(be, _SRC, "tv_grad")(grid, T, (I2s, _gpu.i32(H), _gpu.i32(W)))
    gxy = xp.empty((2, H, W), xp.float32)
    rc = xp.empty((H, W), xp.float32)
    kw = _gpu.kernel(be, _SRC, "tv_warp")
    km = _gpu.kernel(be, _SRC, "tv_median5" if median == 5 else "tv_median3")
    uv = xp.empty((2, H, W), xp.float32)
    med = xp.empty((2, H, W), xp.float32)
    uv[0] = u
    uv[1] = v
    uu, vv = uv[0], uv[1]
    it = _GpuIter(be, uu, vv, p, gxy, rc, lt, theta, taut, iters, H, W, ginv)
    if warps > 1:
        it.capture()
    for _ in range(warps):
        kw(grid, T, (I1, I2s, uu, vv, w if w is not None else rc, _gpu.i32(w is not None), _gpu.f32(occ), gxy, rc,
                     _gpu.i32(H), _gpu.i32(W)))
        it.run()
        if median:
            km(_gpu.grid1d(2 * n), T, (uv, med, _gpu.i32(2), _gpu.i32(H), _gpu.i32(W)))
            uv[...] = med
    u[...] = uu
    v[...] = vv


#: with a ``tick`` (stage 3's cancel checks), the NumPy warps at full resolution run in row bands of
#: the progress bar's steps of :func:`_ncc_conf`'s ticks on the CPU, by their times at 12 Mpx on two
#: cores: the warp 1 (0.5 s), the local NCC 2 (1.1 s), the flow gradient 2 (1.0 s), the NCC 0.3 (0.1 s)
NCC_CONF_TICKS = 5.3
#: about this many pixels with a tick between them (a 12 Mpx warp took about 2 s on two cores;
#: elementwise, so the same bits)
BAND_PIXELS = 1 << 21


def _bilinear_bands(img, xs, ys, tick=None, stage: str | None = None):
    """:func:`~gpu_kernels.ops.warp._bilinear_np` of ``img`` at ``(xs, ys)`` (H, W), in row bands
    with ``tick(stage, share)`` after each (one call without ``tick`` or for a small picture)."""
    H, W = xs.shape
    if tick is None or H * W <= BAND_PIXELS:
        return _bilinear_np(img, xs, ys)
    rows = max(1, BAND_PIXELS // W)
    n = -(-H // rows)
    out = np.empty(img.shape[:-2] + (H, W), np.float32)
    for r0 in range(0, H, rows):
        out[..., r0:r0 + rows, :] = _bilinear_np(img, xs[r0:r0 + rows], ys[r0:r0 + rows])
        tick(stage, 1.0 / n)
    return out


def _ncc_conf(be: Backend, I1, I2, u, v, mask, *, window: int, grad_sigma: float = DEFAULT_CONF_SIGMA,
              kappa: float = DEFAULT_CONF_KAPPA, tick=None):
    """Local NCC of I1 and I2 warped by (u, v), over 1 + G|grad f| / kappa; 0..1. ``tick``
    (optional): called between the NumPy path's long steps (cancel checks; each is about a
    second at 12 Mpx on two cores)."""
    xp = be.xp
    H, W = I1.shape
    n = H * W
    taps = np.full(window, 1.0 / window, np.float32)
    gtaps = gaussian_kernel1d(grad_sigma)
    if not be.is_gpu:
        from .lucas_kanade import _grad_np as grad

        xs = np.arange(W, dtype=np.float32)[None, :] + u
        ys = np.arange(H, dtype=np.float32)[:, None] + v
        I2w = _bilinear_bands(I2, xs, ys, tick, "quality map: warp")
        inside = _inside_np(xs, ys, H, W)
        if tick is None:
            prod = np.stack([I1, I2w, I1 * I1, I2w * I2w, I1 * I2w])
            S = _correlate_axis(be, _correlate_axis(be, prod, taps, 2, mode="nearest"), taps, 1, mode="nearest")
        else:   # the same filters a plane at a time (each line filtered alone: the same bits), with ticks
            S = np.empty((5, H, W), np.float32)
            for i, plane in enumerate((lambda: I1, lambda: I2w, lambda: I1 * I1, lambda: I2w * I2w,
                                       lambda: I1 * I2w)):
                S[i] = _correlate_axis(be, _correlate_axis(be, np.ascontiguousarray(plane()), taps, 1,
                                                           mode="nearest"), taps, 0, mode="nearest")
                tick("quality map: local NCC", 0.4)
        ux, uy = grad(u)
        vx, vy = grad(v)
        gm = np.sqrt(ux * ux + uy * uy + vx * vx + vy * vy)
        if tick is not None:
            tick("quality map: flow gradient", 1.0)
        gm = _correlate_axis(be, _correlate_axis(be, gm, gtaps, 1), gtaps, 0)
        if tick is not None:
            tick("quality map: flow gradient", 1.0)
        rows = H if tick is None else max(1, BAND_PIXELS // W)
        c = np.empty((H, W), np.float32)
        for r0 in range(0, H, rows):   # elementwise: in bands with ticks, the same bits
            b = slice(r0, r0 + rows)
            m1, m2 = S[0, b], S[1, b]
            vv = (S[2, b] - m1 * m1) * (S[3, b] - m2 * m2)
            cov = S[4, b] - m1 * m2
            ok = vv > np.float32(1e-12)
            ncc = np.where(ok, cov / np.sqrt(np.where(ok, vv, np.float32(1))), np.float32(0))
            cb = np.clip(ncc, 0, 1) / (np.float32(1) + gm[b] * np.float32(1.0 / kappa)) * inside[b]
            if mask is not None:
                cb = cb * mask[b]
            c[b] = cb
            if tick is not None:
                tick("quality map: NCC", 0.3 * rows / H)
        return c
    from gpu_kernels.ops.warp import _warp2d

    I2w, inside = _warp2d(be, I2, u, v, return_inside=True)
    grid = _gpu.grid1d(n)
    T = (_gpu.THREADS,)
    prod = xp.empty((5, H, W), xp.float32)
    _gpu.kernel(be, _SRC, "tv_ncc_products")(grid, T, (I1, I2w, prod, _gpu.i64(n)))
    S = _correlate_axis(be, _correlate_axis(be, prod, taps, 2, mode="nearest"), taps, 1, mode="nearest")
    gm = xp.empty((H, W), xp.float32)
    _gpu.kernel(be, _SRC, "tv_flowgrad")(grid, T, (u, v, gm, _gpu.i32(H), _gpu.i32(W)))
    gm = _correlate_axis(be, _correlate_axis(be, gm, gtaps, 1), gtaps, 0)
    conf = xp.empty((H, W), xp.float32)
    _gpu.kernel(be, _SRC, "tv_ncc_conf")(grid, T, (S, gm, inside, mask if mask is not None else conf,
                                                   _gpu.i32(mask is not None), conf, _gpu.f32(1.0 / kappa),
                                                   _gpu.i64(n)))
    return conf


def ncc_confidence(img1, img2, u, v, *, window: int = DEFAULT_CONF_WINDOW, grad_sigma: float = DEFAULT_CONF_SIGMA,
                   kappa: float = DEFAULT_CONF_KAPPA, mask=None, device=None):
    """Confidence of any flow in 0..1: local NCC of ``img1`` and ``img2`` warped by it, lowered
    at motion boundaries.

    ``clip(NCC, 0, 1) / (1 + G_grad_sigma * |grad f| / kappa)`` with the NCC over a ``window`` x
    ``window`` box; 0 where ``x + f(x)`` leaves the image, and outside the mask.

    Example
    -------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> img = rng.random((32, 32)).astype(np.float32)
    >>> z = np.zeros((32, 32), np.float32)
    >>> c = ncc_confidence(img, img, z, z, device="cpu")
    >>> bool(c[8:-8, 8:-8].min() > 0.9)
    True
    """
    window = check_int("window", window, 1, 63)
    if window % 2 == 0:
        raise FlowInputError(f"window must be odd, got {window}")
    be = get_backend(device)
    with be.activate():
        g1, g2 = prepare_pair(be, img1, img2)
        xp = be.xp
        uu, vv = ((xp.ascontiguousarray(xp.asarray(a, dtype=xp.float32)) if be.is_gpu else
                   np.ascontiguousarray(be.asnumpy(a), dtype=np.float32)) for a in (u, v))
        if uu.shape != g1.shape or vv.shape != g1.shape:
            raise FlowInputError(f"the flow is {uu.shape[1]} x {uu.shape[0]} but the images are "
                                 f"{g1.shape[1]} x {g1.shape[0]}")
        m = prepare_mask(be, mask, g1.shape)
        return _ncc_conf(be, g1, g2, uu, vv, m, window=window, grad_sigma=check_float("grad_sigma", grad_sigma, 0.0),
                         kappa=check_float("kappa", kappa, 0.0, lo_open=True))


# ----------------------------------------------------------------------------- driver
def _tv_core(be: Backend, g1, g2, mask, *, levels, warps, iters, lam, theta, tau, median, init=None,
             conf_window=DEFAULT_CONF_WINDOW, progress=None):
    """TV-L1 on prepared greyscale images; ``init`` an optional full-resolution (u, v)."""
    xp = be.xp
    progress = as_progress(progress)
    L = pyramid_levels(g1.shape, levels, min_size=8)
    p1, p2, pm = [g1], [g2], [mask]
    for _ in range(L - 1):
        p1.append(_pyr_down(be, p1[-1], (0, 1)))
        p2.append(_pyr_down(be, p2[-1], (0, 1)))
        if mask is not None:
            pm.append(xp.ascontiguousarray((_pyr_down(be, pm[-1], (0, 1)) >= 0.5).astype(xp.float32)))
        else:
            pm.append(None)
    u = v = None
    if init is not None:
        u, v = init
        for _ in range(L - 1):
            u = _pyr_down(be, u, (0, 1)) * xp.float32(0.5)
            v = _pyr_down(be, v, (0, 1)) * xp.float32(0.5)
        u, v = xp.ascontiguousarray(u), xp.ascontiguousarray(v)
    # each level's share of the bar is its share of the pixels (the finest has about 3/4), and
    # the CPU reports every warp: the bar moves with the work (it sat at 76 % for 85 % of a run)
    from gpu_kernels.jobs import level_weights

    lw = level_weights([a.shape for a in p1])
    for lev in range(L - 1, -1, -1):
        H, W = p1[lev].shape
        start = 0.95 * sum(lw[lev + 1:])
        if u is None:
            u = xp.zeros((H, W), xp.float32)
            v = xp.zeros((H, W), xp.float32)
        elif u.shape != (H, W):
            u = _pyr_up(be, u, (H, W), (0, 1), value_scale=2.0)
            v = _pyr_up(be, v, (H, W), (0, 1), value_scale=2.0)
        progress.update(start, f"TV-L1 level {L - lev}/{L}")
        _level(be, p1[lev], p2[lev], u, v, pm[lev], warps=warps, iters=iters, lam=lam, theta=theta, tau=tau,
               median=median, progress=progress.sub(start, start + 0.95 * lw[lev]))
    q = _ncc_conf(be, g1, g2, u, v, mask, window=conf_window)
    if mask is not None:
        u *= mask
        v *= mask
    return u, v, q


def tvl1_refine(img1, img2, *, seed: str = DEFAULT_SEED, levels: int = DEFAULT_TV_LEVELS, warps: int = DEFAULT_WARPS,
                iters: int = DEFAULT_TV_ITERS, lam: float = DEFAULT_LAMBDA, theta: float = DEFAULT_THETA,
                tau: float = DEFAULT_TAU, median: bool = DEFAULT_MEDIAN, seed_sigma: float = DEFAULT_SEED_SIGMA,
                seed_params: dict | None = None, conf_window: int = DEFAULT_CONF_WINDOW, mask=None, device=None,
                progress=None) -> FlowResult:
    """TV-L1 flow from ``img1`` to ``img2``, started from a block-matching or Lucas-Kanade seed.

    Parameters
    ----------
    img1, img2 : array_like
        ``(H, W)`` or ``(H, W, C)``, uint8, uint16 or float (0..1), NumPy or CuPy.
    seed : {"bm", "lk", "none"}
        The local method whose quality-weighted, smoothed flow starts the coarsest level.
    levels : int
        Pyramid levels of the refinement.
    warps : int
        Re-linearisations per level.
    iters : int
        TV-L1 iterations per warp.
    lam : float
        Weight of the data term (intensities 0..1); larger follows the images more closely.
    theta : float
        Coupling of the primal sub-problems.
    tau : float
        Dual step, at most 0.25.
    median : {5, 3, 0}
        Side of the median filter of the flow after each warp (0: none; True means 5).
    seed_sigma : float
        Gaussian sigma of the seed's quality-weighted smoothing.
    seed_params : dict, optional
        Keyword arguments for the seed method (:func:`block_matching` or :func:`lucas_kanade`).
    conf_window : int
        Window of the local-NCC quality map.
    mask : array_like, optional
        ``(H, W)`` region of interest: pixels outside it have no data term and get flow 0.
    device : str or Backend, optional
    progress : callable or Progress, optional

    Returns
    -------
    FlowResult
        ``u``, ``v``, ``quality`` (local NCC confidence); ``extras`` ``seed_u``, ``seed_v``,
        ``seed_quality``.
    """
    if seed not in SEEDS:
        raise FlowInputError(f"unknown seed {seed!r}: use one of {', '.join(SEEDS)}")
    levels = check_int("levels", levels, 1, 12)
    warps = check_int("warps", warps, 1, 50)
    iters = check_int("iters", iters, 1, 500)
    lam = check_float("lam", lam, 0.0, lo_open=True)
    theta = check_float("theta", theta, 0.0, lo_open=True)
    tau = check_float("tau", tau, 0.0, 0.25, lo_open=True)
    seed_sigma = check_float("seed_sigma", seed_sigma, 0.0)
    conf_window = check_int("conf_window", conf_window, 1, 63)
    if conf_window % 2 == 0:
        raise FlowInputError(f"conf_window must be odd, got {conf_window}")
    be = get_backend(device)
    progress = as_progress(progress)
    extras = {}
    median = 5 if median is True else (0 if median is False else check_int("median", median, 0, choices=(0, 3, 5)))
    key = ("refine", seed, levels, warps, iters, lam, theta, tau, median, seed_sigma, conf_window,
           tuple(sorted((seed_params or {}).items())))
    with be.activate():
        a, b = check_pair(be, img1, img2)
        m = prepare_mask(be, mask, a.shape[:2])

        def build(x, y):
            g1, g2 = _gray(be, x), _gray(be, y)
            init = None
            seed_out = ()
            if seed != "none":
                init, q0 = _seed(be, g1, g2, m, seed, dict(seed_params or {}), progress.sub(0.0, 0.2, "seed"))
                seed_out = (init[0], init[1], q0)
                if seed_sigma > 0:
                    init = _qws(be, init[0], init[1], q0, seed_sigma)
            u, v, q = _tv_core(be, g1, g2, m, levels=levels, warps=warps, iters=iters, lam=lam, theta=theta,
                               tau=tau, median=median, init=init, conf_window=conf_window,
                               progress=progress.sub(0.2 if seed != "none" else 0.0, 1.0))
            return (u, v, q) + seed_out

        out = _plan.run(be, key, [a, b], build) if m is None else build(a, b)
        u, v, q = out[:3]
        if seed != "none":
            extras.update(seed_u=out[3], seed_v=out[4], seed_quality=out[5])
        progress.update(1.0, "TV-L1 done")
    params = dict(seed=seed, levels=levels, warps=warps, iters=iters, lam=lam, theta=theta, tau=tau,
                  median=median, seed_sigma=seed_sigma, conf_window=conf_window)
    return FlowResult(u, v, q, "refine", be.label, params, extras, m)


def _seed(be: Backend, g1, g2, m, seed: str, params: dict, progress):
    from .blockmatch import DEFAULT_BLOCK, DEFAULT_BM_LEVELS, _bm_core, bm_levels
    from .lucas_kanade import (
        DEFAULT_EIG_MIN,
        DEFAULT_EIG_TAU,
        DEFAULT_LK_ITERS,
        DEFAULT_LK_LEVELS,
        DEFAULT_LK_SIGMA,
        DEFAULT_WINDOW,
        _lk_core,
    )

    if seed == "bm":
        from .blockmatch import DEFAULT_BM_MEDIAN, DEFAULT_FLAT_SIGMA, DEFAULT_RADIUS

        B = int(params.get("block", DEFAULT_BLOCK))
        if g1.shape[0] < B or g1.shape[1] < B:
            z = be.xp.zeros(g1.shape, be.xp.float32)
            return (z, z.copy()), z.copy()
        L = bm_levels(g1.shape, int(params.get("levels", DEFAULT_BM_LEVELS)), B)
        u, v, q, *_ = _bm_core(be, g1, g2, m, levels=L, block=B, radius=int(params.get("radius", DEFAULT_RADIUS)),
                               flat_sigma=float(params.get("flat_sigma", DEFAULT_FLAT_SIGMA)),
                               median=bool(params.get("median", DEFAULT_BM_MEDIAN)), progress=progress)
        return (u, v), q
    u, v, q, _ = _lk_core(be, g1, g2, m, levels=int(params.get("levels", DEFAULT_LK_LEVELS)),
                          window=int(params.get("window", DEFAULT_WINDOW)),
                          iters=int(params.get("iters", DEFAULT_LK_ITERS)),
                          sigma=float(params.get("sigma", DEFAULT_LK_SIGMA)),
                          eig_min=float(params.get("eig_min", DEFAULT_EIG_MIN)),
                          eig_tau=float(params.get("eig_tau", DEFAULT_EIG_TAU)), progress=progress)
    return (u, v), q
