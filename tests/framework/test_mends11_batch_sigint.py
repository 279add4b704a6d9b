"""A terminal's Ctrl+C during ``gpulab batch`` (SIGINT to the whole process group: the driver and the
local cluster's worker processes) ends with "gpulab: cancelled" and exit 130, nothing else.

Before session 11 the workers took the SIGINT too and logged their shutdown's tracebacks
(``distributed.worker - ERROR - ... CancelledError``, ``CommClosedError``), and the driver's nannies
warned "Worker process still alive after 4.0 seconds, killing", beside the one line."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminal_signals import terminal_sigint  # tests/framework is on sys.path under pytest

pytest.importorskip("distributed")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups")]

ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_to_the_process_group_says_cancelled_only(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for i in range(6):
        shutil.copy(ROOT / "resources" / "samples" / "imseg" / "astronaut.png", src / f"a{i}.png")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("GPULAB_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "app", "--device", "cpu", "batch", "imseg", str(src), "--out",
                             str(tmp_path / "out"), "--workers", "2"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, encoding="utf-8", errors="replace", start_new_session=True, preexec_fn=terminal_sigint)
    try:
        t0 = time.monotonic()
        header = ""
        while time.monotonic() - t0 < 120 and "item(s) on" not in header:   # the workers are up
            header = proc.stderr.readline()
            if not header:
                break
        assert "item(s) on" in header, header
        time.sleep(1.0)                 # items at work
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    said = [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip() and not ln.lstrip().startswith("[")]
    assert (proc.returncode, said) == (130, ["gpulab: cancelled"]), err[-4000:]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)      # a process of the group is still there
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("a worker process outlived the cancelled batch")
