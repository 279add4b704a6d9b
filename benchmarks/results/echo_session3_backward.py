"""Backward trajectories (frames before the reference): a direct estimate of every backward
pair (frames swapped, the old way) against the inverse of the forward pair field (no solve).

Synthetic LV sequences with exact motion (EPE of the trajectory reference -> j < reference,
whole volume and eroded myocardium) and the shared ACDC ED/ES study (reference ES: NCC of ED
warped onto ES, Jacobian folds), CPU, default parameters.

    nice -n 10 .venv/bin/python benchmarks/results/echo_session3_backward.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np
from scipy import ndimage as ndi

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from gpu_kernels.echo import maps  # noqa: E402
from gpu_kernels.echo.motion import estimate_motion  # noqa: E402
from gpu_kernels.echo.synthetic import make_sequence  # noqa: E402


def backward_trajs(frames, pair, ref, how, params):
    """traj[j] for j < ref, composed from backward pair fields (estimated or inverted)."""
    out, cur, secs = {}, None, 0.0
    for j in range(ref - 1, -1, -1):
        t0 = time.perf_counter()
        if how == "estimate":
            back = estimate_motion(frames[j + 1], frames[j], device="cpu", **params)
        else:
            back = maps.invert(pair[j], device="cpu")
        secs += time.perf_counter() - t0
        cur = back if cur is None else maps.compose(cur, back, device="cpu")
        out[j] = np.asarray(cur)
    return out, secs


def synthetic(size, frames, seed, params):
    seq = make_sequence(size, frames=frames, seed=seed, dtype="float32")
    fr = [np.asarray(f, np.float32) for f in seq.frames]
    ref = frames // 2  # end-systole
    pair = [estimate_motion(fr[k], fr[k + 1], device="cpu", **params) for k in range(ref)]
    myo = ndi.binary_erosion(seq.myocardium_mask(ref), iterations=1)
    rows = []
    for how in ("estimate", "invert"):
        tr, secs = backward_trajs(fr, pair, ref, how, params)
        for j, u in tr.items():
            gt = seq.displacement(ref, j)
            e = np.sqrt(((u - gt) ** 2).sum(0))
            rows.append({"case": f"synth{size}-s{seed}", "how": how, "ref": ref, "j": j, "s": round(secs, 3),
                         "epe": round(float(e.mean()), 4), "epe_myo": round(float(e[myo].mean()), 4),
                         "true_mag_myo": round(float(np.sqrt((gt ** 2).sum(0))[myo].mean()), 4)})
    # how close the two are, and the inverse's consistency with the forward field
    rows.append({"case": f"synth{size}-s{seed}", "how": "resid",
                 "compose_u_inv_max": round(float(np.abs(maps.compose(pair[0], maps.invert(pair[0]))).max()), 5)})
    return rows


def acdc(params):
    from app.io.echo_study import read_pair

    d = ROOT.parent / "shared" / "data" / "cardiac-mri" / "acdc"
    study = read_pair(d / "sax_ed.nii.gz", d / "sax_es.nii.gz")
    ed, es = (np.ascontiguousarray(np.asarray(v, np.float32)) for v in study.frames)
    sp = tuple(study.spacing)
    fr = [ed, es]
    pair = [estimate_motion(ed, es, device="cpu", spacing=sp, **params)]
    rows = []
    for how in ("estimate", "invert"):
        t0 = time.perf_counter()
        back = estimate_motion(es, ed, device="cpu", spacing=sp, **params) if how == "estimate" else \
            maps.invert(pair[0], device="cpu")
        secs = time.perf_counter() - t0
        warped = maps.warp_volume(ed, back, device="cpu")
        det = maps.jacobian_determinant(back)
        rows.append({"case": "acdc ES<-ED", "how": how, "s": round(secs, 3),
                     "ncc": round(maps.ncc(warped, es), 4), "ncc_before": round(maps.ncc(ed, es), 4),
                     "folds": int((det <= 0).sum()), "det_p1": round(float(np.percentile(det, 1)), 3),
                     "det_p99": round(float(np.percentile(det, 99)), 3)})
    _ = fr
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--size", type=int, default=40)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--seeds", default="0,1,2")
    args = ap.parse_args()
    params = {}
    rows = []
    for s in (int(x) for x in args.seeds.split(",")):
        rows += synthetic(args.size, args.frames, s, params)
        print(json.dumps(rows[-1]), flush=True)
    try:
        rows += acdc(params)
    except Exception as exc:  # noqa: BLE001
        rows.append({"case": "acdc", "error": repr(exc)})
    for r in rows:
        print(json.dumps(r))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
