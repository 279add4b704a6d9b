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
    """
    u = np.asarray(asnumpy(u), np.float64)
    v = np.asarray(asnumpy(v), np.float64)
    if u.shape != v.shape or u.ndim != 2:
        raise FlowInputError(f"u and v must be 2-D arrays of one shape, got {u.shape} and {v.shape}")
    ok = np.isfinite(u) & np.isfinite(v) & (np.abs(u) < 1e9) & (np.abs(v) < 1e9)
    if valid is not None:
        ok &= np.asarray(asnumpy(valid)).astype(bool)
    u = np.where(ok, u, 0.0)
    v = np.where(ok, v, 0.0)
    rad = np.hypot(u, v)
    if max_flow is None:
        maxrad = float(rad[ok].max()) if ok.any() else 0.0
    else:
        maxrad = float(max_flow)
        if not np.isfinite(maxrad) or maxrad <= 0:
            raise FlowInputError(f"max_flow must be a positive number, got {max_flow!r}")
    eps = np.finfo(np.float64).eps
    fu, fv = u / (maxrad + eps), v / (maxrad + eps)
    wheel = make_colorwheel()
    ncols = wheel.shape[0]
    r = np.hypot(fu, fv)
    a = np.arctan2(-fv, -fu) / np.pi
    fk = (a + 1.0) / 2.0 * (ncols - 1)
    k0 = np.floor(fk).astype(int)
    k1 = (k0 + 1) % ncols
    f = fk - k0
    out = np.zeros(u.shape + (3,), np.uint8)
    for i in range(3):
        col0 = wheel[k0, i] / 255.0
        col1 = wheel[k1, i] / 255.0
        col = (1 - f) * col0 + f * col1
        inside = r <= 1
        col = np.where(inside, 1 - r * (1 - col), col * 0.75)
        out[..., i] = np.where(ok, np.floor(255.0 * col), 0).astype(np.uint8)
    return out
