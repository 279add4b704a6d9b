"""Image segmentation benchmark (issue 10): speed per stage on GPU and CPU against the peers,
labelling and region features against cupyx / cuCIM / OpenCV, peak device memory, host
synchronisations, and quality on BSDS500 and synthetic images.

Parts (any combination; ``--all`` = speed, labelling, features):

``--speed``
    Our pipeline (GPU and CPU, each stage) and scikit-image's ``felzenszwalb``, ``slic``,
    ``quickshift`` on natural images from ``skimage.data`` resized to ``--sizes``.
``--labelling``
    Connected components of the same masks: our union-find (both global steps) and label
    equivalence, ``cupyx.scipy.ndimage.label``, cuCIM ``label``, OpenCV
    ``connectedComponentsWithStats`` and ``scipy.ndimage.label`` (CPU).
``--features``
    Our region features (raster runs and sort) against cuCIM ``regionprops_table`` for the
    same properties on the same labels, and against one read of the label and colour images
    at the measured copy bandwidth.
``--quality``
    BSDS500 (``$GPULAB_SHARED_DATA/bsds500`` or ``../shared/data/bsds500``) and synthetic
    images: covering, PRI, VoI, boundary recall, undersegmentation error for ours (CPU path;
    the GPU computes the same function) and the peers at a similar number of segments.
``--tune``
    A grid over the defaults on BSDS500 (CPU), printed as a table.

Peers that are missing are skipped with a note. Results go to ``--out`` (JSON + Markdown).
"""

# ruff: noqa: B023  (the timed lambdas run inside the loop iteration that defines them)
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import device_name, format_table, host_description, median  # noqa: E402
from gpu_kernels.imseg import features as _feat  # noqa: E402
from gpu_kernels.imseg import label as _label  # noqa: E402
from gpu_kernels.imseg import segment_image  # noqa: E402
from gpu_kernels.imseg.metrics import evaluate  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SIZES = [(64, 64), (256, 256), (512, 512), (1080, 1920), (2160, 3840)]
GSLICR_MS = {"640x480": 4.5, "1920x1080": 25.0}  # published, GTX Titan Black


def log(*a):
    print(*a, flush=True)


def shared_data() -> Path:
    env = os.environ.get("GPULAB_SHARED_DATA")
    return Path(env) if env else ROOT / ".." / "shared" / "data"


# --------------------------------------------------------------------------- inputs
def natural_image(h: int, w: int) -> np.ndarray:
    """A natural photograph from skimage.data resized to h x w (astronaut for square sizes,
    coffee otherwise)."""
    import cv2
    from skimage import data

    src = data.astronaut() if h == w else data.coffee()
    interp = cv2.INTER_AREA if h * w <= src.shape[0] * src.shape[1] else cv2.INTER_CUBIC
    return cv2.resize(src, (w, h), interpolation=interp)


def gpu_available() -> bool:
    try:
        import cupy as cp

        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


def time_gpu(fn, repeat=5, warmup=1):
    import cupy as cp

    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    ts = []
    for _ in range(repeat):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    return median(ts)


def time_cpu(fn, repeat=1):
    ts = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return median(ts), out


def copy_bandwidth() -> float:
    """Device-to-device copy bandwidth (bytes read + written per second)."""
    import cupy as cp

    a = cp.empty(1 << 28, dtype=cp.float32)  # 1 GiB
    b = cp.empty_like(a)
    t = time_gpu(lambda: b.__setitem__(Ellipsis, a), repeat=10, warmup=2)
    return 2 * (1 << 30) / t


def peak_device_bytes(fn) -> int:
    """Bytes a fresh memory pool holds after ``fn()`` (the pool keeps freed blocks for reuse,
    so this is the peak of what ``fn`` had allocated at once, rounded to pool blocks)."""
    import cupy as cp

    old = cp.get_default_memory_pool()
    pool = cp.cuda.MemoryPool()
    cp.cuda.set_allocator(pool.malloc)
    try:
        fn()
        cp.cuda.get_current_stream().synchronize()
        return int(pool.total_bytes())
    finally:
        cp.cuda.set_allocator(old.malloc)
        pool.free_all_blocks()


# --------------------------------------------------------------------------- speed
def bench_speed(sizes, gpu: bool, cpu_max_px: int, peers_max_px: dict, params: dict) -> list[dict]:
    rows = []
    method = params.get("method", "contours")
    params = {k: v for k, v in params.items() if k != "method"}
    if method == "contours":
        from gpu_kernels.imseg.contours import segment_contours as segf
    else:
        segf = segment_image
    for h, w in sizes:
        img = natural_image(h, w)
        n = h * w
        r = {"size": f"{w}x{h}", "pixels": n, "method": method}
        if gpu:
            seg = segf(img, device="cuda", **params)  # warm-up and compile
            rep = 20 if n <= 512 * 512 else 5
            segs = []  # the timings only: results are freed as a user's would be
            last = []

            def run():
                s = segf(img, device="cuda", **params)
                segs.append(s.timings)
                last[:] = [s]

            r["gpu_ms"] = 1e3 * time_gpu(run, repeat=rep)
            seg = last[0]
            stages = {}
            for tm in segs:
                for k, v in tm.items():
                    stages.setdefault(k, []).append(v)
            r["gpu_stages_ms"] = {k: round(1e3 * median(v), 4) for k, v in stages.items()}
            r["gpu_syncs"] = seg.syncs
            r["regions"] = seg.n_regions
            r["clusters"] = seg.n_clusters
            r["merge_rounds"] = seg.info["merge_rounds"]
            r["gpu_nofeat_ms"] = 1e3 * time_gpu(lambda: segf(img, device="cuda", features=False, **params),
                                                repeat=rep)
            pb = peak_device_bytes(lambda: segf(img, device="cuda", **params))
            r["peak_bytes_per_px"] = round(pb / n, 2)
            if n >= 1920 * 1080 and method != "contours":
                pbil = dict(params, bilateral=5)
                r["gpu_bilateral5_ms"] = 1e3 * time_gpu(lambda: segf(img, device="cuda", **pbil), repeat=3)
            log(f"  GPU {r['size']}: {r['gpu_ms']:.3f} ms ({r['regions']} regions, {r['clusters']} clusters, "
                f"{r['gpu_syncs']} syncs, {r['peak_bytes_per_px']} B/px) stages {r['gpu_stages_ms']}")
        if n <= cpu_max_px:
            t, segc = time_cpu(lambda: segf(img, device="cpu", **params))
            r["cpu_ms"] = 1e3 * t
            r["cpu_stages_ms"] = {k: round(1e3 * v, 2) for k, v in segc.timings.items()}
            r.setdefault("regions", segc.n_regions)
            log(f"  CPU {r['size']}: {r['cpu_ms']:.1f} ms")
        nseg = max(int(r.get("regions", 100)), 2)
        from skimage.segmentation import felzenszwalb, quickshift, slic

        peers = {
            "felzenszwalb": lambda: felzenszwalb(img, scale=FELZ_SCALE, sigma=0.8, min_size=FELZ_MIN),
            "slic": lambda: slic(img, n_segments=nseg, compactness=10, start_label=1),
            "quickshift": lambda: quickshift(img, kernel_size=5, max_dist=10, ratio=0.5),
        }
        for name, fn in peers.items():
            if n <= peers_max_px.get(name, 0):
                t, out = time_cpu(fn)
                r[f"{name}_ms"] = 1e3 * t
                r[f"{name}_segments"] = int(len(np.unique(out)))
                log(f"  {name} {r['size']}: {1e3 * t:.1f} ms ({r[f'{name}_segments']} segments)")
        rows.append(r)
    return rows


# --------------------------------------------------------------------------- labelling
def label_masks():
    rng = np.random.default_rng(0)
    blocky = np.kron((rng.random((135, 240)) < 0.5).astype(np.uint8), np.ones((16, 16), np.uint8))
    img = natural_image(2160, 3840)
    seg = segment_image(img, device="cuda" if gpu_available() else "cpu", features=False, min_size=0)
    clusters = seg.clusters
    return {
        "blocky 4K (binary)": (blocky, True),
        "cluster parity 4K (binary)": ((clusters % 2).astype(np.uint8), True),
        "clusters 4K (multi-value)": (clusters.astype(np.int32), False),
    }


def bench_labelling() -> list[dict]:
    rows = []
    masks = label_masks()
    for conn in (4, 8):
        for name, (mask, binary) in masks.items():
            if binary or conn == 8:
                rows.append(_bench_label_one(f"{name}, {conn}-conn", mask, binary, conn))
    return rows


def _bench_label_one(name, mask, binary, conn) -> dict:
    import cv2
    from scipy import ndimage as ndi

    have_gpu = gpu_available()
    cucim_label = None
    try:
        from cucim.skimage.measure import label as cucim_label  # noqa: F811
    except Exception as exc:  # noqa: BLE001
        log(f"  cuCIM not available: {type(exc).__name__}: {exc}")
    structure = ndi.generate_binary_structure(2, 1 if conn == 4 else 2)
    if True:
        h, w = mask.shape
        n = h * w
        r = {"mask": name, "pixels": n}
        ref, nref = ndi.label(mask, structure=structure) if binary else _label.label_np(mask, conn)
        r["components"] = int(nref)
        if have_gpu:
            import cupy as cp
            import cupyx.scipy.ndimage as cndi

            from gpu_kernels.backend import get_backend

            be = get_backend("cuda")
            m_d = cp.asarray(mask).reshape(-1)
            bg = 0 if binary else None
            for method, gs in (("unionfind", "levels"), ("unionfind", "single"), ("equivalence", None)):
                key = f"ours_{method}" + (f"_{gs}" if gs else "")
                if method == "unionfind":
                    def fn(gs=gs):
                        return _label.unionfind_device(be, m_d, h, w, conn, bg, gs)
                else:
                    def fn():
                        return _label.equivalence_device(be, m_d, h, w, conn, bg)
                t = time_gpu(fn, repeat=10, warmup=2)
                lab, tot = fn()
                ok = int(tot.get()[0]) == nref and bool((lab.reshape(h, w).get() == ref).all())
                r[key + "_ms"] = 1e3 * t
                r[key + "_ok"] = ok
            if binary:
                m2 = cp.asarray(mask)
                st = cp.asarray(structure)
                t = time_gpu(lambda: cndi.label(m2, structure=st), repeat=10, warmup=2)
                r["cupyx_ms"] = 1e3 * t
            if cucim_label is not None:
                m2 = cp.asarray(mask)
                try:
                    t = time_gpu(lambda: cucim_label(m2, background=0 if binary else -1, connectivity=1 if conn == 4 else 2),
                                 repeat=10, warmup=2)
                    r["cucim_ms"] = 1e3 * t
                except Exception as exc:  # noqa: BLE001
                    log(f"  cuCIM label failed on {name}: {exc}")
        if binary:
            t, _ = time_cpu(lambda: cv2.connectedComponentsWithStats(mask, connectivity=conn, ltype=cv2.CV_32S), 3)
            r["opencv_ms"] = 1e3 * t
        t, _ = time_cpu(lambda: ndi.label(mask, structure=structure) if binary else _label.label_np(mask, conn))
        r["scipy_ms"] = 1e3 * t
        best = min(r.get("ours_unionfind_levels_ms", np.inf), r.get("ours_unionfind_single_ms", np.inf))
        if "cupyx_ms" in r:
            r["speedup_vs_cupyx"] = r["cupyx_ms"] / best
        if "cucim_ms" in r:
            r["speedup_vs_cucim"] = r["cucim_ms"] / best
        r["ours_gpix_s"] = n / (best * 1e-3) / 1e9 if np.isfinite(best) else None
        log(f"  {name}: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()
                                      if k not in ("mask",)))
    return r


# --------------------------------------------------------------------------- features
FEATURE_PROPS = ("label", "area", "bbox", "centroid", "intensity_mean", "moments_central")


def bench_features(bw: float | None) -> list[dict]:
    import cupy as cp

    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    rows = []
    try:
        from cucim.skimage.measure import regionprops_table as cucim_rpt
    except Exception as exc:  # noqa: BLE001
        cucim_rpt = None
        log(f"  cuCIM not available: {type(exc).__name__}: {exc}")
    for min_size in (64, 0):
        img = natural_image(2160, 3840)
        seg = segment_image(img, device="cuda", features=False, min_size=min_size)
        h, w = seg.labels.shape
        n = h * w
        R = seg.n_regions
        lab_d = cp.asarray(seg.labels.astype(np.int32)).reshape(-1)
        img_d = cp.asarray(img)
        r = {"image": f"4K natural, min_size {min_size}", "regions": R}
        for method in ("runs", "sort"):
            t = time_gpu(lambda m=method: _feat.features_device(be, lab_d, R, h, w, img_d, 3, m, True),
                         repeat=10, warmup=2)
            r[f"ours_{method}_ms"] = 1e3 * t
        t = time_gpu(lambda: _feat.features_device(be, lab_d, R, h, w, img_d, 3, "runs", False), repeat=10, warmup=2)
        r["ours_runs_nomoments_ms"] = 1e3 * t
        if cucim_rpt is not None:
            lab2 = lab_d.reshape(h, w)
            for props, key in ((FEATURE_PROPS, "cucim_ms"), (("label", "area", "bbox", "centroid", "intensity_mean"),
                                                               "cucim_nomoments_ms")):
                try:
                    t = time_gpu(lambda p=props: cucim_rpt(lab2, img_d, properties=p), repeat=5, warmup=2)
                    r[key] = 1e3 * t
                except Exception as exc:  # noqa: BLE001
                    log(f"  cuCIM regionprops_table failed ({props}): {type(exc).__name__}: {exc}")
        if bw:
            floor = n * (4 + 3) / bw
            r["one_read_floor_ms"] = 1e3 * floor
            r["ours_vs_floor"] = r["ours_runs_ms"] / r["one_read_floor_ms"]
        if "cucim_ms" in r:
            r["speedup_vs_cucim"] = r["cucim_ms"] / min(r["ours_runs_ms"], r["ours_sort_ms"])
        log(f"  features: {r}")
        rows.append(r)
    return rows


# --------------------------------------------------------------------------- quality
FELZ_SCALE, FELZ_MIN = 500, 200


def bsds_items(root: Path):
    from app.io.image_io import read_image
    from app.io.labels_io import read_bsds_groundtruth

    for p in sorted(glob.glob(str(root / "images" / "*.jpg"))):
        i = Path(p).stem
        gts = read_bsds_groundtruth(root / "groundTruth" / f"{i}.mat")
        yield i, read_image(p), [g for g, _ in gts], [b for _, b in gts]


def synthetic_items(n: int = 8):
    """Piecewise-colour images (Voronoi cells of random colours) with shading and noise."""
    rng = np.random.default_rng(42)
    for k in range(n):
        h, w = 240, 320
        cells = int(rng.integers(6, 20))
        pts = rng.random((cells, 2)) * (h, w)
        yy, xx = np.mgrid[:h, :w]
        d = (yy[..., None] - pts[:, 0]) ** 2 + (xx[..., None] - pts[:, 1]) ** 2
        truth = d.argmin(-1).astype(np.int32) + 1
        cols = rng.integers(20, 236, size=(cells, 3)).astype(np.float64)
        img = cols[truth - 1] * (0.8 + 0.2 * (xx / w))[..., None] + rng.normal(0, 6.0, (h, w, 3))
        yield f"synth{k}", np.clip(img, 0, 255).astype(np.uint8), [truth], None


def _match_felz(img, target: int):
    from skimage.segmentation import felzenszwalb

    lo, hi = 1.0, 5000.0
    best = None
    for _ in range(12):
        sc = float(np.sqrt(lo * hi))
        seg = felzenszwalb(img, scale=sc, sigma=0.8, min_size=FELZ_MIN // 4)
        k = len(np.unique(seg))
        if best is None or abs(k - target) < abs(best[1] - target):
            best = (seg, k)
        if abs(k - target) <= 0.1 * target:
            break
        if k > target:
            lo = sc
        else:
            hi = sc
    return best[0]


def _match_quickshift(img, target: int):
    from skimage.segmentation import quickshift

    best = None
    for ks, md in ((3, 6), (5, 10), (7, 14), (10, 20), (14, 28), (20, 40)):
        seg = quickshift(img, kernel_size=ks, max_dist=md, ratio=0.5)
        k = len(np.unique(seg))
        if best is None or abs(k - target) < abs(best[1] - target):
            best = (seg, k)
        if k < target:
            break
    return best[0]


GPB_OWT_UCM = {"covering": 0.59, "pri": 0.83, "voi": 1.69}  # published, ODS, BSDS500 test (Arbelaez et al. 2011)
PEERS = ("felzenszwalb", "slic", "quickshift", "watershed", "slic_rag")


def run_ours(img, params: dict):
    method = params.get("method", "contours")
    p = {k: v for k, v in params.items() if k != "method"}
    if method == "contours":
        from gpu_kernels.imseg.contours import segment_contours

        return segment_contours(img, device="cpu", features=False, **p).labels
    return segment_image(img, device="cpu", features=False, **p).labels


def _slic_rag(img, thresh: float, n_sp: int = 400):
    """SLIC, then skimage.graph's hierarchical merging on the boundary RAG (Sobel edges)."""
    from skimage import graph
    from skimage.color import rgb2gray
    from skimage.filters import sobel
    from skimage.segmentation import slic

    sp = slic(img, n_segments=n_sp, compactness=10, start_label=1)
    edges = sobel(rgb2gray(img) if img.ndim == 3 else img)
    g = graph.rag_boundary(sp, edges)

    def weight(graph_, src, dst, n):
        default = {"weight": 0.0, "count": 0}
        c1, c2 = graph_[src].get(n, default)["count"], graph_[dst].get(n, default)["count"]
        w1, w2 = graph_[src].get(n, default)["weight"], graph_[dst].get(n, default)["weight"]
        return {"count": c1 + c2, "weight": (c1 * w1 + c2 * w2) / max(c1 + c2, 1)}

    return graph.merge_hierarchical(sp, g, thresh=thresh, rag_copy=False, in_place_merge=True,
                                    merge_func=lambda *a: None, weight_func=weight)


def _watershed(img, markers: int, compactness: float = 1e-3):
    from skimage.color import rgb2gray
    from skimage.filters import sobel
    from skimage.segmentation import watershed

    return watershed(sobel(rgb2gray(img) if img.ndim == 3 else img), markers=markers, compactness=compactness)


def peer_settings(peers) -> dict:
    """Each peer's own operating points (name -> callable(img)); the best on a set is its best point."""
    from skimage.segmentation import felzenszwalb, quickshift, slic

    out = {}
    if "felzenszwalb" in peers:
        out["felzenszwalb (scale 500)"] = lambda im: felzenszwalb(im, scale=500, sigma=0.8, min_size=FELZ_MIN)
        out["felzenszwalb (scale 100)"] = lambda im: felzenszwalb(im, scale=100, sigma=0.8, min_size=FELZ_MIN // 4)
        for sc in (1000, 2000):
            out[f"felzenszwalb (scale {sc})"] = lambda im, sc=sc: felzenszwalb(im, scale=sc, sigma=0.8, min_size=FELZ_MIN)
    if "slic" in peers:
        for k in (10, 25, 50):
            out[f"slic ({k})"] = lambda im, k=k: slic(im, n_segments=k, compactness=10, start_label=1)
    if "quickshift" in peers:
        for ks, md in ((5, 10), (10, 20), (20, 40)):
            out[f"quickshift ({ks}, {md})"] = lambda im, ks=ks, md=md: quickshift(im, kernel_size=ks, max_dist=md,
                                                                               ratio=0.5)
    if "watershed" in peers:
        for k in (10, 25, 50):
            out[f"compact watershed ({k})"] = lambda im, k=k: _watershed(im, k)
    if "slic_rag" in peers:
        for th in (0.04, 0.08, 0.16):
            out[f"slic + rag merge ({th})"] = lambda im, th=th: _slic_rag(im, th)
    return out


def _quality_one(job):
    (i, img, gts, gbs), params, peers, matched = job
    from skimage.segmentation import slic

    res = {}
    t0 = time.perf_counter()
    ours = run_ours(img, params)
    t_ours = time.perf_counter() - t0
    k = len(np.unique(ours))
    cands = {"ours": (ours, t_ours)}
    for name, fn in peer_settings(peers).items():
        t0 = time.perf_counter()
        cands[name] = (fn(img), time.perf_counter() - t0)
    if matched:
        if "felzenszwalb" in peers:
            cands["felzenszwalb (matched)"] = (_match_felz(img, k), None)
        if "slic" in peers:
            cands["slic (matched)"] = (slic(img, n_segments=k, compactness=10, start_label=1), None)
        if "quickshift" in peers:
            cands["quickshift (matched)"] = (_match_quickshift(img, k), None)
        if "watershed" in peers:
            cands["compact watershed (matched)"] = (_watershed(img, k), None)
    for name, (seg, t) in cands.items():
        m = evaluate(seg, gts, gt_boundaries=gbs)
        if t is not None:
            m["seconds"] = t
        res[name] = m
    return i, res


def bench_quality(items, params: dict, peers=PEERS, matched: bool = True, workers: int = 1) -> dict:
    """Mean measures over ``items`` of ours and the peers (own operating points and, with
    ``matched``, at our number of segments per image). ``workers`` processes."""
    jobs = [(it, params, tuple(peers), matched) for it in items]
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            results = pool.map(_quality_one, jobs, chunksize=1)
    else:
        results = [_quality_one(j) for j in jobs]
    acc: dict[str, list] = {}
    for i, res in results:
        for name, m in res.items():
            acc.setdefault(name, []).append(m)
        log(f"  {i}: " + " ".join(f"{n}={m['covering']:.3f}" for n, m in res.items()))
    out = {}
    for name, ms in acc.items():
        keys = ms[0].keys()
        out[name] = {k: float(np.mean([m.get(k, np.nan) for m in ms])) for k in keys}
    return out


def best_points(res: dict) -> dict:
    """For each peer family, the setting with the highest mean covering in ``res``."""
    best = {}
    for name, m in res.items():
        fam = name.split(" (")[0]
        if name == "ours" or "matched" in name:
            continue
        if fam not in best or m["covering"] > res[best[fam]]["covering"]:
            best[fam] = name
    return best


# --------------------------------------------------------------------------- tuning
def bench_tune(items, grid: dict) -> list[dict]:
    import itertools

    items = list(items)
    keys = list(grid)
    rows = []
    for combo in itertools.product(*(grid[k] for k in keys)):
        p = dict(zip(keys, combo, strict=True))
        ms = []
        t = 0.0
        for _, img, gts, gbs in items:
            t0 = time.perf_counter()
            seg = segment_image(img, device="cpu", features=False, **p).labels
            t += time.perf_counter() - t0
            ms.append(evaluate(seg, gts, gt_boundaries=gbs))
        r = dict(p)
        r.update({k: round(float(np.mean([m[k] for m in ms])), 4) for k in ms[0]})
        r["cpu_s_per_image"] = round(t / len(items), 3)
        rows.append(r)
        log("  " + json.dumps(r))
    return rows


def _tune_contours_one(job):
    (i, img, gts, gbs), pre, settings = job
    import math

    from gpu_kernels.imseg import contours as C

    h, w = img.shape[:2]
    u8 = C.to_u8(img)
    sm = C.blur_np(C.lab_planes_np(u8), pre.get("sigma", C.DEFAULT_SIGMA))
    _, gq, q = C.gradient_np(sm)
    S = C.slic_step(h, w, pre.get("n_superpixels", C.DEFAULT_N_SUPERPIXELS))
    cells = C.slic_np(sm, q, S, pre.get("compactness", C.DEFAULT_COMPACTNESS), C.SLIC_ITERATIONS)
    comps, R = _label.label_np(cells, 4)
    g = C.region_graph_np(comps, R, gq, q)
    out = []
    inv = 1.0 / math.sqrt(h * w)
    for kind, v in settings:
        # ("coarseness", c) and ("n_segments", k) as the defaults run them (size guard, clean-up);
        # ("guard", [k, c]): the coarseness c with the size guard's weight k instead of SIZE_K
        if kind == "coarseness":
            into, _, rounds = C.merge_np(g, 0, C.coarseness_threshold(v), inv, min_area=C.min_region_area(S))
        elif kind == "guard":
            into, _, rounds = C.merge_np(g, 0, C.coarseness_threshold(v[1]), inv, min_area=C.min_region_area(S),
                                         size_k=float(v[0]))
        else:
            into, _, rounds = C.merge_np(g, int(v), math.inf, inv)
        seg, _ = C._resolve(into)
        m = evaluate(seg[comps - 1], gts, gt_boundaries=gbs)
        m["rounds"] = rounds
        m["superpixels"] = R
        out.append(m)
    return out


def bench_tune_contours(items, pre_grid: list[dict], settings: list, workers: int = 1) -> list[dict]:
    """The contours method on ``items`` for each preprocessing dict in ``pre_grid`` and each
    ("coarseness", c) or ("n_segments", k) in ``settings`` (superpixels and graph computed once
    per image and preprocessing)."""
    import multiprocessing as mp

    rows = []
    for pre in pre_grid:
        jobs = [(it, pre, settings) for it in items]
        if workers > 1:
            with mp.get_context("fork").Pool(workers) as pool:
                res = pool.map(_tune_contours_one, jobs, chunksize=1)
        else:
            res = [_tune_contours_one(j) for j in jobs]
        for j, (kind, v) in enumerate(settings):
            ms = [r[j] for r in res]
            row = dict(pre)
            row[kind] = v
            row.update({k: round(float(np.mean([m[k] for m in ms])), 4) for k in ms[0]})
            rows.append(row)
            log("  " + json.dumps(row))
    return rows


# --------------------------------------------------------------------------- live edits (issue 20)
def bench_live(device: str = "cuda", repeat: int = 5) -> list[dict]:
    """Edit -> result through the tool's stage cache on a 1080p photograph (the bundled coffee
    resized): the time of ``PIPELINE.execute`` after one parameter changes (a new value each
    time, so the changed stage really runs), which stages ran, and a full run for reference.
    Compute only: no window (PySide6 is not on the GPU host)."""
    from skimage.transform import resize

    from app.tools import imseg as tool
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    be = get_backend(device)
    data = tool.load(tool.samples()[0])
    big = np.clip(np.round(resize(data.image, (1080, 1920), preserve_range=True, anti_aliasing=True)), 0, 255)
    data = tool.ImageData(data.path, big.astype(np.uint8), ())
    rows = []
    cases = [("contours", "coarseness", [3.0 + 0.02 * i for i in range(repeat + 1)]),
             ("contours", "n_segments", [20 + i for i in range(repeat + 1)]),
             ("kmeans", "k_max", [40 + i for i in range(repeat + 1)]),
             ("kmeans", "min_size", [400 + 8 * i for i in range(repeat + 1)])]
    for method, name, values in cases:
        cache = StageCache(cap_bytes=4 << 30)
        base = tool.PARAMS.validate({"method": method})
        for _ in range(2):  # warm-up (kernels compiled, cache filled)
            tool.PIPELINE.execute(data, base, device=be, cache=cache, scope="live")
        t_full = []
        for _ in range(3):
            t0 = time.perf_counter()
            tool.PIPELINE.execute(data, base, device=be)
            t_full.append(time.perf_counter() - t0)
        ts, ran = [], []
        for v in values[1:]:
            p = tool.PARAMS.validate({"method": method, name: v})
            t0 = time.perf_counter()
            _, rep_ = tool.PIPELINE.execute(data, p, device=be, cache=cache, scope="live")
            ts.append(time.perf_counter() - t0)
            ran = rep_.ran
        r = {"method": method, "edit": name, "edit_ms": round(1e3 * median(ts), 2),
             "full_run_ms": round(1e3 * median(t_full), 2), "stages_ran": "+".join(ran), "device": be.label}
        log(f"  live: {r}")
        rows.append(r)
    return rows


# --------------------------------------------------------------------------- GPU sweep
SWEEP_SETS = [
    {},
    {"min_size": 0},
    {"min_size": 256, "merge_distance": 14.0},
    {"min_size": 512, "merge_distance": 18.0},
    {"min_size": 1024, "merge_distance": 18.0, "connectivity": 4},
    {"min_size": 256, "merge_distance": 14.0, "bilateral": 5},
    {"k_max": 256, "merge_distance": 6.0},
    {"global_step": "single"},
    {"weights": "sort"},
    {"features_method": "sort"},
    {"label_method": "equivalence"},
]


def bench_gpu_sweep(sizes) -> list[dict]:
    rows = []
    for h, w in sizes:
        img = natural_image(h, w)
        for ps in SWEEP_SETS:
            segs = []
            try:
                t = time_gpu(lambda ps=ps: segs.append(segment_image(img, device="cuda", **ps)),
                             repeat=10 if h * w <= 512 * 512 else 4)
            except Exception as exc:  # noqa: BLE001
                log(f"  sweep {ps} failed: {type(exc).__name__}: {exc}")
                continue
            st = {}
            for sg in segs:
                for k, v in sg.timings.items():
                    st.setdefault(k, []).append(v)
            r = {"size": f"{w}x{h}", "params": json.dumps(ps), "ms": round(1e3 * t, 4),
                 "regions": segs[-1].n_regions, "syncs": segs[-1].syncs}
            r.update({f"{k}_ms": round(1e3 * median(v), 4) for k, v in st.items() if k != "total"})
            rows.append(r)
            log(f"  sweep {r}")
    return rows


# --------------------------------------------------------------------------- output
def fmt(v, nd=3):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "NO"
    if isinstance(v, float):
        return f"{v:.{nd}f}" if abs(v) < 1e4 else f"{v:.3g}"
    return str(v)


def speed_table(rows) -> str:
    cols = [("size", "size"), ("gpu_ms", "ours GPU ms"), ("gpu_nofeat_ms", "GPU w/o features ms"),
            ("cpu_ms", "ours CPU ms"), ("felzenszwalb_ms", "felzenszwalb ms"), ("slic_ms", "slic ms"),
            ("quickshift_ms", "quickshift ms"), ("regions", "regions"), ("gpu_syncs", "syncs"),
            ("peak_bytes_per_px", "peak B/px")]
    out = []
    for r in rows:
        rr = {k: fmt(r.get(k)) for k, _ in cols}
        if r.get("felzenszwalb_ms") and r.get("gpu_ms"):
            rr["felz_ratio"] = f"{r['felzenszwalb_ms'] / r['gpu_ms']:.0f}x"
        out.append(rr)
    return format_table(out, cols + [("felz_ratio", "felzenszwalb / ours GPU")])


def stage_table(rows) -> str:
    stages = ["upload", "bilateral", "quantise", "kmeans", "labelling", "min_size", "colour", "superpixels", "graph",
              "merge", "features", "download", "total"]
    if rows:
        seen = set()
        for r in rows:
            seen |= set(r.get("gpu_stages_ms", {})) | set(r.get("cpu_stages_ms", {}))
        stages = [s for s in stages if s in seen]
    out = []
    for r in rows:
        if "gpu_stages_ms" in r:
            out.append({"size": r["size"], "dev": "GPU", **{s: fmt(r["gpu_stages_ms"].get(s)) for s in stages}})
        if "cpu_stages_ms" in r:
            out.append({"size": r["size"], "dev": "CPU", **{s: fmt(r["cpu_stages_ms"].get(s), 1) for s in stages}})
    return format_table(out, [("size", "size"), ("dev", "device")] + [(s, s + " ms") for s in stages])


def generic_table(rows) -> str:
    keys = []
    for r in rows:
        for k in r:
            if k not in keys and not isinstance(r[k], dict):
                keys.append(k)
    return format_table([{k: fmt(r.get(k)) for k in keys} for r in rows], [(k, k) for k in keys])


def summary_table(rows: dict, n_train: int) -> str:
    out = []
    for name, (val, tr) in rows.items():
        r = {"method": name}
        for k in ("covering", "pri", "voi", "segments"):
            r[k] = fmt(val.get(k))
            r["t_" + k] = fmt(tr.get(k)) if tr else "-"
        out.append(r)
    out.append({"method": "gPb-owt-ucm (published, ODS on the 200 test images)", "covering": "0.590", "pri": "0.830",
                "voi": "1.690", "segments": "-", "t_covering": "-", "t_pri": "-", "t_voi": "-", "t_segments": "-"})
    cols = [("method", "method")] + [(k, k + " (val)") for k in ("covering", "pri", "voi", "segments")]
    cols += [("t_" + k, f"{k} (train {n_train})") for k in ("covering", "pri", "voi", "segments")]
    return format_table(out, cols)


def quality_table(res: dict) -> str:
    cols = ["covering", "pri", "voi", "boundary_recall", "undersegmentation", "segments", "seconds"]
    rows = [{"method": name, **{c: fmt(m.get(c)) for c in cols}} for name, m in res.items()]
    return format_table(rows, [("method", "method")] + [(c, c) for c in cols])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--labelling", action="store_true")
    ap.add_argument("--features", action="store_true")
    ap.add_argument("--quality", action="store_true")
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--tune-contours", default=None, metavar="JSON",
                    help='tune the contours method on BSDS train: {"pre": [{...}], "settings": [["coarseness", 3.4], '
                         '["n_segments", 30], ["guard", [7, 3.3]]]}')
    ap.add_argument("--live", action="store_true", help="edit -> result at 1080p through the tool's stage cache")
    ap.add_argument("--gpu-sweep", action="store_true", help="GPU pipeline time for SWEEP_SETS at 512x512 and 4K")
    ap.add_argument("--all", action="store_true", help="speed, labelling and features")
    ap.add_argument("--sizes", default="64x64,256x256,512x512,1920x1080,3840x2160")
    ap.add_argument("--cpu-max", default="1920x1080", help="largest size timed on the CPU path")
    ap.add_argument("--quickshift-max", default="512x512")
    ap.add_argument("--slic-max", default="3840x2160")
    ap.add_argument("--felz-max", default="3840x2160")
    ap.add_argument("--bsds", default=None, help="BSDS500 folder (images/, groundTruth/)")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N BSDS images")
    ap.add_argument("--no-quickshift", action="store_true")
    ap.add_argument("--train", action="store_true", help="with --quality: also the training images (bsds/train)")
    ap.add_argument("--train-limit", type=int, default=0, help="use every k-th training image, N in all")
    ap.add_argument("--workers", type=int, default=1, help="processes for the quality runs")
    ap.add_argument("--train-peers", default="", help="peers run on the training images (default: all)")
    ap.add_argument("--params", default="{}", help="JSON dict of parameters; \"method\": \"contours\" (the default, "
                    "segment_contours) or \"kmeans\" (the paper's pipeline, segment_image)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args(argv)
    if args.all:
        args.speed = args.labelling = args.features = True
    params = json.loads(args.params)

    def px(s):
        w, h = (int(v) for v in s.lower().split("x"))
        return w * h

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gpu = gpu_available()
    meta = {"device": device_name(), "host": host_description(), "command": " ".join(sys.argv),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "params": params}
    log(f"# imseg benchmark: {meta['device']}; host {meta['host']}")
    md = [f"Device: {meta['device']}; host: {meta['host']}; {meta['date']}", f"Command: `{meta['command']}`", ""]
    payload = dict(meta)
    if gpu and (args.speed or args.features):
        bw = copy_bandwidth()
        payload["copy_bandwidth_GBs"] = bw / 1e9
        md.append(f"Device-to-device copy bandwidth: {bw / 1e9:.0f} GB/s (read + write)\n")
        log(f"copy bandwidth {bw / 1e9:.0f} GB/s")
    else:
        bw = None
    if args.labelling:
        log("## labelling")
        rows = bench_labelling()
        payload["labelling"] = rows
        md += ["## Labelling", "", generic_table(rows), ""]
        (out / "imseg_speed.json").write_text(json.dumps(payload, indent=1, default=str))
    if args.features and gpu:
        log("## features")
        rows = bench_features(bw)
        payload["features"] = rows
        md += ["## Region features (4K)", "", generic_table(rows), ""]
        (out / "imseg_speed.json").write_text(json.dumps(payload, indent=1, default=str))
    if args.live:
        log("## live edits, 1080p")
        rows = bench_live("cuda" if gpu else "cpu")
        payload["live"] = rows
        md += ["## Live edits (1080p, edit -> result through the stage cache)", "", generic_table(rows), ""]
        (out / "imseg_speed.json").write_text(json.dumps(payload, indent=1, default=str))
    if args.gpu_sweep and gpu:
        log("## GPU parameter sweep")
        rows = bench_gpu_sweep([(512, 512), (2160, 3840)])
        payload["gpu_sweep"] = rows
        md += ["## GPU time per parameter set", "", generic_table(rows), ""]
        (out / "imseg_speed.json").write_text(json.dumps(payload, indent=1, default=str))
    if args.speed:
        sizes = []
        for s in args.sizes.split(","):
            w, h = (int(v) for v in s.lower().split("x"))
            sizes.append((h, w))
        peers_max = {"felzenszwalb": px(args.felz_max), "slic": px(args.slic_max),
                     "quickshift": 0 if args.no_quickshift else px(args.quickshift_max)}
        log("## speed")
        rows = bench_speed(sizes, gpu, px(args.cpu_max), peers_max, params)
        payload["speed"] = rows
        md += ["## Speed", "", speed_table(rows), "", "### Stages", "", stage_table(rows), ""]
        (out / "imseg_speed.json").write_text(json.dumps(payload, indent=1, default=str))
    if args.tune_contours:
        spec = json.loads(args.tune_contours)
        root = (Path(args.bsds) if args.bsds else shared_data() / "bsds500") / "train"
        titems = list(bsds_items(root))
        if args.train_limit:
            titems = titems[::max(1, len(titems) // args.train_limit)][:args.train_limit]
        log(f"## tuning the contours method on {len(titems)} training images")
        rows = bench_tune_contours(titems, spec["pre"], [tuple(x) for x in spec["settings"]], args.workers)
        payload["tune_contours"] = rows
        md += [f"## Tuning the contours method ({len(titems)} BSDS500 training images)", "", generic_table(rows), ""]
        (out / "imseg_tune.json").write_text(json.dumps(payload, indent=1, default=str))
    if args.quality or args.tune:
        root = Path(args.bsds) if args.bsds else shared_data() / "bsds500"
        if not (root / "images").is_dir():
            log(f"BSDS500 not found at {root}: quality skipped")
        else:
            items = list(bsds_items(root))
            if args.limit:
                items = items[:args.limit]
            if args.tune:
                log("## tuning")
                grid = {"merge_distance": [10.0, 14.0, 18.0], "min_size": [256, 512, 1024],
                        "bilateral": [0, 5], "connectivity": [4, 8]}
                rows = bench_tune(items, grid)
                payload["tune"] = rows
                md += ["## Tuning grid (BSDS500, CPU)", "", generic_table(rows), ""]
            if args.quality:
                log("## quality: BSDS500")
                peers = tuple(p for p in PEERS if not (args.no_quickshift and p == "quickshift"))
                res = bench_quality(items, params, peers, workers=args.workers)
                payload["quality_bsds"] = res
                title = f"## Quality on {root.name if args.bsds else 'BSDS500'} ({len(items)} images"
                md += [f"{title}, mean over images of the mean over the human segmentations)", "",
                       quality_table(res), ""]
                train_root = root / "train"
                if args.train and (train_root / "images").is_dir():
                    log("## quality: BSDS500 train (the peers' best points are chosen here)")
                    titems = list(bsds_items(train_root))
                    if args.train_limit:
                        titems = titems[::max(1, len(titems) // args.train_limit)][:args.train_limit]
                    tpeers = tuple(args.train_peers.split(",")) if args.train_peers else peers
                    tres = bench_quality(titems, params, tpeers, matched=False, workers=args.workers)
                    payload["quality_bsds_train"] = tres
                    best = best_points(tres)
                    payload["best_points"] = best
                    md += [f"## Quality on the BSDS500 training images ({len(titems)})", "", quality_table(tres), ""]
                    rows = {"ours": (res["ours"], tres["ours"])}
                    for name in best.values():
                        rows[f"{name}, best on train"] = (res[name], tres[name])
                    for name in ("felzenszwalb (scale 500)", "felzenszwalb (scale 100)"):
                        rows.setdefault(name, (res[name], tres.get(name)))
                    for name in res:
                        if name not in rows and "matched" not in name and name not in best.values():
                            rows[name] = (res[name], tres.get(name))
                    for name in res:
                        if "matched" in name:
                            rows[name] = (res[name], None)
                    md += ["## Summary: validation (20) and train", "", summary_table(rows, len(titems)), ""]
        if args.quality:
            log("## quality: synthetic")
            res = bench_quality(list(synthetic_items()), params, ("felzenszwalb", "slic"))
            payload["quality_synthetic"] = res
            md += ["## Quality on synthetic images (Voronoi colour cells, shading, noise)", "", quality_table(res), ""]
    name = "imseg_gpu" if gpu else "imseg_cpu"
    (out / f"{name}.json").write_text(json.dumps(payload, indent=1, default=str))
    (out / f"{name}.md").write_text("\n".join(md) + "\n")
    log("\n".join(md))


if __name__ == "__main__":
    main()
