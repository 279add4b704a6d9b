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
import json
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
from bench_cli import (  # noqa: E402
    BadInput,
    check_bsds,
    check_cache_source,
    check_json_input,
    check_new_folder,
    check_results_file,
    run,
    write_json,
)

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


# --------------------------------------------------------------------------- round 2's rule
SEEDS = tuple(range(911, 919))
EXPLORE_SEEDS = tuple(range(8))
Q_FEATS = (3, 4, 5)
GRID = [(w, lam, c0, s) for w in (1, 2) for lam in (10.0, 100.0) for c0 in (3.25, 3.3, 3.35) for s in (0.5, 1.0)]


def target(curves: np.ndarray, w: float) -> np.ndarray:
    """Per image the level maximising the 3-level-smoothed covering + w PRI - VI/10 on [2.8, 4.2]."""
    J = curves[:, :, 0] + w * curves[:, :, 1] - curves[:, :, 2] / 10
    k = np.ones(3)
    s = np.stack([np.convolve(v, k, "same") for v in J]) / np.convolve(np.ones(J.shape[1]), k, "same")
    lo, hi = U.lvl_index(U.TARGET_LO), U.lvl_index(U.TARGET_HI)
    return np.asarray(LEVELS)[lo + s[:, lo:hi + 1].argmax(1)]


def fit_rule(X: np.ndarray, curves: np.ndarray, fit_idx, w: float, lam: float):
    """The ridge of the fit images' targets on their features: (predict, μ)."""
    f = U.ridge_fit(X[fit_idx], target(curves[fit_idx], w), lam)
    return f, float(f(X[fit_idx]).mean())


def levels_for(X, pred_mu, c0: float, s: float) -> np.ndarray:
    f, mu = pred_mu
    return c0 + s * (f(X) - mu)


def rows_for(T: dict, fit_idx, feats=Q_FEATS, grid=GRID) -> dict:
    X = T["X"][:, list(feats)]
    ii = np.arange(len(X))
    rows = {U.DK: T["default"]}
    for w, lam in sorted({(g[0], g[1]) for g in grid}):
        pm = fit_rule(X, T["curves"], fit_idx, w, lam)
        for w2, lam2, c0, s in grid:
            if (w2, lam2) == (w, lam):
                rows[f"Q(w{w}, lam{lam:g}, c0 {c0}, s{s})"] = T["curves"][ii, U.to_index(levels_for(X, pm, c0, s))]
    return rows


def cv(T: dict, seeds=SEEDS, feats=Q_FEATS) -> dict:
    n = len(T["curves"])
    dm = T["default"].mean(0)
    perms = []
    for seed in seeds:
        folds = [np.sort(f) for f in np.array_split(np.random.default_rng(seed).permutation(n), 5)]
        held = np.zeros((n, 4))
        picks = []
        for f in folds:
            tr = np.setdiff1d(np.arange(n), f)
            rows = rows_for(T, tr, feats)
            p = U.pick(rows, tr)
            picks.append(p)
            held[f] = rows[p][f]
        m = held.mean(0)
        perms.append({"seed": seed, "picks": picks, "held_out": m.round(4).tolist(), "beats": U.beats(m, dm)})
    grand = np.mean([p["held_out"] for p in perms], 0)
    npass = sum(p["beats"] for p in perms)
    full = U.pick(rows_for(T, np.arange(n), feats), np.arange(n))
    return {"default": dm.round(4).tolist(), "perms": perms, "n_pass": npass, "mean_held_out": grand.round(4).tolist(),
            "mean_beats": U.beats(grand, dm), "pick_all200": full,
            "accepted": bool(npass >= 7 and U.beats(grand, dm) and full != U.DK)}


def load_curves(path, flag: str = "--curves") -> dict:
    """A ``data`` run's curves (one line and status 2 for a missing or foreign file)."""
    r = check_json_input(flag, path)
    if not isinstance(r, dict) or not {"ids", "curves", "X", "default"} <= set(r):
        raise BadInput(f"{flag}: {path} holds no curves of imseg_session9_direct.py data")
    return {"ids": r["ids"], "curves": np.array(r["curves"]), "X": np.array(r["X"]), "default": np.array(r["default"])}


def cmd_decide(a):
    T = load_curves(a.curves)
    out = check_results_file("--out", a.out, OUT)
    if a.val:
        check_json_input("--val", a.val)  # a bad path fails before anything runs (read again after the decision)
    dm = T["default"].mean(0)
    rep = {"default_train": dm.round(4).tolist(),
           "curve_at_3.3_is_default": bool(np.allclose(T["curves"][:, U.lvl_index(3.3)], T["default"]))}
    rows = rows_for(T, np.arange(len(T["curves"])))
    rep["train_means"] = {k: v.mean(0).round(4).tolist() for k, v in rows.items()}
    for k, m in rep["train_means"].items():
        print(f"   {k:34s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
    rep["cv"] = cv(T)
    for p in rep["cv"]["perms"]:
        print(p, flush=True)
    print({k: v for k, v in rep["cv"].items() if k != "perms"}, flush=True)
    pk = rep["cv"]["pick_all200"]
    d = rows[pk] - rows[U.DK]
    rep["paired_pick_minus_default"] = {"mean": d.mean(0).round(4).tolist(),
                                        "se": (d.std(0, ddof=1) / math.sqrt(len(d))).round(4).tolist()}
    if a.val:  # only after the decision above
        V = load_curves(a.val, "--val")
        n = len(T["curves"])
        both = {k: np.concatenate([T[k], V[k]]) for k in ("curves", "X", "default")}
        vr = {k: v[n:] for k, v in rows_for(both, np.arange(n)).items()}
        rep["val_means"] = {k: v.mean(0).round(4).tolist() for k, v in vr.items()}
        print("the 20 images (after the decision):", flush=True)
        for k, m in rep["val_means"].items():
            print(f"   {k:34s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
    write_json(out, rep, indent=0)
    print(f"wrote {out}", flush=True)


def shape_levels(curves: np.ndarray) -> dict:
    """Levels from the shape of each image's count curve log n(c) on [2.8, 4.2] (no human data):
    ``drop`` the level before the largest drop, ``plateau`` the centre of the longest run of one
    count, ``curv`` the largest second difference of the 5-level-smoothed log count."""
    L = np.asarray(LEVELS)
    lo, hi = U.lvl_index(U.TARGET_LO), U.lvl_index(U.TARGET_HI)
    ln = np.log(curves[:, :, 3])
    drop = L[lo + (ln[:, lo:hi] - ln[:, lo + 1:hi + 1]).argmax(1)]

    def plateau(row):
        best, bk, j = -1, lo, lo
        while j <= hi:
            t = j
            while t + 1 <= hi and row[t + 1] == row[j]:
                t += 1
            if t - j > best:
                best, bk = t - j, (j + t) // 2
            j = t + 1
        return L[bk]

    sm = np.stack([np.convolve(v, np.ones(5) / 5, "same") for v in ln])
    d2 = sm[:, 2:] - 2 * sm[:, 1:-1] + sm[:, :-2]
    return {"drop": drop, "plateau": np.array([plateau(c[:, 3]) for c in curves]),
            "curv": L[1 + lo + d2[:, lo - 1:hi - 1].argmax(1)]}


def cmd_explore(a):
    """The exploration that came before round 2's rule (seeds 0-7; disclosed in the results file)."""
    T = load_curves(a.curves)
    T["X"] = np.c_[T["X"], np.log(T["curves"][:, U.lvl_index(3.3), 3])]
    for feats in ((0, 1, 2, 3, 4, 5, 6, 7), tuple(range(9)), (0, 1), (3, 4, 5), (8,), (0, 8)):
        r = cv(T, EXPLORE_SEEDS, feats)
        print(feats, "pass", r["n_pass"], "mean", r["mean_held_out"], r["mean_beats"], "all:", r["pick_all200"], flush=True)
    # curve-shape levels, shrunk to c0: in-sample on all the training images (none beats the default)
    ii = np.arange(len(T["curves"]))
    dm = T["default"].mean(0)
    y = np.array([U.oracle_level(c) for c in T["curves"]])
    for nm, e in shape_levels(T["curves"]).items():
        print(nm, "corr with the oracle level", round(float(np.corrcoef(e, y)[0, 1]), 3), flush=True)
        for s in (0.25, 0.5, 1.0):
            for c0 in (3.25, 3.3, 3.35):
                m = T["curves"][ii, U.to_index(c0 + s * (e - np.median(e)))].mean(0)
                print(f"   {nm} s {s} c0 {c0}: " + " / ".join(f"{x:.4f}" for x in m), "beats" if U.beats(m, dm) else "",
                      flush=True)


# --------------------------------------------------------------------------- the oracle's reach
def split_row(d: dict) -> np.ndarray:
    """(levels, 2, 4): today's direct merge at every level scored against the even- and the
    odd-numbered human segmentations separately (covering, PRI, VI, count); None with one human."""
    from imseg_session3 import scores

    from gpu_kernels.imseg import contours as C

    if len(d["cont"]) < 2:
        return None
    halves = (dict(d, cont=d["cont"][0::2]), dict(d, cont=d["cont"][1::2]))
    n = d["h"] * d["w"]
    out = np.zeros((len(LEVELS), 2, 4))
    for k, c in enumerate(LEVELS):
        into = S7.merge(d["graph"], S7.cost_thr(S7.DEFAULT), 1 / math.sqrt(n), C.min_region_area(d["S"]), C.SIZE_K,
                        {"kind": "thr", "c": float(c)})
        seg, count = C._resolve(into)
        for h in range(2):
            out[k, h] = (*scores(halves[h], seg), count)
    return out


def reach(S: np.ndarray) -> dict:
    """The per-image oracle chosen on one half of the humans and scored on the other (both ways,
    averaged), against the same halves' in-sample oracle and the default (c 3.3)."""
    lo, hi = U.lvl_index(U.TARGET_LO), U.lvl_index(U.TARGET_HI)
    n = len(S)
    ii = np.arange(n)
    res = {"default": S[:, U.lvl_index(3.3)].mean((0, 1))}
    cross, insample = [], []
    for a, b in ((0, 1), (1, 0)):
        k = lo + np.array([U.objective(S[i, lo:hi + 1, a]).argmax() for i in ii])
        cross.append(S[ii, k, b])
        insample.append(S[ii, k, a])
    res["oracle chosen on the other half"] = np.mean(cross, 0).mean(0)
    res["oracle on the same half (in-sample)"] = np.mean(insample, 0).mean(0)
    return {k: v.round(4).tolist() for k, v in res.items()}


def cmd_split(a):
    check_bsds("--data", a.data, val=True)
    out = check_results_file("--out", a.out, ROOT / "benchmarks" / "results" / "imseg_ucm_session9_reach.json")
    pool = None
    if a.workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(a.workers)
    mapf = (lambda f, xs: pool.map(f, xs, chunksize=1)) if pool else (lambda f, xs: list(map(f, xs)))
    rep = {}
    for tag, root in (("train", Path(a.data) / "train"), ("val", Path(a.data))):
        rows = [r for r in mapf(split_row, _load(root, Path(a.cache), tag, mapf)) if r is not None]
        rep[tag] = dict(reach(np.stack(rows)), images=len(rows))
        print(tag, json.dumps(rep[tag]), flush=True)
    write_json(out, rep, indent=0)
    if pool:
        pool.close()


# --------------------------------------------------------------------------- stability (exploration)
STAB_NSP = 450  # the second hierarchy's superpixels (today's: 600)


def ari(x: np.ndarray, y: np.ndarray) -> float:
    """Adjusted Rand index of two labellings (flat, 0-based)."""
    nx = int(x.max()) + 1
    _, cnt = np.unique(x.astype(np.int64) * (int(y.max()) + 1) + y, return_counts=True)
    a, b = np.bincount(x), np.bincount(y)
    n = float(len(x))

    def c2(v):
        v = np.asarray(v, np.float64)
        return (v * (v - 1) / 2).sum()
    sij, sa, sb = c2(cnt), c2(a), c2(b)
    exp = sa * sb / (n * (n - 1) / 2)
    den = 0.5 * (sa + sb) - exp
    return float((sij - exp) / den) if den > 0 and nx > 0 else 1.0


def stab_row(item) -> dict:
    """Per level: today's direct merge (600 superpixels) and the same merge over 450 superpixels,
    their agreement (ARI of the pixel labels), and today's scores against the humans."""
    from imseg_session3 import contingency, scores

    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import label as L

    i, img, gts, _ = item
    h, w = img.shape[:2]
    n = h * w
    sm = C.blur_np(C.lab_planes_np(C.to_u8(img)), C.DEFAULT_SIGMA)
    _, gq, q = C.gradient_np(sm)
    hier = []
    for nsp in (C.DEFAULT_N_SUPERPIXELS, STAB_NSP):
        S = C.slic_step(h, w, nsp)
        comps, R = L.label_np(C.slic_np(sm, q, S, C.DEFAULT_COMPACTNESS, C.SLIC_ITERATIONS), 4)
        hier.append((S, comps, C.region_graph_np(comps, R, gq, q)))
    d = {"cont": contingency(hier[0][1], gts)}
    out = np.zeros((len(LEVELS), 6))
    for k, c in enumerate(LEVELS):
        px = []
        for S, comps, g in hier:
            into, _, _ = C.merge_np(g, 0, C.coarseness_threshold(c), 1 / math.sqrt(n), min_area=C.min_region_area(S))
            seg, cnt = C._resolve(into)
            px.append((seg[comps.ravel() - 1] - 1, seg, cnt))
        out[k, :4] = (*scores(d, px[0][1]), px[0][2])
        out[k, 4] = ari(px[0][0], px[1][0])
        out[k, 5] = px[1][2]
    return {"id": i, "rows": out}


def stab_report(path) -> None:
    """In-sample rows of the stability level (the level of largest agreement of the two hierarchies on
    [2.9, 3.9], the agreement smoothed over 1 / 3 / 5 levels), shrunk to c0, on the training images."""
    r = check_json_input("--report", path)
    if not isinstance(r, dict) or "rows" not in r:
        raise BadInput(f"--report: {path} holds no rows of imseg_session9_direct.py stab")
    X = np.array(r["rows"])
    C, A = X[:, :, :4], X[:, :, 4]
    ii, L = np.arange(len(X)), np.asarray(LEVELS)
    dm = C[:, U.lvl_index(3.3)].mean(0)
    y = np.array([U.oracle_level(c) for c in C])
    lo, hi = U.lvl_index(2.9), U.lvl_index(3.9)
    print("default", dm.round(4).tolist(), flush=True)
    for sm in (1, 3, 5):
        As = np.stack([np.convolve(v, np.ones(sm), "same") / np.convolve(np.ones(len(v)), np.ones(sm), "same") for v in A])
        e = L[lo + As[:, lo:hi + 1].argmax(1)]
        print(f"smoothed over {sm}: corr with the oracle level {np.corrcoef(e, y)[0, 1]:.3f}", flush=True)
        for s in (0.25, 0.5, 1.0):
            for c0 in (3.25, 3.3, 3.35):
                m = C[ii, U.to_index(c0 + s * (e - np.median(e)))].mean(0)
                print(f"   s {s} c0 {c0}: " + " / ".join(f"{x:.4f}" for x in m), "beats" if U.beats(m, dm) else "",
                      flush=True)


def cmd_stab(a):
    import imseg as B

    if a.report:
        return stab_report(a.report)
    check_bsds("--data", a.data)
    out = check_results_file("--out", a.out, ROOT / "benchmarks" / "results" / "imseg_ucm_session9_stab_train.json")
    pool = None
    if a.workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(a.workers)
    mapf = (lambda f, xs: pool.map(f, xs, chunksize=1)) if pool else (lambda f, xs: list(map(f, xs)))
    items = list(B.bsds_items(Path(a.data) / "train"))[:a.limit or None]
    res = mapf(stab_row, items)
    write_json(out, {"ids": [r["id"] for r in res], "rows": [np.round(r["rows"], 6).tolist() for r in res]}, indent=0)
    print(f"wrote {out}", flush=True)
    if pool:
        pool.close()


# --------------------------------------------------------------------------- unsupervised measures (exploration)
def unsup_row(d: dict) -> np.ndarray:
    """Per level of today's direct merge: (Σ region colour SSE, boundary pixel pairs, boundary gradient
    sum, Liu-Yang F, Borsotti Q, count), from the superpixels' sums (no pixels, no human data)."""
    from gpu_kernels.imseg import contours as C

    g = d["graph"]
    n = d["h"] * d["w"]
    out = []
    for c in LEVELS:
        into = S7.merge(g, S7.cost_thr(S7.DEFAULT), 1 / math.sqrt(n), C.min_region_area(d["S"]), C.SIZE_K,
                        {"kind": "thr", "c": float(c)})
        seg, cnt = C._resolve(into)
        s0 = seg - 1
        A = np.bincount(s0, weights=g["area"].astype(float))
        rs = np.stack([np.bincount(s0, weights=g["rsum"][:, k].astype(float)) for k in range(3)], 1)
        sse = np.maximum(np.bincount(s0, weights=g["rsq"].astype(float)) - (rs ** 2).sum(1) / A, 0)
        cross = s0[g["ea"]] != s0[g["eb"]]
        F = math.sqrt(cnt) * (sse / np.sqrt(A)).sum()
        vals, counts = np.unique(A, return_counts=True)
        RA = counts[np.searchsorted(vals, A)]
        Q = math.sqrt(cnt) / (10000 * n) * (sse / (1 + np.log(A)) + (RA / A) ** 2).sum()
        out.append((sse.sum(), g["el"][cross].sum(), g["eg"][cross].sum(), F, Q, cnt))
    return np.array(out, float)


def unsup_report(M: np.ndarray, T: dict) -> None:
    """In-sample rows of levels chosen by unsupervised segmentation measures (argmin on [2.9, 3.9],
    shrunk to c0) and by the Mumford-Shah energy Σ SSE + λ · boundary (argmin over all levels)."""
    C, L = T["curves"], np.asarray(LEVELS)
    ii = np.arange(len(C))
    dm = T["default"].mean(0)
    y = np.array([U.oracle_level(c) for c in C])
    lo, hi = U.lvl_index(2.9), U.lvl_index(3.9)
    for nm, col in (("Liu-Yang F", 3), ("Borsotti Q", 4)):
        e = L[lo + M[:, lo:hi + 1, col].argmin(1)]
        print(f"{nm} argmin: corr with the oracle level {np.corrcoef(e, y)[0, 1]:.3f}", flush=True)
        for s in (0.5, 1.0):
            for c0 in (3.25, 3.3, 3.35):
                m = C[ii, U.to_index(c0 + s * (e - np.median(e)))].mean(0)
                print(f"   s {s} c0 {c0}: " + " / ".join(f"{x:.4f}" for x in m), "beats" if U.beats(m, dm) else "",
                      flush=True)
    for nm, col, lams in (("MS, boundary length", 1, (1e5, 3e5, 1e6)), ("MS, boundary gradient", 2, (1e4, 3e4, 1e5))):
        for lam in lams:
            k = (M[:, :, 0] + lam * M[:, :, col] / (16.0 if col == 2 else 1.0)).argmin(1)
            m = C[ii, k].mean(0)
            print(f"{nm} λ {lam:g}: " + " / ".join(f"{x:.4f}" for x in m)
                  + f", corr {np.corrcoef(L[k], y)[0, 1]:.3f}", flush=True)


def cmd_unsup(a):
    T = load_curves(a.curves)
    pool = None
    if a.workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(a.workers)
    mapf = (lambda f, xs: pool.map(f, xs, chunksize=4)) if pool else (lambda f, xs: list(map(f, xs)))
    D = _load(Path(a.data) / "train", Path(a.cache), "train", mapf)
    assert [d["id"] for d in D] == T["ids"], "the curves are not of these images"
    M = np.stack(mapf(unsup_row, D))
    assert np.array_equal(M[:, :, 5], T["curves"][:, :, 3])
    unsup_report(M, T)
    if pool:
        pool.close()


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
    p = sub.add_parser("decide")
    p.add_argument("--curves", required=True, help="the training images' curves (data)")
    p.add_argument("--val", default=None, help="the 20 images' curves (data --val), only after the decision")
    p.add_argument("--out", default=None)
    p = sub.add_parser("explore")
    p.add_argument("--curves", required=True)
    p = sub.add_parser("split", help="the per-image oracle chosen on half the humans, scored on the other half")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    p.add_argument("--cache", default="/tmp/ucm9d")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--out", default=None)
    p = sub.add_parser("stab", help="exploration: the agreement of two hierarchies per level (train only)")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--limit", type=int, default=0)
    p.add_argument("--out", default=None)
    p.add_argument("--report", default=None, help="only print the rows of an earlier run's JSON")
    p = sub.add_parser("unsup", help="exploration: levels from unsupervised segmentation measures (train only)")
    p.add_argument("--curves", required=True)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    p.add_argument("--cache", default="/tmp/ucm9d")
    p.add_argument("--workers", type=int, default=1)
    a = ap.parse_args(argv)
    {"data": cmd_data, "decide": cmd_decide, "explore": cmd_explore, "split": cmd_split, "stab": cmd_stab,
     "unsup": cmd_unsup}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(run(main))
