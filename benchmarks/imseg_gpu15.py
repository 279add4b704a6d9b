"""Issue 21, session 15: the learned merge's grid kernel with a one-block tail (``lm_merge_tail``: the last rounds,
from ``K`` regions left, in one block with the hot state in shared memory) against the committed kernel, in one
process (helper imseg-gpu3; rule: ``benchmarks/results/imseg_gpu_session15.md``).

Configurations (``--configs``, comma-separated ``name:source:K:threads[:global]``): the source in
gpu_kernels/cuda, the tail's region count K (0: the grid kernel does every round, as session 14), the tail's
threads a block and its ``TAIL_GLOBAL`` bits. The tail was rejected (see the results file): K > 0 needs its patch,
``git apply benchmarks/results/imseg_gpu_session15_tail.patch``; with K = 0 the script times the committed kernel.

1. labels: ``segment_contours(merge="learned")`` of every configuration against the CPU path, on the images of
   ``--images`` (the first ``--limit``; coarseness mode, and ``--n-segments`` on the first ``--nseg-limit``) and
   synthetic scenes of seeds ``--seeds`` (both modes);
2. speed: the contours method end to end (labels and features, from the host image; CUDA events, medians of
   ``--repeat``), the contour merge and every configuration alternated twice, on the harness image (the first
   image, INTER_LINEAR) at 512x512 and 1920x1080 and on the benchmark of record's images (benchmarks/imseg.py
   ``natural_image``: astronaut 512x512, coffee 1920x1080); felzenszwalb(500, 0.8, 200) on the CPU at 1080p;
3. the merge alone (``learned.merge_device``) of every configuration on the same four images, medians of
   ``--repeat`` alternated twice, with the rounds, and the phase times (``prof``) of the head and the tail.

    python benchmarks/imseg_gpu15.py --images DIR --configs s14:imseg_learned_s14.cu:0:512,t330:imseg_learned.cu:330:512
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


def parse_configs(text: str) -> dict:
    out = {}
    for item in (s.strip() for s in text.split(",")):
        if item:
            name, src, k, tt, *g = item.split(":")
            out[name] = (src, int(k), int(tt), int(g[0]) if g else 0)
    return out


#: the checkpoints of lm_merge_grid_body's profiling build (prof[16 + k], cycles from the block's release at the
#: phase's opening barrier, summed over the rounds; the tail's at prof[80 + k])
CHECKPOINTS = ("B: loop top", "B: f23", "B: kept pairs", "B: new pair done", "", "B: arrival", "C: buffers emptied",
               "C: new pair walked", "C: kept pairs", "C: arrival", "D: renamed", "D: merged", "", "D: arrival",
               "D: merge count read")


def main(argv=None) -> int:
    import cv2
    from _common import device_name, felzenszwalb_1080p_ms, time_gpu
    from imseg import natural_image
    from imseg_int12_gpu import synthetic

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import learned as LM
    from gpu_kernels.imseg.contours import segment_contours

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--n-segments", type=int, default=20)
    ap.add_argument("--nseg-limit", type=int, default=3)
    ap.add_argument("--seeds", default="1541,1542")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--configs", required=True)
    ap.add_argument("--label-configs", default="", help="configurations whose labels are checked (default: all)")
    ap.add_argument("--skip-labels", action="store_true")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-merge", action="store_true")
    ap.add_argument("--no-felz", action="store_true")
    ap.add_argument("--checkpoints", action="store_true", help="also the checkpoint builds' per-round profile of the "
                    "head (grid) and the tail of every configuration")
    ap.add_argument("--cases", default="", help="comma-separated indices of the speed cases (default: all four)")
    ap.add_argument("--felz-reps", type=int, default=2)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    be = get_backend("cuda:0")
    cfgs = parse_configs(a.configs)
    knobs = ("_SRC", "GRID_TAIL_REGIONS", "TAIL_THREADS", "TAIL_GLOBAL")   # (the tail's: with its patch applied)
    saved = tuple(getattr(LM, n, 0) for n in knobs)
    out = {"device": device_name(), "configs": {k: list(v) for k, v in cfgs.items()}, "labels": [], "speed": {},
           "merge": {}}
    t0 = time.time()

    def use(name):
        for n, v in zip(knobs, cfgs[name], strict=True):
            setattr(LM, n, v)

    def restore():
        for n, v in zip(knobs, saved, strict=True):
            setattr(LM, n, v)

    def run(img, name, **kw):
        use(name)
        try:
            return segment_contours(img, merge="learned", device=be, **kw)
        finally:
            restore()

    paths = sorted(Path(a.images).glob("*.jpg"))[:a.limit]
    imgs = [(p.stem, cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)) for p in paths]
    for sd in [int(x) for x in a.seeds.split(",") if x.strip()]:
        imgs.append((f"synthetic-{sd}", synthetic(300, 420, seed=sd)))
    lab_cfgs = [s for s in a.label_configs.split(",") if s.strip()] or list(cfgs)
    if not a.skip_labels:
        for i, (name, img) in enumerate(imgs):
            settings = [{}] + ([{"n_segments": a.n_segments}] if i < a.nseg_limit or name.startswith("syn") else [])
            for kw in settings:
                c = segment_contours(img, merge="learned", device="cpu", **kw)
                for k in lab_cfgs:
                    g = run(img, k, **kw)
                    row = {"image": name, **kw, "config": k, "same": bool(np.array_equal(g.labels, c.labels)),
                           "count_gpu": int(g.n_regions), "count_ref": int(c.n_regions),
                           "rounds_gpu": int(g.info["merge_rounds"]), "rounds_ref": int(c.info["merge_rounds"])}
                    out["labels"].append(row)
                    print(row, flush=True)
        out["labels_differ"] = {k: sum(not r["same"] for r in out["labels"] if r["config"] == k) for k in lab_cfgs}
        out["labels_checked"] = {k: sum(r["config"] == k for r in out["labels"]) for k in lab_cfgs}
        print(f"labels differ: {out['labels_differ']} of {out['labels_checked']} ({time.time() - t0:.1f} s)",
              flush=True)
    base = imgs[0][1]
    cases = (("harness 512x512", cv2.resize(base, (512, 512), interpolation=cv2.INTER_LINEAR)),
             ("harness 1920x1080", cv2.resize(base, (1920, 1080), interpolation=cv2.INTER_LINEAR)),
             ("astronaut 512x512", natural_image(512, 512)), ("coffee 1920x1080", natural_image(1080, 1920)))
    if a.cases:
        cases = tuple(cases[int(i)] for i in a.cases.split(","))
    for key, img in () if a.no_speed else cases:
        out["speed"][key] = {}
        for _ in range(2):
            for name in ("contour", *cfgs):
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
    for key, img in () if a.no_merge else cases:
        col = C.stage_colour(img, device=be)
        sp = C.stage_superpixels(col, device=be)
        h, w = img.shape[:2]
        args = (be, sp["comps"], sp["R"], h, w, col["gq"], col["q"], 0, LM.default_tau(), 1 / np.sqrt(h * w))
        kw = dict(min_area=C.min_region_area(sp["S"]))
        res = {"R": int(sp["R"])}
        for _ in range(2):
            for name in cfgs:
                use(name)
                r = time_gpu(lambda args=args, kw=kw: LM.merge_device(*args, kernel="grid", **kw), warmup=2,
                             repeat=a.repeat)
                restore()
                res.setdefault(f"{name}_ms", []).append(r["median"] * 1e3)
        for name in cfgs:
            use(name)
            prof = be.xp.zeros(64, dtype=be.xp.int64)
            _, state = LM.merge_device(*args, kernel="grid", prof=prof, **kw)
            restore()
            pv = be.xp.asnumpy(prof).tolist()
            res[f"{name}_prof"] = {"state": be.xp.asnumpy(state).tolist(),
                                   "phase_ns": dict(zip(LM.GRID_PHASES, pv[:len(LM.GRID_PHASES)], strict=True))}
            if not a.checkpoints:
                continue
            use(name)
            LM.GRID_CHECKPOINTS = True
            prof = be.xp.zeros(128, dtype=be.xp.int64)
            _, state = LM.merge_device(*args, kernel="grid", prof=prof, **kw)
            LM.GRID_CHECKPOINTS = False
            restore()
            pv = be.xp.asnumpy(prof).tolist()
            st = be.xp.asnumpy(state).tolist()
            d = {"state": st}
            for part, o in (("head", 0), ("tail", 64)):
                if pv[o + 49] > 0:
                    ghz = pv[o + 48] / pv[o + 49]
                    d[part] = {"ms": pv[o + 49] / 1e6, "ghz": round(ghz, 3),
                               "us_sum_max": {c: round(pv[o + 16 + k] / ghz / 1e3, 1) for k, c in
                                              enumerate(CHECKPOINTS) if c}}
            res[f"{name}_checkpoints"] = d
        out["merge"][key] = res
        print(key, json.dumps(res), flush=True)
    from gpu_kernels.imseg._util import kernel as _k

    out["attributes"] = {}
    for name, (src, _k_regions, tt, _g) in cfgs.items():
        for kname in (f"lm_merge_grid{LM.GRID_THREADS}", "lm_merge_tail" if tt == 1024 else f"lm_merge_tail{tt}"):
            try:
                fn = _k(be, src, kname, options=LM._OPTS)
                out["attributes"][f"{name}:{kname}"] = {x: int(getattr(fn, x)) for x in (
                    "num_regs", "local_size_bytes", "shared_size_bytes")}
            except Exception as e:  # noqa: BLE001 - a source without the tail kernel
                out["attributes"][f"{name}:{kname}"] = str(e).splitlines()[0][:120]
    print("attributes", out["attributes"], flush=True)
    if not a.no_felz:
        out["speed"]["felzenszwalb_1080p_cpu_ms"] = felzenszwalb_1080p_ms(base, a.felz_reps)
    out["seconds"] = time.time() - t0
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
