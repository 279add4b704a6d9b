"""Issue 20, echo: an edit of ``rho`` or ``derivative`` makes the structure tensors again and
keeps the pyramids (they re-ran the pyramids too, in one "pyramids and tensors" stage); the
result equals a full run with the same parameters."""

from __future__ import annotations

import numpy as np
import pytest

from app.tools import echo
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.echo.synthetic import make_pair

CPU = get_backend("cpu")
FAST = {"levels": 2, "warps": 1, "iters": 5}


@pytest.fixture(scope="module")
def data():
    f, m, gt = make_pair(16, shift=(0.5, -0.5, 0.5), seed=2)
    return echo.EchoData(np.stack([f, m]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})


def _same(a, b):
    np.testing.assert_array_equal(a.pairwise, b.pairwise)
    np.testing.assert_array_equal(a.trajectory, b.trajectory)
    assert a.metrics == b.metrics and a.stats == b.stats


def test_rho_and_derivative_keep_the_pyramids(data):
    assert echo.PIPELINE.affected("rho")[0] == "tensors"
    assert echo.PIPELINE.affected("derivative")[0] == "tensors"
    assert echo.PIPELINE.affected("sigma")[0] == echo.PIPELINE.affected("levels")[0] == "prepare"
    cache = StageCache(cap_bytes=64 << 20)
    _r, rep = echo.TOOL.run_staged(data, FAST, device=CPU, cache=cache)
    assert rep.ran == ["prepare", "tensors", "pairs", "trajectory", "metrics"]
    p = dict(FAST)
    for change in ({"rho": 2.5}, {"derivative": "forward"}, {"rho": 1.5}):
        p.update(change)
        r, rep = echo.TOOL.run_staged(data, p, device=CPU, cache=cache)
        assert rep.ran == ["tensors", "pairs", "trajectory", "metrics"] and rep.reused == ["prepare"], (change, rep)
        _same(r, echo.run(data, p, device=CPU))
    p["sigma"] = 0.5                     # a pyramid parameter: everything again
    r, rep = echo.TOOL.run_staged(data, p, device=CPU, cache=cache)
    assert rep.ran[0] == "prepare"
    _same(r, echo.run(data, p, device=CPU))
    r, rep = echo.TOOL.run_staged(data, {**p, "alpha": 0.05}, device=CPU, cache=cache)   # the solver alone
    assert rep.ran == ["pairs", "trajectory", "metrics"] and rep.reused == ["prepare", "tensors"]


def test_with_tensors_gives_the_arrays_of_one_preparation(data):
    from gpu_kernels.echo import motion

    f, m = data.frames
    whole = motion.prepare_motion(f, m, rho=2.0, derivative="forward", levels=2, device=CPU)
    pyr = motion.prepare_motion(f, m, levels=2, tensors=False, device=CPU)
    assert all(t is None for t in pyr.tensors)
    split = motion.with_tensors(pyr, rho=2.0, derivative="forward")
    assert all(t is None for t in pyr.tensors)        # left as it was
    assert split.rho == whole.rho and split.derivative == "forward" and split.fixed is pyr.fixed
    for a, b in zip(split.tensors, whole.tensors, strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(motion.EchoInputError, match="rho"):
        motion.with_tensors(pyr, rho=-1.0)


@pytest.mark.gpu
def test_rho_edit_on_the_gpu_keeps_the_pyramids_and_equals_a_full_run(data):
    from gpu_kernels.echo import motion

    gpu = get_backend("cuda")
    f, m = data.frames
    whole = motion.prepare_motion(f, m, rho=2.0, levels=2, device=gpu)
    split = motion.with_tensors(motion.prepare_motion(f, m, levels=2, tensors=False, device=gpu), rho=2.0)
    for a, b in zip(split.tensors, whole.tensors, strict=True):
        np.testing.assert_array_equal(a.get(), b.get())
    cache = StageCache(cap_bytes=256 << 20)
    echo.TOOL.run_staged(data, FAST, device=gpu, cache=cache)
    r, rep = echo.TOOL.run_staged(data, {**FAST, "rho": 2.5}, device=gpu, cache=cache)
    assert rep.ran == ["tensors", "pairs", "trajectory", "metrics"]
    _same(r, echo.run(data, {**FAST, "rho": 2.5}, device=gpu))
