"""mesh-live7, session 18: where the mesh k edit's cluster stage spends its time on a GPU (no Qt; the stage cache).

    python benchmarks/results/mesh_live7_session18_prof.py --data DIR [--device cuda] [--full]

PSB 101 (16,998 faces), a first run at k = 3, then k edits 5, 6, 7 through the stage cache; each edit's cluster
stage timed, with fuzzy_cluster_many's lockstep loop split into its GPU steps (synchronised after each: the
membership kernel, the product D @ W, the argmin, the copy to the host) and the Python around them; then the
same product, kernel and argmin timed alone on D, and a cProfile of one more edit's cluster stage.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pathlib
import pstats
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from app.tools import mesh_seg  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402
from gpu_kernels.mesh import cluster as cl  # noqa: E402
from gpu_kernels.mesh import segment as sg  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=pathlib.Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--full", action="store_true", help="max_faces off (else the default working resolution)")
    a = ap.parse_args()
    be = get_backend(a.device)
    xp = be.xp
    data = mesh_seg.load(a.data / "psb" / "off" / "101.off")
    tool = mesh_seg.TOOL
    cache = StageCache()
    base = {"k": 3, "max_faces": None} if a.full else {"k": 3}
    p = tool.params.validate(base)
    tool.run_staged(data, p, device=be, cache=cache)
    sync = be.synchronize if be.is_gpu else (lambda: None)

    # the lockstep loop, step by step (synchronised: the GPU's own time per step)
    steps: dict = {}

    def timed(name, fn):
        def inner(*args, **kw):
            sync()
            t = time.perf_counter()
            out = fn(*args, **kw)
            sync()
            steps.setdefault(name, []).append(time.perf_counter() - t)
            return out
        return inner

    real_many, real_mem = cl.fuzzy_cluster_many, cl.memberships_many
    calls = []

    def many(D, ks, **kw):
        t = time.perf_counter()
        out = real_many(D, ks, **kw)
        calls.append({"ks": list(ks), "n": int(D.shape[0]), "dtype": str(D.dtype),
                      "c_contig": bool(D.flags.c_contiguous), "type": type(D).__module__,
                      "iters": [int(f.n_iter) for f in out], "s": time.perf_counter() - t})
        return out

    for k in (5, 6, 7):
        steps.clear()
        calls.clear()
        sg.fuzzy_cluster_many = many
        cl.memberships_many = timed("memberships_many", real_mem)
        try:
            t = time.perf_counter()
            _, rep = tool.run_staged(data, {**p, "k": k}, device=be, cache=cache)
            wall = time.perf_counter() - t
        finally:
            sg.fuzzy_cluster_many = real_many
            cl.memberships_many = real_mem
        print(f"k {k}: wall {1e3 * wall:.1f} ms, stages " + ", ".join(f"{n} {1e3 * s:.1f}" for n, s in rep.seconds.items()),
              flush=True)
        for c in calls:
            print(f"   fuzzy_cluster_many {c}", flush=True)
        for n, ts in steps.items():
            print(f"   {n}: {len(ts)} calls, {1e3 * sum(ts):.2f} ms", flush=True)

    # the steps alone on D
    prep = next(v for key in cache.keys() for hit, v in [cache.get(key)] if isinstance(v, sg.PreparedMesh))
    D = prep.distances[0][0]
    n = int(D.shape[0])
    print(f"D: {type(D).__module__} {D.dtype} {D.shape} c_contiguous {D.flags.c_contiguous}", flush=True)
    for kt in (38, 45, 53):
        W = xp.asarray(np.random.default_rng(0).random((n, kt), dtype=np.float32))
        for name, fn in (("D @ W", lambda W=W: xp.matmul(D, W)),
                         ("argmin", lambda W=W: xp.argmin(W, axis=0)),
                         ("D[:, reps]", lambda kt=kt: D[:, xp.arange(kt) * 7])):
            fn()
            sync()
            t = time.perf_counter()
            for _ in range(10):
                fn()
            sync()
            print(f"   {name} (n {n}, {kt} columns): {1e2 * (time.perf_counter() - t):.3f} ms each", flush=True)
        if be.is_gpu:
            reps = [np.arange(x) * 11 for x in (5, 8, 10, 15)]
            real_mem(D, reps, 2.0, be)
            sync()
            t = time.perf_counter()
            for _ in range(10):
                real_mem(D, reps, 2.0, be)
            sync()
            print(f"   memberships_many (38 columns): {1e2 * (time.perf_counter() - t):.3f} ms each", flush=True)
            break
    # the fused lockstep loop of fuzzy_cluster_many, each step synchronised (k = 7's four clusterings)
    if be.is_gpu:
        order = prep.orders[0][0]
        ks = [7, 11, 14, 21]
        reps = [order.reps[:k].copy() for k in ks]
        kk = [int(r.size) for r in reps]
        tt = {"memberships": 0.0, "matmul": 0.0, "argmin": 0.0, "to_host": 0.0, "python": 0.0}
        active = list(range(len(ks)))
        n_it = 0
        t_all = time.perf_counter()
        for _ in range(20):
            if not active:
                break
            n_it += 1
            t = time.perf_counter()
            P, W = real_mem(D, [reps[i] for i in active], 2.0, be)
            sync()
            t1 = time.perf_counter()
            C = xp.matmul(D, W)
            sync()
            t2 = time.perf_counter()
            am_d = xp.argmin(C, axis=0)
            sync()
            t3 = time.perf_counter()
            am = be.asnumpy(am_d).astype(np.int64)
            t4 = time.perf_counter()
            offs = np.r_[0, np.cumsum([kk[i] for i in active])]
            still = []
            for j, i in enumerate(active):
                new = cl._keep_old_on_duplicate(am[offs[j]:offs[j + 1]].copy(), reps[i])
                if not np.array_equal(new, reps[i]):
                    reps[i] = new
                    still.append(i)
            active = still
            t5 = time.perf_counter()
            for key, v in zip(tt, (t1 - t, t2 - t1, t3 - t2, t4 - t3, t5 - t4), strict=True):
                tt[key] += v
        print(f"fused loop k 7 alone, synchronised: {n_it} iterations, {1e3 * (time.perf_counter() - t_all):.1f} ms: "
              + ", ".join(f"{key} {1e3 * v:.2f}" for key, v in tt.items()), flush=True)
    # the cluster stage with the early cuts off (nothing beside the loop), k 8 and 10
    sg.EARLY_SETTLE = False
    for k in (8, 10):
        _, rep = tool.run_staged(data, {**p, "k": k}, device=be, cache=cache)
        print(f"early cuts off, k {k}: " + ", ".join(f"{n} {1e3 * s:.1f}" for n, s in rep.seconds.items()), flush=True)
    sg.EARLY_SETTLE = True
    pr = cProfile.Profile()
    pr.enable()
    tool.run_staged(data, {**p, "k": 9}, device=be, cache=cache)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(25)
    print(s.getvalue()[:6000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
