"""The real ``gpulab`` window, started as a user would (a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

pytestmark = [pytest.mark.gui, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def _gpulab(*args, timeout=180):
    env = dict(os.environ)
    env.pop("GPULAB_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_window_starts_opens_a_file_and_takes_a_screenshot(tmp_path):
    from PySide6.QtGui import QImage

    samples = sorted((ROOT / "resources" / "samples").glob("*.ply"))
    if not samples:
        pytest.skip("no bundled .ply sample yet")
    shot = tmp_path / "shot.png"
    r = _gpulab("--device", "cpu", str(samples[0]), "--screenshot", str(shot), "--screenshot-delay", "800")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "QThread: Destroyed" not in r.stderr
    img = QImage(str(shot))
    assert not img.isNull() and img.width() >= 600 and img.height() >= 400
    # the settings written on exit remember the opened file
    ini = Path(os.environ["GPULAB_SETTINGS_DIR"]) / "gpulab.ini"
    assert samples[0].name in ini.read_text()


def test_window_quits_by_itself_with_quit_after():
    r = _gpulab("--device", "cpu", "--quit-after", "300")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr


def test_the_window_gives_ctrl_c_back_when_it_closes(qtbot):
    """The window's "Ctrl+C closes the window" handler ends with the window: a window run
    in-process (as the test suite does) left it installed, and a later command's Ctrl+C then
    did nothing (session 4's Ctrl+C test in CI)."""
    import signal
    from argparse import Namespace

    from app.gui.app import run_gui

    before = signal.getsignal(signal.SIGINT)
    args = Namespace(files=[], samples=False, tab=None, run=False, screenshot=None, screenshot_delay=0,
                     quit_after=200, global_device="cpu")
    assert run_gui(args) == 0
    assert signal.getsignal(signal.SIGINT) is before


def test_pending_events_are_delivered_while_python_still_runs_at_exit():
    """Left to PySide's clean-up at interpreter shutdown, an MVS window's pending resize events
    were delivered during its destruction and PySide segfaulted at exit (2 of 6 scripted
    sessions): make_app registers a hook (atexit, last in first out) that delivers them first."""
    code = ("from app.gui.app import make_app, _teardown_windows\n"
            "from PySide6.QtCore import QCoreApplication, QEvent, QObject\n"
            "app = make_app()\n"
            "seen = []\n"
            "class Probe(QObject):\n"
            "    def event(self, ev):\n"
            "        seen.append(int(ev.type())); return True\n"
            "p = Probe()\n"
            "QCoreApplication.postEvent(p, QEvent(QEvent.Type.User))\n"
            "_teardown_windows()\n"
            "print('delivered', int(QEvent.Type.User) in seen)\n")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "delivered True" in r.stdout
