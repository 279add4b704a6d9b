"""Start the Qt application: ``gpulab [FILE ...]``."""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import signal
import sys
from pathlib import Path

__all__ = ["run_gui", "make_app"]

log = logging.getLogger(__name__)


def _teardown_windows() -> None:
    """Deliver the events still pending while Python still runs, at exit.

    Left to PySide's clean-up at interpreter shutdown, a window with resize events still
    pending (e.g. after an MVS unpin) had them delivered while it was being destroyed: its plots
    called Python (pyqtgraph's ``ViewBox.resizeEvent``) on half-deleted items, and the error
    report crashed PySide (a segfault at exit in 2 of 6 scripted MVS sessions, ~30 % of a
    minimal load-run-pin-unpin script; 0 of 12 with this). Deleting the windows here as well
    (``deleteLater`` flushed with ``sendPostedEvents``) made it worse (5 of 6), so the windows
    are left to the normal clean-up.
    """
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        return
    try:
        app.processEvents()
        app.processEvents()   # what the first round's handlers posted
    except Exception:  # noqa: BLE001 (at exit: never raise)
        log.debug("delivering the pending events at exit failed", exc_info=True)


def make_app(argv: list[str] | None = None):
    """The QApplication (created once), named so QSettings and the desktop find it."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        if not os.environ.get("QT_QPA_PLATFORM") and not os.environ.get("DISPLAY") \
                and not os.environ.get("WAYLAND_DISPLAY") and sys.platform.startswith("linux"):
            log.warning("no display found (DISPLAY is unset); using Qt's offscreen platform")
            os.environ["QT_QPA_PLATFORM"] = "offscreen"
        app = QApplication([sys.argv[0] if sys.argv else "gpulab", *(argv or [])])
        atexit.register(_teardown_windows)   # runs before PySide's own clean-up (last in, first out)
    import PySide6

    from ..ui import gc_guard
    from .icons import app_icon

    gc_guard.install()   # cyclic garbage (Qt/VTK objects) collected in the GUI thread only

    if PySide6.__version__ == "6.12.0":
        log.error("PySide6 6.12.0 has a reference-counting bug in Signal.emit() that crashes "
                  "long jobs; install another version: pip install 'PySide6-Essentials!=6.12.0'")
    app.setApplicationName("gpulab")
    app.setOrganizationName("gpulab")
    app.setApplicationDisplayName("gpulab")
    app.setDesktopFileName("org.gpulab.gpulab")  # packaging/linux/org.gpulab.gpulab.desktop
    app.setWindowIcon(app_icon())
    return app


def run_gui(args: argparse.Namespace) -> int:
    """Open the window, the files and samples asked for, and run the event loop."""
    from PySide6.QtCore import QTimer

    from .main_window import MainWindow

    app = make_app()
    win = MainWindow(device=getattr(args, "global_device", None))
    win.show()
    for f in args.files:
        win.open_path(Path(f))
    if getattr(args, "samples", False):
        win.open_samples()
    if args.files:
        tab = win.tab_for_path(args.files[-1])
        if tab is not None:
            win.tab_widget.setCurrentWidget(tab)

    # Ctrl+C in the terminal closes the window cleanly
    previous_sigint = signal.signal(signal.SIGINT, lambda *_: win.close())
    tick = QTimer(win)  # lets Python see the signal while Qt's loop runs
    tick.start(250)
    tick.timeout.connect(lambda: None)

    if getattr(args, "tab", None):
        i = win.tab_index(args.tab)          # builds only that tab (start-up, issue 18 case 19)
        if i >= 0:
            win.tab_widget.setCurrentIndex(i)
        else:
            print(f"gpulab: no tab {args.tab!r}", file=sys.stderr)
    from ..ui import gc_guard

    gc_guard.settle()    # the window and its tabs are built: later collections skip them
    status = {"rc": 0}
    started = False
    if getattr(args, "run", False):
        tab = win.current_tab()
        started = bool(tab.run_default())
        if not started:
            print(f"gpulab: {tab.title} has nothing to run", file=sys.stderr)
    if args.screenshot is not None:
        def grab():
            from ..ui.capture import save_widget_png

            try:
                save_widget_png(win, args.screenshot)
                print(f"gpulab: screenshot saved to {args.screenshot}", file=sys.stderr)
            except Exception as exc:  # noqa: BLE001
                print(f"gpulab: error: screenshot failed: {exc}", file=sys.stderr)
                status["rc"] = 1
            win.close()

        delay = max(0, args.screenshot_delay)
        if started:
            tab = win.current_tab()
            once = {"done": False}

            def after_job(*_a) -> None:
                if not once["done"]:
                    once["done"] = True
                    QTimer.singleShot(delay, win, grab)

            tab.result_shown.connect(after_job)      # loading, then the run, then the result
            tab.runner.failed.connect(after_job)
            tab.runner.cancelled.connect(after_job)
        else:
            QTimer.singleShot(delay, win, grab)
    if args.quit_after is not None:
        QTimer.singleShot(max(0, args.quit_after), win, win.close)
    try:
        rc = app.exec()
    finally:
        # the window's Ctrl+C handler ends with it (a later command in the same process, the
        # test suite's, gets its own handler back)
        signal.signal(signal.SIGINT, previous_sigint)
    return status["rc"] or int(rc)
