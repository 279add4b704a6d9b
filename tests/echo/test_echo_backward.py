"""Trajectories to the frames before the reference (issue 20): the pair fields inverted
(:func:`gpu_kernels.echo.maps.invert`) instead of new estimates with the frames swapped, so a
reference edit in the window only composes the cached pair fields; and the kernel variant, a
solve parameter, re-uses the prepared pyramids and tensors."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.echo import EchoInputError, compose, endpoint_error, estimate_sequence, invert
from gpu_kernels.echo.synthetic import make_pair, make_sequence


def _affine_field(A, shape=(16, 18, 20)):
    c = np.array([(n - 1) / 2.0 for n in shape]).reshape(3, 1, 1, 1)
    g = np.stack(np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing="ij")) - c
    return np.einsum("ij,j...->i...", np.asarray(A) - np.eye(3), g).astype(np.float32)


def test_invert_gives_the_inverse_affine_map():
    A = np.array([[1.06, 0.03, 0.0], [0.0, 0.95, 0.04], [0.02, 0.0, 1.03]])
    u = _affine_field(A)
    v = invert(u)
    want = _affine_field(np.linalg.inv(A))
    inner = (slice(None), slice(3, -3), slice(3, -3), slice(3, -3))  # clamped near the faces
    np.testing.assert_allclose(v[inner], want[inner], atol=2e-3)
    # v undoes u: "v, then u" is zero where v stays inside the volume
    assert float(np.abs(compose(v, u)[inner]).max()) < 1e-3
    assert v.dtype == np.float32 and v.shape == u.shape


def test_invert_rejects_bad_input():
    with pytest.raises(EchoInputError, match="shape"):
        invert(np.zeros((2, 4, 4, 4), np.float32))
    with pytest.raises(EchoInputError, match="iters"):
        invert(np.zeros((3, 4, 4, 4), np.float32), iters=0)
    bad = np.zeros((3, 4, 4, 4), np.float32)
    bad[0, 1, 1, 1] = np.nan
    with pytest.raises(EchoInputError, match="NaN"):
        invert(bad)


@pytest.mark.slow
def test_inverted_backward_trajectories_are_as_accurate_as_new_estimates():
    """On a synthetic beating ventricle with exact motion, reference at end-systole: the
    trajectories to the earlier frames from inverted pair fields are within 10 % of those
    from backward estimates (measured at 40^3: benchmarks/results/echo_session3_backward.md)."""
    seq = make_sequence(24, frames=4, seed=1, dtype="float32")
    kw = dict(levels=2, reference=2, device="cpu")
    inv = estimate_sequence(seq.frames, backward="invert", **kw)
    est = estimate_sequence(seq.frames, backward="estimate", **kw)
    np.testing.assert_array_equal(inv.pairwise, est.pairwise)
    np.testing.assert_array_equal(inv.trajectory[2:], est.trajectory[2:])  # forwards: the same composition
    for j in (0, 1):
        gt = seq.displacement(2, j)
        e_inv = endpoint_error(inv.trajectory[j], gt)["mean"]
        e_est = endpoint_error(est.trajectory[j], gt)["mean"]
        assert e_inv <= 1.1 * e_est + 0.01, (j, e_inv, e_est)
        assert e_inv < 0.5 * float(np.sqrt((gt ** 2).sum(0)).mean()) + 0.05  # it did follow the motion
    assert len(est.info) == len(inv.info) + 2  # the estimates are extra solves
    with pytest.raises(EchoInputError, match="backward"):
        estimate_sequence(seq.frames, backward="swap", **kw)


def _data(n_frames=3):
    from app.tools import echo

    seq = make_sequence(16, frames=n_frames, seed=3, dtype="float32")
    return echo.EchoData(np.asarray(seq.frames, np.float32), (1.0, 1.0, 1.0), [f"t{k}" for k in range(n_frames)])


def test_reference_edit_composes_the_cached_pair_fields_without_a_solve(monkeypatch):
    from app.tools import echo
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo import motion

    cpu = get_backend("cpu")
    data = _data(3)
    fast = {"levels": 1, "warps": 1, "iters": 5}
    cache = StageCache(cap_bytes=64 << 20)
    r0, rep = echo.TOOL.run_staged(data, fast, device=cpu, cache=cache)
    assert rep.ran == ["prepare", "tensors", "pairs", "trajectory", "metrics"]

    def no_solve(*a, **k):
        raise AssertionError("a reference edit must not estimate motion")

    with monkeypatch.context() as mp:
        for name in ("estimate_motion", "solve_motion", "prepare_motion", "_solve"):
            mp.setattr(motion, name, no_solve)
        for ref in (2, 1, -1):
            r, rep = echo.TOOL.run_staged(data, {**fast, "reference": ref}, device=cpu, cache=cache)
            assert rep.ran == ["trajectory"], (ref, rep.ran)
            assert r.pairwise is r0.pairwise or np.array_equal(r.pairwise, r0.pairwise)
    # the summary gives the pairs' own solve time, not this short run's as if it had solved them
    solved = [ln for ln in echo.summary(r) if "solved in" in ln]
    assert len(solved) == 1 and "from the cache" in solved[0], solved
    assert "from the cache" not in next(ln for ln in echo.summary(r0) if "solved in" in ln)
    for ref in (2, 1):
        r, _ = echo.TOOL.run_staged(data, {**fast, "reference": ref}, device=cpu, cache=cache)
        full = echo.run(data, {**fast, "reference": ref}, device=cpu)
        assert r.reference == full.reference == ref
        np.testing.assert_array_equal(r.trajectory, full.trajectory)
        np.testing.assert_array_equal(r.pairwise, full.pairwise)
        assert r.stats == full.stats
        assert not np.abs(r.trajectory[ref]).any()                 # zero at the reference
        assert np.abs(r.trajectory[0].astype(np.float32)).max() > 0.05  # the earlier frames moved
    assert echo.PIPELINE.affected("reference") == ["trajectory"]


def test_variant_edit_reuses_the_pyramids_and_tensors():
    from app.tools import echo
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    cpu = get_backend("cpu")
    f, m, gt = make_pair(16, shift=(0.5, -0.5, 0.5), seed=2)
    data = echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})
    fast = {"levels": 2, "warps": 1, "iters": 5}
    cache = StageCache(cap_bytes=64 << 20)
    echo.TOOL.run_staged(data, fast, device=cpu, cache=cache)
    r, rep = echo.TOOL.run_staged(data, {**fast, "variant": "smem"}, device=cpu, cache=cache)
    assert rep.ran == ["pairs", "trajectory", "metrics"] and rep.reused == ["prepare", "tensors"], rep.ran
    full = echo.run(data, {**fast, "variant": "smem"}, device=cpu)
    np.testing.assert_array_equal(r.pairwise, full.pairwise)
    assert echo.PIPELINE.affected("variant")[0] == "pairs"
    assert "variant" not in echo.PIPELINE.stage("prepare").params


def test_solve_motion_takes_the_variant_and_checks_it():
    from gpu_kernels.echo import prepare_motion, solve_motion

    f, m, _ = make_pair(16, shift=(0.5, 0.0, 0.5), seed=4)
    prep = prepare_motion(f, m, device="cpu", levels=1)
    assert prep.variant == "cache"
    _u, info = solve_motion(prep, variant="smem", iters=3, warps=1, return_info=True)
    assert info.variant == "cpu"  # the CPU has one path
    with pytest.raises(EchoInputError, match="variant"):
        solve_motion(prep, variant="tiles", iters=3, warps=1)
