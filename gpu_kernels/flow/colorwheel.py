"""Middlebury's flow colour coding (Baker et al.): 55 hues around a wheel, saturation by magnitude.

The wheel has RY 15, YG 6, GC 4, CB 11, BM 13 and MR 6 steps between red, yellow, green, cyan,
blue and magenta. A vector's angle picks the hue (``atan2(-v, -u)``), its length over the
normalising radius the saturation: white at rest, full colour at the radius; longer vectors
are darkened to 75 %. The radius is the largest known magnitude, or one the user sets.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow.colorwheel import flow_to_color
>>> flow_to_color(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]]), max_flow=1.0).tolist()
[[[255, 0, 0], [255, 255, 255]]]
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import asnumpy

from ._common import FlowInputError

__all__ = ["make_colorwheel", "flow_to_color", "WHEEL_SEGMENTS"]

WHEEL_SEGMENTS = (("RY", 15), ("YG", 6), ("GC", 4), ("CB", 11), ("BM", 13), ("MR", 6))


def make_colorwheel() -> np.ndarray:
    """The 55 x 3 colour wheel (0..255, float64), as in Middlebury's ``colorcode.cpp``."""
    RY, YG, GC, CB, BM, MR = (n for _, n in WHEEL_SEGMENTS)
    wheel = np.zeros((RY + YG + GC + CB + BM + MR, 3))
    k = 0
    wheel[k:k + RY, 0] = 255
    wheel[k:k + RY, 1] = np.floor(255 * np.arange(RY) / RY)
    k += RY
    wheel[k:k + YG, 0] = 255 - np.floor(255 * np.arange(YG) / YG)
    wheel[k:k + YG, 1] = 255
    k += YG
    wheel[k:k + GC, 1] = 255
    wheel[k:k + GC, 2] = np.floor(255 * np.arange(GC) / GC)
    k += GC
    wheel[k:k + CB, 1] = 255 - np.floor(255 * np.arange(CB) / CB)
    wheel[k:k + CB, 2] = 255
    k += CB
    wheel[k:k + BM, 2] = 255
    wheel[k:k + BM, 0] = np.floor(255 * np.arange(BM) / BM)
    k += BM
    wheel[k:k + MR, 2] = 255 - np.floor(255 * np.arange(MR) / MR)
    wheel[k:k + MR, 0] = 255
    return wheel


def flow_to_color(u, v, *, max_flow: float | None = None, valid=None) -> np.ndarray:
    """Colour-code a flow as an ``(H, W, 3)`` uint8 RGB image (unknown pixels black).

    Parameters
    ----------
    u, v : array_like
        The flow (NumPy or CuPy), ``u`` along columns, ``v`` along rows.
    max_flow : float, optional
        The normalising radius; by default the largest magnitude among known pixels.
    valid : array_like, optional
        Known pixels (also excluded: non-finite values and magnitudes above 1e9).

    Notes
    -----
    The arithmetic is float64 and per pixel, done in bands of rows on a few threads (NumPy
    releases the GIL), so that the temporaries stay in the cache: a 1080p flow takes a fraction
    of the time of whole-image passes, with the same bytes.
    """
    u = np.asarray(asnumpy(u))
    v = np.asarray(asnumpy(v))
    if u.shape != v.shape or u.ndim != 2:
        raise FlowInputError(f"u and v must be 2-D arrays of one shape, got {u.shape} and {v.shape}")
    valid = None if valid is None else np.asarray(asnumpy(valid)).astype(bool, copy=False)
    if max_flow is not None:
        maxrad = float(max_flow)
        if not np.isfinite(maxrad) or maxrad <= 0:
            raise FlowInputError(f"max_flow must be a positive number, got {max_flow!r}")
    H, W = u.shape
    step = max(1, _BAND_PIXELS // max(W, 1))
    bands = [slice(y, min(y + step, H)) for y in range(0, H, step)]

    def known(b):
        ub = u[b].astype(np.float64)
        vb = v[b].astype(np.float64)
        ok = np.isfinite(ub) & np.isfinite(vb) & (np.abs(ub) < 1e9) & (np.abs(vb) < 1e9)
        if valid is not None:
            ok &= valid[b]
        return np.where(ok, ub, 0.0), np.where(ok, vb, 0.0), ok

    if max_flow is None:
        def band_max(b):
            ub, vb, ok = known(b)
            return float(np.hypot(ub, vb)[ok].max()) if ok.any() else 0.0
        maxrad = max(_map(band_max, bands), default=0.0)
    wheel = make_colorwheel() / 255.0
    ncols = wheel.shape[0]
    scale = maxrad + np.finfo(np.float64).eps
    out = np.zeros((H, W, 3), np.uint8)

    def band_colour(b):
        ub, vb, ok = known(b)
        fu, fv = ub / scale, vb / scale
        r = np.hypot(fu, fv)[..., None]
        fk = (np.arctan2(-fv, -fu) / np.pi + 1.0) / 2.0 * (ncols - 1)
        k0 = np.floor(fk).astype(int)
        f = (fk - k0)[..., None]
        col = (1 - f) * wheel[k0] + f * wheel[(k0 + 1) % ncols]
        col = np.where(r <= 1, 1 - r * (1 - col), col * 0.75)
        out[b] = np.where(ok[..., None], np.floor(255.0 * col), 0).astype(np.uint8)

    _map(band_colour, bands)
    return out


#: pixels per band of :func:`flow_to_color` (its float64 temporaries then stay in the cache)
_BAND_PIXELS = 1 << 16


def _map(fn, items) -> list:
    """``fn`` over ``items``, on up to 8 threads where there are several (NumPy releases the GIL)."""
    import os

    workers = min(8, os.cpu_count() or 1, len(items))
    if workers <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))
