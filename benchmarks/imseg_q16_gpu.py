"""Issue 21, session 16 (helper imseg-q7): the hybrid merge (``merge="hybrid"``: the contour merge to
``hybrid.HYBRID_REGIONS`` regions, then the learned merge refit on such starts) judged on the H100 in ONE process
(rule: ``benchmarks/results/imseg_q7_session16.md``; the lead's judge ``lead_session15_judge_imseg.md``).

1. labels: ``segment_contours(merge="hybrid")`` on the GPU against the CPU path (the CPU references computed first,
   in a fork pool, before CUDA starts), on the BSDS images of ``--images`` in the coarseness mode and with
   ``n_segments`` 20, and synthetic scenes ``--seeds`` in both modes;
2. speed: end to end (labels and features from the host image; CUDA events, medians of ``--repeat``) of the
   contour merge (the default today), the hybrid and the learned merge, alternated twice, on the harness image
   (the first image, INTER_LINEAR) at 512x512 and 1920x1080 and on astronaut 512x512 / coffee 1920x1080
   (``imseg.natural_image``); descriptive: the hybrid with other region counts (``--also``, the same model);
3. felzenszwalb(500, 0.8, 200) on the CPU at 1080p; the judge's verdict printed last.

    python benchmarks/imseg_q16_gpu.py --images ../shared/data/bsds500/images --out OUT.json
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

LIMITS = {"harness 512x512": 3.0, "harness 1920x1080": 10.0, "astronaut 512x512": 3.0, "coffee 1920x1080": 10.0}
_IMGS: list = []


def _cpu_job(args):
    i, kw = args
    from gpu_kernels.imseg.contours import segment_contours

    s = segment_contours(_IMGS[i][1], merge="hybrid", device="cpu", features=False, **kw)
    return s.labels, int(s.n_regions), int(s.info["merge_rounds"])


def main(argv=None) -> int:
    import multiprocessing as mp

    import cv2

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", required=True)
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--n-segments", type=int, default=20)
    ap.add_argument("--seeds", default="1651,1652")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--also", default="", help="descriptive: other HYBRID_REGIONS values timed beside")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--felz-reps", type=int, default=2)
    ap.add_argument("--skip-labels", action="store_true")
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    from imseg_int12_gpu import synthetic

    global _IMGS
    t0 = time.time()
    paths = sorted(Path(a.images).glob("*.jpg"))[:a.limit]
    _IMGS = [(p.stem, cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)) for p in paths]
    for sd in [int(x) for x in a.seeds.split(",") if x.strip()]:
        _IMGS.append((f"synthetic-{sd}", synthetic(300, 420, seed=sd)))
    jobs = [(i, kw) for i in range(len(_IMGS)) for kw in ({}, {"n_segments": a.n_segments})]
    out = {"labels": [], "speed": {}}
    if not a.skip_labels:
        from gpu_kernels.imseg.contours import segment_contours

        segment_contours(_IMGS[-1][1][:60, :80], merge="hybrid", device="cpu")   # numba compiles here, once
        with mp.get_context("fork").Pool(a.workers) as pool:   # before CUDA starts in this process
            refs = pool.map(_cpu_job, jobs, chunksize=1)
        print(f"CPU references ({time.time() - t0:.1f} s)", flush=True)

    from _common import device_name, felzenszwalb_1080p_ms, time_gpu
    from imseg import natural_image

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import hybrid as HY
    from gpu_kernels.imseg.contours import segment_contours

    be = get_backend("cuda:0")
    out.update(device=device_name(), hybrid_regions=HY.HYBRID_REGIONS)
    if not a.skip_labels:
        for (i, kw), (lab, cnt, rounds) in zip(jobs, refs, strict=True):
            g = segment_contours(_IMGS[i][1], merge="hybrid", device=be, **kw)
            row = {"image": _IMGS[i][0], **kw, "same": bool(np.array_equal(g.labels, lab)),
                   "count_gpu": int(g.n_regions), "count_cpu": cnt, "rounds_gpu": int(g.info["merge_rounds"]),
                   "rounds_cpu": rounds}
            out["labels"].append(row)
            if not row["same"]:
                print("DIFFER", row, flush=True)
        out["labels_differ"] = sum(not r["same"] for r in out["labels"])
        out["labels_checked"] = len(out["labels"])
        print(f"labels differ: {out['labels_differ']} of {out['labels_checked']} ({time.time() - t0:.1f} s)",
              flush=True)
    base = _IMGS[0][1]
    cases = (("harness 512x512", cv2.resize(base, (512, 512), interpolation=cv2.INTER_LINEAR)),
             ("harness 1920x1080", cv2.resize(base, (1920, 1080), interpolation=cv2.INTER_LINEAR)),
             ("astronaut 512x512", natural_image(512, 512)), ("coffee 1920x1080", natural_image(1080, 1920)))
    also = [int(x) for x in a.also.split(",") if x.strip()]
    names = ["contour", "hybrid", "learned"] + [f"hybrid-M{m}" for m in also]
    M0 = HY.HYBRID_REGIONS
    for key, img in cases:
        out["speed"][key] = {}
        for _ in range(2):
            for name in names:
                merge = name.split("-")[0]
                HY.HYBRID_REGIONS = int(name.split("-M")[1]) if "-M" in name else M0

                def fn(img=img, merge=merge):
                    return segment_contours(img, merge=merge, device=be)
                r = time_gpu(fn, warmup=3, repeat=a.repeat)
                seg = fn()
                HY.HYBRID_REGIONS = M0
                d = out["speed"][key].setdefault(name, {"median_ms": [], "min_ms": []})
                d["median_ms"].append(r["median"] * 1e3)
                d["min_ms"].append(r["min"] * 1e3)
                d.update(segments=int(seg.n_regions), rounds=int(seg.info["merge_rounds"]),
                         stage_ms={s: round(v * 1e3, 3) for s, v in seg.timings.items()})
                print(key, name, f"median {r['median'] * 1e3:.3f} ms min {r['min'] * 1e3:.3f} ms", seg.n_regions,
                      "segments", seg.info["merge_rounds"], "rounds", d["stage_ms"], flush=True)
    felz = felzenszwalb_1080p_ms(base, a.felz_reps)
    out["felzenszwalb_1080p_cpu_ms"] = felz
    sp = out["speed"]
    verdict = {key: max(sp[key]["hybrid"]["median_ms"]) <= lim for key, lim in LIMITS.items()}
    verdict["felzenszwalb >= 100x"] = felz / max(sp["harness 1920x1080"]["hybrid"]["median_ms"]) >= 100.0
    verdict["faster than learned (all four, both alternations)"] = all(
        max(sp[k]["hybrid"]["median_ms"]) < min(sp[k]["learned"]["median_ms"]) for k in LIMITS)
    out["verdict_speed"] = verdict
    out["speed_passes"] = all(v for k, v in verdict.items() if not k.startswith("faster"))
    out["seconds"] = time.time() - t0
    print("verdict", json.dumps(verdict), "speed passes:", out["speed_passes"],
          "labels differ:", out.get("labels_differ"), flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
