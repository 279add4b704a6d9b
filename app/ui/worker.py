"""Run one job at a time per tab on a QThread, with progress, result, error and cancel
carried through Qt signals.

A job is any function that accepts a ``progress`` keyword (a
:class:`gpu_kernels.jobs.Progress`): it reports ``progress.update(fraction, stage)``
between steps (which also raises :class:`~gpu_kernels.jobs.Cancelled` once Cancel was
pressed) and returns its result. It must not touch widgets: the result is handed
back to the GUI thread through :attr:`JobRunner.finished`.

>>> runner = JobRunner(tab, name="Mesh segmentation")          # doctest: +SKIP
>>> runner.finished.connect(tab.show_result)                     # doctest: +SKIP
>>> runner.start(segment, mesh, k=5, device="cuda")              # doctest: +SKIP
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.jobs import Cancelled, Progress

from .errors import is_out_of_memory, is_user_error, out_of_memory_message, user_message

__all__ = ["JobRunner", "JobBusyError", "describe_exception"]

log = logging.getLogger(__name__)

# Threads still running are kept alive here even if their JobRunner is deleted, so Qt
# never destroys a running QThread ("QThread: Destroyed while thread is still running").
_LIVE_THREADS: set[QThread] = set()


class JobBusyError(RuntimeError):
    """:meth:`JobRunner.start` was called while a job is still running."""


def describe_exception(what: str, exc: BaseException, tb: str = "") -> tuple[str, str]:
    """``(summary, details)`` for an exception raised by the job ``what``.

    The summary says what failed and what to try; the details hold the traceback
    (empty for errors that are the user's to fix, such as a file that is not a mesh).
    """
    if is_out_of_memory(exc):
        return out_of_memory_message(what, exc), tb
    if is_user_error(exc):
        return f"{what}: {user_message(exc)}", ""
    if isinstance(exc, OSError) and exc.filename:
        return f"{what}: {user_message(exc)}", tb
    summary = (
        f"{what} failed: {type(exc).__name__}: {user_message(exc)}\n\n"
        "The window is still usable. If this keeps happening, try a smaller input or the CPU "
        "(Compute → CPU), and report it with the details below."
    )
    return summary, tb


class _JobThread(QThread):
    progressed = Signal(float, str)
    # kind ("ok" | "error" | "cancelled"), payload (result or (summary, details))
    done = Signal(str, object)

    def __init__(self, fn, args, kwargs, device, progress: Progress | None, what: str):
        super().__init__()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._device = device
        self._progress = progress
        self._what = what
        self.setObjectName(f"gpulab-job:{what}")

    def run(self) -> None:  # runs in the worker thread
        t0 = time.perf_counter()
        be = None
        free_pool = False
        try:
            be = get_backend(self._device)
            with be.activate():  # CuPy's current device is per thread: select it here
                outcome = ("ok", self._fn(*self._args, progress=self._progress, **self._kwargs))
            log.info("%s finished in %.2f s", self._what, time.perf_counter() - t0)
        except Cancelled:
            log.info("%s cancelled after %.2f s", self._what, time.perf_counter() - t0)
            outcome = ("cancelled", None)
        except BaseException as exc:  # noqa: BLE001 - every failure becomes a message
            tb = traceback.format_exc()
            summary, details = describe_exception(self._what, exc, tb)
            free_pool = be is not None and be.is_gpu and is_out_of_memory(exc)
            if details:
                log.error("%s failed:\n%s", self._what, tb.rstrip())
            else:
                log.error("%s", summary)
            outcome = ("error", (summary, details))
        finally:
            self._fn = self._args = self._kwargs = None
        if free_pool:  # out of the except block: the failed frames and their arrays are gone
            try:
                with be.activate():
                    be.free_memory_pool()
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
    cancelled()
        the job stopped because :meth:`cancel` was called.
    running_changed(bool)
        True when a job starts, False once it has ended (after the signals above).
    """

    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal()
    running_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None, *, name: str = "The job"):
        super().__init__(parent)
        self.name = name
        self._thread: _JobThread | None = None
        self._progress: Progress | None = None
        self.last_progress: tuple[float, str] = (0.0, "")

    # -- control -------------------------------------------------------------
    def is_running(self) -> bool:
        return self._thread is not None

    def start(self, fn: Callable[..., Any], *args: Any, device: str | Backend | None = None,
              **kwargs: Any) -> None:
        """Run ``fn(*args, progress=<Progress>, **kwargs)`` on a worker thread.

        ``device`` (``"cpu"``, ``"cuda:0"``, a Backend or None for the default) is made
        current inside the worker thread. Raises :class:`JobBusyError` if a job is
        already running: one job per runner (per tab).
        """
        if self._thread is not None:
            raise JobBusyError(f"{self.name} is already running; cancel it or wait for it to finish")
        thread = _JobThread(fn, args, kwargs, device, None, self.name)
        # the callback runs in the worker thread: it only emits (queued to this thread)
        thread._progress = self._progress = Progress(
            thread.progressed.emit, threading.Event(), min_interval=0.03
        )
        self.last_progress = (0.0, "starting")
        thread.progressed.connect(self._on_progress)
        thread.done.connect(self._on_done)
        thread.finished.connect(self._on_thread_finished)
        self._thread = thread
        _LIVE_THREADS.add(thread)
        log.info("%s started (%s)", self.name, getattr(fn, "__name__", "job"))
        self.running_changed.emit(True)
        self.progress.emit(0.0, "starting")
        thread.start()

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
                summary, details = payload  # type: ignore[misc]
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
