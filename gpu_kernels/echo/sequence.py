"""Motion over a 4-D sequence: every consecutive pair, and trajectories from a reference.

``pairwise[k]`` is the field from frame k to frame k + 1 (fixed = frame k). The trajectory
from the reference frame r (usually end-diastole) to frame j is the composition of the
pairwise fields along the way, on frame r's grid:
``traj[j](x) = traj[j - 1](x) + pairwise[j - 1](x + traj[j - 1](x))`` for j > r, and the
same backwards with the fields from k + 1 to k for j < r: by default the inverse of the pair
field k -> k + 1 (:func:`~gpu_kernels.echo.maps.invert`, no new estimate; as accurate as one,
benchmarks/results/echo_session3_backward.md), or with ``backward="estimate"`` a new estimate
with the frames swapped. With ``refine=True`` each
composed field is used as the initial field of a direct estimate from frame r to frame j,
which removes most of the drift that composition accumulates.

Example
-------
>>> from gpu_kernels.echo.synthetic import make_sequence
>>> seq = make_sequence(24, frames=3, seed=0)
>>> res = estimate_sequence(seq.frames, device="cpu", levels=2, iters=10)
>>> res.pairwise.shape, res.trajectory.shape
((2, 3, 24, 24, 24), (3, 3, 24, 24, 24))
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend, on_release
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.echo.maps import SUMMARY_GRID, compose, invert
from gpu_kernels.echo.motion import PREPARE_KEYS, SOLVE_KEYS, estimate_motion, prepare_motion, solve_motion
from gpu_kernels.jobs import as_progress

__all__ = ["SequenceMotion", "estimate_sequence", "prepare_pairs", "add_tensors", "BACKWARDS", "PairFields",
           "estimate_pairs", "trajectories", "host_buffer", "on_device"]

#: how the fields from frame k + 1 to k are made for the frames before the reference
BACKWARDS = ("invert", "estimate")

#: share of the device's free memory (of the host's, on the CPU: at most 2 GiB) that
#: :func:`prepare_pairs` fills; the pairs beyond it are prepared again by each solve
PREPARED_SHARE = 0.25
#: share of the device's free memory under which :func:`estimate_sequence` (``keep_on_device``)
#: keeps the pair fields on the device beside their host copies, for the trajectories and the
#: metrics of a live re-run (no upload); past it they are uploaded again where needed
KEEP_SHARE = 0.25
#: how :func:`host_buffer` gets host memory for the fields that come down from the device:
#: ``"spare"`` (written ahead in a background thread) or ``"numpy"`` (the code before session 10)
HOST_ALLOC = "spare"
#: the largest buffer :func:`host_buffer` makes ahead
SPARE_MAX_BYTES = 256 << 20
#: the kinds of buffer (shape, dtype, tag) kept ahead at once: the most recently asked for (a
#: live edit asks for two: the pair fields and, from a reference other than frame 0, the
#: trajectories); buffers of older kinds (another input's size) are dropped
SPARE_KINDS = 2
#: arrays below this many bytes always come from NumPy
_HOST_ALLOC_MIN = 1 << 20


@dataclass
class SequenceMotion:
    """Motion of a sequence of T frames.

    Attributes
    ----------
    pairwise : ndarray, (T - 1, 3, Z, Y, X)
        Field from frame k to frame k + 1.
    trajectory : ndarray, (T, 3, Z, Y, X) or None
        Field from the reference frame to every frame (zero at the reference).
    reference : int
    spacing : tuple
    seconds : float
    info : list
        The :class:`~gpu_kernels.echo.motion.MotionInfo` of every estimate, as dicts.
    """

    pairwise: np.ndarray
    trajectory: np.ndarray | None
    reference: int
    spacing: tuple = (1.0, 1.0, 1.0)
    seconds: float = 0.0
    info: list = field(default_factory=list)
    #: with ``keep_on_device``: each pair field on the device (None: not kept, too large), and
    #: every second voxel of all of them, (T - 1, 3, Z/2, Y/2, X/2), for the summary's numbers
    on_device: list | None = None
    summary_grid: Any = None


def prepare_pairs(frames, *, cyclic: bool = False, spacing=None, device=None, progress=None, tensors: bool = True,
                  **params) -> list:
    """:func:`~gpu_kernels.echo.motion.prepare_motion` of every consecutive pair, kept where it
    was made while it fits :data:`PREPARED_SHARE` of the free memory; ``None`` for the pairs
    beyond (their solve prepares them again). ``params``: the preparation's parameters
    (``PREPARE_KEYS``; others are ignored). ``tensors=False``: the pyramids alone (the tensors
    then come from :func:`add_tensors`)."""
    be = get_backend(device)
    progress = as_progress(progress)
    T = len(frames)
    npairs = T if cyclic else T - 1
    kw = {k: params[k] for k in PREPARE_KEYS if k in params}
    if be.is_gpu:
        budget = PREPARED_SHARE * be.mem_info()[0]
    else:
        from gpu_kernels.backend import _host_mem_info

        budget = min(PREPARED_SHARE * _host_mem_info()[0], 2 << 30)
    out, used, prev = [], 0.0, None
    with be.activate():
        for k in range(npairs):
            progress.update(k / max(npairs, 1), f"pyramids and tensors {k + 1}/{npairs}")
            # two pyramids (~2.3 volumes) and six tensor channels (~6.9) per pair, float32
            need = 9.2 * 4 * float(np.prod(frames[0].shape))
            if used + need > budget and out:
                out.append(None)
                prev = None
                continue
            # each frame goes to the device once: pair k's moving volume is pair k + 1's fixed one
            fixed = be.xp.asarray(frames[k]) if prev is None else prev
            prev = be.xp.asarray(frames[(k + 1) % T])
            out.append(prepare_motion(fixed, prev, spacing=spacing, device=be, tensors=tensors, **kw))
            used += need
    return out


def add_tensors(prepared: list, *, rho=None, derivative=None, device=None, progress=None) -> list:
    """The pairs of :func:`prepare_pairs` (``tensors=False``) with their spatial structure tensors
    (:func:`~gpu_kernels.echo.motion.with_tensors`); ``None`` stays ``None``. A ``rho`` or
    ``derivative`` change then keeps the pyramids."""
    from gpu_kernels.echo.motion import with_tensors

    progress = as_progress(progress)
    kw = {k: v for k, v in (("rho", rho), ("derivative", derivative)) if v is not None}
    out = []
    for k, p in enumerate(prepared):
        progress.update(k / max(len(prepared), 1), f"structure tensors {k + 1}/{len(prepared)}")
        out.append(None if p is None else with_tensors(p, **kw))
    return out


def estimate_sequence(frames, *, reference: int = 0, trajectory: bool = True, refine: bool = False,
                      cyclic: bool = False, spacing=None, trajectory_dtype=np.float32, device=None, progress=None,
                      prepared=None, backward: str = "invert", out=None, keep_on_device: bool = False,
                      **params) -> SequenceMotion:
    """Pairwise motion of consecutive frames and, optionally, trajectories from ``reference``.

    Parameters
    ----------
    frames : array (T, Z, Y, X) or a sequence of T volumes
    reference : int
        The frame the trajectories start from (negative: from the end).
    trajectory : bool
        Also compose the trajectories.
    refine : bool
        Re-estimate reference -> j directly, starting from the composed field.
    cyclic : bool
        Also estimate the pair (T - 1, 0) (a whole cardiac cycle); the trajectory then runs
        forwards only.
    spacing : 3 floats, optional
        Voxel size, carried to the result (and to the pyramid).
    trajectory_dtype : dtype
        Storage of the trajectories (``float16`` halves the host memory of a long sequence;
        the composition itself runs in float32).
    device, progress
    prepared : list, optional
        :func:`prepare_pairs` of these frames with these parameters: the pairs it holds are
        only solved (it is not changed).
    backward : {"invert", "estimate"}
        The fields from frame k + 1 to k, for the trajectories to the frames before the
        reference: the inverse of pair k's field (no solve), or a new estimate with the frames
        swapped.
    out : ndarray, optional
        Host array (T - 1, 3, Z, Y, X) float32 the pair fields are written into (see
        :func:`host_buffer`); by default a new one.
    keep_on_device : bool
        Keep the pair fields on the device too (``on_device``, ``summary_grid``; while they fit
        :data:`KEEP_SHARE` of its free memory).
    **params
        Passed to :func:`~gpu_kernels.echo.motion.estimate_motion` (alpha, beta, rho, ...).
    """
    t0 = time.perf_counter()
    be = get_backend(device)
    progress = as_progress(progress)
    T = len(frames)
    if T < 2:
        raise EchoInputError(f"a sequence needs at least 2 frames, got {T}")
    ref = int(reference)
    if not -T <= ref < T:
        raise EchoInputError(f"reference frame {reference} does not exist: the sequence has {T} frames (0..{T - 1})")
    ref %= T
    if backward not in BACKWARDS:
        raise EchoInputError(f"unknown backward mode {backward!r}: use one of {', '.join(BACKWARDS)}")
    shape = tuple(frames[0].shape)
    for k in range(T):
        if tuple(frames[k].shape) != shape:
            raise EchoInputError(f"frame {k} is {tuple(frames[k].shape)} voxels but frame 0 is {shape}")
    npairs = T if cyclic else T - 1
    n_refine = (T - 1) if (trajectory and refine) else 0
    total = npairs + n_refine
    infos = []
    xp = be.xp
    if out is None:   # a one-shot call: no buffer made ahead for a next call (review A #10)
        pair = host_buffer((npairs, 3) + shape, device=be, how="numpy")
    elif out.shape != (npairs, 3) + shape or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise EchoInputError(f"out must be a C-contiguous float32 array of shape {(npairs, 3) + shape}")
    else:
        pair = out
    keep = keep_on_device and be.is_gpu and \
        pair.nbytes * (1 + 1 / 8) <= KEEP_SHARE * be.mem_info()[0]
    kept, grid = ([], []) if keep else (None, None)
    with be.activate():
        prev = None  # the frames go to the device only where a pair is estimated from them
        for k in range(npairs):
            sub = progress.sub(k / total, (k + 1) / total, f"pair {k + 1}/{npairs}")
            if prepared is not None and prepared[k] is not None:
                u, info = solve_motion(prepared[k], return_info=True, progress=sub,
                                       **{n: params[n] for n in SOLVE_KEYS if n in params})
                prev = None
            else:
                prev = xp.asarray(frames[k]) if prev is None else prev
                nxt = xp.asarray(frames[(k + 1) % T])
                u, info = estimate_motion(prev, nxt, spacing=spacing, device=be, return_info=True, progress=sub,
                                          **params)
                prev = nxt
            if be.is_gpu:
                xp.ascontiguousarray(u).get(out=pair[k])   # straight into the result: no temporary copy
                if keep:
                    kept.append(u)
                    grid.append(xp.ascontiguousarray(u[SUMMARY_GRID[1:]]))
            else:
                pair[k] = u
            infos.append(info.as_dict())
        traj = None
        if trajectory:
            traj = np.zeros((T,) + (3,) + shape, dtype=trajectory_dtype)
            # forwards: ref -> ref + 1 -> ... (cyclic: all the way round)
            cur = None
            stop = T if cyclic else T - ref
            for step in range(1, stop):
                j = (ref + step) % T
                pk = xp.asarray(pair[(j - 1) % T])
                cur = pk if cur is None else compose(cur, pk, device=be)
                traj[j] = asnumpy(cur)
            if not cyclic and ref > 0:
                # backwards: the field from k + 1 to k, pair k's inverted or estimated with the frames swapped
                cur = None
                for j in range(ref - 1, -1, -1):
                    if backward == "invert":
                        back = invert(xp.asarray(pair[j]), device=be)
                    else:
                        back, info = estimate_motion(xp.asarray(frames[j + 1]), xp.asarray(frames[j]),
                                                     spacing=spacing, device=be, return_info=True, **params)
                        infos.append(info.as_dict())
                    cur = back if cur is None else compose(cur, back, device=be)
                    traj[j] = asnumpy(cur)
            if refine:
                done = npairs
                for j in range(T):
                    if j == ref:
                        continue
                    u, info = estimate_motion(xp.asarray(frames[ref]), xp.asarray(frames[j]), spacing=spacing,
                                              initial_flow=xp.asarray(traj[j]), device=be, return_info=True,
                                              progress=progress.sub(done / total, (done + 1) / total,
                                                                    f"refine {ref}->{j}"), **params)
                    infos.append(info.as_dict())
                    traj[j] = asnumpy(u)
                    done += 1
    progress.update(1.0, "done")
    sp = (1.0, 1.0, 1.0) if spacing is None else tuple(float(s) for s in spacing)
    if keep and grid:
        with be.activate():
            grid = xp.stack(grid)
    return SequenceMotion(pair, traj, ref, sp, time.perf_counter() - t0, infos, kept, grid)


# ----------------------------------------------------------------------------- host memory
def _populated(shape, dtype) -> np.ndarray:
    """A new array whose every page is written (zeros): no page faults left for a download."""
    a = np.empty(shape, dtype)
    a.fill(0)   # NumPy lets other threads run meanwhile
    return a


_spare_lock = threading.Lock()
_spare: dict = {}
_spare_pending: set = set()
_spare_recent: list = []   # the kinds asked for, the latest last (at most SPARE_KINDS)


def _make_spare(key) -> None:
    try:
        a = _populated(*key[:2])
    except MemoryError:
        a = None
    with _spare_lock:
        _spare_pending.discard(key)
        if a is not None and key in _spare_recent:
            _spare[key] = a
        for k in [k for k in _spare if k not in _spare_recent]:
            del _spare[k]   # kept ahead only for the latest kinds asked for


def host_buffer(shape, dtype=np.float32, *, zero_rows: int = 0, device=None, how: str | None = None,
                tag: str | None = None) -> np.ndarray:
    """A new host array for fields that come down from the device (``how``, default
    :data:`HOST_ALLOC` for a GPU ``device`` and NumPy for the CPU; arrays under 1 MiB and over
    :data:`SPARE_MAX_BYTES` always NumPy's). The first ``zero_rows`` entries along axis 0 are
    zeros, the rest is to be written by the caller (its content is undefined).

    ``"spare"`` hands out a buffer written (zeros) ahead of time in a background thread, and
    starts the next one of the same kind: on the GPU hosts a fresh 25 MB array cost 8-10 ms of
    page faults while the download wrote it, against 1.7 ms into written pages
    (benchmarks/results/echo_live_session10.md); a live edit comes at least a debounce later, so
    the next buffer is ready by then. One buffer is kept ahead per kind (shape, dtype and
    ``tag``: callers that each want one of the same shape in one run give different tags), for
    the :data:`SPARE_KINDS` kinds asked for last. ``"numpy"``: ``np.empty``/``np.zeros`` (pages
    faulted in as the download writes them)."""
    shape = tuple(int(s) for s in shape)
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    if how is None:
        how = HOST_ALLOC if get_backend(device).is_gpu else "numpy"
    if how == "spare" and _HOST_ALLOC_MIN <= nbytes <= SPARE_MAX_BYTES:
        key = (shape, dtype.str) if tag is None else (shape, dtype.str, tag)
        with _spare_lock:
            if key in _spare_recent:
                _spare_recent.remove(key)
            _spare_recent.append(key)
            del _spare_recent[:-SPARE_KINDS]
            a = _spare.pop(key, None)
            start = key not in _spare_pending
            if start:
                _spare_pending.add(key)
        if start:
            threading.Thread(target=_make_spare, args=(key,), name="echo-host-buffer", daemon=True).start()
        if a is not None:
            return a
        return _populated(shape, dtype)
    return np.zeros(shape, dtype) if zero_rows else np.empty(shape, dtype)


_UPLOADS: dict = {}
_UPLOADS_LOCK = threading.Lock()
#: device bytes :func:`on_device` may keep for host arrays that are still alive. These copies are held
#: OUTSIDE the stage cache's device cap (app/tools/stage_cache.py): up to this much more device memory
#: while the loaded truth and masks live; they go when those arrays are gone, or at an out-of-memory
#: release (:func:`gpu_kernels.backend.on_release`), never for the cap (review A #11, session 10)
UPLOAD_CACHE_BYTES = 1 << 30


def on_device(a, device):
    """``a`` on ``device``, uploaded once while ``a`` is alive (a ground-truth field or mask that
    every live re-run's metrics read: 25 MB a pair at 128^3): the copy is kept until ``a`` is
    gone, memory runs short (:func:`gpu_kernels.backend.on_release`) or the kept copies would
    pass :data:`UPLOAD_CACHE_BYTES`. ``a`` must not change in place (inputs never do: the stage
    rules). ``None`` and arrays already on the device pass through; the CPU returns ``a``."""
    be = get_backend(device)
    if a is None or not be.is_gpu:
        return a
    if not isinstance(a, np.ndarray):  # already on the device (no copy), or not an array
        return be.asarray(a)
    key = (id(a), be.device_id)
    with _UPLOADS_LOCK:
        hit = _UPLOADS.get(key)
    if hit is not None and hit[0]() is a:
        return hit[1]
    d = be.asarray(a)
    with _UPLOADS_LOCK:
        if sum(v[1].nbytes for v in _UPLOADS.values()) + d.nbytes <= UPLOAD_CACHE_BYTES:
            _UPLOADS[key] = (weakref.ref(a, lambda _r, key=key: _forget(key)), d)
    return d


def _forget(key) -> None:
    with _UPLOADS_LOCK:
        _UPLOADS.pop(key, None)


def _release_uploads(_backend=None) -> None:
    with _UPLOADS_LOCK:
        _UPLOADS.clear()


on_release(_release_uploads)


# ----------------------------------------------------------------------------- the tool's stages
@dataclass
class PairFields:
    """Every consecutive pair's field as the tool's stages pass it on (``app.tools.echo``).

    ``buf``: the host fields; for two frames a (2, 3, Z, Y, X) array whose first entry is zero,
    so that it is also the trajectory from frame 0 (no copy), else (T - 1, 3, Z, Y, X).
    ``on_device``/``summary_grid``: as in :class:`SequenceMotion` (None where not kept).
    """

    buf: np.ndarray
    info: list
    lead_zero: bool = False
    on_device: list | None = None
    summary_grid: Any = None

    @property
    def host(self) -> np.ndarray:
        """(T - 1, 3, Z, Y, X) float32."""
        return self.buf[1:] if self.lead_zero else self.buf


def estimate_pairs(frames, *, prepared=None, spacing=None, device=None, progress=None, **params) -> PairFields:
    """The fields of every consecutive pair (:func:`estimate_sequence` without trajectories,
    kept on the device too while they fit), written where :func:`trajectories` finds them."""
    be = get_backend(device)
    T = len(frames)
    shape = (3,) + tuple(frames[0].shape)
    two = T == 2
    buf = host_buffer((T if two else T - 1,) + shape, zero_rows=1 if two else 0, device=be) if T >= 2 else None
    seq = estimate_sequence(frames, trajectory=False, spacing=spacing, device=be, progress=progress,
                            prepared=prepared, out=None if buf is None else buf[1:] if two else buf,
                            keep_on_device=True, **params)
    return PairFields(buf, list(seq.info), two, seq.on_device, seq.summary_grid)


def trajectories(pairs: PairFields, reference: int, *, device=None, progress=None) -> np.ndarray:
    """The trajectories from frame ``reference`` (0 <= reference < T), composed from the pair
    fields: forwards as they are, backwards each pair field inverted
    (:func:`~gpu_kernels.echo.maps.invert`). (T, 3, Z, Y, X), float32 for two frames (from frame
    0: ``pairs.buf`` itself), float16 for more (half the host memory). The array comes from
    :func:`host_buffer` (on a GPU: written ahead, so a live reference-1 edit at 128^3 does not
    fault 25-50 MB of fresh pages in) and float32 fields come down straight into it."""
    be = get_backend(device)
    progress = as_progress(progress)
    pair, dev = pairs.host, pairs.on_device
    T, ref, xp = len(pair) + 1, int(reference), be.xp
    if pairs.lead_zero and ref == 0:
        return pairs.buf
    # zero_rows=ref + 1: the reference's entry is zero; the ones before it are written below
    traj = host_buffer((T, 3) + pair.shape[2:], np.float32 if T == 2 else np.float16, zero_rows=ref + 1,
                       device=be, tag="trajectory")

    def field(k):
        return dev[k] if dev is not None else xp.asarray(pair[k])

    def put(j, u):
        if be.is_gpu and traj.dtype == u.dtype:
            xp.ascontiguousarray(u).get(out=traj[j])   # straight into the result: no temporary
        else:
            traj[j] = asnumpy(u)

    with be.activate():
        cur = None
        for j in range(ref + 1, T):
            if cur is None:
                cur = field(j - 1)
                traj[j] = pair[j - 1]
            else:
                cur = compose(cur, field(j - 1), device=be)
                put(j, cur)
        cur = None
        for j in range(ref - 1, -1, -1):
            progress.update((ref - 1 - j) / max(ref, 1), f"backwards {j + 1}->{j}")
            back = invert(field(j), device=be)
            cur = back if cur is None else compose(cur, back, device=be)
            put(j, cur)
    return traj
