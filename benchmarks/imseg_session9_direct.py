"""Issue 21, session 9, round 2: a per-image coarseness for today's direct merge, predicted from
cheap statistics of the superpixel graph (rule: ``benchmarks/results/imseg_ucm_session9.md``,
round 2, committed before the deciding run).

``data``: per image, today's production merge (``imseg_session7_quality.run``) at every coarseness
c = 2.50 .. 4.50 (step 0.05) -> (covering, PRI, VI, count), and the graph features (no human data).
``decide``: the pre-registered cross-validation on the training images' curves (8 new permutations).
``val``: the 20 images' rows, only after the decision.

Usage::

    python benchmarks/imseg_session9_direct.py data --data ../shared/data/bsds500 --cache /tmp/ucm9 --workers 16 --out X.json
    python benchmarks/imseg_session9_direct.py decide --curves X.json --out D.json
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import imseg_session7_quality as S7  # noqa: E402
import imseg_session9_ucm as U  # noqa: E402
from bench_cli import check_bsds, check_cache_source, check_new_folder, check_results_file, run, write_json  # noqa: E402

LEVELS = U.LEVELS
OUT = ROOT / "benchmarks" / "results" / "imseg_ucm_session9_direct.json"
QS = (0.1, 0.25, 0.5)


def graph_features(d: dict) -> list:
    """Cheap statistics of the superpixel graph (no merge, no human data): log mean gradient,
    log pieces R, log colour spread, the 10/25/50 % quantiles of log10 of the initial pairs' merge
    costs (production cost), the share of pairs under 10^3.3, log mean boundary gradient."""
    from gpu_kernels.imseg import contours as C

    g = d["graph"]
    n = d["h"] * d["w"]
    area = g["area"].astype(np.float64)
    m = g["rsum"] / area[:, None]
    mu = (area[:, None] * m).sum(0) / area.sum()
    spread = math.sqrt(float((area[:, None] * (m - mu) ** 2).sum() / area.sum()))
    cost = C.merge_cost_np(g["area"], g["rsum"], g["ea"], g["eb"], g["el"], g["eg"], 2.0 * C.GSCALE, C.B0,
                           1 / math.sqrt(n), float(area.sum()), C.SIZE_K).astype(np.float64)
    lc = np.log10(np.maximum(cost, 1e-12))
    f = [math.log(g["gin"].sum() / area.sum() / C.GSCALE), math.log(g["R"]), math.log(max(spread, 1e-6))]
    f += [float(np.quantile(lc, q)) for q in QS]
    f += [float((lc < 3.3).mean()), math.log(g["eg"].sum() / g["el"].sum() / (2 * C.GSCALE))]
    return f


def image_row(d: dict) -> dict:
    curve = [S7.run(d, {"kind": "thr", "c": float(c)}) for c in LEVELS]
    return {"id": d["id"], "default": S7.run(d, S7.DEFAULT), "curve": curve, "feats": graph_features(d)}


def _load(data: Path, cache: Path, tag: str, mapf):
    return S7.load(data, cache, tag, mapf)


def cmd_data(a):
    check_bsds("--data", a.data, val=a.val)
    check_new_folder("--cache", a.cache)
    out = check_results_file("--out", a.out, OUT)
    check_cache_source("--cache", a.cache, a.data)
    t0 = time.time()
    pool = None
    if a.workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(a.workers)
    mapf = (lambda f, xs: pool.map(f, xs, chunksize=1)) if pool else (lambda f, xs: list(map(f, xs)))
    root = Path(a.data) if a.val else Path(a.data) / "train"
    D = _load(root, Path(a.cache), "val" if a.val else "train", mapf)
    res = mapf(image_row, D)
    rep = {"set": "val" if a.val else "train", "levels": list(LEVELS), "ids": [r["id"] for r in res],
           "default": [list(r["default"]) for r in res], "curves": [np.round(r["curve"], 6).tolist() for r in res],
           "X": [r["feats"] for r in res], "seconds": round(time.time() - t0, 1)}
    write_json(out, rep, indent=0)
    print(f"{len(res)} images, wrote {out} ({rep['seconds']} s)", flush=True)
    if pool:
        pool.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("data")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    p.add_argument("--cache", default="/tmp/ucm9d")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--val", action="store_true", help="the 20 images instead of the training images")
    p.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    if a.cmd == "data":
        cmd_data(a)


if __name__ == "__main__":
    sys.exit(run(main))
