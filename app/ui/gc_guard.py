"""Python's cyclic garbage collection, run in the GUI thread only.

Python collects reference cycles in whichever thread happens to allocate when a generation
fills up. In a Qt application that is often a job's worker thread, and the cycles it frees
may hold Qt widgets or VTK render objects of a closed tab: their C++ destructors then run
outside the GUI thread, where Qt and OpenGL are not safe, and the process can crash at
random (CI saw a segmentation fault while a worker thread was reading a PLY file).

:func:`install` turns the automatic collector off and collects from a timer in the GUI
thread instead, with the same generation thresholds: the approach of pyqtgraph's
``GarbageCollector``. Reference counting still frees everything that is not in a cycle at
once, in any thread.

>>> from app.ui.gc_guard import install          # doctest: +SKIP
>>> install()        # after the QApplication exists; idempotent    # doctest: +SKIP
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QCoreApplication, QObject, QTimer

__all__ = ["install", "installed", "settle", "collect_now"]

#: how often the GUI thread looks at the collector's counts (milliseconds)
INTERVAL_MS = 250


class _Guard(QObject):
    def __init__(self, app: QCoreApplication):
        super().__init__(app)
        self.setObjectName("gpulab-gc-guard")
        self.threshold = gc.get_threshold()
        gc.disable()
        settle()
        self.timer = QTimer(self)
        self.timer.setInterval(INTERVAL_MS)
        self.timer.timeout.connect(self.check)
        self.timer.start()
        self.destroyed.connect(gc.enable)   # the application went away: back to normal

    def check(self) -> None:
        """Collect the generations that are over their threshold (GUI thread)."""
        t0, t1, t2 = self.threshold
        c0, c1, c2 = gc.get_count()
        if t0 and c0 > t0:
            gen = 0
            if c1 > t1:
                gen = 1
                if c2 > t2:
                    gen = 2
            gc.collect(gen)


def installed() -> bool:
    """True when the running QApplication collects garbage in its GUI thread."""
    app = QCoreApplication.instance()
    return app is not None and app.findChild(_Guard, "gpulab-gc-guard") is not None


def install() -> bool:
    """Collect reference cycles only in the GUI thread from now on (needs a QApplication;
    call it from the GUI thread). Returns False when there is no application yet."""
    app = QCoreApplication.instance()
    if app is None:
        return False
    if not installed():
        _Guard(app)
    return True


def settle() -> None:
    """Collect, then move every object alive now out of the collector's sight (``gc.freeze``):
    modules, classes, the window's widgets. A full collection in the GUI thread then scans
    only what was made since (115-190 ms with all five tabs loaded before, about 0 after).
    Objects frozen here are still freed by reference counting; only cycles among them stay.
    Call it once start-up (the window, its tabs) is done."""
    gc.collect()
    gc.freeze()


def collect_now() -> int:
    """A full collection now (GUI thread), e.g. after a tab or view was closed."""
    return gc.collect()
