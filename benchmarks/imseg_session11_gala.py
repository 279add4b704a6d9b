"""Issue 21, session 11: session 10's learned agglomeration (``imseg_session10_gala.py``: features,
replayed-merge examples, boosted trees, the merge) with session 10's recipe for the next round:
the training examples weighted by the pixels at stake, GALA's second (active) epoch (examples from the
first model's own merge added, the model refitted), and a higher τ grid. Rule and results:
``benchmarks/results/imseg_q_session11.md`` (the rule committed before the deciding run).

Sub-commands: ``screen`` (train images only: fitted on 0-99, scored on 100-199; chooses the candidate
before the rule), ``cv`` (the pre-registered decision on the 200 training images; partial results
written after every pair of permutations), ``all`` (criterion 3: the model on all 200, its in-sample
rows; saves the model arrays), ``combine`` (the decision from the parts), ``val`` (the 20 images,
after the decision).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import imseg_session10_gala as G  # noqa: E402  (sets OMP_NUM_THREADS=1, the extra path for scikit-learn)

TAUS = (0.36, 0.39, 0.42)  # from the screen's segment counts (train 100-199), before the rule
ACTIVE_TAU = 0.5  # the first model's own merge, recorded to past the grid's top
SEEDS = tuple(range(1101, 1109))
VARIANTS = {  # name: (weighted by the pixels at stake, active second epoch)
    "e1": (False, False), "e1w": (True, False), "e2": (False, True), "e2w": (True, True)}


def stake(X: np.ndarray) -> np.ndarray:
    """The pixels at stake of each example: the smaller region's share of the image (feature 12 is its log)."""
    return np.exp(X[:, 12].astype(np.float64))


def fit(X, Y, weighted: bool, seed: int = 0) -> dict:
    from sklearn.ensemble import HistGradientBoostingRegressor

    m = HistGradientBoostingRegressor(max_iter=64, max_depth=4, learning_rate=0.1, max_bins=255,
                                      early_stopping=False, random_state=seed)
    m.fit(X, Y, sample_weight=stake(X) if weighted else None)
    return G.export(m)


_EX1: list = []  # epoch-1 examples per image (the production replay; the same for every fold)
_EX2: dict = {}  # fold key -> {image: epoch-2 examples}


def _fit1_job(args):
    idx, seed, weighted = args
    return fit(np.concatenate([_EX1[i][0] for i in idx]), np.concatenate([_EX1[i][1] for i in idx]), weighted, seed)


def _act_job(args):
    model, idx = args
    sc = G.model_score(model)
    return [G.examples(G._D[i], sc, ACTIVE_TAU) for i in idx]


def _fit2_job(args):
    idx, seed, weighted, act = args  # act: the epoch-2 examples of the images idx, in order
    X = np.concatenate([_EX1[i][0] for i in idx] + [x for x, _ in act])
    Y = np.concatenate([_EX1[i][1] for i in idx] + [y for _, y in act])
    return fit(X, Y, weighted, seed)


def train_models(mapf, fits: list, variant: str, workers: int) -> list:
    """fits: [(image idx, seed)] -> one model each (epoch 1, then epoch 2 where the variant has it)."""
    weighted, active = VARIANTS[variant]
    m1 = mapf(_fit1_job, [(idx, seed, weighted) for idx, seed in fits])
    if not active:
        return m1
    jobs, keys = [], []
    for j, (idx, _s) in enumerate(fits):
        for c in G._chunks(idx, max(1, (2 * workers + len(fits) - 1) // len(fits))):
            jobs.append((m1[j], c))
            keys.append(j)
    got = mapf(_act_job, jobs)
    act = [[] for _ in fits]
    for j, part in zip(keys, got, strict=True):
        act[j].extend(part)
    return mapf(_fit2_job, [(idx, seed, weighted, act[j]) for j, (idx, seed) in enumerate(fits)])


def rows_for(mapf, models: list, idxs: list, taus, workers: int) -> list:
    """The learned merge's rows (n, T, 4) of model j on images idxs[j], for every j (``taus``: one
    tuple for all, or a list of one tuple per j)."""
    jobs, keys = [], []
    for j, idx in enumerate(idxs):
        for c in G._chunks(idx, max(1, (4 * workers + len(idxs) - 1) // len(idxs))):
            jobs.append((models[j], c, taus[j] if isinstance(taus, list) else taus))
            keys.append(j)
    got = mapf(G._rows_job, jobs)
    out = [[] for _ in idxs]
    for j, part in zip(keys, got, strict=True):
        out[j].extend(part)
    return [np.array(o) for o in out]


def _prep(tr: list, workers: int):
    global _EX1
    G._D = tr
    mapf, close = G._pool(workers)
    drow = np.array(mapf(G._def_job, range(len(tr))))
    _EX1 = mapf(G._ex_job, range(len(tr)))
    close()
    return drow


# --------------------------------------------------------------------------- screen (train only)
def screen(tr: list, workers: int, variants, taus) -> dict:
    t0 = time.time()
    drow = _prep(tr, workers)
    fit_i, test_i = np.arange(100), np.arange(100, 200)
    out = {"default_100_199": drow[test_i].mean(0).tolist(), "taus": list(taus)}
    print("default (100-199):", np.round(drow[test_i].mean(0), 4).tolist(), flush=True)
    for v in variants:
        mapf, close = G._pool(workers)
        (m,) = train_models(mapf, [(fit_i, 0)], v, workers)
        t1 = time.time()
        (rows,) = rows_for(mapf, [m], [test_i], taus, workers)
        close()
        out[v] = rows.mean(0).tolist()
        for j, t in enumerate(taus):
            print(f"{v} tau {t}: {np.round(rows[:, j].mean(0), 4).tolist()}", flush=True)
        print(f"({time.time() - t0:.1f} s; rows {time.time() - t1:.1f} s)", flush=True)
    return out


# --------------------------------------------------------------------------- the deciding CV
def cross_validate(tr: list, workers: int, variant: str, seeds, taus, group: int, partial: str) -> dict:
    t0 = time.time()
    n = len(tr)
    drow = _prep(tr, workers)
    dm = drow.mean(0)
    print(f"default rows, examples ({time.time() - t0:.1f} s): {np.round(dm, 4).tolist()}", flush=True)
    res = {"variant": variant, "default_train": dm.tolist(), "taus": list(taus), "perms": []}
    for g0 in range(0, len(seeds), group):
        plan = []
        for seed in seeds[g0:g0 + group]:
            perm = np.random.default_rng(seed).permutation(n)
            for k, f in enumerate(np.array_split(perm, 5)):
                f = np.sort(f)
                trn = np.setdiff1d(np.arange(n), f)
                plan.append((seed, k, f, trn, trn[::4]))
        mapf, close = G._pool(workers)
        models = train_models(mapf, [(trn, seed) for seed, _, _, trn, _ in plan], variant, workers)
        print(f"{len(models)} models ({time.time() - t0:.1f} s)", flush=True)
        prow = rows_for(mapf, models, [sub for *_, sub in plan], taus, workers)
        bis = [G.margin_pick(prow[j], drow[plan[j][4]]) for j in range(len(plan))]
        print(f"pick rows ({time.time() - t0:.1f} s)", flush=True)
        sel = [j for j in range(len(plan)) if bis[j] >= 0]
        # the held-out fifth at its fold's pick only (the same rows as at every τ: each τ's merge is its own)
        hrow = rows_for(mapf, [models[j] for j in sel], [plan[j][2] for j in sel],
                        [(taus[bis[j]],) for j in sel], workers)
        close()
        H = {j: hrow[q][:, 0] for q, j in enumerate(sel)}
        for seed in seeds[g0:g0 + group]:
            js = [j for j in range(len(plan)) if plan[j][0] == seed]
            hm = np.concatenate([H[j] if j in H else drow[plan[j][2]] for j in js]).mean(0)
            beats = bool(hm[0] > dm[0] and hm[1] > dm[1] and hm[2] < dm[2])
            picks = [None if bis[j] < 0 else taus[bis[j]] for j in js]
            pick_counts = [None if bis[j] < 0 else float(prow[j][:, bis[j], 3].mean()) for j in js]
            res["perms"].append({"seed": seed, "picks": picks, "pick_counts": pick_counts, "held": hm.tolist(),
                                 "beats": beats})
            print(f"seed {seed}: picks {picks} held {np.round(hm, 4).tolist()} beats {beats} "
                  f"({time.time() - t0:.1f} s)", flush=True)
        res["seconds"] = time.time() - t0
        if partial:
            Path(partial).write_text(json.dumps(res, indent=1))
    return res


def all200(tr: list, workers: int, variant: str, taus, model_out: str) -> dict:
    t0 = time.time()
    drow = _prep(tr, workers)
    n = len(tr)
    mapf, close = G._pool(workers)
    (m,) = train_models(mapf, [(np.arange(n), 0)], variant, workers)
    (rows,) = rows_for(mapf, [m], [np.arange(n)], taus, workers)
    close()
    bi = G.margin_pick(rows, drow)
    if model_out:
        np.savez_compressed(model_out, **{k: np.asarray(v) for k, v in m.items()})
    for j, t in enumerate(taus):
        print(f"all-200 tau {t} (in-sample): {np.round(rows[:, j].mean(0), 4).tolist()}", flush=True)
    print(f"pick {None if bi < 0 else taus[bi]} ({time.time() - t0:.1f} s)", flush=True)
    return {"variant": variant, "default_train": drow.mean(0).tolist(), "taus": list(taus),
            "all200_rows": rows.mean(0).tolist(), "all200_pick_index": int(bi),
            "model_all200": {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in m.items()}}


def combine(parts: list) -> dict:
    """The decision: ≥ 7 of the 8 permutations beat the default held out on all three, their mean too,
    and the rule on all 200 picks a τ."""
    dm = np.array(parts[0]["default_train"])
    perms = sorted((p for q in parts for p in q.get("perms", [])), key=lambda p: p["seed"])
    H = np.array([p["held"] for p in perms])
    mh = H.mean(0)
    allp = [q for q in parts if "all200_rows" in q]
    bi = allp[0]["all200_pick_index"] if allp else -1
    taus = parts[0]["taus"]
    res = {"default_train": dm.tolist(), "taus": taus, "perms": perms, "mean_held": mh.tolist(),
           "n_beat": int(sum(p["beats"] for p in perms)),
           "mean_beats": bool(mh[0] > dm[0] and mh[1] > dm[1] and mh[2] < dm[2]),
           "all200_pick": None if bi < 0 else taus[bi]}
    res["accepted"] = bool(len(perms) == 8 and res["n_beat"] >= 7 and res["mean_beats"] and bi >= 0)
    for p in perms:
        print(f"seed {p['seed']}: picks {p['picks']} held {np.round(p['held'], 4).tolist()} beats {p['beats']}")
    print(f"default {np.round(dm, 4).tolist()}; n_beat {res['n_beat']} of {len(perms)}, mean held "
          f"{np.round(mh, 4).tolist()} beats {res['mean_beats']}; all-200 pick {res['all200_pick']}; "
          f"accepted {res['accepted']}")
    return res


def validate(tr: list, va: list, workers: int, model_path: str, taus) -> dict:
    G._D = tr + va
    z = np.load(model_path)
    m = {k: (float(z[k]) if k == "base" else z[k]) for k in z.files}
    vi = np.arange(len(tr), len(tr) + len(va))
    mapf, close = G._pool(workers)
    drow = np.array(mapf(G._def_job, vi))
    (rows,) = rows_for(mapf, [m], [vi], taus, workers)
    close()
    print("the 20, default:", np.round(drow.mean(0), 4).tolist())
    for k, t in enumerate(taus):
        print(f"the 20, tau {t}:", np.round(rows[:, k].mean(0), 4).tolist())
    return {"default_val": drow.mean(0).tolist(), "rows_val": rows.mean(0).tolist(), "taus": list(taus)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("screen", "cv", "all", "combine", "val"))
    ap.add_argument("--variant", default="e2w", choices=sorted(VARIANTS))
    ap.add_argument("--variants", default="e2,e2w", help="screen: the variants")
    ap.add_argument("--seeds", default="1101-1108")
    ap.add_argument("--group", type=int, default=2, help="cv: permutations per partial result")
    ap.add_argument("--taus", default="")
    ap.add_argument("--parts", nargs="*", default=[])
    ap.add_argument("--model", default="", help="all: where to save the model (.npz); val: the model")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    ap.add_argument("--cache", default="/tmp/gala10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="smoke: the first LIMIT training images only")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    taus = tuple(float(t) for t in a.taus.split(",")) if a.taus else TAUS
    t0 = time.time()
    if a.cmd == "combine":
        out = combine([json.loads(Path(p).read_text()) for p in a.parts])
    else:
        mapf, close = G.worker_map(a.workers)
        tr = G.load(Path(a.data) / "train", Path(a.cache), "train", mapf)
        va = G.load(Path(a.data), Path(a.cache), "val", mapf) if a.cmd == "val" else []
        close()
        tr = tr[:a.limit or None]
        print(f"train {len(tr)}, val {len(va)} prepared ({time.time() - t0:.1f} s)", flush=True)
        if a.cmd == "screen":
            out = screen(tr, a.workers, a.variants.split(","), taus)
        elif a.cmd == "cv":
            lo, hi = (int(x) for x in a.seeds.split("-"))
            out = cross_validate(tr, a.workers, a.variant, tuple(range(lo, hi + 1)), taus, a.group,
                                 a.out + ".partial" if a.out else "")
        elif a.cmd == "all":
            out = all200(tr, a.workers, a.variant, taus, a.model)
        else:
            out = validate(tr, va, a.workers, a.model, taus)
    out["seconds"] = time.time() - t0
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
