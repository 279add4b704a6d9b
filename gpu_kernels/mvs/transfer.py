"""Device-to-host copies of large result arrays (the growing's depth, offset, confidence, normal
and iteration maps: 147 MB for 16 views of 640 x 480).

A plain ``get`` copies to pageable memory through the driver's own staging, one thread: 40 ms for
those 147 MB on an H100 host (3.7 GB/s). Here the arrays come through two pinned staging halves
of :data:`CHUNK_BYTES` (DMA at the link's rate, 2.7 ms for all of it) and host threads copy each
chunk out into the new arrays while the next chunk comes (10 ms). The staging halves are kept per
device (2 x 16 MiB of pinned memory), not the results: the arrays returned are ordinary NumPy
arrays.

Results that fit under :data:`PINNED_MAX` come down straight into page-locked arrays instead
(:func:`pinned_arrays`, from CuPy's pinned pool, reused once the caller drops them): one DMA per
array at the link's rate, no staging and no host copy; such arrays go back up the same way
(:func:`to_device`).

Example
-------
>>> from gpu_kernels.mvs.transfer import CHUNK_BYTES
>>> CHUNK_BYTES >= 1 << 20
True
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from gpu_kernels.backend import current_device
from gpu_kernels.env import flag
from gpu_kernels.pinned import pinned_block

__all__ = ["CHUNK_BYTES", "PINNED_MAX", "to_host", "to_device", "host_arrays", "pinned_arrays", "is_pinned",
           "direct_to_host", "use_pinned", "wait_for_queued"]

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
    dev = current_device().device_id  # the calling thread's current device (CuPy's, per thread)
    with _lock:
        st = _stage.get(dev)
        if st is None:
            mem = [cp.cuda.alloc_pinned_memory(CHUNK_BYTES) for _ in range(2)]
            views = [np.frombuffer(m, np.uint8, CHUNK_BYTES) for m in mem]
            st = _stage[dev] = (mem, views, threading.Lock())
        return st


def wait_for_queued(xp, *events) -> None:
    """Wait on the host for the work this thread queued on its current stream and on the legacy
    null stream of the current device, and for ``events`` (None: skipped): work queued elsewhere,
    e.g. another thread's view textures (:attr:`.optimize.ViewTextures.ready`).

    Never ``cudaDeviceSynchronize``: while another thread captures a CUDA graph on the same device
    (another run's grower, the flow's plans, imseg's graphs), a device-wide synchronisation fails
    with ``cudaErrorStreamCaptureUnsupported`` and invalidates that capture, whatever its capture
    mode. A stream's or an event's synchronisation does not touch other streams (every gpulab
    capture is on a non-blocking stream, which the legacy stream does not wait for)."""
    cur = xp.cuda.get_current_stream()
    cur.synchronize()
    if cur.ptr != 0:  # not the legacy stream itself: it too (synchronous copies, other code's kernels)
        xp.cuda.Stream.null.synchronize()
    for ev in events:
        if ev is not None:
            ev.synchronize()


_zero: np.ndarray | None = None

#: results come down straight into page-locked host arrays while the page-locked result blocks
#: alive (every tool's, :mod:`gpu_kernels.pinned`) stay under this many bytes together
#: (``GPULAB_MVS_PINNED_MAX`` overrides it; 0: never)
PINNED_MAX = 1 << 30


def _pinned_max() -> int:
    env = os.environ.get("GPULAB_MVS_PINNED_MAX", "").strip()
    try:
        return int(float(env)) if env else PINNED_MAX
    except ValueError:   # a setting is not worth a failed reconstruction: say so, use the default
        import warnings

        warnings.warn(f"GPULAB_MVS_PINNED_MAX={env!r} is not a number of bytes; using {PINNED_MAX}", stacklevel=2)
        return PINNED_MAX


def use_pinned() -> bool:
    """Results come down straight into page-locked host arrays where they fit
    (``GPULAB_MVS_PINNED=0``: pinned staging and threaded copies into ordinary arrays, as before)."""
    return flag("GPULAB_MVS_PINNED", True)


def pinned_arrays(specs) -> list | None:
    """``[np.empty(shape, dtype) ...]`` as views of one page-locked block from CuPy's pinned
    memory pool (:func:`gpu_kernels.pinned.pinned_block`: its size rounded up to a size class, so
    that results of nearby sizes reuse freed blocks; the block goes back to the pool when the last
    array of it is gone), so that a download into them is one DMA at the link's rate, no staging,
    no host copy; None where CuPy is missing, the page-locked blocks alive (every tool's) would
    take more than :data:`PINNED_MAX` bytes together with these, or page-locked memory ran out."""
    specs = [(tuple(int(x) for x in np.atleast_1d(sh)) if np.ndim(sh) else (int(sh),), np.dtype(dt))
             for sh, dt in specs]
    nbytes = [int(np.prod(sh, dtype=np.int64)) * dt.itemsize for sh, dt in specs]
    ofs = np.concatenate([[0], np.cumsum([(b + 255) // 256 * 256 for b in nbytes])]).astype(np.int64)
    cap = _pinned_max()
    if int(ofs[-1]) > cap:
        return None
    try:
        import cupy as cp
    except ImportError:
        return None
    buf = pinned_block(cp, max(int(ofs[-1]), 1), cap=cap)
    if buf is None:  # past the cap, or page-locked memory ran out: ordinary arrays (the staging halves)
        return None
    outs = [buf[o:o + b].view(dt).reshape(sh) for (sh, dt), o, b in zip(specs, ofs[:-1], nbytes, strict=True)]
    return outs


def is_pinned(a: np.ndarray) -> bool:
    """Whether the host array ``a`` lies in page-locked memory (CUDA's own answer)."""
    try:
        import cupy as cp

        attr = cp.cuda.runtime.pointerGetAttributes(a.ctypes.data)
        return int(attr.type) == 1  # cudaMemoryTypeHost
    except Exception:  # noqa: BLE001 - no CUDA, or memory CUDA does not know
        return False


def host_arrays(specs, pinned: bool = False) -> tuple[list, list]:
    """``[np.empty(shape, dtype) for shape, dtype in specs]``, their pages touched by the copy
    threads (the futures returned): a download into them later is a plain copy, without the
    page faults of fresh memory (which cost more than the copy). Start it while the device works
    and the host waits (the growing's loop). ``pinned``: page-locked arrays (:func:`pinned_arrays`)
    where they fit, which need no touching (no futures)."""
    global _zero
    if pinned:
        outs = pinned_arrays(specs)
        if outs is not None:
            return outs, []
    outs = [np.empty(sh, dt) for sh, dt in specs]
    if _threads() < 2:
        return outs, []
    if _zero is None:
        _zero = np.zeros(_PIECE, np.uint8)
    pool = _executor()
    jobs = []
    for o in outs:
        b = o.reshape(-1).view(np.uint8)
        jobs += [pool.submit(np.copyto, b[c:c + _PIECE], _zero[:min(_PIECE, b.nbytes - c)])
                 for c in range(0, b.nbytes, _PIECE)]
    return outs, jobs


def to_host(arrays, stream, out=None, min_bytes: int | None = None, if_free: bool = False) -> list:
    """``[a.get() for a in arrays]`` for C-contiguous CuPy arrays written on ``stream`` (a
    ``cupy.cuda.Stream``): pinned staging and threaded copies when they take ``min_bytes``
    (default 32 MiB) or more together. ``out``: host arrays of the same shapes and dtypes to fill
    instead of new ones. ``if_free``: where another transfer holds the staging halves (the maps'
    download in the background), two halves of this transfer's own from CuPy's pinned memory
    pool (given back to it afterwards) instead of waiting for them."""
    import cupy as cp

    arrays = list(arrays)
    if out is not None and [(o.shape, o.dtype) for o in out] != [(a.shape, a.dtype) for a in arrays]:
        raise ValueError("to_host: out must match the arrays' shapes and dtypes")
    busy, own = None, None
    if if_free:
        _mem, _views, busy = _halves(cp)
        if not busy.acquire(blocking=False):
            busy = None
            size = max(1, min(CHUNK_BYTES, sum(a.nbytes for a in arrays)))
            mem = [cp.cuda.alloc_pinned_memory(size) for _ in range(2)]
            own = [np.frombuffer(m, np.uint8, size) for m in mem]
    try:
        return _to_host(cp, arrays, stream, out, min_bytes, busy is not None or own is not None, own)
    finally:
        if busy is not None:
            busy.release()


def direct_to_host(arrays, stream, out) -> None:
    """Queue the copies of the device ``arrays`` into the page-locked host arrays ``out`` on
    ``stream`` (one DMA each, nothing on the host); the caller waits for the stream."""
    import cupy as cp

    rt = cp.cuda.runtime
    for a, o in zip(arrays, out, strict=True):
        if (o.shape, o.dtype) != (a.shape, a.dtype) or not a.flags.c_contiguous or not o.flags.c_contiguous:
            raise ValueError("direct_to_host: out must match C-contiguous arrays' shapes and dtypes")
        if a.nbytes:
            rt.memcpyAsync(o.ctypes.data, a.data.ptr, a.nbytes, rt.memcpyDeviceToHost, stream.ptr)


def _to_host(cp, arrays, stream, out, min_bytes, held, own=None) -> list:
    if out is not None and out and all(is_pinned(o) for o in out):  # one DMA each, no staging
        direct_to_host(arrays, stream, out)
        stream.synchronize()
        return list(out)
    if not flag("GPULAB_MVS_STAGED_COPY", True) or \
            sum(a.nbytes for a in arrays) < (_SMALL if min_bytes is None else min_bytes) or _threads() < 2:
        if out is None:
            stream.synchronize()
            return [a.get() for a in arrays]
        for a, o in zip(arrays, out, strict=True):
            a.get(stream=stream, out=o)
        stream.synchronize()
        return list(out)
    outs = list(out) if out is not None else [np.empty(a.shape, a.dtype) for a in arrays]
    size = CHUNK_BYTES if own is None else len(own[0])
    chunks = []  # (device pointer, bytes, host destination as uint8)
    for a, o in zip(arrays, outs, strict=True):
        if not a.flags.c_contiguous:
            raise ValueError("to_host needs C-contiguous arrays")
        dst = o.reshape(-1).view(np.uint8)
        for c in range(0, a.nbytes, size):
            n = min(size, a.nbytes - c)
            chunks.append((a.data.ptr + c, n, dst[c:c + n]))
    if not chunks:
        return outs
    _mem, views, busy = _halves(cp)
    if own is not None:
        views = own
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

    with contextlib.nullcontext() if held else busy:  # one transfer at a time uses the device's halves
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


def to_device(arrays, xp, min_bytes: int | None = None) -> list:
    """``[xp.asarray(a) for a in arrays]`` for host arrays (``None`` stays ``None``): on CuPy,
    when they take ``min_bytes`` (default 32 MiB) or more together, they go up through the same
    two pinned halves, host threads copying each chunk in while the previous one is on its way,
    on the current stream (later work on it sees them)."""
    arrays = [None if a is None else np.ascontiguousarray(a) for a in arrays]
    total = sum(a.nbytes for a in arrays if a is not None)
    small = _SMALL if min_bytes is None else min_bytes
    if getattr(xp, "__name__", None) != "cupy" or total < small or _threads() < 2 or \
            not flag("GPULAB_MVS_STAGED_COPY", True):
        return [None if a is None else xp.asarray(a) for a in arrays]
    cp = xp
    outs = [None if a is None else cp.empty(a.shape, a.dtype) for a in arrays]
    chunks = []  # (host source as uint8, device pointer, bytes)
    direct = []  # page-locked sources (maps that came down into pinned arrays): one DMA each
    for a, d in zip(arrays, outs, strict=True):
        if a is None or not a.nbytes:
            continue
        if is_pinned(a):
            direct.append((a, d))
            continue
        src = a.reshape(-1).view(np.uint8)
        for c in range(0, a.nbytes, CHUNK_BYTES):
            n = min(CHUNK_BYTES, a.nbytes - c)
            chunks.append((src[c:c + n], d.data.ptr + c, n))
    # consecutive chunks share a half (many small arrays, e.g. views' images: one load, copied in
    # parallel, instead of one round per array)
    loads, cur, fill = [], [], 0
    for ch in chunks:
        if cur and fill + ch[2] > CHUNK_BYTES:
            loads.append(cur)
            cur, fill = [], 0
        cur.append((*ch, fill))
        fill += (ch[2] + 255) // 256 * 256
    if cur:
        loads.append(cur)
    rt = cp.cuda.runtime
    stream = cp.cuda.get_current_stream()
    for a, d in direct:
        rt.memcpyAsync(d.data.ptr, a.ctypes.data, a.nbytes, rt.memcpyHostToDevice, stream.ptr)
    if direct and not loads:
        stream.synchronize()  # the sources may go (back to the pinned pool) once this returns
        return outs
    _mem, views, busy = _halves(cp)
    pool = _executor()
    events = [cp.cuda.Event(block=False, disable_timing=True) for _ in range(2)]
    used = [False, False]
    with busy:
        for i, load in enumerate(loads):
            h = i & 1
            if used[h]:
                events[h].synchronize()  # the half's previous load has left
            dst = views[h]
            jobs = [pool.submit(np.copyto, dst[o + c:o + min(c + _PIECE, n)], src[c:c + _PIECE])
                    for src, _ptr, n, o in load for c in range(0, n, _PIECE)]
            for j in jobs:
                j.result()
            for _src, ptr, n, o in load:
                rt.memcpyAsync(ptr, dst.ctypes.data + o, n, rt.memcpyHostToDevice, stream.ptr)
            events[h].record(stream)
            used[h] = True
        for h in (0, 1):
            if used[h]:
                events[h].synchronize()  # the halves are free for the next transfer
    return outs
