"""Session 24: a stage's prefetch is cancelled by the pipeline, per cache scope, when a stage it takes from runs
again (``Stage.prefetch`` returns a handle with ``cancel()``; ``Pipeline.cancel_prefetches``). Before, the mesh tool's
graph stage cancelled every mesh prefetch of the process itself, another view's included."""

from __future__ import annotations

import threading

import pytest

from app.tools.params import Param, ParamSet
from app.tools.stages import Pipeline, Stage, StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import BackgroundCall, Cancelled, Progress

CPU = get_backend("cpu")
PARAMS = ParamSet([
    Param("x", int, 1, "X", "the first stage's", minimum=0, maximum=100),
    Param("y", int, 1, "Y", "the prefetching stage's", minimum=0, maximum=100),
    Param("z", int, 1, "Z", "the stage after it", minimum=0, maximum=100),
])


class Handle:
    """A prefetch's handle that records its cancel (and says when it is done)."""

    def __init__(self, log, name):
        self.log, self.name, self.cancelled, self.finished = log, name, False, False

    def cancel(self):
        self.cancelled = True
        self.log.append(("cancel", self.name))
        return True

    def done(self):
        return self.finished


def _pipeline(log, handles):
    def a(ctx):
        log.append(("run", "a"))
        return ctx.p["x"]

    def b(ctx):
        log.append(("run", "b"))
        return ctx["a"] + ctx.p["y"]

    def c(ctx):
        log.append(("run", "c"))
        return ctx["b"] * ctx.p["z"]

    def pre(ctx, out):
        h = Handle(log, f"b={out}")
        handles.append(h)
        return h

    return Pipeline([Stage("a", a, params=("x",)), Stage("b", b, params=("y",), prefetch=pre),
                     Stage("c", c, params=("z",))],
                    finish=lambda data, out, params, *, device, elapsed: out["c"], params=PARAMS)


DATA = object()


def _run(pl, cache, scope, **p):
    return pl.execute(DATA, PARAMS.validate(p), device=CPU, cache=cache, scope=scope)


def test_only_a_rerun_upstream_stage_of_the_same_scope_cancels_and_before_it_runs():
    log, handles = [], []
    pl, cache = _pipeline(log, handles), StageCache(cap_bytes=1 << 20)
    _run(pl, cache, "s1")
    h1 = handles[-1]
    _run(pl, cache, "s1", y=2)          # the prefetching stage alone again: its work is still for a's output
    _run(pl, cache, "s1", y=2, z=3)     # a stage after it
    assert not h1.cancelled and len(handles) == 2
    _run(pl, cache, "s2", x=5)          # another scope's upstream edit
    assert not any(h.cancelled for h in handles[:2])
    log.clear()
    _run(pl, cache, "s1", x=7, y=2, z=3)  # s1's upstream stage runs again: both of s1's handles, before it runs
    assert handles[0].cancelled and handles[1].cancelled and not handles[2].cancelled
    assert log[:3] == [("cancel", "b=2"), ("cancel", "b=3"), ("run", "a")], log
    # cancelled handles are forgotten: the next upstream run cancels only the new one
    _run(pl, cache, "s1", x=8, y=2, z=3)
    assert [h.cancelled for h in handles] == [True, True, False, True, False]


def test_cancel_prefetches_by_scope_skips_done_ones_and_counts():
    log, handles = [], []
    pl, cache = _pipeline(log, handles), StageCache(cap_bytes=1 << 20)
    _run(pl, cache, "s1")
    _run(pl, cache, "s2")
    _run(pl, cache, "s3")
    handles[2].finished = True
    assert pl.cancel_prefetches("s1") == 1 and handles[0].cancelled and not handles[1].cancelled
    assert pl.cancel_prefetches("s1") == 0
    assert pl.cancel_prefetches() == 1 and handles[1].cancelled and not handles[2].cancelled


def test_a_one_shot_run_starts_no_prefetch_and_odd_handles_never_stop_a_run():
    log, handles = [], []
    pl = _pipeline(log, handles)
    assert pl.run(DATA, {"x": 2}, device=CPU) == 3 and handles == []

    class Bad(Handle):
        def cancel(self):
            raise RuntimeError("cancel failed")

    out = []
    pl2 = Pipeline([Stage("a", lambda ctx: ctx.p["x"], params=("x",)),
                    Stage("b", lambda ctx: ctx["a"], params=("y",), prefetch=lambda ctx, o: out.pop(0) if out else None)],
                   finish=lambda data, o, params, *, device, elapsed: o["b"], params=PARAMS)
    cache = StageCache(cap_bytes=1 << 20)
    out[:] = [None, object(), Bad([], "bad")]   # no handle, a handle without cancel(), one whose cancel raises
    for x in (1, 2, 3, 4):
        res, rep = pl2.execute(DATA, PARAMS.validate({"x": x}), device=CPU, cache=cache, scope="s")
        assert res == x and "a" in rep.ran
    assert out == []


def test_a_background_call_is_a_prefetch_handle_that_stops_at_its_next_check():
    started, prog = threading.Event(), Progress()

    def work():
        started.set()
        for i in range(2000):
            prog.update(i / 2000)
            threading.Event().wait(0.005)
        return "finished"

    job = BackgroundCall(work, name="gpulab-test-prefetch", on_cancel=prog.cancel)
    assert started.wait(5)
    pl = Pipeline([Stage("a", lambda ctx: ctx.p["x"], params=("x",)),
                   Stage("b", lambda ctx: ctx["a"], params=("y",), prefetch=lambda ctx, o: job)],
                  finish=lambda data, o, params, *, device, elapsed: o["b"], params=PARAMS)
    cache = StageCache(cap_bytes=1 << 20)
    pl.execute(DATA, PARAMS.validate({}), device=CPU, cache=cache, scope="s")
    pl.execute(DATA, PARAMS.validate({"x": 2}), device=CPU, cache=cache, scope="s")
    job.join(5)
    assert job.done()
    with pytest.raises(Cancelled):
        job.result()
    assert not job.cancel()  # (done: nothing to cancel)
    assert BackgroundCall(lambda: 1).cancel() is False  # no on_cancel: cancel asks nothing
