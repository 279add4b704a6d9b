"""Separable filtering of N-D arrays on the GPU (CuPy kernels) or the CPU (SciPy).

One kernel, ``ops_correlate_axis`` in ``cuda/ops_image.cu``, correlates any axis of a
C-contiguous float32 array with a 1-D set of taps, optionally keeping every ``step``-th
output (the pyramid's decimation). The CPU path is ``scipy.ndimage.correlate1d`` with the
same boundary mode; the two agree to float32 rounding.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.ops import gaussian_filter, gaussian_kernel1d
>>> [round(float(x), 4) for x in gaussian_kernel1d(1.0, truncate=2.0)]
[0.0545, 0.2442, 0.4026, 0.2442, 0.0545]
>>> img = np.zeros((5, 5), np.float32); img[2, 2] = 1
>>> out = gaussian_filter(img, 1.0, device="cpu")
>>> round(float(out.sum()), 4), out.dtype
(1.0, dtype('float32'))
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.errors import InputError

from . import _gpu

__all__ = [
    "DEFAULT_TRUNCATE",
    "MODES",
    "gaussian_kernel1d",
    "correlate_axis",
    "gaussian_filter",
    "uniform_filter",
]

#: Gaussian taps reach ``truncate * sigma`` on each side, as in scipy.ndimage.
DEFAULT_TRUNCATE = 4.0
#: Boundary modes: ``reflect`` (d c b a | a b c d, scipy's default) or ``nearest`` (edge).
MODES = ("reflect", "nearest")


def gaussian_kernel1d(sigma: float, *, truncate: float = DEFAULT_TRUNCATE, radius: int | None = None) -> np.ndarray:
    """Normalised 1-D Gaussian taps (float32), ``2 * radius + 1`` of them.

    ``radius`` defaults to ``int(truncate * sigma + 0.5)`` as in ``scipy.ndimage``; sigma 0
    gives the identity ``[1.0]``.
    """
    sigma = float(sigma)
    if not np.isfinite(sigma) or sigma < 0:
        raise InputError(f"sigma must be a finite number >= 0, got {sigma}")
    if sigma == 0:
        return np.ones(1, np.float32)
    r = int(truncate * sigma + 0.5) if radius is None else int(radius)
    x = np.arange(-r, r + 1, dtype=np.float64)
    phi = np.exp(-0.5 * (x / sigma) ** 2)
    return (phi / phi.sum()).astype(np.float32)


def _mode_id(mode: str) -> int:
    try:
        return MODES.index(mode)
    except ValueError:
        raise InputError(f"unknown boundary mode {mode!r}: use one of {', '.join(MODES)}") from None


def _prepare(be: Backend, a):
    """``a`` as a C-contiguous float32 array on ``be``."""
    xp = be.xp
    if be.is_gpu:
        return xp.ascontiguousarray(xp.asarray(a, dtype=xp.float32))
    return np.ascontiguousarray(be.asnumpy(a), dtype=np.float32)


def _correlate_axis(be: Backend, a, taps: np.ndarray, axis: int, *, step: int = 1, mode: str = "reflect"):
    """Correlate float32 C-contiguous ``a`` along ``axis`` (no checks; ``be`` active)."""
    taps = np.ascontiguousarray(taps, dtype=np.float32)
    axis = axis % a.ndim
    n = a.shape[axis]
    n_out = -(-n // step)
    if not be.is_gpu:
        from scipy import ndimage

        if len(taps) == 1 and taps[0] == 1:
            out = a.copy()
        else:
            out = ndimage.correlate1d(a, taps, axis=axis, mode=mode, output=np.float32)
        if step > 1:
            out = np.ascontiguousarray(out[(slice(None),) * axis + (slice(None, None, step),)])
        return out
    out, outer, inner = _gpu.axis_output(be, a, axis, n_out)
    if out.size == 0:
        return out
    fn = _gpu.kernel(be, "ops_image.cu", "ops_correlate_axis")
    d_taps = _gpu.cached_device_array(be, taps)
    fn(_gpu.grid1d(out.size), (_gpu.THREADS,),
       (a, out, d_taps, _gpu.i32(len(taps) // 2), _gpu.i64(outer), _gpu.i32(n), _gpu.i32(n_out),
        _gpu.i64(inner), _gpu.i32(step), _gpu.i32(_mode_id(mode))))
    return out


def _axes(ndim: int, axes) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, int):
        axes = (axes,)
    out = []
    for ax in axes:
        if not -ndim <= int(ax) < ndim:
            raise InputError(f"axis {ax} is out of range for a {ndim}-D array")
        out.append(int(ax) % ndim)
    return tuple(out)


def correlate_axis(a, weights, *, axis: int = -1, step: int = 1, mode: str = "reflect", device=None):
    """Correlate ``a`` with 1-D ``weights`` along ``axis``, keeping every ``step``-th output.

    Parameters
    ----------
    a : array_like
        N-D array (NumPy or CuPy); computed in float32.
    weights : array_like
        An odd number of taps, centred.
    axis : int
    step : int
        1 filters; 2 filters and decimates (output length ``ceil(n / 2)``, samples 0, 2, ...).
    mode : {"reflect", "nearest"}
    device : str or Backend, optional

    Returns
    -------
    array
        float32, on the backend's device (NumPy on the CPU, CuPy on a GPU).

    Example
    -------
    >>> import numpy as np
    >>> correlate_axis(np.arange(5.0), [0.0, 0.0, 1.0], device="cpu").tolist()  # out[i] = a[i + 1]
    [1.0, 2.0, 3.0, 4.0, 4.0]
    """
    be = get_backend(device)
    w = np.asarray(weights, dtype=np.float32).ravel()
    if w.size % 2 != 1:
        raise InputError(f"weights must have an odd number of taps, got {w.size}")
    if int(step) < 1:
        raise InputError(f"step must be >= 1, got {step}")
    _mode_id(mode)
    with be.activate():
        arr = _prepare(be, a)
        (ax,) = _axes(arr.ndim, axis)
        return _correlate_axis(be, arr, w, ax, step=int(step), mode=mode)


def _gaussian(be: Backend, a, sigmas: Sequence[float], axes: Sequence[int], *, truncate: float = DEFAULT_TRUNCATE,
              mode: str = "reflect"):
    out = a
    for ax, s in zip(axes, sigmas, strict=False):
        if s > 0:
            out = _correlate_axis(be, out, gaussian_kernel1d(s, truncate=truncate), ax, mode=mode)
    if out is a:
        out = a.copy()
    return out


def _sigmas(sigma, n: int) -> list[float]:
    if np.ndim(sigma) == 0:
        s = [float(sigma)] * n
    else:
        s = [float(x) for x in sigma]
        if len(s) != n:
            raise InputError(f"{len(s)} sigmas given for {n} axes")
    for x in s:
        if not np.isfinite(x) or x < 0:
            raise InputError(f"sigma must be a finite number >= 0, got {x}")
    return s


def gaussian_filter(a, sigma, *, truncate: float = DEFAULT_TRUNCATE, mode: str = "reflect", axes=None,
                    device=None, progress=None):
    """Separable Gaussian filter of an N-D array, like ``scipy.ndimage.gaussian_filter``.

    Parameters
    ----------
    a : array_like
        N-D array (NumPy or CuPy), computed in float32.
    sigma : float or sequence of float
        Standard deviation(s) in pixels, one per filtered axis; 0 leaves an axis alone.
    truncate : float
        Taps reach ``truncate * sigma`` on each side.
    mode : {"reflect", "nearest"}
    axes : int or sequence of int, optional
        Axes to filter (all by default), e.g. ``(0, 1)`` for the two image axes of an
        ``(H, W, C)`` array.
    device : str or Backend, optional
    progress : callable or Progress, optional

    Returns
    -------
    array
        float32, the input's shape, on the backend's device.

    Example
    -------
    >>> import numpy as np
    >>> from scipy import ndimage
    >>> x = np.random.default_rng(0).random((6, 7, 3)).astype(np.float32)
    >>> ours = gaussian_filter(x, 1.5, axes=(0, 1), device="cpu")
    >>> ref = ndimage.gaussian_filter(x, (1.5, 1.5, 0))
    >>> bool(np.allclose(ours, ref, atol=1e-6))
    True
    """
    from gpu_kernels.jobs import as_progress

    progress = as_progress(progress)
    be = get_backend(device)
    _mode_id(mode)
    with be.activate():
        arr = _prepare(be, a)
        ax = _axes(arr.ndim, axes)
        sig = _sigmas(sigma, len(ax))
        progress.update(0.0, "Gaussian filter")
        out = _gaussian(be, arr, sig, ax, truncate=truncate, mode=mode)
        progress.update(1.0, "Gaussian filter")
        return out


def uniform_filter(a, size: int, *, mode: str = "reflect", axes=None, device=None):
    """Box (mean) filter of odd ``size`` along the given axes, like ``scipy.ndimage.uniform_filter``.

    Example
    -------
    >>> import numpy as np
    >>> uniform_filter(np.array([0.0, 3.0, 0.0]), 3, mode="nearest", device="cpu").tolist()
    [1.0, 1.0, 1.0]
    """
    size = int(size)
    if size < 1 or size % 2 != 1:
        raise InputError(f"size must be an odd number >= 1, got {size}")
    be = get_backend(device)
    _mode_id(mode)
    taps = np.full(size, 1.0 / size, np.float32)
    with be.activate():
        arr = _prepare(be, a)
        out = arr
        for ax in _axes(arr.ndim, axes):
            out = _correlate_axis(be, out, taps, ax, mode=mode)
        return out.copy() if out is arr else out
