"""mesh-speed session 10: why pymeshlab's 12k -> 4k step takes ~165 ms inside the pipeline and ~102 ms
alone (call 1, H100 host). Its time alone, on a thread while the main thread joins it, beside the full
dual graph on the main thread (what prepare_mesh does), beside a pure-Python loop, beside NumPy work,
with the interpreter's switch interval at 5 ms (default) and 0.1 ms. Best / median of N."""

import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph  # noqa: E402

N = 5


def pml_on_thread(vm, fm, side, interval):
    old = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    out = {}

    def run():
        t = time.perf_counter()
        simp._simplify_pymeshlab(vm, fm, 4000)
        out["t"] = time.perf_counter() - t
    th = threading.Thread(target=run)
    t0 = time.perf_counter()
    th.start()
    side()
    th.join()
    wall = time.perf_counter() - t0
    sys.setswitchinterval(old)
    return out["t"] * 1e3, wall * 1e3


def one(path):
    v, f = read_mesh(path)
    v, f, _, _ = clean_mesh(v, f)
    vm, fm = simp._simplify_fast(v, f, 12000)
    vm, fm, _, _ = clean_mesh(vm, fm)

    def nothing():
        pass

    def graph():
        dual_graph(v, f, delta=0.5, eta_convex=0.2, thickness=False)

    def pyloop(ms=40):
        t = time.perf_counter()
        x = 0
        while time.perf_counter() - t < ms / 1e3:
            for i in range(1000):
                x += i

    big = np.random.default_rng(0).random(2_000_000)

    def numpy_work(ms=40):
        t = time.perf_counter()
        while time.perf_counter() - t < ms / 1e3:
            np.sort(big[:200_000])
            (big * 2.0 + 1.0).sum()
    cases = [("alone", None, 0.005), ("thread+join", nothing, 0.005), ("beside dual_graph", graph, 0.005),
             ("beside dual_graph sw0.1ms", graph, 0.0001), ("beside python 40ms", pyloop, 0.005),
             ("beside python 40ms sw0.1ms", pyloop, 0.0001), ("beside numpy 40ms", numpy_work, 0.005)]
    for name, side, iv in cases:
        ts, ws = [], []
        for _ in range(N):
            if side is None:
                t = time.perf_counter()
                simp._simplify_pymeshlab(vm, fm, 4000)
                ts.append((time.perf_counter() - t) * 1e3)
                ws.append(ts[-1])
            else:
                a, b = pml_on_thread(vm, fm, side, iv)
                ts.append(a)
                ws.append(b)
        print(f"pmlside {Path(path).name} {name:28s} pymeshlab {min(ts):6.1f}/{statistics.median(ts):6.1f}  "
              f"wall {min(ws):6.1f}/{statistics.median(ws):6.1f} ms", flush=True)
    t = time.perf_counter()
    for _ in range(N):
        graph()
    print(f"pmlside {Path(path).name} dual_graph alone {(time.perf_counter() - t) / N * 1e3:.1f} ms (mean)", flush=True)


for path in sys.argv[1:]:
    one(path)
