"""The optional compiled CPU path of the flow (numba), and the switch between it and NumPy.

On the CPU the TV-L1 iterations and warps (:mod:`gpu_kernels.flow.refine`) and the patches'
inverse search (:mod:`gpu_kernels.flow.search`) run as compiled loops
(:mod:`gpu_kernels.flow._numba_kernels`) when numba imports (``pip install gpulab[fast]``),
with the same float32 arithmetic as the NumPy path, which stays the fallback. The first run
compiles the kernels (about 10-20 s) and caches them on disk (``__pycache__``, or
``NUMBA_CACHE_DIR``); later processes load them in well under a second.

Switches: the environment variable ``GPULAB_FLOW_NUMBA=0`` (read at import) or the module flag
:data:`ENABLED` (``False``: the NumPy path). numba's own ``NUMBA_NUM_THREADS`` sets the threads
(default: the cores; 1 runs the kernels serially, which is faster when other processes keep the
cores busy: each parallel region then waits for a time slice).
"""

from __future__ import annotations

import os
import threading

from gpu_kernels.env import flag

__all__ = ["ENABLED", "kernels", "available", "bands", "warmup", "prepare", "COMPILING"]

#: use the compiled kernels on the CPU when numba imports (False: the NumPy path)
ENABLED = flag("GPULAB_FLOW_NUMBA", True)

_K = None
_TRIED = False
#: numba's default threading layer (workqueue) aborts the process when two threads run parallel
#: kernels at once: the kernels run one at a time (the window may run two flows at once)
_LOCK = threading.RLock()


class _Locked:
    """The kernels' module with each kernel called under :data:`_LOCK`."""

    def __init__(self, mod):
        self._mod = mod

    def __getattr__(self, name):
        fn = getattr(self._mod, name)

        def call(*a, **k):
            with _LOCK:
                return fn(*a, **k)

        call.__name__ = name
        call.__wrapped__ = fn
        setattr(self, name, call)
        return call


def kernels():
    """The compiled kernels (:mod:`gpu_kernels.flow._numba_kernels`, each called under a lock), or
    None (numba missing or broken, or :data:`ENABLED` off)."""
    global _K, _TRIED
    if not ENABLED:
        return None
    if not _TRIED:
        with _LOCK:
            if not _TRIED:
                try:
                    from . import _numba_kernels as k
                    _K = _Locked(k)
                except Exception:  # noqa: BLE001 - numba absent or broken: the NumPy path
                    _K = None
                _TRIED = True
    return _K


#: the progress message of a CPU flow that compiles the kernels first (the first after installing)
COMPILING = "compiling CPU kernels (once, about 20 s)"
_READY = False
#: the compiled entry points (their on-disk cache tells whether a first call compiles)
_ENTRIES = ("tv_warp_iterate", "patch_setup", "patch_init", "patch_round", "densify")


def _cached() -> bool:
    """Whether numba's on-disk cache holds every entry point's index (False when unknown): a first
    call then loads them (under a second) rather than compiling (10-20 s)."""
    try:
        from . import _numba_kernels as k

        return all(os.path.exists(getattr(k, n)._cache._cache_file._index_path) for n in _ENTRIES)
    except Exception:  # noqa: BLE001 - numba's cache layout is not a public API
        return False


def prepare(progress=None) -> None:
    """Before a CPU flow's first kernel: compile (or load) the kernels on a small pair
    (:func:`warmup`), first saying :data:`COMPILING` on ``progress`` when the disk cache does not
    hold them, so the first flow after installing does not sit silent for 10-20 s. Later calls
    return at once."""
    global _READY
    if _READY or kernels() is None:
        return
    with _LOCK:
        if _READY:
            return
        _READY = True                 # (warmup's own flow comes back here)
        if not _cached():
            from gpu_kernels.jobs import as_progress

            as_progress(progress).update(0.0, COMPILING)
        warmup()


def bands(H: int, iters: int) -> int:
    """Row bands of a compiled TV-L1 call: one a thread where each band is at least four times
    its halo (``iters`` rows each side), else 1 (serial)."""
    k = kernels()
    if k is None:
        return 1
    import numba

    n = numba.get_num_threads()
    while n > 1 and H < 4 * iters * n:
        n -= 1
    return n


def available() -> bool:
    """Whether numba imports here (whatever :data:`ENABLED` says)."""
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


def warmup() -> bool:
    """Compile the kernels now (or load them from numba's cache): a default flow of a small
    synthetic pair, so that a later flow does not pay for it. False where the compiled path is off.
    ``python -m gpu_kernels.flow._numba`` does this and prints the time (a step after installing)."""
    if kernels() is None:
        return False
    import numpy as np

    from .search import inverse_search_flow

    y, x = np.mgrid[0:72, 0:96].astype(np.float32)
    a = (np.sin(x * 0.31) * np.cos(y * 0.23) * 0.4 + 0.5).astype(np.float32)
    inverse_search_flow(a, np.roll(a, (1, 2), (0, 1)), device="cpu")
    return True


if __name__ == "__main__":  # pragma: no cover - a command
    import time

    t0 = time.perf_counter()
    ok = warmup()
    print(f"flow kernels {'compiled or loaded' if ok else 'off (numba missing or GPULAB_FLOW_NUMBA=0)'} "
          f"in {time.perf_counter() - t0:.1f} s")
