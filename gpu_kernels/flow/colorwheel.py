"""Middlebury's flow colour coding (Baker et al.): 55 hues around a wheel, saturation by magnitude.

The wheel has RY 15, YG 6, GC 4, CB 11, BM 13 and MR 6 steps between red, yellow, green, cyan,
blue and magenta. A vector's angle picks the hue (``atan2(-v, -u)``), its length over the
normalising radius the saturation: white at rest, full colour at the radius; longer vectors
are darkened to 75 %. The radius is the largest known magnitude, or one the user sets.

On a GPU the coding runs on the device (``gpu_kernels/cuda/flow_colorwheel.cu``) and only the
8-bit picture comes back to the host (into pinned memory); on the CPU it runs in NumPy, in bands
of rows on a few threads. Both do the same float64 operations in the same order (no fused
multiply-adds on the device), so they give the same bytes wherever the two ``atan2``
implementations round alike (tested on random and real flows).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow.colorwheel import flow_to_color
>>> flow_to_color(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]]), max_flow=1.0).tolist()
[[[255, 0, 0], [255, 255, 255]]]
"""

from __future__ import annotations

import math

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend

from ._common import FlowInputError

__all__ = ["make_colorwheel", "flow_to_color", "flow_to_rgba", "flow_radius", "WHEEL_SEGMENTS"]

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


def flow_to_color(u, v, *, max_flow: float | None = None, valid=None, device=None) -> np.ndarray:
    """Colour-code a flow as an ``(H, W, 3)`` uint8 RGB image on the host (unknown pixels black).

    Parameters
    ----------
    u, v : array_like
        The flow (NumPy or CuPy), ``u`` along columns, ``v`` along rows.
    max_flow : float, optional
        The normalising radius; by default the largest magnitude among known pixels.
    valid : array_like, optional
        Known pixels (also excluded: non-finite values and magnitudes above 1e9).
    device : str or Backend, optional
        Where to compute: by default the GPU when ``u`` is a CuPy array, else the CPU.
    """
    return _colour(u, v, max_flow=max_flow, valid=valid, channels=3, device=device)


def flow_to_rgba(u, v, *, max_flow: float | None = None, valid=None, alpha: int = 255, quality=None,
                 threshold: float = 0.0, device=None) -> np.ndarray:
    """The colour coding of :func:`flow_to_color` with an alpha channel, ``(H, W, 4)`` uint8 on
    the host: ``alpha`` where ``valid`` is set and ``quality >= threshold``, 0 elsewhere (a
    picture to lay over the first frame). On a GPU only this picture crosses to the host.

    >>> import numpy as np
    >>> flow_to_rgba(np.array([[1.0, 0.0]]), np.array([[0.0, 0.0]]), max_flow=1.0, alpha=128,
    ...              quality=np.array([[0.9, 0.1]]), threshold=0.5).tolist()
    [[[255, 0, 0, 128], [255, 255, 255, 0]]]
    """
    a = check_alpha(alpha)
    return _colour(u, v, max_flow=max_flow, valid=valid, channels=4, alpha=a, quality=quality,
                   threshold=float(threshold), device=device)


def flow_radius(u, v, *, valid=None, device=None) -> float:
    """The automatic colour radius: the largest magnitude among known pixels (0 where none is)."""
    be, u, v, valid, _q = _inputs(u, v, valid, None, device)
    return _gpu_radius(be, u, v, valid) if be.is_gpu else _cpu_radius(u, v, valid)


# ----------------------------------------------------------------------------- common
def _inputs(u, v, valid, quality, device):
    """The backend (given, or the GPU for CuPy input) and the inputs checked, on its side."""
    if device is None:
        device = "cuda" if type(u).__module__.startswith("cupy") else "cpu"
    be = get_backend(device)
    if be.is_gpu:
        xp = be.xp
        with be.activate():
            u, v = xp.asarray(u), xp.asarray(v)
            if u.dtype not in (np.float32, np.float64):
                u, v = u.astype(np.float64), v.astype(np.float64)
            elif v.dtype != u.dtype:
                u, v = u.astype(np.float64), v.astype(np.float64)
            _check_shapes(u, v)
            u, v = xp.ascontiguousarray(u), xp.ascontiguousarray(v)
            if valid is not None:
                valid = xp.ascontiguousarray(xp.asarray(valid).astype(bool, copy=False)).view(np.uint8)
            if quality is not None:
                quality = xp.ascontiguousarray(xp.asarray(quality), dtype=np.float32)
    else:
        u, v = np.asarray(asnumpy(u)), np.asarray(asnumpy(v))
        _check_shapes(u, v)
        valid = None if valid is None else np.asarray(asnumpy(valid)).astype(bool, copy=False)
        quality = None if quality is None else np.asarray(asnumpy(quality), np.float32)
    for name, a in (("valid", valid), ("quality", quality)):
        if a is not None and tuple(a.shape) != tuple(u.shape):
            raise FlowInputError(f"{name} must have the flow's shape {tuple(u.shape)}, got {tuple(a.shape)}")
    return be, u, v, valid, quality


def check_alpha(alpha) -> int:
    """``alpha`` as an int in 0..255 (:class:`FlowInputError` otherwise)."""
    a = int(alpha)
    if not 0 <= a <= 255:
        raise FlowInputError(f"alpha must be in 0..255, got {alpha!r}")
    return a


def alpha_channel(shape, valid, quality, threshold, alpha) -> np.ndarray:
    """The alpha channel of :func:`flow_to_rgba` on the host: ``alpha`` where ``valid`` (None:
    everywhere) is set and ``quality`` (None: no test) is at least ``threshold``, 0 elsewhere."""
    shown = np.ones(shape, bool) if valid is None else np.array(valid, bool)
    if quality is not None:
        shown &= np.asarray(quality, np.float32) >= np.float32(threshold)
    return np.where(shown, np.uint8(alpha), np.uint8(0))


def _check_shapes(u, v) -> None:
    if u.shape != v.shape or u.ndim != 2:
        raise FlowInputError(f"u and v must be 2-D arrays of one shape, got {u.shape} and {v.shape}")


def _colour(u, v, *, max_flow, valid, channels, alpha=255, quality=None, threshold=0.0, device=None):
    if max_flow is not None:
        maxrad = float(max_flow)
        if not np.isfinite(maxrad) or maxrad <= 0:
            raise FlowInputError(f"max_flow must be a positive number, got {max_flow!r}")
    be, u, v, valid, quality = _inputs(u, v, valid, quality, device)
    if be.is_gpu:
        if max_flow is None:
            maxrad = _gpu_radius(be, u, v, valid)
        return _gpu_colour(be, u, v, valid, quality, threshold, maxrad, channels, alpha)
    if max_flow is None:
        maxrad = _cpu_radius(u, v, valid)
    return _cpu_colour(u, v, valid, quality, threshold, maxrad, channels, alpha)


# ----------------------------------------------------------------------------- CPU
#: pixels per band of the NumPy path (its float64 temporaries then stay in the cache)
_BAND_PIXELS = 1 << 16


def _bands(shape) -> list[slice]:
    H, W = shape
    step = max(1, _BAND_PIXELS // max(W, 1))
    return [slice(y, min(y + step, H)) for y in range(0, H, step)]


def _known(u, v, valid, b):
    ub = u[b].astype(np.float64)
    vb = v[b].astype(np.float64)
    ok = np.isfinite(ub) & np.isfinite(vb) & (np.abs(ub) < 1e9) & (np.abs(vb) < 1e9)
    if valid is not None:
        ok &= valid[b]
    return np.where(ok, ub, 0.0), np.where(ok, vb, 0.0), ok


def _cpu_radius(u, v, valid) -> float:
    def band_max(b):
        ub, vb, ok = _known(u, v, valid, b)
        return float((ub * ub + vb * vb)[ok].max()) if ok.any() else 0.0
    return math.sqrt(max(_map(band_max, _bands(u.shape)), default=0.0))


def _cpu_colour(u, v, valid, quality, threshold, maxrad, channels, alpha) -> np.ndarray:
    wheel = make_colorwheel() / 255.0
    ncols = wheel.shape[0]
    scale = maxrad + np.finfo(np.float64).eps
    out = np.empty(u.shape + (channels,), np.uint8)

    def band_colour(b):
        ub, vb, ok = _known(u, v, valid, b)
        fu, fv = ub / scale, vb / scale
        r = np.sqrt(fu * fu + fv * fv)[..., None]
        fk = (np.arctan2(-fv, -fu) / np.pi + 1.0) / 2.0 * (ncols - 1)
        fl = np.floor(fk)
        k0 = fl.astype(np.intp)
        f = (fk - fl)[..., None]
        col = (1 - f) * wheel[k0] + f * wheel[(k0 + 1) % ncols]
        col = np.where(r <= 1, 1 - r * (1 - col), col * 0.75)
        out[b, :, :3] = np.where(ok[..., None], np.floor(255.0 * col), 0).astype(np.uint8)
        if channels == 4:
            out[b, :, 3] = alpha_channel(ok.shape, None if valid is None else valid[b],
                                         None if quality is None else quality[b], threshold, alpha)

    _map(band_colour, _bands(u.shape))
    return out


def _map(fn, items) -> list:
    """``fn`` over ``items``, on up to 8 threads where there are several (NumPy releases the GIL)."""
    import os

    workers = min(8, os.cpu_count() or 1, len(items))
    if workers <= 1:
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


# ----------------------------------------------------------------------------- GPU
_SOURCE = "flow_colorwheel.cu"
_THREADS = 256


def _kernel(be, name, u):
    from gpu_kernels.backend import kernel

    return kernel(be, _SOURCE, name, defines={"FLOW_T": "double" if u.dtype == np.float64 else "float"})


def _mask_args(be, valid):
    if valid is None:
        return be.xp.zeros(1, dtype=np.uint8), np.int32(0)
    return valid, np.int32(1)


def _gpu_radius(be, u, v, valid) -> float:
    xp = be.xp
    n = int(u.size)
    with be.activate():
        if n == 0:
            return 0.0
        blocks = int(min(-(-n // _THREADS), 1024))
        part = xp.zeros(blocks, dtype=np.float64)
        vm, has_v = _mask_args(be, valid)
        _kernel(be, "flow_cw_max_sq", u)((blocks,), (_THREADS,), (u, v, vm, has_v, np.int64(n), part))
        return math.sqrt(float(asnumpy(part).max()))


def _gpu_colour(be, u, v, valid, quality, threshold, maxrad, channels, alpha) -> np.ndarray:
    from gpu_kernels.ops._gpu import cached_device_array

    xp = be.xp
    n = int(u.size)
    with be.activate():
        out = xp.empty(tuple(u.shape) + (channels,), dtype=np.uint8)
        if n:
            wheel = cached_device_array(be, (make_colorwheel() / 255.0).ravel())
            vm, has_v = _mask_args(be, valid)
            q, has_q = (quality, np.int32(1)) if quality is not None else (xp.zeros(1, np.float32), np.int32(0))
            scale = np.float64(maxrad + np.finfo(np.float64).eps)
            blocks = int(min(-(-n // _THREADS), 65535 * 16))
            _kernel(be, "flow_cw_color", u)((blocks,), (_THREADS,), (
                u, v, vm, has_v, q, has_q, np.float32(threshold), wheel, scale, np.int32(channels),
                np.uint8(alpha), np.int64(n), out))
        return _to_host(be, out)


def _to_host(be, a) -> np.ndarray:
    """A device array on the host, through pinned memory where CuPy is real (a faster copy)."""
    if getattr(be.xp, "__name__", "") == "cupy":
        import cupyx

        host = cupyx.empty_pinned(a.shape, dtype=a.dtype)
        a.get(out=host)
        return host
    return asnumpy(a)
