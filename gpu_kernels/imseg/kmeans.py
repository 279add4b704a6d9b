"""Stage 1: k-means on the quantised CIELAB colour space (the paper's Algorithms 2 and 3).

1. **Weights.** Every occupied colour (code) is weighted by its pixel count: by a histogram
   (shared atomics over runs of equal codes, the production path) or, as in the paper, by
   sorting the codes and a segmented reduction over equal codes (``weights="sort"``).
2. **Initial centres.** Pixels sampled on a regular grid of at most ``k_max`` points (equal
   intervals), in raster order; a sample whose bin centre lies closer than ``merge_distance``
   (CIELAB units) to the nearest candidate is merged into it as a running mean, otherwise it
   becomes a new candidate. The number of centres k is what remains (at most ``k_max``).
3. **Iterations.** A fixed number (``iterations``, 3 by default; no convergence test, so no
   host round-trip): the occupied colours take their nearest centre (ties: the lower index),
   then each centre moves to the weighted mean of its colours (exact integer sums in shared
   memory, so the result does not depend on the order of the atomics). A centre that loses all its colours stays put.
4. Every pixel takes its colour's cluster.

Everything is computed on the bin centres, in float64, the same way on the CPU and the GPU.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.kmeans import kmeans_quantized
>>> img = np.zeros((8, 8, 3), np.uint8); img[:, 4:] = (0, 0, 255)
>>> clusters, centres = kmeans_quantized(img, k_max=4, device="cpu")
>>> len(centres), sorted(np.unique(clusters[:, :4]).tolist() + np.unique(clusters[:, 4:]).tolist())
(2, [0, 1])
"""

from __future__ import annotations

import math

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend, set_max_dynamic_smem
from gpu_kernels.checks import check_float, check_int
from gpu_kernels.imseg import color as _color
from gpu_kernels.imseg._util import NULL, ImsegInputError, activated, as_image, grid, kernel
from gpu_kernels.jobs import as_progress

__all__ = [
    "DEFAULT_K_MAX",
    "DEFAULT_ITERATIONS",
    "DEFAULT_MERGE_DISTANCE",
    "MAX_K",
    "MAX_ITERATIONS",
    "WEIGHT_METHODS",
    "DEFAULT_WEIGHTS",
    "sample_grid",
    "kmeans_quantized",
]

from gpu_kernels.imseg import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: most initial samples (the number of clusters k is at most this)
DEFAULT_K_MAX = _d.DEFAULT_K_MAX
#: k-means iterations on the quantised colours (the paper's i_kM = 3)
DEFAULT_ITERATIONS = _d.DEFAULT_ITERATIONS
#: samples closer than this (CIELAB units, CIE76) to a candidate are merged into it. 18 was
#: chosen on BSDS500 with min_size 512 (benchmarks/results/imseg.md: 10 gives too many
#: clusters and fragments, 25 merges distinct objects: PRI falls)
DEFAULT_MERGE_DISTANCE = _d.DEFAULT_MERGE_DISTANCE
MAX_K = _d.MAX_K
MAX_ITERATIONS = _d.MAX_ITERATIONS
WEIGHT_METHODS = ("histogram", "sort")
DEFAULT_WEIGHTS = "histogram"

_SRC = "imseg_kmeans.cu"
#: up to this many possible colours (min(2^(3q), pixels)) every k-means iteration and the final
#: assignment run in one block (kmeans_fused: one launch instead of 2 * iterations + 1; the
#: same centres and clusters); more colours take the grid kernels
FUSED_MAX_COLOURS = 32768


def sample_grid(h: int, w: int, k_max: int) -> tuple[int, int]:
    """``(ny, nx)``: a grid of at most ``k_max`` samples with about equal spacing in x and y."""
    k_max = max(int(k_max), 1)
    ny = max(1, min(h, int(round(math.sqrt(k_max * h / w)))))
    nx = max(1, min(w, k_max // ny))
    while ny * nx > k_max and ny > 1:
        ny -= 1
    return ny, nx


def _sample_positions(h: int, w: int, ny: int, nx: int) -> np.ndarray:
    iy = np.arange(ny, dtype=np.int64)
    ix = np.arange(nx, dtype=np.int64)
    y = ((2 * iy + 1) * h) // (2 * ny)
    x = ((2 * ix + 1) * w) // (2 * nx)
    return (y[:, None] * w + x[None, :]).ravel()


def check_kmeans(k_max, iterations, merge_distance) -> tuple[int, int, float]:
    if (type(k_max) is int and type(iterations) is int and type(merge_distance) is float and 1 <= k_max <= MAX_K
            and 0 <= iterations <= MAX_ITERATIONS and 0.0 <= merge_distance < math.inf):
        return k_max, iterations, merge_distance   # already canonical (every call of the tool's)
    err = {"error": ImsegInputError}
    k = check_int("k_max (the most clusters)", k_max, 1, MAX_K, **err)
    it = check_int("iterations", iterations, 0, MAX_ITERATIONS, **err)
    md = check_float("merge_distance (CIELAB units)", merge_distance, 0, **err)
    return k, it, md


# --------------------------------------------------------------------------- NumPy path
def _init_centres_np(codes: np.ndarray, h: int, w: int, k_max: int, q: int, thr2: float) -> np.ndarray:
    ny, nx = sample_grid(h, w, k_max)
    samples = _color.code_centres(codes.ravel()[_sample_positions(h, w, ny, nx)], q)
    cand = np.empty((len(samples), 3), np.float64)
    cw = np.empty(len(samples), np.float64)
    k = 0
    for s in samples:
        if k:
            d = cand[:k] - s
            dist = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
            i = int(np.argmin(dist))
            if dist[i] < thr2:
                wt = cw[i]
                cand[i] = (cand[i] * wt + s) / (wt + 1.0)
                cw[i] = wt + 1.0
                continue
        cand[k] = s
        cw[k] = 1.0
        k += 1
    return cand[:k].copy()


def _assign_np(cc: np.ndarray, centres: np.ndarray) -> np.ndarray:
    out = np.empty(len(cc), np.int32)
    step = max(1, (1 << 22) // max(len(centres), 1))
    for a in range(0, len(cc), step):
        d = cc[a:a + step, None, :] - centres[None, :, :]
        dist = d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1] + d[..., 2] * d[..., 2]
        out[a:a + step] = np.argmin(dist, axis=1)
    return out


def _update_np(codes_occ, weights, assign, centres, q: int) -> np.ndarray:
    k = len(centres)
    levels = 1 << q
    mask = levels - 1
    w = weights.astype(np.int64)
    parts = (codes_occ >> (2 * q), (codes_occ >> q) & mask, codes_occ & mask)
    s0 = np.bincount(assign, weights=None, minlength=k)  # only to size
    del s0
    # exact integer sums (bincount with int64 weights goes through float64: sum by sorting)
    order = np.argsort(assign, kind="stable")
    a_sorted = assign[order]
    starts = np.flatnonzero(np.r_[True, a_sorted[1:] != a_sorted[:-1]])
    cl = a_sorted[starts]
    new = centres.copy()
    wsum = np.add.reduceat(w[order], starts)
    for ch in range(3):
        s = np.add.reduceat(w[order] * parts[ch][order].astype(np.int64), starts)
        lo, hi = float(np.float32(_color.LAB_LO[ch])), float(np.float32(_color.LAB_HI[ch]))
        val = lo + (s.astype(np.float64) / wsum.astype(np.float64) + 0.5) * ((hi - lo) / float(levels))
        new[cl, ch] = val
    return new


def kmeans_np(codes: np.ndarray, h: int, w: int, q: int, k_max: int, iterations: int, merge_distance: float,
              weights: str = DEFAULT_WEIGHTS, progress=None):
    """The CPU path: ``(clusters (n,) int32, centres (k, 3) float64, n_colours)``."""
    progress = as_progress(progress)
    flat = codes.ravel()
    F = 1 << (3 * q)
    if weights == "sort":
        s = np.sort(flat)
        heads = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        occ = s[heads].astype(np.int32)
        wts = np.diff(np.r_[heads, len(s)]).astype(np.int64)
    else:
        hist = np.bincount(flat, minlength=F)
        occ = np.flatnonzero(hist).astype(np.int32)
        wts = hist[occ].astype(np.int64)
    centres = _init_centres_np(codes, h, w, k_max, q, merge_distance * merge_distance)
    cc = _color.code_centres(occ, q)
    for it in range(iterations):
        progress.update(it / max(iterations, 1), f"k-means iteration {it + 1}/{iterations}")
        assign = _assign_np(cc, centres)
        centres = _update_np(occ, wts, assign, centres, q)
    assign = _assign_np(cc, centres)
    table = np.zeros(F, np.int32)
    table[occ] = assign
    return table[flat], centres, len(occ)


# --------------------------------------------------------------------------- CUDA path
def kmeans_device(be, codes_d, h: int, w: int, q: int, k_max: int, iterations: int, merge_distance: float,
                  hist_d=None, weights: str = DEFAULT_WEIGHTS):
    """GPU k-means on device codes; no host synchronisation.

    ``hist_d`` holds the per-code pixel counts when the codes kernel already built them
    (``weights="histogram"``); with ``weights="sort"`` they are recomputed here by sorting.
    Replaces ``codes_d`` by the cluster ids in place and returns ``(clusters_d, centres_d
    (k_max, 3) float64, k_d (1,) int32 on the device, n_colours_d (1,) int32)``.
    """
    xp = be.xp
    n = h * w
    F = 1 << (3 * q)
    opts = _color.CUDA_OPTIONS
    if weights == "sort" or hist_d is None:
        hist_d = xp.zeros(F, dtype=xp.uint32)
        s = xp.sort(codes_d)
        kernel(be, _SRC, "sorted_weights", options=opts)(grid(n, 256), (256,), (s, np.int64(n), hist_d))
        del s
    cap = min(F, n)
    ccode = xp.empty(cap, dtype=xp.int32)
    cw = xp.empty(cap, dtype=xp.uint32)
    counts = xp.zeros(2, dtype=xp.int32)  # [n_colours, k]
    m_d, k_d = counts[0:1], counts[1:2]
    kernel(be, _SRC, "compact_colours", options=opts)(grid(F, 256), (256,), (hist_d, np.int32(F), ccode, cw, m_d))
    ny, nx = sample_grid(h, w, k_max)
    centres = xp.empty((max(k_max, 1), 3), dtype=xp.float64)  # rows k.. unused (callers take [:k])
    smem = 56 * max(k_max, 1)
    f_init = kernel(be, _SRC, "init_centres_fast", options=opts)
    set_max_dynamic_smem(f_init, smem)
    f_init((1,), (32,), (codes_d, np.int32(w), np.int32(h), np.int32(nx), np.int32(ny), np.int32(q),
                         np.float64(merge_distance * merge_distance), centres, k_d, np.int32(max(k_max, 1))),
           shared_mem=smem)
    table = xp.empty(F, dtype=xp.int32)  # every code a pixel has is occupied: written by the last assign
    if cap <= FUSED_MAX_COLOURS:  # every iteration and the final assignment in one block: one launch
        smem = 56 * max(k_max, 1)   # 3 doubles and 4 sums (8 32-bit words) a centre
        f_fused = kernel(be, _SRC, "kmeans_fused", options=opts)
        set_max_dynamic_smem(f_fused, smem)
        f_fused((1,), (1024,), (ccode, cw, m_d, np.int32(q), centres, k_d, np.int32(max(k_max, 1)),
                                np.int32(iterations), table), shared_mem=smem)
        kernel(be, _SRC, "map_clusters", options=opts)(grid(n, 256), (256,), (codes_d, np.int64(n), table))
        return codes_d, centres, k_d, m_d
    assign = xp.empty(cap, dtype=xp.int32)
    f_assign = kernel(be, _SRC, "kmeans_assign", options=opts)
    f_update = kernel(be, _SRC, "kmeans_update", options=opts)
    ga = grid(cap, 256)
    for _ in range(iterations):
        f_assign(ga, (256,), (ccode, m_d, np.int32(q), centres, k_d, assign, NULL))
        f_update((1,), (1024,), (ccode, cw, m_d, assign, np.int32(q), centres, k_d))
    f_assign(ga, (256,), (ccode, m_d, np.int32(q), centres, k_d, assign, table))
    kernel(be, _SRC, "map_clusters", options=opts)(grid(n, 256), (256,), (codes_d, np.int64(n), table))
    return codes_d, centres, k_d, m_d


# --------------------------------------------------------------------------- public
def kmeans_quantized(image, *, k_max: int = DEFAULT_K_MAX, q: int = _color.DEFAULT_Q,
                     iterations: int = DEFAULT_ITERATIONS, merge_distance: float = DEFAULT_MERGE_DISTANCE,
                     weights: str = DEFAULT_WEIGHTS, lab=None, device=None, progress=None):
    """Cluster the colours of an image with k-means on the quantised CIELAB space.

    Parameters
    ----------
    image : (H, W), (H, W, 3) or (H, W, 4) array
        uint8, uint16, bool or float in [0, 1].
    k_max : int
        Most initial samples (1..1024); the number of clusters k is at most this.
    q : int
        Bits per CIELAB channel (2..7).
    iterations : int
        k-means iterations on the quantised colours.
    merge_distance : float
        Initial samples closer than this (CIELAB units) to a candidate are merged into it.
    weights : {"histogram", "sort"}
        How the colour weights are counted (same result).
    lab : (H, W, 3) float array, optional
        Use these CIELAB values (e.g. bilateral-filtered) instead of converting ``image``.

    Returns
    -------
    clusters : (H, W) int32 ndarray
        Cluster id per pixel, 0..k-1.
    centres : (k, 3) float64 ndarray
        The final centres in CIELAB.

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.kmeans import kmeans_quantized
    >>> img = np.zeros((4, 4), np.uint8); img[2:] = 255
    >>> clusters, centres = kmeans_quantized(img, device="cpu")
    >>> clusters[:, 0].tolist(), np.round(centres[:, 0]).tolist()
    ([0, 0, 1, 1], [2.0, 98.0])
    """
    progress = as_progress(progress)
    be = get_backend(device)
    img, h, w, c = as_image(image)
    q = _color.check_q(q)
    k_max, iterations, merge_distance = check_kmeans(k_max, iterations, merge_distance)
    if weights not in WEIGHT_METHODS:
        raise ImsegInputError(f"weights must be one of {', '.join(WEIGHT_METHODS)}, got {weights!r}")
    n = h * w
    if lab is not None:
        lab = np.asarray(asnumpy(lab), dtype=np.float32)
        if lab.shape != (h, w, 3):
            raise ImsegInputError(f"lab must have shape {(h, w, 3)}, got {lab.shape}")
    if not be.is_gpu:
        codes = _color.codes_np(lab if lab is not None else _color.lab_np(img), q)
        cl, centres, _ = kmeans_np(codes, h, w, q, k_max, iterations, merge_distance, weights, progress)
        return cl.reshape(h, w), centres
    xp = be.xp
    with activated(be):
        hist = xp.zeros(1 << (3 * q), dtype=xp.uint32) if weights == "histogram" else None
        if lab is not None:
            lab_d = xp.asarray(np.ascontiguousarray(lab).reshape(-1))
            codes_d = _color.codes_device(be, None, n, 3, q, hist=hist, lab_d=lab_d)
        else:
            codes_d = _color.codes_device(be, xp.asarray(img), n, c, q, hist=hist)
        cl, centres, k_d, _ = kmeans_device(be, codes_d, h, w, q, k_max, iterations, merge_distance, hist, weights)
        k = int(asnumpy(k_d)[0])
        return asnumpy(cl).reshape(h, w), asnumpy(centres)[:k]
