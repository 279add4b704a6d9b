"""Optical-flow benchmark: ours (block matching, Lucas-Kanade, TV-L1 refinement; GPU and CPU)
against OpenCV (DIS ultrafast / fast / medium, Farneback, all the host's cores), scikit-image
(iLK, TV-L1) and cuCIM (iLK, TV-L1 on the GPU), on the same inputs in one run.

Sections (each printed as a markdown table and saved with ``--out``):

1. accuracy: endpoint error on the Middlebury training pairs (``middlebury-flow/``) and on a
   synthetic set (a natural image warped by translation / rotation / zoom / vortex fields of
   30 px, 480 x 640), with each method's time on the pair;
2. confidence: sparsification (AUSE, pixels) of our quality maps against forward-backward
   consistency of the same method, on the Middlebury pairs;
3. speed at 640x480, 1280x720 and 1920x1080: end to end from device arrays, kernels only (the
   pipeline captured in a CUDA graph and replayed), peak device memory, pairs per second;
4. hardware: device-to-device copy bandwidth, and the TV-L1 / LK iterations' achieved
   bandwidth at 1080p against it;
5. ``--sweep``: a small grid over the old refinement's parameters (accuracy and 1080p time).

Issue 25 (the large-motion default, ``search``):

* ``--accuracy``: AEE per pair and time of every method on the shared pairs (FlyingChairs 0-5 +
  the Middlebury four) and on our own large-motion set (``load_large``: 48-200 px warps and
  moving objects), with the mean and the worst pair as ratios to DIS medium; DIS ultrafast /
  fast / medium, Farneback, OpenCV-contrib DeepFlow / PCAFlow / SparseToDense / RLOF (where
  ``cv2.optflow`` exists; its 69 MB wheel does not fit the GPU host's carry), cuCIM TV-L1 (GPU);
  the quality map's AUSE against forward-backward on FlyingChairs, Middlebury and the large set;
  on a GPU, the 1080p time of the default against DIS on the host's cores.
* ``--search-sweep``: a grid of the default's parameters scored on both sets at once (ratios
  to DIS medium), the best timed at 1080p.

A peer that is not installed prints "n/a (not installed)". Only numpy, scipy, opencv,
scikit-image and (for the GPU) cupy are needed; cuCIM comes from a carried wheel.

Usage::

    python benchmarks/flow.py --data ../shared/data --out benchmarks/results/flow_h100
    python benchmarks/flow.py --quick            # fewer repeats, no CPU peers at 1080p
    python benchmarks/flow.py --accuracy --no-slow-peers --out benchmarks/results/flow_search_h100
    python benchmarks/flow.py --accuracy --device cpu --no-slow-peers     # the CPU path, contrib peers
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import device_name, format_table, host_description, median  # noqa: E402

MIDDLEBURY = ("Dimetrodon", "Grove2", "RubberWhale", "Venus")
SYN_KINDS = ("translation", "rotation", "zoom", "vortex")
SIZES = ((480, 640), (720, 1280), (1080, 1920))
NA = "n/a (not installed)"


def log(*a):
    print(*a, flush=True)


# ------------------------------------------------------------------------------ data
def read_flo(path):
    raw = np.fromfile(path, "<f4")
    w, h = raw[1:3].view("<i4")
    f = raw[3:].reshape(h, w, 2).copy()
    valid = (np.abs(f) < 1e9).all(-1)
    f[~valid] = 0
    return f, valid


def load_middlebury(root: Path, rgb: bool = False):
    """The shared Middlebury pairs: ``(name, frame10, frame11, flow, valid)``, the frames grey
    (OpenCV's conversion) or, ``rgb``, in RGB order."""
    import cv2

    def read(path):
        if not rgb:
            return cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        return cv2.imread(str(path))[..., ::-1].copy()

    out = []
    for s in MIDDLEBURY:
        d = root / "middlebury-flow" / s
        if not d.exists():
            continue
        gt, valid = read_flo(d / "flow10.flo")
        out.append((s, read(d / "frame10.png"), read(d / "frame11.png"), gt, valid))
    return out


def load_chairs(root: Path):
    """The shared FlyingChairs pairs (RGB, 512x384, motions up to ~100 px)."""
    import cv2

    out = []
    for i in range(6):
        d = root / "flow-large" / "flyingchairs" / f"{i:07d}"
        if not (d / "flow.flo").exists():
            continue
        a = cv2.imread(str(d / "img0.png"))[..., ::-1].copy()
        b = cv2.imread(str(d / "img1.png"))[..., ::-1].copy()
        gt, valid = read_flo(d / "flow.flo")
        out.append((f"chairs{i}", a, b, gt, valid))
    return out


def load_middlebury_rgb(root: Path):
    return load_middlebury(root, rgb=True)


def _object_pair(bg, obj, bg_shift, obj_pos, obj_shift):
    """A background translated by ``bg_shift`` and a textured object moving by ``obj_shift``
    (integer pixels, so both frames are exact copies; the object occludes what it covers)."""
    H, W = bg.shape[:2]
    bx, by = bg_shift
    pad = np.pad(bg, ((abs(by), abs(by)), (abs(bx), abs(bx))) + ((0, 0),) * (bg.ndim - 2), mode="reflect")
    img1 = pad[abs(by):abs(by) + H, abs(bx):abs(bx) + W].copy()
    # IMG2(x + f) = IMG1(x): the second frame's content at x + (bx, by) is the first's at x
    img2 = pad[abs(by) - by:abs(by) - by + H, abs(bx) - bx:abs(bx) - bx + W].copy()
    gt = np.zeros((H, W, 2), np.float32)
    gt[..., 0], gt[..., 1] = bx, by
    oh, ow = obj.shape[:2]
    (x0, y0), (ox, oy) = obj_pos, obj_shift
    img1[y0:y0 + oh, x0:x0 + ow] = obj
    img2[y0 + oy:y0 + oy + oh, x0 + ox:x0 + ox + ow] = obj
    gt[y0:y0 + oh, x0:x0 + ow] = (ox, oy)
    ys, xs = np.mgrid[0:H, 0:W]
    valid = ((xs + gt[..., 0] >= 0) & (xs + gt[..., 0] <= W - 1) & (ys + gt[..., 1] >= 0) & (ys + gt[..., 1] <= H - 1))
    return img1, img2, gt, valid


def load_large(root: Path):
    """Our own large-motion cases (20 to 200 px), made from the shared pictures and
    scikit-image's: warped by known smooth fields, and textured objects moving over a moving
    background (occlusions, motion discontinuities)."""
    import cv2

    from gpu_kernels.flow.synthetic import synthetic_pair

    to8 = lambda x: np.clip(np.rint(x * 255), 0, 255).astype(np.uint8)  # noqa: E731
    out = []
    for kind, mag, img, size in (("translation", 120.0, "coffee", (480, 640)), ("rotation", 60.0, "astronaut", (480, 640)),
                                 ("zoom", 60.0, "chelsea", (480, 640)), ("translation", 200.0, "rocket", (720, 1280))):
        p = synthetic_pair(kind, size=size, magnitude=mag, image=img)
        out.append((f"{kind[:5]}{int(mag)}{'-720p' if size[0] == 720 else ''}", to8(p.img1), to8(p.img2), p.flow, p.valid))
    g = root / "middlebury-flow"
    c = root / "flow-large" / "flyingchairs"
    if (g / "Grove2").exists() and (g / "RubberWhale").exists():
        bg = cv2.imread(str(g / "Grove2" / "frame10.png"), cv2.IMREAD_GRAYSCALE)
        obj = cv2.imread(str(g / "RubberWhale" / "frame10.png"), cv2.IMREAD_GRAYSCALE)[100:250, 150:350]
        out.append(("object150",) + _object_pair(bg, obj, (6, -3), (60, 200), (150, -40)))
    if (c / "0000003").exists() and (g / "Dimetrodon").exists():
        bg = cv2.imread(str(c / "0000003" / "img0.png"), cv2.IMREAD_GRAYSCALE)
        bg = cv2.resize(bg, (960, 720), interpolation=cv2.INTER_CUBIC)
        obj = cv2.imread(str(g / "Dimetrodon" / "frame10.png"), cv2.IMREAD_GRAYSCALE)[60:300, 100:400]
        out.append(("object200-720p",) + _object_pair(bg, obj, (-12, 4), (40, 300), (200, 60)))
    return out


def load_synthetic(size=(480, 640)):
    from gpu_kernels.flow.synthetic import synthetic_pair

    out = []
    for k in SYN_KINDS:
        p = synthetic_pair(k, size=size, magnitude=30.0, image="coffee")
        to8 = lambda x: np.clip(np.rint(x * 255), 0, 255).astype(np.uint8)  # noqa: E731
        out.append((f"syn-{k}", to8(p.img1), to8(p.img2), p.flow, p.valid))
    return out


def aee(u, v, gt, valid):
    e = np.hypot(np.asarray(u, np.float64) - gt[..., 0], np.asarray(v, np.float64) - gt[..., 1])
    return float(e[valid].mean())


# ------------------------------------------------------------------------------ timing
def _cp():
    import cupy as cp

    return cp


def gpu_time(fn, repeat=5, warmup=1):
    cp = _cp()
    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    ts = []
    for _ in range(repeat):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
    return median(ts)


def cpu_time(fn, repeat=3, warmup=1):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return median(ts)


class PeakMemory:
    """Peak bytes held in CuPy's pool during a call (above what was held before)."""

    def __enter__(self):
        cp = _cp()
        self.pool = cp.get_default_memory_pool()
        self.base = self.pool.used_bytes()
        self.peak = self.base

        def malloc(n):
            p = self.pool.malloc(n)
            self.peak = max(self.peak, self.pool.used_bytes())
            return p

        cp.cuda.set_allocator(malloc)
        return self

    def __exit__(self, *exc):
        _cp().cuda.set_allocator(self.pool.malloc)

    @property
    def bytes(self):
        return self.peak - self.base


def graph_time(fn, repeat=20):
    """Kernels only: capture fn() into a CUDA graph and time its replays.

    fn runs twice on the capturing stream first, so that CuPy's pool (per stream) holds every
    block the capture asks for and no cudaMalloc happens while capturing.
    """
    cp = _cp()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        fn()
        fn()
        s.synchronize()
        s.begin_capture()
        try:
            fn()
        finally:
            g = s.end_capture()
        g.launch(stream=s)
        s.synchronize()
        ts = []
        for _ in range(repeat):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(s)
            g.launch(stream=s)
            b.record(s)
            b.synchronize()
            ts.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return median(ts)


# ------------------------------------------------------------------------------ methods
def ours(method, device, **params):
    from gpu_kernels.flow import optical_flow

    def run(a, b):
        r = optical_flow(a, b, method=method, device=device, **params)
        return r.u, r.v, r.quality

    return run


def ours_core(method, be, shape, **params):
    """The method's core on prepared grey float32 device images (what the graph captures)."""
    from gpu_kernels.flow.blockmatch import (
        DEFAULT_BLOCK,
        DEFAULT_BM_LEVELS,
        DEFAULT_RADIUS,
        _bm_core,
        bm_levels,
    )
    from gpu_kernels.flow.lucas_kanade import (
        DEFAULT_EIG_MIN,
        DEFAULT_EIG_TAU,
        DEFAULT_LK_ITERS,
        DEFAULT_LK_LEVELS,
        DEFAULT_LK_SIGMA,
        DEFAULT_WINDOW,
        _lk_core,
    )
    from gpu_kernels.flow.refine import (
        DEFAULT_LAMBDA,
        DEFAULT_TAU,
        DEFAULT_THETA,
        DEFAULT_TV_ITERS,
        DEFAULT_TV_LEVELS,
        DEFAULT_WARPS,
        _tv_core,
    )

    if method == "bm":
        B = params.get("block", DEFAULT_BLOCK)
        L = bm_levels(shape, params.get("levels", DEFAULT_BM_LEVELS), B)
        return lambda g1, g2: _bm_core(be, g1, g2, None, levels=L, block=B, radius=params.get("radius", DEFAULT_RADIUS),
                                       flat_sigma=0.01, median=True)
    if method == "lk":
        return lambda g1, g2: _lk_core(be, g1, g2, None, levels=params.get("levels", DEFAULT_LK_LEVELS),
                                       window=params.get("window", DEFAULT_WINDOW),
                                       iters=params.get("iters", DEFAULT_LK_ITERS), sigma=DEFAULT_LK_SIGMA,
                                       eig_min=DEFAULT_EIG_MIN, eig_tau=DEFAULT_EIG_TAU)
    return lambda g1, g2: _tv_core(be, g1, g2, None, levels=params.get("levels", DEFAULT_TV_LEVELS),
                                   warps=params.get("warps", DEFAULT_WARPS), iters=params.get("iters", DEFAULT_TV_ITERS),
                                   lam=params.get("lam", DEFAULT_LAMBDA), theta=DEFAULT_THETA, tau=DEFAULT_TAU,
                                   median=params.get("median", True))


def peers():
    """name -> (kind, factory(a, b) -> (u, v)) for the peers that import; else the reason."""
    out = {}
    try:
        import cv2

        cv2.setNumThreads(os.cpu_count() or 1)
        for name, preset in (("DIS ultrafast", "ULTRAFAST"), ("DIS fast", "FAST"), ("DIS medium", "MEDIUM")):
            def dis(a, b, _p=getattr(cv2, f"DISOPTICAL_FLOW_PRESET_{preset}")):
                f = cv2.DISOpticalFlow_create(_p).calc(_gray8(a), _gray8(b), None)
                return f[..., 0], f[..., 1]
            out[name] = ("cpu", dis)

        def farneback(a, b):
            f = cv2.calcOpticalFlowFarneback(_gray8(a), _gray8(b), None, 0.5, 5, 15, 3, 5, 1.2, 0)
            return f[..., 0], f[..., 1]
        out["Farneback"] = ("cpu", farneback)
    except Exception as exc:  # noqa: BLE001
        for n in ("DIS ultrafast", "DIS fast", "DIS medium", "Farneback"):
            out[n] = f"n/a ({type(exc).__name__})"
    out.update(contrib_peers())
    try:
        from skimage.registration import optical_flow_ilk, optical_flow_tvl1

        def sk(fn):
            def run(a, b):
                v, u = fn(_gray8(a).astype(np.float32) / 255, _gray8(b).astype(np.float32) / 255)
                return u, v
            return run
        out["skimage iLK"] = ("cpu", sk(optical_flow_ilk))
        out["skimage TV-L1"] = ("cpu", sk(optical_flow_tvl1))
    except Exception:  # noqa: BLE001
        out["skimage iLK"] = out["skimage TV-L1"] = NA
    try:
        import cupy as cp
        from cucim.skimage.registration import optical_flow_ilk as cilk
        from cucim.skimage.registration import optical_flow_tvl1 as ctvl1

        def cu(fn):
            def run(a, b):
                a = cp.asarray(_gray8(a), dtype=cp.float32) / 255 if a.dtype == np.uint8 else a
                b = cp.asarray(_gray8(b), dtype=cp.float32) / 255 if b.dtype == np.uint8 else b
                v, u = fn(a, b)
                return u, v
            return run
        out["cuCIM iLK"] = ("gpu", cu(cilk))
        out["cuCIM TV-L1"] = ("gpu", cu(ctvl1))
    except Exception as exc:  # noqa: BLE001
        why = NA if isinstance(exc, ImportError) else f"n/a ({type(exc).__name__}: {exc})"[:80]
        out["cuCIM iLK"] = out["cuCIM TV-L1"] = why
    return out


CONTRIB = ("OpenCV DeepFlow", "OpenCV PCAFlow", "OpenCV SparseToDense", "OpenCV RLOF")


def _gray8(a):
    import cv2

    a = _host(a)
    return cv2.cvtColor(a, cv2.COLOR_RGB2GRAY) if a.ndim == 3 else a


def contrib_peers():
    """OpenCV-contrib's dense flows (``cv2.optflow``), where opencv-contrib is installed."""
    try:
        import cv2

        of = cv2.optflow
    except Exception:  # noqa: BLE001
        why = ("n/a (cv2.optflow missing: opencv-contrib-python-headless is not installed; its 69 MB wheel "
               "is over the GPU host's 64 MiB carry, so these peers run on the CPU host)")
        return dict.fromkeys(CONTRIB, why)

    def mk(factory, color=False):
        def run(a, b):
            if color:
                x, y = _host(a), _host(b)
                x = x if x.ndim == 3 else np.dstack([x] * 3)
                y = y if y.ndim == 3 else np.dstack([y] * 3)
                f = factory(x, y)
            else:
                f = factory(_gray8(a), _gray8(b))
            return f[..., 0], f[..., 1]
        return run

    return {
        "OpenCV DeepFlow": ("cpu", mk(lambda a, b: of.createOptFlow_DeepFlow().calc(a, b, None))),
        "OpenCV PCAFlow": ("cpu", mk(lambda a, b: of.createOptFlow_PCAFlow().calc(a, b, None))),
        "OpenCV SparseToDense": ("cpu", mk(lambda a, b: of.calcOpticalFlowSparseToDense(a, b))),
        "OpenCV RLOF": ("cpu", mk(lambda a, b: of.calcOpticalFlowDenseRLOF(a, b, None), color=True)),
    }


def _host(x):
    return x.get() if hasattr(x, "get") else np.asarray(x)


# ------------------------------------------------------------------------------ sections
def accuracy(datasets, methods, results, *, gpu_repeat=3):
    rows = []
    for name, (kind, fn) in methods.items():
        row = {"method": name}
        errs = {}
        for ds, a, b, gt, valid in datasets:
            try:
                if kind == "gpu":
                    cp = _cp()
                    da, db = cp.asarray(a), cp.asarray(b)
                    res = fn(da, db)
                    rep = gpu_repeat if name.startswith("ours") else 1
                    t = gpu_time(lambda: fn(da, db), repeat=rep, warmup=0)  # noqa: B023
                else:
                    t0 = time.perf_counter()
                    res = fn(a, b)
                    t = time.perf_counter() - t0
                u, v = _host(res[0]), _host(res[1])
                errs[ds] = aee(u, v, gt, valid)
                row[ds] = f"{errs[ds]:.3f}"
                row[ds + " ms"] = round(1e3 * t, 1)
            except Exception as exc:  # noqa: BLE001
                row[ds] = f"error: {type(exc).__name__}"
                log(f"  {name} on {ds}: {exc}")
        mb = [errs[d] for d in MIDDLEBURY if d in errs]
        sy = [errs[d] for d in errs if d.startswith("syn-")]
        row["Middlebury avg"] = f"{np.mean(mb):.3f}" if mb else "-"
        row["synthetic avg"] = f"{np.mean(sy):.3f}" if sy else "-"
        results.setdefault("accuracy", {})[name] = {"aee": errs, "row": row}
        log(f"  {name}: Middlebury {row['Middlebury avg']}  synthetic {row['synthetic avg']}")
        rows.append(row)
    return rows


def run_timed(name, kind, fn, a, b, *, gpu_repeat=3):
    """(u, v, seconds) of one method on one pair (GPU: CUDA events, median of gpu_repeat)."""
    if kind == "gpu":
        cp = _cp()
        da, db = cp.asarray(a), cp.asarray(b)
        res = fn(da, db)
        t = gpu_time(lambda: fn(da, db), repeat=gpu_repeat if name.startswith("ours") else 1, warmup=0)
    else:
        t0 = time.perf_counter()
        res = fn(a, b)
        t = time.perf_counter() - t0
    return _host(res[0]), _host(res[1]), t


def accuracy_sets(sets, methods, results, *, ref="DIS medium"):
    """Per pair AEE and time of every method on each named set; mean, and ratios to ``ref``.

    ``sets``: {set name: [(pair, img1, img2, gt, valid), ...]}. Returns markdown lines.
    """
    md = []
    for set_name, data in sets.items():
        if not data:
            continue
        errs, times = {}, {}
        for name, spec in methods.items():
            if isinstance(spec, str):
                continue
            kind, fn = spec
            errs[name], times[name] = {}, {}
            if set_name.startswith("large") and name.startswith(("cuCIM", "skimage")):
                continue        # seconds a pair: scored on the shared pairs only
            for ds, a, b, gt, valid in data:
                try:
                    u, v, t = run_timed(name, kind, fn, a, b)
                    errs[name][ds] = aee(u, v, gt, valid)
                    times[name][ds] = t
                except Exception as exc:  # noqa: BLE001
                    log(f"  {name} on {ds}: {type(exc).__name__}: {exc}")
            e = errs[name]
            log(f"  [{set_name}] {name}: " + " ".join(f"{k} {x:.3f}" for k, x in e.items()))
        pairs = [d[0] for d in data]
        refe = errs.get(ref, {})
        rows = []
        for name, spec in methods.items():
            row = {"method": name}
            if isinstance(spec, str):
                row["mean"] = spec
                rows.append(row)
                continue
            e, t = errs.get(name, {}), times.get(name, {})
            if not e and set_name.startswith("large"):
                row["mean"] = "not run on this set (seconds a pair)"
                rows.append(row)
                continue
            for d in pairs:
                row[d] = f"{e[d]:.3f}" if d in e else "error"
            if len(e) == len(pairs):
                m = float(np.mean([e[d] for d in pairs]))
                row["mean"] = f"{m:.3f}"
                if len(refe) == len(pairs):
                    row["x ref"] = f"{m / np.mean([refe[d] for d in pairs]):.2f}"
                    worst = max(pairs, key=lambda d: e[d] / max(refe[d], 1e-9))  # noqa: B023
                    row["worst pair"] = f"{e[worst] / max(refe[worst], 1e-9):.2f} ({worst})"
            if t:
                row["ms/pair"] = f"{1e3 * np.mean(list(t.values())):.1f}"
                row["where"] = "GPU" if spec[0] == "gpu" else "CPU"
            rows.append(row)
        results.setdefault("accuracy_sets", {})[set_name] = {"aee": errs, "seconds": times}
        cols = [("method", "method"), ("mean", "mean AEE"), ("x ref", f"mean / {ref}"),
                ("worst pair", f"worst pair / {ref}"), ("ms/pair", "ms/pair"), ("where", "on")]
        cols += [(d, d) for d in pairs]
        md += [f"### {set_name}: endpoint error (AEE, px) per pair, each method's mean time per pair", "",
               format_table(rows, cols), ""]
    return md


def confidence_sets(sets, device, results, methods=("search",)):
    """AUSE of our quality map against forward-backward consistency, per set."""
    from gpu_kernels.flow import forward_backward_confidence, optical_flow, sparsification
    from gpu_kernels.flow.metrics import endpoint_error

    rows = []
    for set_name, data in sets.items():
        for method in methods:
            q_all, fb_all = [], []
            for _ds, a, b, gt, valid in data:
                f = optical_flow(a, b, method=method, device=device).to_numpy()
                bk = optical_flow(b, a, method=method, device=device).to_numpy()
                e = endpoint_error(f.u, f.v, gt, valid)
                q_all.append(sparsification(e, f.quality)["ause"])
                fb_all.append(sparsification(e, forward_backward_confidence(f.u, f.v, bk.u, bk.v))["ause"])
            rows.append({"set": set_name, "method": method, "quality": f"{np.mean(q_all):.3f}",
                         "fb": f"{np.mean(fb_all):.3f}", "better": "yes" if np.mean(q_all) < np.mean(fb_all) else "no"})
            results.setdefault("confidence_sets", {})[f"{set_name}/{method}"] = {"quality": q_all, "fb": fb_all}
            log(f"  [{set_name}] {method}: AUSE quality {np.mean(q_all):.3f} vs FB {np.mean(fb_all):.3f}")
    return ["### Sparsification (AUSE, px; lower is better): our quality map against forward-backward", "",
            format_table(rows, [("set", "set"), ("method", "method"), ("quality", "AUSE quality map"),
                                ("fb", "AUSE forward-backward"), ("better", "quality map better")]), ""]


def confidence(datasets, device, results):
    from gpu_kernels.flow import forward_backward_confidence, optical_flow, sparsification
    from gpu_kernels.flow.metrics import endpoint_error

    rows = []
    for method in ("refine", "bm", "lk"):
        row = {"method": method}
        q_all, fb_all = [], []
        for ds, a, b, gt, valid in datasets:
            f = optical_flow(a, b, method=method, device=device).to_numpy()
            bk = optical_flow(b, a, method=method, device=device).to_numpy()
            e = endpoint_error(f.u, f.v, gt, valid)
            sq = sparsification(e, f.quality)["ause"]
            sf = sparsification(e, forward_backward_confidence(f.u, f.v, bk.u, bk.v))["ause"]
            q_all.append(sq)
            fb_all.append(sf)
            row[ds] = f"{sq:.3f} / {sf:.3f}"
        row["avg (ours / FB)"] = f"{np.mean(q_all):.3f} / {np.mean(fb_all):.3f}"
        row["ours better"] = "yes" if np.mean(q_all) < np.mean(fb_all) else "no"
        results.setdefault("confidence", {})[method] = {"quality": q_all, "fb": fb_all}
        log(f"  {method}: AUSE quality {np.mean(q_all):.3f} vs forward-backward {np.mean(fb_all):.3f}")
        rows.append(row)
    return rows


def speed(base_pair, methods, device, results, *, quick=False, cpu_peers_max=(480, 640)):
    import cv2

    rows = []
    a0, b0 = base_pair
    for H, W in SIZES:
        a = cv2.resize(a0, (W, H), interpolation=cv2.INTER_LINEAR)
        b = cv2.resize(b0, (W, H), interpolation=cv2.INTER_LINEAR)
        for name, spec in methods.items():
            row = {"size": f"{W}x{H}", "method": name}
            if isinstance(spec, str):
                row["e2e ms"] = spec
                rows.append(row)
                continue
            kind, fn = spec
            try:
                if kind == "gpu":
                    cp = _cp()
                    da, db = cp.asarray(a), cp.asarray(b)
                    fn(da, db)
                    with PeakMemory() as pm:
                        fn(da, db)
                        cp.cuda.get_current_stream().synchronize()
                    slow = name.startswith("cuCIM")
                    t = gpu_time(lambda: fn(da, db), repeat=2 if slow else (3 if quick else 7),  # noqa: B023
                                 warmup=0 if slow else 1)
                    row["e2e ms"] = round(1e3 * t, 2)
                    row["pairs/s"] = round(1 / t, 1)
                    row["peak MiB"] = round(pm.bytes / 2**20, 1)
                    if name.startswith("ours"):
                        from gpu_kernels.flow import _plan

                        saved = _plan.ENABLED
                        _plan.ENABLED = not saved
                        try:
                            tp = gpu_time(lambda: fn(da, db), repeat=3 if quick else 7)  # noqa: B023
                        finally:
                            _plan.ENABLED = saved
                        row["plan ms" if not saved else "plain ms"] = round(1e3 * tp, 2)
                    core = methods_core.get(name)
                    if core is not None:
                        from gpu_kernels.backend import get_backend
                        from gpu_kernels.ops.color import _gray

                        be = get_backend(device)
                        g1, g2 = _gray(be, da), _gray(be, db)
                        cfn = core(be, (H, W))
                        try:
                            tk = graph_time(lambda: cfn(g1, g2), repeat=5 if quick else 20)  # noqa: B023
                            row["kernels ms"] = round(1e3 * tk, 3)
                        except Exception as exc:  # noqa: BLE001
                            row["kernels ms"] = f"n/a ({type(exc).__name__})"
                            log(f"  graph capture of {name}: {exc}")
                else:
                    if (H, W) > cpu_peers_max and name.startswith(("skimage", "ours CPU")):
                        row["e2e ms"] = "skipped (slow)"
                        rows.append(row)
                        continue
                    if quick and (H, W) != SIZES[0] and name.startswith(("skimage", "ours CPU")):
                        row["e2e ms"] = "skipped (quick)"
                        rows.append(row)
                        continue
                    t = cpu_time(lambda: fn(a, b), repeat=1 if name.startswith(("skimage", "ours CPU")) else 3,  # noqa: B023
                                 warmup=0 if name.startswith(("skimage", "ours CPU")) else 1)
                    row["e2e ms"] = round(1e3 * t, 2)
                    row["pairs/s"] = round(1 / t, 1)
            except Exception as exc:  # noqa: BLE001
                row["e2e ms"] = f"error: {type(exc).__name__}"
                log(f"  {name} at {W}x{H}: {exc}")
                traceback.print_exc()
            rows.append(row)
            log(f"  {W}x{H} {name}: {row.get('e2e ms')} ms e2e, {row.get('kernels ms', '-')} ms kernels, "
                f"{row.get('peak MiB', '-')} MiB")
    results["speed"] = rows
    return rows


methods_core: dict = {}


def hardware(device, results):
    """Copy bandwidth and the iterations' achieved bandwidth at 1080p."""
    cp = _cp()
    from gpu_kernels.backend import get_backend
    from gpu_kernels.ops import _gpu

    be = get_backend(device)
    rows = []
    n = 256 * 2**20
    src = cp.ones(n, cp.float32)
    dst = cp.empty_like(src)
    t = gpu_time(lambda: dst.__setitem__(Ellipsis, src), repeat=10)
    copy_bw = 2 * n * 4 / t
    rows.append({"what": "device-to-device copy (1 GiB, read + write)", "GB/s": round(copy_bw / 1e9, 1),
                 "of copy": "100%"})
    H, W = 1080, 1920
    N = H * W
    rng = cp.random.default_rng(0)
    u, v = (rng.random((H, W), dtype=cp.float32) for _ in range(2))
    p = cp.zeros((4, H, W), cp.float32)
    gxy = rng.random((2, H, W), dtype=cp.float32) * 0.1
    rc = rng.random((H, W), dtype=cp.float32) * 0.01
    kp = _gpu.kernel(be, "flow_tvl1.cu", "tv_primal")
    kd = _gpu.kernel(be, "flow_tvl1.cu", "tv_dual")
    grid = _gpu.grid1d(N)

    def tv10():
        for _ in range(10):
            kp(grid, (256,), (u, v, p, gxy, rc, _gpu.f32(30), _gpu.f32(0.3), _gpu.i32(H), _gpu.i32(W)))
            kd(grid, (256,), (u, v, p, _gpu.f32(0.25 / 0.3), _gpu.i32(H), _gpu.i32(W)))

    t = gpu_time(tv10, repeat=5) / 10
    # primal reads u, v, p(4), gx, gy, rc, writes u, v: 11 floats; dual reads u, v, p(4), writes p(4): 10
    bw = 21 * 4 * N / t
    rows.append({"what": "TV-L1 iteration (primal + dual) at 1080p", "us": round(1e6 * t, 1),
                 "GB/s": round(bw / 1e9, 1), "of copy": f"{100 * bw / copy_bw:.0f}%"})
    I1 = rng.random((H, W), dtype=cp.float32)
    grad = rng.random((2, H, W), dtype=cp.float32)
    bb = cp.empty((2, H, W), cp.float32)
    kr = _gpu.kernel(be, "flow_lk.cu", "lk_residual")
    t = gpu_time(lambda: kr(grid, (256,), (I1, I1, u, v, grad, I1, _gpu.i32(0), bb, _gpu.i32(H), _gpu.i32(W))), repeat=10)
    bw = 9 * 4 * N / t     # reads I1, I2 (one sample), u, v, grad(2); writes b(2)
    rows.append({"what": "LK residual at 1080p", "us": round(1e6 * t, 1), "GB/s": round(bw / 1e9, 1),
                 "of copy": f"{100 * bw / copy_bw:.0f}%"})
    from gpu_kernels.flow.blockmatch import _level_gpu

    I2 = rng.random((H, W), dtype=cp.float32)
    t = gpu_time(lambda: _level_gpu(be, I1, I2, None, 8, 4, None, 0.01), repeat=5)
    nblk = (W // 8) * (H // 8)
    macs = nblk * 121 * 64
    rows.append({"what": "BM level at 1080p (B 8, R 4: blocks, window stats, search)", "us": round(1e6 * t, 1),
                 "GMAC/s": round(macs / t / 1e9, 1), "of copy": "-"})
    results["hardware"] = rows
    results["copy_bw"] = copy_bw
    return rows


def sweep(datasets, device, base_pair, results):
    """Default method (refine): accuracy and 1080p time over a small grid."""
    import cv2

    from gpu_kernels.flow import optical_flow

    cp = _cp()
    a = cv2.resize(base_pair[0], (1920, 1080))
    b = cv2.resize(base_pair[1], (1920, 1080))
    da, db = cp.asarray(a), cp.asarray(b)
    grid = []
    for warps in (3, 5):
        for iters in (5, 10, 20):
            for med in (5, 3):
                grid.append(dict(warps=warps, iters=iters, median=med))
    grid += [dict(warps=5, iters=20, lam=50.0), dict(warps=5, iters=20, lam=150.0), dict(levels=4, warps=5, iters=10),
             dict(seed="bm", warps=5, iters=20), dict(seed="lk", warps=5, iters=20),
             dict(seed="bm", levels=3, warps=5, iters=20)]
    rows = []
    for cfg in grid:
        try:
            errs = {}
            for ds, x, y, gt, valid in datasets:
                r = optical_flow(x, y, method="refine", device=device, **cfg)
                errs[ds] = aee(_host(r.u), _host(r.v), gt, valid)
            t = gpu_time(lambda: optical_flow(da, db, method="refine", device=device, **cfg), repeat=3)  # noqa: B023
            mb = np.mean([errs[d] for d in MIDDLEBURY if d in errs])
            sy = np.mean([errs[d] for d in errs if d.startswith("syn-")])
            row = dict(cfg)
            row.update({"Middlebury": round(float(mb), 3), "synthetic": round(float(sy), 3),
                        "1080p ms": round(1e3 * t, 2)})
            rows.append(row)
            log(f"  {cfg}: Middlebury {mb:.3f} synthetic {sy:.3f} 1080p {1e3 * t:.1f} ms")
        except Exception as exc:  # noqa: BLE001
            log(f"  sweep {cfg}: {exc}")
    results["sweep"] = rows
    return rows


def search_grid(kind="main"):
    """Configurations of the default method (``search``) that ``--search-sweep`` scores."""
    import itertools
    import random

    if kind == "first":      # the first sweep (H100, 2026-11-25 15:28 UTC): 300 configurations
        out = []
        for fpl, radius, warps, tv_iters, lam in itertools.product(
                (1, 2, 3, 4, 9), (0, 4, 8), ((5,), (3, 5), (2, 5), (1, 3, 5), (8,)), (10, 20), (60.0, 100.0)):
            out.append(dict(finest_patch_level=fpl, radius=radius, warps=warps, tv_iters=tv_iters, lam=lam))
        random.Random(0).shuffle(out)   # a time cap then still samples the whole grid
        return out
    if kind == "main":       # the second: around the first's best, with the pre-blur
        out = []
        for blur, fpl, radius, warps, tv_iters in itertools.product(
                (0.5, 0.7), (0, 1, 2), (8, 12), ((8,), (3, 8), (2, 5, 8), (1, 4, 8), (2, 8)), (10, 20)):
            out.append(dict(blur=blur, finest_patch_level=fpl, radius=radius, warps=warps, tv_iters=tv_iters,
                            iters=32, rounds=4))
        random.Random(0).shuffle(out)
        return out
    return []


def search_variants(best):
    """One-at-a-time variations around ``best`` (the secondary parameters)."""
    out = []
    for k, vals in (("stride", (3, 6)), ("patch", (6, 12)), ("iters", (16, 64)), ("rounds", (2, 8)),
                    ("eps", (0.003, 0.03)), ("prior", (0.0, 0.3, 3.0, 10.0)), ("lam", (60.0, 150.0)),
                    ("blur", (0.3, 1.0))):
        for x in vals:
            c = dict(best)
            c[k] = x
            out.append(c)
    return out


def sweep_search(shared, large, device, results, *, out=None, grid=None, time_top=16, max_seconds=100.0,
                 max_variant_seconds=30.0):
    """Score configurations of ``search`` on the shared pairs and our large-motion set at once.

    The score of a configuration is its mean AEE over the shared pairs divided by DIS medium's
    (same pairs); configurations whose worst shared pair is over 1.1x DIS medium's, or whose
    mean on the large set is over DIS medium's, rank after the others. The best few are timed
    at 1080p (graph plans, as the default runs).
    """
    import cv2

    from gpu_kernels.flow import _plan
    from gpu_kernels.flow.search import inverse_search_flow

    cp = _cp()
    allp = shared + large
    dis = {}
    for ds, a, b, gt, valid in allp:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
        dis[ds] = aee(f[..., 0], f[..., 1], gt, valid)
    log("  DIS medium: " + " ".join(f"{k} {v:.3f}" for k, v in dis.items()))
    dev = [(ds, cp.asarray(a), cp.asarray(b), gt, valid) for ds, a, b, gt, valid in allp]
    names_s = [d[0] for d in shared]
    names_l = [d[0] for d in large]
    mean_dis_s = float(np.mean([dis[d] for d in names_s]))
    mean_dis_l = float(np.mean([dis[d] for d in names_l])) if names_l else 1.0
    saved = _plan.ENABLED
    _plan.ENABLED = False

    def score(cfg):
        e = {}
        for ds, a, b, gt, valid in dev:
            r = inverse_search_flow(a, b, device=device, **cfg)
            e[ds] = aee(_host(r.u), _host(r.v), gt, valid)
        ms = float(np.mean([e[d] for d in names_s]))
        ml = float(np.mean([e[d] for d in names_l])) if names_l else 0.0
        worst = max(e[d] / max(dis[d], 1e-9) for d in names_s)
        row = {"cfg": cfg, "aee": e, "shared": ms / mean_dis_s, "worst": worst, "large": ml / mean_dis_l,
               "shared_mean": ms, "large_mean": ml}
        row["rank"] = (0 if (worst <= 1.1 and ml <= 0.6 * mean_dis_l) else 1, ms / mean_dis_s + 0.1 * ml / mean_dis_l)
        return row

    rows = []
    t0 = time.time()
    try:
        for i, cfg in enumerate(grid if grid is not None else search_grid()):
            try:
                rows.append(score(cfg))
            except Exception as exc:  # noqa: BLE001
                log(f"  {cfg}: {type(exc).__name__}: {exc}")
            if i % 20 == 0:
                log(f"  {i} configurations, {time.time() - t0:.0f} s")
            if time.time() - t0 > max_seconds:
                log(f"  time cap: {i + 1} configurations scored")
                break
                if out:
                    Path(out).with_suffix(".sweep.json").write_text(json.dumps(rows, default=str))
        rows.sort(key=lambda r: r["rank"])
        t1 = time.time()
        if rows:
            for cfg in search_variants(rows[0]["cfg"]):
                if time.time() - t1 > max_variant_seconds:
                    break
                try:
                    rows.append(score(cfg))
                except Exception as exc:  # noqa: BLE001
                    log(f"  {cfg}: {type(exc).__name__}: {exc}")
        rows.sort(key=lambda r: r["rank"])
    finally:
        _plan.ENABLED = saved
    a = cv2.resize(shared[0][1], (1920, 1080))
    b = cv2.resize(shared[0][2], (1920, 1080))
    da, db = cp.asarray(a), cp.asarray(b)
    f = lambda: cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)  # noqa: E731
    t_dis = cpu_time(f, repeat=3)
    log(f"  DIS medium at 1080p: {1e3 * t_dis:.1f} ms")
    for r in rows[:time_top]:
        t = gpu_time(lambda: inverse_search_flow(da, db, device=device, **r["cfg"]), repeat=5)  # noqa: B023
        r["1080p ms"] = round(1e3 * t, 2)
        r["x DIS 1080p"] = round(t_dis / t, 1)
    results["search_sweep"] = {"rows": rows, "dis": dis, "dis_1080p_ms": 1e3 * t_dis}
    if out:
        Path(out).with_suffix(".sweep.json").write_text(json.dumps(results["search_sweep"], default=str))
    md_rows = []
    for r in rows[:25]:
        md_rows.append({"cfg": json.dumps(r["cfg"]), "shared": f"{r['shared']:.3f}", "worst": f"{r['worst']:.2f}",
                        "large": f"{r['large']:.3f}", "ms": r.get("1080p ms", "-")})
    return ["### Sweep of the default method (`search`): mean AEE / DIS medium's on the shared pairs, worst pair, "
            "large set", "", format_table(md_rows, [("cfg", "configuration"), ("shared", "shared / DIS"),
                                                    ("worst", "worst pair / DIS"), ("large", "large / DIS"),
                                                    ("ms", "1080p ms")]), "",
            f"{len(rows)} configurations scored; DIS medium at 1080p {1e3 * t_dis:.1f} ms (host CPU)", ""]


# ------------------------------------------------------------------------------ main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.environ.get("GPULAB_SHARED_DATA",
                                                     str(Path(__file__).resolve().parents[1] / ".." / "shared" / "data")))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=None, help="write OUT.json and OUT.md")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--sections", default="accuracy,confidence,speed,hardware")
    ap.add_argument("--no-slow-peers", action="store_true",
                    help="leave out scikit-image, Farneback and our CPU path (minutes on big images)")
    ap.add_argument("--accuracy-methods", default=None, help="comma-separated prefixes of the methods to score")
    ap.add_argument("--plans", action="store_true", help="end to end through CUDA-graph plans (gpu_kernels.flow._plan)")
    ap.add_argument("--accuracy", action="store_true",
                    help="only the accuracy tables: the shared pairs (FlyingChairs 0-5 + Middlebury) and our "
                         "large-motion set, every peer with its time, and the quality maps' AUSE on both")
    ap.add_argument("--search-sweep", action="store_true", help="score a grid of the default method's parameters")
    ap.add_argument("--no-cpu-ours", action="store_true", help="--accuracy on a GPU: leave out our CPU path")
    ap.add_argument("--no-large", action="store_true", help="--accuracy: leave out our large-motion set")
    ap.add_argument("--tune", default=None, help="issue 25 tuning: score the grids, write this JSON")
    ap.add_argument("--tune-seconds", type=float, default=60.0)
    ap.add_argument("--final", default=None, help="issue 25: the chosen default's figures, to this JSON")
    ap.add_argument("--live", default=None, help="issue 20: the staged run's edit-to-result times at 1080p, to this JSON")
    ap.add_argument("--cpu-time", default=None, help="time these configurations (JSON list) on the CPU; write --out")
    ap.add_argument("--ause", default=None,
                    help="issue 25, session 3: the default's AEE (/ DIS medium) and its quality map's AUSE against "
                         "forward-backward consistency on every pair of the three sets (--device cpu on a CPU), "
                         "to this JSON")
    args = ap.parse_args(argv)
    if args.ause:
        return ause_sets(args.data, args.ause, device=args.device)
    if args.tune:
        return tune(args.data, args.tune, max_seconds=args.tune_seconds, device=args.device,
                    smoke=args.device == "cpu")
    if args.live:
        return live_stages(args.live, args.device)
    if args.final:
        return final(args.data, args.final, device=args.device)
    if args.cpu_time:
        return cpu_times(json.loads(Path(args.cpu_time).read_text()), args.out)
    if args.accuracy or args.search_sweep:
        return main_accuracy(args)
    t_start = time.time()
    results = {"device": device_name(), "host": host_description(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    md = [f"Device: {results['device']}; host: {results['host']}; {results['date']}", "",
          f"Command: `{results['command']}`", ""]
    gpu = args.device != "cpu"
    if args.plans:
        from gpu_kernels.flow import _plan

        _plan.ENABLED = True
    log(md[0])
    mb = load_middlebury(Path(args.data))
    log(f"Middlebury pairs: {[d[0] for d in mb]} (from {args.data})")
    syn = load_synthetic()
    datasets = mb + syn
    pe = peers()
    methods = {}
    if gpu:
        methods["ours refine (GPU)"] = ("gpu", ours("refine", args.device))
        methods["ours BM (GPU)"] = ("gpu", ours("bm", args.device))
        methods["ours LK (GPU)"] = ("gpu", ours("lk", args.device))
        methods_core.update({"ours refine (GPU)": lambda be, s: ours_core("refine", be, s),
                             "ours BM (GPU)": lambda be, s: ours_core("bm", be, s),
                             "ours LK (GPU)": lambda be, s: ours_core("lk", be, s)})
    for name in ("DIS ultrafast", "DIS fast", "DIS medium", "Farneback", "cuCIM iLK", "cuCIM TV-L1",
                 "skimage iLK", "skimage TV-L1"):
        methods[name] = pe[name]
    cpu_methods = {"ours refine (CPU)": ("cpu", ours("refine", "cpu")), "ours BM (CPU)": ("cpu", ours("bm", "cpu")),
                   "ours LK (CPU)": ("cpu", ours("lk", "cpu"))}
    if args.no_slow_peers:
        cpu_methods = {}
        for name in ("skimage iLK", "skimage TV-L1"):
            methods[name] = "skipped in this run (see the first run)"
    def save():
        if args.out:
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.with_suffix(".md").write_text("\n".join(md) + "\n")
            out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str))

    def section_accuracy():
        log("\n## accuracy")
        acc_methods = {k: v for k, v in methods.items() if not isinstance(v, str)}
        if args.accuracy_methods:
            pref = tuple(args.accuracy_methods.split(","))
            acc_methods = {k: v for k, v in acc_methods.items() if k.startswith(pref)}
        rows = accuracy(datasets, acc_methods, results)
        # ours on the CPU: one Middlebury pair (the same function: tests check GPU = CPU)
        rows += accuracy([d for d in datasets if d[0] == "Grove2"], cpu_methods, results)
        for name, spec in methods.items():
            if isinstance(spec, str):
                rows.append({"method": name, "Middlebury avg": spec})
        cols = [("method", "method"), ("Middlebury avg", "Middlebury AEE"), ("synthetic avg", "synthetic AEE")]
        cols += [(d, d) for d in MIDDLEBURY] + [(f"syn-{k}", k) for k in SYN_KINDS]
        cols += [("Grove2 ms", "Grove2 ms")]
        return ["### Endpoint error (AEE, px) and time on Grove2 (640x480)", "", format_table(rows, cols), ""]

    def section_confidence():
        log("\n## confidence")
        rows = confidence(mb, args.device, results)
        cols = [("method", "method"), ("avg (ours / FB)", "AUSE quality / FB"), ("ours better", "quality better")]
        cols += [(d, d) for d in MIDDLEBURY]
        return ["### Sparsification: area between the curve and the oracle (AUSE, px; lower is better)", "",
                format_table(rows, cols), ""]

    def section_speed():
        log("\n## speed")
        grove = next((d for d in mb if d[0] == "Grove2"), mb[0])
        smethods = dict(methods)
        smethods.update(cpu_methods)
        if args.no_slow_peers:
            smethods.pop("Farneback", None)
        rows = speed((grove[1], grove[2]), smethods, args.device, results, quick=args.quick)
        cols = [("size", "size"), ("method", "method"), ("e2e ms", "end to end ms"), ("pairs/s", "pairs/s"),
                ("kernels ms", "kernels ms"), ("plan ms", "with graph plans ms"), ("plain ms", "without plans ms"),
                ("peak MiB", "peak device MiB")]
        return ["### Speed (end to end from device arrays for GPU methods; kernels only = CUDA graph replay)", "",
                format_table(rows, cols), ""]

    def section_hardware():
        log("\n## hardware")
        rows = hardware(args.device, results)
        return ["### Achieved bandwidth", "", format_table(rows, [("what", "what"), ("us", "us"), ("GB/s", "GB/s"),
                                                                  ("GMAC/s", "GMAC/s"), ("of copy", "of copy bw")]), ""]

    def section_sweep():
        log("\n## sweep (refine)")
        grove = next((d for d in mb if d[0] == "Grove2"), mb[0])
        rows = sweep(datasets, args.device, (grove[1], grove[2]), results)
        keys = ["seed", "levels", "warps", "iters", "lam", "median", "Middlebury", "synthetic", "1080p ms"]
        return ["### Sweep of the refinement's parameters", "", format_table(rows, [(k, k) for k in keys]), ""]

    table = {"accuracy": section_accuracy, "confidence": section_confidence, "speed": section_speed,
             "hardware": section_hardware, "sweep": section_sweep}
    order = [x for x in args.sections.split(",") if x]
    if args.sweep and "sweep" not in order:
        order.append("sweep")
    for name in order:
        if name not in table or (name in ("hardware", "sweep") and not gpu) or (name == "speed" and not mb):
            continue
        try:
            md += table[name]()
        except Exception as exc:  # noqa: BLE001 - keep the other sections
            log(f"section {name} failed: {exc}")
            traceback.print_exc()
            md += [f"### {name}: failed ({type(exc).__name__}: {exc})", ""]
        if gpu:
            from gpu_kernels.flow import _plan

            results["plan_fallback"] = _plan.LAST_FALLBACK
        save()
        log("\n".join(md[-4:]))
    if gpu:
        from gpu_kernels.flow import _plan

        md += [f"Graph plans: {'every pipeline captured' if _plan.LAST_FALLBACK is None else 'fallback: ' + _plan.LAST_FALLBACK}",
               ""]
    results["elapsed_s"] = round(time.time() - t_start, 1)
    save()
    log("\n" + "\n".join(md))
    return results


def main_accuracy(args):
    """``--accuracy`` / ``--search-sweep``: the tables of issue 25."""
    t_start = time.time()
    gpu = args.device != "cpu"
    results = {"device": device_name() if gpu else "cpu", "host": host_description(),
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(sys.argv)}
    md = [f"Device: {results['device']}; host: {results['host']}; {results['date']}", "",
          f"Command: `{results['command']}`", ""]
    root = Path(args.data)
    shared = load_chairs(root) + load_middlebury_rgb(root)
    large = [] if args.no_large else load_large(root)
    log(md[0])
    log(f"shared pairs: {[d[0] for d in shared]}; large set: {[d[0] for d in large]}")

    def save():
        if args.out:
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.with_suffix(".md").write_text("\n".join(md) + "\n")
            out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str))

    if args.search_sweep and gpu:
        log("\n## sweep (search)")
        md += sweep_search(shared, large, args.device, results, out=args.out)
        save()
        log("\n".join(md[-8:]))
    if args.accuracy:
        pe = peers()
        methods = {}
        if gpu:
            methods["ours search (GPU), the default"] = ("gpu", ours("search", args.device))
            methods["ours refine (GPU)"] = ("gpu", ours("refine", args.device))
        if not (gpu and args.no_cpu_ours):
            methods["ours search (CPU)"] = ("cpu", ours("search", "cpu"))
            methods["ours refine (CPU)"] = ("cpu", ours("refine", "cpu"))
        names = ["DIS ultrafast", "DIS fast", "DIS medium", "Farneback", *CONTRIB, "cuCIM TV-L1"]
        if not args.no_slow_peers:
            names.append("skimage TV-L1")
        for name in names:
            spec = pe.get(name, NA)
            if name.startswith("cuCIM") and not gpu:
                spec = "not run (GPU peer; this run is on the CPU)"
            methods[name] = spec
        log("\n## accuracy")
        sets = {"shared pairs (FlyingChairs 0-5, Middlebury)": shared}
        if large:
            sets["large-motion set (ours: 20-200 px)"] = large
        md += accuracy_sets(sets, methods, results)
        save()
        log("\n## confidence")
        try:
            md += confidence_sets({"FlyingChairs": shared[:6], "Middlebury": shared[6:], **({"large": large} if large else {})},
                                  args.device if gpu else "cpu", results)
        except Exception as exc:  # noqa: BLE001
            log(f"confidence failed: {exc}")
            traceback.print_exc()
    if args.accuracy and gpu and shared:
        log("\n## 1080p")
        md += speed_1080(shared[0], args.device, results)
    results["elapsed_s"] = round(time.time() - t_start, 1)
    save()
    log("\n" + "\n".join(md))
    return results


def speed_1080(pair, device, results):
    """The default (search) and refine at 1080p on the GPU against DIS on the host, same run."""
    import cv2

    from gpu_kernels.flow import _plan

    cp = _cp()
    a = cv2.resize(pair[1], (1920, 1080), interpolation=cv2.INTER_LINEAR)
    b = cv2.resize(pair[2], (1920, 1080), interpolation=cv2.INTER_LINEAR)
    da, db = cp.asarray(a), cp.asarray(b)
    rows = []
    pe = peers()
    t_ref = None
    for name in ("DIS ultrafast", "DIS fast", "DIS medium"):
        _, fn = pe[name]
        t = cpu_time(lambda: fn(a, b), repeat=5)  # noqa: B023
        rows.append({"method": f"{name} ({os.cpu_count()} host cores)", "ms": round(1e3 * t, 2)})
        if name == "DIS medium":
            t_ref = t
    for m in ("search", "refine"):
        fn = ours(m, device)
        fn(da, db)
        with PeakMemory() as pm:
            fn(da, db)
            cp.cuda.get_current_stream().synchronize()
        t = gpu_time(lambda: fn(da, db), repeat=10)  # noqa: B023
        saved = _plan.ENABLED
        _plan.ENABLED = False
        try:
            tp = gpu_time(lambda: fn(da, db), repeat=5)  # noqa: B023
        finally:
            _plan.ENABLED = saved
        rows.append({"method": f"ours {m} (GPU){', the default' if m == 'search' else ''}", "ms": round(1e3 * t, 2),
                     "plain": round(1e3 * tp, 2), "peak": round(pm.bytes / 2**20, 1)})
    for r in rows:
        r["x"] = f"{t_ref / (r['ms'] / 1e3):.1f}x" if t_ref else "-"
    results["speed_1080p"] = rows
    log("  " + "; ".join(f"{r['method']} {r['ms']} ms" for r in rows))
    return ["### 1920x1080 (a FlyingChairs pair resized), end to end from device arrays; DIS on the host", "",
            format_table(rows, [("method", "method"), ("ms", "ms/pair"), ("plain", "without graph plans ms"),
                                ("peak", "peak device MiB"), ("x", "speed vs DIS medium")]), ""]



# ------------------------------------------------------------------------------ issue 25, session 2: tuning
def load_heldout():
    """A held-out synthetic set, never tuned on (made only to check that a tuned default
    generalises): scikit-image pictures that ``load_large`` does not use (camera, gravel, moon,
    retina behind; immunohistochemistry, hubble, cat, coins, clock crops in front), two
    textured objects each moving 20-110 px over a background moving up to 15 px, with noise."""
    import cv2
    from skimage import data

    def grey(name, shape):
        x = np.asarray(getattr(data, name)())
        if x.ndim == 3:
            x = cv2.cvtColor(np.ascontiguousarray(x[..., :3]), cv2.COLOR_RGB2GRAY)
        return cv2.resize(x.astype(np.uint8), (shape[1], shape[0]), interpolation=cv2.INTER_AREA)

    rng = np.random.default_rng(25)
    scenes = [("camera", (480, 640), "immunohistochemistry", "cat"), ("gravel", (384, 512), "hubble_deep_field", "coins"),
              ("moon", (480, 640), "cat", "clock"), ("retina", (384, 512), "coins", "immunohistochemistry")]
    out = []
    for k, (bname, (H, W), o1n, o2n) in enumerate(scenes):
        bg = grey(bname, (H, W))
        bshift = tuple(int(x) for x in rng.integers(-15, 16, 2))
        o1 = grey(o1n, (120, 160))
        a, b, gt, _ = _object_pair(bg, o1, bshift, (int(rng.integers(150, 300)), int(rng.integers(150, 220))),
                                   tuple(int(x) for x in rng.integers(-110, 111, 2)))
        o2 = grey(o2n, (80, 100))
        x0, y0 = int(rng.integers(70, 150)), int(rng.integers(70, 150))
        sx, sy = (int(x) for x in rng.integers(-60, 61, 2))
        a[y0:y0 + 80, x0:x0 + 100] = o2
        b[y0 + sy:y0 + sy + 80, x0 + sx:x0 + sx + 100] = o2
        gt[y0:y0 + 80, x0:x0 + 100] = (sx, sy)
        ys, xs = np.mgrid[0:H, 0:W]
        valid = (xs + gt[..., 0] >= 0) & (xs + gt[..., 0] <= W - 1) & (ys + gt[..., 1] >= 0) & (ys + gt[..., 1] <= H - 1)
        a = np.clip(a + rng.normal(0, 2, a.shape), 0, 255).astype(np.uint8)
        b = np.clip(b + rng.normal(0, 2, b.shape), 0, 255).astype(np.uint8)
        out.append((f"held{k}", a, b, gt, valid))
    return out


def live_stages(out, device="cuda"):
    """Issue 20 on the GPU without the window: the tool's staged run at 1080p (the bundled pair
    resized, as benchmarks/live.py loads it) through a StageCache, full and after single edits,
    each from the edit to the result on the host (debounce and paint are the window's)."""
    import dataclasses

    import cv2

    from app.tools import flow
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    data = flow.load(flow.samples()[0])
    size = (1920, 1080) if device != "cpu" else (320, 240)    # the CPU: a quick check of this function
    data = dataclasses.replace(data, img1=cv2.resize(data.img1, size), img2=cv2.resize(data.img2, size), gt=None,
                               mask=None)
    be = get_backend(device)
    cache = StageCache(cap_bytes=4 << 30, device_cap_bytes=8 << 30)
    rows = []

    def run(params, what):
        if be.is_gpu:
            be.xp.cuda.get_current_stream().synchronize()
        t = time.perf_counter()
        _, rep = flow.PIPELINE.execute(data, flow.PARAMS.validate(params), device=be, cache=cache, scope="live")
        dt = time.perf_counter() - t
        rows.append({"edit": what, "ms": round(1e3 * dt, 2), "ran": rep.ran,
                     "stage_ms": {k: round(1e3 * v, 2) for k, v in rep.seconds.items()}})
        log(f"  live {what}: {1e3 * dt:.1f} ms, ran {rep.ran}")

    run({}, "first full run (compiles)")
    run({"lam": 90.0}, "lam 100 -> 90 (warm-up)")
    for lam in (80.0, 70.0, 60.0):
        run({"lam": lam}, f"lam -> {lam:g} (matching + TV-L1, quality map)")
    for lam in (55.0, 50.0, 45.0):
        run({"lam": lam}, f"lam -> {lam:g} (matching + TV-L1, quality map)")
        run({"lam": lam, "quality_map": "ncc"}, "quality map fb -> ncc (last stage only)")
    run({"lam": 60.0, "patch": 12}, "patch 8 -> 12 (full run)")
    run({"lam": 60.0, "patch": 8}, "patch 12 -> 8 (all cached)")
    Path(out).write_text(json.dumps({"device": device_name() if be.is_gpu else "cpu", "size": size, "rows": rows},
                                    indent=1))
    return rows


def tune_grid(phase, best=None):
    """Phase 1: the new terms (edge-aware TV, occlusion-robust data term, integer search at more
    levels) around the committed default; phase 2: speed settings around the best of phase 1."""
    import itertools
    import random

    if phase == 1:
        out = [dict(edge=e, occ=o, radius_levels=rl, radius=r) for e, o, (rl, r) in
               itertools.product((0.0, 3.0, 6.0), (0.0, 0.04, 0.1), ((1, 8), (2, 8), (3, 8), (2, 12)))]
        random.Random(1).shuffle(out)
        return out
    out = []
    for b in best:
        for fpl, warps, tv, it in itertools.product((0, 1, 2), ((8,), (4,), (2,)), (10, 20), ((32, 4), (16, 2))):
            c = dict(b)
            c.update(finest_patch_level=fpl, warps=warps, tv_iters=tv, iters=it[0], rounds=it[1])
            out.append(c)
        for fpl, warps in itertools.product((0, 1), ((8,), (4,), (2,))):
            c = dict(b)
            c.update(finest_patch_level=fpl, warps=warps, tv_iters=10, max_pixels=160_000)
            out.append(c)
    random.Random(2).shuffle(out)
    return out


def tune(data_root, out, *, max_seconds=60.0, time_cfgs=8, device="cuda", smoke=False):
    """Score configurations of ``search`` on the shared pairs, our large set and the held-out
    set at once (GPU, no graph plans), then time the best at 1080p with each quality map."""
    import cv2

    from gpu_kernels.flow import _plan
    from gpu_kernels.flow.search import inverse_search_flow

    cp = _cp() if device != "cpu" else np
    tgpu = gpu_time if device != "cpu" else cpu_time
    root = Path(data_root)
    sets = {"shared": load_chairs(root) + load_middlebury_rgb(root), "large": load_large(root), "held": load_heldout()}
    if smoke:   # a quick check of this function on the CPU: one small pair per set, two configurations
        sets = {k: [min(v, key=lambda d: d[1].size)] for k, v in sets.items()}
    res = {"device": device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dis": {},
           "rows": []}
    allp = [p for v in sets.values() for p in v]
    for ds, a, b, gt, valid in allp:
        f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
        res["dis"][ds] = aee(f[..., 0], f[..., 1], gt, valid)
    res["sets"] = {k: [d[0] for d in v] for k, v in sets.items()}
    dev = [(ds, cp.asarray(a), cp.asarray(b), gt, valid) for ds, a, b, gt, valid in allp]
    _plan.ENABLED = False

    def score(cfg):
        e = {}
        for ds, a, b, gt, valid in dev:
            r = inverse_search_flow(a, b, device=device, quality="ncc", **cfg)
            e[ds] = aee(_host(r.u), _host(r.v), gt, valid)
        row = {"cfg": cfg, "aee": e}
        for k, names in res["sets"].items():
            row[k] = float(np.mean([e[d] for d in names]) / np.mean([res["dis"][d] for d in names]))
        row["worst"] = max(e[d] / res["dis"][d] for d in res["sets"]["shared"])
        res["rows"].append(row)
        return row

    def save():
        Path(out).write_text(json.dumps(res, default=str))

    t0 = time.time()
    score({})
    for phase in (1, 2):
        grid = tune_grid(phase, [r["cfg"] for r in sorted(res["rows"], key=lambda r: r["shared"] + 0.1 * r["large"])[:2]])
        grid = grid[:1] if smoke else grid
        t1 = time.time()
        for cfg in grid:
            if time.time() - t1 > max_seconds / 2:
                log(f"  phase {phase}: time cap")
                break
            try:
                score(cfg)
            except Exception as exc:  # noqa: BLE001
                log(f"  {cfg}: {type(exc).__name__}: {exc}")
        save()
        log(f"  phase {phase}: {len(res['rows'])} configurations, {time.time() - t0:.0f} s")
    _plan.ENABLED = True
    size = (320, 240) if smoke else (1920, 1080)
    a = cv2.resize(sets["shared"][0][1], size)
    b = cv2.resize(sets["shared"][0][2], size)
    da, db = cp.asarray(a), cp.asarray(b)
    res["dis_1080p_ms"] = 1e3 * cpu_time(
        lambda: cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None), repeat=5)
    ranked = sorted(res["rows"], key=lambda r: r["shared"] + 0.1 * r["large"])
    fast = sorted([r for r in res["rows"] if r["shared"] < 0.84], key=lambda r: (r["cfg"].get("finest_patch_level", 0),
                                                                                    r["shared"]), reverse=True)
    timed = []
    for r in ranked[:time_cfgs] + fast[:4]:
        if r in timed:
            continue
        timed.append(r)
        r["ms"] = {}
        for q, fl in (("ncc", 1), ("fb", 1), ("fb", 2)):
            t = tgpu(lambda: inverse_search_flow(da, db, device=device, quality=q, fb_level=fl, **r["cfg"]),  # noqa: B023
                     repeat=5 if not smoke else 1)
            r["ms"][f"{q}{fl}"] = round(1e3 * t, 2)
        log(f"  {r['cfg']}: shared {r['shared']:.3f} large {r['large']:.3f} held {r['held']:.3f} 1080p {r['ms']}")
        save()
    save()
    return res


def cpu_times(cfgs, out):
    """The CPU path's time at 640x480 (Grove2), wall and process seconds, per configuration (run
    under ``taskset -c 0,1`` with OMP_NUM_THREADS=2 for a 2-core figure); DIS medium alongside."""
    import cv2

    from gpu_kernels.flow.search import inverse_search_flow

    cv2.setNumThreads(2)
    root = Path(os.environ.get("GPULAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    d = root / "middlebury-flow" / "Grove2"
    a = cv2.imread(str(d / "frame10.png"))
    b = cv2.imread(str(d / "frame11.png"))
    rows = []
    t = time.perf_counter()
    for _ in range(5):
        cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
    rows.append({"cfg": "DIS medium", "wall_s": (time.perf_counter() - t) / 5})
    for cfg in cfgs:
        inverse_search_flow(a, b, device="cpu", **cfg)
        w, c = [], []
        for _ in range(2):
            t, p = time.perf_counter(), time.process_time()
            inverse_search_flow(a, b, device="cpu", **cfg)
            w.append(time.perf_counter() - t)
            c.append(time.process_time() - p)
        rows.append({"cfg": cfg, "wall_s": min(w), "cpu_s": min(c)})
        log(f"  CPU {cfg}: {min(w):.3f} s wall, {min(c):.3f} CPU-s")
        Path(out).write_text(json.dumps({"affinity": sorted(os.sched_getaffinity(0)), "rows": rows}, default=str))
    return rows


def ause_sets(data_root, out, *, device="cuda"):
    """The committed default on every pair of the shared, large and held-out sets: AEE against
    DIS medium, and the AUSE of its quality map against forward-backward consistency (a full
    backward run of the same method), per set (mean of the pairs' AUSE). Runs on the CPU too
    (a few minutes on two cores), which ``final`` cuts to one pair per set."""
    import cv2

    from gpu_kernels.flow import forward_backward_confidence, sparsification
    from gpu_kernels.flow.metrics import endpoint_error
    from gpu_kernels.flow.search import inverse_search_flow

    cp = _cp() if device != "cpu" else np
    root = Path(data_root)
    sets = {"shared": load_chairs(root) + load_middlebury_rgb(root), "large": load_large(root), "held": load_heldout()}
    res = {"device": device_name() if device != "cpu" else "cpu", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "aee": {}, "dis": {}, "ause": {}, "ause_fb": {}, "sets": {}}
    for k, data in sets.items():
        for ds, a, b, gt, valid in data:
            f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
            res["dis"][ds] = aee(f[..., 0], f[..., 1], gt, valid)
            r = inverse_search_flow(cp.asarray(a), cp.asarray(b), device=device).to_numpy()
            bk = inverse_search_flow(cp.asarray(b), cp.asarray(a), device=device).to_numpy()
            e = endpoint_error(r.u, r.v, gt, valid)
            res["aee"][ds] = aee(r.u, r.v, gt, valid)
            res["ause"][ds] = sparsification(e, r.quality)["ause"]
            res["ause_fb"][ds] = sparsification(e, forward_backward_confidence(r.u, r.v, bk.u, bk.v))["ause"]
            log(f"  {ds}: AEE {res['aee'][ds]:.3f} (DIS medium {res['dis'][ds]:.3f}), AUSE {res['ause'][ds]:.4f} "
                f"(FB {res['ause_fb'][ds]:.4f})")
            Path(out).write_text(json.dumps(res, default=str))
        names = [d[0] for d in data]
        res["sets"][k] = {"aee_vs_dis": float(np.mean([res["aee"][d] for d in names]) / np.mean([res["dis"][d] for d in names])),
                          "ause": float(np.mean([res["ause"][d] for d in names])),
                          "ause_fb": float(np.mean([res["ause_fb"][d] for d in names]))}
        log(f"  [{k}] {res['sets'][k]}")
    Path(out).write_text(json.dumps(res, default=str))
    return res


def final(data_root, out, *, variants=None, device="cuda"):
    """The chosen default on the GPU, same run: AEE on the shared pairs, our large set and the
    held-out set against DIS medium; the quality map's AUSE against forward-backward consistency
    (a full backward run of the same method) per set; 1080p time of each variant (graph plans)
    with DIS medium on the host's cores, first (the quickest part); the small-level block kernel on
    and off."""
    import cv2

    from gpu_kernels.flow import _plan, forward_backward_confidence, refine, sparsification
    from gpu_kernels.flow.metrics import endpoint_error
    from gpu_kernels.flow.search import inverse_search_flow

    cp = _cp() if device != "cpu" else np
    tgpu = gpu_time if device != "cpu" else cpu_time
    root = Path(data_root)
    sets = {"shared": load_chairs(root) + load_middlebury_rgb(root), "large": load_large(root), "held": load_heldout()}
    if device == "cpu":   # a quick check of this function: one small pair per set
        sets = {k: [min(v, key=lambda d: d[1].size)] for k, v in sets.items()}
    variants = variants or {"default": {}, "cheap backward": {"fb_warps": 2, "fb_iters": 10},
                            "cheap backward, 2 levels": {"fb_warps": 2, "fb_iters": 10, "fb_level": 2},
                            "one-pass NCC": {"quality": "ncc"}, "old default": {"edge": 0.0, "occ": 0.0, "radius_levels": 1}}
    res = {"device": device_name(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "dis": {}, "aee": {},
           "ause": {}, "ms": {}}
    size = (1920, 1080) if device != "cpu" else (320, 240)
    a = cv2.resize(sets["shared"][0][1], size)
    b = cv2.resize(sets["shared"][0][2], size)
    da, db = cp.asarray(a), cp.asarray(b)
    res["dis_1080p_ms"] = 1e3 * cpu_time(
        lambda: cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None), repeat=5)
    _plan.ENABLED = True
    for name, cfg in variants.items():
        res["ms"][name] = round(1e3 * tgpu(lambda: inverse_search_flow(da, db, device=device, **cfg), repeat=7), 2)  # noqa: B023
        log(f"  1080p {name}: {res['ms'][name]} ms (DIS medium {res['dis_1080p_ms']:.1f} ms)")
    saved = refine.SMALL_LEVEL
    refine.SMALL_LEVEL = 16384
    _plan.clear()
    res["ms"]["default, small-level block kernel on"] = round(
        1e3 * tgpu(lambda: inverse_search_flow(da, db, device=device), repeat=7), 2)
    refine.SMALL_LEVEL = saved
    _plan.clear()
    log(f"  1080p with the block kernel: {res['ms']['default, small-level block kernel on']} ms")
    Path(out).write_text(json.dumps(res, default=str))
    for data in sets.values():
        for ds, a, b, gt, valid in data:
            f = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM).calc(_gray8(a), _gray8(b), None)
            res["dis"][ds] = aee(f[..., 0], f[..., 1], gt, valid)
    for name, cfg in variants.items():
        res["aee"][name], res["ause"][name] = {}, {}
        for k, data in sets.items():
            qa, fa = [], []
            for ds, a, b, gt, valid in data:
                r = inverse_search_flow(cp.asarray(a), cp.asarray(b), device=device, **cfg).to_numpy()
                res["aee"][name][ds] = aee(r.u, r.v, gt, valid)
                e = endpoint_error(r.u, r.v, gt, valid)
                qa.append(sparsification(e, r.quality)["ause"])
                if name == "default":
                    bk = inverse_search_flow(cp.asarray(b), cp.asarray(a), device=device, **cfg).to_numpy()
                    fa.append(sparsification(e, forward_backward_confidence(r.u, r.v, bk.u, bk.v))["ause"])
            res["ause"][name][k] = float(np.mean(qa))
            if fa:
                res["ause"]["forward-backward"] = res["ause"].get("forward-backward", {})
                res["ause"]["forward-backward"][k] = float(np.mean(fa))
            m = np.mean([res["aee"][name][d[0]] for d in data]) / np.mean([res["dis"][d[0]] for d in data])
            log(f"  {name} [{k}]: AEE / DIS medium {m:.3f}, AUSE {np.mean(qa):.3f}" + (f" (FB {np.mean(fa):.3f})" if fa else ""))
        Path(out).write_text(json.dumps(res, default=str))
    Path(out).write_text(json.dumps(res, default=str))
    return res

if __name__ == "__main__":
    main()
