"""Issue 21, session 12: the learned merge on the GPU against its CPU path and the contour merge.

1. labels: ``segment_contours(merge="learned")`` on the GPU and on the CPU for every image of
   ``--images`` (coarseness mode and ``--n-segments``) and a synthetic scene: how many differ;
2. speed, in one process: the contours method end to end (labels and features) with the contour
   merge and with the learned merge at 512x512 and 1920x1080 (a BSDS image resized), CUDA events,
   and felzenszwalb(500, 0.8, 200) on the CPU at 1080p.

    python benchmarks/imseg_int12_gpu.py --images DIR --out results.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def synthetic(h: int = 240, w: int = 320, seed: int = 1201) -> np.ndarray:
    """Shaded regions with noise: a disc, a bar and a gradient background."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3), np.float64)
    img[..., 0] = 60 + 80 * xx / w
    img[..., 1] = 90 + 40 * yy / h
    img[..., 2] = 120
    disc = (yy - h * 0.45) ** 2 + (xx - w * 0.35) ** 2 < (0.25 * h) ** 2
    img[disc] = (200, 60, 50)
    bar = (xx > 0.65 * w) & (xx < 0.8 * w)
    img[bar] = (40, 160, 70)
    img += rng.normal(0, 6, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def main(argv=None) -> int:
    import cv2
    from _common import device_name, felzenszwalb_1080p_ms, time_gpu

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg.contours import segment_contours

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--n-segments", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--skip-labels", action="store_true")
    ap.add_argument("--nseg-limit", type=int, default=0, help="n_segments labels on the first N images only (0: all)")
    ap.add_argument("--no-felz", action="store_true", help="skip felzenszwalb's CPU timing")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    be = get_backend("cuda:0")
    out = {"device": device_name(), "labels": [], "speed": {}}
    paths = sorted(Path(a.images).glob("*.jpg"))
    imgs = [(p.stem, cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)) for p in paths]
    imgs.append(("synthetic", synthetic()))
    t0 = time.time()
    if not a.skip_labels:
        for i, (name, img) in enumerate(imgs):
            nseg = not a.nseg_limit or i < a.nseg_limit or name == "synthetic"
            for kw in ({}, {"n_segments": a.n_segments}) if nseg else ({},):
                g = segment_contours(img, merge="learned", device=be, **kw)
                c = segment_contours(img, merge="learned", device="cpu", **kw)
                row = {"image": name, **kw, "same": bool(np.array_equal(g.labels, c.labels)),
                       "count_gpu": int(g.n_regions), "count_cpu": int(c.n_regions),
                       "rounds_gpu": int(g.info["merge_rounds"]), "rounds_cpu": int(c.info["merge_rounds"]),
                       "pixels_differ": int((g.labels != c.labels).sum())}
                out["labels"].append(row)
                print(row, flush=True)
        out["labels_differ"] = sum(not r["same"] for r in out["labels"])
        print(f"labels differ: {out['labels_differ']} of {len(out['labels'])} ({time.time() - t0:.1f} s)", flush=True)
    base = imgs[0][1]
    for size in ((512, 512), (1920, 1080)):
        img = cv2.resize(base, size, interpolation=cv2.INTER_LINEAR)
        key = f"{size[0]}x{size[1]}"
        out["speed"][key] = {}
        for merge in ("contour", "learned", "contour", "learned"):
            r = time_gpu(lambda img=img, merge=merge: segment_contours(img, merge=merge, device=be), warmup=3,
                         repeat=a.repeat)
            seg = segment_contours(img, merge=merge, device=be)
            d = out["speed"][key].setdefault(merge, {"median_ms": [], "min_ms": []})
            d["median_ms"].append(r["median"] * 1e3)
            d["min_ms"].append(r["min"] * 1e3)
            d.update(segments=int(seg.n_regions), rounds=int(seg.info["merge_rounds"]),
                     stage_ms={k: round(v * 1e3, 3) for k, v in seg.timings.items()})
            print(key, merge, f"median {r['median'] * 1e3:.2f} ms min {r['min'] * 1e3:.2f} ms",
                  seg.n_regions, "segments", seg.info["merge_rounds"], "rounds", d["stage_ms"], flush=True)
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import learned as LM

    out["phases"] = {}
    for size in ((512, 512), (1920, 1080)):
        img = cv2.resize(base, size, interpolation=cv2.INTER_LINEAR)
        col = C.stage_colour(img, device=be)
        sp = C.stage_superpixels(col, device=be)
        prof = be.xp.zeros(12, dtype=be.xp.int64)
        h, w = img.shape[:2]
        into, state = LM.merge_device(be, sp["comps"], sp["R"], h, w, col["gq"], col["q"], 0, 0.39,
                                      1 / np.sqrt(h * w), min_area=C.min_region_area(sp["S"]), prof=prof)
        st = be.xp.asnumpy(state).tolist()
        cyc = be.xp.asnumpy(prof).tolist()
        key = f"{size[0]}x{size[1]}"
        out["phases"][key] = {"R": sp["R"], "state": st, "cycles": dict(zip(LM.PHASES, cyc, strict=True))}
        print(key, "R", sp["R"], "count/rounds/walks", st, "Mcycles by phase",
              {k: round(v / 1e6, 3) for k, v in zip(LM.PHASES, cyc, strict=True)}, flush=True)
    if a.no_felz:
        return _write(out, a, t0)
    out["speed"]["felzenszwalb_1080p_cpu_ms"] = felzenszwalb_1080p_ms(base, 3)
    return _write(out, a, t0)


def _write(out: dict, a, t0: float) -> int:
    out["seconds"] = time.time() - t0
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
