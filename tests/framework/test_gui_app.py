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
