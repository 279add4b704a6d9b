"""``Pipeline(whole=...)``: a full run without a cache made in one step where the stages would come
to the same output (session 8: imseg's one library call on a GPU). The stages run when it answers
None; a cached run (the window) never takes it."""

from __future__ import annotations

import pytest

from app.tools.params import Param, ParamSet
from app.tools.stages import Pipeline, Stage, StageCache
from gpu_kernels.backend import get_backend

PARAMS = ParamSet([Param("a", float, 1.0, "a", "a", minimum=0.0, maximum=10.0)])


def _pipeline(whole, ran):
    def first(ctx):
        ran.append("first")
        return ctx.p["a"] + 1

    def last(ctx):
        ran.append("last")
        return ctx["first"] * 2

    def finish(data, out, p, *, device, elapsed):
        return {"out": out["last"], "a": p["a"], "elapsed": elapsed, "first": out["first"]}

    return Pipeline([Stage("first", first, params=("a",)), Stage("last", last)], finish, params=PARAMS,
                    whole=whole)


def test_whole_stands_for_the_stages_and_finish_makes_the_result():
    ran, seen, reports = [], [], []

    def whole(data, p, *, device, progress):
        seen.append(dict(p))
        return (p["a"] + 1) * 2

    res = _pipeline(whole, ran).run(None, {"a": "2.5"}, device=get_backend("cpu"),
                                    progress=lambda f, s: reports.append((f, s)))
    assert ran == [] and seen == [{"a": 2.5}]                # validated values, no stage ran
    assert res["out"] == 7.0 and res["a"] == 2.5 and res["first"] is None and res["elapsed"] >= 0
    assert reports[-1] == (1.0, "done")


def test_a_none_answer_runs_the_stages_and_gives_the_same_result():
    ran = []
    res = _pipeline(lambda *a, **k: None, ran).run(None, {"a": 2.5}, device=get_backend("cpu"))
    ref = _pipeline(None, []).run(None, {"a": 2.5}, device=get_backend("cpu"))
    assert ran == ["first", "last"] and res["out"] == ref["out"] == 7.0


def test_a_cached_run_never_takes_the_whole_step():
    ran = []
    p = _pipeline(lambda *a, **k: pytest.fail("whole ran in a cached run"), ran)
    res, report = p.execute(None, PARAMS.validate({"a": 1.0}), device=get_backend("cpu"), cache=StageCache())
    assert ran == ["first", "last"] and res["out"] == 4.0 and report.ran == ["first", "last"]


def test_bad_parameters_fail_before_the_whole_step():
    from app.tools.params import ParameterError

    p = _pipeline(lambda *a, **k: pytest.fail("whole ran with a bad value"), [])
    with pytest.raises(ParameterError):
        p.run(None, {"a": 11.0}, device=get_backend("cpu"))
