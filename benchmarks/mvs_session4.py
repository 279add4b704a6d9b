"""MVS whole-call profile (issue 24): where the host time of a whole reconstruction goes on the
GPU, on templeSparseRing: the scene (16 views together, fused) and one view alone, with the
time split of the growing call, the tool's stages (``textures`` included) and a cProfile of
the host's own functions.

Usage (GPU host; ``GPULAB_SHARED_DATA`` holds ``middlebury-mvs/templeSparseRing``)::

    python benchmarks/mvs_session4.py --device cuda --json out.json [--label new] [--profile]

"host share" here is 1 - (time the host waited for the device) / (wall time of the call):
the growing call's own figure (``grow_depth_maps``' stats, as in ``benchmarks/mvs.py queue``),
and for the whole ``reconstruct`` call the same with the fusion and the view selection counted
as host time unless they wait (they are measured with cProfile separately).
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, device_name  # noqa: E402

# MVS4_CODE_ROOT: another copy of the code (``git archive <commit> gpu_kernels app``) to time
# instead of the checkout's, e.g. the commit before a change, in the same call on the same card
if os.environ.get("MVS4_CODE_ROOT"):
    sys.path.insert(0, os.environ["MVS4_CODE_ROOT"])

from app.io.scene_io import read_scene  # noqa: E402
from gpu_kernels.mvs.fusion import consistency_counts  # noqa: E402
from gpu_kernels.mvs.stereo import reconstruct, scene_seeds  # noqa: E402


def log(*a):
    print(*a, flush=True)


def temple_dir() -> Path:
    env = os.environ.get("GPULAB_SHARED_DATA")
    return (Path(env) if env else ROOT / ".." / "shared" / "data") / "middlebury-mvs" / "templeSparseRing"


def _sync():
    try:
        import cupy as cp

        cp.cuda.runtime.deviceSynchronize()
    except Exception:  # noqa: BLE001 - CPU
        pass


def quality(scene, res, device) -> dict:
    counts = consistency_counts(scene.cameras, [m.depth for m in res.maps], views=res.views, device=device)
    conf, inb = [], []
    bb = scene.bbox
    for m, c in zip(res.maps, counts, strict=True):
        conf.append(int((c[c >= 0] >= 1).sum()))
        idx = np.flatnonzero(np.isfinite(m.depth.reshape(-1)))
        v, u = np.divmod(idx, m.depth.shape[1])
        pts = scene.cameras[m.view].backproject(np.stack([u, v], 1).astype(float), m.depth.reshape(-1)[idx])
        inb.append(float(np.all((pts >= bb[0]) & (pts <= bb[1]), axis=1).mean()) if len(pts) else float("nan"))
    out = {"samples_per_view": float(np.mean([m.n_samples for m in res.maps])),
           "confirmed_per_view": float(np.mean(conf)), "view_points_in_bbox": float(np.mean(inb))}
    h = hashlib.sha1()
    for m in res.maps:
        for f in ("depth", "normal", "conf", "iters", "hs", "ht"):
            h.update(np.ascontiguousarray(getattr(m, f)).tobytes())
    out["maps_sha1"] = h.hexdigest()
    if res.fused is not None:
        hf = hashlib.sha1()
        for f in ("points", "normals", "colors", "confidence", "n_views", "source_view"):
            hf.update(np.ascontiguousarray(getattr(res.fused, f)).tobytes())
        out["fused_sha1"] = hf.hexdigest()
        p = res.fused.points
        out["fused_points"] = len(p)
        out["fused_in_bbox"] = float(np.all((p >= bb[0]) & (p <= bb[1]), axis=1).mean())
    return out


def split(res) -> dict:
    st = res.maps[0].stats
    s = res.stats
    keys = ("time_s", "setup_s", "loop_s", "wait_s", "queue_s", "launch_s", "download_s", "batches")
    out = {k: st.get(k) for k in keys}
    for k in ("setup_wait_s", "download_wait_s"):
        if k in st:
            out[k] = st[k]
    t = max(st["time_s"], 1e-9)
    waited = st["wait_s"] + st.get("setup_wait_s", 0.0) + st.get("download_wait_s", 0.0)
    out["grow_host_share"] = 1 - waited / t
    out["grow_host_share_old_def"] = 1 - st["wait_s"] / t
    out["prepare_s"] = s.get("prepare_s")
    out["grow_s"] = s.get("grow_s")
    out["fuse_s"] = s.get("fuse_s")
    out["total_s"] = s.get("total_s")
    out["whole_host_share"] = 1 - waited / max(s["total_s"], 1e-9)
    return out


def one(scene, dev, label, *, repeat, profile, views, **kw) -> dict:
    runs = []
    for _ in range(repeat):
        _sync()
        t = time.perf_counter()
        res = reconstruct(scene, views=views, device=dev, **kw)
        wall = time.perf_counter() - t
        runs.append((wall, res))
    runs.sort(key=lambda x: x[0])
    wall, res = runs[len(runs) // 2]
    same = all(np.array_equal(m.depth, o.maps[i].depth, equal_nan=True) for _, o in runs
               for i, m in enumerate(res.maps))
    sp = split(res)
    n = sum(m.n_samples for m in res.maps)
    row = {"label": label, "views": len(res.maps), "wall_s": wall, "walls": [r[0] for r in runs],
           "s_per_view": res.stats["grow_s"] / len(res.maps), "us_per_sample_grow": 1e6 * res.stats["grow_s"] / n,
           "us_per_sample_whole": 1e6 * wall / n, "deterministic": bool(same), **sp, **quality(scene, res, dev)}
    log(label, json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}))
    if profile:
        pr = cProfile.Profile()
        _sync()
        pr.enable()
        reconstruct(scene, views=views, device=dev, **kw)
        pr.disable()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(28)
        s2 = io.StringIO()
        pstats.Stats(pr, stream=s2).sort_stats("cumulative").print_stats(45)
        row["cprofile_tottime"] = s.getvalue()
        row["cprofile_cumulative"] = s2.getvalue()
        log(f"--- cProfile {label} (tottime)\n" + s.getvalue()[-6000:])
        log(f"--- cProfile {label} (cumulative)\n" + s2.getvalue()[-7000:])
    return row


def stages(scene, dev) -> dict:
    """The tool's stages on the device: a full run, an NCC threshold edit, a views edit."""
    from app.tools import mvs
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    be = get_backend(dev)
    data = mvs.MVSData(scene)
    cache = StageCache(cap_bytes=4 << 30)
    out = {}
    prm = {"views": "all"}
    for label, edit in (("full", {}), ("ncc 0.5", {"ncc_accept": 0.5}), ("views 0-3", {"views": "0,1,2,3"}),
                        ("neighbors 6", {"views": "0,1,2,3", "neighbors": 6})):
        _sync()
        t = time.perf_counter()
        live, rep = mvs.TOOL.run_staged(data, {**prm, **edit}, device=be, cache=cache)
        wall = time.perf_counter() - t
        fresh = mvs.run(data, {**prm, **edit}, device=be)
        same = all(np.array_equal(a.depth, b.depth, equal_nan=True) and np.array_equal(a.conf, b.conf)
                   for a, b in zip(live.result.maps, fresh.result.maps, strict=True))
        out[label] = {"wall_s": wall, "ran": rep.ran, "reused": rep.reused, "seconds": rep.seconds,
                      "same_as_full_run": bool(same)}
        log("stages", label, json.dumps(out[label], default=str))
        prm = {**prm, **edit}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-stages", action="store_true")
    args = ap.parse_args(argv)
    dev = args.device
    out = {"device": device_name(), "label": args.label, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "command": " ".join(sys.argv)}
    import gpu_kernels

    out["code"] = str(Path(gpu_kernels.__file__).resolve().parent)
    log("device", out["device"], "label", args.label, "code", out["code"])
    scene = read_scene(temple_dir())
    t = time.perf_counter()
    pts, pvis, _ = scene_seeds(scene)
    out["seeds"] = {"points": len(pts), "s": time.perf_counter() - t}
    scene.points, scene.point_views = pts, pvis
    reconstruct(scene, views=[0], device=dev, fuse=False, views_together=1)  # compile, warm
    reconstruct(scene, views="all", device=dev)
    rows = [one(scene, dev, f"{args.label} scene", repeat=args.repeat, profile=args.profile, views="all"),
            one(scene, dev, f"{args.label} scene, no fusion", repeat=args.repeat, profile=False, views="all",
                fuse=False),
            one(scene, dev, f"{args.label} view 0 alone", repeat=max(args.repeat, 5), profile=args.profile,
                views=[0], fuse=False, views_together=1)]
    out["rows"] = rows
    if not args.no_stages:
        out["stages"] = stages(scene, dev)
    med = {r["label"]: {k: r[k] for k in ("wall_s", "grow_s", "grow_host_share", "whole_host_share",
                                          "confirmed_per_view", "samples_per_view")} for r in rows}
    log("SUMMARY", json.dumps(med, indent=1))
    out["stats_median_walls"] = {r["label"]: statistics.median(r["walls"]) for r in rows}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
