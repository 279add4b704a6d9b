"""Multi-view stereo benchmark: synthetic accuracy / completeness / time, the Middlebury
templeSparseRing (samples per view, time per sample, points inside the published bounding
box, cross-view consistency, peak device memory), GPU against CPU, a tuning sweep, and
COLMAP's PatchMatch stereo (pycolmap-cuda12) on the same views with the same source views.

Usage (GPU host)::

    python benchmarks/mvs.py --device cuda --json out.json [--tune] [--cpu-size 320]
    python benchmarks/mvs.py colmap --pycolmap /tmp/pc --views all --json colmap.json
    python benchmarks/mvs.py queue --device cuda --json queue.json   # issue 24: host vs device queue
    python benchmarks/mvs.py queue --device cuda --batch-sweep 4096,16384,65536

Data: ``$GPULAB_SHARED_DATA/middlebury-mvs/templeSparseRing`` (default ``../shared/data``).
Needs numpy, scipy, opencv and (for the GPU) cupy only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, device_name, format_table, host_description  # noqa: E402

from app.io.scene_io import read_scene, write_colmap_text  # noqa: E402
from gpu_kernels.mvs.camera import Camera  # noqa: E402
from gpu_kernels.mvs.fusion import consistency_counts  # noqa: E402
from gpu_kernels.mvs.optimize import OptimizeParams  # noqa: E402
from gpu_kernels.mvs.stereo import reconstruct, scene_seeds  # noqa: E402
from gpu_kernels.mvs.synth import render_synthetic_scene  # noqa: E402
from gpu_kernels.mvs.views import select_views  # noqa: E402


def data_root() -> Path:
    env = os.environ.get("GPULAB_SHARED_DATA")
    return Path(env) if env else ROOT / ".." / "shared" / "data"


def temple_dir() -> Path:
    return data_root() / "middlebury-mvs" / "templeSparseRing"


def log(*a):
    print(*a, flush=True)


# ----------------------------------------------------------------------------- helpers
def copy_bandwidth() -> float | None:
    """Device-to-device copy bandwidth (bytes read + written per second)."""
    try:
        import cupy as cp
    except ImportError:
        return None
    a = cp.empty(1 << 28, cp.uint8)
    b = cp.empty_like(a)
    b[...] = a
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(10):
        b[...] = a
    e.record()
    e.synchronize()
    t = cp.cuda.get_elapsed_time(s, e) / 1e3 / 10
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * (1 << 28) / t


def sample_work(res, window: int) -> dict:
    """Window samples (bilinear, 3 channels + 6 gradient values) the optimiser evaluated."""
    it = sum(int(m.iters[m.iters > 0].sum()) + int((m.iters > 0).sum()) for m in res.maps)
    nv = np.mean([len(m.neighbors) for m in res.maps])
    n = it * nv * window * window
    t = res.stats["optimize_s"]
    return {"window_samples": float(n), "samples_per_s": n / max(t, 1e-9),
            "bytes_per_s": n * 4 * 48 / max(t, 1e-9)}


def bbox_fraction(points, bbox) -> float:
    if points is None or len(points) == 0:
        return float("nan")
    return float(np.all((points >= bbox[0]) & (points <= bbox[1]), axis=1).mean())


def view_points(cam: Camera, depth):
    idx = np.flatnonzero(np.isfinite(depth.reshape(-1)))
    v, u = np.divmod(idx, depth.shape[1])
    return cam.backproject(np.stack([u, v], 1).astype(float), depth.reshape(-1)[idx])


# ----------------------------------------------------------------------------- synthetic
_SYN_CACHE: dict = {}


def bench_synthetic(device, *, size=640, n_views=12, views="all", repeat_warm=True, **kw) -> dict:
    W, H = size, size * 3 // 4
    t = time.perf_counter()
    key = (W, H, n_views)
    if key not in _SYN_CACHE:
        # one ray per pixel: at 320 px and more the texture is well below the pixel rate
        _SYN_CACHE[key] = render_synthetic_scene(n_views=n_views, width=W, height=H, supersample=1)
    syn = _SYN_CACHE[key]
    t_render = time.perf_counter() - t
    if repeat_warm and device != "cpu":
        reconstruct(syn.scene, views=[0], device=device, fuse=False, **kw)  # compile + warm
    res = reconstruct(syn.scene, views=views, device=device, **kw)
    acc05, acc1, comp, n = [], [], [], []
    for m in res.maps:
        gt = syn.depths[m.view]
        ok = np.isfinite(m.depth) & np.isfinite(gt)
        rel = np.abs(m.depth[ok] - gt[ok]) / gt[ok]
        acc05.append(float((rel < 0.005).mean()) if ok.any() else 0.0)
        acc1.append(float((rel < 0.01).mean()) if ok.any() else 0.0)
        comp.append(float(ok.sum() / np.isfinite(gt).sum()))
        n.append(m.n_samples)
    nviews = len(res.maps)
    return {"device": device, "size": f"{W}x{H}", "views": nviews, "acc_0.5%": float(np.mean(acc05)),
            "acc_1%": float(np.mean(acc1)), "completeness": float(np.mean(comp)),
            "samples_per_view": float(np.mean(n)), "grow_s": res.stats["grow_s"],
            "s_per_view": res.stats["grow_s"] / nviews,
            "us_per_sample": 1e6 * res.stats["grow_s"] / max(sum(n), 1),
            "queue_share": res.stats["queue_s"] / max(res.stats["grow_s"], 1e-9),
            "fused_points": 0 if res.fused is None else len(res.fused.points), "render_s": t_render,
            "peak_mem": res.stats["peak_device_bytes"], **sample_work(res, kw.get("window", 5))}


# ----------------------------------------------------------------------------- temple
def bench_temple(scene, device, *, views="all", label="", **kw) -> dict:
    res = reconstruct(scene, views=views, device=device, **kw)
    cams = scene.cameras
    counts = consistency_counts(cams, [m.depth for m in res.maps], views=res.views, device=device)
    per_view = []
    for m, c in zip(res.maps, counts, strict=True):
        pts = view_points(cams[m.view], m.depth)
        valid = c >= 0
        per_view.append({"view": scene.names[m.view], "samples": m.n_samples,
                         "confirmed": int((c[valid] >= 1).sum()),
                         "in_bbox": bbox_fraction(pts, scene.bbox)})
    nviews = len(res.maps)
    samples = sum(p["samples"] for p in per_view)
    out = {"label": label, "device": device, "views": nviews,
           "samples_per_view": samples / nviews,
           "confirmed_per_view": float(np.mean([p["confirmed"] for p in per_view])),
           "consistency": float(np.mean([p["confirmed"] / max(p["samples"], 1) for p in per_view])),
           "view_points_in_bbox": float(np.mean([p["in_bbox"] for p in per_view])),
           "fused_points": 0 if res.fused is None else len(res.fused.points),
           "fused_in_bbox": bbox_fraction(None if res.fused is None else res.fused.points, scene.bbox),
           "grow_s": res.stats["grow_s"], "s_per_view": res.stats["grow_s"] / nviews,
           "us_per_sample": 1e6 * res.stats["grow_s"] / max(samples, 1),
           "queue_share": res.stats["queue_s"] / max(res.stats["grow_s"], 1e-9),
           "host_exposed_share": 1 - res.stats["wait_s"] / max(res.stats["grow_s"], 1e-9),
           "batches": res.stats["batches"], "seeds_s": res.stats["seeds_s"], "fuse_s": res.stats["fuse_s"],
           "peak_mem": res.stats["peak_device_bytes"], "per_view": per_view,
           "neighbors": res.stats["neighbors"], **sample_work(res, kw.get("window", 5))}
    return out, res


TEMPLE_COLS = [("label", "run"), ("views", "views"), ("samples_per_view", "samples/view"),
               ("confirmed_per_view", "confirmed/view"), ("consistency", "consistent"),
               ("view_points_in_bbox", "in bbox (views)"), ("fused_points", "fused pts"),
               ("fused_in_bbox", "fused in bbox"), ("s_per_view", "s/view"), ("us_per_sample", "us/sample"),
               ("queue_share", "queue share"), ("host_exposed_share", "host not hidden"), ("batches", "batches"),
               ("peak_mem", "peak MiB")]


def fmt_row(r: dict) -> dict:
    out = {}
    for k, v in r.items():
        if isinstance(v, float):
            if k in ("consistency", "view_points_in_bbox", "fused_in_bbox", "queue_share", "acc_0.5%", "acc_1%",
                     "completeness", "host_exposed_share", "host_share", "one_host_share"):
                out[k] = f"{100 * v:.1f}%"
            elif k == "peak_mem":
                out[k] = f"{v / 2**20:.0f}"
            else:
                out[k] = f"{v:.4g}"
        elif k == "peak_mem":
            out[k] = f"{v / 2**20:.0f}"
        else:
            out[k] = v
    return out


# ----------------------------------------------------------------------------- queue (issue 24)
def _baseline_grower():
    """The host-queue grower before issue 24 (``benchmarks/results/mvs_baseline_grow.py``, a copy of the
    old ``gpu_kernels/mvs/grow.py``, when present), adapted to the new call."""
    import importlib.util

    path = Path(__file__).resolve().parent / "results" / "mvs_baseline_grow.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("mvs_baseline_grow", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mvs_baseline_grow"] = mod
    spec.loader.exec_module(mod)
    return mod


@contextlib.contextmanager
def _variant(env: dict, grower=None, img9=None):
    import gpu_kernels.mvs.stereo as st

    old_env = {k: os.environ.get(k) for k in env}
    old_grow = st.grow_depth_maps
    os.environ.update(env)
    if grower is not None:
        def grow(tex, _img9, cameras, refs, *a, **kw):
            kw.pop("graph", None)
            return grower.grow_depth_maps(tex, {r: img9[r] for r in refs}, cameras, refs, *a, **kw)
        st.grow_depth_maps = grow
    try:
        yield
    finally:
        st.grow_depth_maps = old_grow
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def bench_queue(scene, dev, *, repeat: int = 3) -> dict:
    """Host queue (before) against the device queue (variants), in one process: the scene (16
    views together, fused) and one view alone (median of ``repeat`` runs, and a determinism check)."""
    from gpu_kernels.mvs.optimize import prepare_image

    pts, pvis, _ = scene_seeds(scene)
    scene.points, scene.point_views = pts, pvis
    img9 = {v: prepare_image(scene.images[v]) for v in range(scene.n_views)}
    base = _baseline_grower()
    variants = []  # (label, environment, grower, keywords, the whole scene too)
    if base is not None:
        variants.append(("host queue (before)", {"GPULAB_MVS_SPL": "1"}, base, {}, True))
    variants += [("device queue", {}, None, {}, True),
                 ("device queue, 1024 levels", {"GPULAB_MVS_LEVELS": "1024"}, None, {}, True),
                 ("device queue, no retry", {"GPULAB_MVS_RETRY": "0"}, None, {}, True),
                 ("device queue, batch 16384", {}, None, {"batch_size": 16384}, True),
                 ("device queue, SPL 1", {"GPULAB_MVS_SPL": "1"}, None, {}, False),
                 ("device queue, no graph", {"GPULAB_MVS_GRAPH": "0"}, None, {}, False)]
    rows = []
    for label, env, grower, kw, whole in variants:
        with _variant(env, grower, img9):
            try:
                reconstruct(scene, views=[0], device=dev, fuse=False, views_together=1)  # compile, warm
                r = {k: float("nan") for k in ("samples_per_view", "confirmed_per_view", "fused_in_bbox",
                                              "view_points_in_bbox", "s_per_view", "us_per_sample",
                                              "host_exposed_share", "queue_share")}
                r.update(fused_points=0, batches=0, peak_mem=0)
                res = None
                if whole:
                    r, res = bench_temple(scene, dev, views="all", label=label, **kw)
                ones = []
                for _ in range(max(1, repeat)):
                    r1, res1 = bench_temple(scene, dev, views=[0], label=label, fuse=False, views_together=1, **kw)
                    ones.append((r1, res1))
            except Exception as exc:  # noqa: BLE001 - one failing variant must not lose the rest
                log(label, "failed:", repr(exc))
                rows.append({"label": label, "error": repr(exc)})
                continue
        ones.sort(key=lambda x: x[0]["grow_s"])
        r1, res1 = ones[len(ones) // 2]
        same = all(np.array_equal(m.depth, o[1].maps[0].depth, equal_nan=True) for o in ones for m in res1.maps)
        st1 = res1.stats
        row = {"label": label, "samples_per_view": r["samples_per_view"], "confirmed_per_view": r["confirmed_per_view"],
               "fused_points": r["fused_points"], "fused_in_bbox": r["fused_in_bbox"],
               "view_points_in_bbox": r["view_points_in_bbox"], "s_per_view": r["s_per_view"],
               "us_per_sample": r["us_per_sample"], "host_share": r["host_exposed_share"],
               "queue_share": r["queue_share"], "batches": r["batches"], "peak_mem": r["peak_mem"],
               "one_samples": r1["samples_per_view"], "one_s": r1["grow_s"],
               "one_s_all": [o[0]["grow_s"] for o in ones], "one_us_per_sample": r1["us_per_sample"],
               "one_host_share": r1["host_exposed_share"], "one_batches": r1["batches"],
               "one_setup_s": st1.get("setup_s", 0.0), "one_prepare_s": st1.get("prepare_s", 0.0),
               "one_deterministic": bool(same), "one_stats": _split(res1.maps[0].stats),
               "scene_stats": None if res is None else _split(res.maps[0].stats)}
        rows.append(row)
        log(label, "one view:", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row["one_stats"].items()})
        if row["scene_stats"]:
            log(label, "scene:", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row["scene_stats"].items()})
    log(format_table([fmt_row({k: v for k, v in x.items() if k not in ("one_s_all", "one_stats", "scene_stats")})
                      for x in rows if "error" not in x], QUEUE_COLS))
    return {"rows": rows}


def _split(st: dict) -> dict:
    """The time split of one growing call (host set-up, host in the loop, waits, download)."""
    keys = ("time_s", "setup_s", "loop_s", "wait_s", "queue_s", "launch_s", "download_s", "batches", "levels",
            "retry", "graph")
    out = {k: st.get(k) for k in keys}
    t = max(st.get("time_s", 0.0), 1e-9)
    out["host_loop_share"] = st.get("queue_s", 0.0) / t
    out["host_share_with_setup"] = (st.get("queue_s", 0.0) + st.get("setup_s", 0.0)) / t
    return out


QUEUE_COLS = [("label", "run"), ("samples_per_view", "samples/view"), ("confirmed_per_view", "confirmed/view"),
              ("fused_in_bbox", "fused in bbox"), ("s_per_view", "s/view"), ("us_per_sample", "us/sample"),
              ("host_share", "host share"), ("batches", "batches"), ("one_samples", "1 view: samples"),
              ("one_s", "1 view: s"), ("one_us_per_sample", "1 view: us/sample"), ("one_host_share", "1 view: host"),
              ("one_batches", "1 view: batches"), ("one_deterministic", "1 view: same twice")]


# ----------------------------------------------------------------------------- COLMAP
def colmap_prepare(scene, ws: Path, views, sources):
    """A COLMAP workspace: text model with PINHOLE cameras, images, then the caller runs
    undistort_images and we write stereo/patch-match.cfg with the given source views."""
    import shutil

    (ws / "sparse").mkdir(parents=True, exist_ok=True)
    (ws / "images").mkdir(exist_ok=True)
    files = scene.meta["files"]
    for f in files:
        src = Path(scene.meta["path"]).parent / f
        dst = ws / "images" / f
        if not dst.exists():
            shutil.copy(src, dst)
    write_colmap_text(ws / "sparse", files, scene.cameras)
    return files


def colmap_worker(args):
    """Runs inside a process whose LD_LIBRARY_PATH / PYTHONPATH reach pycolmap."""
    import pycolmap

    scene = read_scene(temple_dir())
    views = list(range(scene.n_views)) if args.views == "all" else [int(v) for v in args.views.split(",")]
    nb = json.loads(args.sources) if args.sources else None
    ws = Path(args.workspace)
    files = colmap_prepare(scene, ws / "in", views, nb)
    out = ws / "dense"
    t = time.perf_counter()
    pycolmap.undistort_images(str(out), str(ws / "in" / "sparse"), str(ws / "in" / "images"))
    t_und = time.perf_counter() - t
    # the source views: ours (by name), for every view whose photometric map is needed
    need = sorted(set(views) | ({s for v in views for s in nb[str(v)]} if nb else set(range(scene.n_views))))
    lines = []
    for v in need:
        lines.append(files[v])
        lines.append(", ".join(files[s] for s in nb[str(v)]) if nb else "__all__")
    (out / "stereo" / "patch-match.cfg").write_text("\n".join(lines) + "\n")
    bb = scene.bbox
    corners = np.array([[x, y, z] for x in bb[:, 0] for y in bb[:, 1] for z in bb[:, 2]])
    zs = np.concatenate([scene.cameras[v].project(corners)[1] for v in need])
    opts = pycolmap.PatchMatchOptions()
    opts.depth_min = float(zs.min() * 0.95)
    opts.depth_max = float(zs.max() * 1.05)
    opts.geom_consistency = False
    opts.filter = False
    t = time.perf_counter()
    pycolmap.patch_match_stereo(str(out), options=opts)
    t_photo = time.perf_counter() - t
    opts.geom_consistency = True
    opts.filter = True
    geo = need if args.geo_views == "all" else [int(v) for v in args.geo_views.split(",")]
    lines = []
    for v in geo:
        lines.append(files[v])
        lines.append(", ".join(files[s] for s in nb[str(v)]) if nb else "__all__")
    (out / "stereo" / "patch-match.cfg").write_text("\n".join(lines) + "\n")
    t = time.perf_counter()
    if not args.photometric_only:
        # the photometric maps exist, so this pass computes the geometric ones only
        pycolmap.patch_match_stereo(str(out), options=opts)
    t_geo = time.perf_counter() - t
    res = {"views": [scene.names[v] for v in views], "n_problems": len(need), "undistort_s": t_und,
           "photometric_s": t_photo, "geometric_s": t_geo, "photometric_s_per_view": t_photo / len(need),
           "geometric_s_per_view": t_geo / len(geo), "geometric_views": [scene.names[v] for v in geo],
           "depth_min": opts.depth_min, "depth_max": opts.depth_max,
           "version": getattr(pycolmap, "__version__", "?")}
    print(json.dumps(res), flush=True)
    Path(args.json).write_text(json.dumps(res))


def colmap_evaluate(scene, ws: Path, views, *, device):
    """Valid / geometrically consistent pixels per view from COLMAP's depth maps."""
    from app.io.depth_io import read_colmap_array

    files = scene.meta["files"]
    dm = ws / "dense" / "stereo" / "depth_maps"
    rows, geo_maps = [], []
    for v in views:
        row = {"view": scene.names[v]}
        for kind in ("photometric", "geometric"):
            p = dm / f"{files[v]}.{kind}.bin"
            if p.is_file():
                d = read_colmap_array(p, zero_is_missing=True)
                row[kind] = int(np.isfinite(d).sum())
                if kind == "geometric":
                    geo_maps.append(d)
                    row["in_bbox"] = bbox_fraction(view_points(scene.cameras[v], d), scene.bbox)
        rows.append(row)
    if len(geo_maps) == len(views) == scene.n_views:
        counts = consistency_counts(scene.cameras, geo_maps, views=views, device=device)
        for r, c in zip(rows, counts, strict=True):
            r["confirmed"] = int((c[c >= 0] >= 1).sum())
    return rows


def run_colmap(args, scene, sources, device):
    pc = Path(args.pycolmap)
    lib = str(ROOT / ".carry-mvs" / "run" / "colmap" / "lib") if not args.colmap_lib else args.colmap_lib
    env = dict(os.environ)
    cuda_lib = [p for p in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib") if Path(p).is_dir()]
    env["LD_LIBRARY_PATH"] = ":".join([lib, *cuda_lib, env.get("LD_LIBRARY_PATH", "")])
    env["PYTHONPATH"] = str(pc) + ":" + str(ROOT) + ":" + env.get("PYTHONPATH", "")
    ws = Path(args.workspace)
    cmd = [sys.executable, __file__, "colmap-worker", "--workspace", str(ws), "--views", args.colmap_views,
           "--geo-views", args.geo_views,
           "--sources", json.dumps(sources), "--json", str(ws / "colmap.json")]
    if args.photometric_only:
        cmd.append("--photometric-only")
    log("COLMAP:", " ".join(cmd[:6]), "...")
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.colmap_timeout)
    wall = time.perf_counter() - t
    tail = (r.stdout + r.stderr)[-3000:]
    if r.returncode != 0:
        log("COLMAP failed, rc", r.returncode, "\n", tail)
        return {"error": tail[-800:], "rc": r.returncode, "wall_s": wall}
    res = json.loads((ws / "colmap.json").read_text())
    views = list(range(scene.n_views)) if args.colmap_views == "all" else [int(v) for v in args.colmap_views.split(",")]
    geo = views if args.geo_views == "all" else [int(v) for v in args.geo_views.split(",")]
    res["per_view"] = colmap_evaluate(scene, ws, geo, device=device)
    res["wall_s"] = wall
    return res


# ----------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", nargs="?", default="bench", choices=["bench", "colmap", "colmap-worker", "queue"])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", default=None)
    ap.add_argument("--synthetic-size", type=int, default=640)
    ap.add_argument("--cpu-size", type=int, default=320, help="synthetic image width for the CPU comparison")
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--no-cpu", action="store_true", help="skip the CPU timing of the same view")
    ap.add_argument("--tune-only", action="store_true", help="only the tuning sweep")
    ap.add_argument("--no-synthetic", action="store_true")
    ap.add_argument("--colmap", action="store_true", help="also run COLMAP (needs --pycolmap)")
    ap.add_argument("--pycolmap", default="/tmp/pc")
    ap.add_argument("--colmap-lib", default=None)
    ap.add_argument("--colmap-views", default="all")
    ap.add_argument("--colmap-timeout", type=float, default=200)
    ap.add_argument("--photometric-only", action="store_true")
    ap.add_argument("--geo-views", default="all", help="views COLMAP computes geometric maps for")
    ap.add_argument("--workspace", default="/tmp/colmap_ws")
    ap.add_argument("--views", default="all")
    ap.add_argument("--repeat", type=int, default=3, help="queue mode: timed runs of one view alone (median)")
    ap.add_argument("--batch-sweep", default="", help="queue mode: only the scene at these batch sizes (no fusion)")
    ap.add_argument("--temple-views", default="all", help="temple views for our runs (all, or 0,1,..)")
    ap.add_argument("--sources", default=None)
    args = ap.parse_args(argv)
    if args.mode == "colmap-worker":
        return colmap_worker(args)
    dev = args.device
    out = {"device": device_name(), "host": host_description(),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}

    def save():
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1, default=str))

    if args.mode in ("queue", "colmap") and not temple_dir().is_dir():
        from mvs_cli import check_scene

        check_scene(temple_dir())  # these modes time the temple alone
    if dev != "cpu":
        bw = copy_bandwidth()
        if bw is None:
            from mvs_cli import BadInput

            raise BadInput(f"--device {dev}: no CUDA device here (--device cpu times the NumPy path)")
        out["copy_bandwidth"] = bw
        log(f"device {out['device']}; D2D copy {bw / 1e9:.0f} GB/s (read + write)")
    scene = read_scene(temple_dir()) if temple_dir().is_dir() else None
    if scene is None:
        log(f"templeSparseRing not found under {temple_dir()}: temple sections skipped")
    if args.mode == "queue" and args.batch_sweep:
        pts, pvis, _ = scene_seeds(scene)
        scene.points, scene.point_views = pts, pvis
        reconstruct(scene, views=[0], device=dev, fuse=False, views_together=1)  # compile, warm
        rows = []
        for b in [int(x) for x in args.batch_sweep.split(",")]:
            r, _ = bench_temple(scene, dev, views="all", label=f"batch {b}", fuse=False, batch_size=b)
            r.pop("per_view", None)
            r.pop("neighbors", None)
            rows.append(r)
            log(format_table([fmt_row(r)], TEMPLE_COLS))
        out["batch_sweep"] = rows
        save()
        return 0
    if args.mode == "queue":
        out["queue"] = bench_queue(scene, dev, repeat=args.repeat)
        save()
        return 0
    if args.mode == "colmap":
        pts, pvis, _ = scene_seeds(scene)
        src = {str(v): select_views(scene.cameras, pts, pvis, v, max_neighbors=8, min_views=8)
               for v in range(scene.n_views)}
        out["colmap"] = run_colmap(args, scene, src, dev)
        log(json.dumps(out["colmap"], indent=1, default=str)[:4000])
        save()
        return 0

    # --- temple, defaults, all views together (the headline numbers) -------------------
    if args.tune_only:
        args.tune, args.no_synthetic = True, True
    if scene is not None:
        t = time.perf_counter()
        pts, pvis, _ = scene_seeds(scene)
        out["temple_seeds"] = {"points": len(pts), "s": time.perf_counter() - t}
        log(f"temple: {len(pts)} SIFT seed points in {out['temple_seeds']['s']:.2f} s (reused by every run)")
        scene.points, scene.point_views = pts, pvis
    if scene is not None and not args.tune_only:
        reconstruct(scene, views=[0], device=dev, fuse=False)  # warm: compile, caches
        r, res = bench_temple(scene, dev, views=args.temple_views, label="defaults, views together")
        out["temple"] = r
        save()
        log(format_table([fmt_row(r)], TEMPLE_COLS))
        log("per view:", [(p["view"], p["samples"], p["confirmed"], round(p["in_bbox"], 3)) for p in r["per_view"]])
        log(f"window samples/s {r['samples_per_s']:.3g}, texture bytes/s {r['bytes_per_s'] / 1e9:.0f} GB/s")
        out["colmap_sources"] = {str(scene.names.index(k)): [scene.names.index(n) for n in nn]
                                 for k, nn in r["neighbors"].items()}
        # one view alone (a single 640 x 480 map, no other views sharing the batches)
        r1, _ = bench_temple(scene, dev, views=[0], label="view 0 alone", fuse=False, views_together=1)
        out["temple_one_view"] = r1
        log(format_table([fmt_row(r1)], TEMPLE_COLS))
        save()
    # --- synthetic ------------------------------------------------------------------------
    if not args.no_synthetic:
        s = bench_synthetic(dev, size=args.synthetic_size)
        out["synthetic"] = s
        log(format_table([fmt_row(s)], [(k, k) for k in ("device", "size", "views", "acc_0.5%", "acc_1%",
                                                         "completeness", "samples_per_view", "s_per_view",
                                                         "us_per_sample", "queue_share", "fused_points")]))
        save()
        # GPU against CPU on the same small scene and view
        rows = []
        for d in ([dev] if args.no_cpu else [dev, "cpu"]) if dev != "cpu" else ["cpu"]:
            rows.append(bench_synthetic(d, size=args.cpu_size, n_views=12, views=[0],
                                        repeat_warm=(d != "cpu")))
        out["synthetic_gpu_cpu"] = rows
        log(format_table([fmt_row(x) for x in rows], [(k, k) for k in ("device", "size", "views", "acc_1%",
                                                                       "completeness", "samples_per_view",
                                                                       "grow_s", "us_per_sample")]))
        if len(rows) == 2:
            out["cpu_over_gpu"] = rows[1]["grow_s"] / max(rows[0]["grow_s"], 1e-9)
            log(f"CPU / GPU time on the same view: {out['cpu_over_gpu']:.1f}x")
        save()
    # --- tuning -------------------------------------------------------------------------
    if args.tune and scene is not None:
        if dev != "cpu" and args.tune_only:
            reconstruct(scene, views=[0], device=dev, fuse=False)  # warm
        grid = [("batch 65536", {"batch_size": 65536}), ("batch 4096", {"batch_size": 4096}),
                ("ncc 0.7", {"ncc_accept": 0.7}),
                ("fuse 3 views", {"fuse_min_views": 3}), ("window 7", {"window": 7}),
                ("ncc 0.5", {"ncc_accept": 0.5}), ("min std 0.04", {"optimize_params": OptimizeParams(min_ref_std=0.04)}),
                ("min std 0.02", {"optimize_params": OptimizeParams(min_ref_std=0.02)}),
                ("min views 3", {"min_views": 3}), ("neighbors 6", {"neighbors": 6}),
                ("drop from 0", {"optimize_params": OptimizeParams(drop_from=0)}),
                ("drop from 5", {"optimize_params": OptimizeParams(drop_from=5)}),
                ("attempts 1", {"max_attempts": 1}), ("views together 4", {"views_together": 4}),
                ("window 3", {"window": 3})]
        rows = []
        for label, kw in grid:
            try:
                r, _ = bench_temple(scene, dev, views=args.temple_views, label=label, **kw)
            except Exception as exc:  # noqa: BLE001 - one failing setting must not lose the rest
                log(label, "failed:", exc)
                continue
            r.pop("per_view", None)
            r.pop("neighbors", None)
            rows.append(r)
            log(format_table([fmt_row(r)], TEMPLE_COLS))
            out["tuning"] = rows
            save()
    # --- COLMAP ---------------------------------------------------------------------------
    if args.colmap and scene is not None:
        out["colmap"] = run_colmap(args, scene, out["colmap_sources"], dev)
        log(json.dumps({k: v for k, v in out["colmap"].items() if k != "per_view"}, default=str))
        for row in out["colmap"].get("per_view", []):
            log(row)
        save()
    return 0


if __name__ == "__main__":
    from mvs_cli import run

    sys.exit(run(main))
