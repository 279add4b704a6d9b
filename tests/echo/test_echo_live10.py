"""Session 10's live α edit: the pair fields go to the host once, straight into the result
(for two frames that array is also the trajectory from frame 0), stay on the device for the
trajectories, the summary and the metrics, and every number equals the path they replace."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from app.tools import echo
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.echo import maps, sequence
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.echo.synthetic import make_pair, make_sequence

CPU = get_backend("cpu")
KW = {"levels": 1, "warps": 1, "iters": 5}


@pytest.fixture(scope="module")
def pair_data():
    f, m, gt = make_pair(16, shift=(0.5, -0.5, 0.5), seed=2)
    return echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})


@pytest.mark.parametrize("how", ["numpy", "spare"])
def test_host_buffer_zero_rows_and_written_rows(how):
    a = sequence.host_buffer((3, 3, 64, 64, 32), zero_rows=1, how=how)
    assert a.shape == (3, 3, 64, 64, 32) and a.dtype == np.float32 and a.flags.c_contiguous and a.flags.writeable
    assert not a[0].any()
    a[1:] = 7.0
    view = a[1:]
    del a
    gc.collect()
    assert (view == 7.0).all()          # the view keeps the buffer alive


def test_spare_buffers_are_made_ahead_and_handed_out_once():
    shape = (2, 3, 40, 40, 40)
    first = sequence.host_buffer(shape, zero_rows=1, how="spare")
    for t in threading.enumerate():     # the next one is being made in the background
        if t.name == "echo-host-buffer":
            t.join()
    with sequence._spare_lock:
        ahead = sequence._spare.get((shape, np.dtype(np.float32).str))
    assert ahead is not None
    second = sequence.host_buffer(shape, zero_rows=1, how="spare")
    assert second is ahead and not np.shares_memory(first, second) and not second.any()
    with sequence._spare_lock:           # handed out once: never given to a second caller
        assert sequence._spare.get((shape, np.dtype(np.float32).str)) is not second
    big = sequence.host_buffer((sequence.SPARE_MAX_BYTES // 4 + 1,), how="spare")
    assert big.shape == (sequence.SPARE_MAX_BYTES // 4 + 1,)   # too large to keep ahead: NumPy's


def test_two_frames_share_the_pair_buffer_and_equal_the_sequence_path(pair_data):
    cache = StageCache()
    p = echo.PARAMS.validate(KW)
    res, _ = echo.TOOL.run_staged(pair_data, p, device=CPU, cache=cache)
    assert np.shares_memory(res.trajectory, res.pairwise) and not res.trajectory[0].any()
    seq = sequence.estimate_sequence(pair_data.frames, device=CPU, **KW)
    np.testing.assert_array_equal(res.pairwise, seq.pairwise)
    np.testing.assert_array_equal(res.trajectory, seq.trajectory)
    assert res.stats == maps.motion_stats(seq.pairwise, seq.trajectory, pair_data.spacing, device=CPU)
    res1, rep = echo.TOOL.run_staged(pair_data, {**p, "reference": 1}, device=CPU, cache=cache)
    assert rep.ran == ["trajectory"] and not np.shares_memory(res1.trajectory, res1.pairwise)
    seq1 = sequence.estimate_sequence(pair_data.frames, reference=1, device=CPU, **KW)
    np.testing.assert_array_equal(res1.trajectory, seq1.trajectory)
    # the cached two-frame buffer was not written by the reference edit
    res0, rep = echo.TOOL.run_staged(pair_data, p, device=CPU, cache=cache)
    assert rep.ran == [] and not res0.trajectory[0].any()   # from the cache
    np.testing.assert_array_equal(res0.trajectory, res.trajectory)


@pytest.mark.parametrize("ref", [0, 2, 3])
def test_trajectories_equal_estimate_sequence(ref):
    seq = make_sequence(16, frames=4, seed=5)
    pairs = sequence.estimate_pairs(seq.frames, device=CPU, **KW)
    assert not pairs.lead_zero and pairs.on_device is None
    want = sequence.estimate_sequence(seq.frames, reference=ref, trajectory_dtype=np.float16, device=CPU, **KW)
    np.testing.assert_array_equal(pairs.host, want.pairwise)
    np.testing.assert_array_equal(sequence.trajectories(pairs, ref, device=CPU), want.trajectory)


def test_summary_from_the_kept_grid_equals_the_host_path():
    rng = np.random.default_rng(3)
    pair = rng.normal(size=(3, 3, 10, 12, 14)).astype(np.float32)
    traj = rng.normal(size=(4, 3, 10, 12, 14)).astype(np.float16)
    grid = np.ascontiguousarray(pair[maps.SUMMARY_GRID])
    assert maps.motion_stats(pair, traj, (1.0, 2.0, 0.5), pair_grid=grid) == maps.motion_stats(pair, traj, (1.0, 2.0, 0.5))


def test_estimate_sequence_checks_out(pair_data):
    with pytest.raises(EchoInputError, match="out must be"):
        sequence.estimate_sequence(pair_data.frames, device=CPU, out=np.empty((1, 3, 8, 8, 8), np.float32), **KW)
    out = np.empty((1, 3) + pair_data.shape, np.float32)
    seq = sequence.estimate_sequence(pair_data.frames, trajectory=False, device=CPU, out=out, **KW)
    assert seq.pairwise is out


# ----------------------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_alpha_edit_on_gpu_keeps_the_fields_and_equals_a_full_run(pair_data):
    be = get_backend("cuda")
    cache = StageCache()
    p = echo.PARAMS.validate(KW)
    echo.TOOL.run_staged(pair_data, p, device=be, cache=cache)
    p = {**p, "alpha": 0.05}
    res, rep = echo.TOOL.run_staged(pair_data, p, device=be, cache=cache)
    assert rep.ran == ["pairs", "trajectory", "metrics"]
    full = echo.run(pair_data, p, device=be)
    for a, b in ((res.pairwise, full.pairwise), (res.trajectory, full.trajectory)):
        assert isinstance(a, np.ndarray) and np.array_equal(a, b)
    assert res.stats == full.stats and res.metrics == full.metrics
    assert np.shares_memory(res.trajectory, res.pairwise)
    # the numbers equal the host path's (fields uploaded again, as before session 10)
    assert res.stats == maps.motion_stats(res.pairwise, res.trajectory, pair_data.spacing, device=be)
    want = maps.pair_metrics(res.pairwise[0], pair_data.truth[(0, 1)], None, pair_data.spacing, device=be)
    assert all(res.metrics[k] == v for k, v in want.items())
    pairs = sequence.estimate_pairs(pair_data.frames, device=be, **{**KW, "alpha": 0.05})
    assert pairs.on_device is not None and np.array_equal(pairs.on_device[0].get(), pairs.host[0])
    assert np.array_equal(pairs.summary_grid.get(), pairs.host[maps.SUMMARY_GRID])
    np.testing.assert_array_equal(pairs.host, res.pairwise)


@pytest.mark.gpu
@pytest.mark.parametrize("how", ["numpy", "spare", None])
def test_host_buffers_take_the_download_on_gpu(how):
    cp = get_backend("cuda").xp
    for _ in range(3):
        u = cp.random.random((3, 64, 64, 64), dtype=cp.float32)
        buf = sequence.host_buffer((2, 3, 64, 64, 64), zero_rows=1, device="cuda", how=how)
        u.get(out=buf[1])
        assert not buf[0].any() and np.array_equal(buf[1], u.get())


@pytest.mark.gpu
def test_on_device_uploads_once_while_the_array_lives():
    be = get_backend("cuda")
    a = np.arange(1000, dtype=np.float32)
    d1, d2 = sequence.on_device(a, be), sequence.on_device(a, be)
    assert d1 is d2 and np.array_equal(d1.get(), a)
    key = (id(a), be.device_id)
    assert key in sequence._UPLOADS
    del a
    gc.collect()
    assert key not in sequence._UPLOADS
    assert sequence.on_device(None, be) is None and sequence.on_device(d1, be) is d1


def _stats_one_read_at_a_time(pair, traj, spacing):
    """maps.motion_stats as it was before session 10 (each number read on its own)."""
    sub = maps.SUMMARY_GRID
    spv = np.asarray(spacing, np.float32).reshape(1, 3, 1, 1, 1)
    pw = np.ascontiguousarray(pair[sub]).astype(np.float32)
    mag = np.sqrt((pw ** 2).sum(axis=1))
    mag_mm = np.sqrt(((pw * spv) ** 2).sum(axis=1))
    q = np.percentile(np.stack([mag.ravel(), mag_mm.ravel()]), 99, axis=1)
    out = {"mean_vox": float(mag.mean()), "p99_vox": float(q[0]), "mean_mm": float(mag_mm.mean()), "p99_mm": float(q[1])}
    if len(traj) > 2:
        tr = np.ascontiguousarray(traj[sub]).astype(np.float32)
        p99 = np.percentile(np.sqrt(((tr * spv) ** 2).sum(axis=1)).reshape(len(tr), -1), 99, axis=1)
        k = int(np.argmax(p99))
        out.update(traj_frame=k, traj_p99_mm=float(p99[k]))
    dq = np.percentile(maps.jacobian_determinant(pw[0] / 2.0), np.asarray([1.0, 99.0]))
    out.update(det_p1=float(dq[0]), det_p99=float(dq[1]))
    return out


@pytest.mark.parametrize("frames", [2, 4])
def test_summary_in_one_read_equals_each_number_read_alone(frames):
    rng = np.random.default_rng(frames)
    pair = rng.normal(size=(frames - 1, 3, 10, 12, 14)).astype(np.float32)
    traj = rng.normal(size=(frames, 3, 10, 12, 14)).astype(np.float16 if frames > 2 else np.float32)
    got = maps.motion_stats(pair, traj, (1.0, 2.0, 0.5))
    want = _stats_one_read_at_a_time(pair, traj, (1.0, 2.0, 0.5))
    assert got == want and list(got) == list(want)
