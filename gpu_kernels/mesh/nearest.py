"""Nearest-point queries of a SciPy k-d tree on every core, safe to interrupt.

``cKDTree.query(x, workers=-1)`` runs its row blocks in *daemon* threads and joins them.
A Ctrl+C (KeyboardInterrupt) that lands in that join or in a thread's start unwinds the
caller while those threads go on searching without the GIL; the command then prints
"cancelled", returns, and the interpreter's finalization, which does not wait for daemon
threads, frees what they are reading: SIGSEGV at exit (``gpulab mesh-seg`` interrupted
during the thickness). :func:`kd_nearest` runs the blocks (``workers=1`` each, the GIL
released in SciPy's C++ search as before) in threads of its own that are *not* daemons,
and joins every started one before it returns or re-raises; the interpreter's exit waits
for any it could not join (a second Ctrl+C during the join).

Example
-------
>>> import numpy as np
>>> from scipy.spatial import cKDTree
>>> from gpu_kernels.mesh.nearest import kd_nearest
>>> pts = np.random.default_rng(0).random((5000, 3))
>>> q = np.random.default_rng(1).random((3000, 3))
>>> d, j = kd_nearest(cKDTree(pts), q, workers=3)
>>> d0, j0 = cKDTree(pts).query(q, k=1)
>>> bool((j == j0).all() and np.allclose(d, d0))
True
"""

from __future__ import annotations

import os
import threading

import numpy as np

__all__ = ["kd_nearest", "MIN_ROWS_PER_THREAD"]

#: fewer query rows than this per thread: fewer threads (a thread costs ~0.1 ms to start)
MIN_ROWS_PER_THREAD = 512


def kd_nearest(tree, x, *, workers: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``tree.query(x, k=1)`` (distances, indices) with the rows split across ``workers``
    threads (default: every core, as SciPy's ``workers=-1``); no thread outlives the call
    unless a second interrupt stops its join (it is not a daemon: the exit waits for it)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    n = x.shape[0]
    w = (os.cpu_count() or 1) if workers is None or workers < 1 else int(workers)
    w = max(1, min(w, n // MIN_ROWS_PER_THREAD))
    if w == 1:
        # one C++ call on this thread: a signal is handled only once it has returned
        return tree.query(x, k=1)
    dist = np.empty(n, dtype=np.float64)
    idx = np.empty(n, dtype=np.intp)
    errors: list[BaseException] = []
    bounds = np.linspace(0, n, w + 1).astype(np.int64)

    def run(a, b):
        try:
            dist[a:b], idx[a:b] = tree.query(x[a:b], k=1)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            errors.append(exc)

    # blocks 1.. on threads of their own, block 0 on this one
    threads = [threading.Thread(target=run, args=(int(bounds[i]), int(bounds[i + 1])), name="gpulab-kd-nearest",
                                daemon=False) for i in range(1, w)]
    try:
        for t in threads:
            t.start()
        dist[:bounds[1]], idx[:bounds[1]] = tree.query(x[:bounds[1]], k=1)
    finally:
        # also on KeyboardInterrupt: the blocks take milliseconds, and none of them may
        # still be reading the tree or writing the results once this call is left
        for t in threads:
            if t.is_alive():
                t.join()
    if errors:
        raise errors[0]
    return dist, idx
