"""Issue 21, session 3: boundary maps and a contrast-adaptive coarseness for the contours merge,
screened on BSDS500 train with a rule fixed beforehand and 5-fold cross-validation
(results: ``benchmarks/results/imseg_session3.md``).

Each image's superpixels (the production SLIC and components, defaults) are computed once;
every candidate changes only the boundary strength ``eg`` of the region graph or the merge
threshold, and runs the production merge (:func:`gpu_kernels.imseg.contours.merge_np`, size
guard k = 7, clean-up S^2/4). Metrics: covering, PRI and VI as in
:mod:`gpu_kernels.imseg.metrics`, computed from the contingency of the superpixels with each
human segmentation (cached per image), which gives the same numbers.

Candidates (the map ``eg`` sums over the boundary pixel pairs, in the production's units):

- ``base``: the production gradient (CIELAB, blur sigma 1, central differences);
- ``ms2``: (G_1 + 2 G_2) / 2 (G_2: the gradient after blur sigma 2, scaled to G_1's units);
- ``cnK``: G_1 K / (Gbar + K), Gbar = G_1 blurred with sigma 4 (texture-suppressing contrast
  normalisation); ``ms2cnK``: the same on ``ms2``;
- ``ori``: the colour difference across each boundary pixel pair (oriented: the component
  normal to the boundary, 2 |q(p) - q(r)|); ``mixori``: the mean of ``base`` and ``ori``;
- ``alpha`` > 0: the image's coarseness becomes c + alpha log10(gbar / 5.6), gbar = the mean
  gradient of the image (5.6: its median over the 200 training images).

Rule (fixed before the runs): among candidates that beat the default (``base``, 3.3) on all
three measures on the training images, the one with the largest smallest margin over
felzenszwalb (500, 0.8, 200) in covering, PRI and VI / 10; if none, the default stays. The
cross-validation applies the same rule on 160 images and scores the other 40.

Usage (2 cores, about 15 minutes; ``--families`` adds the guard x coarseness grids of the
base, ori and mixori maps and their cross-validation)::

    python benchmarks/imseg_session3.py --workers 2 --out /tmp/imseg_s3 [--families] [--val]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

GREF = 5.6
DEFAULT = ("base", 3.3, 0.0)
CANDIDATES = ([("base", c, 0.0) for c in (3.2, 3.25, 3.3, 3.35, 3.4)]
              + [("ms2", c, 0.0) for c in (3.35, 3.4, 3.45, 3.5, 3.55)]
              + [("cn6", c, 0.0) for c in (2.5, 2.6, 2.7, 2.8)]
              + [("ms2cn4", c, 0.0) for c in (2.6, 2.7, 2.8)]
              + [("ms2cn6", c, 0.0) for c in (2.7, 2.8, 2.9)]
              + [("base", c, a) for a in (0.25, 0.5, 0.75, 1.0) for c in (3.25, 3.3, 3.35)]
              + [("ori", c, 0.0) for c in (3.2, 3.3, 3.4)] + [("mixori", 3.3, 0.0)])
#: ``--families``: each boundary map tuned over the size guard k and the coarseness; the
#: selection is cross-validated per family (procedure against procedure, both held out)
FAMILIES = {m: [(m, c, 0.0, k) for k in (3.0, 7.0, 15.0) for c in (3.1, 3.2, 3.3, 3.4)]
            for m in ("base", "ori", "mixori")}


def _maps(sm, lab):
    from scipy.ndimage import gaussian_filter

    from gpu_kernels.imseg import contours as C

    def grad(p):
        return C.gradient_np(p)[0]

    g1 = grad(sm)
    g2 = grad(C.blur_np(lab, 2.0)) * 2
    gb = gaussian_filter(g1, 4.0, mode="nearest")
    ms2 = 0.5 * (g1 + g2)
    return {"base": g1, "ms2": ms2, "cn6": g1 * 6 / (gb + 6), "ms2cn4": ms2 * 4 / (gb + 4),
            "ms2cn6": ms2 * 6 / (gb + 6)}


def _oriented_eg(lab0, q, R):
    from gpu_kernels.imseg import contours as C

    qq = q.astype(np.int64)
    a1, b1 = lab0[:, :-1], lab0[:, 1:]
    a2, b2 = lab0[:-1, :], lab0[1:, :]
    m1, m2 = a1 != b1, a2 != b2
    d1 = np.sqrt(((qq[:, :, :-1] - qq[:, :, 1:]) ** 2).sum(0).astype(np.float64))
    d2 = np.sqrt(((qq[:, :-1, :] - qq[:, 1:, :]) ** 2).sum(0).astype(np.float64))
    a, b = np.concatenate([a1[m1], a2[m2]]), np.concatenate([b1[m1], b2[m2]])
    s = np.rint(2 * np.concatenate([d1[m1], d2[m2]])).astype(np.int64)
    return C._aggregate(np.minimum(a, b), np.maximum(a, b), np.ones(len(a), np.int64), s, R)[3]


def contingency(comps, gts) -> list:
    """Per human segmentation: (superpixel, segment, pixel count, number of segments) of every
    pair that overlaps, which :func:`scores` turns into the measures of any merge of the pieces."""
    c0 = comps.ravel().astype(np.int64) - 1
    cont = []
    for gt in gts:
        _, gi = np.unique(np.asarray(gt).ravel(), return_inverse=True)
        ng = int(gi.max()) + 1
        u, cnt = np.unique(c0 * ng + gi, return_counts=True)
        cont.append((u // ng, u % ng, cnt.astype(np.float64), ng))
    return cont


def prepare(item):
    """One image: superpixels, the region graph of every boundary map, the mean gradient and
    the contingency of the superpixels with each human segmentation."""
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import label as L

    i, img, gts, _ = item
    h, w = img.shape[:2]
    lab = C.lab_planes_np(C.to_u8(img))
    sm = C.blur_np(lab, C.DEFAULT_SIGMA)
    _, gq, q = C.gradient_np(sm)
    S = C.slic_step(h, w, C.DEFAULT_N_SUPERPIXELS)
    comps, R = L.label_np(C.slic_np(sm, q, S, C.DEFAULT_COMPACTNESS, C.SLIC_ITERATIONS), 4)
    graphs = {}
    for k, g in _maps(sm, lab).items():
        gqk = np.minimum(np.rint(g.astype(np.float32) * np.float32(C.GSCALE)), np.float32(C.GMAX)).astype(np.int32)
        graphs[k] = C.region_graph_np(comps, R, gqk, q)
    eo = _oriented_eg(comps.astype(np.int64) - 1, q, R)
    graphs["ori"] = dict(graphs["base"], eg=eo)
    graphs["mixori"] = dict(graphs["base"], eg=(graphs["base"]["eg"] + eo + 1) // 2)
    cont = contingency(comps, gts)
    gbar = int(gq.astype(np.int64).sum()) / gq.size / C.GSCALE
    return {"id": i, "h": h, "w": w, "S": S, "graphs": graphs, "cont": cont, "gbar": gbar}


def scores(d, seg):
    """Mean covering, PRI and VI over the human segmentations of superpixel -> segment ``seg``."""
    cov, pri, voi = [], [], []
    for ci, gi, cnt, ng in d["cont"]:
        _, si = np.unique(seg[ci], return_inverse=True)
        u, inv = np.unique(si * ng + gi, return_inverse=True)
        n = np.bincount(inv, weights=cnt)
        ss, gg = u // ng, u % ng
        a, b = np.bincount(ss, weights=n), np.bincount(gg, weights=n, minlength=ng)
        N = a.sum()
        best = np.zeros(len(b))
        np.maximum.at(best, gg, n / (a[ss] + b[gg] - n))
        cov.append(np.sum(b * best) / N)
        pri.append(1 - (np.sum(a * a) / 2 + np.sum(b * b) / 2 - np.sum(n * n)) / (N * (N - 1) / 2))
        pa, pb, pj = a / N, b[b > 0] / N, n / N
        hs, hg, hj = -np.sum(pa * np.log2(pa)), -np.sum(pb * np.log2(pb)), -np.sum(pj * np.log2(pj))
        voi.append(max(hs + hg - 2 * (hs + hg - hj), 0.0))
    return float(np.mean(cov)), float(np.mean(pri)), float(np.mean(voi))


def run_candidate(d, cand):
    from gpu_kernels.imseg import contours as C

    m, c, alpha = cand[:3]
    size_k = cand[3] if len(cand) > 3 else C.SIZE_K
    if alpha:
        c = c + alpha * math.log10(d["gbar"] / GREF)
    n = d["h"] * d["w"]
    into, _, _ = C.merge_np(d["graphs"][m], 0, C.coarseness_threshold(c), 1 / math.sqrt(n),
                            min_area=C.min_region_area(d["S"]), size_k=size_k)
    seg, count = C._resolve(into)
    return (*scores(d, seg), count)


def _felz(item):
    from skimage.segmentation import felzenszwalb

    from gpu_kernels.imseg.metrics import evaluate

    m = evaluate(felzenszwalb(item[1], scale=500, sigma=0.8, min_size=200), item[2])
    return m["covering"], m["pri"], m["voi"], m["segments"]


def _job(args):
    item, cands = args
    d = prepare(item)
    return [run_candidate(d, c) for c in cands] + [_felz(item)]


def choose(rows: dict, felz: np.ndarray, idx) -> tuple:
    """The rule (module docstring) on the images ``idx``."""
    dm = rows[DEFAULT][idx].mean(0)
    fm = felz[idx].mean(0)
    ok = []
    for c, r in rows.items():
        m = r[idx].mean(0)
        if m[0] > dm[0] and m[1] > dm[1] and m[2] < dm[2]:
            ok.append((min(m[0] - fm[0], m[1] - fm[1], (fm[2] - m[2]) / 10), c))
    return max(ok)[1] if ok else DEFAULT


def _min_margin(r, f):
    m, fm = r.mean(0), f.mean(0)
    return min(m[0] - fm[0], m[1] - fm[1], (fm[2] - m[2]) / 10)


def family_cv(rows: dict, felz: np.ndarray, seeds=(0, 1, 2)) -> dict:
    """Per family: on each fold, the member with the largest smallest margin over felzenszwalb
    on the other 160 images, scored on the held-out 40; the mean over the folds per seed."""
    n = len(felz)
    out = {}
    for fam, members in FAMILIES.items():
        res = []
        for seed in seeds:
            held = []
            for te in np.array_split(np.random.default_rng(seed).permutation(n), 5):
                tr = np.setdiff1d(np.arange(n), te)
                p = max(members, key=lambda c: _min_margin(rows[c][tr], felz[tr]))
                held.append(rows[p][te].mean(0))
            res.append(np.mean(held, 0).tolist())
        out[fam] = res
    return out


def main(argv=None):
    import multiprocessing as mp

    import imseg as B

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="/tmp/imseg_s3")
    ap.add_argument("--val", action="store_true", help="also score the 20 validation images (report once)")
    ap.add_argument("--families", action="store_true", help="also cross-validate the guard x coarseness families")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = [("train", Path(a.data) / "train")] + ([("val", Path(a.data))] if a.val else [])
    res = {}
    for name, root in sets:
        items = list(B.bsds_items(root))
        cands = CANDIDATES + ([c for m in FAMILIES.values() for c in m] if a.families else [])
        with mp.get_context("fork").Pool(a.workers) as pool:
            r = np.array(pool.map(_job, [(it, cands) for it in items], chunksize=2))
        res[name] = {"rows": {c: r[:, k] for k, c in enumerate(cands)}, "felz": r[:, -1]}
    tr = res["train"]
    n = len(tr["felz"])
    main_rows = {c: tr["rows"][c] for c in CANDIDATES}
    report = {"pick_train": choose(main_rows, tr["felz"], np.arange(n)), "folds": []}
    folds = np.array_split(np.random.default_rng(0).permutation(n), 5)
    for te in folds:
        p = choose(main_rows, tr["felz"], np.setdiff1d(np.arange(n), te))
        report["folds"].append({"pick": p, "pick_heldout": tr["rows"][p][te].mean(0).tolist(),
                                "default_heldout": tr["rows"][DEFAULT][te].mean(0).tolist(),
                                "felz_heldout": tr["felz"][te].mean(0).tolist()})
    report["means"] = {name: {"felz": v["felz"].mean(0).tolist(),
                              **{" ".join(map(str, c)): r.mean(0).tolist() for c, r in v["rows"].items()}}
                       for name, v in res.items()}
    if a.families:
        report["family_cv"] = family_cv(tr["rows"], tr["felz"])
    (out / "imseg_session3.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("pick_train", "folds", "family_cv") if k in report}, indent=1))


if __name__ == "__main__":
    main()
