"""Run one job at a time per tab on a QThread, with progress, result, error and cancel
carried through Qt signals.

A job is an :class:`app.tools.base.Job` (or a function with its arguments): it is run by
:func:`app.tools.base.execute`, the same function the tests call without Qt, which resolves
the device inside the worker thread, makes it current and passes it to the job as
``device=``. The job reports ``progress.update(fraction, stage)`` between steps (which also
raises :class:`~gpu_kernels.jobs.Cancelled` once Cancel was pressed) and returns its
result. It must not touch widgets: the result is handed back to the GUI thread through
:attr:`JobRunner.finished`.

>>> runner = JobRunner(tab, name="Mesh segmentation")                     # doctest: +SKIP
>>> runner.finished.connect(tab.show_result)                                # doctest: +SKIP
>>> runner.start(Job(TOOL.run, (data, params)), device="cuda:0")            # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, QTimer, Signal, Slot

from gpu_kernels.backend import Backend
from gpu_kernels.jobs import Cancelled, Progress

from ..errors import classify, in_context, is_out_of_memory
from ..tools.base import Job, execute
from . import gc_guard

__all__ = ["JobRunner", "JobBusyError", "describe_exception"]

log = logging.getLogger(__name__)

#: a job's progress reports in its first PROGRESS_GRACE_S seconds are dropped in the worker thread
#: (a live edit that ends sooner sends none): each report re-lays out the tab's side panel and the
#: status bar in the GUI thread, which holds the GIL meanwhile; on the H100 host the echo alpha edit's
#: reports cost the GUI thread 11-19 ms of CPU and the job 3-5 ms (benchmarks/results/echo_gap_session11.md)
PROGRESS_GRACE_S = 0.3

# Threads still running are kept alive here even if their JobRunner is deleted, so Qt
# never destroys a running QThread ("QThread: Destroyed while thread is still running").
_LIVE_THREADS: set[QThread] = set()


class JobBusyError(RuntimeError):
    """:meth:`JobRunner.start` was called while a job is still running."""


def describe_exception(what: str, exc: BaseException, tb: str = "") -> tuple[str, str]:
    """``(summary, details)`` for an exception raised by the job ``what``.

    :func:`app.errors.classify` decides: a user's mistake gets its one line and no details;
    running out of memory says what to try; a bug gets a message and the traceback.
    """
    kind, msg = classify(exc, what)
    if kind == "user":
        return in_context(what, msg), ""
    if kind == "oom":
        return msg, tb
    summary = (
        f"{what} failed: {msg}\n\n"
        "This is a bug in gpulab. The window is still usable; please report it with the "
        "details below."
    )
    return summary, tb


class _JobThread(QThread):
    progressed = Signal(float, str)
    # kind ("ok" | "error" | "cancelled"), payload (result, or (summary, details, exception))
    done = Signal(str, object)

    def __init__(self, job: Job, device, progress: Progress | None, what: str):
        super().__init__()
        self._job = job
        self._device = device
        self._progress = progress
        self._what = what
        self.setObjectName(f"gpulab-job:{what}")

    def run(self) -> None:  # runs in the worker thread
        t0 = time.perf_counter()
        oom_gpu = None
        try:
            result, be, _secs = execute(self._job, device=self._device, progress=self._progress)
            self.backend = be
            log.info("%s finished in %.2f s%s", self._what, time.perf_counter() - t0,
                     f" on {be.label}" if be is not None else "")
            outcome = ("ok", result)
        except Cancelled:
            log.info("%s cancelled after %.2f s", self._what, time.perf_counter() - t0)
            outcome = ("cancelled", None)
        except BaseException as exc:  # noqa: BLE001 - every failure becomes a message
            tb = traceback.format_exc()
            summary, details = describe_exception(self._what, exc, tb)
            if is_out_of_memory(exc) and self._job.uses_device:
                oom_gpu = self._device
            if details:
                log.error("%s failed:\n%s", self._what, tb.rstrip())
            else:
                log.error("%s", summary)
            exc.__traceback__ = None  # drop the frames (and their GPU arrays) now
            outcome = ("error", (summary, details, exc))
        finally:
            self._job = None
        if oom_gpu is not None:  # out of the except block: the failed frames and their arrays are gone
            try:
                from gpu_kernels.backend import get_backend

                be = get_backend(oom_gpu)
                with be.activate():
                    be.release_caches()   # kept graphs and the like too, then the pool
            except Exception:  # noqa: BLE001 - best effort
                pass
        self.done.emit(*outcome)


class JobRunner(QObject):
    """Runs one job at a time on a worker thread.

    Signals
    -------
    progress(float, str)
        fraction in [0, 1] and the current stage, from the running job.
    finished(object)
        the job's return value.
    failed(str, str)
        ``(summary, details)``: a message for a dialog, and a traceback (may be empty).
    error(object)
        the exception itself (emitted just before ``failed``), e.g. to offer the remedy of a
        :class:`~gpu_kernels.errors.TooLargeError`.
    cancelled()
        the job stopped because :meth:`cancel` was called.
    running_changed(bool)
        True when a job starts, False once it has ended (after the signals above).
    """

    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str, str)
    error = Signal(object)
    cancelled = Signal()
    running_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, name: str = "The job"):
        super().__init__(parent)
        self.name = name
        self._thread: _JobThread | None = None
        gc_guard.install()   # reference cycles (closed tabs' widgets) freed in the GUI thread only
        self._progress: Progress | None = None
        self.last_progress: tuple[float, str] = (0.0, "")
        self.current_job_token: Any = None

    # -- control -------------------------------------------------------------
    def is_running(self) -> bool:
        return self._thread is not None

    def start(self, job: Job | Callable[..., Any], *args: Any, device: str | Backend | None = None,
              **kwargs: Any) -> None:
        """Run ``job`` on a worker thread (see :func:`app.tools.base.execute`).

        ``job`` is a :class:`~app.tools.base.Job`, or a function called as
        ``fn(*args, device=<Backend>, progress=<Progress>, **kwargs)``. ``device`` (``"cpu"``,
        ``"cuda:0"``, a Backend, or None for the process default) is resolved and made current
        inside the worker thread. Raises :class:`JobBusyError` if a job is already running:
        one job per runner (per tab).
        """
        if self._thread is not None:
            raise JobBusyError(f"{self.name} is already running; cancel it or wait for it to finish")
        if not isinstance(job, Job):
            job = Job(job, args, kwargs, what=self.name)
        elif args or kwargs:
            raise TypeError("give the arguments in the Job, not to start()")
        what = job.what if job.what != "The job" else self.name
        thread = _JobThread(job, device, None, what)
        # the callback runs in the worker thread: it only emits (queued to this thread)
        emit, t_start, grace = thread.progressed.emit, time.monotonic(), PROGRESS_GRACE_S
        held = [None]   # the last report dropped in the grace: shown when the grace ends if none came since

        def report(fraction: float, stage: str) -> None:   # worker thread
            if grace <= 0 or time.monotonic() - t_start >= grace:
                held[0] = None
                emit(fraction, stage)
            else:
                held[0] = (fraction, stage)

        def grace_over() -> None:   # GUI thread: a stage entered in the grace that runs on is named now
            last = held[0]
            if last is not None and self._thread is thread:
                self._on_progress(*last)

        thread._progress = self._progress = Progress(report, threading.Event(), min_interval=0.25)
        self.last_progress = (0.0, "starting")
        self.current_job_token = job.token
        thread.progressed.connect(self._on_progress)
        thread.done.connect(self._on_done)
        thread.finished.connect(self._on_thread_finished)
        self._thread = thread
        _LIVE_THREADS.add(thread)
        log.info("%s started (%s)", what, getattr(job.fn, "__name__", "job"))
        self.running_changed.emit(True)
        self.progress.emit(0.0, "starting")
        thread.start()
        if grace > 0:
            QTimer.singleShot(int(grace * 1000) + 1, self, grace_over)

    def cancel(self) -> None:
        """Ask the running job to stop at its next progress check (no-op when idle)."""
        if self._progress is not None and self._thread is not None:
            log.info("cancelling %s", self.name)
            self._progress.cancel()

    def wait(self, timeout_ms: int = -1) -> bool:
        """Block until the job's thread ends; True if it did. Does not process events,
        so the result signals are delivered afterwards."""
        t = self._thread
        if t is None:
            return True
        return t.wait(timeout_ms) if timeout_ms >= 0 else t.wait()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel the job and wait up to ``timeout_ms`` for its thread to end.

        Returns True when no thread is left running. Used when the window closes.
        A job that does not check for cancellation keeps its thread alive (and
        referenced) until it returns; its result is then dropped.
        """
        t = self._thread
        if t is None:
            return True
        self.cancel()
        ok = t.wait(max(0, int(timeout_ms)))
        if ok:
            self._finish_now(t)
        return ok

    # -- plumbing (GUI thread unless noted) ----------------------------------
    @Slot(float, str)
    def _on_progress(self, fraction: float, stage: str) -> None:
        if self._thread is None:
            return
        self.last_progress = (fraction, stage)
        self.progress.emit(fraction, stage)

    @Slot(str, object)
    def _on_done(self, kind: str, payload: object) -> None:
        if self.sender() is not self._thread:
            return  # a thread given up by shutdown(): drop its result
        self._thread = None
        self._progress = None
        try:
            if kind == "ok":
                self.finished.emit(payload)
            elif kind == "cancelled":
                self.cancelled.emit()
            else:
                summary, details, exc = payload  # type: ignore[misc]
                self.error.emit(exc)
                self.failed.emit(summary, details)
        finally:
            self.running_changed.emit(False)

    def _finish_now(self, t: _JobThread) -> None:
        """After shutdown: the thread ended but its queued signals may never be
        delivered (the window is closing); settle the state now."""
        if self._thread is t:
            self._thread = None
            self._progress = None
            self.running_changed.emit(False)

    @Slot()
    def _on_thread_finished(self) -> None:
        t = self.sender()
        if isinstance(t, _JobThread):
            _LIVE_THREADS.discard(t)
            t.deleteLater()
