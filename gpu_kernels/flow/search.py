"""Large-displacement flow: patch inverse search over a deep pyramid, densification, TV-L1.

The default method (``search``). Stages, each a pure function of arrays:

1. **pyramids** (:func:`build_pyramids`): both frames blurred by ``blur`` (0.5 px: sensor
   noise), then Gaussian pyramids down to a coarsest level about four patches across (DIS's
   rule, :func:`coarsest_level`), so it sees motions of a fifth of the frame (200 px at 1080p).
   Frames over ``max_pixels`` are solved down to the first level that fits
   (:func:`working_level`; 1080p at 960 x 540) and the flow is upsampled, as DIS-medium
   solves at half resolution.
2. **coarse matching** (:func:`coarse_match`, at every level from the coarsest to the working
   level + ``finest_patch_level``): DIS's inverse search (Kroeger et al., "Fast optical flow
   using dense inverse search", ECCV 2016). Patches of ``patch`` x ``patch`` pixels on a grid
   of about ``stride`` pixels start from the flow at their centre; at the ``radius_levels`` (2)
   coarsest levels every integer shift within ``radius`` of it is tried (a zero start cannot
   find motions wider than the patch; the second level finds small fast objects that a patch of
   the coarsest level cannot see); then ``rounds`` times: the best of the patch's own flow and its four grid
   neighbours' (spatial propagation, as in PatchMatch and DIS), and ``iters / rounds``
   inverse-compositional Gauss-Newton steps on the mean-normalised SSD. The lowest-cost flow
   seen is kept, so a patch never ends worse than it started.
3. **densification** (:func:`densify`): each pixel's flow is the average of the patches
   covering it, weighted by the patch's texture (smaller structure-tensor eigenvalue) over its
   photometric error at the pixel, plus ``prior`` times the coarser level's flow, so pixels of
   flat patches keep the smoother estimate.
4. **refinement** (:func:`refine_level`): ``warps`` x ``tv_iters`` of the TV-L1 of
   :mod:`gpu_kernels.flow.refine` at every level, from the densified flow: it removes the
   patches' blockiness, brings sub-pixel accuracy, and corrects the coarser levels' errors
   (each level's matching starts again from the refined flow, so errors are not frozen in).
   The total variation is edge-aware (weighted by ``exp(-edge |grad I1|)``, so motions break at
   the first frame's edges rather than bleed over flat background) and the data term
   occlusion-robust (weighted by ``1 / (1 + (r / occ)^2)``, ``r`` the residual at the current
   flow, so pixels that cannot be matched are filled in by the smoothness). Stages 2-4
   alternate per level (:func:`coarse_to_fine`).
5. **forward-backward fill** (:func:`fill_inconsistent`, ``fill`` px, 0: off): a backward flow
   solved one level coarser; pixels more than ``fill`` px from forward-backward consistent whose
   local NCC is also low (occlusions, a flat region that took a neighbour's motion) get the flow
   of the others around them, spread along the first frame's edges by an edge-aware
   normalised convolution (:func:`edge_aware_fill`: the domain transform's recursive filter;
   EpicFlow's interpolation of consistent matches, with a filter for its geodesic distances).
6. **quality map** (:func:`quality_map`): the local NCC of the first frame and the warped
   second, times the forward-backward consistency with the same backward flow
   (``quality="fb"``, ~70 % more time at 1080p), the photometric residual and a term lowering
   large motions; ``quality="ncc"`` keeps the one-pass NCC map.

The tool runs three stages (:func:`stage_pyramids`, :func:`stage_flow`, :func:`stage_quality`)
so that a live edit re-runs only what it changes; :func:`inverse_search_flow` runs them in one
go. Figures: benchmarks/results/flow_session2.md.

On the GPU the kernels are ``cuda/flow_search.cu`` (one warp per patch for the integer search
and the Gauss-Newton rounds, one thread per pixel for densification, one per row or column for
the fill's recursive filter) and ``cuda/flow_tvl1.cu`` (TV-L1 iterations several to a launch in
shared-memory tiles, :data:`gpu_kernels.flow.refine.TILE_ITERS`), the whole pipeline captured once
as a CUDA graph (:mod:`gpu_kernels.flow._plan`); on the CPU the same arithmetic in
NumPy/SciPy/OpenCV. 1080p on an H100: about 6 ms with the quality map and the fill, the backward
flow running beside the forward one (benchmarks/results/flow_session5.md).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow.search import inverse_search_flow
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> p = synthetic_pair("translation", size=(128, 160), magnitude=20.0)
>>> res = inverse_search_flow(p.img1, p.img2, device="cpu")
>>> bool(np.hypot(res.u - p.flow[..., 0], res.v - p.flow[..., 1])[p.valid].mean() < 0.5)
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_kernels.backend import Backend, cache_key, get_backend, set_max_dynamic_smem
from gpu_kernels.jobs import as_progress
from gpu_kernels.ops import _gpu
from gpu_kernels.ops.color import _gray
from gpu_kernels.ops.pyramid import _pyr_down, _pyr_up
from gpu_kernels.ops.warp import _bilinear_take

from . import _numba, _plan
from ._common import FlowInputError, FlowResult, check_float, check_int, check_pair, prepare_mask

__all__ = [
    "DEFAULT_PATCH",
    "DEFAULT_STRIDE",
    "DEFAULT_SEARCH_ITERS",
    "DEFAULT_ROUNDS",
    "DEFAULT_RADIUS",
    "DEFAULT_FINEST_PATCH_LEVEL",
    "DEFAULT_SEARCH_WARPS",
    "DEFAULT_SEARCH_TV_ITERS",
    "DEFAULT_SEARCH_LAMBDA",
    "DEFAULT_SEARCH_MEDIAN",
    "DEFAULT_EPS",
    "DEFAULT_PRIOR",
    "PATCH_SIZES",
    "DEFAULT_BLUR",
    "DEFAULT_MAX_PIXELS",
    "DEFAULT_QUALITY",
    "QUALITIES",
    "coarsest_level",
    "working_level",
    "build_pyramids",
    "coarse_to_fine",
    "patch_grid",
    "coarse_match",
    "densify",
    "refine_level",
    "quality_map",
    "edge_aware_fill",
    "fill_inconsistent",
    "Pyramids",
    "pyramids",
    "solve",
    "quality_stage",
    "search_params",
    "stage_pyramids",
    "stage_flow",
    "stage_quality",
    "inverse_search_flow",
]

PATCH_SIZES = (4, 6, 8, 12)
from gpu_kernels.flow import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: patch side (pixels of each level)
DEFAULT_PATCH = _d.SEARCH_PATCH
#: about this many pixels between patch origins
DEFAULT_STRIDE = 4
#: Gauss-Newton steps per patch and level (split over the rounds)
DEFAULT_SEARCH_ITERS = 32
#: propagation rounds per level (each: neighbours' flows tried, then iters / rounds steps)
DEFAULT_ROUNDS = 4
#: integer shifts searched around the start at the coarsest level (pixels of that level)
DEFAULT_RADIUS = 8
#: finest level with a patch search, counted from the working level (0: the working level itself)
DEFAULT_FINEST_PATCH_LEVEL = _d.SEARCH_FINEST_PATCH_LEVEL
#: TV-L1 warps per level, finest first (the last value for the coarser levels). (8,) until session 5;
#: (5, 4) is the schedule closest to it whose 1080p time on an H100 stays under 6.43 ms (10x the
#: lowest DIS-medium time seen on that host, 67.5 ms, with 5 % margin) in every measurement, at 0.680
#: x DIS medium's AEE on the shared pairs against 0.665 (benchmarks/results/flow_session5.md)
DEFAULT_SEARCH_WARPS = (5, 4)
#: TV-L1 iterations per warp
DEFAULT_SEARCH_TV_ITERS = 20
#: TV-L1 data weight (intensities 0..1)
DEFAULT_SEARCH_LAMBDA = 100.0
#: median filter of the flow after each warp (5, 3, 0)
DEFAULT_SEARCH_MEDIAN = 5
#: photometric error (intensities 0..1) under which densification weights stop growing
DEFAULT_EPS = 0.01
#: weight of the coarser level's flow in densification (a patch weighs up to 1 / eps)
DEFAULT_PRIOR = 1.0
#: texture (mean smaller structure-tensor eigenvalue per pixel) at which a patch weighs half
DEFAULT_TEXTURE = 1e-4
#: the finest level solved has at most this many pixels (larger frames are solved at the first level
#: that fits and the flow is upsampled, as DIS solves at half resolution): 1080p at 960 x 540
DEFAULT_MAX_PIXELS = _d.SEARCH_MAX_PIXELS
#: Gaussian pre-blur of both frames (pixels): noise in the finest level's data term
DEFAULT_BLUR = 0.5
#: quality map: "fb" (local NCC x forward-backward consistency with a backward flow solved one
#: level coarser, ~25 % more time) or "ncc" (local NCC alone, one pass)
DEFAULT_QUALITY = _d.SEARCH_QUALITY
QUALITIES = _d.SEARCH_QUALITIES
#: edge-aware smoothness: TV weighted by exp(-edge |grad I1|) (0: plain TV)
DEFAULT_EDGE = 6.0
#: occlusion-robust data term: weight 1 / (1 + (residual / occ)^2) (0: plain L1)
DEFAULT_OCC = 0.1
#: the integer search runs at this many of the coarsest levels
DEFAULT_RADIUS_LEVELS = 2
#: quality="fb": the backward flow is solved this many levels coarser than the forward one
DEFAULT_FB_LEVEL = 1
#: quality="fb": the backward flow's TV-L1 warps per level and iterations per warp (None: the
#: forward flow's); the backward flow only has to be right where the forward one is
DEFAULT_FB_WARPS = None
DEFAULT_FB_ITERS = None
#: Tikhonov term of the patches' Gauss-Newton normal equations
DEFAULT_REG = 1e-3
#: quality="fb" map (:func:`quality_map`): NCC floor, forward-backward distance scale (px),
#: flow magnitude scale (px), photometric residual scale (intensities 0..1)
QM_NCC_FLOOR = 0.1
QM_FB_SCALE = 0.125
QM_MAG = 12.5
QM_RESIDUAL = 0.01
#: forward-backward fill: pixels whose forward-backward distance exceeds this (px) get the flow of
#: the consistent pixels around them, by an edge-aware normalised convolution (0: no fill)
DEFAULT_FILL = _d.SEARCH_FILL
#: the fill's spatial scale (px of the frame) and intensity scale (0..1) of the domain transform
FILL_SIGMA_S = 100.0
FILL_SIGMA_R = 0.2
#: the fill's filter passes (each: rows, then columns; the scale shrinks from pass to pass)
FILL_PASSES = 3
#: the integer search of the coarsest levels on the GPU with one warp per patch (is_init_warp: the
#: shifts spread over the lanes, the same result) rather than one thread per patch (is_init)
INIT_WARP = True
#: the patches' propagation and Gauss-Newton rounds on the GPU with one warp per patch
#: (is_step_warp: the patch's pixels over the lanes, sums over the warp; the same steps, float sums
#: in another order) rather than one thread per patch (is_step)
STEP_WARP = True
#: the fill's recursive filter on the GPU: one thread per row and column with coalesced steps
#: (is_rf_axis1 on a transposed stack for the rows) rather than is_rf_rows (one thread per row,
#: each step L floats from the neighbouring thread's)
RF_COALESCED = True
#: the fill on the GPU with each line of its filter split into up to this many segments of at least
#: RF_MIN_STEPS steps (a scan of the recursion: is_rf_rows_seg, is_rf_cols; the weights computed
#: from the guide in the kernels, no transposes; the same values up to rounding); 0: one thread walks
#: a whole line (is_rf_axis1 or is_rf_rows, see RF_COALESCED)
RF_SEGMENTS = 32
RF_MIN_STEPS = 16
#: on the GPU the fill's mask of kept pixels and the "fb" quality map's arithmetic run as one kernel
#: each (is_fill_ok, is_quality_fb: the same operations, unfused) rather than ~8 and ~15 array
#: operations at full resolution
FUSED_MAPS = True
#: frames solved at a coarser working level (over ``max_pixels``: 1080p at 960 x 540) are filled at
#: that level, its threshold and spatial scale halved per level, and the filled flow upsampled, rather
#: than filled at full resolution after upsampling (False)
FILL_AT_WORK = True
#: the fill keeps a pixel whose local NCC confidence is at least this, consistent or not (the
#: backward flow can miss what the forward one found: a 200 px object)
FILL_NCC = 0.7

_SRC = "flow_search.cu"


# ----------------------------------------------------------------------------- stage 1: pyramids
def coarsest_level(shape, patch: int = DEFAULT_PATCH) -> int:
    """Index of the coarsest level: about four patches across the longer side (DIS's rule), and
    at least one patch across the shorter.

    >>> coarsest_level((384, 512)), coarsest_level((1080, 1920)), coarsest_level((20, 30))
    (4, 6, 1)
    """
    H, W = (int(s) for s in shape[:2])
    if min(H, W) < patch:
        return 0
    a = int(math.log2(max(H, W) / (4.0 * patch)) + 0.5)
    b = int(math.log2(min(H, W) / patch))
    return max(0, min(a, b))


def working_level(shape, max_pixels: int, coarsest: int) -> int:
    """The finest level solved: the first whose pixel count is at most ``max_pixels``.

    >>> working_level((480, 640), 600_000, 4), working_level((1080, 1920), 600_000, 6)
    (0, 1)
    """
    H, W = (int(s) for s in shape[:2])
    lev = 0
    while lev < coarsest and H * W > max_pixels:
        H, W = -(-H // 2), -(-W // 2)
        lev += 1
    return lev


def build_pyramids(be: Backend, g1, g2, levels: int, *, blur: float = 0.0, tick=None):
    """Gaussian pyramids (finest first) of two prepared grey images, ``levels`` levels each,
    after a Gaussian pre-blur of ``blur`` pixels (sensor noise; 0: none). ``tick``: called
    after each full-size blur and each level (a cancel check, see :class:`_Ticks`)."""
    tick = tick or (lambda *_a, **_k: None)
    if blur > 0:
        from .refine import _blur2

        g1 = _blur2(be, g1, blur)
        tick("pre-blur", 2.0)
        g2 = _blur2(be, g2, blur)
        tick("pre-blur", 2.0)
    p1, p2 = [g1], [g2]
    for i in range(levels - 1):
        p1.append(_pyr_down(be, p1[-1], (0, 1)))
        p2.append(_pyr_down(be, p2[-1], (0, 1)))
        tick("levels", 2.0 if i == 0 else 0.5)    # the first level costs about as much as all others
    return p1, p2


# ----------------------------------------------------------------------------- stage 2: coarse matching
def patch_grid(n: int, patch: int, stride: int) -> np.ndarray:
    """Patch origins along one axis of length ``n`` (``n >= patch``): evenly spread, first at 0,
    last at ``n - patch``, at most ``stride`` apart.

    >>> patch_grid(20, 8, 4).tolist()
    [0, 4, 8, 12]
    """
    N = -(-(n - patch) // stride) + 1
    j = np.arange(N, dtype=np.int64)
    return (j * (n - patch) // (N - 1) if N > 1 else j * 0).astype(np.int64)


class _Patches:
    """The NumPy path's per-patch arrays (templates, gradients, Hessians) at one level."""

    def __init__(self, I1, patch, stride, nk=None):
        from .lucas_kanade import _grad_np

        H, W = I1.shape
        self.oy, self.ox = patch_grid(H, patch, stride), patch_grid(W, patch, stride)
        self.Ny, self.Nx = len(self.oy), len(self.ox)
        if nk is not None:          # the compiled path needs only these (same values, no index arrays)
            N, n = self.Ny * self.Nx, patch * patch
            gx, gy = _grad_np(I1)
            self.T, self.Tx, self.Ty = (np.empty((N, n), np.float32) for _ in range(3))
            self.a, self.b, self.c = (np.empty(N, np.float32) for _ in range(3))
            nk.patch_setup(I1, gx, gy, self.oy, self.ox, patch, self.T, self.Tx, self.Ty, self.a, self.b, self.c)
            self.n, self.patch = n, patch
            self.oy_r = np.repeat(self.oy, self.Nx).astype(np.float32)
            self.ox_r = np.tile(self.ox, self.Ny).astype(np.float32)
            self._I2 = None
            return
        d = np.arange(patch)
        ky, kx = np.divmod(np.arange(patch * patch), patch)
        del d
        self.iy = (self.oy[:, None, None] + ky[None, None, :]).repeat(self.Nx, 1).reshape(-1, patch * patch)
        self.ix = np.broadcast_to(self.ox[None, :, None] + kx[None, None, :], (self.Ny, self.Nx, patch * patch)
                                  ).reshape(-1, patch * patch)
        self.fy = self.iy.astype(np.float32)
        self.fx = self.ix.astype(np.float32)
        gx, gy = _grad_np(I1)
        T = I1[self.iy, self.ix]
        self.T = T - T.sum(1, keepdims=True) * np.float32(1.0 / (patch * patch))
        self.Tx, self.Ty = gx[self.iy, self.ix], gy[self.iy, self.ix]
        self.a = (self.Tx * self.Tx).sum(1)
        self.b = (self.Tx * self.Ty).sum(1)
        self.c = (self.Ty * self.Ty).sum(1)
        self.n = patch * patch
        self.patch = patch
        self.oy_r = np.repeat(self.oy, self.Nx).astype(np.float32)
        self.ox_r = np.tile(self.ox, self.Ny).astype(np.float32)
        self._I2 = None

    def _windows(self, I2):
        """(P + 1) x (P + 1) windows of I2 padded by its edge values, P + 2 pixels a side."""
        if self._I2 is not I2:
            m = self.patch + 2
            self._pad = np.pad(I2, m, mode="edge")
            self._win = np.lib.stride_tricks.sliding_window_view(self._pad, (self.patch + 1, self.patch + 1))
            self._I2, self._m = I2, m
        return self._win

    def cost(self, I2, u, v):
        # The patch moves as a whole, so its bilinear weights are the same at every sample: one
        # (P + 1)^2 window of the edge-padded image per patch, then the same three lerps as the
        # kernel's ops_bilinear (a window past the padding holds edge values only, as clamping does).
        win = self._windows(I2)
        P, m = self.patch, self._m
        fu, fv = np.floor(u), np.floor(v)
        a = (u - fu)[:, None, None]
        b = (v - fv)[:, None, None]
        x0 = np.clip(self.ox_r + fu + m, 0, win.shape[1] - 1).astype(np.intp)
        y0 = np.clip(self.oy_r + fv + m, 0, win.shape[0] - 1).astype(np.intp)
        B = win[y0, x0]
        # the x lerp of each of the P + 1 rows once (row k is the "top" of output row k and the
        # "bottom" of row k - 1), then the y lerp: the same float operations, in the same order,
        # as top = p00 + a (p01 - p00), bot = p10 + a (p11 - p10), top + b (bot - top)
        X = B[:, :, 1:] - B[:, :, :-1]
        X *= a
        X += B[:, :, :-1]
        Wv = X[:, 1:] - X[:, :-1]
        Wv *= b
        Wv += X[:, :-1]
        Wv = Wv.reshape(-1, P * P)
        Wv -= Wv.sum(1, keepdims=True) * np.float32(1.0 / self.n)
        Wv -= self.T
        return (Wv * Wv).sum(1), Wv


def _neighbours_np(a, Ny, Nx):
    """The four grid neighbours' values (right, left, down, up); a patch's own value off the grid."""
    A = a.reshape(Ny, Nx)
    P = np.pad(A, 1, mode="edge")
    out = [P[1:-1, 2:], P[1:-1, :-2], P[2:, 1:-1], P[:-2, 1:-1]]
    # off-grid neighbours repeat the patch itself: same cost, never strictly better
    return [x.reshape(-1) for x in out]


def coarse_match(be: Backend, I1, I2, u0, v0, *, patch: int = DEFAULT_PATCH, stride: int = DEFAULT_STRIDE,
                 iters: int = DEFAULT_SEARCH_ITERS, rounds: int = DEFAULT_ROUNDS, radius: int = 0,
                 reg: float = DEFAULT_REG, texture: float = DEFAULT_TEXTURE):
    """Patch flows at one level by inverse search, started from the dense ``(u0, v0)``.

    Returns ``(pu, pv, cost, conf)``, each ``(Ny, Nx)`` over the grid of :func:`patch_grid`.
    """
    H, W = I1.shape
    Ny, Nx = len(patch_grid(H, patch, stride)), len(patch_grid(W, patch, stride))
    per = max(1, iters // max(rounds, 1))
    if be.is_gpu:
        xp = be.xp
        d = {"IS_P": patch}
        pu, pv, pc, conf = (xp.empty((Ny, Nx), xp.float32) for _ in range(4))
        n = Ny * Nx
        grid, T = _gpu.grid1d(n, 64), (64,)
        warp = radius > 0 and INIT_WARP
        _gpu.kernel(be, _SRC, "is_init_warp" if warp else "is_init", d)(
            _gpu.grid1d(32 * n, 128) if warp else grid, (128,) if warp else T,
            (I1, I2, u0, v0, pu, pv, pc, conf, _gpu.i32(H), _gpu.i32(W), _gpu.i32(Ny), _gpu.i32(Nx), _gpu.i32(radius),
             _gpu.f32(texture)))
        ks = _gpu.kernel(be, _SRC, "is_step_warp" if STEP_WARP else "is_step", d)
        if STEP_WARP:
            grid, T = _gpu.grid1d(32 * n, 128), (128,)
        qu, qv, qc = (xp.empty((Ny, Nx), xp.float32) for _ in range(3))
        for _ in range(max(rounds, 1)):
            ks(grid, T, (I1, I2, pu, pv, pc, qu, qv, qc, _gpu.i32(H), _gpu.i32(W), _gpu.i32(Ny), _gpu.i32(Nx),
                         _gpu.i32(per), _gpu.i32(rounds > 0), _gpu.f32(reg)))
            pu, qu = qu, pu
            pv, qv = qv, pv
            pc, qc = qc, pc
        return pu, pv, pc, conf
    nk = _numba.kernels()
    if patch * patch > 256:
        nk = None                   # the kernels' sums follow NumPy's up to 256 values
    P = _Patches(I1, patch, stride, nk)
    cy, cx = P.oy + patch // 2, P.ox + patch // 2
    u = u0[cy[:, None], cx[None, :]].reshape(-1).astype(np.float32)
    v = v0[cy[:, None], cx[None, :]].reshape(-1).astype(np.float32)
    if nk is not None:              # the compiled twin of the loops below (the same float32 sums)
        return _coarse_match_numba(nk, P, I2, u, v, Ny, Nx, rounds, per, radius, reg, texture)
    cost = P.cost(I2, u, v)[0]
    if radius > 0:
        bu, bv = u.copy(), v.copy()
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                cu, cv = bu + np.float32(dx), bv + np.float32(dy)
                s = P.cost(I2, cu, cv)[0]
                better = s < cost
                u, v, cost = np.where(better, cu, u), np.where(better, cv, v), np.where(better, s, cost)
    a, b, c = P.a + np.float32(reg), P.b, P.c + np.float32(reg)
    det = a * c - b * b
    for _ in range(max(rounds, 1)):
        bu, bv, bc = u.copy(), v.copy(), cost.copy()
        if rounds > 0:
            for cu, cv in zip(_neighbours_np(u, Ny, Nx), _neighbours_np(v, Ny, Nx), strict=True):
                s = P.cost(I2, cu, cv)[0]
                better = s < bc
                bu, bv, bc = np.where(better, cu, bu), np.where(better, cv, bv), np.where(better, s, bc)
        uu, vv = bu.copy(), bv.copy()
        for it in range(per + 1):
            s, r = P.cost(I2, uu, vv)
            better = s < bc
            bu, bv, bc = np.where(better, uu, bu), np.where(better, vv, bv), np.where(better, s, bc)
            if it == per:
                break
            ex, ey = (P.Tx * r).sum(1), (P.Ty * r).sum(1)
            uu = uu - (c * ex - b * ey) / det
            vv = vv - (a * ey - b * ex) / det
        u, v, cost = bu, bv, bc
    lmin = np.float32(0.5) * (P.a + P.c - np.sqrt((P.a - P.c) ** 2 + 4 * P.b * P.b)) * np.float32(1.0 / P.n)
    conf = lmin / (lmin + np.float32(texture))
    shape = (Ny, Nx)
    return (u.reshape(shape), v.reshape(shape), cost.reshape(shape), conf.reshape(shape).astype(np.float32))


def _coarse_match_numba(nk, P, I2, u, v, Ny, Nx, rounds, per, radius, reg, texture):
    """coarse_match's CPU loops through :mod:`gpu_kernels.flow._numba_kernels`."""
    P._windows(I2)
    pad, m, p = P._pad, P._m, P.patch
    T = np.ascontiguousarray(P.T, dtype=np.float32)
    Tx = np.ascontiguousarray(P.Tx, dtype=np.float32)
    Ty = np.ascontiguousarray(P.Ty, dtype=np.float32)
    u = np.ascontiguousarray(u, dtype=np.float32)
    v = np.ascontiguousarray(v, dtype=np.float32)
    R = np.empty_like(T)            # each patch's residual at its current flow
    cost = np.empty_like(u)
    nk.patch_init(pad, T, P.oy_r, P.ox_r, p, m, u, v, cost, int(radius), R)
    a, b, c = P.a + np.float32(reg), P.b, P.c + np.float32(reg)
    det = a * c - b * b
    uo, vo, co, Ro = np.empty_like(u), np.empty_like(v), np.empty_like(cost), np.empty_like(R)
    for _ in range(max(rounds, 1)):
        nk.patch_round(pad, T, Tx, Ty, P.oy_r, P.ox_r, p, m, u, v, cost, R, Ny, Nx, rounds > 0, per, a, b, c, det,
                       uo, vo, co, Ro)
        u, uo = uo, u
        v, vo = vo, v
        cost, co = co, cost
        R, Ro = Ro, R
    lmin = np.float32(0.5) * (P.a + P.c - np.sqrt((P.a - P.c) ** 2 + 4 * P.b * P.b)) * np.float32(1.0 / P.n)
    conf = lmin / (lmin + np.float32(texture))
    shape = (Ny, Nx)
    return (u.reshape(shape), v.reshape(shape), cost.reshape(shape), conf.reshape(shape).astype(np.float32))


# ----------------------------------------------------------------------------- stage 3: densification
def densify(be: Backend, I1, I2, pu, pv, conf, u0, v0, *, patch: int = DEFAULT_PATCH, eps: float = DEFAULT_EPS,
            prior: float = DEFAULT_PRIOR):
    """Dense ``(u, v)`` from patch flows (weighted by texture / photometric error) and ``(u0, v0)``."""
    H, W = I1.shape
    Ny, Nx = pu.shape
    if be.is_gpu:
        xp = be.xp
        uo, vo = xp.empty((H, W), xp.float32), xp.empty((H, W), xp.float32)
        _gpu.kernel(be, _SRC, "is_densify", {"IS_P": patch})(
            _gpu.grid1d(H * W), (_gpu.THREADS,),
            (I1, I2, pu, pv, conf, u0, v0, uo, vo, _gpu.i32(H), _gpu.i32(W), _gpu.i32(Ny), _gpu.i32(Nx),
             _gpu.f32(eps), _gpu.f32(prior)))
        return uo, vo
    stride_y = (H - patch) / max(Ny - 1, 1)
    stride_x = (W - patch) / max(Nx - 1, 1)
    del stride_y, stride_x
    oy = np.arange(Ny, dtype=np.int64) * (H - patch) // (Ny - 1) if Ny > 1 else np.zeros(1, np.int64)
    ox = np.arange(Nx, dtype=np.int64) * (W - patch) // (Nx - 1) if Nx > 1 else np.zeros(1, np.int64)
    nk = _numba.kernels()
    if nk is not None:             # the compiled twin (each pixel's patches, in bincount's order)
        def span(o, n):
            q = np.arange(n)
            return np.searchsorted(o, q - patch + 1, "left"), np.searchsorted(o, q, "right") - 1

        (ylo, yhi), (xlo, xhi) = span(oy, H), span(ox, W)
        uo, vo = np.empty((H, W), np.float32), np.empty((H, W), np.float32)
        f32 = np.float32
        nk.densify(I1, I2.reshape(1, H, W), np.ascontiguousarray(pu, f32), np.ascontiguousarray(pv, f32),
                   np.ascontiguousarray(conf, f32), u0, v0, ylo, yhi, xlo, xhi, f32(eps), float(prior), uo, vo)
        return uo, vo
    ky, kx = np.divmod(np.arange(patch * patch), patch)
    iy = (oy[:, None, None] + ky[None, None, :]).repeat(Nx, 1).reshape(-1, patch * patch)
    ix = np.broadcast_to(ox[None, :, None] + kx[None, None, :], (Ny, Nx, patch * patch)).reshape(-1, patch * patch)
    fu = pu.reshape(-1, 1)
    fv = pv.reshape(-1, 1)
    s = _bilinear_take(I2, ix.astype(np.float32) + fu, iy.astype(np.float32) + fv)
    w = conf.reshape(-1, 1) / np.fmax(np.abs(s - I1[iy, ix]), np.float32(eps))
    idx = (iy * W + ix).reshape(-1)
    n = H * W
    ws = np.bincount(idx, w.reshape(-1), n) + prior
    su = np.bincount(idx, (w * fu).reshape(-1), n) + prior * u0.reshape(-1)
    sv = np.bincount(idx, (w * fv).reshape(-1), n) + prior * v0.reshape(-1)
    ok = ws > 1e-12
    uo = np.where(ok, su / np.where(ok, ws, 1), u0.reshape(-1)).astype(np.float32).reshape(H, W)
    vo = np.where(ok, sv / np.where(ok, ws, 1), v0.reshape(-1)).astype(np.float32).reshape(H, W)
    return uo, vo


# ----------------------------------------------------------------------------- stage 4: refinement
def refine_level(be: Backend, I1, I2, u, v, *, warps: int, iters: int, lam: float, median: int, mask=None,
                 theta: float = 0.3, tau: float = 0.25, edge: float = 0.0, occ: float = 0.0, progress=None):
    """TV-L1 at one level from ``(u, v)`` (refined in place, and returned); ``edge``, ``occ``: the
    edge-aware smoothness and the occlusion-robust data weight of :func:`gpu_kernels.flow.refine._level`."""
    from .refine import _level

    if warps > 0:
        _level(be, I1, I2, u, v, mask, warps=warps, iters=iters, lam=lam, theta=theta, tau=tau, median=median,
               progress=progress, edge=edge, occ=occ)
    return u, v


def _rf_rows(be: Backend, J, A):
    """The recursive filter along the last axis of ``J`` (C, R, L), in place; ``A`` (R, L - 1)."""
    C, R, L = J.shape
    if be.is_gpu:
        _gpu.kernel(be, _SRC, "is_rf_rows")(_gpu.grid1d(R, 64), (64,), (J, A, _gpu.i32(C), _gpu.i32(R), _gpu.i32(L)))
        return J
    T = np.ascontiguousarray(J.transpose(2, 0, 1))        # (L, C, R): each step a contiguous slice
    At = np.ascontiguousarray(A.T)[:, None, :]
    for x in range(1, L):
        T[x] += At[x - 1] * (T[x - 1] - T[x])
    for x in range(L - 2, -1, -1):
        T[x] += At[x] * (T[x + 1] - T[x])
    J[...] = T.transpose(1, 2, 0)
    return J


def edge_aware_fill(be: Backend, guide, u, v, ok, *, sigma_s: float = FILL_SIGMA_S, sigma_r: float = FILL_SIGMA_R,
                    passes: int = FILL_PASSES):
    """``(u, v)`` where ``ok`` (0/1), elsewhere the normalised convolution of ``ok * (u, v)``
    by the domain transform's recursive filter guided by ``guide`` (Gastal & Oliveira,
    "Domain transform for edge-aware image and video processing", 2011): flow spreads from
    the consistent pixels along the image, not across its edges. Pixels no consistent pixel
    reaches keep their flow."""
    xp = be.xp
    f = xp.float32
    H, W = u.shape
    k = f(sigma_s / sigma_r)
    if be.is_gpu and RF_SEGMENTS > 0:
        return _edge_aware_fill_segments(be, guide, u, v, ok, float(k), passes, sigma_s)
    dx = f(1) + k * xp.abs(guide[:, 1:] - guide[:, :-1])               # (H, W - 1)
    dy = xp.ascontiguousarray((f(1) + k * xp.abs(guide[1:] - guide[:-1])).T)   # (W, H - 1)
    J = xp.stack([u * ok, v * ok, ok]).astype(xp.float32)
    if be.is_gpu and RF_COALESCED:
        # the coalesced kernel: rows on the transposed stack, columns in place; the same steps
        gt = xp.ascontiguousarray(guide.T)
        dxt = f(1) + k * xp.abs(gt[1:] - gt[:-1])                  # (W - 1, H)
        dyc = f(1) + k * xp.abs(guide[1:] - guide[:-1])            # (H - 1, W)
        kr = _gpu.kernel(be, _SRC, "is_rf_axis1")
        for i in range(passes):
            sig = sigma_s * math.sqrt(3.0) * 2.0 ** (passes - i - 1) / math.sqrt(4.0 ** passes - 1.0)
            la = f(-math.sqrt(2.0) / sig)
            if W > 1:
                Jt = xp.ascontiguousarray(J.transpose(0, 2, 1))
                kr(_gpu.grid1d(3 * H, 128), (128,), (Jt, xp.exp(la * dxt), _gpu.i32(3), _gpu.i32(W), _gpu.i32(H)))
                J = xp.ascontiguousarray(Jt.transpose(0, 2, 1))
            if H > 1:
                kr(_gpu.grid1d(3 * W, 128), (128,), (J, xp.exp(la * dyc), _gpu.i32(3), _gpu.i32(H), _gpu.i32(W)))
        passes = 0
    for i in range(passes):
        sig = sigma_s * math.sqrt(3.0) * 2.0 ** (passes - i - 1) / math.sqrt(4.0 ** passes - 1.0)
        la = f(-math.sqrt(2.0) / sig)
        if W > 1:
            J = _rf_rows(be, J, xp.exp(la * dx))
        if H > 1:
            J = xp.ascontiguousarray(_rf_rows(be, xp.ascontiguousarray(J.transpose(0, 2, 1)), xp.exp(la * dy))
                                     .transpose(0, 2, 1))
    den = J[2]
    keep = (ok > 0) | (den < f(1e-4))
    safe = xp.where(keep, f(1), den)
    return (xp.where(keep, u, J[0] / safe).astype(xp.float32), xp.where(keep, v, J[1] / safe).astype(xp.float32))


def _edge_aware_fill_segments(be: Backend, guide, u, v, ok, k: float, passes: int, sigma_s: float):
    """:func:`edge_aware_fill` on the GPU in ``2 passes + 2`` launches: the stack, each pass's rows
    (is_rf_rows_seg, a row a block in shared memory) and columns (is_rf_cols, coalesced), both split
    into segments and with their weights from the guide on the fly, and the result."""
    xp = be.xp
    H, W = u.shape
    n = H * W
    guide, u, v, ok = (xp.ascontiguousarray(a, dtype=xp.float32) for a in (guide, u, v, ok))
    J = xp.empty((3, H, W), xp.float32)
    grid, T = _gpu.grid1d(n), (_gpu.THREADS,)
    _gpu.kernel(be, _SRC, "is_fill_stack")(grid, T, (u, v, ok, J, _gpu.i64(n)))
    kr = _gpu.kernel(be, _SRC, "is_rf_rows_seg")
    smem = 4 * 4 * W
    set_max_dynamic_smem(kr, smem)
    kc = _gpu.kernel(be, _SRC, "is_rf_cols")
    nr = max(1, min(32, RF_SEGMENTS, (W - 1) // RF_MIN_STEPS))
    nc = max(1, min(32, RF_SEGMENTS, (H - 1) // RF_MIN_STEPS))
    for i in range(passes):
        sig = sigma_s * math.sqrt(3.0) * 2.0 ** (passes - i - 1) / math.sqrt(4.0 ** passes - 1.0)
        la = _gpu.f32(-math.sqrt(2.0) / sig)
        if W > 1:
            kr((H,), (nr, 3), (J, guide, _gpu.i32(3), _gpu.i32(H), _gpu.i32(W), la, _gpu.f32(k)), shared_mem=smem)
        if H > 1:
            kc((-(-W // 32), 3), (32, nc), (J, guide, _gpu.i32(3), _gpu.i32(H), _gpu.i32(W), la, _gpu.f32(k)))
    uo, vo = xp.empty((H, W), xp.float32), xp.empty((H, W), xp.float32)
    _gpu.kernel(be, _SRC, "is_fill_result")(grid, T, (J, u, v, ok, uo, vo, _gpu.i64(n)))
    return uo, vo


def fill_inconsistent(be: Backend, g1, g2, u, v, backward, *, threshold: float = DEFAULT_FILL,
                      ncc: float = FILL_NCC, sigma_s: float = FILL_SIGMA_S, tick=None):
    """The flow ``(u, v)`` with the pixels more than ``threshold`` px from forward-backward
    consistent (``|f + b(x + f)|``, ``backward = (ub, vb)``: occlusions, mismatches) and with a
    local NCC confidence (:func:`gpu_kernels.flow.ncc_confidence`, 7 x 7) under ``ncc``
    replaced by :func:`edge_aware_fill` of the others (EpicFlow's idea, interpolating matches
    along the image's edges, with a filter in place of geodesic nearest neighbours). ``tick``:
    called between the long steps (cancel checks, :class:`_Ticks`)."""
    from gpu_kernels.ops.warp import _warp2d

    from .refine import _ncc_conf

    xp = be.xp
    bw = _warp2d(be, xp.ascontiguousarray(xp.stack(backward)), u, v)
    if tick is not None:
        tick("fill")
    conf = _ncc_conf(be, g1, g2, u, v, None, window=7)
    if tick is not None:
        tick("fill")
    if be.is_gpu and FUSED_MAPS:
        n = u.size
        ok = xp.empty(u.shape, xp.float32)
        _gpu.kernel(be, _SRC, "is_fill_ok")(_gpu.grid1d(n), (_gpu.THREADS,), (
            u, v, bw, conf, ok, _gpu.f32(threshold * threshold), _gpu.f32(ncc), _gpu.i64(n)))
        return edge_aware_fill(be, g1, u, v, ok, sigma_s=sigma_s)
    du, dv = u + bw[0], v + bw[1]
    ok = (du * du + dv * dv) <= xp.float32(threshold * threshold)
    ok = (ok | (conf >= xp.float32(ncc))).astype(xp.float32)
    return edge_aware_fill(be, g1, u, v, ok, sigma_s=sigma_s)


def quality_map(be: Backend, g1, g2, u, v, mask=None, *, window: int = 7, backward=None, tick=None):
    """Confidence 0..1 of the final flow.

    Without ``backward``: the local NCC of the first frame and the warped second, lowered at
    motion boundaries (:func:`gpu_kernels.flow.ncc_confidence`). With ``backward = (ub, vb)``
    (a flow from the second frame to the first, from a level coarser)::

        [(0.1 + ncc) / 1.1 / (1 + (d / 0.125)^2) / (1 + |f| / 12.5) / (1 + r / 0.01)] ** 0.25

    with ``d = |f + b(x + f)|`` the forward-backward distance and ``r = |I2(x + f) - I1(x)|``
    the photometric residual (intensities 0..1): forward-backward consistency catches occlusions
    and mismatches that still warp well (flat areas, repeated texture), the residual catches
    pixels that do not warp well, the NCC term orders the consistent pixels, and large motions
    are trusted less. The decays are rational, not Gaussian, so the map still orders pixels that
    are far from consistent (a Gaussian of ``d`` is 0 for all of them); the fourth root only
    rescales it (the order, and so the sparsification, is that of the product) so that
    "matching failed" (below 0.25 in the window) keeps its recall and flags about half as many
    good pixels. Chosen among about 170 variants on the shared pairs and our large-motion set, checked
    on the held-out set and by leaving one pair out (benchmarks/results/flow_session3.md).
    ``tick``: called between the long steps (cancel checks and progress, :class:`_Ticks`).
    """
    from gpu_kernels.ops.warp import _warp2d

    from .refine import _ncc_conf

    q = _ncc_conf(be, g1, g2, u, v, mask, window=window, tick=tick)
    if backward is None:
        return q
    xp = be.xp
    # b sampled at x + f with the edge replicated: a target off the frame is judged by the
    # backward flow at the edge (the NCC term is 0 there already)
    planes = xp.ascontiguousarray(xp.stack([backward[0], backward[1], g2]))
    if be.is_gpu or tick is None:
        bw = _warp2d(be, planes, u, v)
    else:   # _warp2d's NumPy path in bands, with cancel checks between them
        from .refine import _bilinear_bands

        H, W = u.shape
        bw = _bilinear_bands(planes, np.arange(W, dtype=np.float32)[None, :] + u,
                             np.arange(H, dtype=np.float32)[:, None] + v, tick, "quality map: forward-backward")
    f = xp.float32
    if be.is_gpu and FUSED_MAPS:
        n = u.size
        out = xp.empty(u.shape, xp.float32)
        _gpu.kernel(be, _SRC, "is_quality_fb")(_gpu.grid1d(n), (_gpu.THREADS,), (
            q, bw, u, v, g1, mask if mask is not None else q, _gpu.i32(mask is not None), out, f(QM_NCC_FLOOR),
            f(1 / (1 + QM_NCC_FLOOR)), f(1 / QM_FB_SCALE ** 2), f(1 / QM_MAG), f(1 / QM_RESIDUAL), _gpu.i64(n)))
        return out
    du = u + bw[0]
    dv = v + bw[1]
    r = xp.abs(bw[2] - g1)
    f = xp.float32
    out = ((f(QM_NCC_FLOOR) + q) * f(1 / (1 + QM_NCC_FLOOR))
           / ((f(1) + (du * du + dv * dv) * f(1 / QM_FB_SCALE ** 2)) * (f(1) + xp.sqrt(u * u + v * v) * f(1 / QM_MAG))
              * (f(1) + r * f(1 / QM_RESIDUAL))))
    out = xp.sqrt(xp.sqrt(xp.maximum(out, f(0))))
    if mask is not None:
        out = out * mask
    return xp.ascontiguousarray(out.astype(xp.float32))


# ----------------------------------------------------------------------------- driver
def coarse_to_fine(be: Backend, p1, p2, pm, *, work: int, patch, stride, iters, rounds, radius,
                   finest_patch_level, warps, tv_iters, lam, median, eps, prior, edge=0.0, occ=0.0, radius_levels=1,
                   progress=None, to: int = 0):
    """Stages 2-4 over the pyramids ``p1``, ``p2`` (finest first): at each level from the
    coarsest to ``work``, coarse matching and densification (levels ``>= work +
    finest_patch_level``, and always the coarsest), then TV-L1; below ``work`` the flow is only
    upsampled. Returns ``(u, v)`` at level ``to`` (0: full resolution)."""
    xp = be.xp
    progress = as_progress(progress)
    if not be.is_gpu:
        _numba.prepare(progress)       # the first CPU flow says when it compiles the kernels
    L = len(p1) - 1
    u = v = None
    # the levels share the bar by their pixels (the finest working level has about 3/4 of the
    # work; equal shares left the bar at 56 % for 57 % of a run)
    npix = {lev: float(p1[lev].shape[0] * p1[lev].shape[1]) for lev in range(work, L + 1)}
    total, done = sum(npix.values()) or 1.0, 0.0
    for lev in range(L, min(to, work) - 1, -1):
        I1, I2 = p1[lev], p2[lev]
        H, W = I1.shape
        if u is None:
            u = xp.zeros((H, W), xp.float32)
            v = xp.zeros((H, W), xp.float32)
        else:
            u = _pyr_up(be, u, (H, W), (0, 1), value_scale=2.0)
            v = _pyr_up(be, v, (H, W), (0, 1), value_scale=2.0)
        if lev < work:
            continue            # finer than the working level: upsampled only
        if (lev >= work + finest_patch_level or lev == L) and min(H, W) >= patch:
            pu, pv, _, conf = coarse_match(be, I1, I2, u, v, patch=patch, stride=stride, iters=iters, rounds=rounds,
                                           radius=radius if lev > L - radius_levels else 0)
            u, v = densify(be, I1, I2, pu, pv, conf, u, v, patch=patch, eps=eps, prior=prior)
            matched = 0.6  # measured on the CPU: matching and densification take ~60 % of such a level
            progress.update((done + matched * npix[lev]) / total, f"level {L + 1 - lev}/{L + 1 - work}: matched")
        else:
            matched = 0.0
        k = lev - work
        w = warps[k] if k < len(warps) else warps[-1]
        u, v = refine_level(be, I1, I2, u, v, warps=w, iters=tv_iters, lam=lam, median=median, edge=edge, occ=occ,
                            mask=pm[lev] if pm is not None else None,
                            progress=progress.sub((done + matched * npix[lev]) / total,
                                                  (done + npix[lev]) / total))  # per warp (CPU)
        done += npix[lev]
        progress.update(done / total, f"level {L + 1 - lev}/{L + 1 - work}")
    return u, v


@dataclass
class Pyramids:
    """Stage 1's output: the prepared grey frames, their pyramids (finest first) after the
    pre-blur, the mask's pyramid (None without a mask) and the working level."""

    g1: Any
    g2: Any
    mask: Any
    p1: list
    p2: list
    pm: list | None
    work: int

    @property
    def coarsest(self) -> int:
        return len(self.p1) - 1


def pyramids(be: Backend, g1, g2, mask=None, *, patch: int = DEFAULT_PATCH, blur: float = DEFAULT_BLUR,
             max_pixels: int = DEFAULT_MAX_PIXELS, max_level: int | None = None, tick=None) -> Pyramids:
    """Stage 1: the pyramids of two prepared grey frames (and of the mask), down to
    :func:`coarsest_level` (or ``max_level``), and the working level. ``tick``: see
    :func:`build_pyramids`."""
    xp = be.xp
    L = coarsest_level(g1.shape, patch)
    if max_level is not None:
        L = min(L, max_level)
    p1, p2 = build_pyramids(be, g1, g2, L + 1, blur=blur, tick=tick)
    pm = None
    if mask is not None:
        pm = [mask]
        for _ in range(L):
            pm.append(xp.ascontiguousarray((_pyr_down(be, pm[-1], (0, 1)) >= 0.5).astype(xp.float32)))
    return Pyramids(g1, g2, mask, p1, p2, pm, working_level(g1.shape, max_pixels, L))


def solve(be: Backend, pyr: Pyramids, *, backward: int = 0, progress=None, to: int = 0, **kw):
    """Stage 2: ``(u, v)`` at level ``to`` (0: full resolution; at most the working level) by
    :func:`coarse_to_fine` (``kw``: its parameters). ``backward`` > 0: the flow from the second
    frame to the first instead, solved ``backward`` levels coarser than the working level (for the
    quality map)."""
    if backward:
        return coarse_to_fine(be, pyr.p2, pyr.p1, None, work=min(pyr.work + backward, pyr.coarsest),
                              progress=progress, to=to, **kw)
    return coarse_to_fine(be, pyr.p1, pyr.p2, pyr.pm, work=pyr.work, progress=progress, to=to, **kw)


def upsample(be: Backend, pyr: Pyramids, u, v, level: int, *, tick=None):
    """``(u, v)`` at pyramid level ``level`` brought to full resolution as :func:`coarse_to_fine`
    brings the working level's flow (one :func:`~gpu_kernels.ops.pyramid.pyr_up` per level).
    ``tick``: called after each level (a cancel check, see :class:`_Ticks`)."""
    for lev in range(level - 1, -1, -1):
        H, W = pyr.p1[lev].shape
        u = _pyr_up(be, u, (H, W), (0, 1), value_scale=2.0)
        v = _pyr_up(be, v, (H, W), (0, 1), value_scale=2.0)
        if tick is not None:
            tick("upsampling", 0.25 ** lev)   # its share of the bar by the level's pixels
    return u, v


class _Ticks:
    """Cancel checks and progress between the long full-resolution steps of stage 3 (upsampling,
    the fill, the quality map's warps and filters): on the CPU a 12 Mpx pair spends about 8 s
    there, and Cancel used to wait for all of it (16.7 s in the window). Each call checks for
    cancel (:meth:`gpu_kernels.jobs.Progress.update`) and moves the bar one of ``n`` steps from
    ``start`` to 1; nothing here touches the arrays, so the results are the same bits."""

    def __init__(self, progress, start: float, n: int):
        self.progress, self.start, self.n, self.i = progress, float(start), max(1.0, float(n)), 0.0

    def __call__(self, stage: str | None = None, share: float = 1.0) -> None:
        self.i += share
        self.progress.update(self.start + (1.0 - self.start) * min(1.0, self.i / self.n), stage)


def quality_stage(be: Backend, pyr: Pyramids, u, v, *, quality: str = DEFAULT_QUALITY,
                  fb_level: int = DEFAULT_FB_LEVEL, fb_warps=DEFAULT_FB_WARPS, fb_iters=DEFAULT_FB_ITERS,
                  fill: float = DEFAULT_FILL, progress=None, back=None, **kw):
    """Stage 3: the forward-backward fill (``fill`` > 0) and the quality map of the flow ``(u,
    v)`` at the working level (stage 2's; ``kw``: the flow's parameters, for the backward flow,
    unless ``back`` gives it, at the same level); returns the full-resolution ``(u, v, q)`` with the
    mask applied (new arrays). The fill runs at the working level (:data:`FILL_AT_WORK`; its scales
    in pixels of that level), the quality map at full resolution."""
    progress = as_progress(progress)
    lev = pyr.work
    solve_back = back is None and (quality == "fb" or fill > 0)
    # the bar: the backward flow (at a coarse level) its share by pixels, against the full-
    # resolution steps (about 25 times cheaper per pixel than a level's solve on the CPU)
    full = float(pyr.g1.shape[0] * pyr.g1.shape[1])
    coarse = full * 0.25 ** min(lev + fb_level, pyr.coarsest) * 25.0 if solve_back else 0.0
    start = coarse / (coarse + full)
    if solve_back:
        back = _backward(be, pyr, fb_level, fb_warps, fb_iters, progress.sub(0.0, start), kw, lev)
    fill_work = fill > 0 and FILL_AT_WORK and lev > 0
    ups = sum(0.25 ** i for i in range(lev))      # the upsampling levels' shares (pixels, full = 1)
    from .refine import NCC_CONF_TICKS

    steps = (ups * (1 + (back is not None)) + (1 if fill_work else 2 * (fill > 0)) + NCC_CONF_TICKS
             + (quality == "fb" and back is not None))
    tick = _Ticks(progress, start, steps)
    if fill_work:
        s = 0.5 ** lev
        u, v = fill_inconsistent(be, pyr.p1[lev], pyr.p2[lev], u, v, back, threshold=fill * s,
                                 sigma_s=FILL_SIGMA_S * s)
        tick("fill")
        fill = 0.0
    u, v = upsample(be, pyr, u, v, lev, tick=tick)
    if back is not None:
        back = upsample(be, pyr, back[0], back[1], lev, tick=tick)
    if fill > 0:
        u, v = fill_inconsistent(be, pyr.g1, pyr.g2, u, v, back, threshold=fill, tick=tick)
    q = quality_map(be, pyr.g1, pyr.g2, u, v, pyr.mask, backward=back if quality == "fb" else None, tick=tick)
    if pyr.mask is not None:
        u, v = u * pyr.mask, v * pyr.mask
    return u, v, q


def _pipeline(be: Backend, g1, g2, mask, *, max_level, blur=DEFAULT_BLUR, max_pixels=DEFAULT_MAX_PIXELS,
              quality=DEFAULT_QUALITY, fb_level=DEFAULT_FB_LEVEL, fb_warps=DEFAULT_FB_WARPS,
              fb_iters=DEFAULT_FB_ITERS, fill=DEFAULT_FILL, progress=None, **kw):
    """The three stages in one go (what :func:`inverse_search_flow` captures as one CUDA graph)."""
    progress = as_progress(progress)
    pyr = pyramids(be, g1, g2, mask, patch=kw["patch"], blur=blur, max_pixels=max_pixels, max_level=max_level)
    fw = 0.8 if quality == "fb" or fill > 0 else 0.95
    side = _side_stream(be) if quality == "fb" or fill > 0 else None
    if side is None:
        u, v = solve(be, pyr, progress=progress.sub(0.0, fw, "flow"), to=pyr.work, **kw)
        return quality_stage(be, pyr, u, v, quality=quality, fb_level=fb_level, fb_warps=fb_warps,
                             fb_iters=fb_iters, fill=fill, progress=progress.sub(fw, 0.95, "quality map"), **kw)
    # the backward flow on a second stream, forked from and joined to the current one (in a graph
    # plan: two parallel branches), so its latency-bound coarse levels run beside the forward's
    # (the launches are asynchronous: the bar follows the forward flow's, whose launches come second)
    # (capturing the forward branch first measured the same: 5.88 against 5.89 ms)
    main = be.xp.cuda.get_current_stream()
    side.wait_event(main.record())
    with side:
        back = _backward(be, pyr, fb_level, fb_warps, fb_iters, None, kw, pyr.work)
    u, v = solve(be, pyr, progress=progress.sub(0.0, 0.95, "flow"), to=pyr.work, **kw)
    main.wait_event(side.record())
    return quality_stage(be, pyr, u, v, quality=quality, fb_level=fb_level, fb_warps=fb_warps, fb_iters=fb_iters,
                         fill=fill, back=back, **kw)


#: quality="fb" or a fill on the GPU: the backward flow runs on a second stream beside the forward
#: flow (the same kernels and bits; in the graph plan two parallel branches)
CONCURRENT_BACKWARD = True
_side: dict = {}


def _side_stream(be: Backend):
    """The second stream of the current device (made once, outside any capture), or None where the
    backward flow runs after the forward one (CPU, the emulator, :data:`CONCURRENT_BACKWARD` off)."""
    if not (CONCURRENT_BACKWARD and be.is_gpu and hasattr(getattr(be.xp, "cuda", None), "Stream")):
        return None
    key = cache_key(be)  # not the number alone: an emulator's stream must never reach the real device
    s = _side.get(key)
    if s is None:
        cp = be.xp
        if cp.cuda.get_current_stream().is_capturing():
            return None
        s = _side[key] = cp.cuda.Stream(non_blocking=True)
    return s


def _backward(be: Backend, pyr: Pyramids, fb_level, fb_warps, fb_iters, progress, kw, to: int):
    """The backward flow of :func:`quality_stage` (``fb_level`` levels coarser) at level ``to``."""
    bk = dict(kw, warps=fb_warps or kw["warps"], tv_iters=fb_iters or kw["tv_iters"])
    return solve(be, pyr, backward=fb_level, progress=progress, to=to, **bk)


def inverse_search_flow(img1, img2, *, patch: int = DEFAULT_PATCH, stride: int = DEFAULT_STRIDE,
                        iters: int = DEFAULT_SEARCH_ITERS, rounds: int = DEFAULT_ROUNDS, radius: int = DEFAULT_RADIUS,
                        finest_patch_level: int = DEFAULT_FINEST_PATCH_LEVEL, warps=DEFAULT_SEARCH_WARPS,
                        tv_iters: int = DEFAULT_SEARCH_TV_ITERS, lam: float = DEFAULT_SEARCH_LAMBDA,
                        median: int = DEFAULT_SEARCH_MEDIAN, eps: float = DEFAULT_EPS, prior: float = DEFAULT_PRIOR,
                        blur: float = DEFAULT_BLUR, max_pixels: int = DEFAULT_MAX_PIXELS,
                        quality: str = DEFAULT_QUALITY, edge: float = DEFAULT_EDGE, occ: float = DEFAULT_OCC,
                        radius_levels: int = DEFAULT_RADIUS_LEVELS, fb_level: int = DEFAULT_FB_LEVEL,
                        fb_warps=DEFAULT_FB_WARPS, fb_iters: int | None = DEFAULT_FB_ITERS, fill: float = DEFAULT_FILL,
                        levels: int | None = None, mask=None, device=None, progress=None) -> FlowResult:
    """Flow from ``img1`` to ``img2`` for motions from 0 to a fifth of the image (the default method).

    Parameters
    ----------
    img1, img2 : array_like
        ``(H, W)`` or ``(H, W, C)``, uint8, uint16 or float (0..1), NumPy or CuPy.
    patch : {4, 6, 8, 12}
        Patch side of the inverse search (pixels of each level).
    stride : int
        Largest distance between patch origins.
    iters : int
        Gauss-Newton steps per patch and level.
    rounds : int
        Propagation rounds per level (0: no propagation, ``iters`` steps in one go).
    radius : int
        Integer shifts tried around zero at the coarsest level (pixels of that level).
    finest_patch_level : int
        Finest level with a patch search, counted from the working level (0: that level).
    warps : int or sequence of int
        TV-L1 warps per level, finest first (the last value serves the coarser levels).
    tv_iters : int
        TV-L1 iterations per warp.
    lam : float
        TV-L1 data weight (intensities 0..1).
    median : {5, 3, 0}
        Median filter of the flow after each warp.
    eps, prior : float
        Densification: error floor of the weights, weight of the coarser level's flow.
    blur : float
        Gaussian pre-blur of both frames (pixels; 0: none).
    max_pixels : int
        The finest level solved has at most this many pixels; the flow of larger frames is
        upsampled from it (1080p is solved at 960 x 540).
    quality : {"fb", "ncc"}
        The quality map: local NCC x forward-backward consistency (a backward flow solved one
        level coarser) or the local NCC alone (one pass, faster). See :func:`quality_map`.
    edge : float
        Edge-aware smoothness: the total variation is weighted by ``exp(-edge |grad I1|)``, so
        motions break at the first frame's edges (0: plain TV-L1).
    occ : float
        Occlusion-robust data term: weighted by ``1 / (1 + (r / occ)^2)``, ``r`` the residual
        at the current flow, so pixels that cannot be matched are filled in by the smoothness
        (0: plain L1).
    radius_levels : int
        The integer search of ``radius`` runs at this many of the coarsest levels.
    fb_level : int
        ``quality="fb"``: the backward flow is solved this many levels coarser than the forward.
    fb_warps, fb_iters : optional
        ``quality="fb"``: the backward flow's TV-L1 warps (per level) and iterations per warp
        (None: the forward flow's ``warps`` and ``tv_iters``).
    fill : float
        Pixels more than ``fill`` px from forward-backward consistent (occlusions, mismatches;
        the backward flow is the quality map's) get the flow of the consistent pixels around
        them, spread along the first frame's edges (:func:`fill_inconsistent`; 0: off).
    levels : int, optional
        Pyramid levels (default: the coarsest level has about four patches across).
    mask, device, progress
        As for :func:`~gpu_kernels.flow.tvl1_refine`.

    Returns
    -------
    FlowResult
        ``u``, ``v``, ``quality`` (local NCC confidence), method ``"search"``.
    """
    params = search_params(patch=patch, stride=stride, iters=iters, rounds=rounds, radius=radius,
                           finest_patch_level=finest_patch_level, warps=warps, tv_iters=tv_iters, lam=lam,
                           median=median, eps=eps, prior=prior, blur=blur, max_pixels=max_pixels, quality=quality,
                           edge=edge, occ=occ, radius_levels=radius_levels, fb_level=fb_level, fb_warps=fb_warps,
                           fb_iters=fb_iters, fill=fill, levels=levels)
    be = get_backend(device)
    progress = as_progress(progress)
    with be.activate():
        a, b = check_pair(be, img1, img2)
        m = prepare_mask(be, mask, a.shape[:2])

        def build(x, y):
            return _pipeline(be, _gray(be, x), _gray(be, y), m, progress=progress, **_kw(params))

        key = ("search",) + tuple(params.items())
        u, v, q = _plan.run(be, key, [a, b], build) if m is None else build(a, b)
        progress.update(1.0, "flow done")
    return _result(be, params, a.shape, u, v, q, m)


def _result(be, params, shape, u, v, q, m) -> FlowResult:
    params = dict(params)
    ml = params.pop("max_level")
    params["levels"] = (coarsest_level(shape, params["patch"]) if ml is None else
                        min(ml, coarsest_level(shape, params["patch"]))) + 1
    return FlowResult(u, v, q, "search", be.label, params, {}, m)


def _kw(params: dict) -> dict:
    return {k: x for k, x in params.items() if k not in ("levels",)}


def search_params(*, levels: int | None = None, **kw) -> dict:
    """The parameters of :func:`inverse_search_flow` (the defaults filled in), checked: each
    bad value raises a one-line :class:`FlowInputError`. ``levels`` becomes ``max_level``."""
    import inspect

    sig = inspect.signature(inverse_search_flow).parameters
    unknown = set(kw) - set(sig)
    if unknown:
        raise FlowInputError(f"the search method has no parameter {sorted(unknown)[0]!r}")
    p = {k: kw.get(k, sig[k].default) for k in _NAMES}
    p["patch"] = patch = check_int("patch", p["patch"], 4, 12, choices=PATCH_SIZES)
    p["stride"] = check_int("stride", p["stride"], 1, patch)
    for k, lo, hi in (("iters", 0, 500), ("rounds", 0, 20), ("radius", 0, 32), ("finest_patch_level", 0, 12),
                      ("tv_iters", 1, 500), ("radius_levels", 1, 12), ("fb_level", 0, 12), ("max_pixels", 64, None)):
        p[k] = check_int(k, p[k], lo, hi)
    p["warps"] = _warps("warps", p["warps"])
    p["fb_warps"] = None if p["fb_warps"] is None else _warps("fb_warps", p["fb_warps"])
    p["fb_iters"] = None if p["fb_iters"] is None else check_int("fb_iters", p["fb_iters"], 1, 500)
    p["lam"] = check_float("lam", p["lam"], 0.0, lo_open=True)
    m = p["median"]
    p["median"] = 5 if m is True else (0 if m is False else check_int("median", m, 0, choices=(0, 3, 5)))
    p["eps"] = check_float("eps", p["eps"], 0.0, lo_open=True)
    p["prior"] = check_float("prior", p["prior"], 0.0)
    p["blur"] = check_float("blur", p["blur"], 0.0, 10.0)
    p["edge"] = check_float("edge", p["edge"], 0.0, 1000.0)
    p["occ"] = check_float("occ", p["occ"], 0.0, 10.0)
    p["fill"] = check_float("fill", p["fill"], 0.0, 1000.0)
    if p["quality"] not in QUALITIES:
        raise FlowInputError(f"unknown quality map {p['quality']!r}: use one of {', '.join(QUALITIES)}")
    p["max_level"] = None if levels is None else check_int("levels", levels, 1, 12) - 1
    return p


def _warps(name, warps) -> tuple:
    if isinstance(warps, int | np.integer):
        warps = (int(warps),)
    try:
        warps = tuple(check_int(name, w, 0, 50) for w in warps)
    except TypeError:
        raise FlowInputError(f"{name} must be an integer or a list of integers, got {warps!r}") from None
    if not warps:
        raise FlowInputError(f"{name} must not be empty")
    return warps


_NAMES = ("patch", "stride", "iters", "rounds", "radius", "finest_patch_level", "warps", "tv_iters", "lam", "median",
          "eps", "prior", "blur", "max_pixels", "quality", "edge", "occ", "radius_levels", "fb_level", "fb_warps", "fb_iters", "fill")
_PYR = ("patch", "blur", "max_pixels", "max_level")
_SOLVE = ("patch", "stride", "iters", "rounds", "radius", "finest_patch_level", "warps", "tv_iters", "lam", "median",
          "eps", "prior", "edge", "occ", "radius_levels")


# ----------------------------------------------------------------------------- the stages, one call each
def stage_pyramids(img1, img2, params: dict, *, mask=None, device=None, progress=None) -> Pyramids:
    """Stage 1 of a staged run (the window's live tuning): the checked frames' pyramids.
    ``params`` from :func:`search_params`. ``progress``: a cancel check and a step of the bar
    between the full-size steps (1.7 s at 12 Mpx on the CPU; the arrays are the same)."""
    be = get_backend(device)
    tick = _Ticks(as_progress(progress), 0.0, 14)
    with be.activate():
        a, b = check_pair(be, img1, img2)
        tick("checking", 2.0)
        m = prepare_mask(be, mask, a.shape[:2])
        g1 = _gray(be, a)
        tick("grey", 2.0)
        g2 = _gray(be, b)
        tick("grey", 2.0)
        return pyramids(be, g1, g2, m, tick=tick, **{k: params[k] for k in _PYR})


def stage_flow(pyr: Pyramids, params: dict, *, device=None, progress=None):
    """Stage 2: the flow ``(u, v)`` at the working level (new arrays, unmasked) from the pyramids
    of stage 1 (stage 3 brings it to full resolution)."""
    be = get_backend(device)
    with be.activate():
        return solve(be, pyr, progress=progress, to=pyr.work, **{k: params[k] for k in _SOLVE})


def stage_quality(pyr: Pyramids, flow, params: dict, *, device=None, progress=None) -> FlowResult:
    """Stage 3: the quality map of stage 2's flow, and the result (the same arrays as
    :func:`inverse_search_flow` with these parameters gives)."""
    be = get_backend(device)
    with be.activate():
        u, v, q = quality_stage(be, pyr, flow[0], flow[1], quality=params["quality"], fb_level=params["fb_level"],
                                fb_warps=params["fb_warps"], fb_iters=params["fb_iters"], fill=params["fill"],
                                progress=progress,
                                **{k: params[k] for k in _SOLVE})
    return _result(be, params, pyr.g1.shape, u, v, q, pyr.mask)
