"""Lead, session 20: what ``segment.K_STARTS_ONLY`` (round q15) does to an integer k's time (no Qt; GPU).

    python kedit_bench.py --data DIR --arm old|new --json OUT [--mesh50 PATH] [--rounds 7]

Run from the root of an extracted revision. PSB 101 (16,998 faces): a first run at k = 3 (and again from k = "auto": the first integer edit then clusters
the integer k's own starts, which k = "auto" does not use), then the k edits
5, 6, 7, 4, 8 and then 9, 10, 12, 11, 13 through the stage cache (each k once: an edit back to a k is the cache's), at full resolution (``max_faces`` off)
and at the default working resolution; each edit's labels against a fresh run at the same k (k 5 and 8). Then an
integer k end to end from the file (load + run, defaults, k = 6) on 101 (17k) and the 50k armadillo, median of
``--rounds`` after one warm-up, with the labels' SHA-1.
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
from gpu_kernels.mesh import segment as sg  # noqa: E402


def sha(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(a)).tobytes()).hexdigest()[:12]


def edits(tool, data, be, max_faces, first=3) -> dict:
    cache = StageCache()
    p = tool.params.validate({"k": first, "max_faces": max_faces})
    t = time.perf_counter()
    tool.run_staged(data, p, device=be, cache=cache)
    be.synchronize()
    out = {"first_run_s": time.perf_counter() - t, "passes": []}
    for ks in ((5, 6, 7, 4, 8), (9, 10, 12, 11, 13)):  # (each k once: a k edited before is the cache's)
        rows = []
        for k in ks:
            be.synchronize()
            t = time.perf_counter()
            res, _rep = tool.run_staged(data, {**p, "k": k}, device=be, cache=cache)
            be.synchronize()
            rows.append({"k": k, "wall_ms": 1e3 * (time.perf_counter() - t), "labels": sha(res.seg.labels)})
        out["passes"].append(rows)
    out["fresh_equal"] = {}
    for k in (5, 8, 12):
        fresh = mesh_seg.run(data, {**p, "k": k}, device=be)
        out["fresh_equal"][k] = sha(fresh.seg.labels) == next(r["labels"] for ps in out["passes"] for r in ps if r["k"] == k)
    out["median_ms"] = [statistics.median(r["wall_ms"] for r in ps) for ps in out["passes"]]
    return out


def e2e(path, be, rounds) -> dict:
    times, labels = [], None
    for r in range(rounds + 1):
        be.synchronize()
        t = time.perf_counter()
        data = mesh_seg.load(path)
        res = mesh_seg.run(data, {"k": 6}, device=be)
        be.synchronize()
        if r:
            times.append(1e3 * (time.perf_counter() - t))
        labels = sha(res.seg.labels)
    return {"median_ms": statistics.median(times), "best_ms": min(times), "runs_ms": times, "labels": labels,
            "faces": int(np.asarray(res.seg.labels).size)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=pathlib.Path, required=True)
    ap.add_argument("--arm", required=True)
    ap.add_argument("--json", type=pathlib.Path, required=True)
    ap.add_argument("--mesh50", type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    be = get_backend(a.device)
    out = {"arm": a.arm, "K_STARTS_ONLY": getattr(sg, "K_STARTS_ONLY", None)}
    m17 = a.data / "psb" / "off" / "101.off"
    data = mesh_seg.load(m17)
    tool = mesh_seg.TOOL
    for name, mf, first in (("full", None, 3), ("working", "auto", 3), ("full_from_auto", None, "auto"),
                            ("working_from_auto", "auto", "auto")):
        out["edits_" + name] = e = edits(tool, data, be, mf, first)
        print(f"{a.arm} edits {name}: first {e['first_run_s']:.2f} s; median per pass "
              + ", ".join(f"{m:.1f}" for m in e["median_ms"]) + " ms; last pass "
              + ", ".join(f"k{r['k']} {r['wall_ms']:.1f}" for r in e["passes"][-1])
              + f"; edit == fresh {e['fresh_equal']}", flush=True)
    for name, path in (("e2e_17k", m17), ("e2e_50k", a.mesh50)):
        if path is None:
            continue
        out[name] = r = e2e(path, be, a.rounds)
        print(f"{a.arm} {name} k=6: best {r['best_ms']:.1f} median {r['median_ms']:.1f} ms of {a.rounds}; "
              f"labels {r['labels']} ({r['faces']} faces)", flush=True)
    a.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
