"""Session 11 (echo-gap): a live edit from a reference other than frame 0 takes its trajectory
array from the host buffers written ahead (a kind of its own beside the pair fields) and the
fields come down straight into it; every number equals the path it replaces."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from echo_trajectories_old import old_trajectories  # the one frozen copy of the pre-session-11 path

from gpu_kernels.backend import get_backend
from gpu_kernels.echo import sequence
from gpu_kernels.echo.synthetic import make_sequence

KW = {"levels": 1, "warps": 1, "iters": 5}


def _join_spares():
    for t in threading.enumerate():
        if t.name == "echo-host-buffer":
            t.join()


def _kept(key):
    with sequence._spare_lock:
        return sequence._spare.get(key)


def test_spare_kinds_are_kept_apart_and_the_oldest_dropped():
    s1, s2 = (2, 3, 41, 40, 40), (2, 3, 43, 40, 40)
    k_pairs, k_traj, k_other = (s1, "<f4"), (s1, "<f4", "trajectory"), (s2, "<f4")
    a = sequence.host_buffer(s1, zero_rows=1, how="spare")
    b = sequence.host_buffer(s1, zero_rows=2, how="spare", tag="trajectory")
    assert not a.any() and not b.any() and not np.shares_memory(a, b)
    _join_spares()
    ahead_pairs, ahead_traj = _kept(k_pairs), _kept(k_traj)
    assert ahead_pairs is not None and ahead_traj is not None and ahead_pairs is not ahead_traj
    # each kind hands out its own buffer, once
    assert sequence.host_buffer(s1, how="spare", tag="trajectory") is ahead_traj
    assert sequence.host_buffer(s1, how="spare") is ahead_pairs
    _join_spares()
    assert _kept(k_pairs) is not ahead_pairs and _kept(k_traj) is not ahead_traj
    # a third kind: only the SPARE_KINDS kinds asked for last (the pairs' and this) keep one ahead
    assert sequence.SPARE_KINDS == 2
    sequence.host_buffer(s2, how="spare")
    _join_spares()
    assert _kept(k_other) is not None and _kept(k_pairs) is not None and _kept(k_traj) is None


@pytest.mark.parametrize("n_frames", [2, 4])
def test_trajectories_equal_the_old_path_on_the_cpu(n_frames):
    be = get_backend("cpu")
    frames = np.asarray(make_sequence(16, frames=n_frames, seed=3).frames, np.float32)
    pairs = sequence.estimate_pairs(frames, device=be, **KW)
    for ref in range(n_frames):
        new, old = sequence.trajectories(pairs, ref, device=be), old_trajectories(pairs, ref, device=be)
        assert new.dtype == old.dtype and np.array_equal(new, old)
        assert not new[ref].any()


@pytest.mark.gpu
@pytest.mark.parametrize("n_frames", [2, 3])
def test_trajectories_on_gpu_take_a_buffer_made_ahead_and_equal_the_old_path(n_frames):
    be = get_backend("cuda")
    frames = np.asarray(make_sequence(48, frames=n_frames, seed=4).frames, np.float32)
    pairs = sequence.estimate_pairs(frames, device=be, **KW)
    assert pairs.on_device is not None
    assert n_frames * 3 * 48 ** 3 * (4 if n_frames == 2 else 2) >= sequence._HOST_ALLOC_MIN   # large enough
    for ref in range(1, n_frames):
        old = old_trajectories(pairs, ref, device=be)
        first = sequence.trajectories(pairs, ref, device=be)
        _join_spares()
        key = ((n_frames, 3) + frames.shape[1:], "<f4" if n_frames == 2 else "<f2", "trajectory")
        ahead = _kept(key)
        assert ahead is not None and not ahead.any()
        second = sequence.trajectories(pairs, ref, device=be)
        assert second is ahead                      # the buffer written ahead, handed out once
        for t in (first, second):
            assert t.dtype == old.dtype and np.array_equal(t, old) and not t[ref].any()
            assert not np.shares_memory(t, pairs.buf)
        assert not np.shares_memory(first, second)
