"""Issue 21, session 8, second pre-registered test: a region colour-histogram chi-squared factor on
the contours default's merge cost (rule: ``benchmarks/results/imseg_quality_session8.md``, committed
before this script ran).

Every region keeps 16-bin histograms of its CIELAB L, a and b (the production's fixed-point colour
q, 16 per unit), summed on merges; the cost of a pair is the default's float32 cost times
(1 + h chi2), chi2 the mean over the channels of 1/2 sum (p_A - p_B)^2 / (p_A + p_B). The merge is
session 7's hooked copy of ``merge_np`` (``imseg_session7_quality.merge``), which carries every
per-region array of the graph, the histograms included.

Usage::

    python benchmarks/imseg_session8_hist.py --cache /tmp/imq8 --workers 2 [--val]
"""

from __future__ import annotations

import json
import math
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_cli  # noqa: E402
import imseg_session7_quality as S7  # noqa: E402
import imseg_session8_quality as S8  # noqa: E402
from _common import bsds_arguments, superpixel_graph, worker_map  # noqa: E402
from bench_cli import BadInput, check_cache_source, check_json_input, write_json  # noqa: E402

H = (2, 8, 32)
SEEDS = tuple(range(811, 819))
NB = 16
OUT = ROOT / "benchmarks" / "results" / "imseg_quality_session8_hist.json"


def hist_bins(q: np.ndarray) -> np.ndarray:
    """(3, H, W) bin of every pixel per channel (0..15) from the fixed-point CIELAB q."""
    L = np.clip(q[0] // 100, 0, NB - 1)
    a = np.clip((q[1] + 1024) // 128, 0, NB - 1)
    b = np.clip((q[2] + 1024) // 128, 0, NB - 1)
    return np.stack([L, a, b])


def region_hist(comps: np.ndarray, R: int, q: np.ndarray) -> np.ndarray:
    """(R, 3 * 16) int64 counts of each region's pixels per channel bin."""
    fl = comps.ravel().astype(np.int64) - 1
    bins = hist_bins(q)
    return np.concatenate([np.bincount(fl * NB + bins[c].ravel(), minlength=R * NB).reshape(R, NB)
                           for c in range(3)], 1).astype(np.int64)


def chi2(area, hist, a, b) -> np.ndarray:
    """Mean over the channels of 1/2 sum (p_A - p_B)^2 / (p_A + p_B) of the pairs (a, b)."""
    pA = hist[a] / area[a, None].astype(np.float64)
    pB = hist[b] / area[b, None].astype(np.float64)
    s = pA + pB
    d = np.where(s > 0, (pA - pB) ** 2 / np.where(s > 0, s, 1.0), 0.0)
    return d.sum(1) / 6.0


def prepare(item) -> dict:
    """Session 7's prepared image (superpixels, graph, contingency) with the regions' histograms."""
    from imseg_session3 import contingency


    i, img, gts, _ = item
    sp = superpixel_graph(img)
    h, w, S, comps, R, g, q = (sp[k] for k in ("h", "w", "S", "comps", "R", "graph", "q"))
    g["hist"] = region_hist(comps, R, q)
    return {"id": i, "h": h, "w": w, "S": S, "graph": g, "cont": contingency(comps, gts)}


def load(root: Path, cache: Path, tag: str, mapf) -> list:
    import imseg as B

    p = cache / f"hist_{tag}.pkl"
    if p.exists():
        return pickle.loads(p.read_bytes())
    D = mapf(prepare, list(B.bsds_items(root)))
    cache.mkdir(parents=True, exist_ok=True)
    p.write_bytes(pickle.dumps(D))
    return D


def cost_hist(h: float):
    from gpu_kernels.imseg import contours as C

    def f(st, a, b, el, eg, inv_norm, npx, size_k):
        base = C.merge_cost_np(st["area"], st["rsum"], a, b, el, eg, 2.0 * C.GSCALE, C.B0, inv_norm, npx, size_k)
        if not h:
            return base
        return (base.astype(np.float64) * (1.0 + h * chi2(st["area"], st["hist"], a, b))).astype(np.float32)

    return f


def run(d: dict, cand: dict):
    """(covering, PRI, VI, segments) of one image under {"c": c, "h": h}."""
    from imseg_session3 import scores

    from gpu_kernels.imseg import contours as C

    n = d["h"] * d["w"]
    into = S7.merge(d["graph"], cost_hist(cand.get("h", 0)), 1 / math.sqrt(n), C.min_region_area(d["S"]),
                    C.SIZE_K, {"kind": "thr", "c": cand["c"]})
    seg, count = C._resolve(into)
    return (*scores(d, seg), count)


def _job(args):
    d, cands = args
    return [run(d, c) for c in cands]


def name(c: dict) -> str:
    return "kind=thr|c=3.3" if not c.get("h") else f"kind=thr|c={c['c']}|h={c['h']}"


def matched_c(D, mapf, h: float, target: float, lo=3.3, hi=5.5, steps=8) -> float:
    """The coarseness (0.01) whose mean segment count on D is closest to ``target`` (bisection)."""
    seen = {}
    for _ in range(steps):
        mid = round((lo + hi) / 2, 2)
        seen[mid] = np.mean([r[0][3] for r in mapf(_job, [(d, [{"c": mid, "h": h}]) for d in D])])
        lo, hi = (mid, hi) if seen[mid] > target else (lo, mid)
    return min(seen, key=lambda c: abs(seen[c] - target)), seen


def main(argv=None):
    a = bsds_arguments(__doc__.splitlines()[0], argv, cache="/tmp/imq8",
                       val="score the 20 images (after the decision)",
                       out=f"the results JSON, read first where it exists (default {OUT}, used only where it does "
                           "not exist yet: name it to add to it)")
    out = S8.check_args(a, OUT, mark=False)
    rep = check_json_input("--out", out) if out.exists() else {}
    if not isinstance(rep, dict) or ("rows" in rep and "candidates" not in rep):
        raise BadInput(f"--out: {out} is not this script's results JSON")
    check_cache_source("--cache", a.cache, a.data)
    t0 = time.time()
    mapf, close_pool = worker_map(a.workers)
    D = load(Path(a.data) / "train", Path(a.cache), "train", mapf)
    print(f"{len(D)} training images prepared ({time.time() - t0:.0f} s)", flush=True)
    if "rows" not in rep:
        target = 27.105
        rep["bisection"] = {}
        cands = [{"c": 3.3}]
        for h in H:
            c, seen = matched_c(D, mapf, h, target)
            rep["bisection"][str(h)] = {"c_star": c, "segments": {str(k): round(v, 3) for k, v in seen.items()}}
            print(f"h {h}: c* {c} ({time.time() - t0:.0f} s) {seen}", flush=True)
            cands += [{"c": round(c + dc, 2), "h": h} for dc in (-0.05, 0.0, 0.05)]
        res = mapf(_job, [(d, cands) for d in D])
        rows = {name(c): [list(r[i]) for r in res] for i, c in enumerate(cands)}
        rep["candidates"] = cands
        rep["train_means"] = {k: np.mean(v, 0).round(4).tolist() for k, v in rows.items()}
        for k, m in rep["train_means"].items():
            print(f"   {k:30s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
        assert np.allclose(rep["train_means"]["kind=thr|c=3.3"], [0.5965, 0.8214, 1.7437, 27.105], atol=1e-4)
        rep["cv"] = S8.cv(rows, SEEDS)
        rep["paired_pick_minus_default"] = S8.paired(rows, rep["cv"]["pick_all200"])
        for p in rep["cv"]["perms"]:
            print(p, flush=True)
        print({k: v for k, v in rep["cv"].items() if k != "perms"}, rep["paired_pick_minus_default"], flush=True)
        rep["rows"] = rows
    if a.val:
        V = load(Path(a.data), Path(a.cache), "val", mapf)
        cands = rep["candidates"]
        vres = mapf(_job, [(d, cands) for d in V])
        rep["val_means"] = {name(c): np.mean([r[i] for r in vres], 0).round(4).tolist() for i, c in enumerate(cands)}
        print("the 20 images (after the decision):", json.dumps(rep["val_means"], indent=0), flush=True)
    rep["seconds"] = round(time.time() - t0, 1)
    write_json(out, rep, indent=0)
    close_pool()


if __name__ == "__main__":
    sys.exit(bench_cli.run(main))
