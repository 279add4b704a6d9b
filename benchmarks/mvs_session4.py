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
        tot, cum = cprofile_call(lambda: reconstruct(scene, views=views, device=dev, **kw),
                                 (("tottime", 28), ("cumulative", 45)))
        row["cprofile_tottime"] = tot
        row["cprofile_cumulative"] = cum
        log(f"--- cProfile {label} (tottime)\n" + tot[-6000:])
        log(f"--- cProfile {label} (cumulative)\n" + cum[-7000:])
    return row


def cprofile_call(fn, sorts) -> list[str]:
    """cProfile one call of ``fn`` (after a device synchronisation): the printed stats for each
    ``(sort key, number of lines)`` of ``sorts``."""
    pr = cProfile.Profile()
    _sync()
    pr.enable()
    fn()
    pr.disable()
    texts = []
    for key, lines in sorts:
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(key).print_stats(lines)
        texts.append(s.getvalue())
    return texts


def fuse_compare(scene, dev) -> dict:
    """The fusion kernel against the CuPy path it replaced, on the scene's grown maps: the same
    cloud? and the time of each (median of 3)."""
    import dataclasses

    from gpu_kernels.mvs.fusion import fuse_depth_maps

    res = reconstruct(scene, views="all", device=dev, fuse=False)
    kw = {"views": res.views, "normals": [m.normal for m in res.maps], "confidences": [m.conf for m in res.maps],
          "images": [scene.images[v] if np.asarray(scene.images[v]).dtype == np.uint8 else None for v in res.views]}
    deps = [m.depth for m in res.maps]
    out, clouds = {}, {}
    for label, env in (("kernel", "1"), ("cupy", "0")):
        os.environ["GPULAB_MVS_FUSE_KERNEL"] = env
        ts = []
        for _ in range(3):
            _sync()
            t = time.perf_counter()
            clouds[label] = fuse_depth_maps(scene.cameras, deps, device=dev, **kw)
            ts.append(time.perf_counter() - t)
        out[label + "_s"] = statistics.median(ts)
    os.environ.pop("GPULAB_MVS_FUSE_KERNEL", None)
    a, b = clouds["kernel"], clouds["cupy"]
    out["points"] = [len(a.points), len(b.points)]
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        out[f.name + "_equal"] = bool(x.shape == y.shape and np.array_equal(x, y))
        if x.shape == y.shape and x.size:
            out[f.name + "_maxdiff"] = float(np.abs(x.astype(np.float64) - y.astype(np.float64)).max())
    log("fuse compare", json.dumps(out))
    return out


def batch_spread(scene, dev, batches) -> list:
    """The confirmed samples per view of the host queue before issue 24 (``mvs.py``'s baseline
    grower) and of the device queue at several batch sizes: how much the batch order alone moves
    them, for either queue."""
    import mvs as mb

    from gpu_kernels.mvs.optimize import prepare_image

    base = mb._baseline_grower()
    img9 = {v: prepare_image(scene.images[v]) for v in range(scene.n_views)}
    rows = []
    for label, grower, env in (("host queue (before)", base, {"GPULAB_MVS_SPL": "1"}), ("device queue", None, {})):
        if label.startswith("host") and base is None:
            continue
        with mb._variant(env, grower, img9):
            for b in batches:
                res = reconstruct(scene, views="all", device=dev, fuse=False, batch_size=b)
                row = {"label": label, "batch": b, "grow_s": res.stats["grow_s"], **quality(scene, res, dev)}
                rows.append(row)
                log("spread", json.dumps(row))
    return rows


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
        pr = cProfile.Profile() if label == "views 0-3" else None
        if pr is not None:
            pr.enable()
        t = time.perf_counter()
        live, rep = mvs.TOOL.run_staged(data, {**prm, **edit}, device=be, cache=cache)
        wall = time.perf_counter() - t
        if pr is not None:
            pr.disable()
            st_ = io.StringIO()
            pstats.Stats(pr, stream=st_).sort_stats("cumulative").print_stats(30)
            log(f"--- cProfile stage {label}\n" + st_.getvalue()[-5000:])
        fresh = mvs.run(data, {**prm, **edit}, device=be)
        same = all(np.array_equal(a.depth, b.depth, equal_nan=True) and np.array_equal(a.conf, b.conf)
                   for a, b in zip(live.result.maps, fresh.result.maps, strict=True))
        gst = live.result.maps[0].stats
        out[label] = {"wall_s": wall, "ran": rep.ran, "reused": rep.reused, "seconds": rep.seconds,
                      "same_as_full_run": bool(same), "views": len(live.result.maps),
                      "grow": {k: gst.get(k) for k in ("time_s", "setup_s", "loop_s", "wait_s", "download_s",
                                                       "batches", "graph", "neighbors")}}
        log("stages", label, json.dumps(out[label], default=str))
        prm = {**prm, **edit}
    return out


def download_bench(P: int = 16 * 640 * 480, repeat: int = 5) -> dict:
    """Ways to bring the growing's six record arrays (P pixels: 4 float32 planes, float32 x 3
    normals, int16 iterations) to the host: pageable ``get`` per array (what grow.py does), one
    pinned staging buffer then copies into fresh arrays, and ``get`` into hugepage-advised memory."""
    import mmap

    import cupy as cp

    arrs = [cp.full(P, 1.5, cp.float32) for _ in range(4)] + [cp.full((P, 3), 0.5, cp.float32),
                                                                cp.ones(P, cp.int16)]
    nbytes = sum(a.nbytes for a in arrs)
    cp.cuda.runtime.deviceSynchronize()
    out = {"bytes": nbytes}

    def timeit(fn):
        ts = []
        for _ in range(repeat):
            cp.cuda.runtime.deviceSynchronize()
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return statistics.median(ts)

    out["pageable_get"] = timeit(lambda: [a.get() for a in arrs])
    pin = cp.cuda.alloc_pinned_memory(nbytes)
    stage = np.frombuffer(pin, np.uint8, nbytes)
    s = cp.cuda.Stream(non_blocking=True)

    def staged(copy_out=True):
        o = 0
        for a in arrs:
            cp.cuda.runtime.memcpyAsync(stage.ctypes.data + o, a.data.ptr, a.nbytes, cp.cuda.runtime.memcpyDeviceToHost,
                                        s.ptr)
            o += a.nbytes
        s.synchronize()
        if copy_out:
            o = 0
            res = []
            for a in arrs:
                res.append(stage[o:o + a.nbytes].view(a.dtype).reshape(a.shape).copy())
                o += a.nbytes
            return res

    out["pinned_dma_only"] = timeit(lambda: staged(False))
    out["pinned_then_copy"] = timeit(staged)
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(8)

    def staged_threads():
        staged(False)
        res = [np.empty(a.shape, a.dtype) for a in arrs]
        jobs, o = [], 0
        for a, r in zip(arrs, res, strict=True):
            src = stage[o:o + a.nbytes]
            dst = r.reshape(-1).view(np.uint8)
            step = 1 << 22
            for c in range(0, a.nbytes, step):
                jobs.append(pool.submit(np.copyto, dst[c:c + step], src[c:c + step]))
            o += a.nbytes
        for j in jobs:
            j.result()
        return res

    out["pinned_then_threaded_copy"] = timeit(staged_threads)

    def huge():
        mm = mmap.mmap(-1, nbytes)
        mm.madvise(mmap.MADV_HUGEPAGE)
        buf = np.frombuffer(mm, np.uint8)
        o = 0
        for a in arrs:
            a.get(out=buf[o:o + a.nbytes].view(a.dtype).reshape(a.shape))
            o += a.nbytes

    try:
        out["hugepage_get"] = timeit(huge)
    except Exception as exc:  # noqa: BLE001 - no madvise here
        out["hugepage_get"] = repr(exc)
    out["fresh_alloc_fill"] = timeit(lambda: [np.full(a.shape, 1, a.dtype) for a in arrs])
    log("download bench", json.dumps(out))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-stages", action="store_true")
    ap.add_argument("--download-bench", action="store_true")
    ap.add_argument("--fuse-compare", action="store_true")
    ap.add_argument("--batch-spread", default="", help="batch sizes for the confirmed-samples spread")
    args = ap.parse_args(argv)
    dev = args.device
    out = {"device": device_name(), "label": args.label, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "command": " ".join(sys.argv)}
    import gpu_kernels

    out["code"] = str(Path(gpu_kernels.__file__).resolve().parent)
    log("device", out["device"], "label", args.label, "code", out["code"])
    if args.download_bench:
        out["download_bench"] = download_bench()
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
    if args.fuse_compare:
        out["fuse_compare"] = fuse_compare(scene, dev)
    if not args.no_stages:
        out["stages"] = stages(scene, dev)
    if args.batch_spread:
        out["batch_spread"] = batch_spread(scene, dev, [int(b) for b in args.batch_spread.split(",")])
    med = {r["label"]: {k: r[k] for k in ("wall_s", "grow_s", "grow_host_share", "whole_host_share",
                                          "confirmed_per_view", "samples_per_view")} for r in rows}
    log("SUMMARY", json.dumps(med, indent=1))
    out["stats_median_walls"] = {r["label"]: statistics.median(r["walls"]) for r in rows}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    from mvs_cli import run

    sys.exit(run(main, scene=temple_dir))
