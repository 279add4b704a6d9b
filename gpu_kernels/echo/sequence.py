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

import time
from dataclasses import dataclass, field

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.echo.maps import compose, invert
from gpu_kernels.echo.motion import PREPARE_KEYS, SOLVE_KEYS, estimate_motion, prepare_motion, solve_motion
from gpu_kernels.jobs import as_progress

__all__ = ["SequenceMotion", "estimate_sequence", "prepare_pairs", "add_tensors", "BACKWARDS"]

#: how the fields from frame k + 1 to k are made for the frames before the reference
BACKWARDS = ("invert", "estimate")

#: share of the device's free memory (of the host's, on the CPU: at most 2 GiB) that
#: :func:`prepare_pairs` fills; the pairs beyond it are prepared again by each solve
PREPARED_SHARE = 0.25


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
                      prepared=None, backward: str = "invert", **params) -> SequenceMotion:
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
    pair = np.empty((npairs, 3) + shape, dtype=np.float32)
    with be.activate():
        prev = xp.asarray(frames[0])
        for k in range(npairs):
            nxt = xp.asarray(frames[(k + 1) % T])
            sub = progress.sub(k / total, (k + 1) / total, f"pair {k + 1}/{npairs}")
            if prepared is not None and prepared[k] is not None:
                u, info = solve_motion(prepared[k], return_info=True, progress=sub,
                                       **{n: params[n] for n in SOLVE_KEYS if n in params})
            else:
                u, info = estimate_motion(prev, nxt, spacing=spacing, device=be, return_info=True, progress=sub,
                                          **params)
            pair[k] = asnumpy(u)
            infos.append(info.as_dict())
            prev = nxt
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
    return SequenceMotion(pair, traj, ref, sp, time.perf_counter() - t0, infos)
