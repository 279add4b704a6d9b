"""Where the time of the imseg GPU pipelines goes (issue 21): end-to-end wall time (upload to
host arrays, labels and features), the stages (CUDA events), host synchronisations, and every
kernel and copy the GPU ran with its count and GPU time (CUPTI through ``torch.profiler``
where PyTorch is installed; the device image has it).

    python benchmarks/imseg_profile.py --sizes 512x512,1920x1080,3840x2160 --json out.json

``busy`` is the summed GPU time of the kernels and copies of one call over its wall time: far
below 1 means the call waits on the host (Python, launches, synchronisations), not the GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def natural_image(h: int, w: int) -> np.ndarray:
    import cv2
    from skimage import data

    src = data.astronaut() if h == w else data.coffee()
    interp = cv2.INTER_AREA if h * w <= src.shape[0] * src.shape[1] else cv2.INTER_CUBIC
    return cv2.resize(src, (w, h), interpolation=interp)


#: every repetition's wall time of the last ``wall`` call (seconds), for the spread
LAST_TIMES: list = []


def wall(fn, rep: int) -> float:
    import cupy as cp

    fn()
    cp.cuda.get_current_stream().synchronize()
    ts = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        cp.cuda.get_current_stream().synchronize()
        ts.append(time.perf_counter() - t0)
    LAST_TIMES[:] = ts
    try:
        from gpu_kernels import pinned

        PINNED_HELD.append(pinned.held_bytes())
    except Exception:  # noqa: BLE001
        pass
    return median(ts)


#: page-locked result bytes held after each timed row (downloads go pageable past the cap)
PINNED_HELD: list = []


def spread(ts: list) -> str:
    """First five repetitions, p10 / p90 and the last five, in ms."""
    if not ts:
        return ""
    q = sorted(ts)
    f = ", ".join(f"{1e3 * t:.2f}" for t in ts[:5])
    la = ", ".join(f"{1e3 * t:.2f}" for t in ts[-5:])
    return (f"first [{f}] p10 {1e3 * q[len(q) // 10]:.2f} p90 {1e3 * q[(9 * len(q)) // 10]:.2f} "
            f"last [{la}]")


def kernel_profile(fn, rep: int = 3) -> dict | None:
    """Per-name count and GPU microseconds of one call (mean over ``rep`` calls), or None."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
    except Exception as exc:  # noqa: BLE001
        print(f"  (no torch.profiler: {exc})")
        return None
    fn()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(rep):
            fn()
    out: dict = {}
    for e in prof.events():
        if e.device_type != DeviceType.CUDA:
            continue
        d = out.setdefault(e.name[:60], [0, 0.0])
        d[0] += 1
        d[1] += e.time_range.elapsed_us()
    return {k: (v[0] / rep, v[1] / rep) for k, v in sorted(out.items(), key=lambda kv: -kv[1][1])}


def profile_one(method: str, h: int, w: int, rep: int, params: dict) -> dict:
    from gpu_kernels.imseg.api import segment

    img = natural_image(h, w)
    segs = []

    def run(**kw):
        s = segment(img, method=method, device="cuda", **{**params, **kw})
        if len(segs) < 64:
            segs.append(s.timings)
        return s

    seg = run()
    r = {"method": method, "size": f"{w}x{h}", "regions": seg.n_regions, "syncs": seg.syncs,
         "sync_reasons": seg.info.get("sync_reasons"), "merge_rounds": seg.info.get("merge_rounds"),
         "superpixels": seg.info.get("superpixels"), "merge_smem": seg.info.get("merge_in_shared_memory")}
    segs.clear()
    r["e2e_ms"] = 1e3 * wall(run, rep)
    r["e2e_reps_ms"] = [round(1e3 * t, 3) for t in LAST_TIMES]
    r["spread"] = spread(LAST_TIMES)
    r["e2e_nofeat_ms"] = 1e3 * wall(lambda: run(features=False), rep)
    stages: dict = {}
    for t in segs:
        for k, v in t.items():
            stages.setdefault(k, []).append(v)
    r["stages_ms"] = {k: round(1e3 * median(v), 3) for k, v in stages.items()}
    print(f"== {method} {r['size']}: e2e {r['e2e_ms']:.3f} ms (no features {r['e2e_nofeat_ms']:.3f}), "
          f"{r['regions']} regions, syncs {r['syncs']}, rounds {r['merge_rounds']}, superpixels {r['superpixels']}, "
          f"merge in smem {r['merge_smem']}", flush=True)
    print("   stages " + ", ".join(f"{k} {v:.3f}" for k, v in r["stages_ms"].items()), flush=True)
    import gc

    print(f"   reps {r['spread']}; pinned results held {PINNED_HELD[-1:]} B, gc counts {gc.get_count()}", flush=True)
    return r


def host_profile(method: str, h: int, w: int, rep: int, params: dict, top: int = 25) -> None:
    """cProfile of ``rep`` calls (the host's Python time per function, in us a call)."""
    import cProfile
    import io
    import pstats

    import cupy as cp

    from gpu_kernels.imseg.api import segment

    img = natural_image(h, w)
    segment(img, method=method, device="cuda", **params)
    cp.cuda.get_current_stream().synchronize()
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(rep):
        segment(img, method=method, device="cuda", **params)
    pr.disable()
    buf = io.StringIO()
    st = pstats.Stats(pr, stream=buf)
    print(f"== host profile {method} {w}x{h}: {rep} calls, times per call below are totals / {rep}", flush=True)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    print(buf.getvalue(), flush=True)


def chrome_trace(method: str, h: int, w: int, path: str, params: dict, rep: int = 3) -> None:
    """A torch.profiler chrome trace (host launches and GPU kernels on one time line)."""
    from torch.profiler import ProfilerActivity, profile

    from gpu_kernels.imseg.api import segment

    img = natural_image(h, w)
    for _ in range(3):
        segment(img, method=method, device="cuda", **params)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(rep):
            segment(img, method=method, device="cuda", **params)
    prof.export_chrome_trace(path)
    print(f"== trace {method} {w}x{h} -> {path}", flush=True)


def kernels_one(r: dict, params: dict) -> dict:
    """Add the per-kernel profile to a :func:`profile_one` row (run after every row's wall
    times: the profiler leaves CUPTI overhead behind that slows later launches)."""
    from gpu_kernels.imseg.api import segment

    w, h = (int(v) for v in r["size"].split("x"))
    img = natural_image(h, w)
    prof = kernel_profile(lambda: segment(img, method=r["method"], device="cuda", **params))
    if prof is not None:
        r["launches"] = round(sum(c for c, _ in prof.values()), 1)
        r["gpu_busy_ms"] = round(sum(us for _, us in prof.values()) / 1e3, 3)
        r["busy"] = round(r["gpu_busy_ms"] / r["e2e_ms"], 3)
        r["kernels"] = {k: [round(c, 1), round(us, 1)] for k, (c, us) in list(prof.items())[:25]}
        print(f"== kernels {r['method']} {r['size']}: launches {r['launches']}, GPU busy {r['gpu_busy_ms']} ms "
              f"({r['busy']} of e2e)", flush=True)
        for k, (c, us) in r["kernels"].items():
            print(f"   {us:9.1f} us  x{c:<6} {k}", flush=True)
    return r


def bench_upload(rep: int = 10) -> list[dict]:
    """Host-to-device upload of an 8-bit RGB image: CuPy's ``asarray`` (one thread copies into
    its pinned staging), ``_util.upload`` with 2/4/8 threads, and page-locking the array in
    place (``cudaHostRegister``) for one DMA."""

    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    rows = []
    for h, w in ((1080, 1920), (2160, 3840)):
        r = _upload_one(be, natural_image(h, w), rep)
        print(f"== upload {r}", flush=True)
        rows.append(r)
    return rows


def _upload_one(be, img, rep: int) -> dict:
    import cupy as cp

    from gpu_kernels.imseg import _util

    rt = cp.cuda.runtime
    h, w = img.shape[:2]
    r = {"size": f"{w}x{h}", "MB": round(img.nbytes / 1e6, 1)}
    r["asarray_ms"] = 1e3 * wall(lambda: cp.asarray(img), rep)
    for t in (2, 4, 8):
        _util.UPLOAD_THREADS = t
        _util._STAGE.clear()
        r[f"threads{t}_ms"] = 1e3 * wall(lambda: _util.upload(be, img), rep)
        assert bool((_util.upload(be, img) == cp.asarray(img)).all())
    _util.UPLOAD_THREADS = 4
    _util._STAGE.clear()

    def registered():
        out = cp.empty(img.shape, img.dtype)
        rt.hostRegister(img.ctypes.data, img.nbytes, 0)
        try:
            rt.memcpyAsync(out.data.ptr, img.ctypes.data, img.nbytes, rt.memcpyHostToDevice,
                           cp.cuda.get_current_stream().ptr)
            cp.cuda.get_current_stream().synchronize()
        finally:
            rt.hostUnregister(img.ctypes.data)
        return out

    try:
        r["host_register_ms"] = 1e3 * wall(registered, rep)
    except Exception as exc:  # noqa: BLE001
        r["host_register_ms"] = f"failed: {exc}"
    return r


def gpu_time(fn, rep: int = 10) -> float:
    """Median GPU milliseconds of ``fn`` (CUDA events)."""
    import cupy as cp

    fn()
    ts = []
    for _ in range(rep):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return median(ts)


def bench_chunks(rep: int = 10) -> list[dict]:
    """Pixels per thread of the SLIC assignment (4 iterations + the last assignment) and of
    the feature kernels (runs, with moments), on the contours pipeline's own inputs and on
    the k-means pipeline's labels."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import features as F

    be = get_backend("cuda")
    rows = []
    sc0, fc0 = C.SLIC_CHUNK, F.CHUNK
    for h, w in ((512, 512), (1080, 1920), (2160, 3840)):
        try:
            r = _chunks_one(be, natural_image(h, w), rep)
        finally:
            C.SLIC_CHUNK, F.CHUNK = sc0, fc0
        print(f"== chunks {r}", flush=True)
        rows.append(r)
    return rows


def _chunks_one(be, img, rep: int) -> dict:
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import features as F
    from gpu_kernels.imseg.segment import segment_image

    h, w = img.shape[:2]
    col = C.stage_colour(img, device=be)
    sp = C.stage_superpixels(col, device=be)
    mg = C.stage_merge(col, sp, device=be)
    km = segment_image(img, device="cuda", features=False)
    km_lab = be.xp.asarray(km.labels).reshape(-1)

    def slic():
        return C.slic_device(be, col["sm"], col["q"], h, w, sp["S"], sp["compactness"], C.SLIC_ITERATIONS)

    def feat_contours():
        return F.features_device(be, mg["labels"], mg["count"], h, w, col["img_d"], 3, "runs", True)

    def feat_kmeans():
        return F.features_device(be, km_lab, km.n_regions, h, w, col["img_d"], 3, "runs", True)

    r = {"size": f"{w}x{h}", "contours_regions": mg["count"], "kmeans_regions": km.n_regions}
    for c in (1, 2, 4, 8, 16):
        C.SLIC_CHUNK = F.CHUNK = c
        r[f"slic_chunk{c}_ms"] = round(gpu_time(slic, rep), 4)
        r[f"feat_contours_chunk{c}_ms"] = round(gpu_time(feat_contours, rep), 4)
        r[f"feat_kmeans_chunk{c}_ms"] = round(gpu_time(feat_kmeans, rep), 4)
    return r



# ----------------------------------------------------------------------------- session 7
def _timed(fn, rep: int) -> list:
    """Wall times (s) of ``rep`` calls after one warm-up (each call ends on the host)."""
    fn()
    ts = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return ts


def _ms(ts: list) -> str:
    q = sorted(ts)
    return f"{1e3 * median(ts):.3f} ms (p10 {1e3 * q[len(q) // 10]:.3f}, p90 {1e3 * q[(9 * len(q)) // 10]:.3f})"


def bench_tool(sizes: str, rep: int, methods: str = "kmeans", rounds: int = 3, breakdown: bool = False) -> list[dict]:
    """Goals 1 and 2: the tool's run (what ``gpulab imseg`` and batch call: host image in, host
    labels and features out) against the library call, same process; ``tool_eager`` is the
    tool's stages run one by one (``deferred.ENABLED = False``, the code before session 7);
    ``tool_pipeline`` the tool's run through its deferred stages (``imseg.DIRECT_RUN = False``,
    the code before session 8; absent in a tree without the switch, whose ``tool`` is that);
    ``library_progress`` the library call handed a sub-``Progress`` as the tool hands it.
    ``rounds`` rounds, the variants taking turns; ``breakdown``: per-call host pieces after them
    (:func:`tool_breakdown`)."""
    from app.tools import imseg
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import deferred as D
    from gpu_kernels.imseg import graphs as G
    from gpu_kernels.imseg.api import segment
    from gpu_kernels.jobs import Progress

    be = get_backend("cuda")
    rows = []

    def pyloop():
        x = 0
        for i in range(20000):
            x += i * i
        return x

    print(f"   host: a 20,000-step Python loop {1e6 * median(_timed(pyloop, 30)):.0f} us (about 1000 in the fast "
          "processes of call 2, up to 2160 in the slow ones)", flush=True)
    direct = hasattr(imseg, "DIRECT_RUN")
    for method in methods.split(","):
        for s in sizes.split(","):
            w, h = (int(v) for v in s.split("x"))
            img = natural_image(h, w)
            data = imseg.ImageData(None, img)
            p = imseg.PARAMS.validate({"method": method})

            def tool(enabled, direct_run=True, data=data, p=p):
                def f():
                    D.ENABLED = enabled
                    if direct:
                        imseg.DIRECT_RUN = direct_run
                    try:
                        return imseg.run(data, p, device=be)
                    finally:
                        D.ENABLED = True
                        if direct:
                            imseg.DIRECT_RUN = True
                return f

            variants = {"library": lambda img=img, m=method: segment(img, method=m, device=be),
                        "library_progress": lambda img=img, m=method: segment(
                            img, method=m, device=be, progress=Progress().sub(0.6, 1.0, "components + min size")),
                        "tool": tool(True)}
            if direct:
                variants["tool_pipeline"] = tool(True, False)
            variants["tool_eager"] = tool(False)
            ref = segment(img, method=method, device=be)
            for _ in range(3):   # GRAPH_AFTER: the tool's first runs of the set go stage by stage
                for name, fn in variants.items():  # the same labels every way
                    r = fn()
                    seg = getattr(r, "seg", r)
                    assert np.array_equal(seg.labels, ref.labels) and seg.n_regions == ref.n_regions, name
                    for k in ref.features:
                        assert np.array_equal(seg.features[k], ref.features[k]), (name, k)
            for rnd in range(rounds):
                for name, fn in variants.items():
                    g0 = G.stats()["replays"]
                    ts = _timed(fn, rep)
                    row = {"what": "tool", "method": method, "size": s, "variant": name, "round": rnd,
                           "e2e_ms": 1e3 * median(ts), "reps_ms": [round(1e3 * t, 3) for t in ts],
                           "replays": G.stats()["replays"] - g0}
                    rows.append(row)
                    print(f"== tool-vs-library {method} {s} round {rnd} {name:16s} {_ms(ts)}; graph replays "
                          f"{row['replays']}", flush=True)
            if breakdown:
                rows += tool_breakdown(method, s, data, p, variants, rep)
    print(f"   deferred stats {D.stats()}", flush=True)
    return rows


def tool_breakdown(method: str, size: str, data, p: dict, variants: dict, rep: int) -> list[dict]:
    """Where a call's host time goes (perf_counter_ns, ``rep`` calls of each variant, taking
    turns): the whole call, the part inside the library call (``segment_image`` /
    ``segment_contours``), the pipeline's device waits, the parameter validation, and inside
    the library: its checks, the graph lookup, the graph launch (the copy into the page-locked
    input and the launch), the download (DMA and its wait) and the rest (the rest of the host
    work and the wait for the graph's kernels). Each wrapper adds ~0.3 us."""
    from app.tools import imseg
    from gpu_kernels.backend import Backend
    from gpu_kernels.imseg import contours as CT
    from gpu_kernels.imseg import graphs as G
    from gpu_kernels.imseg import segment as SG

    acc: dict = {}
    patched = []
    inside = [False]

    def wrap(owner, name, key):
        fn = getattr(owner, name)
        own = name in vars(owner)

        def timed(*a, **kw):
            # the library's own pieces count where the library call made them (a check the tool
            # makes before it calls the library is "... (tool)")
            k = key if key == "library" or inside[0] or key in ("validate", "pipeline waits") else f"{key} (tool)"
            if key == "library":
                inside[0] = True
            t0 = time.perf_counter_ns()
            try:
                return fn(*a, **kw)
            finally:
                acc[k] = acc.get(k, 0) + time.perf_counter_ns() - t0
                if key == "library":
                    inside[0] = False
        setattr(owner, name, timed)
        patched.append((owner, name, fn, own))

    wrap(SG, "segment_image", "library")
    wrap(CT, "segment_contours", "library")
    wrap(Backend, "synchronize", "pipeline waits")
    wrap(imseg.PARAMS, "validate", "validate")
    wrap(SG, "_check_params", "lib checks")
    wrap(SG, "as_image", "lib checks")
    wrap(CT, "check_params", "lib checks")
    wrap(CT, "as_image", "lib checks")
    wrap(G, "lookup", "graph lookup")
    wrap(G.PrefixGraph, "launch", "graph launch")
    wrap(G.ContourGraph, "launch", "graph launch")
    wrap(SG, "download", "download")
    wrap(CT, "download", "download")
    per: dict = {n: [] for n in variants if n != "tool_eager"}
    try:
        for _ in range(rep):
            for name in per:
                acc.clear()
                t0 = time.perf_counter_ns()
                variants[name]()
                total = time.perf_counter_ns() - t0
                per[name].append({"total": total, **acc})
    finally:
        for owner, name, fn, own in reversed(patched):
            if own:
                setattr(owner, name, fn)
            else:
                delattr(owner, name)
    rows = []
    keys = ("total", "library", "pipeline waits", "validate", "lib checks", "graph lookup", "graph launch", "download",
            "lib checks (tool)")
    for name, calls in per.items():
        med = {k: median(c.get(k, 0) for c in calls) / 1e3 for k in keys}
        med["outside the library"] = median(c["total"] - c.get("library", 0) for c in calls) / 1e3
        med["library, rest"] = median(c.get("library", 0) - sum(c.get(k, 0) for k in keys[4:8]) for c in calls) / 1e3
        rows.append({"what": "breakdown", "method": method, "size": size, "variant": name,
                     **{k: round(v, 1) for k, v in med.items()}})
        print(f"== breakdown {method} {size} {name:16s} " + ", ".join(f"{k} {v:.1f}" for k, v in med.items())
              + " (us, medians)", flush=True)
    return rows


def bench_first_runs(n: int = 12) -> list[dict]:
    """A full run of the tool for a parameter set it has not seen (a first-stage slider): with
    GRAPH_AFTER 1 (the library call captures a graph on it), 2 (the default: stage by stage)
    and the eager stages; 512^2, ``n`` new merge distances each."""
    from app.tools import imseg
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import deferred as D

    be = get_backend("cuda")
    data = imseg.ImageData(None, natural_image(512, 512))
    imseg.run(data, {"method": "kmeans"}, device=be)
    rows = []
    for k, (after, enabled) in enumerate(((1, True), (2, True), (2, False))):
        D.GRAPH_AFTER, D.ENABLED = after, enabled
        ts = []
        for i in range(n):
            p = {"method": "kmeans", "merge_distance": 5.0 + 0.37 * i + 0.01 * k}
            t0 = time.perf_counter()
            imseg.run(data, p, device=be)
            ts.append(time.perf_counter() - t0)
        D.GRAPH_AFTER, D.ENABLED = 2, True
        name = f"graph_after={after}" if enabled else "eager"
        rows.append({"what": "first_run", "variant": name, "e2e_ms": 1e3 * median(ts),
                     "reps_ms": [round(1e3 * t, 3) for t in ts]})
        print(f"== first full run of a new parameter set, 512^2, {name:13s} {_ms(ts)}", flush=True)
    return rows


def bench_live(rep: int = 12) -> list[dict]:
    """Live edits in the window's way (a stage cache): a full run, then ``rep`` min_size edits
    (only the segment stage runs) and ``rep`` k_max edits, eager and deferred taking turns (every
    edit's result stays in the cache, so each needs a page-locked block: the first round starts
    from an empty pinned pool, each later one with the blocks the previous round's cache freed)."""
    import gc

    import cupy as cp

    from app.tools import imseg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import deferred as D

    be = get_backend("cuda")
    rows = []
    for enabled in (False, True, False, True):  # taking turns, each from an empty page-locked pool
        D.ENABLED = enabled
        gc.collect()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        data = imseg.ImageData(None, natural_image(512, 512))
        cache = StageCache(cap_bytes=1 << 30)
        for param, vals in (("min_size", [64 + 8 * i for i in range(rep)]), ("k_max", [32 + i for i in range(rep)])):
            ts, rans = [], set()
            imseg.PIPELINE.execute(data, imseg.PARAMS.validate({"method": "kmeans"}), device=be, cache=cache,
                                   scope="b")
            for v in vals:
                t0 = time.perf_counter()
                _, rep_ = imseg.PIPELINE.execute(data, imseg.PARAMS.validate({"method": "kmeans", param: v}),
                                                 device=be, cache=cache, scope="b")
                ts.append(time.perf_counter() - t0)
                rans.add(tuple(rep_.ran))
            name = "deferred" if enabled else "eager"
            rows.append({"what": "live", "variant": name, "param": param, "e2e_ms": 1e3 * median(ts),
                         "reps_ms": [round(1e3 * t, 3) for t in ts], "ran": sorted(rans)})
            print(f"== live edit {param:8s} {name:8s} {_ms(ts)}; first {1e3 * ts[0]:.3f} ms; ran {sorted(rans)}",
                  flush=True)
    D.ENABLED = True
    return rows


def process_probe(rep: int = 30) -> dict:
    """Goal 2, one fresh process: contours 512^2 end to end with its stages, and probes that
    tell a slow host (a Python loop), slow launches (empty kernels), slow DMA (a page-locked
    upload of the image) and a slow GPU (a kernel timed by events) apart."""
    import os

    import cupy as cp

    from gpu_kernels.imseg.api import segment

    img = natural_image(512, 512)
    segs = []

    def run():
        s = segment(img, method="contours", device="cuda")
        segs.append(s.timings)
        return s

    from app.tools import imseg
    from gpu_kernels.imseg import graphs as G

    for _ in range(3):
        run()
    segs.clear()
    ts = _timed(run, rep)
    stages = {k: round(1e3 * median([t[k] for t in segs if k in t]), 3) for k in segs[-1]}
    # the same without the contours graph (the code before session 7), then with it again, and
    # the tool's run of the default method (the staged pipeline: no graph)
    G.CONTOURS = False
    ts_off = _timed(run, rep)
    G.CONTOURS = True
    ts_on2 = _timed(run, rep)
    data = imseg.ImageData(None, img)
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    ts_tool = _timed(lambda: imseg.run(data, {}, device=be), rep)

    def pyloop():
        x = 0
        for i in range(20000):
            x += i * i
        return x

    host_us = 1e6 * median(_timed(pyloop, 30))
    noop = cp.RawKernel('extern "C" __global__ void s7_noop(int* y) {}', "s7_noop")
    y = cp.zeros(1, cp.int32)

    def launches():
        for _ in range(100):
            noop((1,), (1,), (y,))
        cp.cuda.get_current_stream().synchronize()

    launch_us = 1e6 * median(_timed(launches, 10)) / 100
    pinned = cp.cuda.alloc_pinned_memory(img.nbytes)
    src = np.frombuffer(pinned, np.uint8, img.size)
    src[:] = img.ravel()
    dst = cp.empty(img.size, cp.uint8)

    def dma():
        dst.set(src)
        cp.cuda.get_current_stream().synchronize()

    dma_us = 1e6 * median(_timed(dma, 30))
    a = cp.random.random(1 << 22, dtype=cp.float32)
    gpu_us = 1e3 * gpu_time(lambda: cp.cumsum(a), rep=30)
    cpu = -1
    try:
        cpu = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36])
    except Exception:  # noqa: BLE001
        pass
    r = {"what": "probe", "pid": os.getpid(), "cpu": cpu, "affinity": sorted(os.sched_getaffinity(0))[:4],
         "e2e_ms": round(1e3 * median(ts), 3), "e2e_no_graph_ms": round(1e3 * median(ts_off), 3),
         "e2e_again_ms": round(1e3 * median(ts_on2), 3), "tool_ms": round(1e3 * median(ts_tool), 3),
         "spread": spread(ts), "stages_ms": stages,
         "host_loop_us": round(host_us, 1), "launch_us": round(launch_us, 2), "dma_768k_us": round(dma_us, 1),
         "gpu_cumsum_us": round(gpu_us, 1)}
    print("PROBE " + json.dumps(r), flush=True)
    return r


def dump_outputs(path: str, bsds: str) -> None:
    """Outputs of the k-means pipeline (q 5: the fused k-means; q 6: the assignment kernel) on
    the 20 BSDS images and natural 512^2 / 4K, and GPU times of the union-find labelling and of
    k-means at q 6 (CUDA events), for comparing two trees (D1, D2: bit-identical, not slower)."""
    import glob

    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import graphs as G
    from gpu_kernels.imseg import kmeans as K
    from gpu_kernels.imseg import label as L
    from gpu_kernels.imseg.segment import segment_image

    be = get_backend("cuda")
    G.ENABLED = False
    imgs = {}
    for f in sorted(glob.glob(f"{bsds}/*.jpg")):
        import cv2

        imgs[Path(f).stem] = cv2.cvtColor(cv2.imread(f), cv2.COLOR_BGR2RGB)
    imgs["nat512"], imgs["nat4k"] = natural_image(512, 512), natural_image(2160, 3840)
    out = {}
    for name, img in imgs.items():
        for q in (5, 6):
            for conn in (4, 8):
                s = segment_image(img, device=be, q=q, connectivity=conn)
                key = f"{name}_q{q}_c{conn}"
                out[key + "_labels"], out[key + "_clusters"], out[key + "_centres"] = s.labels, s.clusters, s.centres
                for fk, fv in s.features.items():
                    out[key + "_f_" + fk] = np.asarray(fv)
    img = imgs["nat4k"]
    cl = cp.asarray(segment_image(img, device=be).clusters).ravel()
    h, w = img.shape[:2]
    t_uf = {conn: gpu_time(lambda c=conn: L.unionfind_device(be, cl, h, w, c), rep=50) for conn in (4, 8)}
    from gpu_kernels.imseg import color as C

    img_d = cp.asarray(img)
    hist = cp.zeros(1 << 18, cp.uint32)
    codes = C.codes_device(be, img_d, h * w, 3, 6, hist=hist)

    def km6():
        K.kmeans_device(be, codes.copy(), h, w, 6, 64, 10, 18.0, hist, "histogram")

    t_km6 = gpu_time(km6, rep=50)
    out["__t_unionfind4_ms"], out["__t_unionfind8_ms"] = np.float64(t_uf[4]), np.float64(t_uf[8])
    out["__t_kmeans_q6_ms"] = np.float64(t_km6)
    np.savez_compressed(path, **out)
    G.ENABLED = True
    print(f"== dump {path}: {len(imgs)} images, unionfind 4K {t_uf[4]:.3f} / {t_uf[8]:.3f} ms (4/8-conn), "
          f"k-means q 6 4K {t_km6:.3f} ms", flush=True)


def compare_dumps(a: str, b: str) -> None:
    A, B = np.load(a), np.load(b)
    keys = sorted(k for k in A.files if not k.startswith("__"))
    bad = [k for k in keys if k not in B.files or not np.array_equal(A[k], B[k])]
    print(f"== compare {a} vs {b}: {len(keys)} arrays, {len(bad)} differ {bad[:10]}", flush=True)
    for k in sorted(k for k in A.files if k.startswith("__")):
        print(f"   {k}: {float(A[k]):.4f} vs {float(B[k]):.4f}", flush=True)

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="512x512,1920x1080,3840x2160")
    ap.add_argument("--methods", default="contours,kmeans")
    ap.add_argument("--rep", type=int, default=10)
    ap.add_argument("--params", default="{}")
    ap.add_argument("--json", default=None)
    ap.add_argument("--upload", action="store_true", help="also time the upload variants")
    ap.add_argument("--chunks", action="store_true", help="also time the pixels-per-thread variants")
    ap.add_argument("--no-kernels", action="store_true", help="skip the per-kernel profile (no PyTorch)")
    ap.add_argument("--host-profile", default="", help="method:WxH: cProfile of the host side of 30 calls")
    ap.add_argument("--trace", default="", help="method:WxH:path: a torch.profiler chrome trace of 3 calls")
    ap.add_argument("--unread-grid", action="store_true",
                    help="merge.UNREAD_ONE_BLOCK = False: rounds as grid kernels where the count stays on the device")
    ap.add_argument("--graph-one-block", action="store_true",
                    help="graphs.GRID_ROUNDS = False: the graph's rounds in one block (md_round)")
    ap.add_argument("--no-graphs", action="store_true", help="graphs.ENABLED = False (the ordinary launches)")
    ap.add_argument("--again", action="store_true", help="time every row a second time at the end (same process)")
    ap.add_argument("--slic-chunk", type=int, default=0, help="pixels per thread of the SLIC assignment")
    ap.add_argument("--feat-chunk", type=int, default=0, help="pixels per thread of the feature kernels")
    ap.add_argument("--merge-one-block-max", type=int, default=-1,
                    help="merge.ONE_BLOCK_MAX for this run (0: the k-means rounds as one grid kernel a step)")
    ap.add_argument("--no-region-smem", action="store_true",
                    help="the contours merge never keeps only its regions in shared memory (session 4's choice)")
    ap.add_argument("--upload-pinned-min", type=int, default=-1,
                    help="_util.UPLOAD_PINNED_MIN for this run (bytes; 0: small images through xp.asarray)")
    ap.add_argument("--tree", default="", help="import gpu_kernels from this tree (a base copy) instead of the repo's")
    ap.add_argument("--tool", default="", help="sizes (WxH,...): the tool's run against the library call (goal 1)")
    ap.add_argument("--tool-methods", default="kmeans", help="methods for --tool (kmeans,contours)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of --tool (the variants taking turns)")
    ap.add_argument("--breakdown", action="store_true", help="--tool: the host pieces of each variant's call")
    ap.add_argument("--first-runs", action="store_true", help="the tool's full run for new parameter sets")
    ap.add_argument("--live", action="store_true", help="live edits with a stage cache, deferred and eager")
    ap.add_argument("--probe", action="store_true", help="contours 512^2 and host/DMA/GPU probes (one process)")
    ap.add_argument("--dump", default="", help="save the k-means outputs and kernel times to this .npz")
    ap.add_argument("--bsds", default=".carry-s7is/bsds20", help="folder of the 20 BSDS images for --dump")
    ap.add_argument("--compare", default="", help="A.npz,B.npz: compare two --dump files")
    a = ap.parse_args(argv)
    if a.tree:
        sys.path.insert(0, str(Path(a.tree).resolve()))
    if a.compare:
        compare_dumps(*a.compare.split(","))
        return
    import cupy as cp

    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, CuPy {cp.__version__}", flush=True)
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import features as F

    if a.slic_chunk:
        C.SLIC_CHUNK = a.slic_chunk
    if a.feat_chunk:
        F.CHUNK = a.feat_chunk
    if a.merge_one_block_max >= 0:
        from gpu_kernels.imseg import merge as M

        M.ONE_BLOCK_MAX = a.merge_one_block_max
    if a.no_region_smem:
        C.merge_region_smem_bytes = lambda R: 1 << 40
    if a.unread_grid:
        from gpu_kernels.imseg import merge as M

        M.UNREAD_ONE_BLOCK = False
    if a.graph_one_block:
        from gpu_kernels.imseg import graphs as G

        G.GRID_ROUNDS = False
    if a.no_graphs:
        from gpu_kernels.imseg import graphs as G

        G.ENABLED = False
    if a.upload_pinned_min >= 0:
        from gpu_kernels.imseg import _util

        _util.UPLOAD_PINNED_MIN = a.upload_pinned_min
    rows = bench_upload() if a.upload else []
    if a.dump:
        dump_outputs(a.dump, a.bsds)
    if a.probe:
        rows.append(process_probe(a.rep))
    if a.tool:
        rows += bench_tool(a.tool, a.rep, a.tool_methods, a.rounds, a.breakdown)
    if a.first_runs:
        rows += bench_first_runs()
    if a.live:
        rows += bench_live()
    if a.chunks:
        rows += bench_chunks()
    for method in (a.methods.split(",") if a.methods else []):
        for s in a.sizes.split(","):
            w, h = (int(v) for v in s.split("x"))
            rows.append(profile_one(method, h, w, a.rep, json.loads(a.params)))
    if a.again:
        for method in (a.methods.split(",") if a.methods else []):
            for s in a.sizes.split(","):
                w, h = (int(v) for v in s.split("x"))
                r = profile_one(method, h, w, a.rep, json.loads(a.params))
                r["again"] = True
                rows.append(r)
    if a.host_profile:
        m, s = a.host_profile.split(":")
        w, h = (int(v) for v in s.split("x"))
        host_profile(m, h, w, 30, json.loads(a.params))
    if a.trace:
        m, s, path = a.trace.split(":", 2)
        w, h = (int(v) for v in s.split("x"))
        chrome_trace(m, h, w, path, json.loads(a.params))
    if not a.no_kernels:
        for r in rows:
            if "method" in r:
                kernels_one(r, json.loads(a.params))
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
