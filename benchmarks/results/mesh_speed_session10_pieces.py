"""mesh-speed session 10: the serial pieces of the mesh path alone (best of 5, main thread, no other
work): the read, the clean, fast-simplification's step, pymeshlab's step, the full dual graph; and how
much of the GIL each simplifier leaves to a Python thread beside it (a counting loop's rate beside it
against alone)."""

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph  # noqa: E402


def best(fn, n=5):
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return min(ts) * 1e3, sorted(ts)[len(ts) // 2] * 1e3, out


def gil_share(fn):
    """Python loop iterations per ms beside fn, over alone (1: fn leaves the GIL free)."""
    stop = [False]
    cnt = [0]

    def loop():
        while not stop[0]:
            cnt[0] += 1
    t = threading.Thread(target=loop)
    t.start()
    time.sleep(0.05)
    c0, t0 = cnt[0], time.perf_counter()
    time.sleep(0.05)
    alone = (cnt[0] - c0) / (time.perf_counter() - t0)
    c0, t0 = cnt[0], time.perf_counter()
    fn()
    beside = (cnt[0] - c0) / (time.perf_counter() - t0)
    stop[0] = True
    t.join()
    return beside / alone


def one(path):
    name = Path(path).name
    r = best(lambda: read_mesh(path))
    v, f = r[2]
    c = best(lambda: clean_mesh(v, f))
    vc, fc = c[2][0], c[2][1]
    g = best(lambda: dual_graph(vc, fc, delta=0.5, eta_convex=0.2, thickness=False))
    t = 4000
    fa = best(lambda: simp._simplify_fast(vc, fc, int(simp.PRE_FACTOR * t)))
    vm, fm = fa[2]
    cm = best(lambda: clean_mesh(vm, fm))
    v12, f12 = cm[2][0], cm[2][1]
    pm = best(lambda: simp._simplify_pymeshlab(v12, f12, t))
    print(f"pieces {name} faces {fc.shape[0]} read {r[0]:.1f}/{r[1]:.1f}  clean {c[0]:.1f}/{c[1]:.1f}  "
          f"dual_graph {g[0]:.1f}/{g[1]:.1f}  fast {fa[0]:.1f}/{fa[1]:.1f}  clean12k {cm[0]:.1f}/{cm[1]:.1f}  "
          f"pymeshlab {pm[0]:.1f}/{pm[1]:.1f} ms (best/median of 5)", flush=True)
    print(f"pieces {name} GIL left to a Python thread: fast {gil_share(lambda: simp._simplify_fast(vc, fc, 12000)):.2f}"
          f"  pymeshlab {gil_share(lambda: simp._simplify_pymeshlab(v12, f12, t)):.2f}"
          f"  dual_graph {gil_share(lambda: dual_graph(vc, fc, delta=0.5, eta_convex=0.2, thickness=False)):.2f}",
          flush=True)


for path in sys.argv[1:]:
    one(path)
