"""Issue 21, session 9: a per-image level on the contours merge hierarchy (the "ladder"), the
pre-registered test (rule: ``benchmarks/results/imseg_ucm_session9.md``, committed before this
script ran).

Per image, the production superpixels and region graph (``imseg_session7_quality.prepare``) are
merged by the production rounds (``contours.merge_np``) under a rising threshold 10^c, c = 2.50 ..
4.50 in steps of 0.05; each level's labels are the ladder state finished at 10^c with the S²/4
clean-up. Five families of rules choose one level per image (global level, equalised boundary
contrast, equalised count, a ridge regressor and k nearest neighbours to the oracle level, both
fitted within the folds); the margin rule picks on four fifths of the 200 training images and is
scored on the fifth, in 8 new permutations (seeds 901-908). ``--val`` scores the 20 images after the
decision.

Usage::

    python benchmarks/imseg_session9_ucm.py --data ../shared/data/bsds500 --cache /tmp/ucm9 --workers 16 [--val]
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
from bench_cli import check_bsds, check_cache_source, check_new_folder, check_results_file, run, write_json  # noqa: E402

LEVELS = tuple(np.round(np.arange(2.5, 4.5001, 0.05), 2))
SEEDS = tuple(range(901, 909))
OUT = ROOT / "benchmarks" / "results" / "imseg_ucm_session9.json"
DEFAULT_C = 3.3
TARGET_LO, TARGET_HI = 2.8, 4.2
FEAT_C = (2.9, 3.3, 3.7, 4.1)
RIDGE_LAM = 10.0
KNN_K = 20
L_ROWS = (3.2, 3.25, 3.3, 3.35, 3.4)
NC_F = (0.9, 0.95, 1.0, 1.05, 1.1)
N_ROWS = (20, 24, 27, 30, 34)
RG_D = (-0.1, -0.05, 0.0, 0.05, 0.1)
KNN_D = (-0.1, 0.0, 0.1)
DK = "default"


def lvl_index(c: float) -> int:
    return int(round((c - LEVELS[0]) / 0.05))


# --------------------------------------------------------------------------- the ladder
def roots(into: np.ndarray) -> np.ndarray:
    r = into.copy()
    while True:
        nxt = r[r]
        if np.array_equal(nxt, r):
            return r
        r = nxt


def graph_at(g: dict, root: np.ndarray) -> dict:
    """The region graph of the regions ``root`` names (sums exact: integers), in the superpixels'
    index space (merged-away regions have area 0 and no edges)."""
    from gpu_kernels.imseg import contours as C

    R = g["R"]
    area = np.bincount(root, weights=g["area"].astype(np.float64), minlength=R).astype(np.int64)
    rsum = np.stack([np.bincount(root, weights=g["rsum"][:, k].astype(np.float64), minlength=R)
                     for k in range(3)], axis=1).astype(np.int64)
    na, nb = root[g["ea"]], root[g["eb"]]
    ok = na != nb
    ea, eb, el, eg = C._aggregate(np.minimum(na, nb)[ok], np.maximum(na, nb)[ok], g["el"][ok], g["eg"][ok], R)
    return {"R": R, "ea": ea, "eb": eb, "el": el, "eg": eg, "area": area, "rsum": rsum}


def ladder(d: dict, levels=LEVELS):
    """Per level: (covering, PRI, VI, count) of the labels, ρ (the state's boundary contrast before
    the clean-up) and the largest segment's share; and the labels (superpixel -> segment)."""
    from imseg_session3 import scores

    from gpu_kernels.imseg import contours as C

    g = d["graph"]
    R = g["R"]
    n = d["h"] * d["w"]
    inv_norm, min_area = 1 / math.sqrt(n), C.min_region_area(d["S"])
    base = g["eg"].sum() / g["el"].sum()
    root = np.arange(R, dtype=np.int64)
    curve, rho, big, segs = [], [], [], []
    for c in levels:
        thr = C.coarseness_threshold(c)
        into, _, _ = C.merge_np(graph_at(g, root), 0, thr, inv_norm, min_area=0, size_k=C.SIZE_K)
        root = roots(into)[root]
        gs = graph_at(g, root)
        rho.append(float(gs["eg"].sum() / gs["el"].sum() / base) if len(gs["ea"]) else math.inf)
        into2, _, _ = C.merge_np(gs, 0, thr, inv_norm, min_area=min_area, size_k=C.SIZE_K)
        fin = roots(into2)[root]
        _, seg = np.unique(fin, return_inverse=True)
        cnt = int(seg.max()) + 1
        curve.append((*scores(d, seg), cnt))
        big.append(float(np.bincount(seg, weights=g["area"].astype(np.float64)).max() / n))
        segs.append(seg.astype(np.int32))
    return np.array(curve), np.array(rho), np.array(big), segs


def image_row(d: dict) -> dict:
    """Everything the rules need from one image (the default, the ladder's curves, the features)."""
    g = d["graph"]
    curve, rho, big, _ = ladder(d)
    area = g["area"].astype(np.float64)
    m = g["rsum"] / area[:, None]
    mu = (area[:, None] * m).sum(0) / area.sum()
    spread = math.sqrt(float((area[:, None] * (m - mu) ** 2).sum() / area.sum()))
    i33 = lvl_index(3.3)
    feats = [math.log(g["gin"].sum() / g["area"].sum() / 8.0), math.log(g["R"])]
    feats += [math.log(curve[lvl_index(c), 3]) for c in FEAT_C]
    feats += [math.log(min(rho[i33], 1e6)), math.log(max(spread, 1e-6)), big[i33]]
    return {"id": d["id"], "default": S7.run(d, S7.DEFAULT), "curve": curve, "rho": rho, "feats": np.array(feats)}


def _img_job(d):
    return image_row(d)


# --------------------------------------------------------------------------- the rules
def objective(curve: np.ndarray) -> np.ndarray:
    """J = covering + PRI - VI/10, smoothed by a centred 3-level mean (2 at the ends)."""
    J = curve[:, 0] + curve[:, 1] - curve[:, 2] / 10
    s = np.convolve(J, np.ones(3), "same")
    s /= np.convolve(np.ones(len(J)), np.ones(3), "same")
    return s


def oracle_level(curve: np.ndarray) -> float:
    lo, hi = lvl_index(TARGET_LO), lvl_index(TARGET_HI)
    s = objective(curve)[lo:hi + 1]
    return LEVELS[lo + int(np.argmax(s))]


def to_index(c) -> np.ndarray:
    c = np.clip(np.round(np.asarray(c, float) / 0.05) * 0.05, LEVELS[0], LEVELS[-1])
    return np.rint((c - LEVELS[0]) / 0.05).astype(int)


def nc_index(rho: np.ndarray, tau: float) -> np.ndarray:
    """Per image the lowest level with ρ ≥ τ (the last if none)."""
    ok = rho >= tau
    return np.where(ok.any(1), ok.argmax(1), len(LEVELS) - 1)


def fit_tau(curves: np.ndarray, rho: np.ndarray, target: float, steps: int = 20) -> float:
    """τ whose mean count is closest to ``target`` (bisection of log τ on [0.5, 8], counts only)."""
    ii = np.arange(len(rho))

    def cnt(t):
        return curves[ii, nc_index(rho, t), 3].mean()

    lo, hi = math.log(0.5), math.log(8.0)
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if cnt(math.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
    return min((math.exp(lo), math.exp(hi)), key=lambda t: abs(cnt(t) - target))


def n_index(curves: np.ndarray, n: int) -> np.ndarray:
    return np.abs(curves[:, :, 3] - n).argmin(1)


def ridge_fit(X, y, lam=RIDGE_LAM):
    mu, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    Z = np.c_[(X - mu) / sd, np.ones(len(X))]
    P = np.eye(Z.shape[1]) * lam
    P[-1, -1] = 0.0
    w = np.linalg.solve(Z.T @ Z + P, Z.T @ y)
    return lambda Xn: np.c_[(Xn - mu) / sd, np.ones(len(Xn))] @ w


def knn_fit(X, y, k=KNN_K):
    mu, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    Zt = (X - mu) / sd

    def f(Xn):
        Z = (Xn - mu) / sd
        dist = ((Z[:, None, :] - Zt[None]) ** 2).sum(-1)
        nn = np.argsort(dist, 1, kind="stable")[:, :k]
        return y[nn].mean(1)
    return f


def rows_for(T: dict, fit_idx: np.ndarray) -> dict:
    """Every candidate row (per image: covering, PRI, VI, count) for all images of ``T``, with the
    fitted rules (τ*, ridge, kNN) fitted on ``fit_idx``; also the fitted values."""
    curves, rho, X, y = T["curves"], T["rho"], T["X"], T["y"]
    n = len(curves)
    ii = np.arange(n)
    rows = {DK: T["default"]}
    for c in L_ROWS:
        rows[f"L({c})"] = curves[:, lvl_index(c)]
    target = T["default"][fit_idx, 3].mean()
    tau = fit_tau(curves[fit_idx], rho[fit_idx], target)
    for f in NC_F:
        rows[f"NC(tau*x{f})"] = curves[ii, nc_index(rho, tau * f)]
    for m in N_ROWS:
        rows[f"N({m})"] = curves[ii, n_index(curves, m)]
    rg = ridge_fit(X[fit_idx], y[fit_idx])(X)
    for dl in RG_D:
        rows[f"RG({dl:+.2f})"] = curves[ii, to_index(rg + dl)]
    kn = knn_fit(X[fit_idx], y[fit_idx])(X)
    for dl in KNN_D:
        rows[f"KNN({dl:+.2f})"] = curves[ii, to_index(kn + dl)]
    return rows, {"tau": tau}


def qualifies(m, dm) -> bool:
    return bool(m[0] > dm[0] and m[1] > dm[1] and m[2] < dm[2] and 20 <= m[3] <= 45)


def margin(m, dm) -> float:
    return min(m[0] - dm[0], m[1] - dm[1], (dm[2] - m[2]) / 10)


def pick(rows: dict, idx) -> str:
    dm = rows[DK][idx].mean(0)
    ok = [(margin(rows[k][idx].mean(0), dm), k) for k in rows if k != DK and qualifies(rows[k][idx].mean(0), dm)]
    return max(ok)[1] if ok else DK


def beats(m, dm) -> bool:
    return bool(m[0] > dm[0] and m[1] > dm[1] and m[2] < dm[2])


def cv(T: dict, seeds=SEEDS) -> dict:
    n = len(T["curves"])
    dm = T["default"].mean(0)
    perms = []
    for seed in seeds:
        folds = [np.sort(f) for f in np.array_split(np.random.default_rng(seed).permutation(n), 5)]
        held = np.zeros((n, 4))
        picks = []
        for f in folds:
            tr = np.setdiff1d(np.arange(n), f)
            rows, _ = rows_for(T, tr)
            p = pick(rows, tr)
            picks.append(p)
            held[f] = rows[p][f]
        m = held.mean(0)
        perms.append({"seed": seed, "picks": picks, "held_out": m.round(4).tolist(), "beats": beats(m, dm)})
    grand = np.mean([p["held_out"] for p in perms], 0)
    npass = sum(p["beats"] for p in perms)
    rows, fitted = rows_for(T, np.arange(n))
    full = pick(rows, np.arange(n))
    return {"default": dm.round(4).tolist(), "perms": perms, "n_pass": npass, "mean_held_out": grand.round(4).tolist(),
            "mean_beats": beats(grand, dm), "pick_all200": full, "fitted_all200": fitted,
            "accepted": bool(npass >= 7 and beats(grand, dm) and full != DK)}


def table(res: list) -> dict:
    curves = np.stack([r["curve"] for r in res])
    return {"ids": [r["id"] for r in res], "curves": curves, "rho": np.stack([r["rho"] for r in res]),
            "X": np.stack([r["feats"] for r in res]), "default": np.array([r["default"] for r in res], float),
            "y": np.array([oracle_level(c) for c in curves])}


def oracle_row(T: dict) -> np.ndarray:
    ii = np.arange(len(T["curves"]))
    return T["curves"][ii, to_index(T["y"])]


def val_rows(T: dict, V: dict) -> dict:
    """The 20 images' rows with every fitted rule fitted on all 200 (``T``)."""
    both = {k: (np.concatenate([T[k], V[k]]) if k != "ids" else T[k] + V[k]) for k in T}
    n = len(T["curves"])
    rows, _ = rows_for(both, np.arange(n))
    return {k: v[n:] for k, v in rows.items()}


# --------------------------------------------------------------------------- main
def check_args(a) -> Path:
    check_bsds("--data", a.data, val=a.val)
    check_new_folder("--cache", a.cache)
    out = check_results_file("--out", a.out, OUT)
    check_cache_source("--cache", a.cache, a.data)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    ap.add_argument("--cache", default="/tmp/ucm9")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="only the first N training images (a smoke run)")
    ap.add_argument("--val", action="store_true", help="also score the 20 images (after the decision)")
    ap.add_argument("--out", default=None, help=f"the results JSON (default {OUT}, written only where it does "
                                                  "not exist yet: name it to write over it)")
    a = ap.parse_args(argv)
    out = check_args(a)
    t0 = time.time()
    pool = None
    if a.workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(a.workers)
    mapf = (lambda f, xs: pool.map(f, xs, chunksize=1)) if pool else (lambda f, xs: list(map(f, xs)))
    D = S7.load(Path(a.data) / "train", Path(a.cache), "train", mapf, limit=a.limit)
    print(f"{len(D)} training images prepared ({time.time() - t0:.0f} s)", flush=True)
    T = table(mapf(_img_job, D))
    print(f"ladders done ({time.time() - t0:.0f} s)", flush=True)
    dm = T["default"].mean(0)
    rep = {"levels": list(LEVELS), "default_train": dm.round(4).tolist(),
           "default_reproduces": bool(a.limit or np.allclose(dm, [0.5965, 0.8214, 1.7437, 27.105], atol=6e-5))}
    rows, fitted = rows_for(T, np.arange(len(T["curves"])))
    rep["train_means"] = {k: v.mean(0).round(4).tolist() for k, v in rows.items()}
    rep["train_means"]["oracle (best level per image, J)"] = oracle_row(T).mean(0).round(4).tolist()
    rep["fitted_all200"] = fitted
    for k, m in rep["train_means"].items():
        print(f"   {k:34s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
    rep["cv"] = cv(T)
    for p in rep["cv"]["perms"]:
        print(p, flush=True)
    print({k: v for k, v in rep["cv"].items() if k != "perms"}, flush=True)
    pk = rep["cv"]["pick_all200"]
    d = rows[pk] - rows[DK]
    rep["paired_pick_minus_default"] = {"mean": d.mean(0).round(4).tolist(),
                                        "se": (d.std(0, ddof=1) / math.sqrt(len(d))).round(4).tolist()}
    if a.val:  # only after the decision above
        V = table(mapf(_img_job, S7.load(Path(a.data), Path(a.cache), "val", mapf)))
        vr = val_rows(T, V)
        rep["val_means"] = {k: v.mean(0).round(4).tolist() for k, v in vr.items()}
        rep["val_means"]["oracle (best level per image, J)"] = oracle_row(V).mean(0).round(4).tolist()
        print("the 20 images (after the decision):", flush=True)
        for k, m in rep["val_means"].items():
            print(f"   {k:34s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
        rep["val_per_image"] = {"ids": V["ids"], "y": V["y"].tolist(), "curves": V["curves"].round(5).tolist(),
                                "rho": np.minimum(V["rho"], 1e6).round(5).tolist()}
    rep["train_per_image"] = {"ids": T["ids"], "y": T["y"].tolist(), "curves": T["curves"].round(5).tolist(),
                              "rho": np.minimum(T["rho"], 1e6).round(5).tolist(), "X": T["X"].round(5).tolist(),
                              "default": T["default"].round(5).tolist()}
    rep["seconds"] = round(time.time() - t0, 1)
    write_json(out, rep, indent=0)
    print(f"wrote {out} ({rep['seconds']} s)", flush=True)
    if pool:
        pool.close()


if __name__ == "__main__":
    sys.exit(run(main))
