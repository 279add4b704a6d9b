"""A background warm-up of the mesh pipeline's compiled merge loop (issue 22, session 13).

The merges (:func:`gpu_kernels.mesh.segment._merge_to_targets`: the learned k = "auto" and integer-k merges and the
hand-made loop of the small-part absorption) run one compiled loop, :func:`gpu_kernels.mesh._numba_merge.greedy_merge`.
Its first compile takes ~6 s on an empty numba cache (10-40 s on a loaded 2-core box) and its cache load ~0.3 s;
without a warm-up either lands on the first k = "auto" run or the first live edit. :func:`warm_up_in_background`
runs that loop once on a tiny input of the same types, on a thread of its own, once per process, so that the
specialization the pipeline uses is compiled (or loaded) before the user's first run needs it.
The mesh tool starts it when it reads a mesh (``app.tools.mesh_seg.load``), as the text readers start theirs on first
use (:mod:`app.io._text_numba`): importing the tool or ``gpulab mesh-seg --help`` starts nothing (start-up).

This module imports only :mod:`threading` and :mod:`gpu_kernels.env` (the standard library) at import; the warm-up
imports the pipeline on its own thread.
"""

from __future__ import annotations

import threading

from gpu_kernels.env import flag

__all__ = ["warm_up", "warm_up_in_background", "wait"]

_LOCK = threading.Lock()
_thread: list = []


def warm_up() -> None:
    """Compile (or load from numba's disk cache) the merge loop for the calls the pipeline makes: one merge of a
    four-face ring's two clusters by :class:`gpu_kernels.mesh.boundary._MergeState`'s compiled loop, with the
    learned merges' tables (the hand-made and learned orders share one specialization), and the exact hull's fill
    (:func:`gpu_kernels.mesh._numba_merge.fill_exact`, with the hull it calls). It goes straight to the compiled
    functions, not through the pipeline's. Does nothing where the loop is not compiled."""
    from types import SimpleNamespace

    import numpy as np

    from gpu_kernels.mesh import boundary

    if not boundary.COMPILED_MERGE or boundary.compiled_merge() is None:
        return
    ring = SimpleNamespace(
        n=4, n_edges=4, src=np.array([0, 1, 2, 3]), dst=np.array([1, 2, 3, 0]), edge_length=np.ones(4),
        concavity=np.array([0.1, 0.5, 0.1, 0.5]), concave=np.array([True, False, True, False]), areas=np.ones(4),
        normals=np.tile([0.0, 0.0, 1.0], (4, 1)), thickness=np.ones(4), ref_scale=0.0)
    state = boundary._MergeState(ring, np.array([0, 0, 1, 1], dtype=np.int32), {0: 1}, np.zeros(2, dtype=np.int64),
                                 extra=True)
    state.compiled({0: 1}, 0.0, None, policy=0)
    # the exact hull (session 25: the integer k's merges read it; ~9 s to compile on an empty cache, which would land
    # on the first integer-k run or k edit): its fill, two clusters of a box's corners, and the hull called from
    # Python (learned._exact_depth: a pair the fill left to it, e.g. a flat union)
    nm = boundary.compiled_merge()
    corners = np.array([[x, y, z] for x in (0.0, 1.0) for y in (0.0, 1.0) for z in (0.0, 1.0)])
    nm.fill_exact(np.stack([corners[:4], corners[4:]]), np.array([4, 4]), np.array([[0, 1]]), np.full((2, 2), np.nan))
    nm.hull_depth(corners)


def _run() -> None:
    try:
        warm_up()
    except Exception:  # noqa: BLE001, S110 - a warm-up only: the first run compiles instead (and reports its error)
        pass


def warm_up_in_background() -> None:
    """:func:`warm_up` on a thread of its own, once per process (later calls return at once; none with the environment
    variable ``GPULAB_MESH_WARM_UP=0``). Not a daemon: the exit waits for it (a daemon thread still inside LLVM's C++ at finalization can abort the exit, see
    :class:`gpu_kernels.jobs.BackgroundCall`)."""
    with _LOCK:
        if _thread or not flag("GPULAB_MESH_WARM_UP", True):
            return
        t = threading.Thread(target=_run, name="gpulab-mesh-numba-warm-up", daemon=False)
        _thread.append(t)
        t.start()


def wait(timeout: float | None = None) -> bool:
    """Wait for the background warm-up (if one was started); True if none is running now."""
    with _LOCK:
        t = _thread[0] if _thread else None
    if t is None:
        return True
    t.join(timeout)
    return not t.is_alive()
