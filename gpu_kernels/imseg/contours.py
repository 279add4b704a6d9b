"""Contour-following segmentation (issue 21): superpixels merged hierarchically by colour and
by the strength of the boundary between them.

Stages (each a pure function, arrays in, arrays out):

1. :func:`colour_gradient`: CIELAB through lookup tables (sRGB to linear, and f(t) = cbrt(t)
   by linear interpolation of 1,024 samples; within 0.05 of :func:`skimage.color.rgb2lab`), a
   Gaussian blur (σ 1 px), and the colour gradient magnitude (central differences of the three
   blurred channels).
2. :func:`superpixels`: SLIC (Achanta et al. 2012) on the blurred CIELAB image, seeded on a
   regular grid of about ``n_superpixels`` cells (600, whatever the image size), 4
   iterations, each pixel choosing among the centres of its cell's 3 x 3 neighbourhood; then
   connected components (4-connectivity), so a superpixel split in two becomes two regions.
3. :func:`region_graph`: the region adjacency graph: for every region its area and colour
   sums, for every pair of adjacent regions the number of boundary pixel pairs and the sum of
   the gradient along them.
4. :func:`merge_regions`: hierarchical merging. The cost of merging regions A and B is the
   Mumford-Shah (Ward) energy increase per unit of shared boundary, weighted by how weak the
   boundary is::

       cost = |A||B| / (|A| + |B|) * |mean(A) - mean(B)|^2 / len(A, B) * (mean gradient(A, B) + b0)^2 / sqrt(N)
              * (1 + k * ((|A| + |B|) / N)^3)

   so small regions of similar colour separated by a weak edge merge first, and a strong
   contour keeps two regions apart even when their colours are close. The last factor (the
   size guard, k = ``SIZE_K``) makes a merge that would cover much of the image dearer: one
   region swallowing most of a photograph is what the probabilistic Rand index punishes
   hardest (issue 21). Each round every
   region finds its cheapest neighbour; the pairs that choose each other merge (this is the
   order greedy merging would take them in), until the cheapest cost reaches the threshold
   that ``coarseness`` sets, or exactly ``n_segments`` regions are left.
5. Region features (:mod:`gpu_kernels.imseg.features`).

On the GPU the merge runs as one persistent block: all rounds, the renaming of the pairs and
their aggregation through a hash table stay on the device (the rounds with few pairs through a
second table in shared memory, :data:`SMALL_TABLE`; a pair whose regions did not change in the round
skips the table, :data:`SKIP_RENAME`; where the regions' arrays do not fit shared memory, their
cheapest pairs do, :data:`HOT_SMEM`). The host waits twice: for the number of
superpixel components (to size the graph; the graph's pixel pass is queued before that wait,
:data:`EARLY_GRAPH`) and for the number of segments (to size the feature arrays). Every float operation is done in the same order on both paths (CUDA
with ``--fmad=false``) and every sum is a sum of integers, so the CPU and the GPU give the
same labels.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.contours import segment_contours
>>> img = np.zeros((64, 64, 3), np.uint8); img[:, 32:] = (200, 30, 30)
>>> seg = segment_contours(img, n_segments=2, device="cpu")
>>> seg.n_regions, sorted(seg.features["area"].tolist())
(2, [2048, 2048])
"""

from __future__ import annotations

import math
import time

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend, set_max_dynamic_smem
from gpu_kernels.imseg import features as _feat
from gpu_kernels.imseg import label as _label
from gpu_kernels.imseg._util import (
    ImsegInputError,
    StageTimer,
    SyncCounter,
    activated,
    as_image,
    check_fits,
    download,
    grid,
    is_cupy,
    kernel,
    quiet_synchronize,
    row_bands,
    upload,
)
from gpu_kernels.jobs import as_progress

__all__ = [
    "DEFAULT_COARSENESS",
    "DEFAULT_N_SEGMENTS",
    "DEFAULT_N_SUPERPIXELS",
    "DEFAULT_COMPACTNESS",
    "DEFAULT_SIGMA",
    "STAGES",
    "coarseness_threshold",
    "colour_gradient",
    "superpixels",
    "region_graph",
    "merge_regions",
    "segment_contours",
    "stage_colour",
    "stage_superpixels",
    "stage_merge",
    "stage_finish",
    "to_u8",
]

from gpu_kernels.imseg import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: coarseness 0..10: the merge threshold is 10^coarseness (cost units above); chosen on the
#: 200 BSDS500 training images with the size guard (benchmarks/results/imseg_session2.md)
DEFAULT_COARSENESS = _d.DEFAULT_COARSENESS
MIN_COARSENESS, MAX_COARSENESS = _d.MIN_COARSENESS, _d.MAX_COARSENESS
#: 0: the number of segments follows from the coarseness
DEFAULT_N_SEGMENTS = _d.DEFAULT_N_SEGMENTS
MAX_N_SEGMENTS = _d.MAX_N_SEGMENTS
DEFAULT_N_SUPERPIXELS = _d.DEFAULT_N_SUPERPIXELS
MAX_N_SUPERPIXELS = _d.MAX_N_SUPERPIXELS
#: SLIC's compactness m (colour distance equivalent of one grid step)
DEFAULT_COMPACTNESS = _d.DEFAULT_COMPACTNESS
DEFAULT_SIGMA = _d.DEFAULT_SIGMA
#: the merges: "learned" (gpu_kernels.imseg.learned) and "contour" (the hand-made cost below)
MERGES = _d.MERGES
DEFAULT_MERGE = _d.DEFAULT_MERGE
SLIC_ITERATIONS = 4
#: fixed-point gradient: 8 steps per CIELAB unit per pixel
GSCALE = 8.0
GMAX = float(1 << 20)
#: the boundary weight's offset (gradient units)
B0 = 0.5
#: the size guard's weight k in (1 + k f^3), f = merged area / image area (chosen on the 200
#: BSDS500 training images, benchmarks/results/imseg_session2.md)
SIZE_K = 7.0
MAX_ROUNDS = 100_000
NF = 1024
BLOCK = 1024
#: pixels per thread of the accumulating kernels (CT_CHUNK)
CHUNK = 16
#: pixels per thread of the SLIC assignment (CT_SLIC_CHUNK): 8, the fastest of 1-16 on an
#: H100 (the whole SLIC at 1080p 0.49 ms against 1.15 with 16; 4K 1.80 against 5.22;
#: benchmarks/results/imseg_session4.md)
SLIC_CHUNK = 8

STAGES = ("upload", "colour", "superpixels", "graph", "merge", "features", "download")
_SRC = "imseg_contours.cu"
_OPTS = ("--fmad=false",)
f32 = np.float32


# --------------------------------------------------------------------------- tables
def _tables():
    c = np.arange(256) / 255.0
    lin = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92).astype(np.float32)
    t = np.arange(NF + 2) / NF
    F = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16.0 / 116.0).astype(np.float32)
    M = np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169],
                  [0.019334, 0.119193, 0.950227]]) / np.array([[0.95047], [1.0], [1.08883]])
    return lin, F, M.astype(np.float32)


LIN, FTAB, MXYZ = _tables()


def gauss_weights(sigma: float) -> np.ndarray:
    r = max(1, int(math.ceil(2.0 * sigma)))
    x = np.arange(-r, r + 1)
    w = np.exp(-0.5 * (x / sigma) ** 2)
    return (w / w.sum()).astype(np.float32)


def coarseness_threshold(coarseness: float) -> float:
    """The merge-cost threshold of a coarseness (10 ** coarseness)."""
    return float(10.0 ** float(coarseness))


def slic_step(h: int, w: int, n_superpixels: int) -> int:
    """Grid step S (pixels) of about ``n_superpixels`` cells."""
    return max(4, int(round(math.sqrt(h * w / max(1, n_superpixels)))))


def min_region_area(S: int) -> int:
    """With the coarseness deciding, regions smaller than a quarter of a superpixel cell
    (S^2 / 4 pixels) join their cheapest neighbour once the merging has stopped."""
    return (S * S) // 4


def to_u8(img: np.ndarray) -> np.ndarray:
    """A checked image (``as_image``) as 8-bit (uint16: rounded v * 255 / 65535; float: rounded v * 255)."""
    if img.dtype == np.uint8:
        return img
    if img.dtype == np.uint16:
        return ((img.astype(np.uint32) * 255 + 32767) // 65535).astype(np.uint8)
    return np.rint(img.astype(np.float32) * f32(255.0)).astype(np.uint8)


# --------------------------------------------------------------------------- CPU path
def _flook(t):
    u = t * f32(NF)
    u = np.minimum(np.maximum(u, f32(0.0)), f32(NF))
    i = np.minimum(u.astype(np.int32), NF - 1)
    fr = u - i.astype(np.float32)
    return FTAB[i] + fr * (FTAB[i + 1] - FTAB[i])


def lab_planes_np(u8: np.ndarray, progress=None) -> np.ndarray:
    """(3, H, W) float32 CIELAB of an 8-bit image (grey: r = g = b), in row bands (each
    reports to ``progress`` and checks for cancel first)."""
    h, w = u8.shape[:2]
    out = np.empty((3, h, w), np.float32)
    for r0, r1 in row_bands(h, w, progress, "CIELAB"):
        out[:, r0:r1] = _lab_planes_rows(u8[r0:r1])
    return out


def _lab_planes_rows(u8: np.ndarray) -> np.ndarray:
    if u8.ndim == 2:
        r = g = b = LIN[u8]
    else:
        r, g, b = LIN[u8[..., 0]], LIN[u8[..., 1]], LIN[u8[..., 2]]
    M = MXYZ
    x = (r * M[0, 0] + g * M[0, 1]) + b * M[0, 2]
    y = (r * M[1, 0] + g * M[1, 1]) + b * M[1, 2]
    z = (r * M[2, 0] + g * M[2, 1]) + b * M[2, 2]
    fx, fy, fz = _flook(x), _flook(y), _flook(z)
    return np.stack([f32(116.0) * fy - f32(16.0), f32(500.0) * (fx - fy), f32(200.0) * (fy - fz)])


def blur_np(planes: np.ndarray, sigma: float, progress=None) -> np.ndarray:
    """The separable Gaussian blur of each plane (rows, then columns), in row bands (the same
    sums in the same order as one pass over the whole plane)."""
    progress = as_progress(progress)
    wts = gauss_weights(sigma)
    r = len(wts) // 2
    nc, h, w = planes.shape
    xi, yi = np.arange(w), np.arange(h)
    xs = [np.clip(xi + k - r, 0, w - 1) for k in range(len(wts))]
    out = np.empty_like(planes)
    for c in range(nc):
        ch = planes[c]
        acc = np.empty_like(ch)
        for r0, r1 in row_bands(h, w, progress.sub((2 * c) / (2 * nc), (2 * c + 1) / (2 * nc)), "blur"):
            a = np.zeros_like(ch[r0:r1])
            for k in range(len(wts)):
                a = a + wts[k] * ch[r0:r1][:, xs[k]]
            acc[r0:r1] = a
        for r0, r1 in row_bands(h, w, progress.sub((2 * c + 1) / (2 * nc), (2 * c + 2) / (2 * nc)), "blur"):
            a = np.zeros_like(ch[r0:r1])
            for k in range(len(wts)):
                a = a + wts[k] * acc[np.clip(yi[r0:r1] + k - r, 0, h - 1), :]
            out[c, r0:r1] = a
    return out


def gradient_np(sm: np.ndarray, progress=None):
    """(G float32, gq int32, q int32 (3, H, W)) of the blurred planes, in row bands."""
    _, h, w = sm.shape
    xs, ys = np.arange(w), np.arange(h)
    xp, xm = np.minimum(xs + 1, w - 1), np.maximum(xs - 1, 0)
    yp, ym = np.minimum(ys + 1, h - 1), np.maximum(ys - 1, 0)
    G = np.empty((h, w), np.float32)
    gq = np.empty((h, w), np.int32)
    q = np.empty(sm.shape, np.int32)
    for r0, r1 in row_bands(h, w, progress, "gradient"):
        g = np.zeros((r1 - r0, w), np.float32)
        for c in range(3):
            band = sm[c][r0:r1]
            gx = band[:, xp] - band[:, xm]
            gy = sm[c][yp[r0:r1], :] - sm[c][ym[r0:r1], :]
            g = g + (gx * gx + gy * gy)
        G[r0:r1] = np.sqrt(g)
        gq[r0:r1] = np.minimum(np.rint(G[r0:r1] * f32(GSCALE)), f32(GMAX)).astype(np.int32)
        q[:, r0:r1] = np.rint(sm[:, r0:r1] * f32(16.0)).astype(np.int32)
    return G, gq, q


def slic_np(sm: np.ndarray, q: np.ndarray, S: int, compactness: float, iterations: int,
            progress=None) -> np.ndarray:
    """SLIC cell of every pixel (int32, 0..K-1); ``progress`` hears of every iteration."""
    progress = as_progress(progress)
    _, h, w = sm.shape
    gh, gw = -(-h // S), -(-w // S)
    K = gh * gw
    cy0 = np.minimum(np.arange(gh) * S + S // 2, h - 1)
    cx0 = np.minimum(np.arange(gw) * S + S // 2, w - 1)
    iy, ix = np.repeat(cy0, gw), np.tile(cx0, gh)
    CY, CX = iy.astype(np.float32), ix.astype(np.float32)
    CC = sm[:, iy, ix].copy()
    yy = np.broadcast_to(np.arange(h, dtype=np.float32)[:, None], (h, w))
    xx = np.broadcast_to(np.arange(w, dtype=np.float32)[None, :], (h, w))
    pcy = (np.arange(h) // S)[:, None]
    pcx = (np.arange(w) // S)[None, :]
    wxy = f32((compactness / S) ** 2)
    rows = np.repeat(np.arange(h, dtype=np.float64), w)
    cols = np.tile(np.arange(w, dtype=np.float64), h)
    qf = [q[c].ravel().astype(np.float64) for c in range(3)]
    lab = np.zeros((h, w), np.int64)
    for it in range(iterations + 1):
        progress.update(it / (iterations + 1), f"SLIC iteration {it + 1} of {iterations + 1}")
        best = np.zeros((h, w), np.float32)
        lab = np.full((h, w), -1, np.int64)
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                progress.check()  # a 63 Mpx iteration takes tens of seconds: cancel between its 9 passes
                gy, gx = pcy + dy, pcx + dx
                ok = (gy >= 0) & (gy < gh) & (gx >= 0) & (gx < gw)
                k = np.clip(gy, 0, gh - 1) * gw + np.clip(gx, 0, gw - 1)
                d0 = sm[0] - CC[0][k]
                d1 = sm[1] - CC[1][k]
                d2 = sm[2] - CC[2][k]
                ey = yy - CY[k]
                ex = xx - CX[k]
                D = ((d0 * d0 + d1 * d1) + d2 * d2) + wxy * (ey * ey + ex * ex)
                better = ok & ((lab < 0) | (D < best))
                best = np.where(better, D, best)
                lab = np.where(better, k, lab)
        if it == iterations:
            break
        fl = lab.ravel()
        cnt = np.bincount(fl, minlength=K)
        nz = cnt > 0
        d16 = cnt[nz].astype(np.float64) * 16.0
        for c in range(3):
            s = np.bincount(fl, weights=qf[c], minlength=K)
            CC[c][nz] = (s[nz] / d16).astype(np.float32)
        dc = cnt[nz].astype(np.float64)
        CY[nz] = (np.bincount(fl, weights=rows, minlength=K)[nz] / dc).astype(np.float32)
        CX[nz] = (np.bincount(fl, weights=cols, minlength=K)[nz] / dc).astype(np.float32)
    return lab.astype(np.int32)


def boundary_pairs(lab0: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The boundary pixel pairs of a label image: for every pair of 4-neighbours with different
    labels (the horizontal pairs first, then the vertical, each in raster order), the smaller label,
    the larger label and ``values[p] + values[q]``.

    >>> lab = np.array([[0, 0, 1], [2, 2, 1]])
    >>> lo, hi, s = boundary_pairs(lab, np.arange(6).reshape(2, 3))
    >>> lo.tolist(), hi.tolist(), s.tolist()
    ([0, 1, 0, 0], [1, 2, 2, 2], [3, 9, 3, 5])
    """
    a1, b1 = lab0[:, :-1], lab0[:, 1:]
    m1 = a1 != b1
    a2, b2 = lab0[:-1, :], lab0[1:, :]
    m2 = a2 != b2
    a = np.concatenate([a1[m1], a2[m2]])
    b = np.concatenate([b1[m1], b2[m2]])
    s = np.concatenate([(values[:, :-1] + values[:, 1:])[m1], (values[:-1, :] + values[1:, :])[m2]])
    return np.minimum(a, b), np.maximum(a, b), s


def region_graph_np(labels: np.ndarray, R: int, gq: np.ndarray, q: np.ndarray, boundary: bool = False) -> dict:
    """Region adjacency graph of labels 1..R (regions 0-based in the result). ``boundary``: also the
    boundary pixel pairs' pair index ``boundary_pair`` and gradient sum ``boundary_sum`` (the learned
    merge's gradient histograms, ``learned.graph_extras_np``, reuse them)."""
    lab0 = labels.astype(np.int64) - 1
    fl = lab0.ravel()
    area = np.bincount(fl, minlength=R).astype(np.int64)
    rsum = np.stack([np.bincount(fl, weights=q[c].ravel().astype(np.float64), minlength=R)
                     for c in range(3)], axis=1).astype(np.int64)
    lo, hi, s = boundary_pairs(lab0, gq.astype(np.int64))
    ea, eb, el, eg, inv = _aggregate(lo, hi, np.ones(len(lo), np.int64), s, R, inverse=True)
    out = {"R": int(R), "ea": ea, "eb": eb, "el": el, "eg": eg, "area": area, "rsum": rsum}
    if boundary:
        out.update(boundary_pair=inv, boundary_sum=s)
    return out


def _aggregate(lo, hi, ln, gs, R, inverse: bool = False):
    key = lo * R + hi
    u, inv = np.unique(key, return_inverse=True)
    el = np.bincount(inv, weights=ln.astype(np.float64), minlength=len(u)).astype(np.int64)
    eg = np.bincount(inv, weights=gs.astype(np.float64), minlength=len(u)).astype(np.int64)
    return (u // R, u % R, el, eg, inv) if inverse else (u // R, u % R, el, eg)


def merge_cost_np(area, rsum, a, b, el, eg, g2: float, b0: float, inv_norm: float, npx: float = 1.0,
                  size_k: float = 0.0) -> np.ndarray:
    """float32 merge costs of the pairs (a, b), as ``ct_cost_bits`` computes them."""
    aA = area[a].astype(np.float64)
    aB = area[b].astype(np.float64)
    rs = rsum.astype(np.float64)
    dd0 = rs[a, 0] / aA - rs[b, 0] / aB
    dd1 = rs[a, 1] / aA - rs[b, 1] / aB
    dd2 = rs[a, 2] / aA - rs[b, 2] / aB
    d2 = ((dd0 * dd0 + dd1 * dd1) + dd2 * dd2) / 256.0
    hm = (aA * aB) / (aA + aB)
    ln = el.astype(np.float64)
    bnd = eg.astype(np.float64) / (ln * g2)
    t = bnd + b0
    t2 = t * t
    cost = (((hm * d2) / ln) * t2) * inv_norm
    f = (aA + aB) / float(npx)
    f3 = (f * f) * f
    cost = cost * (1.0 + float(size_k) * f3)
    return cost.astype(np.float32)


def merge_np(graph: dict, target: int, thr: float, inv_norm: float, max_rounds: int = MAX_ROUNDS,
             min_area: int = 0, size_k: float = SIZE_K, progress=None):
    """The rounds of ``ct_merge`` on the CPU: ``(into, count, rounds)``; ``progress`` hears
    of every round (the fraction: regions merged away, of those a target count would)."""
    progress = as_progress(progress)
    R = graph["R"]
    ea, eb, el, eg = graph["ea"], graph["eb"], graph["el"], graph["eg"]
    area = graph["area"].copy()
    rsum = graph["rsum"].copy()
    into = np.arange(R, dtype=np.int64)
    count, rounds = R, 0
    g2, thr32 = 2.0 * GSCALE, f32(thr)
    npx = float(int(area.sum()))
    goal = max(1, R - max(target, 1))
    while len(ea) and rounds < max_rounds and not (target > 0 and count <= target):
        progress.update(min(0.99, (R - count) / goal), f"merging: {count:,} regions, round {rounds + 1}")
        c32 = merge_cost_np(area, rsum, ea, eb, el, eg, g2, B0, inv_norm, npx, size_k)
        bits = c32.view(np.uint32).astype(np.uint64)
        best = np.full(R, np.iinfo(np.uint64).max, np.uint64)
        np.minimum.at(best, ea, (bits << np.uint64(32)) | eb.astype(np.uint64))
        np.minimum.at(best, eb, (bits << np.uint64(32)) | ea.astype(np.uint64))
        bo = (best & np.uint64(0xFFFFFFFF)).astype(np.int64)
        idx = np.flatnonzero((bo[ea] == eb) & (bo[eb] == ea) & (c32 < thr32))
        if len(idx) == 0:
            if target > 0 or min_area <= 1:
                break
            # clean-up: every region smaller than min_area joins its cheapest neighbour
            small = area < min_area
            sel = ((bo[ea] == eb) & small[ea]) | ((bo[eb] == ea) & small[eb])
            if not sel.any():
                break
            root = _components_min(R, ea[sel], eb[sel])
            live = np.flatnonzero(into == np.arange(R))
            moved = live[root[live] != live]
            np.add.at(area, root[moved], area[moved])
            np.add.at(rsum, root[moved], rsum[moved])
            into[moved] = root[moved]
            na, nb = root[ea], root[eb]
            ok = na != nb
            ea, eb, el, eg = _aggregate(np.minimum(na, nb)[ok], np.maximum(na, nb)[ok], el[ok], eg[ok], R)
            count -= len(moved)
            rounds += 1
            continue
        if target > 0 and count - len(idx) < target:
            k = count - target
            order = np.lexsort((ea[idx], c32[idx]))
            idx = idx[order[:k]]
        A, B = ea[idx], eb[idx]
        into[B] = A
        area[A] += area[B]
        rsum[A] += rsum[B]
        keep = np.ones(len(ea), bool)
        keep[idx] = False
        na, nb = into[ea[keep]], into[eb[keep]]
        ok = na != nb
        na, nb = na[ok], nb[ok]
        ea, eb, el, eg = _aggregate(np.minimum(na, nb), np.maximum(na, nb), el[keep][ok], eg[keep][ok], R)
        count -= len(idx)
        rounds += 1
    return into, count, rounds


def _components_min(R: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The lowest member of each region's component of the graph with edges (a, b)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    g = coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(R, R))
    _, comp = connected_components(g, directed=False)
    low = np.full(comp.max() + 1, R, np.int64)
    np.minimum.at(low, comp, np.arange(R))
    return low[comp]


def _resolve(into: np.ndarray) -> tuple[np.ndarray, int]:
    """Number of each region's final segment (1..count, in order of the lowest region)."""
    root = into.copy()
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    is_root = root == np.arange(len(root))
    rank = np.cumsum(is_root).astype(np.int32)
    return rank[root], int(is_root.sum())


# --------------------------------------------------------------------------- checks
def check_params(coarseness, n_segments, n_superpixels, compactness, sigma) -> dict:
    def num(name, v, lo, hi, integer=False):
        try:
            x = int(v) if integer else float(v)
        except (TypeError, ValueError, OverflowError):
            x = None
        if x is None or (integer and x != v) or not math.isfinite(x) or not lo <= x <= hi:
            kind = "a whole number" if integer else "a number"
            raise ImsegInputError(f"{name} must be {kind} in [{lo:g}, {hi:g}], got {v!r}")
        return x

    if isinstance(coarseness, bool) or isinstance(n_segments, bool):
        raise ImsegInputError("coarseness and n_segments must be numbers, not True/False")
    return {"coarseness": num("coarseness", coarseness, MIN_COARSENESS, MAX_COARSENESS),
            "n_segments": num("n_segments", n_segments, 0, MAX_N_SEGMENTS, True),
            "n_superpixels": num("n_superpixels", n_superpixels, 1, MAX_N_SUPERPIXELS, True),
            "compactness": num("compactness", compactness, 0.0, 1000.0),
            "sigma": num("sigma", sigma, 0.1, 20.0)}


# --------------------------------------------------------------------------- GPU path
def _dev_tables(be):
    xp = be.xp
    key = ("ct_tables", id(be))
    cache = _dev_tables.__dict__.setdefault("cache", {})
    t = cache.get(key)
    if t is None:
        t = (xp.asarray(LIN), xp.asarray(FTAB), xp.asarray(MXYZ.ravel()))
        cache[key] = t
    return t


def _dev_weights(be, sigma: float):
    """The blur's weights on the device, kept per device and sigma (an upload per call cost a
    host round trip through CuPy's staging)."""
    cache = _dev_weights.__dict__.setdefault("cache", {})
    key = (id(be), float(sigma))
    wd = cache.get(key)
    if wd is None:
        if len(cache) > 64:
            cache.clear()
        wd = cache[key] = be.xp.asarray(gauss_weights(sigma))
    return wd


def colour_device(be, img_d, h: int, w: int, c: int, sigma: float):
    """Blurred planar CIELAB (3 n), fixed-point gradient gq (n) and colour q (3 n) on the device."""
    xp = be.xp
    n = h * w
    lin, F, M = _dev_tables(be)
    lab = xp.empty(3 * n, dtype=xp.float32)
    kernel(be, _SRC, "ct_lab", options=_OPTS)(grid(n, 256), (256,), (img_d, np.int64(n), np.int32(c), lin, F, M, lab))
    wd = _dev_weights(be, sigma)
    r = np.int32(len(wd) // 2)
    tmp = xp.empty_like(lab)
    fb = kernel(be, _SRC, "ct_blur", options=_OPTS)
    fb(grid(3 * n, 256), (256,), (lab, tmp, np.int32(w), np.int32(h), wd, r, np.int32(0)))
    fb(grid(3 * n, 256), (256,), (tmp, lab, np.int32(w), np.int32(h), wd, r, np.int32(1)))
    gq = xp.empty(n, dtype=xp.int32)
    q = xp.empty(3 * n, dtype=xp.int32)
    kernel(be, _SRC, "ct_gradient", options=_OPTS)(grid(n, 256), (256,), (lab, np.int32(w), np.int32(h),
                                                                          f32(GSCALE), f32(GMAX), gq, q))
    return lab, gq, q


def slic_device(be, sm, q, h: int, w: int, S: int, compactness: float, iterations: int):
    xp = be.xp
    n = h * w
    gh, gw = -(-h // S), -(-w // S)
    K = gh * gw
    cc = xp.empty(3 * K, dtype=xp.float32)
    cy = xp.empty(K, dtype=xp.float32)
    cx = xp.empty(K, dtype=xp.float32)
    kernel(be, _SRC, "ct_slic_init", options=_OPTS)(grid(K, 256), (256,), (sm, np.int64(n), np.int32(w), np.int32(h),
                                                                          np.int32(S), np.int32(gw), np.int32(K),
                                                                          cc, cy, cx))
    cnt = xp.zeros(K, dtype=xp.int32)
    sums = xp.zeros(5 * K, dtype=xp.int64)
    lab = xp.empty(n, dtype=xp.int32)
    wxy = f32((compactness / S) ** 2)
    fa = kernel(be, _SRC, "ct_slic_assign", options=_OPTS, defines={"CT_SLIC_CHUNK": SLIC_CHUNK})
    fu = kernel(be, _SRC, "ct_slic_update", options=_OPTS)
    for it in range(iterations + 1):
        acc = np.int32(it < iterations)
        fa(grid(-(-n // SLIC_CHUNK), 256), (256,), (sm, q, np.int32(w), np.int32(h), np.int32(S), np.int32(gw), np.int32(gh), wxy,
                                  cc, cy, cx, lab, acc, cnt, sums))
        if it < iterations:
            fu(grid(K, 256), (256,), (np.int32(K), cnt, sums, cc, cy, cx))
    return lab


def _logcap(R: int) -> int:
    return max(6, int(math.ceil(math.log2(6 * R + 64))))


#: queue the region graph's pixel pass (and allocate the merge's arrays) BEFORE the host reads the
#: number of superpixel components, sized by a bound: the largest R whose hash table is as large as
#: the last call's of this shape and these parameters (session 15, issue 21: the host's allocations
#: and launches no longer stand between that read-back and the merge on the GPU's critical path).
#: Where the components outnumber the bound the pass is done again with the exact sizes. False:
#: the arrays are allocated and the pass launched after the read-back (the path before session 15).
EARLY_GRAPH = True
#: ``ct_merge``'s small table (session 15): a second hash table in the shared memory its arrays leave
#: free, used by every round with at most half as many pairs as its slots (renaming and aggregating
#: there instead of through L2), where the regions' arrays are in shared memory already (modes 1, 2:
#: with every array in global memory, as at 1080p, the table's shared memory took the L1 cache's room
#: and the merge was slower, call 2); False: the global table only (the kernel before session 15)
SMALL_TABLE = True
#: the small table's most slots (2^14: 320 KB would not fit anyway)
SMALL_TABLE_MAX_LOG = 14
#: where neither all of ``ct_merge``'s arrays nor its regions' fit shared memory (1080p: R = 9227 regions
#: need 406 KB): keep its hot per-region fields there (session 16, issue 21): ``"best_into"`` (mode 3:
#: the cheapest pair and the merge forest, 12 bytes a region), ``"best"`` (mode 4: 8 bytes), or None
#: (mode 0: every array in global memory, the kernel before session 16). Shipped "best" (session 16's rule,
#: d6016ea: arm BSP, with the two switches below)
HOT_SMEM = "best"
#: the small table's most slots (log2) where the regions' arrays are NOT in shared memory (modes 0, 3, 4;
#: session 16): a small table that leaves the L1 cache its room (2^11 slots: 40 KB); 0: none there (session 15's T2)
HOT_SMALL_LOG = 11
#: ``ct_merge``'s renaming skip (session 16): where the pairs are in global memory, a pair of two regions
#: that neither absorbed nor were absorbed in the round is copied as it is to a second set of pair arrays
#: (no hash, no read-back); False: every pair through the hash table (the kernel before session 16)
SKIP_RENAME = True
#: ``ct_merge``'s per-phase clock (thread 0's clock64 into the state array; benchmarks only)
MERGE_PROFILE = False
_LAST_R: dict = {}


def _early_key(be, h: int, w: int, sp_params: dict) -> tuple:
    return (be.label, h, w, float(sp_params.get("sigma", DEFAULT_SIGMA)), int(sp_params["n_superpixels"]),
            float(sp_params["compactness"]))


def _note_r(key, R: int) -> None:
    if len(_LAST_R) > 256:
        _LAST_R.clear()
    _LAST_R[key] = int(R)


def _graph_pass(be, labels_d, rcap: int, lc: int, h: int, w: int, gq, q) -> dict:
    """The region graph's arrays for up to ``rcap`` regions (a hash table of 2^``lc`` slots) and its pixel pass
    (``ct_rag_pixels``, queued), with the merge's pair and region arrays (3 ``rcap`` + 16 pairs)."""
    xp = be.xp
    cap = 1 << lc
    g = {"rcap": rcap, "lc": lc,
         "hkey": xp.full(cap, np.uint64(0xFFFFFFFFFFFFFFFF), dtype=xp.uint64),
         "hlen": xp.zeros(cap, dtype=xp.int32), "hgs": xp.zeros(cap, dtype=xp.uint64),
         "area": xp.zeros(rcap, dtype=xp.int64), "rsum": xp.zeros(3 * rcap, dtype=xp.int64),
         "state": xp.zeros(3, dtype=xp.int32)}
    n = h * w
    kernel(be, _SRC, "ct_rag_pixels", options=_OPTS)(grid(-(-n // CHUNK), 256), (256,), (
        labels_d, gq, q, np.int32(w), np.int32(h), g["area"], g["rsum"], g["hkey"], g["hlen"], g["hgs"],
        np.int32(lc), g["state"], np.int32(rcap)))
    emax = 3 * rcap + 16
    g.update(ea=xp.empty(emax, dtype=xp.int32), eb=xp.empty(emax, dtype=xp.int32),
             el=xp.empty(emax, dtype=xp.int32), eg=xp.empty(emax, dtype=xp.uint64),
             ecost=xp.empty(emax, dtype=xp.uint32), best=xp.empty(rcap, dtype=xp.uint64),
             into=xp.empty(rcap, dtype=xp.int32))
    if SKIP_RENAME:
        _second_pairs(xp, g, emax)
    return g


def _second_pairs(xp, g: dict, emax: int) -> None:
    """The second set of pair arrays of the renaming skip (:data:`SKIP_RENAME`)."""
    g.update(ea2=xp.empty(emax, dtype=xp.int32), eb2=xp.empty(emax, dtype=xp.int32),
             el2=xp.empty(emax, dtype=xp.int32), eg2=xp.empty(emax, dtype=xp.uint64))


def early_graph(be, labels_d, key, h: int, w: int, gq, q):
    """The region graph's pixel pass queued before R is known (:data:`EARLY_GRAPH`): arrays for up
    to ``rcap`` regions (the most with the hash table of the last R seen for ``key``), or None where
    no R was seen yet or the switch is off."""
    last = _LAST_R.get(key)
    if not EARLY_GRAPH or last is None:
        return None
    lc = _logcap(last)
    return _graph_pass(be, labels_d, max(int(last), ((1 << lc) - 64) // 6), lc, h, w, gq, q)


def _read_components(be, syncs, total, comps, key, h: int, w: int, gq, q):
    """``(R, pre)``: the number of superpixel components, read back (one sync), with the region graph's pixel
    pass queued before that wait where ``key`` is given (:func:`early_graph`; ``pre`` None otherwise)."""
    pre = None if key is None else early_graph(be, comps, key, h, w, gq, q)
    R = int(syncs.read(be, total, "number of superpixel components (sizes the graph)")[0])
    if key is not None:
        _note_r(key, R)
    return R, pre


def graph_merge_device(be, labels_d, R: int, h: int, w: int, gq, q, target: int, thr: float, inv_norm: float,
                       max_rounds: int = MAX_ROUNDS, timer=None, min_area: int = 0, size_k: float = SIZE_K,
                       smem: bool | str | None = None, pre: dict | None = None, small: bool | str | None = None,
                       skip: bool | None = None):
    """Build the graph and merge on the device: returns ``(into (R,), state (3,): [count, rounds, error bits])``
    (error bits: labels beyond the graph's bounds, a region in several pieces; :func:`check_merge_state`).
    ``smem``: keep the merge's arrays in shared memory (True), only the regions' (``"regions"``),
    or none (False), ``"best_into"`` / ``"best"`` (those fields only); None: :func:`merge_smem_mode`. ``pre``: the
    pixel pass already queued by :func:`early_graph` (used where R is within its bound). ``small``:
    the merge's small table in shared memory where its regions are there too (None: :data:`SMALL_TABLE`),
    elsewhere of at most 2^:data:`HOT_SMALL_LOG` slots; ``"always"``: as large as fits, in every layout.
    ``skip``: the renaming skip where the pairs are in global memory (None: :data:`SKIP_RENAME`)."""
    xp = be.xp
    small = SMALL_TABLE if small is None else small
    skip = SKIP_RENAME if skip is None else skip
    n = h * w
    emax = 3 * R + 16
    g = pre if pre is not None and R <= pre["rcap"] else _graph_pass(be, labels_d, R, _logcap(R), h, w, gq, q)
    if timer is not None:
        timer.mark("graph")
    lc, hkey, hlen, hgs, area, rsum, state = (g[k] for k in ("lc", "hkey", "hlen", "hgs", "area", "rsum", "state"))
    ea, eb, el, eg, ecost, best, into = (g[k] for k in ("ea", "eb", "el", "eg", "ecost", "best", "into"))
    if MERGE_PROFILE:
        st = xp.zeros(4 + 2 * 8, dtype=xp.int32)
        st[:3] = state
        state = st
    fm = kernel(be, _SRC, "ct_merge", options=_OPTS, defines={"CT_PROF": 1} if MERGE_PROFILE else None)
    use = merge_smem_mode(be, R, emax) if smem is None else _SMEM_MODES[smem]
    base = _mode_smem_bytes(use, R, emax)
    soff = -(-base // 8) * 8
    slc = 0
    if small == "always" or (small and use in (1, 2)):
        slc = small_table_log(_max_smem(be) - soff)
    elif small and HOT_SMALL_LOG:
        slc = small_table_log(min(_max_smem(be) - soff, SMALL_SLOT_BYTES << HOT_SMALL_LOG))
    total = soff + (SMALL_SLOT_BYTES << slc if slc else 0)
    if total:
        set_max_dynamic_smem(fm, total)
    skip = bool(skip) and use != 1
    if skip and "ea2" not in g:
        _second_pairs(xp, g, emax)
    ea2, eb2, el2, eg2 = (g[k] for k in ("ea2", "eb2", "el2", "eg2")) if skip else (ea, eb, el, eg)
    fm((1,), (BLOCK,), (
        np.int32(R), hkey, hlen, hgs, np.int32(lc), ea, eb, el, eg, ecost, area, rsum, best, into,
        np.int32(target), f32(thr), np.float64(2.0 * GSCALE), np.float64(B0), np.float64(inv_norm),
        np.float64(n), np.float64(size_k), np.int32(max_rounds), np.int32(min_area), state, np.int32(emax),
        np.int32(use), np.int32(slc), np.int64(soff), ea2, eb2, el2, eg2, np.int32(skip)), shared_mem=total)
    return into, state


#: bytes of a slot of the small table (key 8, gradient sum 8, length 4)
SMALL_SLOT_BYTES = 20


def small_table_log(free_bytes: int) -> int:
    """log2 of the small table's slots in ``free_bytes`` of shared memory (0: none; at least 2^6)."""
    k = 0
    while k < SMALL_TABLE_MAX_LOG and SMALL_SLOT_BYTES << (k + 1) <= free_bytes:
        k += 1
    return k if k >= 6 else 0


def check_merge_state(state, error_at: int = 2) -> None:
    """Raise one line when a device merge's state (read back) reports labels beyond the graph's bounds
    (the merge then stops without merging): ``state[error_at]`` holds the error bits
    (:func:`graph_merge_device`: 2; the learned merge's ``merge_device``: 3)."""
    s = np.asarray(state).reshape(-1)
    if s.shape[0] > error_at and int(s[error_at]):
        raise ValueError("the region graph overflowed its bounds (a region of the labels is not one "
                         "4-connected piece?)")


def merge_smem_bytes(R: int, emax: int) -> int:
    """Shared memory ``ct_merge`` needs to keep the regions and pairs on chip (area, 3 colour
    sums and best: 8 bytes each a region; into: 4; per pair 8 + 4 x 4)."""
    return int(R * (8 * 5 + 4) + emax * (8 + 4 * 4))


def merge_region_smem_bytes(R: int) -> int:
    """Shared memory ``ct_merge`` needs to keep only the regions on chip (area, 3 colour sums,
    best: 8 bytes each; into: 4)."""
    return int(R * (8 * 5 + 4))


def merge_smem_mode(be, R: int, emax: int) -> int:
    """Where ``ct_merge`` keeps its arrays: 1 all in shared memory, 2 the regions' only, 3 / 4 the hot
    fields only (:data:`HOT_SMEM`: best and into / best), 0 none."""
    if merge_smem_bytes(R, emax) <= _max_smem(be):
        return 1
    if merge_region_smem_bytes(R) <= _max_smem(be):
        return 2
    hot = _SMEM_MODES.get(HOT_SMEM, 0) if HOT_SMEM else 0
    return hot if hot and _mode_smem_bytes(hot, R, emax) <= _max_smem(be) else 0


#: ``graph_merge_device``'s ``smem`` values -> ``ct_merge``'s use_smem modes (and back, for the info)
_SMEM_MODES = {False: 0, True: 1, "regions": 2, "best_into": 3, "best": 4}
SMEM_INFO = {v: k for k, v in _SMEM_MODES.items()}


def _mode_smem_bytes(use: int, R: int, emax: int) -> int:
    """Shared memory of ``ct_merge``'s arrays in mode ``use`` (:func:`merge_smem_mode`)."""
    return {0: 0, 1: merge_smem_bytes(R, emax), 2: merge_region_smem_bytes(R), 3: 12 * R, 4: 8 * R}[use]


def _max_smem(be) -> int:
    """The most dynamic shared memory one ``ct_merge`` block may opt in to (a little under the
    device's per-block opt-in limit, for the static shared variables)."""
    cache = _max_smem.__dict__.setdefault("cache", {})
    key = id(be)
    v = cache.get(key)
    if v is None:
        if not is_cupy(be):
            v = int(getattr(be, "max_dynamic_smem", 227 * 1024 - 1024))  # the emulator: an H100's
        else:
            import cupy

            v = 48 * 1024
            try:
                v = int(cupy.cuda.Device(be.device_id).attributes["MaxSharedMemoryPerBlockOptin"])
            except Exception:  # noqa: BLE001 - an older CuPy: the properties, else the 48 KiB everyone has
                try:
                    v = int(cupy.cuda.runtime.getDeviceProperties(be.device_id)["sharedMemPerBlockOptin"])
                except Exception:  # noqa: BLE001
                    pass
            v -= 1024
        cache[key] = v
    return v


# --------------------------------------------------------------------------- public stages
def colour_gradient(image, *, sigma: float = DEFAULT_SIGMA, device=None):
    """Blurred CIELAB ``(H, W, 3)`` float32 and the colour gradient magnitude ``(H, W)`` float32.

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.contours import colour_gradient
    >>> img = np.zeros((8, 8, 3), np.uint8); img[:, 4:] = 255
    >>> lab, g = colour_gradient(img, device="cpu")
    >>> bool(g[:, 3:5].min() > g[:, 0].max())
    True
    """
    be = get_backend(device)
    img, h, w, c = as_image(image)
    p = check_params(DEFAULT_COARSENESS, 0, DEFAULT_N_SUPERPIXELS, DEFAULT_COMPACTNESS, sigma)
    u8 = to_u8(img)
    if not be.is_gpu:
        sm = blur_np(lab_planes_np(u8), p["sigma"])
        G, _, _ = gradient_np(sm)
        return np.moveaxis(sm, 0, -1).copy(), G
    with activated(be):
        xp = be.xp
        sm, gq, _ = colour_device(be, xp.asarray(u8), h, w, c, p["sigma"])
        # the float gradient itself is not kept on the device path: recompute it from sm
        smh = asnumpy(sm).reshape(3, h, w)
        G, _, _ = gradient_np(smh)
        return np.moveaxis(smh, 0, -1).copy(), G


def superpixels(image, *, n_superpixels: int = DEFAULT_N_SUPERPIXELS, compactness: float = DEFAULT_COMPACTNESS,
                sigma: float = DEFAULT_SIGMA, device=None):
    """SLIC superpixels split into connected pieces: ``(labels (H, W) int32 1..R, R)``."""
    be = get_backend(device)
    img, h, w, c = as_image(image)
    p = check_params(DEFAULT_COARSENESS, 0, n_superpixels, compactness, sigma)
    S = slic_step(h, w, p["n_superpixels"])
    u8 = to_u8(img)
    if not be.is_gpu:
        sm = blur_np(lab_planes_np(u8), p["sigma"])
        _, _, q = gradient_np(sm)
        cells = slic_np(sm, q, S, p["compactness"], SLIC_ITERATIONS)
        return _label.label_np(cells, 4)
    with activated(be):
        xp = be.xp
        sm, gq, q = colour_device(be, xp.asarray(u8), h, w, c, p["sigma"])
        cells = slic_device(be, sm, q, h, w, S, p["compactness"], SLIC_ITERATIONS)
        labels_d, total = _label.unionfind_device(be, cells, h, w, 4)
        return asnumpy(labels_d).reshape(h, w), int(asnumpy(total)[0])


def region_graph(labels, image, *, sigma: float = DEFAULT_SIGMA) -> dict:
    """The region adjacency graph of ``labels`` (1..R) over ``image`` (CPU): regions 0-based,
    ``area``, ``rsum`` (colour sums, 16 per CIELAB unit), pairs ``ea < eb`` with ``el``
    boundary pixel pairs and ``eg`` summed gradient (8 per unit, both pixels of each pair)."""
    img, h, w, c = as_image(image)
    lab = np.asarray(labels)
    if lab.shape != (h, w) or lab.dtype.kind not in "iu" or lab.min() < 1:
        raise ImsegInputError("labels must be an integer image of the image's size with values 1..R")
    sm = blur_np(lab_planes_np(to_u8(img)), sigma)
    _, gq, q = gradient_np(sm)
    return region_graph_np(lab, int(lab.max()), gq, q)


def merge_regions(graph: dict, *, coarseness: float = DEFAULT_COARSENESS, n_segments: int = 0,
                  n_pixels: int | None = None, min_area: int = 0):
    """Merge a :func:`region_graph` (CPU): ``(segment of each region 1..count, count, rounds)``;
    ``min_area`` as in :func:`min_region_area` (coarseness mode only)."""
    p = check_params(coarseness, n_segments, 1, DEFAULT_COMPACTNESS, DEFAULT_SIGMA)
    n = int(n_pixels) if n_pixels else int(graph["area"].sum())
    thr = math.inf if p["n_segments"] else coarseness_threshold(p["coarseness"])
    into, count, rounds = merge_np(graph, p["n_segments"], thr, 1.0 / math.sqrt(n), min_area=min_area)
    seg, cnt = _resolve(into)
    return seg, cnt, rounds


# --------------------------------------------------------------------------- pipeline
def device_bytes_estimate(h: int, w: int, channels: int = 3) -> int:
    n = h * w
    return int(n * (channels + 4 * 13 + 16) + (32 << 20))


def segment_contours(image, *, coarseness: float = DEFAULT_COARSENESS, n_segments: int = DEFAULT_N_SEGMENTS,
                     n_superpixels: int = DEFAULT_N_SUPERPIXELS, compactness: float = DEFAULT_COMPACTNESS,
                     sigma: float = DEFAULT_SIGMA, merge: str = DEFAULT_MERGE, features: bool = True,
                     moments: bool = True, features_method: str = "auto", device=None, progress=None):
    """Segment an image into regions bounded by its contours (see the module docstring).

    Parameters
    ----------
    image : (H, W), (H, W, 3) or (H, W, 4) array
        uint8, uint16, bool or float in [0, 1] (brought to 8 bits); alpha is ignored.
    coarseness : float
        0..10: regions merge while the cheapest merge costs less than 10^coarseness. Larger:
        fewer, larger segments.
    n_segments : int
        Merge until exactly this many segments are left (fewer only where the image has
        fewer superpixels); 0: the coarseness decides.
    n_superpixels : int
        SLIC grid cells (the finest level of the hierarchy).
    compactness : float
        SLIC's m: larger, squarer superpixels.
    sigma : float
        Gaussian blur before the gradient and the superpixels (pixels).
    merge : {"learned", "contour", "hybrid"}
        The merge: ``"learned"`` (boosted trees over 24 features of each pair of regions,
        :mod:`gpu_kernels.imseg.learned`; the coarseness sets its threshold τ), ``"contour"``
        (the hand-made cost above) or ``"hybrid"`` (the contour merge to 200 regions, then the
        learned merge refit for such starts, :mod:`gpu_kernels.imseg.hybrid`).
    features, moments, features_method
        As in :func:`gpu_kernels.imseg.segment_image`.
    device, progress
        As everywhere.

    Returns
    -------
    gpu_kernels.imseg.ImageSegmentation
        ``clusters`` holds the superpixel components; ``info`` the number of superpixel
        components, merge rounds and host synchronisations.

    Raises
    ------
    ImsegInputError
        A bad image or parameter (one line saying what to change).
    TooLargeError
        The image does not fit the GPU's free memory.
    """
    progress = as_progress(progress)
    be = get_backend(device)
    p = check_params(coarseness, n_segments, n_superpixels, compactness, sigma)
    check_merge(merge)
    progress.update(0.0, "segmenting")
    from gpu_kernels.imseg import graphs as _graphs

    gp = {k: p[k] for k in ("sigma", "n_superpixels", "compactness")}
    with activated(be):
        u8 = None
        if _graphs.contour_usable(be, image):  # a CUDA graph of the first stages (graphs.ContourGraph)
            img, _, _, c = as_image(image)
            u8 = to_u8(img)
            g = _graphs.contour_lookup(be, u8, gp)
            if g is not None:
                seg = _segment_replay(be, g, img, u8, c, gp, coarseness, n_segments, features, moments,
                                      features_method, progress, merge)
                progress.update(1.0, "done")
                return seg
        col = stage_colour(image, sigma=sigma, device=be, progress=progress.sub(0.0, 0.2))
        progress.update(0.2, "superpixels")
        sp = stage_superpixels(col, n_superpixels=n_superpixels, compactness=compactness, device=be,
                               progress=progress.sub(0.2, 0.5), early=merge != "learned")
        progress.update(0.5, "merging")
        mg = stage_merge(col, sp, coarseness=coarseness, n_segments=n_segments, merge=merge, device=be,
                         progress=progress.sub(0.5, 0.8))
        progress.update(0.8, "region features")
        seg = stage_finish(col, sp, mg, features=features, moments=moments, features_method=features_method,
                           device=be, progress=progress.sub(0.8, 1.0))
        if u8 is not None:  # the next call of this shape and these parameters replays it
            _graphs.contour_capture(be, u8, gp)
    progress.update(1.0, "done")
    return seg


def _segment_replay(be, g, img, u8, c, gp, coarseness, n_segments, features, moments, features_method, progress,
                    merge=DEFAULT_MERGE):
    """:func:`segment_contours` with its first stages replayed from ``g``: one launch for the
    upload, colour, SLIC and components, then the merge and features as usual (the same
    kernels on the same data: the same result). The graph's memory is this call's until the
    results are on the host (its lock; after an error, once its kernels are done)."""
    with g.lock:
        try:
            timer = StageTimer(be)
            syncs = SyncCounter()
            g.launch(be, u8)
            timer.mark("prefix")
            R, pre = _read_components(be, syncs, g.total, g.comps,
                                      _early_key(be, g.h, g.w, gp) if merge != "learned" else None,
                                      g.h, g.w, g.gq, g.q)
            col = {"img": img, "h": g.h, "w": g.w, "c": c, "c8": g.c8, "sigma": gp["sigma"], "device": be.label,
                   "img_d": g.img_d, "sm": g.sm, "gq": g.gq, "q": g.q, "timer": timer}
            sp = {"S": g.S, "n_superpixels": gp["n_superpixels"], "compactness": gp["compactness"], "comps": g.comps,
                  "R": R, "syncs": syncs}
            if pre is not None:
                sp["graph_pre"] = pre
            progress.update(0.5, "merging")
            mg = stage_merge(col, sp, coarseness=coarseness, n_segments=n_segments, merge=merge, device=be,
                             progress=progress.sub(0.5, 0.8))
            progress.update(0.8, "region features")
            seg = stage_finish(col, sp, mg, features=features, moments=moments, features_method=features_method,
                               device=be)
        except BaseException:
            quiet_synchronize(be)
            raise
    seg.info["graph"] = True
    return seg


# --------------------------------------------------------------------------- stages
# Each takes the outputs of the stages before it and returns a new dict (never changing its
# inputs: the tool's stage cache may hand them to the next run). On the GPU the arrays stay
# on the device until stage_finish; ``t`` holds each stage's seconds (CUDA events).
def stage_colour(image, *, sigma: float = DEFAULT_SIGMA, device=None, progress=None) -> dict:
    """Stage 1: the checked image, its 8-bit copy on the device, blurred CIELAB and the
    fixed-point gradient and colour (on the CPU with progress and cancel checks)."""
    progress = as_progress(progress)
    be = get_backend(device)
    img, h, w, c = as_image(image)
    p = check_params(DEFAULT_COARSENESS, 0, DEFAULT_N_SUPERPIXELS, DEFAULT_COMPACTNESS, sigma)
    u8 = to_u8(img)
    c8 = 1 if u8.ndim == 2 else u8.shape[2]
    out = {"img": img, "h": h, "w": w, "c": c, "c8": c8, "sigma": p["sigma"], "device": be.label}
    if not be.is_gpu:
        t0 = time.perf_counter()
        sm = blur_np(lab_planes_np(u8, progress.sub(0.0, 0.3, "colour")), p["sigma"],
                     progress.sub(0.3, 0.75, "colour"))
        _, gq, q = gradient_np(sm, progress.sub(0.75, 1.0, "colour"))
        out.update(sm=sm, gq=gq, q=q, t={"colour": time.perf_counter() - t0})
        return out
    check_fits(be, h, w, device_bytes_estimate(h, w, c8))
    with activated(be):
        timer = StageTimer(be)
        img_d = upload(be, u8)
        timer.mark("upload")
        sm, gq, q = colour_device(be, img_d, h, w, c8, p["sigma"])
        timer.mark("colour")
        out.update(img_d=img_d, sm=sm, gq=gq, q=q, timer=timer)
    return out


def stage_superpixels(col: dict, *, n_superpixels: int = DEFAULT_N_SUPERPIXELS,
                      compactness: float = DEFAULT_COMPACTNESS, device=None, progress=None,
                      early: bool = False) -> dict:
    """Stage 2: SLIC cells split into 4-connected components (``comps`` 1..R). ``early``: on the GPU,
    queue the region graph's pixel pass before the read-back of R (:func:`early_graph`; ``graph_pre``
    in the result, taken by the next :func:`stage_merge`: the tool's cached stages leave it off)."""
    be = get_backend(device)
    p = check_params(DEFAULT_COARSENESS, 0, n_superpixels, compactness, DEFAULT_SIGMA)
    h, w = col["h"], col["w"]
    S = slic_step(h, w, p["n_superpixels"])
    out = {"S": S, "n_superpixels": p["n_superpixels"], "compactness": p["compactness"]}
    if not be.is_gpu:
        t0 = time.perf_counter()
        cells = slic_np(col["sm"], col["q"], S, p["compactness"], SLIC_ITERATIONS, progress)
        comps, R = _label.label_np(cells, 4)
        out.update(comps=comps, R=int(R), t={"superpixels": time.perf_counter() - t0})
        return out
    with activated(be):
        timer = StageTimer(be)
        syncs = SyncCounter()
        cells = slic_device(be, col["sm"], col["q"], h, w, S, p["compactness"], SLIC_ITERATIONS)
        comps, total = _label.unionfind_device(be, cells, h, w, 4)
        R, pre = _read_components(be, syncs, total, comps,
                                  _early_key(be, h, w, {**p, "sigma": col["sigma"]}) if early else None,
                                  h, w, col["gq"], col["q"])
        timer.mark("superpixels")
        out.update(comps=comps, R=R, timer=timer, syncs=syncs)
        if pre is not None:
            out["graph_pre"] = pre
    return out


def check_merge(merge) -> str:
    """The merge's name (:data:`MERGES`), or a one-line error."""
    if merge not in MERGES:
        raise ImsegInputError(f"unknown merge {merge!r}: use {' or '.join(MERGES)}")
    return merge


def stage_merge(col: dict, sp: dict, *, coarseness: float = DEFAULT_COARSENESS, n_segments: int = 0,
                merge: str = DEFAULT_MERGE, device=None, progress=None) -> dict:
    """Stages 3 and 4: the region graph and its merging (``merge``: ``"learned"``, the boosted-tree
    merge of :mod:`gpu_kernels.imseg.learned`, or ``"contour"``, the hand-made cost); ``labels``
    1..count."""
    be = get_backend(device)
    p = check_params(coarseness, n_segments, 1, DEFAULT_COMPACTNESS, DEFAULT_SIGMA)
    learned = check_merge(merge) == "learned"
    if merge == "hybrid":   # the contour merge, then the learned merge (gpu_kernels.imseg.hybrid)
        from gpu_kernels.imseg import hybrid as _hy

        return _hy.stage_merge(col, sp, coarseness=coarseness, n_segments=n_segments, device=be,
                               progress=progress)
    h, w, R = col["h"], col["w"], sp["R"]
    thr = math.inf if p["n_segments"] else coarseness_threshold(p["coarseness"])
    inv_norm = 1.0 / math.sqrt(h * w)
    min_area = min_region_area(sp["S"]) if not p["n_segments"] else 0
    out = {"coarseness": p["coarseness"], "n_segments": p["n_segments"], "min_area": min_area, "merge": merge}
    if learned:
        from gpu_kernels.imseg import learned as _lm

        tau = _lm.tau_from_coarseness(p["coarseness"])
        out["tau"] = tau
    if not be.is_gpu:
        t0 = time.perf_counter()
        graph = region_graph_np(sp["comps"], R, col["gq"], col["q"], boundary=learned)
        if learned:
            graph.update(_lm.graph_extras_np(sp["comps"], R, col["gq"], col["q"], graph))
        t1 = time.perf_counter()
        progress = as_progress(progress)
        if learned:
            into, _, rounds = _lm.merge_learned_np(graph, p["n_segments"], tau, inv_norm, min_area=min_area,
                                                   progress=progress)
        else:
            into, _, rounds = merge_np(graph, p["n_segments"], thr, inv_norm, min_area=min_area, progress=progress)
        seg, count = _resolve(into)
        labels = seg[sp["comps"] - 1].astype(np.int32)
        out.update(labels=labels, count=count, rounds=rounds,
                   t={"graph": t1 - t0, "merge": time.perf_counter() - t1})
        return out
    with activated(be):
        xp = be.xp
        n = h * w
        timer = StageTimer(be)
        syncs = SyncCounter()
        ran: dict = {}   # the learned merge's kernel after any fallback, and where its regions were
        if learned:
            into, state = _lm.merge_device(be, sp["comps"], R, h, w, col["gq"], col["q"], p["n_segments"], tau,
                                           inv_norm, timer=timer, min_area=min_area, info=ran)
        else:
            pre = sp.pop("graph_pre", None)   # (its table and sums serve one merge)
            into, state = graph_merge_device(be, sp["comps"], R, h, w, col["gq"], col["q"], p["n_segments"], thr,
                                             inv_norm, timer=timer, min_area=min_area, pre=pre)
        newid = xp.empty(R, dtype=xp.int32)
        count_d = _label.relabel_device(be, into, R, newid)
        labels_d = sp["comps"].copy()
        kernel(be, _label._SRC, "relabel_pixels")(grid(n, 256), (256,), (labels_d, np.int64(n), newid))
        meta = syncs.read_many(be, (count_d, state), "number of segments (sizes the feature arrays)")
        check_merge_state(meta[1:], 3 if learned else 2)
        timer.mark("merge")
        out.update(labels=labels_d, count=int(meta[0]), rounds=int(meta[2]), timer=timer, syncs=syncs,
                   merge_smem=(ran["smem"] if learned else SMEM_INFO[merge_smem_mode(be, R, 3 * R + 16)]))
    return out


def stage_finish(col: dict, sp: dict, mg: dict, *, features: bool = True, moments: bool = True,
                 features_method: str = "auto", device=None, progress=None):
    """Stage 5: region features, and everything brought to the host as an ImageSegmentation
    (``progress``: the CPU's features report to it and check for cancel)."""
    from gpu_kernels.imseg.segment import ImageSegmentation

    be = get_backend(device)
    if features_method == "auto":
        features_method = _feat.DEFAULT_METHOD
    if features_method not in _feat.METHODS:
        raise ImsegInputError(f"unknown features method {features_method!r}")
    img, h, w, c = col["img"], col["h"], col["w"], col["c"]
    count = mg["count"]
    params = {"method": "contours", "sigma": col["sigma"], "n_superpixels": sp["n_superpixels"],
              "compactness": sp["compactness"], "slic_step": sp["S"], "coarseness": mg["coarseness"],
              "n_segments": mg["n_segments"], "merge": mg.get("merge", "contour"), "features_method": features_method}
    if "tau" in mg:
        params["tau"] = mg["tau"]
    info = {"device": be.label, "params": params, "superpixels": sp["R"], "merge_rounds": mg["rounds"],
            "merge_in_shared_memory": mg.get("merge_smem", False)}
    if not be.is_gpu:
        t0 = time.perf_counter()
        feats = _feat.features_np(mg["labels"], count, img, moments=moments, progress=progress) if features else {}
        t = {**col["t"], **sp["t"], **mg["t"], "features": time.perf_counter() - t0}
        t["total"] = sum(t.values())
        return ImageSegmentation(labels=mg["labels"], clusters=sp["comps"].astype(np.int32), n_regions=count,
                                 n_clusters=sp["R"], centres=np.zeros((0, 3)), features=feats, timings=t, syncs=0,
                                 info={**info, "sync_reasons": []})
    with activated(be):
        xp = be.xp
        timer = StageTimer(be)
        feats_d = {}
        if features:
            src = col["img_d"] if img.dtype == np.uint8 else xp.asarray(img)
            feats_d = _feat.features_device(be, mg["labels"], count, h, w, src, c, features_method, moments)
        timer.mark("features")
        host = download(be, {"__labels": mg["labels"], "__comps": sp["comps"], **feats_d})
        timer.mark("download")
        t = {}
        for tm in (col.get("timer"), sp.get("timer"), mg.get("timer"), timer):
            if tm is not None:
                t.update({k: v for k, v in tm.result().items() if k != "total"})
        t["total"] = float(sum(t.values()))
        reasons = list(sp["syncs"].reasons) + list(mg["syncs"].reasons)
    labels = host.pop("__labels").reshape(h, w)
    comps_h = host.pop("__comps").reshape(h, w)
    return ImageSegmentation(labels=labels, clusters=comps_h, n_regions=count, n_clusters=sp["R"],
                             centres=np.zeros((0, 3)), features=host, timings=t, syncs=len(reasons),
                             info={**info, "sync_reasons": reasons})
