"""Issue 21, session 13 (helper imseg-sched): can a merge SCHEDULE with far fewer rounds keep the learned
merge's quality? A CPU quality round, no device.

The learned merge (``gpu_kernels/imseg/learned.py``, ``_merge_loop``) merges, each round, the pairs that are
each other's lowest p and below τ (the "mutual" schedule, the control). On the GPU a round costs ~18-20 µs
and 512² needs ~203 rounds, 1080p ~416. This script runs a copy of ``_merge_loop`` with a ``mode``:

* mode 0 ``mutual`` (control): the library's loop unchanged (checked: the same labels as
  ``segment_contours(merge="learned", device="cpu")`` on the first 3 train images, and the same rounds).
* mode 1 ``boruvka`` (brief's a): every live region r with lowest p_r < τ joins its lowest-p neighbour
  (ties as the library: the float32 bits, then the neighbour's index); all such edges in the same round,
  chains included (union-find; the merged sums add as in the clean-up).
* mode 2 ``delta`` (brief's b, δ = 0.02 fixed here): the mutual pairs plus every pair e = (a, b) with
  p_e < τ, p_e ≤ low(a) + δ and p_e ≤ low(b) + δ (float64 compare of the float32 p's); union-find.
* mode 3 ``confident`` (c): the mutual pairs below τ plus every pair that is the lowest of at least one of
  its ends and has p_e < τ / 2 (a low p is a confident "same segment": chaining those costs little; the
  decisions near τ stay mutual); union-find.

Everything else is the library's: the features, p, the clean-up of small regions (when nothing is below τ,
regions < S²/4 join their lowest-p neighbour), and the stop. Count mode (``n_segments``, τ = ∞): the
candidate's selected edges are applied in ascending (p bits, ea, eb) order, each union that joins two
different trees lowering the count by exactly 1, until exactly n regions are left (the library's mutual
schedule also stops at exactly n: it keeps the k lowest mutual pairs). Checked here on a few images
(count == n); the quality round judges the coarseness mode only.

PRE-REGISTERED RULE (committed before the runs; see benchmarks/results/imseg_sched_session13.md):
judged on the 200 TRAIN images (../shared/data/bsds500/train), at the default coarseness (τ 0.39), through
this copy of the CPU loop, against mode 0 run by the same copy. A candidate passes only if its train mean
covering ≥ control − 0.003, PRI ≥ control − 0.003, VI ≤ control + 0.03 AND its mean rounds fall by ≥ 40 % at
512x512 and at 1920x1080 (each: benchmarks/imseg.natural_image at that size plus the first 3 train images
by sorted name resized to that size with cv2.INTER_CUBIC/INTER_AREA, 4 images a size, mean rounds). If
several pass, the one with the fewest mean rounds at 1080p is named (ties: higher train covering). The 20
BSDS test images (../shared/data/bsds500/images) are reported too, not used to choose.

Usage: nice -n 10 .venv/bin/python benchmarks/imseg_session13_sched.py [--workers 2] [--limit N]
       [--skip checks,rounds,train,test] [--out benchmarks/results/imseg_sched_session13.json]
       (descriptive, added after the judged runs: --matched benchmarks/results/imseg_sched_session13.json
        --out benchmarks/results/imseg_sched_session13_matched.json: every schedule in the count mode at the
        control's segment count of each image)
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_kernels.imseg import contours as C  # noqa: E402
from gpu_kernels.imseg import learned as LM  # noqa: E402
from gpu_kernels.imseg.metrics import evaluate  # noqa: E402

MODES = ("mutual", "boruvka", "delta", "confident")
DELTA = 0.02
CONF = 0.5

_K = LM._kernels()
_cost32 = _K._cost32
flog = _K.flog
_features = _K._features
_walk = _K._walk
_find = _K._find
_aggregate = _K._aggregate
NFEAT = LM.NFEAT
NH = LM.NH


def _sched_loop(R, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, bord, feat, thr, left, right, leaf, val, base,
                t23, tau32, target, min_area, inv_norm, npx, max_rounds, mode, delta, conf):
    """A copy of learned._merge_loop (no check/ctl) with the merge schedule ``mode`` (MODES)."""
    into = np.arange(R)
    count = R
    rounds = 0
    E = ea.shape[0]
    X = np.empty(NFEAT, np.float64)
    x32 = np.empty(NFEAT, np.float32)
    X32 = np.zeros((E, NFEAT), np.float32)
    lcs = np.zeros(E, np.float64)
    p32 = np.zeros(E, np.float32)
    chg = np.ones(R, np.bool_)
    mn = np.empty(R, np.float64)
    per = np.empty(R, np.float64)
    best = np.empty(R, np.uint64)
    lowp = np.empty(R, np.float64)
    pbits = p32.view(np.uint32)
    NONE = np.uint64(0xFFFFFFFFFFFFFFFF)
    LOW = np.uint64(0xFFFFFFFF)
    nmerge_rounds = 0
    while E > 0 and rounds < max_rounds and not (target > 0 and count <= target):
        for r in range(R):
            mn[r] = np.inf
            per[r] = float(bord[r])
            best[r] = NONE
            lowp[r] = np.inf
        for e in range(E):
            a = ea[e]
            b = eb[e]
            if chg[a] or chg[b]:
                c32 = _cost32(float(area[a]), float(area[b]), rsum, a, b, float(el[e]), float(eg[e]), inv_norm, npx)
                lcs[e] = flog(max(np.float64(c32), 1e-12))
            v = lcs[e]
            mn[a] = min(mn[a], v)
            mn[b] = min(mn[b], v)
            per[a] += el[e]
            per[b] += el[e]
        f23 = flog(count / R)
        f32 = np.float32(f23)
        bin23 = 0
        for k in range(t23.shape[0]):
            if np.float64(f32) > t23[k]:
                bin23 += 1
        for e in range(E):
            a = ea[e]
            b = eb[e]
            dirty = chg[a] or chg[b] or rounds == 0
            if dirty:
                _features(e, X, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, per, lcs, mn, npx, f23)
                for k in range(21):
                    x32[k] = np.float32(X[k])
            else:
                for k in range(21):
                    x32[k] = X32[e, k]
            cA = lcs[e] - mn[a]
            cB = lcs[e] - mn[b]
            x32[21] = np.float32(min(cA, cB))
            x32[22] = np.float32(max(cA, cB))
            x32[23] = np.float32(bin23)
            same = rounds > 0
            for k in range(NFEAT):
                if x32[k] != X32[e, k]:
                    same = False
            if not same:
                X32[e] = x32
                x32[23] = f32
                p32[e] = _walk(x32, feat, thr, left, right, leaf, val, base)
            key = np.uint64(pbits[e]) << np.uint64(32)
            ka = key | np.uint64(b)
            kb = key | np.uint64(a)
            if ka < best[a]:
                best[a] = ka
            if kb < best[b]:
                best[b] = kb
            lowp[a] = min(lowp[a], np.float64(p32[e]))
            lowp[b] = min(lowp[b], np.float64(p32[e]))
        for r in range(R):
            chg[r] = False
        sel = np.zeros(E, np.bool_)
        nm = 0
        for e in range(E):
            a = ea[e]
            b = eb[e]
            pe = p32[e]
            if not pe < tau32:
                continue
            la = np.int64(best[a] & LOW) == b
            lb = np.int64(best[b] & LOW) == a
            s = la and lb
            if mode == 1:
                s = la or lb
            elif mode == 2 and not s:
                s = np.float64(pe) <= lowp[a] + delta and np.float64(pe) <= lowp[b] + delta
            elif mode == 3 and not s:
                s = (la or lb) and np.float64(pe) < conf * np.float64(tau32)
            if s:
                sel[e] = True
                nm += 1
        if nm == 0:
            if target > 0 or min_area <= 1:
                break
            root = np.arange(R)
            ns = 0
            for e in range(E):
                a = ea[e]
                b = eb[e]
                if (np.int64(best[a] & LOW) == b and area[a] < min_area) or \
                        (np.int64(best[b] & LOW) == a and area[b] < min_area):
                    ra = _find(root, a)
                    rb = _find(root, b)
                    if ra < rb:
                        root[rb] = ra
                    elif rb < ra:
                        root[ra] = rb
                    ns += 1
            if ns == 0:
                break
            mv = 0
            for r in range(R):
                if into[r] != r:
                    continue
                rr = _find(root, r)
                if rr != r:
                    chg[rr] = True
                    area[rr] += area[r]
                    for c in range(3):
                        rsum[rr, c] += rsum[r, c]
                    rsq[rr] += rsq[r]
                    gin[rr] += gin[r]
                    for k in range(NH):
                        hist[rr, k] += hist[r, k]
                    bord[rr] += bord[r]
                    into[r] = rr
                    mv += 1
            for r in range(R):
                root[r] = _find(root, r)
            keep = np.empty(E, np.bool_)
            for e in range(E):
                keep[e] = root[ea[e]] != root[eb[e]]
            na = root[ea]
            nb = root[eb]
            count -= mv
        elif mode == 0:
            nmerge_rounds += 1
            if target > 0 and count - nm < target:
                k = count - target
                idx = np.flatnonzero(sel)
                keys = np.empty(len(idx), np.uint64)
                for i in range(len(idx)):
                    keys[i] = (np.uint64(pbits[idx[i]]) << np.uint64(32)) | np.uint64(ea[idx[i]])
                order = np.argsort(keys)
                for i in range(k, len(idx)):
                    sel[idx[order[i]]] = False
                nm = k
            for e in range(E):
                if sel[e]:
                    a = ea[e]
                    b = eb[e]
                    into[b] = a
                    chg[a] = True
                    area[a] += area[b]
                    for c in range(3):
                        rsum[a, c] += rsum[b, c]
                    rsq[a] += rsq[b]
                    gin[a] += gin[b]
                    for k in range(NH):
                        hist[a, k] += hist[b, k]
                    bord[a] += bord[b]
            keep = np.empty(E, np.bool_)
            na = np.empty(E, np.int64)
            nb = np.empty(E, np.int64)
            for e in range(E):
                na[e] = into[ea[e]]
                nb[e] = into[eb[e]]
                keep[e] = (not sel[e]) and na[e] != nb[e]
            count -= nm
        else:
            # the candidate schedules: union-find over the selected edges, in ascending (p, ea, eb) order,
            # each union of two trees -1 region; count mode stops at exactly target
            nmerge_rounds += 1
            idx = np.flatnonzero(sel)
            keys = np.empty(len(idx), np.uint64)
            for i in range(len(idx)):
                keys[i] = (np.uint64(pbits[idx[i]]) << np.uint64(32)) | np.uint64(idx[i])
            order = np.argsort(keys)
            root = np.arange(R)
            left_ = count - target if target > 0 else count
            for i in range(len(idx)):
                if left_ <= 0:
                    break
                e = idx[order[i]]
                ra = _find(root, ea[e])
                rb = _find(root, eb[e])
                if ra < rb:
                    root[rb] = ra
                    left_ -= 1
                elif rb < ra:
                    root[ra] = rb
                    left_ -= 1
            mv = 0
            for r in range(R):
                if into[r] != r:
                    continue
                rr = _find(root, r)
                if rr != r:
                    chg[rr] = True
                    area[rr] += area[r]
                    for c in range(3):
                        rsum[rr, c] += rsum[r, c]
                    rsq[rr] += rsq[r]
                    gin[rr] += gin[r]
                    for k in range(NH):
                        hist[rr, k] += hist[r, k]
                    bord[rr] += bord[r]
                    into[r] = rr
                    mv += 1
            for r in range(R):
                root[r] = _find(root, r)
            keep = np.empty(E, np.bool_)
            for e in range(E):
                keep[e] = root[ea[e]] != root[eb[e]]
            na = root[ea]
            nb = root[eb]
            count -= mv
        idx = np.flatnonzero(keep)
        lo = np.minimum(na[idx], nb[idx])
        hi = np.maximum(na[idx], nb[idx])
        ea, eb, el, eg, gh, X32, p32, lcs = _aggregate(R, lo, hi, el[idx], eg[idx], gh[idx], X32[idx], p32[idx],
                                                       lcs[idx])
        pbits = p32.view(np.uint32)
        E = ea.shape[0]
        rounds += 1
    return into, count, rounds, nmerge_rounds


try:
    import numba

    _sched_loop = numba.njit(cache=True)(_sched_loop)
except ImportError:  # pragma: no cover
    pass


def prepare(img):
    """The library's stages 1-2 and the learned merge's graph (as contours.stage_merge on the CPU)."""
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, device="cpu")
    R = sp["R"]
    graph = C.region_graph_np(sp["comps"], R, col["gq"], col["q"], boundary=True)
    graph.update(LM.graph_extras_np(sp["comps"], R, col["gq"], col["q"], graph))
    h, w = col["h"], col["w"]
    return {"graph": graph, "comps": sp["comps"], "min_area": C.min_region_area(sp["S"]),
            "inv_norm": 1.0 / math.sqrt(h * w), "R": R}


def run_mode(prep, mode: str, target: int = 0, coarseness: float = C.DEFAULT_COARSENESS):
    st = LM._state(prep["graph"])
    m = LM.model()
    npx = float(int(st[6].sum()))
    tau = LM.tau_from_coarseness(coarseness)
    tau32 = np.float32(math.inf if target > 0 else tau)
    into, count, rounds, mr = _sched_loop(*st, *LM._model_arrays(m), LM.thresholds23(m), tau32, int(target),
                                          int(prep["min_area"]) if not target else 0, float(prep["inv_norm"]),
                                          npx, 100_000, MODES.index(mode), DELTA, CONF)
    seg, cnt = C._resolve(into)
    return seg[prep["comps"] - 1].astype(np.int32), int(cnt), int(rounds), int(mr)


def _one(job):
    i, img, gts, gbs = job
    prep = prepare(img)
    out = {"id": i, "R": prep["R"]}
    for mode in MODES:
        t0 = time.perf_counter()
        lab, cnt, rounds, mr = run_mode(prep, mode)
        t = time.perf_counter() - t0
        m = evaluate(lab, gts, gt_boundaries=gbs)
        out[mode] = {"covering": m["covering"], "pri": m["pri"], "voi": m["voi"], "segments": cnt,
                     "rounds": rounds, "merge_rounds": mr, "seconds": t}
    return out


def quality(root: Path, workers: int, limit: int | None):
    from benchmarks.imseg import bsds_items

    items = list(bsds_items(root))
    if limit:
        items = items[:limit]
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            res = pool.map(_one, items, chunksize=1)
    else:
        res = [_one(j) for j in items]
    return res


def summarise(res):
    out = {}
    for mode in MODES:
        out[mode] = {k: float(np.mean([r[mode][k] for r in res]))
                     for k in ("covering", "pri", "voi", "segments", "rounds", "merge_rounds", "seconds")}
    return out


def resized(img, h, w):
    import cv2

    interp = cv2.INTER_AREA if h * w <= img.shape[0] * img.shape[1] else cv2.INTER_CUBIC
    return cv2.resize(img, (w, h), interpolation=interp)


def rounds_at(size, train: Path):
    from app.io.image_io import read_image
    from benchmarks.imseg import natural_image

    h, w = size
    imgs = [("natural_image", natural_image(h, w))]
    for p in sorted(glob.glob(str(train / "images" / "*.jpg")))[:3]:
        imgs.append((Path(p).stem, resized(read_image(p), h, w)))
    rows = []
    for name, img in imgs:
        prep = prepare(img)
        row = {"image": name, "R": prep["R"]}
        for mode in MODES:
            _, cnt, rounds, mr = run_mode(prep, mode)
            row[mode] = {"rounds": rounds, "merge_rounds": mr, "segments": cnt}
        rows.append(row)
    return rows


def checks(train: Path):
    """The control = the library (labels and rounds) on the first 3 train images; the count mode stops at n."""
    from app.io.image_io import read_image

    out = []
    for p in sorted(glob.glob(str(train / "images" / "*.jpg")))[:3]:
        img = read_image(p)
        lib = C.segment_contours(img, merge="learned", device="cpu", features=False)
        prep = prepare(img)
        lab, cnt, rounds, _ = run_mode(prep, "mutual")
        row = {"image": Path(p).stem, "labels_equal": bool(np.array_equal(lab, lib.labels)),
               "lib_rounds": int(lib.info.get("merge_rounds", -1)),
               "rounds": rounds}
        for n in (10, 37):
            libn = C.segment_contours(img, merge="learned", device="cpu", features=False, n_segments=n)
            row[f"n{n}"] = {"lib_equal": bool(np.array_equal(run_mode(prep, "mutual", target=n)[0], libn.labels))}
            for mode in MODES[1:]:
                row[f"n{n}"][mode] = run_mode(prep, mode, target=n)[1]
        out.append(row)
    return out


def _matched_one(job):
    (i, img, gts, gbs), n = job
    prep = prepare(img)
    out = {"id": i, "n": n}
    for mode in MODES:
        lab, cnt, rounds, _ = run_mode(prep, mode, target=n)
        m = evaluate(lab, gts, gt_boundaries=gbs)
        out[mode] = {"covering": m["covering"], "pri": m["pri"], "voi": m["voi"], "segments": cnt, "rounds": rounds}
    return out


def matched(root: Path, base_json: str, part: str, workers: int):
    """DESCRIPTIVE, NOT PRE-REGISTERED (added after the rule's runs): every schedule in the count mode with n =
    the control's segment count of each image in ``base_json`` (the same operating point for all). In the
    count mode τ = ∞, so "confident" (p < τ/2) is the same as "boruvka" there."""
    from benchmarks.imseg import bsds_items

    base = {r["id"]: r for r in json.loads(Path(base_json).read_text())[part]["per_image"]}
    jobs = [(it, base[it[0]]["mutual"]["segments"]) for it in bsds_items(root)]
    import multiprocessing as mp

    with mp.get_context("fork").Pool(workers) as pool:
        return pool.map(_matched_one, jobs, chunksize=1)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--skip", default="", help="comma list of parts to skip: checks,rounds,train,test")
    ap.add_argument("--out", default="benchmarks/results/imseg_sched_session13.json")
    ap.add_argument("--matched", default=None, help="a results json: run only the descriptive matched-count part")
    a = ap.parse_args(argv)
    data = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "bsds500"
    skip = set(a.skip.split(","))
    if a.matched:
        res = {}
        for part, sub in (("test", "."), ("train", "train")):
            if part in skip:
                continue
            res[part] = matched(data / sub, a.matched, part, a.workers)
            print(part, {mode: {k: round(float(np.mean([r[mode][k] for r in res[part]])), 4)
                                for k in ("covering", "pri", "voi", "segments", "rounds")} for mode in MODES}, flush=True)
        Path(a.out).write_text(json.dumps(res, indent=1))
        return
    res: dict = {"modes": MODES, "delta": DELTA, "conf": CONF}
    t0 = time.time()
    if "checks" not in skip:
        res["checks"] = checks(data / "train")
        print("checks", json.dumps(res["checks"]), f"{time.time() - t0:.0f}s", flush=True)
    if "rounds" not in skip:
        res["rounds"] = {f"{h}x{w}": rounds_at((h, w), data / "train") for h, w in ((512, 512), (1080, 1920))}
        for k, rows in res["rounds"].items():
            print(k, {mode: float(np.mean([r[mode]["rounds"] for r in rows])) for mode in MODES}, flush=True)
        print(f"{time.time() - t0:.0f}s", flush=True)
    for part, sub in (("train", "train"), ("test", ".")):
        if part in skip:
            continue
        per = quality(data / sub, a.workers, a.limit)
        res[part] = {"mean": summarise(per), "per_image": per}
        print(part, json.dumps(res[part]["mean"]), f"{time.time() - t0:.0f}s", flush=True)
    Path(a.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
