"""A terminal's Ctrl+C while the CPU shortest paths' worker pool starts, when the pool is started from
a thread other than the main one (the window's job thread does that). The fork server and the workers
inherit the signal mask of the thread that starts them: until session 13 ``apsp._sigint_blocked`` held
SIGINT back only on the main thread, so from a job thread the still-importing fork server died of the
Ctrl+C and the run failed with ``EOFError('unexpected EOF')`` (3 of 3 runs), while the same run from
the main thread came through (3 of 3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from terminal_signals import terminal_sigint  # tests/framework is on sys.path under pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forkserver, /proc")

ROOT = Path(__file__).resolve().parents[2]

# SIGINT to the fork server and to each of its children as soon as they are seen (every 2 ms), for as
# long as the run lasts: a Ctrl+C that lands while they start (their imports take ~0.5 s)
_SCRIPT = r"""
import os, signal, sys, threading, time
import numpy as np
import scipy.sparse as sp
from multiprocessing import forkserver
from gpu_kernels.graph import apsp
from gpu_kernels.jobs import as_progress

n = 700                                  # 700 x 700 rows: above the size that takes the pool
rng = np.random.default_rng(0)
i = np.arange(n)
g = sp.csr_matrix((np.ones(2 * n), (np.r_[i, i], np.r_[(i + 1) % n, rng.integers(0, n, n)])), shape=(n, n))
g = (g + g.T).tocsr()
out, done = {}, threading.Event()

def job():
    try:
        out["d"] = apsp._apsp_cpu_mt(n, g, as_progress(None), 2)
    except BaseException as e:
        out["e"] = repr(e)
    done.set()

def children(pid):
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return found

sent = [0]
def ctrl_c():
    while not done.is_set():
        fs = forkserver._forkserver._forkserver_pid
        for p in ([fs] + children(fs)) if fs else []:
            try:
                os.kill(p, signal.SIGINT)
                sent[0] += 1
            except ProcessLookupError:
                pass
        time.sleep(0.002)

s = threading.Thread(target=ctrl_c)
s.start()
if sys.argv[1] == "main":
    job()
else:
    t = threading.Thread(target=job, name="job")
    t.start()
    t.join()
s.join()
equal = "d" in out and bool(np.allclose(out["d"], apsp._apsp_cpu(n, g, as_progress(None))))
print(f"{sent[0]}|{out.get('e')}|{equal}", flush=True)
"""


@pytest.mark.parametrize("thread", ["main", "job"])
def test_ctrl_c_while_the_pool_starts_from_any_thread(thread):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # SIGINT at its default, as from a terminal, whatever started the tests (a background launch
    # ignores it, and the fork server would inherit that and never see the Ctrl+C)
    r = subprocess.run([sys.executable, "-c", _SCRIPT, thread], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=120, preexec_fn=terminal_sigint)
    assert r.returncode == 0, r.stderr[-3000:]
    sent, error, equal = r.stdout.strip().split("|")
    assert int(sent) >= 1, r.stdout           # the fork server was there to be interrupted
    assert (error, equal) == ("None", "True"), r.stdout + r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "KeyboardInterrupt" not in r.stderr, r.stderr[-3000:]
