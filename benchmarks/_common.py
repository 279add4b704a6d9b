"""Timing helpers shared by the benchmarks: warm-up, CUDA events, medians, tables.

Only numpy (and cupy where there is a GPU) are needed, so the scripts run on a bare GPU
host.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = [
    "median",
    "time_cpu",
    "time_gpu",
    "device_name",
    "host_description",
    "format_table",
    "save_results",
    "fmt_bytes",
    "fmt_seconds",
    "BSDS_DEFAULT",
    "bsds_options",
    "bsds_arguments",
    "worker_map",
    "superpixel_graph",
    "majority_agreement",
    "timed_segmentation",
    "same_segmentation",
    "rotating_times",
]

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def time_cpu(fn: Callable[[], object], *, warmup: int = 0, repeat: int = 1) -> dict:
    """Wall-clock seconds of ``fn()``: ``{"median", "min", "times"}``."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median": median(times), "min": min(times), "times": times}


def time_gpu(fn: Callable[[], object], *, warmup: int = 1, repeat: int = 3, max_seconds: float | None = None) -> dict:
    """Seconds of ``fn()`` on the current CUDA stream, timed with CUDA events.

    ``fn`` may synchronise itself (the APSP entry points do); the events bracket the
    whole call, so host work inside it counts as well. After ``max_seconds`` of timed
    runs no further repetition is started.
    """
    import cupy as cp

    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    spent = 0.0
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        t = cp.cuda.get_elapsed_time(start, stop) / 1e3
        times.append(t)
        spent += t
        if max_seconds is not None and spent > max_seconds:
            break
    return {"median": median(times), "min": min(times), "times": times}


def felzenszwalb_1080p_ms(base, reps: int = 3) -> float:
    """The CPU peer of the imseg speed limits: scikit-image's felzenszwalb(scale 500, sigma 0.8, min size 200) on
    ``base`` resized to 1920 x 1080, median ms of ``reps`` runs (printed too)."""
    import cv2
    import numpy as np
    from skimage.segmentation import felzenszwalb

    img = cv2.resize(base, (1920, 1080), interpolation=cv2.INTER_LINEAR)
    ts = []
    for _ in range(max(1, int(reps))):
        t1 = time.perf_counter()
        felzenszwalb(img, scale=500, sigma=0.8, min_size=200)
        ts.append(time.perf_counter() - t1)
    ms = float(np.median(ts) * 1e3)
    print("felzenszwalb 1080p CPU", ms, "ms", flush=True)
    return ms


def device_name() -> str:
    try:
        import cupy as cp

        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return (f"{name} ({props['multiProcessorCount']} SMs, {props['clockRate'] / 1e6:.2f} GHz, "
                f"{props['totalGlobalMem'] / 1024**3:.0f} GiB)")
    except Exception as exc:  # noqa: BLE001 - no GPU is a normal case here
        return f"no GPU ({type(exc).__name__})"


def host_description() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{platform.processor() or platform.machine()}, {cores} cores, Python {platform.python_version()}"


def fmt_bytes(b) -> str:
    if b is None:
        return "-"
    b = float(b)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1024
    return f"{b:.2f} GiB"


def fmt_seconds(t) -> str:
    if t is None or t != t:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.0f} us"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def format_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """Markdown table. ``columns``: (key, header); values are str()-ed, None as '-'."""
    head = "| " + " | ".join(h for _, h in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    lines = [head, sep]
    for r in rows:
        lines.append("| " + " | ".join("-" if r.get(k) is None else str(r.get(k)) for k, _ in columns) + " |")
    return "\n".join(lines)


def save_results(path: str | os.PathLike, payload: dict, table_md: str) -> None:
    """Write ``payload`` as JSON (``.json``) or the table with a header (``.md``); any other
    suffix writes both ``path.json`` and ``path.md``."""
    path = Path(path)
    payload = dict(payload)
    payload.setdefault("date", _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    payload.setdefault("device", device_name())
    payload.setdefault("host", host_description())
    payload.setdefault("command", " ".join(sys.argv))
    md = (f"Device: {payload['device']}; host: {payload['host']}; {payload['date']}\n\n"
          f"Command: `{payload['command']}`\n\n{table_md}\n")
    targets = [path] if path.suffix in (".json", ".md") else [path.with_suffix(".json"), path.with_suffix(".md")]
    for p in targets:
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".json":
            p.write_text(json.dumps(payload, indent=1, default=str))
        else:
            p.write_text(md)


# ----------------------------------------------------------------------------- the imseg quality scripts' set-up
#: the shared data's BSDS500 (the imseg quality scripts' ``--data``)
BSDS_DEFAULT = ROOT.parent / "shared" / "data" / "bsds500"


def bsds_options(ap, *, cache: str | None = None, val: str | None = None, out: str | None = None) -> None:
    """The options every imseg quality script starts with: ``--data`` (BSDS500, the shared data's by
    default), ``--cache`` (where ``cache`` names its default) and ``--workers``; ``--val`` and
    ``--out`` (default None: the script's own results file) where their help is given."""
    ap.add_argument("--data", default=str(BSDS_DEFAULT))
    if cache is not None:
        ap.add_argument("--cache", default=cache)
    ap.add_argument("--workers", type=int, default=1)
    if val is not None:
        ap.add_argument("--val", action="store_true", help=val)
    if out is not None:
        ap.add_argument("--out", default=None, help=out)


def bsds_arguments(description: str, argv=None, **options):
    """The parsed command line of an imseg quality script with only :func:`bsds_options`'s options
    (``options``: theirs)."""
    import argparse

    ap = argparse.ArgumentParser(description=description)
    bsds_options(ap, **options)
    return ap.parse_args(argv)


def worker_map(workers: int):
    """``(mapf, close)``: ``mapf(f, xs)`` is ``[f(x) for x in xs]``, on a fork pool of ``workers``
    processes (one item a task, in order) where ``workers`` > 1; ``close()`` ends the pool.

    >>> mapf, close = worker_map(1)
    >>> mapf(abs, [-1, 2])
    [1, 2]
    >>> close()
    """
    if workers > 1:
        import multiprocessing as mp

        pool = mp.get_context("fork").Pool(workers)
        return (lambda f, xs: pool.map(f, xs, chunksize=1)), pool.close
    return (lambda f, xs: list(map(f, xs))), (lambda: None)


def superpixel_graph(img) -> dict:
    """The imseg default's first steps on ``img`` (the NumPy path): the CIELAB planes blurred
    (``sm``), the gradient (``G``, ``gq``, ``q``), the SLIC step ``S``, the 4-connected superpixels
    (``comps``, ``R`` of them) and their region graph (``graph``); ``h``, ``w`` and the 8-bit
    picture ``u8`` too."""
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg import label as L

    h, w = img.shape[:2]
    u8 = C.to_u8(img)
    sm = C.blur_np(C.lab_planes_np(u8), C.DEFAULT_SIGMA)
    G, gq, q = C.gradient_np(sm)
    S = C.slic_step(h, w, C.DEFAULT_N_SUPERPIXELS)
    comps, R = L.label_np(C.slic_np(sm, q, S, C.DEFAULT_COMPACTNESS, C.SLIC_ITERATIONS), 4)
    graph = C.region_graph_np(comps, R, gq, q)
    return {"h": h, "w": w, "u8": u8, "sm": sm, "G": G, "gq": gq, "q": q, "S": S, "comps": comps, "R": R,
            "graph": graph}


def majority_agreement(cont, s0, cnt: int, ea, eb):
    """For each pair of regions (``ea[k]``, ``eb[k]``) of a merge (``s0``: superpixel -> region, ``cnt``
    regions), the share of the human segmentations in which both regions' majority segment is the
    same; ``cont``: each segmentation's contingency rows ``(ci, gi, c, ng)`` with the superpixels.

    >>> import numpy as np
    >>> cont = [(np.array([0, 1, 2]), np.array([0, 0, 1]), np.array([5, 5, 5]), 2)]
    >>> majority_agreement(cont, np.array([0, 1, 2]), 3, np.array([0, 1]), np.array([1, 2])).tolist()
    [1.0, 0.0]
    """
    import numpy as np

    same = np.zeros(len(ea))
    for ci, gi, c, ng in cont:
        M = np.zeros((cnt, ng))
        np.add.at(M, (s0[ci], gi), c)
        maj = M.argmax(1)
        same += maj[ea] == maj[eb]
    return same / len(cont)


# ----------------------------------------------------------------------------- the mesh A/B scripts' timed run
def timed_segmentation(path, device) -> tuple[float, str]:
    """One end-to-end run of the mesh A/B scripts: seconds to read ``path`` and segment it with the
    defaults on ``device`` (this tree's code, as the caller configured it), and the first 12 hex
    digits of the SHA-1 of its labels and colours (the same in every configuration of an A/B)."""
    import hashlib

    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import segment

    t0 = time.perf_counter()
    v, f = read_mesh(path)
    seg = segment.segment_mesh(v, f, device=device)
    dt = time.perf_counter() - t0
    return dt, hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12]


def same_segmentation(a, b) -> bool:
    """Two ``ImageSegmentation`` results are the same: region and cluster counts, merge rounds, labels,
    clusters and every feature (NaN = NaN)."""
    import numpy as np

    if a.n_regions != b.n_regions or a.n_clusters != b.n_clusters:
        return False
    if a.info["merge_rounds"] != b.info["merge_rounds"]:
        return False
    if not (np.array_equal(np.asarray(a.labels), np.asarray(b.labels))
            and np.array_equal(np.asarray(a.clusters), np.asarray(b.clusters))):
        return False
    if sorted(a.features) != sorted(b.features):
        return False
    return all(np.array_equal(np.asarray(a.features[k]), np.asarray(b.features[k]), equal_nan=True)
               for k in a.features)


def rotating_times(run: Callable[[], object], arms: Sequence[str], set_arm: Callable[[str], None], rounds: int,
                   sync: Callable[[], None], warm: int = 3) -> tuple[dict, dict]:
    """One-process A/B of switchable code paths: ``warm`` runs of each arm, then ``rounds`` rounds, each
    running every arm once in an order rotated by one per round (``set_arm(arm)`` then ``run()`` between two
    ``sync()``); returns ({arm: [ms]}, {arm: [result.timings]})."""
    names = list(arms)
    for arm in names:
        set_arm(arm)
        for _ in range(warm):
            run()
    t = {arm: [] for arm in names}
    st = {arm: [] for arm in names}
    for r in range(rounds):
        k = r % len(names)
        for arm in names[k:] + names[:k]:
            set_arm(arm)
            sync()
            t0 = time.perf_counter()
            s = run()
            sync()
            t[arm].append((time.perf_counter() - t0) * 1e3)
            st[arm].append(s.timings)
    return t, st
