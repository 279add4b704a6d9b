"""pymeshlab first imported on a worker thread while another worker thread lives aborts the process at exit
(``malloc_consolidate``, rc 134; session 19). :mod:`gpu_kernels.mesh.simplify` imports it on the main thread when it
is itself imported there, so a plain script may call the library from threads."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("pymeshlab")

SCRIPT = textwrap.dedent("""
    import threading, sys
    import numpy as np
    from gpu_kernels.mesh import simplify  # the library, imported on the main thread as a script does

    def sphere(n):
        t, p = np.meshgrid(np.linspace(0.1, np.pi - 0.1, n), np.linspace(0, 2 * np.pi, n, endpoint=False))
        v = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], -1).reshape(-1, 3)
        i = np.arange(n * n).reshape(n, n)
        a, b, c, d = i[:, :-1], np.roll(i, -1, 0)[:, :-1], i[:, 1:], np.roll(i, -1, 0)[:, 1:]
        f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([b, d, c], -1).reshape(-1, 3)])
        return v, f

    v, f = sphere(40)
    out = {}
    gate = threading.Barrier(2)
    def work(name):
        gate.wait()
        out[name] = simplify.simplify_mesh(v, f, 600, method="pymeshlab")[1].shape[0]
    ts = [threading.Thread(target=work, args=(n,)) for n in "ab"]
    [t.start() for t in ts]
    [t.join() for t in ts]
    print("faces", out["a"], out["b"], "imported before the threads:", PRE)
""")


def test_library_from_two_threads_exits_cleanly():
    code = SCRIPT.replace("v, f = sphere(40)", "PRE = 'pymeshlab' in sys.modules\nv, f = sphere(40)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, (r.returncode, r.stderr[-800:])
    assert "imported before the threads: True" in r.stdout
    a, b = (int(x) for x in r.stdout.split()[1:3])
    assert 0 < a <= 700 and a == b
