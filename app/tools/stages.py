"""A tool's pipeline as named stages, and one stage cache shared by every tool (Qt-free).

A tool declares, next to its :class:`~app.tools.params.ParamSet`, the stages its run goes
through. Each :class:`Stage` names the parameters it reads, the stages whose outputs it
takes (by default the stage before it) and the fields of the input it reads. From that
declaration the :class:`Pipeline` computes a key per stage: the input's identity, the
stage's own parameter values and the keys of the stages it takes from. With a
:class:`StageCache`, a run re-uses every stage whose key is cached and starts at the first
one whose key changed; without a cache (the CLI, batch, the demo) it runs every stage. Both
give the same result, because a stage sees nothing but what its key covers: its function is
handed only its own parameters (``ctx.p``) and only its declared upstream outputs.

Parameters that only change how a result looks (a colour map, an opacity, a slice) are
marked ``Param(..., display=True)``. No stage may read them; the tool's ``display(result,
params)`` applies them to a finished result without any job.

Rules for a stage function
--------------------------
* ``fn(ctx) -> output``: ``ctx.data`` is the input, ``ctx.p`` the stage's parameters
  (validated), ``ctx[name]`` an upstream output, ``ctx.device`` the Backend,
  ``ctx.progress`` a Progress for this stage alone.
* It must **not modify** its inputs or its upstream outputs in place: they may be cached and
  handed to the next run. Copy first (``xp.array(a)``), or make new arrays.
* Its output stays where it was made (CuPy arrays on the GPU); the last step, ``finish``,
  turns the outputs into the tool's result (moving what the views need to the host).

The cache itself (:class:`StageCache`, :func:`shared_cache`) is :mod:`app.tools.stage_cache`.

Example
-------
>>> import numpy as np
>>> from app.tools.params import Param, ParamSet
>>> from app.tools.stages import Pipeline, Stage, StageCache
>>> from gpu_kernels.backend import get_backend
>>> PARAMS = ParamSet([
...     Param("sigma", float, 1.0, "Blur", "blur before thresholding", minimum=0, maximum=10),
...     Param("level", float, 0.5, "Level", "threshold", minimum=0, maximum=1),
...     Param("cmap", str, "grey", "Colours", "display colours", choices=("grey", "hot"), display=True),
... ])
>>> def blur(ctx):                       # reads the input and sigma
...     xp = ctx.device.xp
...     return xp.asarray(ctx.data, dtype=xp.float32) * (1.0 / (1.0 + ctx.p["sigma"]))
>>> def threshold(ctx):                  # reads the blurred image and level
...     return ctx["blur"] > ctx.p["level"]
>>> PIPELINE = Pipeline([
...     Stage("blur", blur, params=("sigma",), label="blur"),
...     Stage("threshold", threshold, params=("level",)),
... ], finish=lambda data, out, params, *, device, elapsed: device.asnumpy(out["threshold"]),
...    params=PARAMS)
>>> cpu, cache = get_backend("cpu"), StageCache(cap_bytes=1 << 20)
>>> img = np.linspace(0, 2, 8)
>>> r1, rep = PIPELINE.execute(img, PARAMS.validate({}), device=cpu, cache=cache, scope="demo")
>>> rep.ran                              # a first run computes every stage
['blur', 'threshold']
>>> r2, rep = PIPELINE.execute(img, PARAMS.validate({"level": 0.2}), device=cpu, cache=cache, scope="demo")
>>> rep.ran, rep.reused                  # only the threshold runs again
(['threshold'], ['blur'])
>>> bool((r2 == PIPELINE.run(img, {"level": 0.2}, device=cpu)).all())   # same as a full run
True

In a tool module the pipeline replaces the hand-written ``run``: ``Tool(..., stages=PIPELINE,
display=apply_display)`` and the tool's ``run(data, params, device=, progress=)`` is a full
run of every stage (the CLI and batch call it as before).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpu_kernels.lazy import lazy_module

if TYPE_CHECKING:
    from gpu_kernels.backend import Backend
from gpu_kernels.jobs import Progress, as_progress

from .run_report import RunReport, fmt_seconds, reused_note, took_text  # noqa: F401 - re-exported
from .stage_cache import (  # noqa: F401 - the cache, re-exported (app.tools.stages.StageCache, ...)
    CACHE_ENV,
    DEFAULT_DEVICE_SHARE,
    DEFAULT_HOST_SHARE,
    StageCache,
    output_nbytes,
    shared_cache,
)

_backend = lazy_module("gpu_kernels.backend")  # NumPy on first use (start-up, issue 18 case 19)

__all__ = ["Stage", "Pipeline", "StageContext", "StageCache", "RunReport", "output_nbytes", "shared_cache",
           "DEFAULT_HOST_SHARE", "DEFAULT_DEVICE_SHARE", "CACHE_ENV"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Stage:
    """One step of a tool's pipeline.

    Parameters
    ----------
    name : str
        Unique in the pipeline; ``ctx[name]`` in later stages is its output.
    fn : callable
        ``fn(ctx: StageContext) -> output`` (see the module docstring's rules).
    params : tuple of str
        The parameters it reads (and only those: ``ctx.p`` holds nothing else).
    after : tuple of str, optional
        The stages whose outputs it takes; ``None`` (default): the stage before it (none for
        the first stage).
    inputs : tuple of str
        The fields of the input (``data``) it reads; ``()``: the input as a whole. Replacing a
        field the stage does not read (a ground truth, a mask) keeps its cached output.
    label : str
        What the status bar calls it ("k-means"); default: the name.
    weight : float
        Its share of the progress bar, relative to the other stages.
    cache : bool
        Keep its output in the cache (off for cheap stages with big outputs).
    when : callable, optional
        ``when(values) -> bool``: the stage applies only where it is true for the parameter
        values (a stage of another method). Elsewhere its output is None and it is neither run,
        timed, nor counted in "stage N of M".
    prefetch : callable, optional
        ``prefetch(ctx, output)``: after a live run (:meth:`Pipeline.execute` with a cache) that
        ran this stage, once its result is made, start background work that makes a likely next
        edit cheaper; it must change no result (the mesh tool clusters an integer k's extra starts
        after a k = "auto" run). Its errors are dropped. One-shot runs (:meth:`Pipeline.run`: the
        CLI, batch, the demo) never call it. It may return a handle with a ``cancel()`` method
        (:class:`gpu_kernels.jobs.BackgroundCall`): the background work is for this run's upstream
        outputs, so a later run of the same scope that runs again a stage this one takes from
        (directly or not) cancels it before that stage starts; a run of this stage alone (a new
        k on the same graph) does not. :meth:`Pipeline.cancel_prefetches` cancels them too.

    Notes
    -----
    On a GPU the pipeline synchronises the device after each stage, so that a stage's time is
    its own. An output with a true ``queues_no_work`` attribute (a deferred stage that only
    checked its input, e.g. ``gpu_kernels.imseg.deferred.Deferred``) skips that wait.
    """

    name: str
    fn: Callable[[StageContext], Any]
    params: tuple[str, ...] = ()
    after: tuple[str, ...] | None = None
    inputs: tuple[str, ...] = ()
    label: str = ""
    weight: float = 1.0
    cache: bool = True
    when: Callable[[Mapping[str, Any]], bool] | None = None
    prefetch: Callable[[StageContext, Any], None] | None = None

    def applies(self, values: Mapping[str, Any] | None) -> bool:
        return self.when is None or values is None or bool(self.when(values))

    @property
    def title(self) -> str:
        return self.label or self.name


@dataclass
class StageContext:
    """What a stage function is given (see :class:`Stage`)."""

    data: Any
    p: dict
    device: Backend
    progress: Progress
    upstream: Mapping[str, Any]
    stage: str = ""

    def __getitem__(self, name: str):
        try:
            return self.upstream[name]
        except KeyError:
            raise KeyError(f"stage {self.stage!r} did not declare {name!r} in after=") from None


class Pipeline:
    """The ordered stages of a tool and ``finish``, which turns their outputs into the result.

    ``finish(data, outputs, params, *, device, elapsed) -> result``: ``outputs`` maps every
    stage's name to its output; ``params`` are all the validated parameters (display ones
    included); it must be cheap (it runs on every run, cached or not) and must not modify
    the outputs.

    ``params`` (the tool's ParamSet) lets the pipeline check its declaration: every stage
    parameter exists and is not display-only.

    ``weights(data, effective_params) -> {stage: weight} | None``, optional, gives each run its
    stages' shares of the progress bar from the input's size (a stage it leaves out, or a None
    answer, keeps its declared :attr:`Stage.weight`; an error keeps them all: a share of the bar
    never stops a run).

    ``whole(data, effective_params, *, device, progress) -> output | None``, optional: a full run
    without a cache (:meth:`run`: the CLI, batch, the demo) made in one step where the stages
    would come to the same output (one library call); its output stands for the last stage's,
    and ``finish`` makes the result of it as of the stages'. ``None``: the stages run.
    """

    def __init__(self, stages: Sequence[Stage], finish: Callable[..., Any], *, params=None,
                 weights: Callable[[Any, Mapping[str, Any]], Mapping[str, float] | None] | None = None,
                 whole: Callable[..., Any] | None = None):
        self.weights = weights
        self.whole = whole
        self.stages: tuple[Stage, ...] = tuple(stages)
        if not self.stages:
            raise TypeError("a pipeline needs at least one stage")
        self.finish = finish
        names = [s.name for s in self.stages]
        if len(set(names)) != len(names):
            raise TypeError(f"duplicate stage names in {names}")
        self._after: dict[str, tuple[str, ...]] = {}
        for i, s in enumerate(self.stages):
            after = s.after if s.after is not None else ((names[i - 1],) if i else ())
            bad = [a for a in after if a not in names[:i]]
            if bad:
                raise TypeError(f"stage {s.name!r} takes {bad[0]!r}, which is not an earlier stage")
            self._after[s.name] = tuple(after)
        #: every stage each stage takes from, directly or not (a prefetch is cancelled by their runs)
        self._above: dict[str, frozenset[str]] = {}
        for s in self.stages:
            self._above[s.name] = frozenset(self._after[s.name]).union(*(self._above[a] for a in self._after[s.name]))
        #: the handles of the prefetches still to cancel: (scope, stage) -> [handle, ...]
        self._prefetches: dict[tuple[str, str], list] = {}
        self._prefetch_lock = threading.Lock()
        if params is not None:
            self.bind_params(params)

    def check_params(self, params) -> None:
        for s in self.stages:
            for name in s.params:
                if name not in params:
                    raise TypeError(f"stage {s.name!r} reads {name!r}, which is not a parameter")
                if getattr(params[name], "display", False):
                    raise TypeError(f"stage {s.name!r} reads {name!r}, which is display-only")

    # -- introspection ---------------------------------------------------------------------
    def names(self, values: Mapping[str, Any] | None = None) -> list[str]:
        """The stages' names; with parameter ``values``, only the stages that apply to them
        (:attr:`Stage.when`)."""
        return [s.name for s in self.stages if s.applies(values)]

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)

    def upstream(self, name: str) -> tuple[str, ...]:
        return self._after[name]

    def stage_of(self, param: str) -> str | None:
        """The first stage that reads ``param`` (None: no stage; a display-only parameter)."""
        return next((s.name for s in self.stages if param in s.params), None)

    def affected(self, param: str, values: Mapping[str, Any] | None = None) -> list[str]:
        """The stages a change of ``param`` re-runs: those reading it and everything downstream.

        With the current parameter ``values``, a parameter that they make unused
        (:attr:`Param.used_when`, as in :meth:`keys`) re-runs nothing: ``[]``.
        """
        if values is not None and self._paramset is not None and param in self._paramset.unused(values):
            return []
        dirty: set[str] = set()
        for s in self.stages:
            if param in s.params or any(a in dirty for a in self._after[s.name]):
                dirty.add(s.name)
        return [s.name for s in self.stages if s.name in dirty and s.applies(values)]

    def used_params(self) -> set[str]:
        return {p for s in self.stages for p in s.params}

    # -- keys ------------------------------------------------------------------------------
    def keys(self, data, params: Mapping[str, Any], *, device: Backend | str, scope: str = "") -> dict[str, tuple]:
        """Every stage's key: input identity, its parameters, the keys it takes from.

        A parameter that the others make unused (:attr:`Param.used_when`: another method's
        parameter, coarseness beside a set number of segments) counts as its default, so editing
        it re-runs nothing.
        """
        dev = device.label if isinstance(device, _backend.Backend) else str(device)
        params = self.effective(params)
        keys: dict[str, tuple] = {}
        for s in self.stages:
            ident = tuple((f, id(getattr(data, f, None))) for f in s.inputs) if s.inputs else (("*", id(data)),)
            keys[s.name] = (scope, s.name, dev, ident, tuple((p, _hashable(params[p])) for p in s.params),
                            tuple(keys[a] for a in self._after[s.name]))
        return keys

    def effective(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """``params`` with each parameter that the others make unused set to its default: what
        the stages read and are keyed on, so a cached and a fresh run agree by construction."""
        ps = self._paramset
        unused = ps.unused(params) if ps is not None else ()
        return {**params, **{n: ps[n].default for n in unused}} if unused else params

    def _refs(self, data, s: Stage) -> tuple:
        return tuple(getattr(data, f, None) for f in s.inputs) if s.inputs else (data,)

    # -- prefetches ------------------------------------------------------------------------
    def _keep_prefetch(self, scope: str, stage: str, handle) -> None:
        if not callable(getattr(handle, "cancel", None)):
            return  # (nothing to cancel: work that ends by itself)
        with self._prefetch_lock:
            live = [h for h in self._prefetches.get((scope, stage), []) if not _done(h)]
            self._prefetches[(scope, stage)] = live + [handle]

    def cancel_prefetches(self, scope: str | None = None, *, rerun: Sequence[str] | None = None) -> int:
        """Cancel the prefetches still running (of ``scope`` only, if given) and forget them;
        returns how many were cancelled.

        ``rerun`` (stage names): only those of stages that take from one of them, directly or
        not (what :meth:`execute` does before it runs them again). The window calls it without
        ``rerun`` when a tab closes.
        """
        n = 0
        with self._prefetch_lock:
            for key in list(self._prefetches):
                sc, stage = key
                if scope is not None and sc != scope:
                    continue
                if rerun is not None and not self._above[stage].intersection(rerun):
                    continue
                for h in self._prefetches.pop(key):
                    if not _done(h):
                        try:
                            n += bool(h.cancel())
                        except Exception:  # noqa: BLE001 - a prefetch never stops a run
                            log.debug("cancelling the prefetch of %s failed", stage, exc_info=True)
        return n

    # -- running ---------------------------------------------------------------------------
    def execute(self, data, params: Mapping[str, Any], *, device: Backend, progress: Progress | None = None,
                cache: StageCache | None = None, scope: str = "") -> tuple[Any, RunReport]:
        """Run the stages (re-using those cached under the same key) and ``finish``.

        ``params`` must be validated. Returns ``(result, report)``.
        """
        progress = as_progress(progress)
        t_all = time.perf_counter()
        keys = self.keys(data, params, device=device, scope=scope) if cache is not None else {}
        eff = self.effective(params)
        outputs: dict[str, Any] = {}
        names = self.names(eff)
        report = RunReport(n_stages=len(names), labels={s.name: s.title for s in self.stages})
        todo: list[Stage] = []
        for s in self.stages:
            if not s.applies(eff):
                outputs[s.name] = None        # another method's stage: not run, timed or counted
                continue
            hit, val = cache.get(keys[s.name]) if (cache is not None and s.cache) else (False, None)
            if hit:
                outputs[s.name] = val
                report.reused.append(s.name)
                report.cached_seconds[s.name] = cache.seconds(keys[s.name]) or 0.0
            else:
                todo.append(s)
        # a cached stage whose output a stage to run needs is already in outputs; stages that
        # are cached but lie after a stage to run were re-used (their key did not change)
        weight = self._run_weights(data, eff)
        total_w = sum(weight(s) for s in todo) or 1.0
        done_w = 0.0
        later = []  # (the live run's prefetches, started once its result is made)
        for s in todo:
            a = done_w / total_w
            done_w += weight(s)
            many = len(self.stages) > 1
            sub = progress.sub(a, done_w / total_w, prefix=s.title if many else "")
            if many:
                progress.update(a, s.title)
            else:
                progress.check()  # raises Cancelled between stages
            ctx = StageContext(data, {p: eff[p] for p in s.params}, device, sub,
                               {u: outputs[u] for u in self._after[s.name]}, s.name)
            if cache is not None:
                self.cancel_prefetches(scope, rerun=(s.name,))  # (their work is for outputs this run replaces)
            t0 = time.perf_counter()
            out = s.fn(ctx)
            if device.is_gpu and not getattr(out, "queues_no_work", False):
                device.synchronize()  # the stage's time is its own (not for an output that queued nothing)
            report.seconds[s.name] = time.perf_counter() - t0
            report.ran.append(s.name)
            outputs[s.name] = out
            if cache is not None and s.cache:
                cache.put(keys[s.name], out, scope=scope, refs=self._refs(data, s), device=device,
                          seconds=report.seconds[s.name])
            if cache is not None and s.prefetch is not None:
                later.append((s, ctx, out))
        if report.ran:
            report.first_run = names.index(report.ran[0])
        # a result shown from the cache keeps the time it took to compute, not the lookup's
        elapsed = time.perf_counter() - t_all if report.ran else sum(report.cached_seconds.values())
        result = self.finish(data, outputs, dict(params), device=device, elapsed=elapsed)
        report.total = time.perf_counter() - t_all
        progress.update(1.0, "done")
        for s, ctx, out in later:
            try:
                self._keep_prefetch(scope, s.name, s.prefetch(ctx, out))
            except Exception:  # noqa: BLE001 - a prefetch never stops a run (the edit computes it instead)
                pass
        return result, report

    def _run_weights(self, data, eff: Mapping[str, Any]) -> Callable[[Stage], float]:
        """Each stage's share of the bar for this run (:attr:`weights`, else the declared ones)."""
        w = None
        if self.weights is not None:
            try:
                w = self.weights(data, eff)
            except Exception:  # noqa: BLE001 - a share of the bar never stops a run
                w = None
        if not w:
            return lambda s: s.weight
        return lambda s: max(0.0, float(w.get(s.name, s.weight)))

    def run(self, data, params: Mapping[str, Any], *, device: Backend, progress: Progress | None = None,
            paramset=None):
        """A full run of every stage (no cache): what the CLI, batch and the demo call."""
        if paramset is not None:
            params = paramset.validate(params)
        elif self._paramset is not None:
            params = self._paramset.validate(params)
        if self.whole is not None:
            t0 = time.perf_counter()
            out = self.whole(data, self.effective(params), device=device, progress=progress)
            if out is not None:
                last = self.stages[-1].name
                result = self.finish(data, {s.name: None for s in self.stages} | {last: out}, dict(params),
                                     device=device, elapsed=time.perf_counter() - t0)
                as_progress(progress).update(1.0, "done")
                return result
        return self.execute(data, params, device=device, progress=progress)[0]

    _paramset = None

    def bind_params(self, paramset) -> Pipeline:
        """Validate parameters with ``paramset`` in :meth:`run` (and check the declaration)."""
        self.check_params(paramset)
        self._paramset = paramset
        return self


def _done(handle) -> bool:
    done = getattr(handle, "done", None)
    return bool(done()) if callable(done) else False


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v
