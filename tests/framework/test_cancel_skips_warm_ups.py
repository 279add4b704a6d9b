"""Session 13 review #13: a cancelled command does not wait for a warm-up compile (the text reader's, the mesh
merge loop's) that no result needs: the ``gpulab`` process ends at once with 130 (``os._exit`` after the
flush, so no thread is left half-way in C++ at finalization); a caller of ``main(argv)`` in its own process
gets 130 back and is not ended."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import sys, threading, time
import app.cli as cli

def fake_main(argv):
    threading.Thread(target=time.sleep, args=(60,), name="gpulab-test-numba-warm-up").start()
    if "{mode}".startswith("error"):
        from gpu_kernels.errors import InputError
        raise InputError("the file is not a mesh")
    raise KeyboardInterrupt

cli._main = fake_main
sys.argv = ["gpulab", "mesh-seg", "x.ply"]
if sys.argv[1:] and "{mode}" in ("entry", "error-entry"):
    raise SystemExit(cli.main())
code = cli.main(["mesh-seg", "x.ply"])
print("@@returned", code, flush=True)
import os
os._exit(0)  # (the test's own end: the sleeping thread would hold the interpreter's exit)
"""


def _run(mode):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", SCRIPT.replace("{mode}", mode)], cwd=ROOT, capture_output=True,
                       text=True, timeout=50, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return r, time.monotonic() - t0


def test_the_gpulab_process_does_not_wait_for_a_warm_up_after_a_cancel():
    r, took = _run("entry")
    assert r.returncode == 130, r.stderr[-2000:]
    assert "gpulab: cancelled" in r.stderr and "waiting for" not in r.stderr
    assert took < 30, took   # the warm-up sleeps 60 s: waited for, it would time the test out


def test_an_error_after_a_read_does_not_wait_for_a_warm_up_either():
    """(The session's final read: a mesh that reads but is then rejected waited for the compile after its one line.)"""
    r, took = _run("error-entry")
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip().splitlines()[-1] == "gpulab: error: the file is not a mesh"
    assert took < 30, took


def test_a_caller_of_main_in_its_own_process_gets_130_back():
    r, _ = _run("call")
    assert "@@returned 130" in r.stdout, (r.stdout, r.stderr[-2000:])


def test_numba_does_not_colour_its_messages_through_colorama():
    """numba's coloured typing messages go through colorama, whose init/deinit replace sys.stdout/sys.stderr from
    the compiling thread (a warm-up thread): printed lines of the main thread then went to a stale stream (session
    13 review #4: 7 test_cli_mesh failures in one process on an empty numba cache). gpu_kernels turns it off."""
    code = ("import gpu_kernels, numba.core.errors as e; print('@@', type(e.termcolor()).__name__)")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING"}
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert "@@ NOPColorScheme" in r.stdout, (r.stdout, r.stderr[-1000:])
