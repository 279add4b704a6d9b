"""Issue 21, session 13: the learned merge's grid-wide kernel (``lm_merge_grid``) against session 12's
one-block kernel (``lm_merge``) and the contour merge, in one process.

1. labels: ``segment_contours(merge="learned")`` on the GPU (the grid kernel) and on the CPU for every
   image of ``--images`` (coarseness mode; ``--n-segments`` on the first ``--nseg-limit``) and two
   synthetic scenes: how many differ; the block kernel on the first images as well;
2. speed: the contours method end to end (labels and features) at 512x512 and 1920x1080 (the first
   image resized), CUDA events, medians of ``--repeat``: contour merge, learned merge with the block
   kernel, learned merge with the grid kernel (512 threads a block), alternating twice; felzenszwalb(500, 0.8, 200) on the
   CPU at 1080p;
3. the grid kernel alone at each size: its time with several block counts (``--blocks``) and its
   phases (block 0's clock cycles).

    python benchmarks/imseg_gpu13.py --images DIR --out results.json
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


def main(argv=None) -> int:
    import cv2
    from _common import device_name, felzenszwalb_1080p_ms, time_gpu
    from imseg_int12_gpu import synthetic

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import learned as LM
    from gpu_kernels.imseg.contours import segment_contours

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--n-segments", type=int, default=20)
    ap.add_argument("--nseg-limit", type=int, default=4)
    ap.add_argument("--block-limit", type=int, default=3, help="the block kernel's labels on the first N images")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--blocks", default="0", help="block counts of the grid kernel (0: all it may have)")
    ap.add_argument("--skip-labels", action="store_true")
    ap.add_argument("--reference", choices=("cpu", "block"), default="cpu",
                    help="the labels the grid kernel's are compared with: the CPU path's, or (no numba compile: a "
                         "quick check) session 12's block kernel's, itself equal to the CPU's on these images")
    ap.add_argument("--no-sweep", action="store_true", help="skip the grid kernel's block-count sweep and phases")
    ap.add_argument("--alt-src", default="", help="another version of imseg_learned.cu in gpu_kernels/cuda (its "
                    "name): its grid kernel's labels and speed beside the committed one's, in this process")
    ap.add_argument("--no-felz", action="store_true")
    ap.add_argument("--no-speed", action="store_true", help="labels only")
    ap.add_argument("--felz-reps", type=int, default=2)
    ap.add_argument("--no-block-speed", action="store_true", help="leave session 12's kernel out of the timings")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    be = get_backend("cuda:0")
    out = {"device": device_name(), "reference": a.reference, "alt_src": a.alt_src, "labels": [], "speed": {},
           "grid": {}}
    t0 = time.time()
    src0 = LM._SRC
    paths = sorted(Path(a.images).glob("*.jpg"))
    imgs = [(p.stem, cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)) for p in paths]
    imgs.append(("synthetic", synthetic()))
    imgs.append(("synthetic-1301", synthetic(300, 420, seed=1301)))
    if not a.skip_labels:
        for i, (name, img) in enumerate(imgs):
            settings = [{}] + ([{"n_segments": a.n_segments}] if i < a.nseg_limit or name.startswith("syn") else [])
            for kw in settings:
                if a.reference == "cpu":
                    c = segment_contours(img, merge="learned", device="cpu", **kw)
                    kernels = ("grid", "grid1024", "block") if i < a.block_limit or name.startswith("syn") else ("grid",)
                else:
                    LM.DEFAULT_KERNEL = "block"
                    c = segment_contours(img, merge="learned", device=be, **kw)
                    kernels = ("grid", "grid1024") if i < a.block_limit or name.startswith("syn") else ("grid",)
                if a.alt_src:
                    kernels = (*kernels, "grid-alt")
                for k in kernels:
                    LM.DEFAULT_KERNEL = k[:4] if k.startswith("grid") else k
                    LM.GRID_THREADS = 1024 if k == "grid1024" else 512
                    LM._SRC = a.alt_src if k == "grid-alt" else src0
                    g = segment_contours(img, merge="learned", device=be, **kw)
                    LM._SRC = src0
                    row = {"image": name, **kw, "kernel": k, "same": bool(np.array_equal(g.labels, c.labels)),
                           "count_gpu": int(g.n_regions), "count_cpu": int(c.n_regions),
                           "rounds_gpu": int(g.info["merge_rounds"]), "rounds_cpu": int(c.info["merge_rounds"]),
                           "pixels_differ": int((g.labels != c.labels).sum())}
                    out["labels"].append(row)
                    print(row, flush=True)
        LM.DEFAULT_KERNEL = "grid"
        LM.GRID_THREADS = 512
        out["labels_differ"] = sum(not r["same"] for r in out["labels"])
        print(f"labels differ: {out['labels_differ']} of {len(out['labels'])} ({time.time() - t0:.1f} s)", flush=True)
    base = imgs[0][1]
    variants = (("contour", "grid"), ("learned", "block"), ("learned", "grid"))
    if a.no_block_speed:
        variants = tuple(v for v in variants if v[1] != "block")
    if a.alt_src:
        variants = (*variants, ("learned", "grid-alt"))
    for size in () if a.no_speed else ((512, 512), (1920, 1080)):
        img = cv2.resize(base, size, interpolation=cv2.INTER_LINEAR)
        key = f"{size[0]}x{size[1]}"
        out["speed"][key] = {}
        for _ in range(2):
            for merge, k in variants:
                LM.DEFAULT_KERNEL = k[:4] if k.startswith("grid") else k
                LM._SRC = a.alt_src if k == "grid-alt" else src0
                name = merge if merge == "contour" else f"learned-{k}"
                r = time_gpu(lambda img=img, merge=merge: segment_contours(img, merge=merge, device=be), warmup=3,
                             repeat=a.repeat)
                seg = segment_contours(img, merge=merge, device=be)
                d = out["speed"][key].setdefault(name, {"median_ms": [], "min_ms": []})
                d["median_ms"].append(r["median"] * 1e3)
                d["min_ms"].append(r["min"] * 1e3)
                d.update(segments=int(seg.n_regions), rounds=int(seg.info["merge_rounds"]),
                         stage_ms={s: round(v * 1e3, 3) for s, v in seg.timings.items()})
                print(key, name, f"median {r['median'] * 1e3:.2f} ms min {r['min'] * 1e3:.2f} ms", seg.n_regions,
                      "segments", seg.info["merge_rounds"], "rounds", d["stage_ms"], flush=True)
        LM.DEFAULT_KERNEL = "grid"
        LM._SRC = src0
    for size in () if a.no_sweep else ((512, 512), (1920, 1080)):
        img = cv2.resize(base, size, interpolation=cv2.INTER_LINEAR)
        key = f"{size[0]}x{size[1]}"
        col = C.stage_colour(img, device=be)
        sp = C.stage_superpixels(col, device=be)
        h, w = img.shape[:2]
        args = (be, sp["comps"], sp["R"], h, w, col["gq"], col["q"], 0, 0.39, 1 / np.sqrt(h * w))
        kw = dict(min_area=C.min_region_area(sp["S"]))
        res = {"R": int(sp["R"])}
        for k in ("block", "grid"):
            r = time_gpu(lambda k=k, args=args, kw=kw: LM.merge_device(*args, kernel=k, **kw), warmup=2,
                         repeat=a.repeat)
            res[f"{k}_ms"] = r["median"] * 1e3
        for th in (512, 1024):
            LM.GRID_THREADS = th
            for nb in [int(x) for x in a.blocks.split(",") if x.strip()]:
                LM.GRID_BLOCKS = nb or None
                r = time_gpu(lambda args=args, kw=kw: LM.merge_device(*args, kernel="grid", **kw), warmup=2,
                             repeat=a.repeat)
                res[f"grid_t{th}_blocks{nb}_ms"] = r["median"] * 1e3
            LM.GRID_BLOCKS = None
            prof = be.xp.zeros(16, dtype=be.xp.int64)
            into, state = LM.merge_device(*args, kernel="grid", prof=prof, **kw)
            st = be.xp.asnumpy(state).tolist()
            ns = be.xp.asnumpy(prof).tolist()[:len(LM.GRID_PHASES)]
            res[f"t{th}"] = {"state": st, "phase_ns": dict(zip(LM.GRID_PHASES, ns, strict=True))}
        LM.GRID_THREADS = 512
        out["grid"][key] = res
        print(key, json.dumps(res), flush=True)
    from gpu_kernels.imseg._util import kernel as _k

    for name in () if a.no_sweep else ("lm_merge_grid", "lm_merge_grid512", "lm_merge"):
        fn = _k(be, LM._SRC, name, options=LM._OPTS)
        out.setdefault("attributes", {})[name] = {x: int(getattr(fn, x)) for x in (
            "num_regs", "local_size_bytes", "shared_size_bytes", "max_threads_per_block")}
    print("attributes", out.get("attributes"), flush=True)
    if not a.no_felz:
        out["speed"]["felzenszwalb_1080p_cpu_ms"] = felzenszwalb_1080p_ms(base, a.felz_reps)
    out["seconds"] = time.time() - t0
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
