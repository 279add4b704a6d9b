"""A terminal's Ctrl+C (SIGINT to the whole process group) during the CPU shortest paths of
``gpulab mesh-seg``: the worker processes and the fork server get it too. Before session 11 the
command hung for ever in 3 of 4 runs (the interrupted workers broke the pool, Python 3.11's pool
manager thread died on a cancelled future, and the cancel waited for the running chunks with no
timeout), or printed the fork server's traceback after "gpulab: cancelled"."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from terminal_signals import after_progress, ctrl_c_to_group_after, group_gone  # tests/framework: on sys.path

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups")]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "samples" / "creature.ply"


def test_ctrl_c_to_the_process_group_during_the_shortest_paths(tmp_path):
    """The command ends at once with the one line, and no process of its group is left."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONFAULTHANDLER="1",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("GPULAB_DEBUG", None)
    code, line, err, pgid = ctrl_c_to_group_after(
        [sys.executable, "-m", "app", "mesh-seg", str(SAMPLE), "-o", str(tmp_path / "seg.ply"), "--k", "4",
         "--device", "cpu"], marker="APSP", delay=0.3, env=env, cwd=ROOT)
    assert "APSP" in line, line
    assert (code, after_progress(err)) == (130, ["gpulab: cancelled"]), err[-4000:]
    if not group_gone(pgid):
        pytest.fail("a process of the command's group outlived it")
    assert not (tmp_path / "seg.ply").exists()
