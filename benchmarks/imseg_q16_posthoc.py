"""Issue 21, session 16 (imseg-q7): DESCRIPTIVE, after the judged runs (not used to choose anything): the hybrid on
the 20 BSDS500 test images with the other region counts' own all-200 models (``imseg_q16_hybrid.py all --m M``), and
the shipped learned model run from the hybrid's start (is it the refit or the start that loses on the 20?).

    python benchmarks/imseg_q16_posthoc.py [--workers 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
RES = ROOT / "benchmarks" / "results"
ARMS = {"M150 own model": (150, "imseg_q7_session16_model_M150_all200.json"),
        "M200 own model (shipped)": (200, "imseg_q7_session16_model_M200_all200.json"),
        "M400 own model": (400, "imseg_q7_session16_model_M400_all200.json"),
        "M200, the learned merge's shipped model": (200, None)}
_ITEMS: list = []


def _job(i):
    from imseg_q16_hybrid import from_json

    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import hybrid as HY
    from gpu_kernels.imseg import learned as LM
    from gpu_kernels.imseg.metrics import evaluate

    name, img, gts, gbs = _ITEMS[i]
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, device="cpu")
    out = {"id": name}
    for arm, (M, path) in ARMS.items():
        m = from_json(json.loads((RES / path).read_text())["model"]) if path else LM.model()
        lab = HY.merge_np(sp["comps"], sp["R"], col["gq"], col["q"], sp["S"], 0, 0.39,
                          min_area=C.min_region_area(sp["S"]), regions=M, model_arrays=m)
        met = evaluate(lab, gts, gt_boundaries=gbs)
        out[arm] = {k: float(met[k]) for k in ("covering", "pri", "voi")} | {"segments": int(lab.max())}
    return out


def main(argv=None) -> int:
    import multiprocessing as mp

    import imseg as B

    global _ITEMS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    _ITEMS = list(B.bsds_items(ROOT.parent / "shared" / "data" / "bsds500"))
    with mp.get_context("fork").Pool(a.workers) as pool:
        rows = pool.map(_job, range(len(_ITEMS)), chunksize=1)
    summ = {arm: {k: float(np.mean([r[arm][k] for r in rows])) for k in ("covering", "pri", "voi", "segments")}
            for arm in ARMS}
    for arm, s in summ.items():
        print(arm, {k: round(v, 4) for k, v in s.items()}, flush=True)
    if a.out:
        Path(a.out).write_text(json.dumps({"summary": summ, "per_image": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
