"""A terminal's Ctrl+C just as the CPU shortest paths start 16 worker processes (session 31).

On the H200 (16 cores) ``test_mends11_group_sigint`` failed once: after "gpulab: cancelled" a worker still starting
printed a FileNotFoundError's traceback (its queue's semaphore was gone with its parent). On the development box's
2 cores, with 16 workers (the affinity faked, as a 16-core machine has) and the Ctrl+C 50 ms after the APSP line,
it failed 8 of 8 times, also as the resource tracker's "leaked semaphore objects" warning: Python ran the
KeyboardInterrupt inside ``submit``, between a worker's start and the pool's record of it, so the pool neither
waited for that worker nor knew it. ``apsp._sigint_blocked`` now holds such a Ctrl+C back in the main thread until
the submits are done."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from terminal_signals import after_progress, ctrl_c_to_group_after, group_gone  # tests/framework: on sys.path

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups")]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "samples" / "creature.ply"
WORKERS = 16

# gpulab's CLI with the CPU affinity of a 16-core machine: the shortest paths start 16 workers
_SCRIPT = f"""
import os, sys
os.sched_getaffinity = lambda pid: set(range({WORKERS}))
from app.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_ctrl_c_as_16_workers_start_is_one_line(tmp_path, delay):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("GPULAB_DEBUG", None)
    out = tmp_path / "seg.ply"
    code, line, err, pgid = ctrl_c_to_group_after(
        [sys.executable, "-c", _SCRIPT, "mesh-seg", str(SAMPLE), "-o", str(out), "--k", "4", "--device", "cpu"],
        marker="APSP", delay=delay, env=env, cwd=ROOT, wait_s=60)
    assert f"Dijkstra on {WORKERS} processes" in line, line
    assert (code, after_progress(err)) == (130, ["gpulab: cancelled"]), err[-4000:]
    assert not out.exists()
    if not group_gone(pgid):
        pytest.fail("a process of the command's group outlived it")
