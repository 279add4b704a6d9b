"""Bilinear (2-D) and trilinear (3-D) warping by a dense displacement field.

``out(x) = image(x + d(x))``, sampled with linear interpolation; sample points outside the
image take the nearest edge value (``mode="nearest"``), and ``return_inside=True`` also gives
a mask of the points that fell inside. The GPU kernels (``ops_warp2d``/``ops_warp3d`` in
``cuda/ops_image.cu``) and the NumPy path use the same float32 arithmetic.

Displacements are given per axis, in axis order: ``(d_rows, d_cols)`` for an image,
``(d_z, d_y, d_x)`` for a volume. :func:`warp_flow` takes an optical flow in the usual
``(u, v)`` order (``u`` along columns, ``v`` along rows).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.ops import warp_flow
>>> img = np.arange(12, dtype=np.float32).reshape(3, 4)
>>> u = np.full((3, 4), 1.0, np.float32); v = np.zeros((3, 4), np.float32)
>>> warp_flow(img, u, v, device="cpu")[0].tolist()   # each pixel reads its right neighbour
[1.0, 2.0, 3.0, 3.0]
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.errors import InputError

from . import _gpu
from .filters import _prepare

__all__ = ["warp", "warp_flow", "bilinear_sample"]


def _bilinear_np(img: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """NumPy twin of ``ops_bilinear``: img (..., H, W), float32 coordinates (the arithmetic of
    :func:`_bilinear_take`, any number of leading axes); float32 result."""
    xs = xs.astype(np.float32, copy=False)
    ys = ys.astype(np.float32, copy=False)
    if img.ndim <= 3:
        return _bilinear_take(img, xs, ys).astype(np.float32, copy=False)
    out = _bilinear_take(img.reshape((-1, *img.shape[-2:])), xs, ys)
    return out.reshape(img.shape[:-2] + out.shape[1:]).astype(np.float32, copy=False)


def _bilinear_take(img: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Bilinear, edge-clamped sampling through flat ``take`` (about three times faster on large
    sample arrays than fancy indexing; :func:`_bilinear_np` is this for any leading axes):
    ``img`` (H, W) or (C, H, W) float32, ``xs``/``ys`` float32 of one shape; returns
    ``xs.shape`` (or ``(C, *xs.shape)``)."""
    H, W = img.shape[-2:]
    xs = np.fmin(np.fmax(xs, np.float32(0)), np.float32(W - 1))
    ys = np.fmin(np.fmax(ys, np.float32(0)), np.float32(H - 1))
    x0 = xs.astype(np.int32)
    y0 = ys.astype(np.int32)
    a = xs - x0.astype(np.float32)
    b = ys - y0.astype(np.float32)
    i00 = y0 * np.int32(W) + x0
    dx = (x0 < W - 1).astype(np.int32)
    dy = (y0 < H - 1).astype(np.int32) * np.int32(W)
    i01, i10 = i00 + dx, i00 + dy
    i11 = i10 + dx
    out = []
    for plane in (img,) if img.ndim == 2 else img:
        f = plane.ravel()
        p00, p01, p10, p11 = f.take(i00), f.take(i01), f.take(i10), f.take(i11)
        top = p00 + a * (p01 - p00)
        bot = p10 + a * (p11 - p10)
        out.append(top + b * (bot - top))
    return out[0] if img.ndim == 2 else np.stack(out)


def _inside_np(xs, ys, H, W):
    return ((xs >= 0) & (ys >= 0) & (xs <= W - 1) & (ys <= H - 1)).astype(np.float32)


def _warp2d(be: Backend, img, u, v, *, return_inside: bool = False):
    """img (H, W) or (C, H, W) float32 contiguous; u, v (H, W). Returns out[, inside]."""
    H, W = u.shape
    if not be.is_gpu:
        xs = np.arange(W, dtype=np.float32)[None, :] + u
        ys = np.arange(H, dtype=np.float32)[:, None] + v
        out = _bilinear_np(img, xs, ys)
        return (out, _inside_np(xs, ys, H, W)) if return_inside else out
    xp = be.xp
    out = xp.empty(img.shape, dtype=xp.float32)
    inside = xp.empty((H, W), dtype=xp.float32) if return_inside else out
    C = 1 if img.ndim == 2 else img.shape[0]
    fn = _gpu.kernel(be, "ops_image.cu", "ops_warp2d")
    fn(_gpu.grid1d(H * W), (_gpu.THREADS,),
       (img, u, v, out, inside, _gpu.i32(int(return_inside)), _gpu.i32(C), _gpu.i32(H), _gpu.i32(W)))
    return (out, inside) if return_inside else out


def _warp3d(be: Backend, vol, dz, dy, dx, *, return_inside: bool = False):
    D, H, W = dz.shape
    if not be.is_gpu:
        zs = np.arange(D, dtype=np.float32)[:, None, None] + dz
        ys = np.arange(H, dtype=np.float32)[None, :, None] + dy
        xs = np.arange(W, dtype=np.float32)[None, None, :] + dx
        zc = np.fmin(np.fmax(zs, np.float32(0)), np.float32(D - 1))
        z0 = zc.astype(np.intp)
        z1 = np.minimum(z0 + 1, D - 1)
        c = zc - z0.astype(np.float32)
        yy, xx = np.broadcast_to(ys, zs.shape), np.broadcast_to(xs, zs.shape)
        vol4 = vol if vol.ndim == 4 else vol[None]
        outs = []
        for ch in vol4:
            # bilinear in the two planes z0 and z1, then linear in z
            p0 = _bilinear_planes(ch, z0, yy, xx)
            p1 = _bilinear_planes(ch, z1, yy, xx)
            outs.append(p0 + c * (p1 - p0))
        out = np.stack(outs).astype(np.float32) if vol.ndim == 4 else outs[0].astype(np.float32)
        if return_inside:
            inside = (_inside_np(xs + 0 * zs, ys + 0 * zs, H, W) * ((zs >= 0) & (zs <= D - 1))).astype(np.float32)
            return out, inside
        return out
    xp = be.xp
    out = xp.empty(vol.shape, dtype=xp.float32)
    inside = xp.empty((D, H, W), dtype=xp.float32) if return_inside else out
    C = 1 if vol.ndim == 3 else vol.shape[0]
    fn = _gpu.kernel(be, "ops_image.cu", "ops_warp3d")
    fn(_gpu.grid1d(D * H * W), (_gpu.THREADS,),
       (vol, dz, dy, dx, out, inside, _gpu.i32(int(return_inside)), _gpu.i32(C), _gpu.i32(D), _gpu.i32(H),
        _gpu.i32(W)))
    return (out, inside) if return_inside else out


def _bilinear_planes(vol, z, ys, xs):
    """Bilinear sample of plane z[i] of vol (D, H, W) at (xs[i], ys[i])."""
    D, H, W = vol.shape
    xs = np.fmin(np.fmax(xs.astype(np.float32, copy=False), np.float32(0)), np.float32(W - 1))
    ys = np.fmin(np.fmax(ys.astype(np.float32, copy=False), np.float32(0)), np.float32(H - 1))
    x0 = xs.astype(np.intp)
    y0 = ys.astype(np.intp)
    x1 = np.minimum(x0 + 1, W - 1)
    y1 = np.minimum(y0 + 1, H - 1)
    a = xs - x0.astype(np.float32)
    b = ys - y0.astype(np.float32)
    i00, i01 = vol[z, y0, x0], vol[z, y0, x1]
    i10, i11 = vol[z, y1, x0], vol[z, y1, x1]
    top = i00 + a * (i01 - i00)
    bot = i10 + a * (i11 - i10)
    return top + b * (bot - top)


def warp(image, displacement, *, channel_axis: int | None = None, return_inside: bool = False, device=None):
    """Warp a 2-D image or 3-D volume: ``out(x) = image(x + displacement(x))``.

    Parameters
    ----------
    image : array_like
        ``(H, W)`` or ``(D, H, W)``; with ``channel_axis`` one more axis of channels, all
        warped by the same field.
    displacement : sequence of arrays or array
        One field per spatial axis in axis order (``(d_rows, d_cols)`` or ``(d_z, d_y, d_x)``),
        or an array of shape ``(ndim, *spatial_shape)``.
    channel_axis : int, optional
    return_inside : bool
        Also return a float32 mask, 1 where the sample point lies inside the image.
    device : str or Backend, optional

    Returns
    -------
    out : array
        float32, the image's shape, on the backend's device.
    inside : array, optional

    Example
    -------
    >>> import numpy as np
    >>> vol = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    >>> d = np.zeros((3, 2, 2, 2), np.float32); d[0] = 0.5     # half a slice along z
    >>> warp(vol, d, device="cpu")[0].tolist()
    [[2.0, 3.0], [4.0, 5.0]]
    """
    be = get_backend(device)
    with be.activate():
        img = _prepare(be, image)
        if channel_axis is not None:
            img = be.xp.ascontiguousarray(be.xp.moveaxis(img, channel_axis, 0))
        spatial = img.shape[1:] if channel_axis is not None else img.shape
        nd = len(spatial)
        if nd not in (2, 3):
            raise InputError(f"warp takes a 2-D image or a 3-D volume, got {nd} spatial axes")
        comps = [_prepare(be, d) for d in displacement]
        if len(comps) != nd:
            raise InputError(f"{len(comps)} displacement fields for a {nd}-D image: give one per axis")
        for c in comps:
            if tuple(c.shape) != tuple(spatial):
                raise InputError(f"a displacement field has shape {tuple(c.shape)}, the image {tuple(spatial)}")
        res = _warp2d(be, img, comps[1], comps[0], return_inside=return_inside) if nd == 2 else \
            _warp3d(be, img, *comps, return_inside=return_inside)
        if channel_axis is not None:
            out = res[0] if return_inside else res
            out = be.xp.ascontiguousarray(be.xp.moveaxis(out, 0, channel_axis))
            return (out, res[1]) if return_inside else out
        return res


def warp_flow(image, u, v, *, channel_axis: int | None = None, return_inside: bool = False, device=None):
    """Warp an image by an optical flow: ``out(x, y) = image(x + u, y + v)`` (bilinear).

    With the Middlebury convention (``IMG2(x + f(x)) = IMG1(x)``), ``warp_flow(img2, u, v)``
    is ``img1`` wherever the flow is right.
    """
    return warp(image, (v, u), channel_axis=channel_axis, return_inside=return_inside, device=device)


def bilinear_sample(image, xs, ys, *, device=None):
    """Sample a 2-D image at float coordinates (``xs`` along columns, ``ys`` along rows), bilinear,
    edge-clamped. NumPy only (a helper for small point sets)."""
    img = np.asarray(image, dtype=np.float32)
    return _bilinear_np(img, np.asarray(xs, np.float32), np.asarray(ys, np.float32))
