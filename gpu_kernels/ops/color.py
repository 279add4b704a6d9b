"""Greyscale conversion to float32 in 0..1, on the GPU or the CPU.

8-bit images are divided by 255, 16-bit by 65535; float images are taken as they are (0..1
expected). RGB(A) becomes ITU-R 601 luma ``0.299 R + 0.587 G + 0.114 B``; an alpha channel
is ignored here (tools use it as a mask where they want to).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.ops import to_gray
>>> rgb = np.array([[[255, 0, 0], [0, 0, 255]]], np.uint8)
>>> [[round(float(x), 3) for x in row] for row in to_gray(rgb, device="cpu")]
[[0.299, 0.114]]
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.errors import InputError

from . import _gpu

__all__ = ["to_gray", "gray_scale"]


def gray_scale(dtype) -> float:
    """The factor that maps a dtype's full range to 0..1 (1 for floats)."""
    dt = np.dtype(dtype)
    if dt == np.uint8:
        return 1.0 / 255.0
    if dt == np.uint16:
        return 1.0 / 65535.0
    if dt.kind == "f":
        return 1.0
    raise InputError(f"unsupported image type {dt}: use 8 or 16-bit unsigned integers or floats")


def _check_image(shape) -> int:
    if len(shape) == 2:
        return 1
    if len(shape) == 3 and shape[2] in (1, 2, 3, 4):
        return int(shape[2])
    raise InputError(f"an image must be (H, W) or (H, W, C) with 1 to 4 channels, got shape {tuple(shape)}")


def _gray(be: Backend, img):
    """float32 (H, W) luma of an (H, W[, C]) image already on ``be``."""
    ch = _check_image(img.shape)
    scale = gray_scale(img.dtype)
    H, W = img.shape[:2]
    if not be.is_gpu:
        a = np.asarray(img)
        if a.dtype.kind == "f" and a.dtype != np.float32:
            a = a.astype(np.float32)
        if ch >= 3:
            g = (np.float32(0.299) * a[..., 0].astype(np.float32) + np.float32(0.587) * a[..., 1].astype(np.float32)
                 + np.float32(0.114) * a[..., 2].astype(np.float32))
        else:
            g = (a if a.ndim == 2 else a[..., 0]).astype(np.float32)
        return np.ascontiguousarray(g * np.float32(scale), dtype=np.float32)
    xp = be.xp
    src = img
    if src.dtype.kind == "f" and src.dtype != xp.float32:
        src = src.astype(xp.float32)
    src = xp.ascontiguousarray(src)
    name = {np.dtype(np.uint8): "ops_gray_u8", np.dtype(np.uint16): "ops_gray_u16",
            np.dtype(np.float32): "ops_gray_f32"}[np.dtype(src.dtype)]
    out = xp.empty((H, W), dtype=xp.float32)
    fn = _gpu.kernel(be, "ops_image.cu", name)
    fn(_gpu.grid1d(H * W), (_gpu.THREADS,), (src, out, _gpu.i64(H * W), _gpu.i32(ch), _gpu.f32(scale)))
    return out


def to_gray(image, *, device=None):
    """Greyscale float32 image in 0..1 from a grey, grey+alpha, RGB or RGBA image.

    Parameters
    ----------
    image : array_like
        ``(H, W)`` or ``(H, W, C)``, C in 1..4; uint8, uint16 or float.
    device : str or Backend, optional

    Returns
    -------
    array
        ``(H, W)`` float32 on the backend's device.
    """
    be = get_backend(device)
    with be.activate():
        img = be.xp.asarray(image) if be.is_gpu else np.asarray(be.asnumpy(image))
        if img.dtype == bool:
            img = img.astype(np.uint8) * 255
        return _gray(be, img)
