"""Device-to-host copies of large result arrays (the growing's depth, offset, confidence, normal
and iteration maps: 147 MB for 16 views of 640 x 480).

A plain ``get`` copies to pageable memory through the driver's own staging, one thread: 40 ms for
those 147 MB on an H100 host (3.7 GB/s). Here the arrays come through two pinned staging halves
of :data:`CHUNK_BYTES` (DMA at the link's rate, 2.7 ms for all of it) and host threads copy each
chunk out into the new arrays while the next chunk comes (10 ms). The staging halves are kept per
device (2 x 16 MiB of pinned memory), not the results: the arrays returned are ordinary NumPy
arrays.

Example
-------
>>> from gpu_kernels.mvs.transfer import CHUNK_BYTES
>>> CHUNK_BYTES >= 1 << 20
True
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["CHUNK_BYTES", "to_host", "to_device"]

#: bytes per staging half (two per device)
CHUNK_BYTES = 16 << 20
#: bytes one copying thread takes at a time
_PIECE = 2 << 20
#: below this a plain ``get`` is faster (one 640 x 480 view's maps, 9 MB: 0.9 ms against 1.7)
_SMALL = 32 << 20

_lock = threading.Lock()
_stage: dict = {}
_pool: ThreadPoolExecutor | None = None


def _threads() -> int:
    env = os.environ.get("GPULAB_MVS_COPY_THREADS", "").strip()
    return max(1, int(env)) if env else max(1, min(8, (os.cpu_count() or 2) // 2))


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_threads(), thread_name_prefix="gpulab-d2h")
        return _pool


def _halves(cp):
    dev = cp.cuda.Device().id
    with _lock:
        st = _stage.get(dev)
        if st is None:
            mem = [cp.cuda.alloc_pinned_memory(CHUNK_BYTES) for _ in range(2)]
            views = [np.frombuffer(m, np.uint8, CHUNK_BYTES) for m in mem]
            st = _stage[dev] = (mem, views, threading.Lock())
        return st


def to_host(arrays, stream) -> list:
    """``[a.get() for a in arrays]`` for C-contiguous CuPy arrays written on ``stream`` (a
    ``cupy.cuda.Stream``): pinned staging and threaded copies for the large ones."""
    import cupy as cp

    arrays = list(arrays)
    if os.environ.get("GPULAB_MVS_STAGED_COPY", "1").strip() == "0" or \
            sum(a.nbytes for a in arrays) < _SMALL or _threads() < 2:
        stream.synchronize()
        return [a.get() for a in arrays]
    outs = [np.empty(a.shape, a.dtype) for a in arrays]
    chunks = []  # (device pointer, bytes, host destination as uint8)
    for a, o in zip(arrays, outs, strict=True):
        if not a.flags.c_contiguous:
            raise ValueError("to_host needs C-contiguous arrays")
        dst = o.reshape(-1).view(np.uint8)
        for c in range(0, a.nbytes, CHUNK_BYTES):
            n = min(CHUNK_BYTES, a.nbytes - c)
            chunks.append((a.data.ptr + c, n, dst[c:c + n]))
    if not chunks:
        return outs
    _mem, views, busy = _halves(cp)
    pool = _executor()
    rt = cp.cuda.runtime
    events = [cp.cuda.Event(block=False, disable_timing=True) for _ in range(2)]
    pending: list = [[], []]  # the copy-outs still reading each half

    def dma(i):
        ptr, n, _ = chunks[i]
        h = i & 1
        for f in pending[h]:
            f.result()
        pending[h] = []
        rt.memcpyAsync(views[h].ctypes.data, ptr, n, rt.memcpyDeviceToHost, stream.ptr)
        events[h].record(stream)

    with busy:  # one transfer at a time uses the device's halves
        dma(0)
        for i in range(len(chunks)):
            if i + 1 < len(chunks):
                dma(i + 1)
            h = i & 1
            events[h].synchronize()
            _, n, dst = chunks[i]
            src = views[h]
            pending[h] = [pool.submit(np.copyto, dst[c:c + _PIECE], src[c:min(c + _PIECE, n)])
                          for c in range(0, n, _PIECE)]
        for h in (0, 1):
            for f in pending[h]:
                f.result()
    return outs


def to_device(arrays, xp) -> list:
    """``[xp.asarray(a) for a in arrays]`` for host arrays (``None`` stays ``None``): on CuPy,
    the large ones go up through the same two pinned halves, host threads copying each chunk in
    while the previous one is on its way, on the current stream (later work on it sees them)."""
    arrays = [None if a is None else np.ascontiguousarray(a) for a in arrays]
    total = sum(a.nbytes for a in arrays if a is not None)
    if getattr(xp, "__name__", None) != "cupy" or total < _SMALL or _threads() < 2 or \
            os.environ.get("GPULAB_MVS_STAGED_COPY", "1").strip() == "0":
        return [None if a is None else xp.asarray(a) for a in arrays]
    cp = xp
    outs = [None if a is None else cp.empty(a.shape, a.dtype) for a in arrays]
    chunks = []  # (host source as uint8, device pointer, bytes)
    for a, d in zip(arrays, outs, strict=True):
        if a is None or not a.nbytes:
            continue
        src = a.reshape(-1).view(np.uint8)
        for c in range(0, a.nbytes, CHUNK_BYTES):
            n = min(CHUNK_BYTES, a.nbytes - c)
            chunks.append((src[c:c + n], d.data.ptr + c, n))
    _mem, views, busy = _halves(cp)
    pool = _executor()
    rt = cp.cuda.runtime
    stream = cp.cuda.get_current_stream()
    events = [cp.cuda.Event(block=False, disable_timing=True) for _ in range(2)]
    used = [False, False]
    with busy:
        for i, (src, ptr, n) in enumerate(chunks):
            h = i & 1
            if used[h]:
                events[h].synchronize()  # the half's previous chunk has left
            dst = views[h]
            jobs = [pool.submit(np.copyto, dst[c:min(c + _PIECE, n)], src[c:c + _PIECE]) for c in range(0, n, _PIECE)]
            for j in jobs:
                j.result()
            rt.memcpyAsync(ptr, dst.ctypes.data, n, rt.memcpyHostToDevice, stream.ptr)
            events[h].record(stream)
            used[h] = True
        for h in (0, 1):
            if used[h]:
                events[h].synchronize()  # the halves are free for the next transfer
    return outs
