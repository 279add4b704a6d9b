"""The estimate split in two (issues 20 and 24): the pyramids and spatial tensors, which the
solver's parameters do not change, prepared once; the solver run on them, with the same result
as a whole estimate; the half-precision system; the pipeline's stages in the tool."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.echo import (
    EchoInputError,
    _cpu,
    endpoint_error,
    estimate_motion,
    prepare_motion,
    solve_motion,
)
from gpu_kernels.echo.sequence import estimate_sequence, prepare_pairs
from gpu_kernels.echo.synthetic import make_pair


@pytest.fixture(scope="module")
def pair():
    return make_pair(24, shift=(0.7, -0.5, 0.9), seed=5)


def _copy(prep):
    return [np.array(a) for a in (*prep.fixed, *prep.moving, *prep.tensors)]


def test_solving_a_prepared_pair_equals_the_whole_estimate_and_leaves_it_unchanged(pair):
    f, m, _gt = pair
    prep = prepare_motion(f, m, device="cpu", levels=2)
    before = _copy(prep)
    for alpha, beta in ((0.02, 0.02), (0.08, 0.0)):
        u, info = solve_motion(prep, alpha=alpha, beta=beta, return_info=True)
        ref, rinfo = estimate_motion(f, m, device="cpu", levels=2, alpha=alpha, beta=beta, return_info=True)
        np.testing.assert_array_equal(u, ref)
        assert info.sweeps == rinfo.sweeps and info.levels == rinfo.levels
    after = _copy(prep)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
    assert len(prep.tensors) == 2 and prep.tensors[0].shape == (6, 24, 24, 24)


def test_the_spatial_tensor_is_the_first_six_channels_of_the_full_one(pair):
    f, m, _gt = pair
    u = np.random.default_rng(0).standard_normal((3,) + f.shape).astype(np.float32)
    full = _cpu.tensor(f.astype(np.float32), m.astype(np.float32), u)
    np.testing.assert_array_equal(_cpu.tensor(f.astype(np.float32), None, None, parts=1), full[:6])
    np.testing.assert_array_equal(_cpu.tensor(f.astype(np.float32), m.astype(np.float32), u, parts=2), full[6:])


def test_half_precision_system_keeps_the_accuracy(pair):
    f, m, gt = pair
    u32 = estimate_motion(f, m, device="cpu", levels=2, precision="float32")
    u16 = estimate_motion(f, m, device="cpu", levels=2)                     # the default
    e32, e16 = endpoint_error(u32, gt)["mean"], endpoint_error(u16, gt)["mean"]
    assert abs(e16 - e32) < 0.01 and np.abs(u16 - u32).max() < 0.05, (e32, e16)
    assert not np.array_equal(u16, u32)          # it does round
    with pytest.raises(EchoInputError, match="precision"):
        estimate_motion(f, m, device="cpu", precision="float8")


def test_half_rounding_matches_numpy_and_clamps():
    a = np.array([1.0, 1.0 + 2 ** -11, 70000.0, -1e9, 3e-8], np.float32)
    _cpu.to_half(a)
    assert a[0] == 1.0 and a[1] == 1.0 and a[2] == 65504.0 and a[3] == -65504.0   # ties to even, clamped
    assert a.dtype == np.float32


def test_sequence_with_prepared_pairs_and_a_memory_budget(monkeypatch):
    from gpu_kernels.echo import sequence

    f, m, _gt = make_pair(20, shift=(0.5, 0.3, -0.4), seed=6)
    frames = np.stack([f, m, f])
    kw = dict(levels=1, warps=1, iters=4)
    ref = estimate_sequence(frames, device="cpu", trajectory=False, **kw).pairwise
    prep = prepare_pairs(frames, device="cpu", **kw)
    assert len(prep) == 2 and all(p is not None for p in prep)
    got = estimate_sequence(frames, device="cpu", trajectory=False, prepared=prep, **kw).pairwise
    np.testing.assert_array_equal(got, ref)
    monkeypatch.setattr(sequence, "PREPARED_SHARE", 1e-12)      # room for the first pair only
    prep = prepare_pairs(frames, device="cpu", **kw)
    assert prep[0] is not None and prep[1] is None
    got = estimate_sequence(frames, device="cpu", trajectory=False, prepared=prep, **kw).pairwise
    np.testing.assert_array_equal(got, ref)


def test_tool_alpha_change_reuses_the_pyramids_and_tensors():
    from app.tools import echo
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    cpu = get_backend("cpu")
    f, m, gt = make_pair(16, shift=(0.5, -0.5, 0.5), seed=2)
    data = echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})
    cache = StageCache(cap_bytes=64 << 20)
    fast = {"levels": 2, "warps": 1, "iters": 5}
    echo.TOOL.run_staged(data, fast, device=cpu, cache=cache)
    for change in ({"alpha": 0.05}, {"beta": 0.1}, {"iters": 7}, {"precision": "float32"}, {"omega": 1.5}):
        r, rep = echo.TOOL.run_staged(data, {**fast, **change}, device=cpu, cache=cache)
        assert rep.ran == ["pairs", "trajectory", "metrics"] and "prepare" in rep.reused, (change, rep.ran)
        full = echo.run(data, {**fast, **change}, device=cpu)
        np.testing.assert_array_equal(r.pairwise, full.pairwise)
        assert r.metrics == full.metrics and r.stats == full.stats
    r, rep = echo.TOOL.run_staged(data, {**fast, "rho": 2.0}, device=cpu, cache=cache)
    assert rep.ran[0] == "tensors"      # the pyramids are kept (issue 20)
    assert echo.PIPELINE.affected("alpha") == ["pairs", "trajectory", "metrics"]
    assert echo.PIPELINE.affected("rho")[0] == "tensors"
