"""Issue 21, session 16 (helper imseg-q7): the HYBRID merge's model and its region count M, chosen on the 200
BSDS500 training images only (rule: ``benchmarks/results/imseg_q7_session16.md``, committed before the runs).

The hybrid: the contour merge (``contours.merge_np``, count mode: thr = inf, no clean-up) from the superpixels
down to M' = min(M, R) regions, then the learned merge (``learned.merge_learned_np``, τ, the S²/4 clean-up) from
those regions to the end, its graph built on the contour merge's regions and its model REFIT on such starts.

The trainer is session 11's accepted ``e2w`` recipe (``imseg_session11_gala.py`` on ``imseg_session10_gala.py``),
unchanged except for the start of its merges: every image's superpixel graph (the cached ``G.prepare``) is first
merged by the contour merge to M' regions (:func:`mid_of`: the regions' and pairs' sums added, which is the region
graph of the merged labels), then

* epoch 1: examples from a replay of the production contour merge from that start to c 3.8 (48 pairs a round,
  <= 2000 an image; each pair labelled by the share of humans whose majority segments differ);
* epoch 2 (active): the epoch-1 model merges each training image from that start to τ 0.5, the same sampling;
* the trees (64, depth 4, lr 0.1, 255 bins, pixel-weighted) refit on both epochs.

Scoring: the held-out image's hybrid with the library's loop (``merge_learned_np``) and the fold's model at τ
(0.39, the default coarseness), covering / PRI / VI from the superpixels' contingency with the humans
(``imseg_session3.scores``: the same numbers as ``metrics.evaluate``); also the count mode (n = the humans' median).

    python benchmarks/imseg_q16_hybrid.py cv  [--limit N] [--workers 2]   # 5 folds, every M (the choice)
    python benchmarks/imseg_q16_hybrid.py all --m M --model-out PATH      # the all-200 model of one M
    python benchmarks/imseg_q16_hybrid.py rounds --models a.json,b.json   # rounds on the speed images
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import imseg_session10_gala as G  # noqa: E402  (OMP_NUM_THREADS=1; GALA10_EXTRA_PATH for scikit-learn)
import imseg_session11_gala as S11  # noqa: E402

from gpu_kernels.imseg import contours as C  # noqa: E402
from gpu_kernels.imseg import learned as LM  # noqa: E402

MS = (150, 200, 300, 400)
SEED = 1651
NFOLDS = 5
TAU = 0.39
DATA = ROOT.parent / "shared" / "data" / "bsds500"


# --------------------------------------------------------------------------- the hybrid's start
def mid_of(d: dict, M: int) -> dict:
    """``d`` (``G.prepare``: the superpixel graph and contingency) merged by the contour merge in count mode to
    min(M, R) regions: the same fields for the merged regions, and ``map`` (superpixel -> merged region)."""
    g = d["graph"]
    R = int(g["R"])
    Mp = min(int(M), R)
    inv = 1.0 / math.sqrt(d["h"] * d["w"])
    if Mp < R:
        gi = {"R": R, "ea": g["ea"], "eb": g["eb"], "el": np.asarray(g["el"], np.int64),
              "eg": np.asarray(g["eg"], np.int64), "area": np.asarray(g["area"], np.int64),
              "rsum": np.asarray(g["rsum"], np.int64)}
        into, _, r1 = C.merge_np(gi, Mp, math.inf, inv)
        seg, cnt = C._resolve(into)
        m = seg.astype(np.int64) - 1
        assert cnt == Mp, (cnt, Mp)
    else:
        m, cnt, r1 = np.arange(R), R, 0
    g2 = {"R": int(cnt)}
    for k in G.REGION_KEYS:
        v = np.asarray(g[k], np.float64)
        out = np.zeros((cnt,) + v.shape[1:])
        np.add.at(out, m, v)
        g2[k] = out
    a, b = m[g["ea"]], m[g["eb"]]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    ok = lo != hi
    g2["ea"], g2["eb"], (el, eg, gh) = G.aggregate(lo[ok], hi[ok], [np.asarray(g["el"], np.float64)[ok],
                                                                   np.asarray(g["eg"], np.float64)[ok],
                                                                   np.asarray(g["gh"], np.float64)[ok]], cnt)
    g2["el"], g2["eg"], g2["gh"] = el, eg, gh
    cont = []
    for ci, gi_, c, ng in d["cont"]:
        u, inv_ = np.unique(m[ci] * ng + gi_, return_inverse=True)
        cont.append((u // ng, u % ng, np.bincount(inv_, weights=c), ng))
    return {"id": d["id"], "h": d["h"], "w": d["w"], "S": d["S"], "graph": g2, "cont": cont, "map": m,
            "contour_rounds": int(r1)}


def int_graph(g2: dict) -> dict:
    """The library's integer graph (``learned._state``'s input) of a :func:`mid_of` graph."""
    out = {"R": int(g2["R"])}
    for k in ("ea", "eb", "el", "eg", "gh", "area", "rsum", "rsq", "gin", "hist", "bord"):
        v = np.asarray(g2[k])
        out[k] = np.rint(v).astype(np.int64) if v.dtype.kind == "f" else v.astype(np.int64)
    return out


def run_hybrid(d: dict, mid: dict, model: dict, target: int = 0, tau: float = TAU):
    """The hybrid on one image (library loop): (superpixel -> final segment, segments, learned rounds)."""
    g = int_graph(mid["graph"])
    inv = 1.0 / math.sqrt(d["h"] * d["w"])
    into, _, rounds = LM.merge_learned_np(g, int(target), tau, inv, min_area=0 if target else C.min_region_area(d["S"]),
                                          model_arrays=model)
    seg, cnt = C._resolve(into)
    return seg[mid["map"]], int(cnt), int(rounds)


def human_median(gts) -> int:
    return int(math.floor(float(np.median([len(np.unique(g)) for g in gts])) + 0.5))


# --------------------------------------------------------------------------- training (session 11's e2w)
_MID: dict = {}    # M -> [mid d per image]
_EX1: dict = {}    # M -> [epoch-1 examples per image]
_NH: list = []     # the humans' median count per image


def _mid_job(args):
    i, M = args
    return mid_of(G._D[i], M)


def _ex1_job(args):
    i, M = args
    return G.examples(_MID[M][i])


def _fit1_job(args):
    M, idx, seed = args
    return S11.fit(np.concatenate([_EX1[M][i][0] for i in idx]), np.concatenate([_EX1[M][i][1] for i in idx]),
                   True, seed)


def _act_job(args):
    M, model, idx = args
    sc = G.model_score(model)
    return [G.examples(_MID[M][i], sc, S11.ACTIVE_TAU) for i in idx]


def _fit2_job(args):
    M, idx, seed, act = args
    X = np.concatenate([_EX1[M][i][0] for i in idx] + [x for x, _ in act])
    Y = np.concatenate([_EX1[M][i][1] for i in idx] + [y for _, y in act])
    return S11.fit(X, Y, True, seed)


def _score_job(args):
    """One image, one M: the hybrid with the given model at τ and in the count mode; the contour default too."""
    M, i, model = args
    from imseg_session3 import scores

    d, mid = G._D[i], _MID[M][i]
    out = {"id": str(d["id"]), "M": M, "R": int(d["graph"]["R"]), "start": int(mid["graph"]["R"]),
           "contour_rounds": mid["contour_rounds"]}
    for tag, target in (("tau", 0), ("count", _NH[i])):
        seg, cnt, rounds = run_hybrid(d, mid, model, target)
        cov, pri, voi = scores(d, seg)
        out[tag] = {"covering": cov, "pri": pri, "voi": voi, "segments": cnt, "rounds": rounds}
    return out


def _default_job(i):
    from imseg_session3 import scores

    d = G._D[i]
    g = d["graph"]
    gi = {"R": int(g["R"]), "ea": g["ea"], "eb": g["eb"], "el": np.asarray(g["el"], np.int64),
          "eg": np.asarray(g["eg"], np.int64), "area": np.asarray(g["area"], np.int64),
          "rsum": np.asarray(g["rsum"], np.int64)}
    into, _, rounds = C.merge_np(gi, 0, C.coarseness_threshold(C.DEFAULT_COARSENESS), 1.0 / math.sqrt(d["h"] * d["w"]),
                                 min_area=C.min_region_area(d["S"]))
    seg, cnt = C._resolve(into)
    cov, pri, voi = scores(d, seg)
    return {"covering": cov, "pri": pri, "voi": voi, "segments": int(cnt), "rounds": int(rounds)}


def load(workers: int, limit: int, Ms) -> int:
    from imseg import bsds_items

    global _NH
    mapf, close = G.worker_map(workers)
    tr = G.load(DATA / "train", Path("/tmp/gala10"), "train", mapf)
    close()
    items = list(bsds_items(DATA / "train"))
    assert [str(d["id"]) for d in tr] == [it[0] for it in items]
    if limit:
        tr, items = tr[:limit], items[:limit]
    G._D = tr
    _NH = [human_median(it[2]) for it in items]
    n = len(tr)
    mapf, close = G._pool(workers)
    for M in Ms:
        _MID[M] = mapf(_mid_job, [(i, M) for i in range(n)])
    close()
    mapf, close = G._pool(workers)   # forked again: the starts are in the workers
    for M in Ms:
        _EX1[M] = mapf(_ex1_job, [(i, M) for i in range(n)])
    close()
    return n


def train(mapf, fits: list, workers: int) -> list:
    """fits: [(M, train idx, seed)] -> the e2w model of each."""
    m1 = mapf(_fit1_job, fits)
    jobs, keys = [], []
    for j, (M, idx, _s) in enumerate(fits):
        for c in G._chunks(idx, max(1, (2 * workers + len(fits) - 1) // len(fits))):
            jobs.append((M, m1[j], c))
            keys.append(j)
    got = mapf(_act_job, jobs)
    act: dict = {}
    for j, part in zip(keys, got, strict=True):
        act.setdefault(j, []).extend(part)
    return mapf(_fit2_job, [(M, idx, s, act[j]) for j, (M, idx, s) in enumerate(fits)])


def summarise(rows: list) -> dict:
    out = {}
    for tag in ("tau", "count"):
        for k in ("covering", "pri", "voi", "segments", "rounds"):
            out[f"{tag}/{k}"] = float(np.mean([r[tag][k] for r in rows]))
    out["contour_rounds"] = float(np.mean([r["contour_rounds"] for r in rows]))
    out["start"] = float(np.mean([r["start"] for r in rows]))
    return out


def to_json(m: dict) -> dict:
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in m.items()}


def from_json(m: dict) -> dict:
    return {k: (np.asarray(v) if isinstance(v, list) else v) for k, v in m.items()}


def cmd_cv(workers: int, limit: int, Ms) -> dict:
    t0 = time.time()
    n = load(workers, limit, Ms)
    print(f"{n} images, starts and epoch-1 examples ({time.time() - t0:.0f} s): "
          + json.dumps({M: int(sum(len(y) for _, y in _EX1[M])) for M in Ms}), flush=True)
    perm = np.random.default_rng(SEED).permutation(n)
    folds = [np.sort(f) for f in np.array_split(perm, NFOLDS)]
    fits = [(M, np.setdiff1d(np.arange(n), f), SEED) for M in Ms for f in folds]
    mapf, close = G._pool(workers)
    models = train(mapf, fits, workers)
    close()
    print(f"{len(models)} fold models ({time.time() - t0:.0f} s)", flush=True)
    jobs = [(M, int(i), models[j]) for j, (M, _t, _s) in enumerate(fits) for i in folds[j % NFOLDS]]
    mapf, close = G._pool(workers)
    rows = mapf(_score_job, jobs)
    drows = mapf(_default_job, range(n))
    close()
    summ = {M: summarise([r for r in rows if r["M"] == M]) for M in Ms}
    dsum = {k: float(np.mean([r[k] for r in drows])) for k in ("covering", "pri", "voi", "segments", "rounds")}
    for M in Ms:
        print(f"M {M}:", json.dumps({k: round(v, 4) for k, v in summ[M].items()}), flush=True)
    print("contour default:", json.dumps({k: round(v, 4) for k, v in dsum.items()}), flush=True)
    pick = choose(summ)
    print("choice:", pick, f"({time.time() - t0:.0f} s)", flush=True)
    return {"seed": SEED, "Ms": list(Ms), "folds": [f.tolist() for f in folds], "summary": summ,
            "contour_default": dsum, "choice": pick, "per_image": rows, "default_per_image": drows,
            "models": [{"M": M, "fold": j % NFOLDS, "model": to_json(m)} for j, ((M, _t, _s), m) in
                       enumerate(zip(fits, models, strict=True))]}


def choose(summ: dict) -> int:
    """The rule: the smallest M whose pooled held-out covering (τ mode) is within 0.003 of the best M's."""
    best = max(s["tau/covering"] for s in summ.values())
    return int(min(M for M, s in summ.items() if s["tau/covering"] >= best - 0.003))


def cmd_all(workers: int, M: int, model_out: str) -> dict:
    t0 = time.time()
    n = load(workers, 0, (M,))
    mapf, close = G._pool(workers)
    (model,) = train(mapf, [(M, np.arange(n), SEED)], workers)
    close()
    rows = [_score_job((M, i, model)) for i in range(n)]
    summ = summarise(rows)
    print(f"all-200 model, M {M}, in-sample:", json.dumps({k: round(v, 4) for k, v in summ.items()}),
          f"({time.time() - t0:.0f} s)", flush=True)
    if model_out:
        Path(model_out).write_text(json.dumps({"tau": TAU, "M": M, "seed": SEED, "model": to_json(model)}))
    return {"M": M, "in_sample": summ}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("cv", "all"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--ms", default=",".join(str(m) for m in MS))
    ap.add_argument("--m", type=int, default=0)
    ap.add_argument("--model-out", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    t0 = time.time()
    if a.cmd == "cv":
        out = cmd_cv(a.workers, a.limit, tuple(int(x) for x in a.ms.split(",")))
    else:
        out = cmd_all(a.workers, a.m, a.model_out)
    out["seconds"] = time.time() - t0
    out["host"] = os.uname().nodename
    if a.out:
        Path(a.out).write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
