"""The one frozen copy of ``gpu_kernels.echo.sequence.trajectories`` as it was at the start of
session 11 (a fresh ``np.zeros`` trajectory array, each field downloaded to a temporary and copied
in): the old-path reference of tests/echo/test_echo_gap11.py and of
benchmarks/echo_gap11_probe.py (its ``old`` and ``outside_old`` modes), which imports it from here.

Frozen on purpose: do not update it with the library; it is what the new path is compared with."""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.echo.maps import compose, invert
from gpu_kernels.jobs import as_progress


def old_trajectories(pairs, reference, *, device=None, progress=None):
    """``sequence.trajectories(pairs, reference, device=, progress=)`` before session 11."""
    be = get_backend(device)
    progress = as_progress(progress)
    pair, dev = pairs.host, pairs.on_device
    T, ref, xp = len(pair) + 1, int(reference), be.xp
    if pairs.lead_zero and ref == 0:
        return pairs.buf
    traj = np.zeros((T, 3) + pair.shape[2:], dtype=np.float32 if T == 2 else np.float16)

    def field(k):
        return dev[k] if dev is not None else xp.asarray(pair[k])

    with be.activate():
        cur = None
        for j in range(ref + 1, T):
            if cur is None:
                cur = field(j - 1)
                traj[j] = pair[j - 1]
            else:
                cur = compose(cur, field(j - 1), device=be)
                traj[j] = asnumpy(cur)
        cur = None
        for j in range(ref - 1, -1, -1):
            progress.update((ref - 1 - j) / max(ref, 1), f"backwards {j + 1}->{j}")
            back = invert(field(j), device=be)
            cur = back if cur is None else compose(cur, back, device=be)
            traj[j] = asnumpy(cur)
    return traj
