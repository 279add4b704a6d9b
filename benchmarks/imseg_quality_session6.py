"""Issue 21, session 6: the contours default's preprocessing (blur sigma, SLIC compactness,
superpixel count, SLIC iterations) re-tuned with the coarseness, on BSDS500 train only
(results: ``benchmarks/results/imseg_quality_session6.md``).

These are parameters the CPU and GPU paths share (no merge cost or kernel changes): each
variant runs the production colour stage, SLIC, components, region graph and merge
(:func:`gpu_kernels.imseg.contours.merge_np`, size guard, clean-up S^2/4), once per image and
variant; every coarseness reuses the graph. Metrics: covering, PRI and VI from the
contingency of the superpixels with each human segmentation
(``benchmarks/imseg_session3.py``'s ``scores``, equal to :mod:`gpu_kernels.imseg.metrics`).

Rule (fixed before the runs, as in session 3): among the variants that beat the default
(sigma 1, compactness 10, 600 superpixels, 4 iterations, coarseness 3.3) on all three
measures on the 200 training images, the one with the largest smallest margin over
felzenszwalb(500, 0.8, 200) in covering, PRI and VI / 10; none: the default stays. The 20
images are scored after the decision and reported, never used to choose.

Usage::

    python benchmarks/imseg_quality_session6.py --screen 60 --workers 1 --out /tmp/imseg_s6   # train subset
    python benchmarks/imseg_quality_session6.py --workers 1 --val --variants '...'           # full train + 20
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

#: (sigma, compactness, n_superpixels, slic iterations[, the blur SLIC sees if not sigma])
DEFAULT_PRE = (1.0, 10.0, 600, 4)
DEFAULT_C = 3.3
VARIANTS = [DEFAULT_PRE, (0.7, 10.0, 600, 4), (0.85, 10.0, 600, 4), (1.0, 15.0, 600, 4),
            (1.0, 20.0, 600, 4), (1.0, 30.0, 600, 4), (1.0, 10.0, 400, 4), (1.0, 10.0, 800, 4),
            (1.0, 10.0, 600, 10)]
COARSE = (3.1, 3.2, 3.3, 3.4, 3.5, 3.6)


def prepare(img, gts, pre):
    """Superpixels, region graph and contingency tables of one image under ``pre``."""
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import label as L

    sigma, m, nsp, iters = pre[:4]
    h, w = img.shape[:2]
    lab = C.lab_planes_np(C.to_u8(img))
    sm = C.blur_np(lab, sigma)
    _, gq, q = C.gradient_np(sm)
    S = C.slic_step(h, w, nsp)
    if len(pre) > 4 and pre[4] != sigma:  # SLIC on its own blur; the boundary strength and colours on sigma's
        sm2 = C.blur_np(lab, pre[4])
        comps, R = L.label_np(C.slic_np(sm2, C.gradient_np(sm2)[2], S, m, iters), 4)
    else:
        comps, R = L.label_np(C.slic_np(sm, q, S, m, iters), 4)
    from imseg_session3 import contingency

    graph = C.region_graph_np(comps, R, gq, q)
    return {"h": h, "w": w, "S": S, "graph": graph, "cont": contingency(comps, gts)}


def run(d, c):
    from imseg_session3 import scores

    from gpu_kernels.imseg import contours as C

    n = d["h"] * d["w"]
    into, _, _ = C.merge_np(d["graph"], 0, C.coarseness_threshold(c), 1 / math.sqrt(n),
                            min_area=C.min_region_area(d["S"]))
    seg, count = C._resolve(into)
    return (*scores(d, seg), count)


def _job(args):
    item, variants, coarse = args
    from imseg_session3 import _felz

    _, img, gts, _ = item
    out = {}
    for pre in variants:
        d = prepare(img, gts, tuple(pre))
        for c in coarse:
            out[f"{pre}|{c}"] = run(d, c)
    out["felz"] = _felz(item)
    return out


def main(argv=None):
    import multiprocessing as mp

    import imseg as B

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--screen", type=int, default=0, help="only N training images (fixed seed 6)")
    ap.add_argument("--val", action="store_true", help="also the 20 images (scored after the decision)")
    ap.add_argument("--variants", default="", help="JSON list of [sigma, compactness, n_superpixels, iterations]")
    ap.add_argument("--coarse", default="", help="JSON list of coarseness values")
    ap.add_argument("--out", default="/tmp/imseg_s6")
    a = ap.parse_args(argv)
    variants = [(float(v[0]), float(v[1]), int(v[2]), int(v[3]), *map(float, v[4:])) for v in
                (json.loads(a.variants) if a.variants else VARIANTS)]
    if DEFAULT_PRE not in variants:
        variants = [DEFAULT_PRE] + variants
    coarse = tuple(json.loads(a.coarse)) if a.coarse else COARSE
    if DEFAULT_C not in coarse:
        coarse = (DEFAULT_C,) + coarse
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    sets = [("train", Path(a.data) / "train")] + ([("val", Path(a.data))] if a.val else [])
    report = {"variants": [list(v) for v in variants], "coarse": list(coarse), "screen": a.screen}
    for name, root in sets:
        items = list(B.bsds_items(root))
        if name == "train" and a.screen:
            pick = np.sort(np.random.default_rng(6).permutation(len(items))[:a.screen])
            items = [items[i] for i in pick]
        t0 = time.time()
        jobs = [(it, variants, coarse) for it in items]
        if a.workers > 1:
            with mp.get_context("fork").Pool(a.workers) as pool:
                res = pool.map(_job, jobs, chunksize=1)
        else:
            res = [_job(j) for j in jobs]
        keys = list(res[0])
        means = {k: np.mean([r[k] for r in res], 0).round(4).tolist() for k in keys}
        report[name] = {"n": len(items), "seconds": round(time.time() - t0, 1), "means": means,
                        "per_image": {k: [list(r[k]) for r in res] for k in keys}}
        print(f"== {name} ({len(items)} images, {time.time() - t0:.0f} s)  covering / PRI / VI / segments")
        for k in keys:
            print(f"  {k:32s} " + " / ".join(f"{x:.4f}" for x in means[k]))
    tr = report["train"]["means"]
    dk = f"{DEFAULT_PRE}|{DEFAULT_C}"
    dm, fm = tr[dk], tr["felz"]
    ok = [(min(m[0] - fm[0], m[1] - fm[1], (fm[2] - m[2]) / 10), k) for k, m in tr.items()
          if k not in ("felz", dk) and m[0] > dm[0] and m[1] > dm[1] and m[2] < dm[2]]
    report["beat_default_on_train"] = sorted(ok, reverse=True)
    report["pick"] = max(ok)[1] if ok else dk
    print("beats the default on all three (train):", report["beat_default_on_train"][:10])
    print("pick:", report["pick"])
    (out / ("imseg_quality_session6%s.json" % (f"_screen{a.screen}" if a.screen else ""))).write_text(
        json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
