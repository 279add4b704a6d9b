"""imseg-speed4, session 15 (issue 21): the DEFAULT contour pipeline's margin at 512^2. One process on the
device, four arms of two switches (contours.EARLY_GRAPH: the region graph's pixel pass queued before the
read-back of R; second round: contours.SMALL_TABLE: ct_merge's small hash table in shared memory), judged by the
rules in benchmarks/results/imseg_speed_session15.md (each committed before its run). Call 1 judged
EARLY_GRAPH and a cost cache (MERGE_CACHE, rejected; its code is benchmarks/results/imseg_speed_session15_cache.patch
and call 1's script is in git history at f3ed795); call 2 judged SMALL_TABLE in every smem mode (87f051d: failed
at 1080p); this version (call 3) judges SMALL_TABLE where the regions' arrays are in shared memory (modes 1, 2).

1. equality: every arm against the base arm (both switches off, the path before session 15) on the 20 BSDS
   images (BSDS_DIR/*.jpg), astronaut 512^2 and coffee 1080p, each image twice (the second call replays the
   CUDA graph where the shape allows): labels, superpixel components, counts, rounds, every feature array.
2. speed: end to end (labels + features, from the host image; segment_contours with its defaults),
   ROUNDS rounds, each running every arm once in a rotating order, perf_counter around the call with a device
   synchronize before and after; medians, best, p90, and the medians of the stage timings.
3. ct_merge alone (its GPU time behind a long kernel, so the host's launches are hidden) and its phases
   (MERGE_PROFILE: thread 0's clock64 per phase), cache off and on, at 512^2 and 1080p.
4. the decision of the rule: writes decision.json and prints 'SHIP early=<bool> small=<bool>'.

Run from the repo root on the device: python benchmarks/imseg_speed15.py OUT_DIR BSDS_DIR [ROUNDS]
"""
from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import rotating_times, same_segmentation  # noqa: E402
from imseg import natural_image  # noqa: E402

from gpu_kernels.imseg import contours as C  # noqa: E402

ARMS = {"base": (False, False), "E": (True, False), "T": (False, True), "ET": (True, True)}


def set_arm(arm: str) -> None:
    C.EARLY_GRAPH, C.SMALL_TABLE = ARMS[arm]


same = same_segmentation


def main():
    import cupy as cp

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    bsds = sorted(glob.glob(str(Path(sys.argv[2]) / "*.jpg")))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    import cv2

    res = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rounds": rounds}
    pre_used = {"used": 0, "fallback": 0}
    real_gmd = C.graph_merge_device

    def spy(be, labels_d, R, *a, pre=None, **k):
        if pre is not None:
            pre_used["used" if R <= pre["rcap"] else "fallback"] += 1
        return real_gmd(be, labels_d, R, *a, pre=pre, **k)

    C.graph_merge_device = spy
    # 1. equality
    images = [(Path(p).stem, cv2.cvtColor(cv2.imread(p), cv2.COLOR_BGR2RGB)) for p in bsds]
    images += [("astronaut512", natural_image(512, 512)), ("coffee1080p", natural_image(1080, 1920))]
    eq = {arm: 0 for arm in ARMS}
    bad = {arm: [] for arm in ARMS}
    for name, img in images:
        ref = None
        for arm in ARMS:
            set_arm(arm)
            for rep in range(2):
                s = C.segment_contours(img, device="cuda")
                if ref is None:
                    ref = s
                    continue
                if same(s, ref):
                    eq[arm] += 1
                else:
                    bad[arm].append(f"{name}#{rep}")
    res["equality"] = {"calls_equal_base": eq, "differ": bad, "calls_compared": {a: (1 if a == "base" else 2) * len(images) for a in ARMS},
                       "early_pass_used": dict(pre_used)}
    print("equality", json.dumps(res["equality"]), flush=True)
    # 2. speed
    speed = {}
    for h, w in ((512, 512), (1080, 1920)):
        img = natural_image(h, w)
        t, st = rotating_times(lambda img=img: C.segment_contours(img, device="cuda"), ARMS, set_arm, rounds,
                               cp.cuda.Device().synchronize)
        key = f"{h}x{w}"
        speed[key] = {}
        for arm in ARMS:
            v = np.array(t[arm])
            stages = {k: round(1e3 * float(np.median([d.get(k, np.nan) for d in st[arm]])), 4) for k in st[arm][0]}
            speed[key][arm] = {"median": float(np.median(v)), "best": float(v.min()),
                               "p90": float(np.percentile(v, 90)), "stages_ms": stages}
            print(f"{key} {arm}: median {np.median(v):.3f} best {v.min():.3f} p90 {np.percentile(v, 90):.3f} "
                  f"stages {stages}", flush=True)
    res["speed"] = speed
    # 3. ct_merge alone and its phases
    C.graph_merge_device = real_gmd
    kern = {}
    clock_khz = cp.cuda.Device().attributes["ClockRate"]
    busy = cp.ones(1 << 26, cp.float32)
    be = C.get_backend("cuda")
    for h, w in ((512, 512), (1080, 1920)):
        img = natural_image(h, w)
        col = C.stage_colour(img, device="cuda")
        sp = C.stage_superpixels(col, device="cuda")
        R = sp["R"]
        thr = C.coarseness_threshold(C.DEFAULT_COARSENESS)
        min_area = C.min_region_area(sp["S"])
        for small in (False, True, "always"):
            for prof in (False, True):
                C.MERGE_PROFILE = prof
                ms = []
                for _ in range(11):
                    for _ in range(4):
                        busy = cp.sin(busy)
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    e0.record()
                    into, state = C.graph_merge_device(be, sp["comps"], R, h, w, col["gq"],
                                                       col["q"], 0, thr, 1.0 / np.sqrt(h * w), min_area=min_area,
                                                       small=small)
                    e1.record()
                    e1.synchronize()
                    ms.append(cp.cuda.get_elapsed_time(e0, e1))
                stv = cp.asnumpy(state)
                row = {"graph_and_merge_ms_median": float(np.median(ms)), "rounds": int(stv[1]), "R": R}
                if prof:
                    ph = stv[4:14].view(np.int64)[:5].astype(np.float64)  # the last run's
                    row["phase_us"] = dict(zip(("setup", "costs", "mutual_merge", "rename", "readback"),
                                               (ph / clock_khz * 1e3).round(1).tolist(), strict=True))
                kern[f"{h}x{w} small={small} prof={prof}"] = row
                print(f"{h}x{w} small={small} prof={prof}: {row}", flush=True)
        C.MERGE_PROFILE = False
    res["ct_merge"] = kern
    # 4. the rule of round 2: E is shipped (call 1); T ships on top if ET is equal, its 512^2 median <= 0.98 x E's
    # and its 1080p median <= 1.01 x E's
    e5, e10 = speed["512x512"]["E"]["median"], speed["1080x1920"]["E"]["median"]
    ok = (not bad["ET"] and speed["512x512"]["ET"]["median"] <= 0.98 * e5
          and speed["1080x1920"]["ET"]["median"] <= 1.01 * e10)
    ship = "ET" if ok else "E"
    res["decision"] = {"ship": ship, "early": True, "small": ok,
                       "ET_over_E_512": speed["512x512"]["ET"]["median"] / e5,
                       "ET_over_E_1080": speed["1080x1920"]["ET"]["median"] / e10}
    (out / "decision.json").write_text(json.dumps(res, indent=1))
    print(f"SHIP early=True small={ok} (arm {ship}; {res['decision']})", flush=True)


if __name__ == "__main__":
    main()
