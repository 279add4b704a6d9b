"""MVS host share, measured from both ends (issue 24, session 5): on templeSparseRing, for the
whole ``reconstruct`` call (scene, 16 views, fused; scene without fusion; view 0 alone):

* **GPU idle share** (the headline "host share"): 1 - (time the GPU runs any of the call's kernels
  or copies) / (wall time of the call). The GPU's activity comes from CUPTI (PyTorch's profiler,
  Kineto, which records every kernel, memcpy and memset of the process, CuPy's and CUDA graphs'
  included): the union of those intervals inside the call's own annotation. Whatever keeps the
  GPU waiting for the host (Python, NumPy, launches, synchronisations, host copies) counts, and
  host work that runs while the GPU is busy does not: the host's *exposed* time. The call under
  the profiler is a little slower (CUPTI adds to each launch); its wall is reported beside.
* **Host thread busy share** (an upper bound, the stricter reading): the calling thread's CPU time
  (``time.thread_time``) / wall, in a process whose CUDA waits sleep instead of spinning
  (``--blocking-sync``: ``cudaDeviceScheduleBlockingSync``, set before the context exists), so a
  wait costs no CPU time; the process's CPU time over all threads (the copy threads' too) beside.

Usage (GPU host; ``GPULAB_SHARED_DATA`` holds ``middlebury-mvs/templeSparseRing``; ``python3`` is
the one with PyTorch)::

    python3 benchmarks/mvs_session5.py --device cuda --label new --json new.json
    python3 benchmarks/mvs_session5.py --device cuda --label new --blocking-sync --json new_bs.json
    MVS5_CODE_ROOT=.carry-mvs5/base python3 benchmarks/mvs_session5.py --label base --json base.json
    python3 benchmarks/mvs_session5.py --compare base.json new.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

if "--blocking-sync" in sys.argv:  # before anything makes the CUDA context (_common asks the device)
    # the primary context's scheduling (CU_CTX_SCHED_BLOCKING_SYNC = 4): waits sleep, costing no CPU time
    import ctypes

    _cu = ctypes.CDLL("libcuda.so.1")
    _dev = ctypes.c_int()
    assert _cu.cuInit(0) == 0 and _cu.cuDeviceGet(ctypes.byref(_dev), 0) == 0
    assert _cu.cuDevicePrimaryCtxSetFlags_v2(_dev, 4) == 0, "could not set blocking sync"

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402,F401 - puts the checkout on sys.path: the code root goes in front of it below

# MVS5_CODE_ROOT: another copy of the code (``git archive <commit> gpu_kernels app``) to time
if os.environ.get("MVS5_CODE_ROOT"):
    os.environ["MVS4_CODE_ROOT"] = str(Path(os.environ["MVS5_CODE_ROOT"]).resolve())  # mvs_session4's helpers
    sys.path.insert(0, os.environ["MVS4_CODE_ROOT"])

import numpy as np  # noqa: E402


def log(*a):
    print(*a, flush=True)


def _sync():
    import cupy as cp

    cp.cuda.runtime.deviceSynchronize()


#: host functions whose spans the GPU-idle breakdown reports (module, attribute[, class])
PHASES = [("gpu_kernels.mvs.stereo", "prepare_views"), ("gpu_kernels.mvs.stereo", "grow_views"),
          ("gpu_kernels.mvs.stereo", "fuse_depth_maps"), ("gpu_kernels.mvs.stereo", "finish_maps"),
          ("gpu_kernels.mvs.stereo", "pack_views"), ("gpu_kernels.mvs.stereo", "track_membership"),
          ("gpu_kernels.mvs.stereo", "greedy_device"), ("gpu_kernels.mvs.stereo", "select_views"),
          ("gpu_kernels.mvs.stereo", "grow_depth_maps"), ("gpu_kernels.mvs.grow", "build_geometry"),
          ("gpu_kernels.mvs.grow", "__init__", "_Group"), ("gpu_kernels.mvs.grow", "__init__", "_DeviceGrower"),
          ("gpu_kernels.mvs.grow", "records", "_DeviceGrower"),
          ("gpu_kernels.mvs.grow", "records_later", "_DeviceGrower"),
          ("gpu_kernels.mvs.grow", "wait", "_Pending"), ("gpu_kernels.mvs.grow", "_maps"),
          ("gpu_kernels.mvs.fusion", "_fuse_device"), ("gpu_kernels.mvs.fusion", "to_device"),
          ("gpu_kernels.mvs.fusion", "_download"), ("gpu_kernels.mvs.fusion", "_cloud")]


def _annotate():
    """Wrap the :data:`PHASES` in PyTorch's ``record_function`` (this process only), so that the
    trace shows each one's host span; returns an undo function."""
    import functools
    import importlib

    from torch.profiler import record_function

    undo = []
    for item in PHASES:
        mod = importlib.import_module(item[0])
        owner = getattr(mod, item[2], None) if len(item) > 2 else mod
        fn = getattr(owner, item[1], None) if owner is not None else None
        if fn is None:
            continue
        name = ".".join(item[2:] + item[1:2]) if len(item) > 2 else item[1]

        def wrap(f, nm):
            @functools.wraps(f)
            def inner(*a, **k):
                with record_function("phase:" + nm):
                    return f(*a, **k)
            return inner

        setattr(owner, item[1], wrap(fn, name))
        undo.append((owner, item[1], fn))
    return lambda: [setattr(o, a, f) for o, a, f in undo]


def gpu_busy(fn, phases=False):
    """``(wall of fn under the profiler, GPU busy seconds inside it, kernels/copies seen)``, from
    CUPTI through PyTorch's profiler; None when PyTorch or its profiler is not there."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function
    except Exception as exc:  # noqa: BLE001 - no PyTorch here
        log("no CUPTI (PyTorch):", repr(exc))
        return None
    torch.zeros(1, device="cuda")  # PyTorch's own context set-up outside the measured call
    torch.cuda.synchronize()
    undo = _annotate() if phases else None
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        _sync()
        with record_function("mvs_call"):
            t = time.perf_counter()
            fn()
            wall = time.perf_counter() - t
        _sync()
    if undo is not None:
        undo()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace.json"
        prof.export_chrome_trace(str(path))
        tr = json.loads(path.read_text())
        if os.environ.get("MVS_TRACE_DIR"):  # keep the trace (gzip) for a closer look
            import gzip

            d_out = Path(os.environ["MVS_TRACE_DIR"])
            d_out.mkdir(parents=True, exist_ok=True)
            n = len(list(d_out.glob("*.json.gz")))
            (d_out / f"trace{n:02d}.json.gz").write_bytes(gzip.compress(path.read_bytes()))
    ev = tr["traceEvents"] if isinstance(tr, dict) else tr
    call = [e for e in ev if e.get("name") == "mvs_call" and e.get("cat") == "user_annotation"]
    if not call:
        log("no mvs_call annotation in the trace")
        return None
    t0 = float(call[0]["ts"])
    t1 = t0 + float(call[0]["dur"])
    spans = []
    kinds: dict = {}
    for e in ev:
        cat = e.get("cat", "")
        if cat in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e:
            a = max(float(e["ts"]), t0)
            b = min(float(e["ts"]) + float(e["dur"]), t1)
            if b > a:
                spans.append((a, b))
                kinds[cat] = kinds.get(cat, 0) + 1
    spans.sort()
    busy, cur_a, cur_b = 0.0, None, None
    for a, b in spans:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                busy += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        busy += cur_b - cur_a
    # the GPU's idle intervals inside the call, and how much of each phase's host span they cover
    merged, cur = [], None
    for a, b in spans:
        if cur is None or a > cur[1]:
            if cur is not None:
                merged.append(cur)
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur is not None:
        merged.append(cur)
    idle, last = [], t0
    for a, b in merged:
        if a > last:
            idle.append((last, a))
        last = max(last, b)
    if t1 > last:
        idle.append((last, t1))
    ph: dict = {}
    for e in ev:
        nm = e.get("name", "")
        if e.get("cat") == "user_annotation" and nm.startswith("phase:") and "dur" in e:
            a, b = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            gap = sum(max(0.0, min(b, y) - max(a, x)) for x, y in idle)
            d = ph.setdefault(nm[6:], {"calls": 0, "host_ms": 0.0, "gpu_idle_ms": 0.0})
            d["calls"] += 1
            d["host_ms"] += (b - a) * 1e-3
            d["gpu_idle_ms"] += gap * 1e-3
    big = sorted(idle, key=lambda x: x[0] - x[1])[:12]
    gaps = [{"at_ms": (a - t0) * 1e-3, "ms": (b - a) * 1e-3} for a, b in sorted(big)]
    return {"wall_profiled_s": wall, "annotated_s": (t1 - t0) * 1e-6, "gpu_busy_s": busy * 1e-6,
            "gpu_idle_share": 1 - busy / max(t1 - t0, 1e-9), "activities": kinds,
            "idle_ms_total": sum(b - a for a, b in idle) * 1e-3, "phases": ph, "largest_idle_gaps": gaps}


def row(scene, dev, label, *, repeat, views, profile_gpu, profile_host=False, annotate=True, **kw):
    from mvs_session4 import quality

    from gpu_kernels.mvs.stereo import reconstruct

    walls, thr, proc = [], [], []
    res = None
    for _ in range(repeat):
        _sync()
        c0, p0 = time.thread_time(), time.process_time()
        t = time.perf_counter()
        res = reconstruct(scene, views=views, device=dev, **kw)
        walls.append(time.perf_counter() - t)
        thr.append(time.thread_time() - c0)
        proc.append(time.process_time() - p0)
    i = int(np.argsort(walls)[len(walls) // 2])
    wall = walls[i]
    n = sum(m.n_samples for m in res.maps)
    st = res.stats
    out = {"label": label, "views": len(res.maps), "wall_s": wall, "walls": walls,
           "thread_cpu_s": thr[i], "process_cpu_s": proc[i], "thread_busy_share": thr[i] / wall,
           "process_cpu_per_wall": proc[i] / wall, "us_per_sample": 1e6 * wall / n,
           "prepare_s": st.get("prepare_s"), "grow_s": st.get("grow_s"), "fuse_s": st.get("fuse_s"),
           "download_wait_s": st.get("download_wait_s"),
           "neighbors": st.get("neighbors"), **quality(scene, res, dev)}
    if profile_host:
        from mvs_session4 import cprofile_call

        (tot,) = cprofile_call(lambda: reconstruct(scene, views=views, device=dev, **kw), (("tottime", 25),))
        out["cprofile_tottime"] = tot
        log(f"--- cProfile {label} (tottime)\n" + tot[-5000:])
    if profile_gpu:
        g = gpu_busy(lambda: reconstruct(scene, views=views, device=dev, **kw))
        if g is not None:
            out.update(g)
            out["gpu_idle_share_of_unprofiled_wall"] = 1 - g["gpu_busy_s"] / wall
            # a second profiled call with the host's phases annotated: where the GPU waits
            ga = gpu_busy(lambda: reconstruct(scene, views=views, device=dev, **kw), phases=True) \
                if annotate else None
            if ga is not None:
                out["annotated"] = {k: ga[k] for k in ("wall_profiled_s", "gpu_idle_share", "phases",
                                                        "largest_idle_gaps")}
                log(f"--- GPU idle by phase, {label} (annotated call: wall {ga['wall_profiled_s'] * 1e3:.1f} ms, "
                    f"idle {ga['gpu_idle_share']:.3f})")
                for k, v in sorted(ga["phases"].items(), key=lambda kv: -kv[1]["gpu_idle_ms"]):
                    log(f"    {k:34s} calls {v['calls']:4d}  host {v['host_ms']:8.2f} ms  GPU idle {v['gpu_idle_ms']:7.2f} ms")
                log("    largest idle gaps (at ms: ms):", ", ".join(f"{x['at_ms']:.1f}: {x['ms']:.2f}"
                                                             for x in ga["largest_idle_gaps"]))
    log(label, json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in out.items()
                           if k not in ("neighbors", "walls")}))
    return out


def view_selection_check(scene, dev) -> dict:
    """The device's view selection (where there is one) against NumPy's, at several numbers of
    neighbours: the same views in the same order?"""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.mvs import views as vw

    if not hasattr(vw, "greedy_device"):
        return {}
    be = get_backend(dev)
    pts, pvis = scene.points, scene.point_views
    member = vw.track_membership(pvis, len(pts), scene.n_views)
    out = {}
    for k in (4, 6, 8, 10, 15):
        g = vw.greedy_device(be, scene.cameras, pts, member, list(range(scene.n_views)), k)
        same = all(vw.select_views(scene.cameras, pts, pvis, v, max_neighbors=k, min_views=k, member=member)
                   == vw.select_views(scene.cameras, pts, pvis, v, max_neighbors=k, min_views=k, member=member,
                                      _greedy=g[v]) for v in range(scene.n_views))
        out[str(k)] = bool(same)
    t = time.perf_counter()
    for _ in range(10):
        vw.greedy_device(be, scene.cameras, pts, member, list(range(scene.n_views)), 8)
    out["device_16_views_s"] = (time.perf_counter() - t) / 10
    t = time.perf_counter()
    for v in range(scene.n_views):
        vw.select_views(scene.cameras, pts, pvis, v, max_neighbors=8, min_views=8, member=member)
    out["numpy_16_views_s"] = time.perf_counter() - t
    log("view selection", json.dumps(out))
    return out


def compare(a_path, b_path) -> int:
    a, b = json.loads(Path(a_path).read_text()), json.loads(Path(b_path).read_text())
    for ra, rb in zip(a["rows"], b["rows"], strict=True):
        same = {k: ra.get(k) == rb.get(k) for k in ("maps_sha1", "fused_sha1", "neighbors", "samples_per_view",
                                                     "confirmed_per_view", "fused_points")}
        log(f"{ra['label']} -> {rb['label']}: wall {ra['wall_s']:.4f} -> {rb['wall_s']:.4f} s, "
            f"GPU idle {ra.get('gpu_idle_share', float('nan')):.3f} -> {rb.get('gpu_idle_share', float('nan')):.3f}, "
            f"same {json.dumps(same)}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default=None)
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--blocking-sync", action="store_true")
    ap.add_argument("--no-gpu-profile", action="store_true")
    ap.add_argument("--profile", action="store_true", help="cProfile one call of each row")
    ap.add_argument("--no-annotate", action="store_true", help="no second profiled call with the phases")
    ap.add_argument("--compare", nargs=2, default=None)
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    from _common import device_name
    from mvs_session4 import temple_dir

    import gpu_kernels
    from app.io.scene_io import read_scene
    from gpu_kernels.mvs.stereo import reconstruct, scene_seeds

    out = {"device": device_name(), "label": args.label, "blocking_sync": args.blocking_sync,
           "code": str(Path(gpu_kernels.__file__).resolve().parent),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    log("device", out["device"], "label", args.label, "code", out["code"], "blocking sync", args.blocking_sync)
    scene = read_scene(temple_dir())
    pts, pvis, _ = scene_seeds(scene)
    scene.points, scene.point_views = pts, pvis
    dev = args.device
    reconstruct(scene, views=[0], device=dev, fuse=False, views_together=1)  # compile, warm
    reconstruct(scene, views="all", device=dev)
    prof = not args.no_gpu_profile and not args.blocking_sync
    ph, an = args.profile, not args.no_annotate
    rows = [row(scene, dev, f"{args.label} scene", repeat=args.repeat, views="all", profile_gpu=prof, profile_host=ph,
                annotate=an),
            row(scene, dev, f"{args.label} scene, no fusion", repeat=args.repeat, views="all", profile_gpu=prof,
                annotate=an, fuse=False),
            row(scene, dev, f"{args.label} view 0 alone", repeat=max(args.repeat, 7), views=[0], profile_gpu=prof,
                profile_host=ph, annotate=an, fuse=False, views_together=1)]
    out["rows"] = rows
    if args.blocking_sync:  # the flags in effect (4: blocking sync)
        import ctypes

        flags, active = ctypes.c_uint(), ctypes.c_int()
        _cu.cuDevicePrimaryCtxGetState(_dev, ctypes.byref(flags), ctypes.byref(active))
        out["context_flags"] = int(flags.value)
        log("context flags", flags.value, "(4: blocking sync)")
    if not args.blocking_sync:
        out["view_selection"] = view_selection_check(scene, dev)
    log("SUMMARY", json.dumps({r["label"]: {k: r.get(k) for k in (
        "wall_s", "gpu_idle_share", "thread_busy_share", "process_cpu_per_wall", "us_per_sample",
        "samples_per_view", "confirmed_per_view", "fused_in_bbox")} for r in rows}, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    from mvs_cli import run
    from mvs_session4 import temple_dir

    sys.exit(run(main, scene=temple_dir))
