"""Issue 21, session 14: candidate versions of the learned merge's grid kernel (``lm_merge_grid``) against the
committed one, in one process (helper imseg-gpu2; rule: ``benchmarks/results/imseg_gpu_session14.md``).

1. labels: ``segment_contours(merge="learned")`` with the committed grid kernel and with every candidate
   source (``--alt-src``: files in gpu_kernels/cuda), against the CPU path (``--reference cpu``) or session
   12's block kernel (``--reference block``, itself = CPU on these images), on the images of ``--images``
   (the first ``--limit``), coarseness mode and ``--n-segments`` on the first ``--nseg-limit``, and synthetic
   scenes of seeds ``--seeds``;
2. speed: the contours method end to end (labels and features) at 512x512 and 1920x1080 (the first image
   resized), CUDA events, medians of ``--repeat``: the contour merge, the learned merge with the committed grid
   kernel and with each candidate, alternating twice; felzenszwalb(500, 0.8, 200) on the CPU at 1080p;
3. the merge alone (``learned.merge_device``) of each source at each size, medians of ``--repeat``, and its
   phase times (``prof``: GRID_PHASES in ns, and, for sources that write them, checkpoints in cycles).

    python benchmarks/imseg_gpu14.py --images DIR --alt-src imseg_learned_s14a.cu --out results.json
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

#: the checkpoints the s14 candidates write (prof[16 + k]: the blocks' max of the per-round sums, cycles from
#: the block's release at the phase's opening barrier; prof[32 + k]: their sum over the blocks)
CHECKPOINTS = ("B: loop top", "B: f23", "B: kept pairs", "B: new pair done", "", "B: arrival", "C: buffers emptied",
               "C: new pair walked", "C: kept pairs", "C: arrival", "D: renamed", "D: merged", "", "D: arrival",
               "D: merge count read")


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
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--n-segments", type=int, default=20)
    ap.add_argument("--nseg-limit", type=int, default=4)
    ap.add_argument("--seeds", default="1441,1442")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--reference", choices=("cpu", "block"), default="cpu")
    ap.add_argument("--alt-src", default="", help="comma-separated candidate sources in gpu_kernels/cuda")
    ap.add_argument("--prof-src", default="", help="comma-separated sources only profiled (checkpoint builds)")
    ap.add_argument("--checkpoints", action="store_true", help="also profile every source's checkpoint build "
                    "(learned.GRID_CHECKPOINTS: -DLG_CHECKPOINTS; sources without checkpoints fill only the phases)")
    ap.add_argument("--skip-labels", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-merge", action="store_true", help="skip the merge-alone timings and phases")
    ap.add_argument("--no-felz", action="store_true")
    ap.add_argument("--felz-reps", type=int, default=2)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    be = get_backend("cuda:0")
    src0 = LM._SRC
    alts = [s for s in a.alt_src.split(",") if s.strip()]
    sources = {"grid": src0, **{f"alt:{s}": s for s in alts}}
    out = {"device": device_name(), "reference": a.reference, "sources": sources, "labels": [], "speed": {},
           "merge": {}}
    t0 = time.time()
    paths = sorted(Path(a.images).glob("*.jpg"))[:a.limit]
    imgs = [(p.stem, cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)) for p in paths]
    for sd in [int(x) for x in a.seeds.split(",") if x.strip()]:
        imgs.append((f"synthetic-{sd}", synthetic(300, 420, seed=sd)))

    def run(img, name, **kw):
        LM.DEFAULT_KERNEL = "block" if name == "block" else "grid"
        LM._SRC = sources.get(name, src0)
        try:
            return segment_contours(img, merge="learned", device=be, **kw)
        finally:
            LM._SRC = src0
            LM.DEFAULT_KERNEL = "grid"

    if not a.skip_labels:
        for i, (name, img) in enumerate(imgs):
            settings = [{}] + ([{"n_segments": a.n_segments}] if i < a.nseg_limit or name.startswith("syn") else [])
            for kw in settings:
                c = segment_contours(img, merge="learned", device="cpu", **kw) if a.reference == "cpu" else \
                    run(img, "block", **kw)
                for k in sources:
                    g = run(img, k, **kw)
                    row = {"image": name, **kw, "kernel": k, "same": bool(np.array_equal(g.labels, c.labels)),
                           "count_gpu": int(g.n_regions), "count_ref": int(c.n_regions),
                           "rounds_gpu": int(g.info["merge_rounds"]), "rounds_ref": int(c.info["merge_rounds"])}
                    out["labels"].append(row)
                    print(row, flush=True)
        out["labels_differ"] = {k: sum(not r["same"] for r in out["labels"] if r["kernel"] == k) for k in sources}
        print(f"labels differ: {out['labels_differ']} of {len(out['labels']) // len(sources)} each "
              f"({time.time() - t0:.1f} s)", flush=True)
    base = imgs[0][1]
    sizes = ((512, 512), (1920, 1080))
    for size in () if a.no_speed else sizes:
        img = cv2.resize(base, size, interpolation=cv2.INTER_LINEAR)
        key = f"{size[0]}x{size[1]}"
        out["speed"][key] = {}
        for _ in range(2):
            for name in ("contour", *sources):
                if name == "contour":
                    def fn(img=img):
                        return segment_contours(img, merge="contour", device=be)
                else:
                    def fn(img=img, name=name):
                        return run(img, name)
                r = time_gpu(fn, warmup=3, repeat=a.repeat)
                seg = fn()
                d = out["speed"][key].setdefault(name, {"median_ms": [], "min_ms": []})
                d["median_ms"].append(r["median"] * 1e3)
                d["min_ms"].append(r["min"] * 1e3)
                d.update(segments=int(seg.n_regions), rounds=int(seg.info["merge_rounds"]),
                         stage_ms={s: round(v * 1e3, 3) for s, v in seg.timings.items()})
                print(key, name, f"median {r['median'] * 1e3:.2f} ms min {r['min'] * 1e3:.2f} ms", seg.n_regions,
                      "segments", seg.info["merge_rounds"], "rounds", d["stage_ms"], flush=True)
    for size in () if a.no_merge else sizes:
        img = cv2.resize(base, size, interpolation=cv2.INTER_LINEAR)
        key = f"{size[0]}x{size[1]}"
        col = C.stage_colour(img, device=be)
        sp = C.stage_superpixels(col, device=be)
        h, w = img.shape[:2]
        args = (be, sp["comps"], sp["R"], h, w, col["gq"], col["q"], 0, LM.default_tau(), 1 / np.sqrt(h * w))
        kw = dict(min_area=C.min_region_area(sp["S"]))
        res = {"R": int(sp["R"])}
        for _ in range(2):
            for name, src in sources.items():
                LM._SRC = src
                r = time_gpu(lambda args=args, kw=kw: LM.merge_device(*args, kernel="grid", **kw), warmup=2,
                             repeat=a.repeat)
                res.setdefault(f"{name}_ms", []).append(r["median"] * 1e3)
                LM._SRC = src0
        profiled = {**sources, **{f"prof:{s}": s for s in a.prof_src.split(",") if s.strip()}}
        if a.checkpoints:
            profiled.update({f"checkpoints:{n}": s for n, s in sources.items()})
        for name, src in profiled.items():
            LM._SRC = src
            LM.GRID_CHECKPOINTS = name.startswith("checkpoints:")
            prof = be.xp.zeros(64, dtype=be.xp.int64)
            _, state = LM.merge_device(*args, kernel="grid", prof=prof, **kw)
            LM._SRC = src0
            LM.GRID_CHECKPOINTS = False
            st = be.xp.asnumpy(state).tolist()
            pv = be.xp.asnumpy(prof).tolist()
            d = {"state": st, "phase_ns": dict(zip(LM.GRID_PHASES, pv[:len(LM.GRID_PHASES)], strict=True))}
            if pv[49] > 0:
                ghz = pv[48] / pv[49]
                rounds = max(1, st[1])
                d["clock_ghz"] = ghz
                d["checkpoint_ns_per_round_max"] = {c: round(pv[16 + k] / ghz / rounds, 1)
                                                    for k, c in enumerate(CHECKPOINTS) if c}
                d["checkpoint_ns_per_round_mean"] = {c: round(pv[32 + k] / ghz / rounds / 132, 1)
                                                     for k, c in enumerate(CHECKPOINTS) if c}
            res[f"{name}_prof"] = d
        out["merge"][key] = res
        print(key, json.dumps(res), flush=True)
    from gpu_kernels.imseg._util import kernel as _k

    for name, src in sources.items():
        fn = _k(be, src, f"lm_merge_grid{LM.GRID_THREADS}", options=LM._OPTS)
        out.setdefault("attributes", {})[name] = {x: int(getattr(fn, x)) for x in (
            "num_regs", "local_size_bytes", "shared_size_bytes")}
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
