"""Helpers shared by the image segmentation stages: input checks, kernel access, the count of
host synchronisations, and per-stage timing that does not stall the GPU."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np

from gpu_kernels import pinned as _pinned
from gpu_kernels.backend import array_module, kernel  # noqa: F401 - the one kernel helper (imported by the imseg modules)
from gpu_kernels.errors import InputError, TooLargeError

__all__ = [
    "ImsegInputError",
    "NULL",
    "as_image",
    "kernel",
    "is_cupy",
    "device_stream",
    "grid",
    "SyncCounter",
    "StageTimer",
    "PIXEL_SUFFIX",
    "download",
    "EarlyDownload",
    "upload",
    "check_fits",
]

#: a null device pointer as a kernel argument
NULL = np.uint64(0)

#: pixel dtype -> kernel name suffix
PIXEL_SUFFIX = {np.dtype(np.uint8): "u8", np.dtype(np.uint16): "u16", np.dtype(np.float32): "f32"}

MAX_PIXELS = 2**31 - 1


class ImsegInputError(InputError):
    """The image or a segmentation parameter is wrong; the message says what to do."""


def as_image(image) -> tuple:
    """Check an image and bring it to a dtype the kernels read.

    Returns ``(array, H, W, C)`` with ``array`` of dtype uint8, uint16 or float32, shape
    ``(H, W)`` (C = 1) or ``(H, W, C)`` with C = 3 or 4 (alpha is ignored later). A
    ``(H, W, 1)`` image becomes ``(H, W)``; bool becomes uint8 0/255; float64 becomes
    float32 (values must lie in [0, 1]).
    """
    a = image
    if type(a) is np.ndarray and a.dtype == np.uint8 and a.ndim == 3 and a.shape[2] in (3, 4):
        h, w, c = a.shape   # the common case (an 8-bit colour image), as below
        if 0 < h * w <= MAX_PIXELS:
            return a, h, w, c
    if not hasattr(a, "shape") or not hasattr(a, "dtype") or isinstance(a, np.generic):
        a = np.asarray(a)
    shape = tuple(int(s) for s in a.shape)
    if len(shape) == 3 and shape[2] == 1:
        a = a[..., 0]
        shape = shape[:2]
    if len(shape) not in (2, 3) or (len(shape) == 3 and shape[2] not in (3, 4)):
        raise ImsegInputError(
            f"expected a grey (H, W), RGB (H, W, 3) or RGBA (H, W, 4) image, got an array of shape {shape}")
    h, w = shape[:2]
    if h == 0 or w == 0:
        raise ImsegInputError(f"the image is empty ({h} x {w} pixels): nothing to segment")
    if h * w > MAX_PIXELS:
        raise ImsegInputError(f"the image has {h * w:,} pixels; at most {MAX_PIXELS:,} are supported: downscale it")
    c = 1 if len(shape) == 2 else shape[2]
    dt = np.dtype(a.dtype)
    mod = array_module(a)
    if dt == np.bool_:
        a = a.astype(np.uint8) * np.uint8(255)
    elif dt in (np.dtype(np.uint8), np.dtype(np.uint16)):
        pass
    elif dt.kind == "f":
        a = a.astype(np.float32, copy=False)
        lo, hi = float(mod.min(a)), float(mod.max(a))
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ImsegInputError("the image holds NaN or infinite values: replace them before segmenting")
        if lo < 0.0 or hi > 1.0:
            raise ImsegInputError(
                f"a floating-point image must hold values in [0, 1], this one spans [{lo:.4g}, {hi:.4g}]: "
                "rescale it (or pass 8- or 16-bit integers)")
    else:
        raise ImsegInputError(
            f"unsupported pixel type {dt}: pass uint8, uint16, bool or float values in [0, 1]")
    return a, h, w, c


def is_cupy(be) -> bool:
    """True when ``be`` drives a real CUDA device through CuPy (not the test emulator)."""
    return be.is_gpu and getattr(be.xp, "__name__", "") == "cupy"


def grid(n: int, threads: int) -> tuple[int]:
    return (max(1, -(-int(n) // int(threads))),)


class SyncCounter:
    """Counts the points where the host waits for the device (each read-back of a value).

    ``read(be, array)`` returns the array on the host (inside ``cupyx.allow_synchronize(True)``
    where CuPy has it, so a caller that forbids synchronisation around a pipeline catches
    any other). The GPU test ``test_pipeline_runs_ahead_of_the_device`` checks that the
    host reaches the first read-back while a long kernel queued before the pipeline still
    runs, i.e. nothing before it waited for the device.
    """

    def __init__(self):
        self.count = 0
        self.reasons: list[str] = []

    def read(self, be, a, reason: str = ""):
        self.count += 1
        self.reasons.append(reason)
        if is_cupy(be):
            with allow_sync():
                return a.get()
        return np.asarray(a)

    def read_many(self, be, arrays, reason: str = "") -> np.ndarray:
        """One read-back of several small device arrays (one synchronisation): each copied
        asynchronously into one page-locked block, no kernel to gather them first. Returns
        their values one after the other (int64)."""
        self.count += 1
        self.reasons.append(reason)
        if not is_cupy(be):
            return np.concatenate([np.asarray(a).reshape(-1).astype(np.int64) for a in arrays])
        xp = be.xp
        rt = xp.cuda.runtime
        stream = xp.cuda.get_current_stream()
        metas, off = [], 0
        for a in arrays:
            a = xp.ascontiguousarray(a)
            metas.append((a, off))
            off += -(-int(a.nbytes) // 8) * 8
        mem = xp.cuda.alloc_pinned_memory(max(off, 8))
        host = np.frombuffer(mem, np.uint8, max(off, 8))
        for a, o in metas:
            if a.nbytes:
                rt.memcpyAsync(host.ctypes.data + o, a.data.ptr, a.nbytes, rt.memcpyDeviceToHost, stream.ptr)
        with allow_sync():
            stream.synchronize()
        return np.concatenate([host[o:o + a.nbytes].view(a.dtype).astype(np.int64) for a, o in metas])


class StageTimer:
    """Per-stage times: CUDA events on the GPU (no synchronisation until :meth:`result`),
    wall-clock on the CPU."""

    def __init__(self, be):
        # the Event class only, not the backend: a timer sits in stage outputs that the stage
        # cache walks for their size (and a backend holds lazily filled caches)
        self.cuda = is_cupy(be)
        self._event = be.xp.cuda.Event if self.cuda else None
        self.names: list[str] = []
        self.marks: list = []
        self._start = self._now()

    def _now(self):
        if self.cuda:
            ev = self._event()
            ev.record()
            return ev
        return time.perf_counter()

    def mark(self, name: str) -> None:
        """The stage ``name`` ends now (its kernels are queued)."""
        self.names.append(name)
        self.marks.append(self._now())

    def result(self) -> dict:
        """Seconds per stage and ``total`` (synchronises on the GPU: call it at the end)."""
        out = {}
        prev = self._start
        if self.cuda and self.marks:
            with allow_sync():
                self.marks[-1].synchronize()
        for name, m in zip(self.names, self.marks, strict=True):
            if self.cuda:
                import cupy

                dt = cupy.cuda.get_elapsed_time(prev, m) / 1e3
            else:
                dt = m - prev
            out[name] = out.get(name, 0.0) + float(dt)
            prev = m
        out["total"] = float(sum(v for k, v in out.items() if k != "total"))
        return out


def allow_sync():
    """``cupyx.allow_synchronize(True)`` where CuPy still has it (deprecated since v10),
    otherwise nothing."""
    try:
        import cupyx

        fn = getattr(cupyx, "allow_synchronize", None)
    except ImportError:
        fn = None
    return fn(True) if fn is not None else contextlib.nullcontext()


@contextlib.contextmanager
def activated(be):
    """``be.activate()`` for CuPy backends; nothing otherwise."""
    if is_cupy(be):
        with be.activate():
            yield
    else:
        yield


#: pixels of a band of the CPU path's full-image steps (CIELAB, blur, gradient): each band
#: reports progress and checks for cancel first (63 Mpx: about 60 bands, a few tenths of a
#: second each, where a step used to run for tens of seconds without either)
CPU_BAND_PIXELS = 1 << 20


def row_bands(h: int, w: int, progress=None, what: str = ""):
    """Row ranges ``(r0, r1)`` of about ``CPU_BAND_PIXELS`` pixels covering ``h`` rows; before
    each, ``progress`` (a Progress or None) hears how far the step is and checks for cancel."""
    from gpu_kernels.jobs import as_progress

    progress = as_progress(progress)
    step = max(1, CPU_BAND_PIXELS // max(int(w), 1))
    n = max(1, -(-int(h) // step))
    for i in range(n):
        progress.update(i / n, what or None)
        yield i * step, min(int(h), (i + 1) * step)


def quiet_synchronize(be) -> None:
    """Wait for the current stream after an error (a replayed graph's kernels may still be
    writing into its memory); an error from the wait itself is left to the caller's."""
    try:
        be.synchronize()
    except Exception:  # noqa: BLE001 - the original error is the one to report
        pass


#: page-locked bytes that live results may hold at once (every tool's blocks counted together,
#: :mod:`gpu_kernels.pinned`); past it, results are downloaded into ordinary (pageable) memory, so
#: a batch that keeps every result does not pin the host's RAM
PINNED_RESULT_CAP = 512 << 20


def _result_block(be, nbytes: int) -> np.ndarray:
    """A host block for downloaded results: page-locked (:func:`gpu_kernels.pinned.pinned_block`:
    size classes CuPy's pool finds again, live bytes counted until the last view goes) while the
    live blocks stay under ``PINNED_RESULT_CAP``, else pageable."""
    block = _pinned.pinned_block(be.xp, nbytes, cap=PINNED_RESULT_CAP)
    return block if block is not None else np.empty(max(int(nbytes), 8), np.uint8)


_STAGE: dict = {}
_STAGE_LOCK = threading.Lock()
#: images at least this large go up through the threaded pinned stage (smaller: CuPy's own copy,
#: faster at 1080p on the H100; 4K: 1.5 ms against 2.3, benchmarks/results/imseg_session4.md)
UPLOAD_THREADED_MIN = 12 << 20
UPLOAD_THREADS = 4
#: images from this size up to UPLOAD_THREADED_MIN are copied into the same page-locked stage by
#: the calling thread and sent asynchronously (the host goes on queueing kernels meanwhile);
#: smaller ones go through ``xp.asarray`` (0: never)
UPLOAD_PINNED_MIN = 256 << 10


def upload(be, a: np.ndarray):
    """A device copy of the host array ``a``. Large images are copied into a persistent
    page-locked stage by ``UPLOAD_THREADS`` threads at once, each chunk sent to the device
    as soon as it is there (the host copy into page-locked memory, which CuPy does on one
    thread, is most of an upload's time); small ones go through ``xp.asarray``."""
    xp = be.xp
    threaded = a.nbytes >= UPLOAD_THREADED_MIN and UPLOAD_THREADS > 1
    pinned = UPLOAD_PINNED_MIN > 0 and a.nbytes >= UPLOAD_PINNED_MIN
    if not is_cupy(be) or not isinstance(a, np.ndarray) or not (threaded or pinned):
        return xp.asarray(a)  # a device array stays where it is (no round trip through the host)
    a = np.ascontiguousarray(a)
    with _STAGE_LOCK:  # one stage a device: uploads from several threads take turns
        return _upload_staged(be, xp, a, UPLOAD_THREADS if threaded else 1)


def _upload_staged(be, xp, a: np.ndarray, threads: int = UPLOAD_THREADS):
    nbytes = int(a.nbytes)
    key = be.label
    st = _STAGE.get(key)
    if st is None or st["buf"].size < nbytes:
        if st is not None and st["event"] is not None:  # the old stage's copies are done
            with allow_sync():
                st["event"].synchronize()
        size = 1 << (nbytes - 1).bit_length()
        mem = xp.cuda.alloc_pinned_memory(size)
        st = _STAGE[key] = {"mem": mem, "buf": np.frombuffer(mem, np.uint8, size), "event": None,
                            "pool": st["pool"] if st is not None else None}
    if st["event"] is not None:  # the last upload's copies have left the stage
        with allow_sync():
            st["event"].synchronize()
    out = xp.empty(a.shape, dtype=a.dtype)
    src = a.reshape(-1).view(np.uint8)
    dst = st["buf"]
    stream = xp.cuda.get_current_stream()
    if threads <= 1:  # one copy by this thread, one DMA
        np.copyto(dst[:nbytes], src)
        xp.cuda.runtime.memcpyAsync(out.data.ptr, dst.ctypes.data, nbytes, xp.cuda.runtime.memcpyHostToDevice,
                                    stream.ptr)
        ev = xp.cuda.Event(block=False, disable_timing=True)
        ev.record(stream)
        st["event"] = ev
        return out
    if st["pool"] is None or st["pool"][0] != threads:   # (UPLOAD_THREADS changed: a new pool)
        from concurrent.futures import ThreadPoolExecutor

        if st["pool"] is not None:
            st["pool"][1].shutdown(wait=False)
        st["pool"] = (threads, ThreadPoolExecutor(threads, thread_name_prefix="imseg-upload"))
    step = -(-nbytes // threads)
    step = -(-step // 4096) * 4096
    bounds = [(o, min(o + step, nbytes)) for o in range(0, nbytes, step)]

    def copy(lo_hi):
        lo, hi = lo_hi
        np.copyto(dst[lo:hi], src[lo:hi])
        return lo_hi

    base = out.data.ptr
    hbase = dst.ctypes.data
    for lo, hi in st["pool"][1].map(copy, bounds):
        xp.cuda.runtime.memcpyAsync(base + lo, hbase + lo, hi - lo, xp.cuda.runtime.memcpyHostToDevice, stream.ptr)
    ev = xp.cuda.Event(block=False, disable_timing=True)
    ev.record(stream)
    st["event"] = ev
    return out


def download(be, arrays: dict) -> dict:
    """Host copies of device arrays: each copied asynchronously, at full DMA speed, into one
    page-locked block from CuPy's pinned pool that the returned arrays are views of (the
    block goes back to the pool when they are freed), then one synchronisation: no pageable
    copy, no packing kernel and no host-side copy."""
    if not is_cupy(be):
        return {k: np.array(np.asarray(v)) for k, v in arrays.items()}
    xp = be.xp
    # arrays that are views of one device allocation (the features' block) come back with one
    # copy of the span they cover, when it is not much larger than they are
    groups: dict = {}
    for k, v in arrays.items():
        v = xp.ascontiguousarray(v)
        groups.setdefault(id(v.data.mem), []).append((k, v))
    spans = []  # (device start, bytes, [(key, array, offset in the span)])
    for members in groups.values():
        lo = min(v.data.ptr for _, v in members)
        hi = max(v.data.ptr + v.nbytes for _, v in members)
        if len(members) > 1 and hi - lo <= 2 * sum(v.nbytes for _, v in members) + (64 << 10):
            spans.append((lo, hi - lo, [(k, v, v.data.ptr - lo) for k, v in members]))
        else:
            spans.extend((v.data.ptr, v.nbytes, [(k, v, 0)]) for k, v in members)
    offs, off = [], 0
    for _, nb, _ in spans:
        offs.append(off)
        off += -(-int(nb) // 8) * 8
    if not spans:
        return {}
    host = _result_block(be, off)
    out = {}
    rt = xp.cuda.runtime
    stream = xp.cuda.get_current_stream()
    hbase = host.ctypes.data
    for (lo, nb, members), o in zip(spans, offs, strict=True):
        if nb:
            rt.memcpyAsync(hbase + o, lo, nb, rt.memcpyDeviceToHost, stream.ptr)
        for k, v, d in members:
            out[k] = host[o + d:o + d + v.nbytes].view(v.dtype).reshape(v.shape)
    with allow_sync():
        stream.synchronize()
    return {k: out[k] for k in arrays}


def device_stream(streams: dict, be):
    """One non-blocking stream a device (``be.label``), kept in ``streams``: each use has its own dict, so
    its own streams (the early copies here, the graphs' captures in :mod:`gpu_kernels.imseg.graphs`)."""
    st = streams.get(be.label)
    if st is None:
        st = streams[be.label] = be.xp.cuda.Stream(non_blocking=True)
    return st


_SIDE: dict = {}


def _side_stream(be):
    """One stream a device for the early copies to the host (:class:`EarlyDownload`)."""
    return device_stream(_SIDE, be)


#: copy the k-means clusters and the merged labels to the host while the device goes on with the
#: rest of the call (:class:`EarlyDownload`; the same arrays): H100, 4K, session 10: 6.15-6.59 ->
#: 4.94-5.23 ms (round medians, one process); off: one download of everything at the end
EARLY_DOWNLOAD = True


class EarlyDownload:
    """Host copies of device arrays that are final before the call ends (the k-means clusters,
    the merged labels), made on a side stream while the device goes on with the rest of the
    call. :meth:`start` queues the copies behind the work queued so far on the current stream
    (an event, no host wait); :meth:`download` brings the call's other arrays with
    :func:`download` (one synchronisation), waits for the early copies and returns them all
    (views of page-locked blocks). The arrays must not be written after :meth:`start`; they are
    kept alive until the copies are done. With ``EARLY_DOWNLOAD`` off, or off a CuPy device,
    :meth:`start` only keeps the arrays and :meth:`download` brings them with the others."""

    def __init__(self, be):
        self.be = be
        self.on = EARLY_DOWNLOAD and is_cupy(be)
        self.later: dict = {}   # arrays brought by download()
        self.parts: list = []   # (host views by name, done event, device arrays kept alive)

    def start(self, arrays: dict) -> None:
        if not self.on:
            self.later.update(arrays)
            return
        xp = self.be.xp
        rt = xp.cuda.runtime
        main = xp.cuda.get_current_stream()
        keep = [xp.ascontiguousarray(v) for v in arrays.values()]   # (queued before the event)
        ready = xp.cuda.Event(block=False, disable_timing=True)
        ready.record(main)
        side = _side_stream(self.be)
        side.wait_event(ready)
        offs, off = [], 0
        for v in keep:
            offs.append(off)
            off += -(-int(v.nbytes) // 8) * 8
        host = _result_block(self.be, max(off, 8))
        hbase = host.ctypes.data
        out = {}
        done = xp.cuda.Event(block=False, disable_timing=True)
        try:
            for (k, v), o in zip(zip(arrays, keep, strict=True), offs, strict=True):
                if v.nbytes:
                    rt.memcpyAsync(hbase + o, v.data.ptr, v.nbytes, rt.memcpyDeviceToHost, side.ptr)
                out[k] = host[o:o + v.nbytes].view(v.dtype).reshape(v.shape)
        finally:
            # known to download() and abandon() even when a later copy failed to queue: the copies
            # already queued are waited for before their host block and device arrays go back (review A #5)
            done.record(side)
            self.parts.append((out, done, [*keep, host]))

    def download(self, arrays: dict) -> dict:
        """``arrays`` and every array started (or kept) before, on the host, by name."""
        host = download(self.be, {**self.later, **arrays})
        self.later = {}
        for out, done, _keep in self.parts:
            with allow_sync():
                done.synchronize()
            host.update(out)
        self.parts.clear()
        return host

    def abandon(self) -> None:
        """After an error: wait for the copies started (their device arrays and host blocks are
        then free to go), ignoring an error of the wait itself."""
        for _out, done, _keep in self.parts:
            try:
                done.synchronize()
            except Exception:  # noqa: BLE001 - the caller's error is the one to report
                pass
        self.parts.clear()
        self.later = {}


_FREE: dict = {}
#: the device's free memory is asked again after this many seconds, or when a check needs more
#: than a quarter of what was free (asking costs ~30 us a call, a tenth of a 512^2 segmentation)
FREE_MEMORY_TTL = 1.0


def _free_memory(be, need: int) -> int:
    key = be.label
    now = time.monotonic()
    hit = _FREE.get(key)
    if hit is not None and now - hit[0] < FREE_MEMORY_TTL and need <= 0.25 * hit[1]:
        return hit[1]
    free, _ = be.mem_info()
    _FREE[key] = (now, int(free))
    return int(free)


def check_fits(be, h: int, w: int, need: int) -> None:
    """Raise :class:`TooLargeError` where ``need`` bytes for an ``h`` x ``w`` image exceed
    90 % of the device's free memory (the largest image that would fit is in the message)."""
    free = _free_memory(be, need)
    if need > 0.9 * free:
        raise TooLargeError(h * w, int(h * w * (0.9 * free) / need), unit="pixels", where="the GPU",
                            remedy="downscale the image or segment it on the CPU (--device cpu)")
