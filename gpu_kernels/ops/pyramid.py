"""Gaussian pyramids of N-D arrays: blur-and-decimate down, linear interpolation up.

Down-sampling blurs each axis with Gaussian taps (``sigma``, default 1.0, 5 taps) and keeps
samples 0, 2, 4, ... (``ceil(n / 2)`` of them), in one pass per axis (``ops_correlate_axis``
with step 2). Coarse sample ``i`` therefore sits at fine position ``2 i``; :func:`pyr_up`
interpolates with that alignment, so a field sent down and back up is not shifted.
:func:`resize` is the centre-aligned resampling of an image to any size.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.ops import gaussian_pyramid, pyr_up
>>> pyr = gaussian_pyramid(np.ones((480, 640), np.float32), levels=5, device="cpu")
>>> [p.shape for p in pyr]
[(480, 640), (240, 320), (120, 160), (60, 80), (30, 40)]
>>> pyr_up(np.array([0.0, 1.0]), (3,), device="cpu").tolist()
[0.0, 0.5, 1.0]
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.errors import InputError

from . import _gpu
from .filters import _axes, _correlate_axis, _prepare, gaussian_kernel1d

__all__ = [
    "DEFAULT_PYR_SIGMA",
    "DEFAULT_PYR_TRUNCATE",
    "DEFAULT_PYRAMID_LEVELS",
    "pyr_down",
    "pyr_up",
    "resize",
    "gaussian_pyramid",
]

#: Gaussian sigma (pixels of the finer level) of the anti-aliasing blur before decimation.
DEFAULT_PYR_SIGMA = 1.0
#: Its taps reach ``truncate * sigma``: 2 pixels, 5 taps (close to the binomial 1 4 6 4 1).
DEFAULT_PYR_TRUNCATE = 2.0
DEFAULT_PYRAMID_LEVELS = 5


def _pyr_down(be: Backend, a, axes, *, sigma: float = DEFAULT_PYR_SIGMA, truncate: float = DEFAULT_PYR_TRUNCATE):
    taps = gaussian_kernel1d(sigma, truncate=truncate)
    out = a
    for ax in axes:
        out = _correlate_axis(be, out, taps, ax, step=2, mode="reflect")
    return out


def _linear_axis(be: Backend, a, axis: int, n_out: int, scale: float, offset: float, vscale: float):
    n_in = a.shape[axis]
    if not be.is_gpu:
        j = np.arange(n_out, dtype=np.float32)
        s = j * np.float32(scale) + np.float32(offset)
        s = np.fmin(np.fmax(s, np.float32(0)), np.float32(n_in - 1))
        i0 = s.astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        w = (s - i0.astype(np.float32))
        shape = [1] * a.ndim
        shape[axis] = n_out
        w = w.reshape(shape)
        v0 = np.take(a, i0, axis=axis)
        v1 = np.take(a, i1, axis=axis)
        return np.ascontiguousarray(np.float32(vscale) * (v0 + w * (v1 - v0)), dtype=np.float32)
    out, outer, inner = _gpu.axis_output(be, a, axis, n_out)
    if out.size == 0:
        return out
    fn = _gpu.kernel(be, "ops_image.cu", "ops_linear_axis")
    fn(_gpu.grid1d(out.size), (_gpu.THREADS,),
       (a, out, _gpu.i64(outer), _gpu.i32(n_in), _gpu.i32(n_out), _gpu.i64(inner), _gpu.f32(scale),
        _gpu.f32(offset), _gpu.f32(vscale)))
    return out


def _pyr_up(be: Backend, a, shape, axes, *, value_scale: float = 1.0):
    """Up-sample ``a`` to ``shape`` along ``axes`` (coarse i at fine 2 i), times value_scale."""
    out = a
    vs = float(value_scale)
    for ax in axes:
        if out.shape[ax] != shape[ax]:
            out = _linear_axis(be, out, ax, int(shape[ax]), 0.5, 0.0, vs)
            vs = 1.0
    if out is a:
        out = a * a.dtype.type(vs) if vs != 1 else a.copy()
    return out


def _resize(be: Backend, a, shape, axes, *, value_scale: float = 1.0):
    out = a
    first = True
    for ax in axes:
        n_in, n_out = out.shape[ax], int(shape[ax])
        scale = n_in / n_out
        out = _linear_axis(be, out, ax, n_out, scale, 0.5 * scale - 0.5, value_scale if first else 1.0)
        first = False
    return out


def _check_shape(arr, shape, axes):
    shape = tuple(int(s) for s in shape)
    if len(shape) != arr.ndim:
        raise InputError(f"the output shape {shape} has {len(shape)} axes, the array {arr.ndim}")
    for ax in range(arr.ndim):
        if shape[ax] < 1:
            raise InputError(f"the output shape {shape} has an empty axis")
        if ax not in axes and shape[ax] != arr.shape[ax]:
            raise InputError(f"axis {ax} is not resampled, so its size must stay {arr.shape[ax]}")
    return shape


def pyr_down(a, *, sigma: float = DEFAULT_PYR_SIGMA, truncate: float = DEFAULT_PYR_TRUNCATE, axes=None, device=None):
    """Blur with a Gaussian and keep every other sample along ``axes`` (all by default).

    Parameters
    ----------
    a : array_like
        N-D array (NumPy or CuPy), float32 after conversion.
    sigma, truncate : float
        The anti-aliasing Gaussian (in pixels of ``a``).
    axes : int or sequence of int, optional
    device : str or Backend, optional

    Returns
    -------
    array
        Each decimated axis has ``ceil(n / 2)`` samples, on the backend's device.

    Example
    -------
    >>> import numpy as np
    >>> pyr_down(np.ones((5, 4, 3), np.float32), axes=(0, 1), device="cpu").shape
    (3, 2, 3)
    """
    be = get_backend(device)
    with be.activate():
        arr = _prepare(be, a)
        return _pyr_down(be, arr, _axes(arr.ndim, axes), sigma=sigma, truncate=truncate)


def pyr_up(a, shape, *, value_scale: float = 1.0, axes=None, device=None):
    """Linear up-sampling to ``shape`` with the pyramid's alignment (coarse ``i`` at fine ``2 i``).

    ``value_scale`` multiplies the values: 2 turns a coarse level's displacement field into
    the finer level's pixels.

    Example
    -------
    >>> import numpy as np
    >>> pyr_up(np.array([[1.0, 2.0]]), (1, 4), value_scale=2, device="cpu").tolist()
    [[2.0, 3.0, 4.0, 4.0]]
    """
    be = get_backend(device)
    with be.activate():
        arr = _prepare(be, a)
        ax = _axes(arr.ndim, axes)
        shape = _check_shape(arr, shape, ax)
        return _pyr_up(be, arr, shape, ax, value_scale=value_scale)


def resize(a, shape, *, value_scale: float = 1.0, axes=None, device=None):
    """Centre-aligned linear resampling to ``shape`` (like ``cv2.resize`` with INTER_LINEAR).

    Example
    -------
    >>> import numpy as np
    >>> resize(np.array([0.0, 1.0]), (4,), device="cpu").tolist()
    [0.0, 0.25, 0.75, 1.0]
    """
    be = get_backend(device)
    with be.activate():
        arr = _prepare(be, a)
        ax = _axes(arr.ndim, axes)
        shape = _check_shape(arr, shape, ax)
        ax = tuple(x for x in ax if shape[x] != arr.shape[x]) or ax[:1]
        return _resize(be, arr, shape, ax, value_scale=value_scale)


def pyramid_levels(shape, levels: int, *, min_size: int = 1) -> int:
    """How many of ``levels`` fit when no axis may shrink below ``min_size``."""
    n = 1
    dims = list(shape)
    while n < levels:
        dims = [-(-d // 2) for d in dims]
        if min(dims) < min_size:
            break
        n += 1
    return n


def gaussian_pyramid(a, levels: int = DEFAULT_PYRAMID_LEVELS, *, sigma: float = DEFAULT_PYR_SIGMA,
                     truncate: float = DEFAULT_PYR_TRUNCATE, axes=None, min_size: int = 1, device=None):
    """A Gaussian pyramid: ``[a, down(a), down(down(a)), ...]`` (finest first).

    Parameters
    ----------
    a : array_like
    levels : int
        Number of levels including the input; fewer are returned when an axis would fall
        below ``min_size`` samples.
    sigma, truncate : float
        The blur before each decimation.
    axes : int or sequence of int, optional
    min_size : int
    device : str or Backend, optional

    Returns
    -------
    list of arrays
        float32, on the backend's device.
    """
    levels = int(levels)
    if levels < 1:
        raise InputError(f"levels must be >= 1, got {levels}")
    be = get_backend(device)
    with be.activate():
        arr = _prepare(be, a)
        ax = _axes(arr.ndim, axes)
        n = pyramid_levels([arr.shape[i] for i in ax], levels, min_size=min_size)
        out = [arr]
        for _ in range(n - 1):
            out.append(_pyr_down(be, out[-1], ax, sigma=sigma, truncate=truncate))
        return out
