"""A share of the progress bar off by rounding alone never stops a run (session 30).

Found on the H200's Python 3.12: the flow tool's staged run stopped with "sub-range must satisfy 0 <= start <= stop
<= 1, got 0.976..., 1.0000000000000002". ``Pipeline.execute`` divides a running ``+=`` of the stages' weights by
their ``sum``, and Python 3.12's ``sum`` of floats is compensated, so the last stage's end can come out a few ulps
above 1 (on 3.11, as on the development box and CI, both sums agree). ``Progress.sub`` now clamps bounds within
``jobs.SUB_SLACK`` of the range and still refuses a real misuse."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.tools.stages import Pipeline, Stage
from gpu_kernels import jobs
from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import Progress


def test_bounds_off_by_rounding_are_clamped():
    seen = []
    Progress(lambda f, s: seen.append(f), min_interval=0).sub(0.97, 1.0000000000000002).update(1.0, "end")
    Progress(lambda f, s: seen.append(f), min_interval=0).sub(-1e-15, 0.5).update(0.0, "start")
    assert seen == [1.0, 0.0]


@pytest.mark.parametrize("bad", [(0.6, 0.4), (-0.1, 0.2), (0.2, 1.01), (0.5, 1.0 + 10 * jobs.SUB_SLACK)])
def test_a_real_misuse_is_still_refused(bad):
    with pytest.raises(ValueError, match="sub-range must satisfy"):
        Progress().sub(*bad)


def test_a_pipeline_whose_weights_sum_differently_runs(monkeypatch):
    """Python 3.12's compensated ``sum`` (emulated here by ``math.fsum`` in the module, so that the case runs on
    every Python): the weights 0.1, 0.2 and 0.3 sum to 0.6, their running sum to 0.6000000000000001."""
    import app.tools.stages as st

    assert 0.1 + 0.2 + 0.3 > math.fsum([0.1, 0.2, 0.3])
    monkeypatch.setattr(st, "sum", lambda it, start=0: math.fsum(list(it)) + start, raising=False)
    stages = [Stage("a", lambda ctx: 1, weight=0.1), Stage("b", lambda ctx: ctx["a"] + 1, weight=0.2),
              Stage("c", lambda ctx: ctx["b"] + 1, weight=0.3)]
    pl = Pipeline(stages, finish=lambda data, out, p, *, device, elapsed: out["c"])
    seen = []
    out, _ = pl.execute(np.zeros(1), {}, device=get_backend("cpu"),
                        progress=Progress(lambda f, s: seen.append(f), min_interval=0))
    assert out == 3 and max(seen) <= 1.0
