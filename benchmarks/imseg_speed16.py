"""imseg-speed5, session 16 (issue 21): a margin for the DEFAULT contour pipeline at 1080p, the same labels. One
process on the device, arms of three switches of gpu_kernels/imseg/contours.py (on top of the shipped
EARLY_GRAPH and SMALL_TABLE), judged by the rule in benchmarks/results/imseg_speed_session16.md (committed before
its run):

  HOT_SMEM      where the regions' arrays do not fit shared memory (1080p): "best" (mode 4: best only) or
                "best_into" (mode 3: best and into) there; None: every array in global memory (mode 0)
  HOT_SMALL_LOG the small table beside them / beside global arrays, at most 2^11 slots (0: none there)
  SKIP_RENAME   the renaming skip: a pair of two regions untouched by the round's merges is copied as it is
                to a second set of pair arrays (no hash, no read-back)

1. equality: every arm against the base arm (all three off: the code before session 16) on the 20 BSDS images
   (BSDS_DIR/*.jpg), astronaut 512^2 and coffee 1080p, each image twice per arm (the second call replays the
   CUDA graph where the shape allows): labels, superpixel components, counts, rounds, every feature array.
2. speed: end to end (labels + features, from the host image; segment_contours with its defaults), ROUNDS
   rounds, each running every arm once in a rotating order, perf_counter around the call with a device
   synchronize before and after; medians, best, p90, and the medians of the stage timings.
3. ct_merge alone (the pixel pass + merge's GPU time behind a long kernel) and its phases (MERGE_PROFILE) per arm.
4. the rule's decision: writes decision.json and prints 'SHIP <arm>'.

Run from the repo root on the device: python benchmarks/imseg_speed16.py OUT_DIR BSDS_DIR [ROUNDS]
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

#: arm -> (HOT_SMEM, HOT_SMALL_LOG, SKIP_RENAME)
ARMS = {"base": (None, 0, False), "S": (None, 11, False), "B": ("best", 0, False), "BI": ("best_into", 0, False),
        "P": (None, 0, True), "SP": (None, 11, True), "BP": ("best", 0, True), "BIP": ("best_into", 0, True),
        "BSP": ("best", 11, True)}
#: the rule (benchmarks/results/imseg_speed_session16.md): new <= FAST x base at 1080p, <= SAME x base at 512^2
FAST, SAME = 0.95, 1.01


def set_arm(arm: str) -> None:
    C.HOT_SMEM, C.HOT_SMALL_LOG, C.SKIP_RENAME = ARMS[arm]


same = same_segmentation


def decide(speed: dict, bad: dict) -> dict:
    """The pre-registered rule: an arm passes if equal on every call, its 1080p median <= FAST x base's and its
    512^2 median <= SAME x base's; of the passing arms the one with the lowest 1080p median ships (none: base)."""
    b5, b10 = speed["512x512"]["base"]["median"], speed["1080x1920"]["base"]["median"]
    ratios = {arm: {"r512": speed["512x512"][arm]["median"] / b5, "r1080": speed["1080x1920"][arm]["median"] / b10,
                    "equal": not bad[arm]} for arm in ARMS if arm != "base"}
    passing = [a for a, r in ratios.items() if r["equal"] and r["r1080"] <= FAST and r["r512"] <= SAME]
    ship = min(passing, key=lambda a: speed["1080x1920"][a]["median"]) if passing else "base"
    hot, log, skip = ARMS[ship]
    return {"ship": ship, "passing": passing, "ratios": ratios, "HOT_SMEM": hot, "HOT_SMALL_LOG": log,
            "SKIP_RENAME": skip}


def main():
    import cupy as cp

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    bsds = sorted(glob.glob(str(Path(sys.argv[2]) / "*.jpg")))
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    import cv2

    res = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rounds": rounds, "arms": ARMS}
    # 1. equality
    images = [(Path(p).stem, cv2.cvtColor(cv2.imread(p), cv2.COLOR_BGR2RGB)) for p in bsds]
    images += [("astronaut512", natural_image(512, 512)), ("coffee1080p", natural_image(1080, 1920))]
    eq = {arm: 0 for arm in ARMS}
    bad = {arm: [] for arm in ARMS}
    smem_seen = {arm: {} for arm in ARMS}
    for name, img in images:
        ref = None
        for arm in ARMS:
            set_arm(arm)
            for rep in range(2):
                s = C.segment_contours(img, device="cuda")
                m = str(s.info.get("merge_in_shared_memory"))
                smem_seen[arm][m] = smem_seen[arm].get(m, 0) + 1
                if ref is None:
                    ref = s
                    continue
                if same(s, ref):
                    eq[arm] += 1
                else:
                    bad[arm].append(f"{name}#{rep}")
    res["equality"] = {"calls_equal_base": eq, "differ": bad, "layouts": smem_seen,
                       "calls_compared": {a: (1 if a == "base" else 2) * len(images) for a in ARMS}}
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
    # 4. the decision (before the diagnostics, so a cut-off call still has it)
    res["decision"] = decide(speed, bad)
    (out / "decision.json").write_text(json.dumps(res, indent=1))
    print(f"SHIP {res['decision']['ship']} ({json.dumps(res['decision'])})", flush=True)
    # 3. ct_merge alone and its phases
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
        for arm in ARMS:
            set_arm(arm)
            for prof in (False, True):
                C.MERGE_PROFILE = prof
                ms = []
                for _ in range(11):
                    for _ in range(4):
                        busy = cp.sin(busy)
                    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
                    e0.record()
                    into, state = C.graph_merge_device(be, sp["comps"], R, h, w, col["gq"], col["q"], 0, thr,
                                                       1.0 / np.sqrt(h * w), min_area=min_area)
                    e1.record()
                    e1.synchronize()
                    ms.append(cp.cuda.get_elapsed_time(e0, e1))
                stv = cp.asnumpy(state)
                row = {"graph_and_merge_ms_median": float(np.median(ms)), "rounds": int(stv[1]), "R": R,
                       "mode": C.merge_smem_mode(be, R, 3 * R + 16)}
                if prof:
                    ph = stv[4:14].view(np.int64)[:5].astype(np.float64)  # the last run's
                    row["phase_us"] = dict(zip(("setup", "costs", "mutual_merge", "rename", "readback"),
                                               (ph / clock_khz * 1e3).round(1).tolist(), strict=True))
                kern[f"{h}x{w} {arm} prof={prof}"] = row
                print(f"{h}x{w} {arm} prof={prof}: {row}", flush=True)
        C.MERGE_PROFILE = False
    res["ct_merge"] = kern
    (out / "decision.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
