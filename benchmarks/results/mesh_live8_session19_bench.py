"""mesh-live8, session 19: the full-resolution k edit's representative update on the GPU (no Qt; the stage cache).

    python mesh_live8_session19_bench.py --data DIR --arm old|new [--kernel] [--check] --json OUT

Run from the root of an extracted revision (``old``: the parent of the change; ``new``: the change). ``--kernel`` and
``--check`` need the fused kernel, which was taken out of the library after this call (it was slower): run them on
a revision from 6315b2a to 68e81ef (the lead's final call ran them on 1798b4b).
PSB 101 (16,998 faces), ``max_faces`` off: a first run at k = 3, then the k edits 5, 6, 7, 4, 8 through the stage
cache, each timed (wall, the stages' seconds) with its labels' SHA-1, representatives and iteration counts.

``--kernel`` (new arm): on the real D of that mesh, alternating, per round: cuBLAS's ``D @ W`` + the strided
``argmin(axis=0)`` (old), the same product + the contiguous argmin (``column_argmin``), and
``fused_product_argmin``; W the memberships of 4 clusterings (23, 38 and 53 columns), timed with CUDA events; the
slices of the fused kernel swept once; the argmins of the fused kernel against cuBLAS's on those W.
``--check`` (new arm): k edits 9, 10, 12 with every update's fused argmins compared to cuBLAS's on the same W
(differing representatives counted, the trajectory the fused one's), then fresh runs: with the fused kernel (a k
edit must equal it) and with it switched off (``FUSED_ARGMIN_MIN_N`` above n: cuBLAS; do the final labels differ?).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path.cwd()))

import numpy as np  # noqa: E402

from app.tools import mesh_seg  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402
from gpu_kernels.mesh import cluster as cl  # noqa: E402
from gpu_kernels.mesh import segment as sg  # noqa: E402

HBM = 3.35e12  # H100 SXM's HBM3, bytes/s


def sha(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(a)).tobytes()).hexdigest()[:12]


def summary(res) -> dict:
    s = res.seg
    return {"k": int(s.k), "labels": sha(s.labels), "reps": [int(x) for x in np.asarray(s.representatives).ravel()],
            "iterations": s.info.get("iterations")}


def edits(tool, data, p, be, cache, ks) -> list:
    out = []
    for k in ks:
        be.synchronize()
        t = time.perf_counter()
        res, rep = tool.run_staged(data, {**p, "k": k}, device=be, cache=cache)
        be.synchronize()
        wall = time.perf_counter() - t
        row = {"k": k, "wall_ms": 1e3 * wall, "stages_ms": {n: 1e3 * s for n, s in rep.seconds.items()},
               **summary(res)}
        out.append(row)
        print(f"edit k {k}: wall {row['wall_ms']:.1f} ms, " + ", ".join(f"{n} {v:.1f}" for n, v in row["stages_ms"].items())
              + f", labels {row['labels']}, iterations {row['iterations']}", flush=True)
    return out


def kernel_bench(be, D, order) -> dict:
    xp = be.xp
    n = int(D.shape[0])
    ev0, ev1 = xp.cuda.Event(), xp.cuda.Event()

    def timed(fn, reps=20):
        fn()
        ev0.record()
        for _ in range(reps):
            fn()
        ev1.record()
        ev1.synchronize()
        return xp.cuda.get_elapsed_time(ev0, ev1) / reps

    out = {}
    for ks in ((3, 5, 6, 9), (5, 8, 10, 15), (7, 11, 14, 21)):
        reps = [order.reps[:min(k, order.count)].copy() for k in ks]
        _, W = cl.memberships_many(D, reps, 1.0, be)
        kt = int(W.shape[1])
        old = lambda W=W: xp.argmin(xp.matmul(D, W), axis=0)  # noqa: E731
        contig = lambda W=W: xp.ascontiguousarray(xp.matmul(D, W).T).argmin(axis=1)  # noqa: E731
        mm = lambda W=W: xp.matmul(D, W)  # noqa: E731
        fused = lambda W=W: cl.fused_product_argmin(D, W, be, host=False)  # noqa: E731
        fused_host = lambda W=W: cl.fused_product_argmin(D, W, be)  # noqa: E731 (+ the copy to the host, its wait)
        old_host = lambda W=W: be.asnumpy(xp.argmin(xp.matmul(D, W), axis=0))  # noqa: E731
        names = {"cublas_matmul": mm, "old_matmul_strided_argmin": old, "matmul_contiguous_argmin": contig,
                 "fused": fused, "old_with_host_copy": old_host, "fused_with_host_copy": fused_host}
        t = {k: [] for k in names}
        for r in range(5):  # alternating, reversed every other round
            for name in (list(names) if r % 2 == 0 else list(names)[::-1]):
                t[name].append(timed(names[name]))
        med = {k: statistics.median(v) for k, v in t.items()}
        groups = -(-kt // 64)
        sweep = {}
        for s in (1, 2, 3, 4, 5, 6, 8):
            sweep[s] = timed(lambda W=W, s=s: cl.fused_product_argmin(D, W, be, slices=s, host=False))
        a_old = be.asnumpy(old()).astype(np.int64)
        a_con = be.asnumpy(contig()).astype(np.int64)
        a_fus = cl.fused_product_argmin(D, W, be)
        C = xp.matmul(D.astype(xp.float64), W.astype(xp.float64))
        a_64 = be.asnumpy(xp.argmin(C, axis=0)).astype(np.int64)
        row = {"columns": kt, "ms": med, "runs_ms": t, "slices_sweep_ms": sweep,
               "fused_GBps": n * n * 4 * groups / (med["fused"] * 1e-3) / 1e9,
               "fused_pct_hbm": 100 * n * n * 4 * groups / (med["fused"] * 1e-3) / HBM,
               "cublas_GBps": n * n * 4 / (med["cublas_matmul"] * 1e-3) / 1e9,
               "contiguous_equals_strided": bool(np.array_equal(a_old, a_con)),
               "fused_differs_from_cublas": int(np.sum(a_fus != a_old)),
               "fused_differs_from_fp64": int(np.sum(a_fus != a_64)),
               "cublas_differs_from_fp64": int(np.sum(a_old != a_64))}
        out[str(kt)] = row
        print(f"kernel {kt} columns: " + ", ".join(f"{k} {v:.3f} ms" for k, v in med.items())
              + f"; fused {row['fused_GBps']:.0f} GB/s ({row['fused_pct_hbm']:.0f}% of 3.35 TB/s), cuBLAS "
              f"{row['cublas_GBps']:.0f} GB/s; slices " + " ".join(f"{s}:{v:.3f}" for s, v in sweep.items())
              + f"; contiguous==strided {row['contiguous_equals_strided']}, fused!=cuBLAS "
              f"{row['fused_differs_from_cublas']}/{kt}, fused!=fp64 {row['fused_differs_from_fp64']}, "
              f"cuBLAS!=fp64 {row['cublas_differs_from_fp64']}", flush=True)
    return out


def check(tool, data, p, be, cache, earlier) -> dict:
    xp = be.xp
    counts = {"updates": 0, "columns": 0, "differing_columns": 0, "updates_with_a_difference": 0}
    real = cl.fused_product_argmin

    def compared(D, W, device, slices=None):
        got = real(D, W, device, slices)
        ref = be.asnumpy(xp.argmin(xp.matmul(D, W), axis=0)).astype(np.int64)
        d = int(np.sum(got != ref))
        counts["updates"] += 1
        counts["columns"] += int(got.size)
        counts["differing_columns"] += d
        counts["updates_with_a_difference"] += int(d > 0)
        return got

    cl.fused_product_argmin = compared
    try:
        ed = edits(tool, data, p, be, cache, (9, 10, 12))
    finally:
        cl.fused_product_argmin = real
    print(f"fused vs cuBLAS argmins in the k edits 9, 10, 12: {counts}", flush=True)
    out = {"argmin_comparison": counts, "edits": ed, "fresh": {}}
    by_k = {e["k"]: e for e in [*earlier, *ed]}
    for k in (5, 7, 9, 12):
        fresh = summary(mesh_seg.run(data, {**p, "k": k}, device=be))
        cl.FUSED_ARGMIN_MIN_N, keep = 10**9, cl.FUSED_ARGMIN_MIN_N
        try:
            cub = summary(mesh_seg.run(data, {**p, "k": k}, device=be))
        finally:
            cl.FUSED_ARGMIN_MIN_N = keep
        edit_ok = by_k[k]["labels"] == fresh["labels"] and by_k[k]["reps"] == fresh["reps"]
        out["fresh"][k] = {"fused": fresh, "cublas": cub, "edit_equals_fresh": edit_ok}
        print(f"fresh k {k}: the k edit = the fresh run (labels, reps): {edit_ok}; fused labels {fresh['labels']} reps "
              f"{fresh['reps']} iterations {fresh['iterations']}; cuBLAS labels {cub['labels']} reps {cub['reps']} "
              f"iterations {cub['iterations']}; same labels {fresh['labels'] == cub['labels']}", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=pathlib.Path, required=True)
    ap.add_argument("--arm", required=True)
    ap.add_argument("--kernel", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json", type=pathlib.Path, required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mesh", type=pathlib.Path, help="another mesh (a smoke test); default DATA/psb/off/101.off")
    a = ap.parse_args()
    be = get_backend(a.device)
    data = mesh_seg.load(a.mesh or a.data / "psb" / "off" / "101.off")
    tool = mesh_seg.TOOL
    cache = StageCache()
    p = tool.params.validate({"k": 3, "max_faces": None})
    t = time.perf_counter()
    tool.run_staged(data, p, device=be, cache=cache)
    be.synchronize()
    out = {"arm": a.arm, "first_run_s": time.perf_counter() - t,
           "fused_switch": getattr(cl, "FUSED_ARGMIN_MIN_N", None)}
    print(f"{a.arm}: first run {out['first_run_s']:.2f} s; FUSED_ARGMIN_MIN_N {out['fused_switch']}", flush=True)
    out["edits"] = edits(tool, data, p, be, cache, (5, 6, 7, 4, 8))
    prep = next(v for key in cache.keys() for hit, v in [cache.get(key)] if isinstance(v, sg.PreparedMesh))
    D = prep.distances[0][0]
    if a.kernel and be.is_gpu:
        out["kernel"] = kernel_bench(be, D, prep.orders[0][0])
    if a.check:
        out["check"] = check(tool, data, p, be, cache, out["edits"])
    a.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
