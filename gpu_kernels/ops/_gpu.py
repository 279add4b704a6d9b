"""Small helpers for the GPU paths of gpu_kernels.ops and the tools built on it.

Kernel arguments go to CuPy as NumPy scalars of the C type (``i32``/``f32``/``i64``): a bare
Python int or float would be passed with another width. ``module`` loads a ``.cu`` source
through :func:`gpu_kernels.backend.load_module` (cached per device), or through the backend's
own ``load_module`` where it has one (the tests' CPU emulation of the kernels).
"""

from __future__ import annotations

import threading

import numpy as np

from gpu_kernels.backend import Backend, load_module

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


def module(be: Backend, name: str, defines: dict | None = None):
    loader = getattr(be, "load_module", None)
    if callable(loader):
        return loader(name, defines=defines)
    return load_module(name, defines=defines, device=be)


_kernels: dict[tuple, object] = {}


def kernel(be: Backend, source: str, name: str, defines: dict | None = None):
    """The kernel ``name`` of ``gpu_kernels/cuda/<source>``, compiled for ``be`` (cached)."""
    key = (type(be).__name__, be.device_id, source, name, tuple(sorted((defines or {}).items())))
    fn = _kernels.get(key)
    if fn is None:
        fn = module(be, source, defines).get_function(name)
        _kernels[key] = fn
    return fn


_arrays: dict[tuple, object] = {}
_arrays_lock = threading.Lock()


def cached_device_array(be: Backend, values: np.ndarray):
    """A device copy of a small constant array (filter taps), made once per device.

    Cached so that a pipeline run again (or captured into a CUDA graph) makes no host-to-device
    copies.
    """
    values = np.ascontiguousarray(values)
    key = (type(be).__name__, be.device_id, values.dtype.str, values.shape, values.tobytes())
    arr = _arrays.get(key)
    if arr is None:
        with _arrays_lock:
            arr = _arrays.get(key)
            if arr is None:
                arr = be.xp.asarray(values) if be.is_gpu else values
                _arrays[key] = arr
    return arr
