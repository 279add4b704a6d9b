"""The stage cache: stage outputs kept where they were made, least recently used evicted
first, under caps on host and device memory; one shared by every tab (Qt-free).

:class:`StageCache` is what :meth:`app.tools.stages.Pipeline.execute` reads and fills;
:func:`shared_cache` is the one the window's tabs share. See :mod:`app.tools.stages` for the
keys (input identity, stage parameters, upstream keys).

Example
-------
>>> import numpy as np
>>> from app.tools.stage_cache import StageCache
>>> c = StageCache(cap_bytes=100)
>>> c.put(("s", 1), np.zeros(10, np.uint8), scope="t"), c.put(("s", 2), np.zeros(200, np.uint8), scope="t")
(True, False)
>>> c.get(("s", 1))[0], len(c)
(True, 1)
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from gpu_kernels.lazy import lazy_module

if TYPE_CHECKING:
    from gpu_kernels.backend import Backend

_backend = lazy_module("gpu_kernels.backend")  # NumPy on first use (start-up, issue 18 case 19)

__all__ = ["StageCache", "output_nbytes", "shared_cache", "DEFAULT_HOST_SHARE", "DEFAULT_DEVICE_SHARE", "CACHE_ENV"]

log = logging.getLogger(__name__)

#: the environment variable that sets the cache's cap in MiB (host and device each)
CACHE_ENV = "GPULAB_STAGE_CACHE_MB"
#: default caps: this share of the host's available memory, and of the GPU's free memory
DEFAULT_HOST_SHARE = 0.25
DEFAULT_DEVICE_SHARE = 0.25
_MAX_DEFAULT_HOST = 8 << 30


# ----------------------------------------------------------------------------- sizes
def _array_like(v) -> bool:
    """An array, or a sparse matrix of SciPy / CuPy (its arrays are in its ``__dict__``)."""
    return hasattr(v, "shape") and hasattr(v, "dtype")


def output_nbytes(obj, _depth: int = 0, _seen: set | None = None) -> tuple[int, int]:
    """``(host_bytes, device_bytes)`` held by the arrays in ``obj`` (NumPy/CuPy arrays inside
    tuples, lists, dicts, dataclasses and plain objects, a few levels deep)."""
    seen = set() if _seen is None else _seen
    if obj is None or isinstance(obj, int | float | str | bool | bytes) or _depth > 6:
        return 0, 0
    if id(obj) in seen:
        return 0, 0
    seen.add(id(obj))
    if getattr(obj, "queues_no_work", False) is True and hasattr(obj, "held"):
        # a deferred output: only what it computed is its own (its input and upstream outputs
        # are counted where they are kept); nothing until a later run computes it
        return output_nbytes(obj.held, _depth + 1, seen)
    nb = getattr(obj, "nbytes", None)
    if isinstance(nb, int) and hasattr(obj, "shape") and hasattr(obj, "dtype"):
        dev = type(obj).__module__.split(".")[0] == "cupy"
        return (0, nb) if dev else (nb, 0)
    h = d = 0
    if isinstance(obj, Mapping):
        items: Iterable = obj.values()
    elif isinstance(obj, list | tuple | set | frozenset):
        items = obj
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        names = [f.name for f in dataclasses.fields(obj)]
        items = [getattr(obj, n, None) for n in names]
        # and the arrays / sparse matrices it caches beside its fields (a mesh graph's CSR weights)
        items += [v for k, v in getattr(obj, "__dict__", {}).items() if k not in names and _array_like(v)]
    elif hasattr(obj, "__dict__") and not isinstance(obj, type):
        items = vars(obj).values()
    else:
        return 0, 0
    for it in items:
        a, b = output_nbytes(it, _depth + 1, seen)
        h += a
        d += b
    return h, d


def _host_available() -> int:
    try:
        from gpu_kernels.backend import _host_mem_info

        return int(_host_mem_info()[0])
    except Exception:  # noqa: BLE001
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return 4 << 30


# ----------------------------------------------------------------------------- the cache
class StageCache:
    """Stage outputs, least recently used evicted first, under a cap on host and device bytes.

    Entries belong to a *scope* (a tab, i.e. a tool): :meth:`bind` states the scope's current
    input and device, and clears the scope when either changed. ``cap_bytes`` caps host
    memory and ``device_cap_bytes`` device memory (default: :data:`DEFAULT_HOST_SHARE` of the
    available RAM, at most 8 GiB, and :data:`DEFAULT_DEVICE_SHARE` of the GPU's free memory
    when the first GPU output arrives; ``GPULAB_STAGE_CACHE_MB`` sets both). An output larger
    than the cap is not kept; a cap of 0 keeps nothing. Safe to use from several worker threads.

    The caps count stage outputs only. Memos a tool keeps beside them are outside: the echo tool's
    uploads of the loaded truth and masks (``gpu_kernels.echo.sequence.UPLOAD_CACHE_BYTES``, up to
    1 GiB of device memory while the loaded data live) and the mesh tool's layouts memoised on a
    cached ``ClusteredMesh`` after it was measured (about one F x K float32 array).
    """

    def __init__(self, cap_bytes: int | None = None, device_cap_bytes: int | None = None):
        env = os.environ.get(CACHE_ENV, "").strip()
        env_cap = None
        if env:
            try:
                env_cap = max(0, int(float(env) * (1 << 20)))
            except ValueError:
                log.warning("%s=%r is not a number of MiB; using the default", CACHE_ENV, env)
        if cap_bytes is None:
            cap_bytes = env_cap if env_cap is not None else min(_MAX_DEFAULT_HOST,
                                                                int(DEFAULT_HOST_SHARE * _host_available()))
        self.cap_bytes = int(cap_bytes)
        self.device_cap_bytes = device_cap_bytes if device_cap_bytes is not None else env_cap
        self._lock = threading.RLock()
        self._entries: OrderedDict[tuple, tuple[Any, int, int, str, tuple, float]] = OrderedDict()
        self._bound: dict[str, tuple] = {}
        self.host_bytes = 0
        self.device_bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    # -- scopes ----------------------------------------------------------------------------
    def bind(self, scope: str, input_token: Any, device: Backend | str) -> bool:
        """State ``scope``'s input and device; clear its entries if either changed. True if cleared."""
        dev = device.label if isinstance(device, _backend.Backend) else str(device)
        state = (input_token, dev)
        with self._lock:
            old = self._bound.get(scope)
            self._bound[scope] = state
            if old is not None and old != state:
                self.clear(scope)
                return True
        return False

    def clear(self, scope: str | None = None) -> None:
        """Forget every entry (of ``scope`` only, if given)."""
        with self._lock:
            for k in [k for k, e in self._entries.items() if scope is None or e[3] == scope]:
                self._drop(k)

    def set_caps(self, cap_bytes: int | None = None, device_cap_bytes: int | None = None) -> None:
        with self._lock:
            if cap_bytes is not None:
                self.cap_bytes = int(cap_bytes)
            if device_cap_bytes is not None:
                self.device_cap_bytes = int(device_cap_bytes)
            self._evict()

    # -- entries ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._entries

    def keys(self, scope: str | None = None) -> list[tuple]:
        with self._lock:
            return [k for k, e in self._entries.items() if scope is None or e[3] == scope]

    def get(self, key) -> tuple[bool, Any]:
        with self._lock:
            e = self._entries.get(key)
            if e is None:
                self.misses += 1
                return False, None
            self._entries.move_to_end(key)
            self.hits += 1
            if getattr(e[0], "queues_no_work", False) is True:
                self._remeasure(key, e)
            return True, e[0]

    def _remeasure(self, key, e) -> None:
        """A deferred output may have been computed since it was kept (a live re-run from a
        later stage computes the full run's deferred outputs once): count what it holds now and
        evict others if that passes a cap. Called under the lock."""
        h, d = output_nbytes(e[0])
        if (h, d) == (e[1], e[2]):
            return
        self._entries[key] = (e[0], h, d, *e[3:])
        self.host_bytes += h - e[1]
        self.device_bytes += d - e[2]
        self._evict()

    def seconds(self, key) -> float | None:
        """The time the entry under ``key`` took to compute (``put``'s ``seconds``), or None."""
        with self._lock:
            e = self._entries.get(key)
            return None if e is None else e[5]

    def put(self, key, value, *, scope: str = "", refs: tuple = (), device: Backend | None = None,
            seconds: float = 0.0) -> bool:
        """Keep ``value`` (with ``refs``, the input objects its key names by identity, kept
        alive so that their ids stay unique, and ``seconds``, the time it took to compute).
        False if it is larger than the cap."""
        h, d = output_nbytes(value)
        with self._lock:
            if d and self.device_cap_bytes is None:
                self.device_cap_bytes = self._default_device_cap(device)
            if self.cap_bytes <= 0 or h > self.cap_bytes or (d and d > (self.device_cap_bytes or 0)):
                return False
            if key in self._entries:
                self._drop(key)
            self._entries[key] = (value, h, d, scope, refs, float(seconds))
            self.host_bytes += h
            self.device_bytes += d
            self._evict()
            return key in self._entries

    def _default_device_cap(self, device: Backend | None) -> int:
        try:
            if device is not None and device.is_gpu:
                free, _total = device.mem_info()
                return int(DEFAULT_DEVICE_SHARE * free)
        except Exception:  # noqa: BLE001
            pass
        return 1 << 30

    def _drop(self, key) -> None:
        e = self._entries.pop(key, None)
        if e is not None:
            self.host_bytes -= e[1]
            self.device_bytes -= e[2]

    def _evict(self) -> None:
        dcap = self.device_cap_bytes if self.device_cap_bytes is not None else 1 << 62
        while self._entries and (self.host_bytes > self.cap_bytes or self.device_bytes > dcap):
            k = next(iter(self._entries))
            self._drop(k)
            self.evictions += 1


_SHARED: StageCache | None = None
_SHARED_LOCK = threading.Lock()


def shared_cache() -> StageCache:
    """The process's one stage cache (the window's tabs share it, each tab its own scope)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = StageCache()
        return _SHARED
