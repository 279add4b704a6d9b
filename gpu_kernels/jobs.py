"""Qt-free job protocol: progress reporting and cooperative cancellation.

A long-running library function takes an optional ``progress`` argument. It may be
``None`` (no reporting), a callable ``f(fraction, stage)``, or a :class:`Progress`.
Normalise it with :func:`as_progress` and then call :meth:`Progress.update` (which
also checks for cancellation) between kernel launches, or :meth:`Progress.check`
where there is nothing new to report.

The GUI worker owns a :class:`Progress` whose callback emits a Qt signal and whose
:meth:`Progress.cancel` is wired to the Cancel button. The CLI uses one that prints.

Example
-------
>>> from gpu_kernels.jobs import Progress, Cancelled
>>> seen = []
>>> p = Progress(lambda f, s: seen.append((round(f, 2), s)))
>>> sub = p.sub(0.5, 1.0)          # a stage that maps onto the second half
>>> sub.update(0.5, "tiles")
>>> seen
[(0.75, 'tiles')]
>>> p.cancel()
>>> try:
...     p.check()
... except Cancelled:
...     print("cancelled")
cancelled
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Cancelled", "Progress", "as_progress", "NULL_PROGRESS", "LaunchTracker", "ProgressClock", "fmt_duration",
           "level_weights", "BackgroundCall"]

ProgressCallback = Callable[[float, str], None]


class Cancelled(Exception):
    """Raised inside a job when the user asked it to stop.

    A function that raises it must leave no partial output behind.
    """

    def __init__(self, message: str = "cancelled by the user"):
        super().__init__(message)


#: how far past [0, 1] (or below its start) a sub-range's bound may lie by rounding alone (:meth:`Progress.sub`)
SUB_SLACK = 1e-9


class Progress:
    """Reports ``(fraction, stage)`` and carries a cancellation flag.

    Parameters
    ----------
    callback : callable, optional
        Called as ``callback(fraction, stage)`` with ``0 <= fraction <= 1``.
    cancel_event : threading.Event, optional
        Shared flag; when set, the next :meth:`check` raises :class:`Cancelled`.
    min_interval : float
        Calls to ``callback`` closer together than this (seconds) are dropped,
        except those that change the stage text or reach 1.0. Keeps a fast inner
        loop from flooding a GUI event queue.
    """

    def __init__(
        self,
        callback: ProgressCallback | None = None,
        cancel_event: threading.Event | None = None,
        *,
        min_interval: float = 0.02,
        _offset: float = 0.0,
        _scale: float = 1.0,
        _prefix: str = "",
        _root: Progress | None = None,
    ):
        self._callback = callback
        self._cancel = cancel_event if cancel_event is not None else threading.Event()
        self._min_interval = min_interval
        self._offset = _offset
        self._scale = _scale
        self._prefix = _prefix
        self._root = _root if _root is not None else self
        if _root is None:
            self._last_time = 0.0
            self._last_stage: str | None = None
            self.fraction = 0.0
            self.stage = ""
            self.started = time.monotonic()

    # -- cancellation -------------------------------------------------------
    def cancel(self) -> None:
        """Ask the job to stop at its next check."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise :class:`Cancelled` if cancellation was requested."""
        if self._cancel.is_set():
            raise Cancelled()

    # -- reporting ----------------------------------------------------------
    def update(self, fraction: float, stage: str | None = None) -> None:
        """Report progress of this (sub-)task and check for cancellation.

        ``fraction`` is local to this object: a :meth:`sub` maps it onto its range.
        """
        self.check()
        f = min(max(float(fraction), 0.0), 1.0)
        root = self._root
        # monotonic: a stage that restarts its count (a retry, a second pass) never moves the
        # bar back; it waits until the stage passes the furthest point reported
        g = max(self._offset + self._scale * f, root.fraction)
        text = stage if stage is not None else (root._last_stage or "")
        if stage is not None and self._prefix and not stage.startswith(self._prefix):
            text = f"{self._prefix}: {stage}"
        root.fraction = g
        root.stage = text
        cb = root._callback
        if cb is None:
            return
        now = time.monotonic()
        if (
            text != root._last_stage
            or g >= 1.0
            or now - root._last_time >= root._min_interval
        ):
            root._last_time = now
            root._last_stage = text
            cb(g, text)

    @property
    def elapsed(self) -> float:
        """Seconds since the job (the root progress) started."""
        return time.monotonic() - self._root.started

    def remaining(self) -> float | None:
        """Seconds left, from the elapsed time and the fraction done (None until 2 % done)."""
        f = self._root.fraction
        return self.elapsed * (1.0 - f) / f if f >= 0.02 else None

    def split(self, weights, prefix: str = "") -> list[Progress]:
        """Children for consecutive stages, each a share of this range proportional to its
        weight (the stage's measured cost):

        >>> seen = []
        >>> a, b = Progress(lambda f, s: seen.append(round(f, 2)), min_interval=0).split([1, 3])
        >>> a.update(1.0, "seeding"); b.update(0.5, "growing")
        >>> seen
        [0.25, 0.62]
        """
        w = [max(float(x), 0.0) for x in weights]
        total = sum(w) or 1.0
        out, acc = [], 0.0
        for x in w:
            a = acc / total
            acc += x
            out.append(self.sub(a, min(acc / total, 1.0), prefix))
        return out

    def sub(self, start: float, stop: float, prefix: str = "") -> Progress:
        """A child whose fractions 0..1 map onto ``[start, stop]`` of this one.

        Bounds off by rounding alone (:data:`SUB_SLACK`) are clamped: a share computed as a running sum over a
        total can end a few ulps above 1 (Python 3.12's ``sum`` of floats is compensated, a running ``+=`` is
        not), and a share of the bar never stops a run:

        >>> Progress().sub(0.97, 1.0000000000000002).update(1.0)
        """
        if not (-SUB_SLACK <= start <= stop + SUB_SLACK and stop <= 1.0 + SUB_SLACK):
            raise ValueError(f"sub-range must satisfy 0 <= start <= stop <= 1, got {start}, {stop}")
        start = min(max(start, 0.0), 1.0)
        stop = min(max(stop, start), 1.0)
        return Progress(
            self._callback,
            self._cancel,
            min_interval=self._min_interval,
            _offset=self._offset + self._scale * start,
            _scale=self._scale * (stop - start),
            _prefix=prefix or self._prefix,
            _root=self._root,
        )


class _NullProgress(Progress):
    """Reports nothing and is never cancelled."""

    def cancel(self) -> None:  # pragma: no cover - nothing to cancel
        raise RuntimeError("the null progress object cannot be cancelled")


NULL_PROGRESS = _NullProgress()


def as_progress(progress: Progress | ProgressCallback | None) -> Progress:
    """Normalise the ``progress`` argument accepted by long library functions."""
    if progress is None:
        return Progress()
    if isinstance(progress, Progress):
        return progress
    if callable(progress):
        return Progress(progress)
    raise TypeError(
        "progress must be None, a callable f(fraction, stage) or a gpu_kernels.jobs.Progress, "
        f"not {type(progress).__name__}"
    )


class LaunchTracker:
    """Progress and cancel over a long loop of GPU kernel launches, without stalling the GPU.

    Call :meth:`before` ahead of step ``i`` and :meth:`after` once its kernels are queued.
    The host runs at most ``lag`` steps ahead of the device: :meth:`after` records a CUDA
    event, and :meth:`before` waits on the event from ``lag`` steps back, so the queue stays
    short enough for Cancel to take effect promptly while the device never idles. Progress
    is reported for the steps the device has finished. On the CPU (``xp`` is NumPy) it
    reports every step and records nothing.

    Parameters
    ----------
    xp : module
        ``cupy`` or ``numpy`` (``Backend.xp``).
    progress : Progress
    total : int
        Number of steps.
    label : str
        Stage text; ``"{label} {done}/{total}"`` is reported.
    lag : int
        Steps the host may run ahead of the device.

    Example
    -------
    >>> import numpy as np
    >>> seen = []
    >>> t = LaunchTracker(np, Progress(lambda f, s: seen.append(s), min_interval=0), 2, "sweep")
    >>> for i in range(2):
    ...     t.before(i); t.after(i)
    >>> t.finish(); seen[-1]
    'sweep 2/2'
    """

    def __init__(self, xp, progress: Progress, total: int, label: str = "step", *, lag: int = 6):
        self.xp, self.progress, self.total, self.label, self.lag = xp, progress, max(int(total), 1), label, lag
        self.gpu = getattr(xp, "__name__", "numpy") != "numpy"
        self.events: list = []

    def before(self, i: int) -> None:
        if self.gpu and len(self.events) >= self.lag:
            self.events.pop(0).synchronize()
        done = max(0, i - len(self.events))
        self.progress.update(done / self.total, f"{self.label} {done}/{self.total}")

    def after(self, i: int) -> None:
        if self.gpu:
            ev = self.xp.cuda.Event(block=False, disable_timing=True)
            ev.record()
            self.events.append(ev)

    def finish(self) -> None:
        """Wait for the queued steps and report the last one."""
        if self.gpu and self.events:
            self.events[-1].synchronize()
        self.events.clear()
        self.progress.update(1.0, f"{self.label} {self.total}/{self.total}")


def level_weights(shapes) -> list[float]:
    """The share of a coarse-to-fine loop's work at each level: proportional to its pixels (or
    voxels), so a pyramid's finest level gets about 3/4 of the bar in 2-D, 7/8 in 3-D.

    >>> [round(w, 3) for w in level_weights([(64, 64), (128, 128)])]
    [0.2, 0.8]
    """
    n = [float(max(1, int(__import__("math").prod(s)))) for s in shapes]
    t = sum(n)
    return [x / t for x in n]


def fmt_duration(seconds: float) -> str:
    """``0:07``, ``2:05``, ``1:02:05``.

    >>> fmt_duration(7.4), fmt_duration(125), fmt_duration(3725)
    ('0:07', '2:05', '1:02:05')
    """
    s = int(round(max(float(seconds), 0.0)))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


class ProgressClock:
    """Elapsed time and an estimate of the time left, for a progress display.

    The estimate is the elapsed time scaled by what is left (``elapsed * (1 - f) / f``),
    smoothed so it does not jump on every report, and shown once 3 % is done and a second
    has passed.

    >>> c = ProgressClock(now=lambda: 0.0)
    >>> c.now = lambda: 10.0
    >>> c.text(0.5)
    '0:10 elapsed, about 0:10 left'
    """

    def __init__(self, now=time.monotonic):
        self.now = now
        self.start = now()
        self._eta: float | None = None
        self._last = 0.0

    def restart(self) -> None:
        self.start = self.now()
        self._eta = None
        self._last = 0.0

    def elapsed(self) -> float:
        return self.now() - self.start

    def remaining(self, fraction: float) -> float | None:
        el = self.elapsed()
        f = min(max(float(fraction), 0.0), 1.0)
        if f < 0.03 or el < 1.0:
            return None
        if f >= 1.0:
            return 0.0
        raw = el * (1.0 - f) / f
        if self._eta is None:
            self._eta = raw
        else:  # count the previous estimate down, then blend in the new one
            prev = max(self._eta - (el - self._last), 0.0)
            self._eta = 0.6 * prev + 0.4 * raw
        self._last = el
        return self._eta

    def text(self, fraction: float) -> str:
        el = self.elapsed()
        rem = self.remaining(fraction)
        out = f"{fmt_duration(el)} elapsed"
        if rem is not None:
            out += f", about {fmt_duration(rem)} left"
        return out


class BackgroundCall:
    """``fn(*args, **kwargs)`` on a thread of its own (named ``name``); :meth:`result` waits for it
    and returns its value or raises its exception on the caller's thread, :meth:`join` only waits.
    The thread is not a daemon: the interpreter's exit waits for it (a daemon thread still inside
    C++ at finalization can crash the exit, see :mod:`gpu_kernels.mesh.nearest`).

    ``on_cancel`` (optional, like ``name`` not passed to ``fn``): what :meth:`cancel` calls while
    the call runs (``progress.cancel`` of the :class:`Progress` that ``fn`` reports to: ``fn``
    then raises :class:`Cancelled` at its next check, which :meth:`result` raises).

    >>> job = BackgroundCall(sum, [1, 2, 3], name="example")
    >>> job.result(), job.done(), job.cancel()
    (6, True, False)
    """

    def __init__(self, fn, *args, name: str = "gpulab-background", on_cancel=None, **kwargs):
        self._value = None
        self._error: BaseException | None = None
        self._on_cancel = on_cancel
        self._thread = threading.Thread(target=self._run, args=(fn, args, kwargs), name=name, daemon=False)
        self._thread.start()

    def _run(self, fn, args, kwargs) -> None:
        try:
            self._value = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self._error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def cancel(self) -> bool:
        """Ask the call to stop (``on_cancel``); True if it was still running and has an ``on_cancel``."""
        if self.done() or self._on_cancel is None:
            return False
        self._on_cancel()
        return True

    def join(self, timeout: float | None = None) -> None:
        """Wait for the call (at most ``timeout`` seconds; :meth:`done` says whether it ended)."""
        self._thread.join(timeout)

    def result(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value
