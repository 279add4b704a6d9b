"""Session 18's review: a fork while another thread holds the mesh pipeline's cut-cache lock (taken by up to
``SETTLE_WORKERS`` row threads since the rows run on threads), the pool lock, or the learned models' decoding lock
leaves the child free to take each: the at-fork handlers give the child fresh locks. And the worker counts read
from the environment at import fall back on a bad value."""

from __future__ import annotations

import os
import threading

import pytest

from gpu_kernels.mesh import learned
from gpu_kernels.mesh import segment as segmod


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("mod,name", [(segmod, "_CUT_LOCK"), (segmod, "_POOL_LOCK"), (learned, "_SHIPPED_LOCK")])
def test_a_fork_while_another_thread_holds_the_lock_frees_it_in_the_child(mod, name):
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with getattr(mod, name):
            inside.set()
            leave.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert inside.wait(10)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: only this thread; the lock must be free
            try:
                lock = getattr(mod, name)
                ok = lock.acquire(timeout=2)
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.waitpid(pid, 0)
        os.close(r)
        assert got == b"1"
    finally:
        leave.set()
        t.join(10)


@pytest.mark.parametrize("text,want", [("abc", 7), ("-3", 7), ("", 7), (" 2 ", 2), ("0", 0)])
def test_a_bad_worker_count_in_the_environment_falls_back(monkeypatch, text, want):
    """GPULAB_MESH_SETTLE_WORKERS / GPULAB_MESH_EARLY_WORKERS are read at import: a typo must not stop the library
    from importing (before: ``int('abc')`` raised there)."""
    monkeypatch.setenv("GPULAB_MESH_X", text)
    assert segmod._env_count("GPULAB_MESH_X", 7) == want


def test_the_library_imports_with_bad_worker_counts():
    import subprocess
    import sys

    env = {**os.environ, "GPULAB_MESH_SETTLE_WORKERS": "four", "GPULAB_MESH_EARLY_WORKERS": "-1"}
    r = subprocess.run([sys.executable, "-c", "from gpu_kernels.mesh import segment as s; "
                        "print(s.SETTLE_WORKERS >= 1, s.EARLY_WORKERS)"],
                       capture_output=True, text=True, env=env, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert r.returncode == 0, r.stderr[-300:]
    assert r.stdout.split() == ["True", "1"]
