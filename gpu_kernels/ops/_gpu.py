"""Small helpers for the GPU paths of gpu_kernels.ops and the tools built on it.

Kernel arguments go to CuPy as NumPy scalars of the C type (``i32``/``f32``/``i64``): a bare
Python int or float would be passed with another width. ``kernel`` and ``module`` are
:func:`gpu_kernels.backend.kernel` and :func:`gpu_kernels.backend.module` (compiled once per
device, with the test suite's emulator hook), re-exported for the ops and flow modules.
"""

from __future__ import annotations

import threading

import numpy as np

from gpu_kernels.backend import Backend, cache_key, kernel, module  # noqa: F401 - the one kernel helper, for ops and flow

__all__ = ["module", "kernel", "i32", "i64", "f32", "grid1d", "cached_device_array", "THREADS"]

THREADS = 256
_MAX_BLOCKS = 65535 * 16


def i32(x) -> np.int32:
    return np.int32(x)


def i64(x) -> np.int64:
    return np.int64(x)


def f32(x) -> np.float32:
    return np.float32(x)


def grid1d(n: int, threads: int = THREADS) -> tuple[int]:
    """Blocks for a grid-stride loop over ``n`` items."""
    return (int(min(max(1, -(-int(n) // threads)), _MAX_BLOCKS)),)


def axis_output(be: Backend, a, axis: int, n_out: int):
    """``(out, outer, inner)`` for a kernel that maps ``a`` along ``axis`` to ``n_out`` samples:
    a new float32 array of ``a``'s shape with ``n_out`` on that axis, and the sizes of the axes
    before and after it."""
    shape = list(a.shape)
    shape[axis] = n_out
    out = be.xp.empty(tuple(shape), dtype=be.xp.float32)
    outer = int(np.prod(a.shape[:axis], dtype=np.int64))
    inner = int(np.prod(a.shape[axis + 1:], dtype=np.int64))
    return out, outer, inner


_arrays: dict[tuple, object] = {}
_arrays_lock = threading.Lock()


def cached_device_array(be: Backend, values: np.ndarray):
    """A device copy of a small constant array (filter taps), made once per device.

    Cached so that a pipeline run again (or captured into a CUDA graph) makes no host-to-device
    copies.
    """
    values = np.ascontiguousarray(values)
    key = (*cache_key(be), values.dtype.str, values.shape, values.tobytes())
    arr = _arrays.get(key)
    if arr is None:
        with _arrays_lock:
            arr = _arrays.get(key)
            if arr is None:
                arr = be.xp.asarray(values) if be.is_gpu else values
                _arrays[key] = arr
    return arr
