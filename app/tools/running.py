"""Running a tool: the :class:`Job` the window's worker thread and the tests execute, and
:func:`execute`, which resolves the device, makes it current and passes it to the job
(re-exported by :mod:`app.tools.base`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_module

if TYPE_CHECKING:
    from gpu_kernels.backend import Backend

    from .base import Tool

_backend = lazy_module("gpu_kernels.backend")

__all__ = ["Job", "run_job", "run_staged_job", "execute"]


@dataclass
class Job:
    """A unit of work for the worker thread: ``fn(*args, device=<Backend>, progress=..., **kwargs)``.

    ``uses_device=False`` (loading a file) calls ``fn(*args, progress=..., **kwargs)``.
    ``token`` lets the caller recognise a stale result.
    """

    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    what: str = "The job"
    uses_device: bool = True
    token: Any = None


def run_job(tool: Tool, data, params: dict, *, token: Any = None) -> Job:
    """The job that runs ``tool`` on ``data``: what the tab's Run button starts, and what
    the tests execute without Qt."""
    return Job(tool.run, (data, params), what=tool.title, token=token)


def _staged(data, params: dict, *, device: Backend, progress: Progress | None = None, tool: Tool, cache,
            scope: str, input_key: Any):
    cache.bind(scope, input_key, device)  # another input or device: the scope's outputs go
    return tool.run_staged(data, params, device=device, progress=progress, cache=cache, scope=scope)


def run_staged_job(tool: Tool, data, params: dict, *, cache, scope: str, input_key: Any, token: Any = None) -> Job:
    """The job the window runs: ``tool`` through the stage ``cache`` (``scope`` is the tab, and
    ``input_key`` names its input: another key, or another device, clears the scope first).
    Returns ``(result, report)`` (:class:`~app.tools.stages.RunReport`)."""
    return Job(_staged, (data, params), dict(tool=tool, cache=cache, scope=scope, input_key=input_key),
               what=tool.title, token=token)


def execute(job: Job, *, device: str | Backend | None, progress: Progress | None = None):
    """Run ``job`` on ``device`` in the calling thread: the device is resolved, made current
    and passed to the job as ``device=`` (so nothing inside reads the process default).

    Returns ``(result, backend, seconds)``.
    """
    progress = as_progress(progress)
    t0 = time.perf_counter()
    if not job.uses_device:
        return job.fn(*job.args, progress=progress, **job.kwargs), None, time.perf_counter() - t0
    be = _backend.get_backend(device)
    with be.activate():
        out = job.fn(*job.args, device=be, progress=progress, **job.kwargs)
    return out, be, time.perf_counter() - t0
