"""What a reconstruction sets up before it grows, kept for the next call with the same inputs
(issue 24: one view alone re-run is what a live MVS edit costs, and its set-up was 5 ms of Python
before the first batch).

:func:`~gpu_kernels.mvs.stereo.reconstruct` keeps its :class:`~gpu_kernels.mvs.stereo.PreparedViews`
(the view selection, each view's seeds and the views' textures on the device) for the last
:data:`SETUP_ENTRIES` sets of inputs. An entry is found by a key of

* the cameras **by value** (K, R, t, size), the reference views, ``neighbors``, ``min_views``, the
  device and whether it packs;
* the **identity** of the images, the sparse points and their tracks (the entry holds them, so an
  identity cannot be taken by another object while it lives),

and a hit is used at once, while its **content** is checked in a background thread: a SHA-1 of
the images the textures were packed from, the points and the tracks, against the one taken when the
entry was made. The check starts once the grower has queued its first batches (:func:`defer`), and
runs while the device grows. Where it differs (an image or the points
changed in place), the entry is dropped and the call is made again from scratch, so a result
never comes from a stale set-up; the growing's reports wait for the check's answer
(:class:`HeldReports`), so a stale set-up's maps are never shown either. Nothing is kept on the CPU unless asked (its set-up is small
against its growing).

The grower's own set-up (the seeds' pixels, the device's state, its buffers and the captured
batch) is kept by :mod:`.grow` the same way, keyed by values; :func:`release` drops all of it,
and runs when :func:`~gpu_kernels.mvs.stereo.reconstruct` gives CuPy's pool back or the app
frees the device after running out of memory (:func:`gpu_kernels.backend.on_release`).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.mvs.memo import digest
>>> a = np.arange(12, dtype=np.uint8)
>>> d = digest([a])
>>> a[3] = 0
>>> digest([a]) == d
False
"""

from __future__ import annotations

import collections
import hashlib
import struct
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

__all__ = ["SETUP_ENTRIES", "digest", "ident", "camera_sig", "Check", "StaleSetup", "HeldReports",
           "SetupMemo", "SETUP", "defer", "run_deferred", "release", "on_release", "on_stale", "LazyExecutor"]

#: sets of inputs whose set-up :func:`reconstruct` keeps (the scene's and one view's, say)
SETUP_ENTRIES = 2


def ident(x):
    """A cheap identity of an input: arrays by object, shape, dtype and strides (an array object
    keeps its data: a ``resize`` in place changes its shape); lists by object and length; None as
    None. The memo holds the objects, so an ``id`` cannot be taken by another one meanwhile."""
    if x is None:
        return None
    if isinstance(x, np.ndarray):
        return ("a", id(x), x.shape, x.dtype.str, x.strides)
    try:
        return ("s", id(x), len(x))
    except TypeError:
        return ("o", id(x))


def camera_sig(cam) -> bytes:
    """A camera's values (K, R, t, width, height) as bytes (their dtypes too)."""
    K, R, t = cam.K, cam.R, cam.t
    return b"".join((K.dtype.str.encode(), K.tobytes(), R.dtype.str.encode(), R.tobytes(), t.dtype.str.encode(),
                     t.tobytes(), struct.pack("<qq", int(cam.width), int(cam.height))))


def digest(arrays) -> bytes:
    """SHA-1 over the SHA-1s of each item (its shape, dtype and bytes; a list or tuple of arrays
    counts as one item: the points' tracks; ``None`` as such). Items of several MiB together are
    hashed by :data:`HASH_THREADS` threads at once (hashlib lets go of the GIL over them)."""
    arrays = list(arrays)
    big = sum(a.nbytes for a in arrays if isinstance(a, np.ndarray)) >= _PARALLEL_BYTES and len(arrays) > 1
    parts = list(_hashers().map(_one, arrays)) if big else [_one(a) for a in arrays]
    return hashlib.sha1(b"".join(parts), usedforsecurity=False).digest()


#: threads that hash the items of a large :func:`digest` at once
HASH_THREADS = 4
_PARALLEL_BYTES = 2 << 20


def _one(a) -> bytes:
    h = hashlib.sha1(usedforsecurity=False)
    if a is None:
        h.update(b"none")
    elif isinstance(a, (list, tuple)):  # the tracks: their lengths, then every index
        h.update(b"list")
        h.update(_tracks_bytes(a))
    else:
        a = np.ascontiguousarray(a)
        h.update(repr((a.shape, a.dtype.str)).encode())
        h.update(memoryview(a.reshape(-1).view(np.uint8)))
    return h.digest()


def _tracks_bytes(tracks) -> bytes:
    """The tracks' lengths and indices as bytes, without a Python loop over them where each is a
    1-D array or list (``map(len)`` and one ``concatenate`` in C: 0.1-0.25 ms for 1,900 tracks,
    where a loop held the GIL, and with it the grower's launches, for 1-2 ms)."""
    try:
        lengths = np.fromiter(map(len, tracks), np.int64, len(tracks))
        flat = np.concatenate(tracks, axis=None) if lengths.sum() else np.zeros(0, np.int64)
        if flat.size != lengths.sum():
            raise ValueError("nested tracks")
    except (TypeError, ValueError):  # bare indices or nested lists: one at a time
        lengths = np.fromiter(map(np.size, tracks), np.int64, len(tracks))
        flat = np.concatenate([np.ravel(x) for x in tracks]) if lengths.sum() else np.zeros(0, np.int64)
    return lengths.tobytes() + np.ascontiguousarray(flat, np.int64).tobytes()


class LazyExecutor:
    """A thread pool made at its first call (``workers``: a number, or a function giving it then),
    the same one from then on (thread-safe); MVS's background threads (hashing, content checks,
    downloads, host copies)."""

    def __init__(self, workers, name: str):
        self._workers, self._name = workers, name
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def __call__(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                n = self._workers() if callable(self._workers) else self._workers
                self._pool = ThreadPoolExecutor(n, thread_name_prefix=self._name)
            return self._pool


#: threads that hash the items of a large :func:`digest`
_hashers = LazyExecutor(lambda: HASH_THREADS, "gpulab-mvs-hash")
#: one thread for the content checks (hashlib lets go of the GIL over large buffers)
_background = LazyExecutor(1, "gpulab-mvs-check")


class _Entry:
    __slots__ = ("prep", "held", "content", "token")

    def __init__(self, prep, held, content):
        self.prep, self.held, self.content = prep, held, content
        self.token: Future | None = None


class Check:
    """Whether a kept set-up's inputs still have the content they had when it was made: hashed in
    the background once :meth:`start` is called (the caller starts it once the device is busy, so
    that the hashing threads do not contend for the GIL with its set-up), waited for by
    :meth:`result` (which starts it where nobody did)."""

    def __init__(self, token: Future, content):
        self._token, self._content = token, content
        self._future: Future | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._future is None:
                self._future = _background().submit(self._same)

    def _same(self) -> bool:
        try:
            return self._token.result() == digest(self._content())
        except Exception:  # noqa: BLE001 - inputs that cannot be hashed count as changed (made again)
            return False

    def result(self) -> bool:
        self.start()
        return self._future.result()

    def done(self) -> bool:
        """Whether :meth:`result` has its answer (without waiting)."""
        f = self._future
        return f is not None and f.done()


class StaleSetup(Exception):
    """A kept set-up's inputs changed in place: its content check said so while the device grew."""


class HeldReports:
    """The growing's reports on a kept set-up (``progress``, a :class:`~gpu_kernels.jobs.Progress`
    to pass down, and ``callback``), held back until the set-up's content check (``check``) says
    the inputs are unchanged: a stale set-up's maps never reach the callback and its growing never
    moves the bar, and the first report after the check says 'changed' stops the growing
    (:class:`StaleSetup`: the caller makes the set-up again). Nothing waits: the check runs in the
    background, and reports before its answer are dropped (a cancel is still seen). ``start``:
    start the check at the first report (where no device loop starts it, the CPU)."""

    def __init__(self, check: Check, progress, callback=None, *, start: bool = False):
        from gpu_kernels.jobs import Progress

        self._check, self._outer, self._callback, self._start = check, progress, callback, start
        self._same: bool | None = None
        self.progress = Progress(self._report, min_interval=0.0)
        self.callback = None if callback is None else self._maps

    def _open(self) -> bool:
        if self._same is None:
            if self._start:
                self._check.start()
            if self._check.done():
                self._same = self._check.result()
        if self._same is False:
            raise StaleSetup("the inputs changed in place since the set-up was kept")
        return bool(self._same)

    def _report(self, fraction: float, stage: str) -> None:
        self._outer.check()  # a cancel
        if self._open():
            self._outer.update(fraction, stage)

    def _maps(self, maps, info) -> None:
        if self._open():
            self._callback(maps, info)


_local = threading.local()


def defer(fn) -> None:
    """Run ``fn()`` at this thread's next :func:`run_deferred` (the grower calls it once its first
    batches are queued on the device)."""
    if not hasattr(_local, "fns"):
        _local.fns = []
    _local.fns.append(fn)


def run_deferred() -> None:
    """Run (and forget) what this thread deferred."""
    fns = getattr(_local, "fns", None)
    if fns:
        _local.fns = []
        for fn in fns:
            fn()


def drop_deferred() -> None:
    _local.fns = []


class SetupMemo:
    """The last ``size`` set-ups by key (least recently used out first), thread-safe."""

    def __init__(self, size: int = SETUP_ENTRIES):
        self.size = size
        self._d: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.stale = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._d)

    def get(self, key):
        """``(prep, check)`` of a hit, ``check`` a :class:`Check` of whether its content is still
        the same (not started: :meth:`Check.start`, or :func:`defer` it); ``(None, None)`` on a miss."""
        with self._lock:
            e = self._d.get(key)
            if e is None:
                self.misses += 1
                return None, None
            self._d.move_to_end(key)
            self.hits += 1
        return e.prep, Check(e.token, e.content)

    def put(self, key, prep, held, content) -> Future:
        """Keep ``prep`` for ``key``; ``held``: the inputs the key names by identity (kept alive with
        it); ``content()``: the arrays its content check hashes (hashed now, in the background).
        Returns that hash's future: the caller waits for it before it hands its result back (a
        caller that changes an input in place after the call must not have the hash taken of the
        changed input, or the next call's check would find it 'the same')."""
        e = _Entry(prep, held, content)
        e.token = _background().submit(lambda: digest(content()))
        with self._lock:
            self._d[key] = e
            self._d.move_to_end(key)
            while len(self._d) > self.size:
                self._d.popitem(last=False)
        return e.token

    def forget(self, key, prep=None) -> None:
        """``key``'s set-up went stale (or could not be hashed): drop it, and let go of what was
        made from it (:func:`on_stale`: the grower cache). ``prep``: the set-up the caller used;
        where another thread's redo has already kept a new one under the same key, that one stays."""
        with self._lock:
            e = self._d.get(key)
            if e is not None and (prep is None or e.prep is prep):
                del self._d[key]
                self.stale += 1
                prep = e.prep
        if prep is not None:
            for fn in list(_STALE_HOOKS):
                fn(prep)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()


#: :func:`~gpu_kernels.mvs.stereo.reconstruct`'s set-ups
SETUP = SetupMemo()
_RELEASERS: list = []
_STALE_HOOKS: list = []


def on_stale(fn) -> None:
    """Register ``fn(prep)``, called when a kept set-up ``prep`` is forgotten as stale
    (:meth:`SetupMemo.forget`: the grower cache drops the growers made from its textures)."""
    if fn not in _STALE_HOOKS:
        _STALE_HOOKS.append(fn)


def on_release(fn) -> None:
    """Register ``fn()``, called by :func:`release` (the grower's caches)."""
    if fn not in _RELEASERS:
        _RELEASERS.append(fn)


def release(_backend=None) -> None:
    """Drop every kept set-up (their textures and buffers on the device go back to CuPy's pool)."""
    SETUP.clear()
    for fn in list(_RELEASERS):
        fn()
