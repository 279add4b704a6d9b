"""Multi-scale block matching with normalised cross-correlation (NCC), coarse to fine.

The paper's first method (Marras et al., section 3.2), with the best-match search moved to
the GPU. Per pyramid level, coarsest first (``cuda/flow_bm.cu``):

1. The first image is cut into ``block x block`` blocks (the last column and row of blocks
   are moved inwards to end at the border, so odd sizes are covered). Each block's mean and
   standard deviation are computed once and its normalised values ``a = (x - mean) / sd``
   stored.
2. For every window position of the second image, ``1 / (n sd)`` of the window there is
   computed once, so the NCC of a candidate is a sum of products:
   ``NCC = sum(a * window) / (n sd_window)`` (``sum(a) = 0`` removes the window's mean).
3. Each block searches the shifts within ``radius`` of its prediction (the coarser level's
   field, doubled; zero at the coarsest level); a reduction in shared memory finds the best
   NCC; a parabola through the NCC of the neighbouring shifts gives the sub-pixel offset.
4. A 3 x 3 median of the block vectors removes isolated wrong matches before they predict
   the next level (``median=True``).

Output: one vector per block (``extras``), the dense field interpolated bilinearly between
block centres, and the quality map, the NCC at the peak in 0..1 times
``sd^2 / (sd^2 + flat_sigma^2)``, so flat blocks get low quality.

Images larger than the device can hold are processed in tiles with halos wide enough that
every tile's inner part is computed from the same data as in one piece: the result is the
same (``tile_size``).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow import block_matching
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> img1, img2, gt, valid = synthetic_pair("translation", size=(96, 128), magnitude=6.0)
>>> res = block_matching(img1, img2, levels=3, device="cpu")
>>> err = np.hypot(res.u - gt[..., 0], res.v - gt[..., 1])[16:-16, 16:-16]
>>> bool(np.median(err) < 0.3)
True
"""

from __future__ import annotations

import math

import numpy as np

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.errors import TooLargeError
from gpu_kernels.jobs import as_progress
from gpu_kernels.ops import _gpu
from gpu_kernels.ops.color import _gray
from gpu_kernels.ops.pyramid import _pyr_down, pyramid_levels

from . import _plan
from ._common import FlowResult, check_float, check_int, check_pair, prepare_mask, prepare_pair

__all__ = [
    "DEFAULT_BM_LEVELS",
    "DEFAULT_BLOCK",
    "DEFAULT_RADIUS",
    "DEFAULT_FLAT_SIGMA",
    "DEFAULT_BM_MEDIAN",
    "BLOCK_SIZES",
    "MAX_RADIUS",
    "block_matching",
    "bm_halo",
]

#: pyramid levels (the paper's 5)
DEFAULT_BM_LEVELS = 5
from gpu_kernels.flow import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: block side in pixels
DEFAULT_BLOCK = _d.BM_BLOCK
BLOCK_SIZES = (4, 8, 16)
#: search radius at every level, pixels of that level
DEFAULT_RADIUS = _d.BM_RADIUS
MAX_RADIUS = _d.BM_MAX_RADIUS
#: texture level (standard deviation, intensities 0..1) at which a block's quality is halved
DEFAULT_FLAT_SIGMA = 0.01
#: 3 x 3 median of the block vectors at each level
DEFAULT_BM_MEDIAN = True
#: blocks whose standard deviation is below this are flat: no search, quality 0
FLAT_EPS = 1e-5

_SRC = "flow_bm.cu"
_BYTES_PER_PIXEL = 48   # device bytes per pixel of one piece (pyramids, window stats, blocks, outputs)


# ----------------------------------------------------------------------------- geometry
def _origins(nb: int, B: int, n: int) -> np.ndarray:
    return np.minimum(np.arange(nb) * B, n - B)


def _centers(nb: int, B: int, n: int) -> np.ndarray:
    return _origins(nb, B, n).astype(np.float32) + np.float32(0.5 * (B - 1))


def _interval(x: np.ndarray, nb: int, B: int, n: int):
    """NumPy twin of ``bm_interval``: (b0, b1, w) for float32 coordinates ``x``."""
    c = _centers(nb, B, n)
    x = np.asarray(x, dtype=np.float32)
    b = np.floor((x - np.float32(0.5 * (B - 1))) / np.float32(B)).astype(np.int64)
    b = np.clip(b, 0, nb - 1)
    nxt = np.minimum(b + 1, nb - 1)
    b = np.where((b + 1 < nb) & (c[nxt] <= x), b + 1, b)
    b = np.where((b > 0) & (c[b] > x), b - 1, b)
    b1 = np.minimum(b + 1, nb - 1)
    den = np.where(b1 > b, c[b1] - c[b], np.float32(1))
    w = np.where(b1 > b, np.clip((x - c[b]) / den, np.float32(0), np.float32(1)), np.float32(0)).astype(np.float32)
    return b, b1, w


def _sample_np(f, y0, y1, wy, x0, x1, wx):
    f00, f01 = f[y0, x0], f[y0, x1]
    f10, f11 = f[y1, x0], f[y1, x1]
    top = f00 + wx * (f01 - f00)
    bot = f10 + wx * (f11 - f10)
    return (top + wy * (bot - top)).astype(np.float32)


def _median3_np(f: np.ndarray) -> np.ndarray:
    from scipy import ndimage

    return ndimage.median_filter(f, size=3, mode="nearest").astype(np.float32)


# ----------------------------------------------------------------------------- CPU level
def _winstats_np(I2: np.ndarray, B: int) -> np.ndarray:
    x = I2.astype(np.float64)
    c1 = np.zeros((x.shape[0] + 1, x.shape[1] + 1))
    c2 = np.zeros_like(c1)
    c1[1:, 1:] = x.cumsum(0).cumsum(1)
    c2[1:, 1:] = (x * x).cumsum(0).cumsum(1)

    def box(c):
        return c[B:, B:] - c[:-B, B:] - c[B:, :-B] + c[:-B, :-B]

    nn = float(B * B)
    mean = box(c1) / nn
    var = box(c2) / nn - mean * mean
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(var > 1e-12, 1.0 / (nn * np.sqrt(np.maximum(var, 1e-300))), 0.0).astype(np.float32)


def _level_np(I1, I2, m, B, R, coarse, flat_sigma):
    H, W = I1.shape
    nbx, nby = -(-W // B), -(-H // B)
    ox, oy = _origins(nbx, B, W), _origins(nby, B, H)
    ar = np.arange(B)
    P = I1[(oy[:, None] + ar)[:, None, :, None], (ox[:, None] + ar)[None, :, None, :]]  # (nby, nbx, B, B)
    mean = P.mean(axis=(2, 3), dtype=np.float32)
    dev = P - mean[..., None, None]
    sd = np.sqrt((dev * dev).mean(axis=(2, 3), dtype=np.float32)).astype(np.float32)
    inv = np.where(sd > 0, np.float32(1) / np.where(sd > 0, sd, np.float32(1)), np.float32(0)).astype(np.float32)
    A = (dev * inv[..., None, None]).astype(np.float32)
    if m is not None:
        mm = m[(oy[:, None] + ar)[:, None, :, None], (ox[:, None] + ar)[None, :, None, :]].mean(
            axis=(2, 3), dtype=np.float32)
        valid = mm >= 0.5
    else:
        valid = np.ones((nby, nbx), bool)
    active = (sd > FLAT_EPS) & valid
    winv = _winstats_np(I2, B)
    if coarse is not None:
        cu, cv, cW, cH = coarse
        cnby, cnbx = cu.shape
        x0, x1, wx = _interval(np.float32(0.5) * _centers(nbx, B, W), cnbx, B, cW)
        y0, y1, wy = _interval(np.float32(0.5) * _centers(nby, B, H), cnby, B, cH)
        Y0, X0 = y0[:, None], x0[None, :]
        Y1, X1 = y1[:, None], x1[None, :]
        WY, WX = wy[:, None], wx[None, :]
        pu = np.float32(2) * _sample_np(cu, Y0, Y1, WY, X0, X1, WX)
        pv = np.float32(2) * _sample_np(cv, Y0, Y1, WY, X0, X1, WX)
    else:
        pu = np.zeros((nby, nbx), np.float32)
        pv = pu
    sx = np.clip(ox[None, :] + np.rint(pu).astype(np.int64), 0, W - B)
    sy = np.clip(oy[:, None] + np.rint(pv).astype(np.int64), 0, H - B)
    K = 2 * R + 3
    ncc = np.full((nby, nbx, K, K), -2.0, np.float32)
    for j, dy in enumerate(range(-R - 1, R + 2)):
        cy = sy + dy
        for i, dx in enumerate(range(-R - 1, R + 2)):
            cx = sx + dx
            ok = active & (cx >= 0) & (cy >= 0) & (cx <= W - B) & (cy <= H - B)
            cxc, cyc = np.clip(cx, 0, W - B), np.clip(cy, 0, H - B)
            Q = I2[(cyc[..., None, None] + ar[:, None]), (cxc[..., None, None] + ar[None, :])]
            s = np.einsum("abij,abij->ab", A, Q, dtype=np.float32) * winv[cyc, cxc]
            ncc[..., j, i] = np.where(ok, s, np.float32(-2))
    inner = ncc[..., 1:-1, 1:-1].reshape(nby, nbx, -1)
    best = inner.argmax(axis=-1)
    c0 = np.take_along_axis(inner, best[..., None], -1)[..., 0]
    ty = best // (2 * R + 1) + 1
    tx = best % (2 * R + 1) + 1
    ctr = R + 1
    ty = np.where(active, ty, ctr)
    tx = np.where(active, tx, ctr)
    c0 = np.where(active, c0, np.float32(0))
    gy, gx = np.meshgrid(np.arange(nby), np.arange(nbx), indexing="ij")

    def para(cl, cr):
        den = cl - np.float32(2) * c0 + cr
        ok = active & (cl > -1.5) & (cr > -1.5) & (den < 0)
        off = np.float32(0.5) * (cl - cr) / np.where(ok, den, np.float32(-1))
        return np.where(ok, np.clip(off, -0.5, 0.5), np.float32(0)).astype(np.float32)

    offx = para(ncc[gy, gx, ty, np.maximum(tx - 1, 0)], ncc[gy, gx, ty, np.minimum(tx + 1, K - 1)])
    offy = para(ncc[gy, gx, np.maximum(ty - 1, 0), tx], ncc[gy, gx, np.minimum(ty + 1, K - 1), tx])
    px0, py0 = sx - R - 1, sy - R - 1
    bu = ((px0 + tx - ox[None, :]).astype(np.float32) + offx).astype(np.float32)
    bv = ((py0 + ty - oy[:, None]).astype(np.float32) + offy).astype(np.float32)
    var = sd * sd
    tau2 = np.float32(flat_sigma) ** 2
    bq = np.where(active, np.maximum(c0, np.float32(0)) * (var / (var + tau2)), np.float32(0)).astype(np.float32)
    return bu, bv, bq


def _dense_np(bu, bv, bq, B, W, H, mask):
    nby, nbx = bu.shape
    x0, x1, wx = _interval(np.arange(W, dtype=np.float32), nbx, B, W)
    y0, y1, wy = _interval(np.arange(H, dtype=np.float32), nby, B, H)
    args = (y0[:, None], y1[:, None], wy[:, None], x0[None, :], x1[None, :], wx[None, :])
    u, v, q = (_sample_np(f, *args) for f in (bu, bv, bq))
    if mask is not None:
        keep = mask > 0
        u, v, q = (np.where(keep, a, np.float32(0)).astype(np.float32) for a in (u, v, q))
    return u, v, q


# ----------------------------------------------------------------------------- GPU level
def _threads_for(R: int) -> int:
    nc = (2 * R + 3) ** 2
    t = 32
    while t < nc:
        t *= 2
    return t


def _level_gpu(be: Backend, I1, I2, m, B, R, coarse, flat_sigma):
    xp = be.xp
    H, W = I1.shape
    nbx, nby = -(-W // B), -(-H // B)
    nblk = nbx * nby
    defines = {"BM_B": B, "BM_R": R, "BM_THREADS": _threads_for(R)}
    A = xp.empty(nblk * B * B, xp.float32)
    bsig = xp.empty(nblk, xp.float32)
    bvalid = xp.empty(nblk, xp.float32)
    k = _gpu.kernel(be, _SRC, "bm_blocks", defines)
    k(_gpu.grid1d(nblk, 64), (64,), (I1, m if m is not None else I1, _gpu.i32(m is not None), A, bsig, bvalid,
                                       _gpu.i32(W), _gpu.i32(H), _gpu.i32(B), _gpu.i32(nbx), _gpu.i32(nby)))
    winv = xp.empty((H - B + 1) * (W - B + 1), xp.float32)
    k = _gpu.kernel(be, _SRC, "bm_winstats", defines)
    k(_gpu.grid1d(winv.size), (_gpu.THREADS,), (I2, winv, _gpu.i32(W), _gpu.i32(H), _gpu.i32(B)))
    bu = xp.empty((nby, nbx), xp.float32)
    bv = xp.empty((nby, nbx), xp.float32)
    bq = xp.empty((nby, nbx), xp.float32)
    if coarse is not None:
        cu, cv, cW, cH = coarse
        cnby, cnbx = cu.shape
    else:
        cu = cv = bu
        cW, cH, cnbx, cnby = W, H, nbx, nby
    k = _gpu.kernel(be, _SRC, "bm_search", defines)
    k((nbx, nby), (_threads_for(R),),
      (A, bsig, bvalid, I2, winv, _gpu.i32(W), _gpu.i32(H), _gpu.i32(nbx), _gpu.i32(nby), cu, cv, _gpu.i32(cnbx),
       _gpu.i32(cnby), _gpu.i32(cW), _gpu.i32(cH), _gpu.i32(coarse is not None), bu, bv, bq, _gpu.f32(FLAT_EPS),
       _gpu.f32(flat_sigma * flat_sigma)))
    return bu, bv, bq


def _median_gpu(be: Backend, bu, bv):
    xp = be.xp
    nby, nbx = bu.shape
    src = xp.stack([bu, bv])
    dst = xp.empty_like(src)
    k = _gpu.kernel(be, _SRC, "bm_median3")
    k(_gpu.grid1d(src.size), (_gpu.THREADS,), (src, dst, _gpu.i32(nbx), _gpu.i32(nby), _gpu.i32(2)))
    return dst[0], dst[1]


def _dense_gpu(be: Backend, bu, bv, bq, B, W, H, mask):
    xp = be.xp
    nby, nbx = bu.shape
    u = xp.empty((H, W), xp.float32)
    v = xp.empty((H, W), xp.float32)
    q = xp.empty((H, W), xp.float32)
    k = _gpu.kernel(be, _SRC, "bm_dense")
    k(_gpu.grid1d(H * W), (_gpu.THREADS,),
      (bu, bv, bq, _gpu.i32(nbx), _gpu.i32(nby), _gpu.i32(B), mask if mask is not None else u,
       _gpu.i32(mask is not None), u, v, q, _gpu.i32(W), _gpu.i32(H)))
    return u, v, q


# ----------------------------------------------------------------------------- driver
def bm_levels(shape, levels: int, block: int) -> int:
    """Levels that fit: every level keeps at least one block in each direction."""
    return pyramid_levels(shape, levels, min_size=block)


def _bm_core(be: Backend, g1, g2, mask, *, levels: int, block: int, radius: int, flat_sigma: float, median: bool,
             progress=None):
    """Block matching on prepared greyscale images on ``be`` (at least block x block).

    ``levels`` is used as given (the caller caps it). Returns (u, v, q, bu, bv, bq).
    """
    progress = as_progress(progress)
    B, R = block, radius
    p1, p2, pm = [g1], [g2], [mask]
    for _ in range(levels - 1):
        p1.append(_pyr_down(be, p1[-1], (0, 1)))
        p2.append(_pyr_down(be, p2[-1], (0, 1)))
        if mask is not None:
            md = _pyr_down(be, pm[-1], (0, 1))
            pm.append(be.xp.ascontiguousarray((md >= 0.5).astype(be.xp.float32)))
        else:
            pm.append(None)
    coarse = None
    level_fn = _level_gpu if be.is_gpu else (lambda be_, *a: _level_np(*a))
    bu = bv = bq = None
    for lev in range(levels - 1, -1, -1):
        I1, I2 = p1[lev], p2[lev]
        H, W = I1.shape
        bu, bv, bq = level_fn(be, I1, I2, pm[lev], B, R, coarse, flat_sigma)
        if median and lev > 0:
            bu, bv = _median_gpu(be, bu, bv) if be.is_gpu else (_median3_np(bu), _median3_np(bv))
        coarse = (bu, bv, W, H)
        progress.update((levels - lev) / levels, f"block matching level {levels - lev}/{levels}")
    H, W = g1.shape
    u, v, q = (_dense_gpu if be.is_gpu else lambda be_, *a: _dense_np(*a))(be, bu, bv, bq, B, W, H, mask)
    return u, v, q, bu, bv, bq


def bm_halo(levels: int, block: int, radius: int) -> int:
    """Halo (pixels of the full image) that makes a tile's inner part exact.

    At level ``l`` a block reads the first image within itself and the second within its
    search reach (``|prediction| + radius + 1 + block``, the prediction at most
    ``2 * maxflow(l + 1)``); its prediction interpolates the 2 x 2 coarser blocks around it,
    after their 3 x 3 median; each decimation blurs 2 pixels, so the pyramid of a tile differs
    from the whole image's within ``e(l)`` pixels of the tile's border. A tile's result differs
    from the one-piece result only within ``D(0)`` pixels of its border, with
    ``D(l) = max(2 (D(l + 1) + 3 block), e(l) + reach(l) + block)``; the halo is ``D(0)``
    plus the dense interpolation's block, rounded up to the tiles' alignment.
    """
    L, B, R = int(levels), int(block), int(radius)
    e = [0]
    for _ in range(1, L):
        e.append(-(-(e[-1] + 2) // 2))
    maxflow = [0.0] * (L + 1)
    for lev in range(L - 1, -1, -1):
        maxflow[lev] = 2 * maxflow[lev + 1] + R + 2
    D = 0.0
    for lev in range(L - 1, -1, -1):
        reach = 2 * maxflow[lev + 1] + R + 2 + B
        own = e[lev] + reach + B
        D = own if lev == L - 1 else max(2 * (D + 3 * B), own)
    halo = D + B
    align = B * 2 ** (L - 1)
    return int(math.ceil(halo / align) * align)


def _tiles(n: int, tile: int, align: int):
    """Inner tile ranges [a, b) covering 0..n, starts multiples of ``align``."""
    tile = max(align, (tile // align) * align)
    return [(a, min(n, a + tile)) for a in range(0, n, tile)]


def _bm_tiled(be: Backend, img1, img2, mask, *, levels, block, radius, flat_sigma, median, tile_size, progress):
    """Block matching tile by tile (host images), stitched; identical to one piece."""
    H, W = img1.shape[:2]
    B, L = block, levels
    align = B * 2 ** (L - 1)
    halo = bm_halo(L, B, radius)
    ty, tx = _tiles(H, tile_size, align), _tiles(W, tile_size, align)
    u = np.zeros((H, W), np.float32)
    v = np.zeros((H, W), np.float32)
    q = np.zeros((H, W), np.float32)
    n = len(ty) * len(tx)
    k = 0
    for (y0, y1) in ty:
        for (x0, x1) in tx:
            sub = progress.sub(k / n, (k + 1) / n, f"tile {k + 1}/{n}")
            Y0, Y1 = max(0, y0 - halo), min(H, y1 + halo)
            X0, X1 = max(0, x0 - halo), min(W, x1 + halo)
            mt = None
            if mask is not None:
                msub = np.ascontiguousarray(mask[Y0:Y1, X0:X1])
                if not (msub > 0).any():
                    k += 1
                    continue   # nothing of interest in this tile: flow 0, quality 0
            g1, g2 = prepare_pair(be, np.ascontiguousarray(img1[Y0:Y1, X0:X1]),
                                  np.ascontiguousarray(img2[Y0:Y1, X0:X1]))
            if mask is not None:
                mt = prepare_mask(be, msub, g1.shape)
            tu, tv, tq, *_ = _bm_core(be, g1, g2, mt, levels=L, block=B, radius=radius, flat_sigma=flat_sigma,
                                      median=median, progress=sub)
            sl = (slice(y0 - Y0, y1 - Y0), slice(x0 - X0, x1 - X0))
            u[y0:y1, x0:x1] = be.asnumpy(tu[sl])
            v[y0:y1, x0:x1] = be.asnumpy(tv[sl])
            q[y0:y1, x0:x1] = be.asnumpy(tq[sl])
            k += 1
    return u, v, q


def _fits(be: Backend, pixels: int) -> bool:
    free, _ = be.mem_info()
    return pixels * _BYTES_PER_PIXEL < 0.8 * free


def block_matching(img1, img2, *, levels: int = DEFAULT_BM_LEVELS, block: int = DEFAULT_BLOCK,
                   radius: int = DEFAULT_RADIUS, flat_sigma: float = DEFAULT_FLAT_SIGMA,
                   median: bool = DEFAULT_BM_MEDIAN, mask=None, tile_size: int | None = None, device=None,
                   progress=None) -> FlowResult:
    """Multi-scale NCC block matching from ``img1`` to ``img2`` (see the module docstring).

    Parameters
    ----------
    img1, img2 : array_like
        ``(H, W)`` or ``(H, W, C)`` (grey, grey + alpha, RGB, RGBA), uint8, uint16 or float
        (0..1), NumPy or CuPy, any size.
    levels : int
        Pyramid levels; fewer where the image is too small for a block at the coarsest one.
    block : {4, 8, 16}
        Block side in pixels.
    radius : int
        Search radius at every level (1 to 14).
    flat_sigma : float
        Blocks with this standard deviation (intensities 0..1) get half the quality.
    median : bool
        3 x 3 median of each level's block vectors before they predict the next level.
    mask : array_like, optional
        ``(H, W)`` region of interest: blocks less than half inside are not matched, and pixels
        outside get flow 0 and quality 0.
    tile_size : int, optional
        Process in tiles of this many pixels a side (plus halos), with the same result as in
        one piece. By default only when the image does not fit in device memory.
    device : str or Backend, optional
    progress : callable or Progress, optional

    Returns
    -------
    FlowResult
        ``u``, ``v``, ``quality``; ``extras`` holds ``block_u``, ``block_v``,
        ``block_quality`` (finest level) and ``block_centers`` (x, y) of the block grid.
    """
    levels = check_int("levels", levels, 1, 12)
    block = check_int("block", block, 1, choices=BLOCK_SIZES)
    radius = check_int("radius", radius, 1, MAX_RADIUS)
    flat_sigma = check_float("flat_sigma", flat_sigma, 0.0, lo_open=True)
    if tile_size is not None:
        tile_size = check_int("tile_size", tile_size, 16)
    be = get_backend(device)
    progress = as_progress(progress)
    H, W = img1.shape[:2]
    if img2.shape[:2] != (H, W):
        prepare_pair(be, img1, img2)   # raises the clear error
    small = H < block or W < block
    L = bm_levels((max(H, block), max(W, block)), levels, block)
    params = dict(levels=L, block=block, radius=radius, flat_sigma=flat_sigma, median=bool(median))
    with be.activate():
        whole = tile_size is None or tile_size >= max(H, W)
        if whole and not _fits(be, H * W) and tile_size is None:
            tile_size = int(math.sqrt(0.5 * 0.8 * be.mem_info()[0] / _BYTES_PER_PIXEL)) - 2 * bm_halo(L, block, radius)
            if tile_size < 4 * block * 2 ** (L - 1):
                raise TooLargeError(H * W, 0, unit="pixels", remedy="use a smaller image or the CPU",
                                    parameter=None, where=f"{be.label} memory")
            whole = False
        if not whole and not small:
            h1, h2 = be.asnumpy(img1), be.asnumpy(img2)
            hm = None if mask is None else be.asnumpy(mask)
            if hm is not None:
                if hm.ndim == 3:
                    hm = hm[..., -1] if hm.shape[2] in (2, 4) else hm[..., 0]
                prepare_mask(get_backend("cpu"), hm, (H, W))
            u, v, q = _bm_tiled(be, h1, h2, hm, levels=L, block=block, radius=radius, flat_sigma=flat_sigma,
                                median=median, tile_size=tile_size, progress=progress)
            params["tile_size"] = tile_size
            mres = None if hm is None else (hm > 0).astype(np.float32)
            return FlowResult(u, v, q, "bm", "cpu", params, {}, mres)
        if not small:
            a, b = check_pair(be, img1, img2)
            m = prepare_mask(be, mask, a.shape[:2])

            def build(x, y):
                return _bm_core(be, _gray(be, x), _gray(be, y), m, levels=L, block=block, radius=radius,
                                flat_sigma=flat_sigma, median=median, progress=progress)

            key = ("bm",) + tuple(sorted(params.items()))
            u, v, q, bu, bv, bq = _plan.run(be, key, [a, b], build) if m is None else build(a, b)
            progress.update(1.0, "block matching done")
            return _bm_result(be, u, v, q, bu, bv, bq, m, block, H, W, params)
        g1, g2 = prepare_pair(be, img1, img2)
        m = prepare_mask(be, mask, g1.shape)
        if small:   # pad to one block with edge values, crop afterwards
            ph, pw = max(0, block - H), max(0, block - W)
            xp = be.xp
            g1 = xp.ascontiguousarray(xp.pad(g1, ((0, ph), (0, pw)), mode="edge"))
            g2 = xp.ascontiguousarray(xp.pad(g2, ((0, ph), (0, pw)), mode="edge"))
            if m is not None:
                m = xp.ascontiguousarray(xp.pad(m, ((0, ph), (0, pw)), mode="constant"))
        u, v, q, bu, bv, bq = _bm_core(be, g1, g2, m, levels=L, block=block, radius=radius, flat_sigma=flat_sigma,
                                       median=median, progress=progress)
        if small:
            u, v, q = (be.xp.ascontiguousarray(a[:H, :W]) for a in (u, v, q))
            if m is not None:
                m = be.xp.ascontiguousarray(m[:H, :W])
    return _bm_result(be, u, v, q, bu, bv, bq, m, block, H, W, params)


def _bm_result(be, u, v, q, bu, bv, bq, m, block, H, W, params):
    Hp, Wp = max(H, block), max(W, block)
    nby, nbx = bu.shape
    centers = (_centers(nbx, block, Wp), _centers(nby, block, Hp))
    extras = {"block_u": bu, "block_v": bv, "block_quality": bq, "block_centers": centers}
    return FlowResult(u, v, q, "bm", be.label, params, extras, m)
