"""Shared pieces of the optical-flow methods: input checks, the result type, small kernels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_kernels import checks as _checks
from gpu_kernels.backend import Backend
from gpu_kernels.errors import InputError
from gpu_kernels.ops import _gpu
from gpu_kernels.ops.color import _check_image, _gray

__all__ = ["FlowInputError", "FlowResult", "prepare_pair", "prepare_mask", "check_int", "check_float"]


class FlowInputError(InputError):
    """Bad input to an optical-flow function (images of different sizes, a wrong mask, a bad
    parameter). The message is one clear line."""


@dataclass
class FlowResult:
    """What a flow method returns.

    Attributes
    ----------
    u, v : array
        ``(H, W)`` float32 flow, ``u`` along columns, ``v`` along rows, with
        ``IMG2(x + u, y + v) = IMG1(x, y)``; 0 outside the mask. On the device of the backend
        that computed it (CuPy on a GPU).
    quality : array
        ``(H, W)`` float32 confidence in 0..1 (0 outside the mask).
    method : str
    backend : str
        ``"cpu"`` or ``"cuda:N"``.
    params : dict
        The parameters the method ran with (after defaults).
    extras : dict
        Method-specific arrays: ``block_u``, ``block_v``, ``block_quality``, ``block_centers``
        (block matching), ``min_eig`` (Lucas-Kanade), ``seed_u``/``seed_v`` (refinement).
    """

    u: Any
    v: Any
    quality: Any
    method: str
    backend: str
    params: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    mask: Any = None

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.u.shape)

    def to_numpy(self) -> FlowResult:
        """A copy with every array on the host."""
        from gpu_kernels.backend import asnumpy

        def conv(x):
            if hasattr(x, "__cuda_array_interface__") or isinstance(x, np.ndarray):
                return asnumpy(x)
            if isinstance(x, tuple):
                return tuple(conv(y) for y in x)
            return x

        return FlowResult(asnumpy(self.u), asnumpy(self.v), asnumpy(self.quality), self.method, self.backend,
                          dict(self.params), {k: conv(x) for k, x in self.extras.items()},
                          None if self.mask is None else asnumpy(self.mask))

    def flow(self) -> np.ndarray:
        """``(H, W, 2)`` float32 host array of ``(u, v)`` (the ``.flo`` layout)."""
        from gpu_kernels.backend import asnumpy

        return np.stack([asnumpy(self.u), asnumpy(self.v)], axis=-1)


def check_int(name: str, value, lo: int, hi: int | None = None, choices=None) -> int:
    return _checks.check_int(name, value, lo, hi, choices, error=FlowInputError)


def check_float(name: str, value, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> float:
    return _checks.check_float(name, value, lo, hi, lo_open=lo_open, error=FlowInputError)


def _shape_text(shape) -> str:
    return f"{shape[1]} x {shape[0]}"


def _check_one(img, which: str):
    if not hasattr(img, "shape") or not hasattr(img, "dtype"):
        img = np.asarray(img)
    try:
        _check_image(img.shape)
    except InputError:
        raise FlowInputError(f"{which} must be (H, W) or (H, W, C) with 1 to 4 channels, got shape "
                             f"{tuple(img.shape)}") from None
    dt = np.dtype(img.dtype)
    if dt.kind == "b":
        raise FlowInputError(f"{which} is a boolean array: give an 8/16-bit or float image")
    if dt not in (np.dtype(np.uint8), np.dtype(np.uint16)) and dt.kind != "f":
        raise FlowInputError(f"{which} has pixel type {dt}: use 8 or 16-bit unsigned integers or floats")
    if img.shape[0] < 1 or img.shape[1] < 1:
        raise FlowInputError(f"{which} has no pixels")
    return img


def check_pair(be: Backend, img1, img2):
    """Both images on ``be`` in their own dtype, checked (sizes, layout, type, finite values)."""
    img1 = _check_one(img1, "the first image")
    img2 = _check_one(img2, "the second image")
    if tuple(img1.shape[:2]) != tuple(img2.shape[:2]):
        raise FlowInputError(f"the images have different sizes ({_shape_text(img1.shape)} and "
                             f"{_shape_text(img2.shape)}): both frames must be the same size")
    xp = be.xp
    out = []
    for img, which in ((img1, "first"), (img2, "second")):
        a = xp.asarray(img) if be.is_gpu else np.asarray(be.asnumpy(img))
        if a.dtype.kind == "f" and not bool(xp.isfinite(a).all()):
            raise FlowInputError(f"the {which} image has NaN or infinite pixel values")
        out.append(xp.ascontiguousarray(a))
    return out[0], out[1]


def prepare_pair(be: Backend, img1, img2):
    """Greyscale float32 (0..1) copies of both images on ``be``; checks that they match
    (:func:`check_pair`)."""
    a1, a2 = check_pair(be, img1, img2)
    return _gray(be, a1), _gray(be, a2)


def prepare_mask(be: Backend, mask, shape):
    """The mask as float32 1/0 on ``be`` (None stays None); checks its size."""
    if mask is None:
        return None
    m = mask if hasattr(mask, "shape") else np.asarray(mask)
    if m.ndim == 3 and m.shape[2] in (1, 2, 3, 4):
        m = m[..., -1] if m.shape[2] in (2, 4) else m[..., 0]   # alpha if there is one
    if m.ndim != 2:
        raise FlowInputError(f"the mask must be a 2-D array, got shape {tuple(m.shape)}")
    if tuple(m.shape) != tuple(shape):
        raise FlowInputError(f"the mask is {_shape_text(m.shape)} but the images are {_shape_text(shape)}: "
                             f"give a mask of the images' size")
    xp = be.xp
    m = xp.asarray(m) if be.is_gpu else np.asarray(be.asnumpy(m))
    out = xp.ascontiguousarray((m > 0).astype(xp.float32))
    if not bool(out.any()):
        raise FlowInputError("the mask selects no pixel: paint the region of interest, or give no mask")
    return out


def mask_pyramid(be: Backend, mask, levels_shapes):
    """The mask at each pyramid level (pixel kept where the blurred mask is >= 0.5)."""
    from gpu_kernels.ops.pyramid import _pyr_down

    out = [mask]
    cur = mask
    for _ in levels_shapes[1:]:
        cur = _pyr_down(be, cur, (0, 1))
        out.append(be.xp.ascontiguousarray((cur >= 0.5).astype(be.xp.float32)))
    return out


def launch(be: Backend, source: str, name: str, n: int, args, defines=None, threads: int = _gpu.THREADS):
    fn = _gpu.kernel(be, source, name, defines)
    fn(_gpu.grid1d(n, threads), (threads,), args)
