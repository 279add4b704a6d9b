"""Issue 21, session 10: a GALA-style learned agglomeration for the contours default's superpixels
(rule: ``benchmarks/results/imseg_q_session10.md``, committed before the deciding run).

The superpixels and region graph are the default's (SLIC 600, σ 1, compactness 10). A merge round
takes, over every pair of adjacent regions, a boosted-tree estimate p of "these two regions lie in
different human segments" from a per-edge feature vector (``edge_features``: the production cost, the
colour distance, the boundary-gradient histogram along the shared boundary (fractions above 2, 4, 8,
16 gradient units), colour-histogram χ² of L, a, b, sizes, shared share of the perimeter, the
regions' inner gradient and colour variance, the merge's context (cost against each region's cheapest
edge) and the merge's progress); the mutual lowest pairs with p < τ merge; the merged regions' sums
(area, colour sums and squares, inner gradient, colour histograms, border length) and the edges'
sums (length, gradient, gradient histogram) add; repeat until no pair is under τ; then the default's
S²/4 clean-up (small regions join their lowest-p neighbour). Training examples come from the merge
itself: every round of a replayed agglomeration (the production merge to c 3.8), each edge labelled
by the share of human segmentations whose majority segments of the two regions differ.

Sub-commands: ``prep`` (cache), ``bound`` (the superpixels' best covering), ``cv`` (the
pre-registered decision on the 200 training images), ``val`` (the 20 images, after the decision).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.extend(p for p in os.environ.get("GALA10_EXTRA_PATH", "").split(":") if p)  # scikit-learn, training only
os.environ.setdefault("OMP_NUM_THREADS", "1")  # one thread per pool worker

from _common import majority_agreement, superpixel_graph, worker_map  # noqa: E402

f32 = np.float32
NB = 16  # colour histogram bins per channel (session 8's binning)
GEDGES = np.array([1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])  # boundary-gradient histogram bin edges
NG = len(GEDGES) + 1
TAUS = (0.24, 0.27, 0.30, 0.33, 0.36)  # amended before any result (17:38), from segment counts only
REPLAY_C = 3.8
PER_IMAGE = 2000
PER_ROUND = 48  # edges recorded per round of the replay (late rounds count as much as early ones)
SEEDS = tuple(range(1001, 1009))
NFEAT = 24


# --------------------------------------------------------------------------- data
def prepare(item) -> dict:
    from imseg_session3 import contingency

    from gpu_kernels.imseg import contours as C

    i, img, gts, _ = item
    sp = superpixel_graph(img)
    h, w, S, comps, R, g, gq, q = (sp[k] for k in ("h", "w", "S", "comps", "R", "graph", "gq", "q"))
    lab0 = comps.astype(np.int64) - 1
    fl = lab0.ravel()
    q2 = (q.astype(np.int64) ** 2).sum(0).ravel()
    g["rsq"] = np.bincount(fl, weights=q2.astype(np.float64), minlength=R)
    g["gin"] = np.bincount(fl, weights=gq.ravel().astype(np.float64), minlength=R)
    bl = np.clip(q[0] // 100, 0, NB - 1)
    ba = np.clip((q[1] + 1024) // 128, 0, NB - 1)
    bb = np.clip((q[2] + 1024) // 128, 0, NB - 1)
    hist = np.zeros((R, 3 * NB))
    for k, bk in enumerate((bl, ba, bb)):
        np.add.at(hist, (fl, k * NB + bk.ravel()), 1.0)
    g["hist"] = hist
    border = np.zeros((h, w), bool)
    border[0], border[-1], border[:, 0], border[:, -1] = True, True, True, True
    g["bord"] = np.bincount(lab0[border], minlength=R).astype(np.float64)
    # the boundary pixel pairs' gradient histogram per edge (same pairs as region_graph_np)
    lo, hi, s = C.boundary_pairs(lab0, gq.astype(np.int64))
    t = s / (2.0 * C.GSCALE)
    key = lo * R + hi
    u, inv = np.unique(key, return_inverse=True)
    assert np.array_equal(u // R, g["ea"]) and np.array_equal(u % R, g["eb"])
    gh = np.zeros((len(u), NG))
    np.add.at(gh, (inv, np.searchsorted(GEDGES, t, side="right")), 1.0)
    g["gh"] = gh
    return {"id": i, "h": h, "w": w, "S": S, "graph": g, "cont": contingency(comps, gts)}


def load(root: Path, cache: Path, tag: str, mapf=None, limit: int = 0) -> list:
    import imseg as B

    p = cache / f"gala10_{tag}{limit or ''}.pkl"
    if p.exists():
        return pickle.loads(p.read_bytes())
    items = list(B.bsds_items(root))[:limit or None]
    D = (mapf or (lambda f, xs: list(map(f, xs))))(prepare, items)
    cache.mkdir(parents=True, exist_ok=True)
    p.write_bytes(pickle.dumps(D))
    return D


# --------------------------------------------------------------------------- the merge state
REGION_KEYS = ("area", "rsum", "rsq", "gin", "hist", "bord")


def aggregate(lo, hi, cols: list, R: int):
    key = lo * R + hi
    u, inv = np.unique(key, return_inverse=True)
    out = []
    for c in cols:
        if c.ndim == 1:
            out.append(np.bincount(inv, weights=c, minlength=len(u)))
        else:
            out.append(np.stack([np.bincount(inv, weights=c[:, k], minlength=len(u)) for k in range(c.shape[1])], 1))
    return u // R, u % R, out


def _chi2(hn, ea, eb):
    """χ² distances (E, 3) of the L, a and b histograms of regions ea and eb (``hn``: each region's
    histograms divided by its area, so each channel sums to 1)."""
    a, b = hn[ea], hn[eb]
    s = a + b
    d = np.where(s > 0, (a - b) ** 2 / np.where(s > 0, s, 1.0), 0.0)
    return 0.5 * d.reshape(len(ea), 3, NB).sum(2)


def edge_features(st: dict, ea, eb, el, eg, gh, inv_norm: float, npx: float, count: int, R0: int):
    """(features (E, NFEAT), production cost float32) of the current edges."""
    from gpu_kernels.imseg import contours as C

    area, rsum = st["area"], st["rsum"]
    cost = C.merge_cost_np(area, rsum, ea, eb, el.astype(np.int64), eg.astype(np.int64), 2.0 * C.GSCALE, C.B0,
                           inv_norm, npx, C.SIZE_K)
    cst = np.maximum(cost.astype(np.float64), 1e-12)
    aA, aB = area[ea].astype(np.float64), area[eb].astype(np.float64)
    mA, mB = rsum[ea] / aA[:, None], rsum[eb] / aB[:, None]
    d2 = ((mA - mB) ** 2).sum(1) / 256.0
    hm = aA * aB / (aA + aB)
    t = eg / (el * 2.0 * C.GSCALE) + C.B0
    cum = np.cumsum(gh[:, ::-1], 1)[:, ::-1] / el[:, None]  # share of the boundary at or above each edge
    fr = cum[:, [2, 3, 4, 5]]  # >= 2, 4, 8, 16
    vA = np.maximum(st["rsq"][ea] / aA - (mA ** 2).sum(1), 0.0) / 256.0 + 1.0
    vB = np.maximum(st["rsq"][eb] / aB - (mB ** 2).sum(1), 0.0) / 256.0 + 1.0
    tA = st["gin"][ea] / aA / C.GSCALE + 0.5
    tB = st["gin"][eb] / aB / C.GSCALE + 0.5
    n = len(area)
    per = np.bincount(ea, weights=el, minlength=n) + np.bincount(eb, weights=el, minlength=n) + st["bord"]
    pA, pB = per[ea], per[eb]
    lc = np.log(cst)
    mn = np.full(n, np.inf)
    np.minimum.at(mn, ea, lc)
    np.minimum.at(mn, eb, lc)
    cA, cB = lc - mn[ea], lc - mn[eb]
    ch = _chi2(st["hist"] / np.maximum(area, 1.0)[:, None], ea, eb)
    X = np.stack([
        lc, np.log(hm), np.log(d2 + 1e-4), np.log(el), np.log(t),
        fr[:, 0], fr[:, 1], fr[:, 2], fr[:, 3],
        ch[:, 0], ch[:, 1], ch[:, 2],
        np.log(np.minimum(aA, aB) / npx), np.log(np.maximum(aA, aB) / npx),
        el / np.minimum(pA, pB), el / np.maximum(pA, pB),
        np.log(tA * tB), np.abs(np.log(tA / tB)), np.log(t / np.maximum(tA, tB)),
        np.log(vA * vB), np.abs(np.log(vA / vB)),
        np.minimum(cA, cB), np.maximum(cA, cB), np.full(len(ea), math.log(count / R0)),
    ], 1)
    return X, cost


def init_state(d: dict):
    g = d["graph"]
    st = {k: np.asarray(g[k], np.float64).copy() for k in REGION_KEYS}
    return st, g["ea"].copy(), g["eb"].copy(), g["el"].astype(np.float64), g["eg"].astype(np.float64), \
        g["gh"].astype(np.float64)


def merge(d: dict, score, tau: float, cleanup: bool = True, record=None):
    """The learned agglomeration: ``into`` (region -> region it joined). ``score(X, cost)`` gives the
    boundary estimate (lower merges first); ``record(X, s0, count, ea, eb)`` hears every round."""
    from gpu_kernels.imseg import contours as C

    R = d["graph"]["R"]
    st, ea, eb, el, eg, gh = init_state(d)
    into = np.arange(R, dtype=np.int64)
    npx = float(st["area"].sum())
    inv_norm = 1 / math.sqrt(d["h"] * d["w"])
    min_area = C.min_region_area(d["S"]) if cleanup else 0
    count = R
    while len(ea):
        X, cost = edge_features(st, ea, eb, el, eg, gh, inv_norm, npx, count, R)
        p = np.asarray(score(X, cost), np.float32)
        if record is not None:
            record(X, into, count, ea, eb)
        bits = p.view(np.uint32).astype(np.uint64) if (p >= 0).all() else None
        if bits is None:
            raise ValueError("scores must be non-negative")
        best = np.full(R, np.iinfo(np.uint64).max, np.uint64)
        np.minimum.at(best, ea, (bits << np.uint64(32)) | eb.astype(np.uint64))
        np.minimum.at(best, eb, (bits << np.uint64(32)) | ea.astype(np.uint64))
        bo = (best & np.uint64(0xFFFFFFFF)).astype(np.int64)
        idx = np.flatnonzero((bo[ea] == eb) & (bo[eb] == ea) & (p < f32(tau)))
        if len(idx) == 0:
            if min_area <= 1:
                break
            small = st["area"] < min_area
            sel = ((bo[ea] == eb) & small[ea]) | ((bo[eb] == ea) & small[eb])
            if not sel.any():
                break
            root = C._components_min(R, ea[sel], eb[sel])
            live = np.flatnonzero(into == np.arange(R))
            moved = live[root[live] != live]
            for v in st.values():
                np.add.at(v, root[moved], v[moved])
            into[moved] = root[moved]
            na, nb = root[ea], root[eb]
            ok = na != nb
            ea, eb, (el, eg, gh) = aggregate(np.minimum(na, nb)[ok], np.maximum(na, nb)[ok],
                                             [el[ok], eg[ok], gh[ok]], R)
            count -= len(moved)
            continue
        A, B = ea[idx], eb[idx]
        into[B] = A
        for v in st.values():
            v[A] += v[B]
        keep = np.ones(len(ea), bool)
        keep[idx] = False
        na, nb = into[ea[keep]], into[eb[keep]]
        ok = na != nb
        ea, eb, (el, eg, gh) = aggregate(np.minimum(na, nb)[ok], np.maximum(na, nb)[ok],
                                         [el[keep][ok], eg[keep][ok], gh[keep][ok]], R)
        count -= len(idx)
    return into


def cost_score(X, cost):
    return cost


# --------------------------------------------------------------------------- training examples
def examples(d: dict, score=None, tau: float | None = None, per_image: int = PER_IMAGE):
    """Features and boundary labels (share of the humans whose majority segments differ) of every
    edge of every round of a replayed merge: the production cost to c ``REPLAY_C`` by default."""
    from gpu_kernels.imseg import contours as C

    Xs, Ys = [], []
    rng = np.random.default_rng(int(d["id"]) if str(d["id"]).isdigit() else 0)

    def rec(X, into, count, ea, eb):
        if len(ea) > PER_ROUND:
            k = np.sort(rng.choice(len(ea), PER_ROUND, replace=False))
            X, ea, eb = X[k], ea[k], eb[k]
        root = into.copy()
        while True:
            nxt = root[root]
            if np.array_equal(nxt, root):
                break
            root = nxt
        Xs.append(X)
        Ys.append(1.0 - majority_agreement(d["cont"], root, len(root), ea, eb))

    if score is None:
        merge(d, cost_score, float(C.coarseness_threshold(REPLAY_C)), cleanup=False, record=rec)
    else:
        merge(d, score, tau, cleanup=False, record=rec)
    X, Y = np.concatenate(Xs), np.concatenate(Ys)
    if len(X) > per_image:
        k = rng.choice(len(X), per_image, replace=False)
        X, Y = X[k], Y[k]
    return X.astype(np.float32), Y.astype(np.float32)


# --------------------------------------------------------------------------- the model (arrays)
def fit(X, Y, seed: int = 0, max_iter: int = 64, depth: int = 4):
    """A boosted-tree regressor of the boundary share, exported as arrays."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    m = HistGradientBoostingRegressor(max_iter=max_iter, max_depth=depth, learning_rate=0.1, max_bins=255,
                                      early_stopping=False, random_state=seed)
    m.fit(X, Y)
    return export(m)


def export(m) -> dict:
    """Trees as flat arrays: node feature, threshold, left, right, leaf flag, value; padded to the
    largest tree."""
    trees = [p[0].nodes for p in m._predictors]
    L = max(len(t) for t in trees)
    T = len(trees)
    feat = np.zeros((T, L), np.int32)
    thr = np.zeros((T, L), np.float64)
    left = np.zeros((T, L), np.int32)
    right = np.zeros((T, L), np.int32)
    leaf = np.ones((T, L), bool)
    val = np.zeros((T, L), np.float64)
    for k, t in enumerate(trees):
        n = len(t)
        feat[k, :n] = t["feature_idx"]
        thr[k, :n] = t["num_threshold"]
        left[k, :n] = t["left"]
        right[k, :n] = t["right"]
        leaf[k, :n] = t["is_leaf"]
        val[k, :n] = t["value"]
    return {"feat": feat, "thr": thr, "left": left, "right": right, "leaf": leaf, "val": val,
            "base": float(np.ravel(m._baseline_prediction)[0])}


def predict(model: dict, X: np.ndarray, depth: int = 8) -> np.ndarray:
    """Sum of the trees' leaves (float64, in tree order) + base, as a non-negative float32 score
    (clipped at 0); every tree walked at once."""
    E = len(X)
    T, L = model["feat"].shape
    tix = np.arange(T) * L
    feat, thr = model["feat"].ravel(), model["thr"].ravel()
    left, right, leaf = model["left"].ravel(), model["right"].ravel(), model["leaf"].ravel()
    X32 = np.asarray(X, np.float32)
    node = np.zeros((E, T), np.int64)
    rows = np.arange(E)[:, None]
    for _ in range(depth):
        g = node + tix
        lf = leaf[g]
        if lf.all():
            break
        go_left = X32[rows, feat[g]].astype(np.float64) <= thr[g]
        node = np.where(lf, node, np.where(go_left, left[g], right[g]))
    leaves = model["val"].ravel()[node + tix]
    out = np.full(E, model["base"])
    for k in range(T):
        out += leaves[:, k]
    return np.maximum(out, 0.0).astype(np.float32)


_NB = None


def predict_fast(model: dict, X: np.ndarray) -> np.ndarray:
    """``predict`` compiled with numba (the same sums in the same order); ``predict`` without numba."""
    global _NB
    if _NB is None:
        try:
            import numba
        except ImportError:  # the optional "fast" extra
            return predict(model, X)

        @numba.njit(cache=False)
        def walk(feat, thr, left, right, leaf, val, base, X):
            E, T = X.shape[0], feat.shape[0]
            out = np.empty(E, np.float64)
            for e in range(E):
                acc = base
                for t in range(T):
                    n = 0
                    while not leaf[t, n]:
                        if np.float64(X[e, feat[t, n]]) <= thr[t, n]:
                            n = left[t, n]
                        else:
                            n = right[t, n]
                    acc += val[t, n]
                out[e] = acc
            return out

        _NB = walk
    out = _NB(model["feat"], model["thr"], model["left"], model["right"], model["leaf"], model["val"],
              float(model["base"]), np.ascontiguousarray(X, np.float32))
    return np.maximum(out, 0.0).astype(np.float32)


def model_score(model):
    return lambda X, cost: predict_fast(model, X)


# --------------------------------------------------------------------------- scoring
def run_row(d: dict, score, tau: float):
    from imseg_session3 import scores

    from gpu_kernels.imseg import contours as C

    into = merge(d, score, tau)
    seg, count = C._resolve(into)
    return (*scores(d, seg), count)


def default_row(d: dict):
    import imseg_session7_quality as S7

    return S7.run({**d, "graph": d["graph"]}, S7.DEFAULT)


def bound_row(d: dict):
    """The superpixels' best case: per human segmentation, every superpixel given its largest
    overlap segment (scored against that same segmentation; covering, PRI, VI)."""
    cov, pri, voi = [], [], []
    from imseg_session3 import scores

    for c in d["cont"]:
        ci, gi, cnt, ng = c
        R = d["graph"]["R"]
        M = np.zeros((R, ng))
        np.add.at(M, (ci, gi), cnt)
        seg = M.argmax(1)
        s = scores({"cont": [c]}, seg)
        cov.append(s[0])
        pri.append(s[1])
        voi.append(s[2])
    return float(np.mean(cov)), float(np.mean(pri)), float(np.mean(voi))


# --------------------------------------------------------------------------- jobs (fork pool; images global)
_D: list = []


def _ex_job(i):
    return examples(_D[i])


def _def_job(i):
    return default_row(_D[i])


_EX: list = []


def _fit_job(args):
    idx, seed = args
    return fit(np.concatenate([_EX[i][0] for i in idx]), np.concatenate([_EX[i][1] for i in idx]), seed=seed)


def _rows_job(args):
    model, idx, taus = args
    sc = model_score(model)
    return [[run_row(_D[i], sc, t) for t in taus] for i in idx]


def _pool(workers: int):
    if workers <= 1:
        return (lambda f, xs: list(map(f, xs))), (lambda: None)
    import multiprocessing as mp

    pool = mp.get_context("fork").Pool(workers)
    return (lambda f, xs: pool.map(f, xs, chunksize=1)), pool.close


def _chunks(idx, k):
    return [c for c in np.array_split(np.asarray(idx), k) if len(c)]


def qualifies(m, dm) -> bool:
    return m[0] > dm[0] and m[1] > dm[1] and m[2] < dm[2] and 20 <= m[3] <= 45


def margin_pick(rows: np.ndarray, drow: np.ndarray):
    """rows (n, T, 4), drow (n, 4): index of the margin rule's pick among the T rows, or -1."""
    dm = drow.mean(0)
    best, bi = -math.inf, -1
    for k in range(rows.shape[1]):
        m = rows[:, k].mean(0)
        if qualifies(m, dm):
            mg = min(m[0] - dm[0], m[1] - dm[1], (dm[2] - m[2]) / 10)
            if mg > best:
                best, bi = mg, k
    return bi


def main(argv=None) -> int:
    global _D
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("prep", "bound", "cv", "val", "smoke", "combine"))
    ap.add_argument("--seeds", default="1001-1008", help="permutation seeds a-b (a part of the CV)")
    ap.add_argument("--no-all", action="store_true", help="skip the all-200 rows (criterion 3)")
    ap.add_argument("--taus", default="", help="comma-separated tau rows (round 2); default TAUS")
    ap.add_argument("--parts", nargs="*", default=[], help="combine: the parts' JSON files")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    ap.add_argument("--cache", default="/tmp/gala10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    if a.cmd == "combine":
        out = combine([json.loads(Path(p).read_text()) for p in a.parts])
        if a.out:
            Path(a.out).write_text(json.dumps(out, indent=1))
        return 0
    lo, hi = (int(x) for x in a.seeds.split("-"))
    global TAUS
    if a.taus:
        TAUS = tuple(float(t) for t in a.taus.split(","))
    root = Path(a.data)
    t0 = time.time()
    mapf, close = worker_map(a.workers)
    tr = load(root / "train", Path(a.cache), "train", mapf, a.limit)
    va = load(root, Path(a.cache), "val", mapf, 0) if a.cmd in ("bound", "val") else []
    close()
    print(f"train: {len(tr)}, val: {len(va)} images prepared ({time.time() - t0:.1f} s)", flush=True)
    out = {"cmd": a.cmd}
    if a.cmd == "bound":
        mapf, close = _pool(a.workers)
        for tag, D in (("train", tr), ("val", va)):
            b = np.array(mapf(bound_row, D))
            out[tag] = b.mean(0).tolist()
            print(tag, "superpixel bound (cov, PRI, VI):", np.round(b.mean(0), 4).tolist(), flush=True)
        close()
    elif a.cmd in ("cv", "smoke"):
        _D = tr
        out.update(cross_validate(len(tr), a.workers, smoke=a.cmd == "smoke",
                                  seeds=tuple(range(lo, hi + 1)), with_all=not a.no_all))
    elif a.cmd == "val":
        out.update(validate(tr, va, a.workers))
    out["seconds"] = time.time() - t0
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


def cross_validate(n: int, workers: int, smoke: bool = False, seeds=SEEDS, with_all: bool = True) -> dict:
    global _EX
    t0 = time.time()
    mapf, close = _pool(workers)
    drow = np.array(mapf(_def_job, range(n)))
    dm = drow.mean(0)
    print(f"default rows ({time.time() - t0:.1f} s): {np.round(dm, 4).tolist()}", flush=True)
    EX = mapf(_ex_job, range(n))
    print(f"examples: {sum(len(x) for x, _ in EX)} ({time.time() - t0:.1f} s)", flush=True)
    close()
    _EX = EX
    mapf, close = _pool(workers)  # forked again: the examples are in the workers
    seeds = seeds[:1] if smoke else seeds
    plan = []  # (seed, fold k, held-out idx, pick idx)
    for seed in seeds:
        perm = np.random.default_rng(seed).permutation(n)
        folds = [np.sort(f) for f in np.array_split(perm, 5)]
        for k, f in enumerate(folds):
            trn = np.setdiff1d(np.arange(n), f)
            plan.append((seed, k, f, trn, trn[::4]))
    fits = [(trn, seed) for seed, _, _, trn, _ in plan] + ([(np.arange(n), 0)] if with_all else [])
    models = mapf(_fit_job, fits)
    print(f"{len(models)} models fitted ({time.time() - t0:.1f} s)", flush=True)
    # the picks: each fold's model on its pick images (in-sample), every tau; and the all-200 rows
    jobs, keys = [], []
    for j, (_s, _k, _f, _t, sub) in enumerate(plan):
        for c in _chunks(sub, 2):
            jobs.append((models[j], c, TAUS))
            keys.append(j)
    for c in _chunks(np.arange(n), 4 * workers) if with_all else []:
        jobs.append((models[-1], c, TAUS))
        keys.append(-1)
    got = mapf(_rows_job, jobs)
    print(f"{len(jobs)} pick jobs ({time.time() - t0:.1f} s)", flush=True)
    R = {}
    for key, (_, idx, _t), rows in zip(keys, jobs, got, strict=True):
        R.setdefault(key, ([], []))
        R[key][0].extend(idx.tolist())
        R[key][1].extend(rows)
    bis = [margin_pick(np.array(R[j][1]), drow[np.array(R[j][0])]) for j in range(len(plan))]
    # the held-out fifths at each fold's pick only
    jobs, keys = [], []
    for j, (_s, _k, f, _t, _u) in enumerate(plan):
        if bis[j] >= 0:
            for c in _chunks(f, 2):
                jobs.append((models[j], c, (TAUS[bis[j]],)))
                keys.append(j)
    got = mapf(_rows_job, jobs)
    close()
    print(f"{len(jobs)} held-out jobs ({time.time() - t0:.1f} s)", flush=True)
    H = {}
    for j, (_, idx, _t), rows in zip(keys, jobs, got, strict=True):
        H.setdefault(j, {}).update({int(i): r[0] for i, r in zip(idx, rows, strict=True)})
    res = {"default_train": dm.tolist(), "taus": list(TAUS), "perms": []}
    for seed in seeds:
        hrows, picks = [], []
        for j, (s_, _k, f, _t, _u) in enumerate(plan):
            if s_ != seed:
                continue
            picks.append(None if bis[j] < 0 else TAUS[bis[j]])
            hrows.append(np.array([H[j][int(i)] for i in f]) if bis[j] >= 0 else drow[f])
        hm = np.concatenate(hrows).mean(0)
        beats = bool(hm[0] > dm[0] and hm[1] > dm[1] and hm[2] < dm[2])
        res["perms"].append({"seed": seed, "picks": picks, "held": hm.tolist(), "beats": beats})
        print(f"seed {seed}: picks {picks} held {np.round(hm, 4).tolist()} beats {beats}", flush=True)
    if with_all:
        ai, ar = R[-1]
        ar = np.array(ar)[np.argsort(ai)]
        res["all200_rows"] = ar.mean(0).tolist()
        res["all200_pick_index"] = int(margin_pick(ar, drow))
        res["model_all200"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in models[-1].items()}
    print(f"({time.time() - t0:.1f} s)", flush=True)
    return res


def combine(parts: list) -> dict:
    """The decision from the CV parts (each a ``cv`` JSON): criteria 1-3."""
    dm = np.array(parts[0]["default_train"])
    perms = sorted((p for q in parts for p in q["perms"]), key=lambda p: p["seed"])
    H = np.array([p["held"] for p in perms])
    mh = H.mean(0)
    allp = [q for q in parts if "all200_rows" in q][0]
    bi = allp["all200_pick_index"]
    res = {"default_train": dm.tolist(), "taus": parts[0]["taus"], "perms": perms, "mean_held": mh.tolist(),
           "n_beat": int(sum(p["beats"] for p in perms)),
           "mean_beats": bool(mh[0] > dm[0] and mh[1] > dm[1] and mh[2] < dm[2]),
           "all200_rows": allp["all200_rows"], "all200_pick": None if bi < 0 else parts[0]["taus"][bi],
           "model_all200": allp["model_all200"]}
    res["accepted"] = bool(len(perms) == 8 and res["n_beat"] >= 7 and res["mean_beats"] and bi >= 0)
    for p in perms:
        print(f"seed {p['seed']}: picks {p['picks']} held {np.round(p['held'], 4).tolist()} beats {p['beats']}")
    for k, t in enumerate(res["taus"]):
        print(f"all-200 tau {t} (in-sample): {np.round(np.array(res['all200_rows'])[k], 4).tolist()}")
    print(f"default {np.round(dm, 4).tolist()}; n_beat {res['n_beat']} of {len(perms)}, mean held "
          f"{np.round(mh, 4).tolist()} beats {res['mean_beats']}; all-200 pick {res['all200_pick']}; "
          f"accepted {res['accepted']}")
    return res


def validate(tr: list, va: list, workers: int) -> dict:
    global _D, _EX
    _D = tr + va
    mapf, close = _pool(workers)
    n = len(tr)
    _EX = mapf(_ex_job, range(n))
    close()
    model = _fit_job((np.arange(n), 0))
    mapf, close = _pool(workers)
    vi = np.arange(n, n + len(va))
    drow = np.array(mapf(_def_job, vi))
    rows = np.array([r for part in mapf(_rows_job, [(model, c, TAUS) for c in _chunks(vi, 2 * workers)]) for r in part])
    close()
    print("the 20, default:", np.round(drow.mean(0), 4).tolist())
    for k, t in enumerate(TAUS):
        print(f"the 20, tau {t}:", np.round(rows[:, k].mean(0), 4).tolist())
    return {"default_val": drow.mean(0).tolist(), "rows_val": rows.mean(0).tolist()}


if __name__ == "__main__":
    raise SystemExit(main())
