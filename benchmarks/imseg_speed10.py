"""Session 10: where the k-means pipeline's 4K time goes and why it jitters (issue 21), one process.

* ``--phases``: per-call host phases of the 4K library call (``perf_counter_ns`` wrappers around
  the checks, the upload, the queueing of each stage, each host wait, the download), medians;
* ``--timeline``: the GPU's kernels and copies of a few 4K calls (CUPTI through torch.profiler) with
  the idle gaps between them and the activity either side of each gap;
* rounds: ``--rounds`` rounds of ``--rep`` 4K calls per variant, the variants taking turns; for
  every call its wall time, the garbage collector's time inside it, and whether CuPy's device or
  page-locked pool grew; best / median / p90 a round, and the slow calls with what they had;
* variants (``VARIANTS``: module switches or a replaced function, the same code otherwise):
  ``base`` (the tree as it is), ``ovl`` / ``ovloff`` (the clusters' and labels' host copies on a
  side stream, started as soon as each is final: ``_util.EARLY_DOWNLOAD`` on / off), ``ovlsort``
  (and features by sorting), ``ovlt8`` (and 8 upload threads), ``sortf`` (features by sorting);
  once segment.py has the change, ``base`` is the tree with ``EARLY_DOWNLOAD`` off (the one
  download at the end, as before); every variant's labels, clusters, centres and
  features are checked equal to the first variant's (and the CPU path's at 512^2, and with
  ``--cpu-check``'s sizes) before any timing.

    python benchmarks/imseg_speed10.py --phases --timeline --rounds 5 --rep 30 --json out.json
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import re
import sys
import time
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.imseg_profile import natural_image  # noqa: E402


def _outputs(seg) -> dict:
    out = {"labels": seg.labels, "clusters": seg.clusters, "centres": seg.centres}
    out.update({f"f_{k}": v for k, v in seg.features.items()})
    return out


def _diff(a: dict, b: dict) -> list:
    return [k for k in a if k in b and not np.array_equal(a[k], b[k])] + sorted(set(a) ^ set(b))


#: the CPU path's float features agree to these (the GPU's CIELAB and moment sums are exact
#: fixed-point / integer sums, the CPU's float64 bincounts): tests/imseg/test_imseg_gpu.py's
_CPU_CLOSE = {"centres": 1e-12, "f_centroid": 1e-9, "f_intensity_mean": 1e-9, "f_intensity_mean_lab": 1e-4,
              "f_moments_central": 1e-7}


def _diff_cpu(cpu: dict, gpu: dict) -> list:
    """Keys where the GPU's outputs differ from the CPU path's: exactly for labels, clusters and
    the integer features, within ``_CPU_CLOSE`` (relative to the largest value) for the others."""
    bad = sorted(set(cpu) ^ set(gpu))
    for k in cpu:
        if k not in gpu:
            continue
        a, b = np.asarray(cpu[k]), np.asarray(gpu[k])
        if k in _CPU_CLOSE:
            ok = a.shape == b.shape and np.allclose(a, b, rtol=0, atol=_CPU_CLOSE[k] * (1 + np.abs(a).max()))
        else:
            ok = np.array_equal(a, b)
        if not ok:
            bad.append(k)
    return bad


# ----------------------------------------------------------------------------- variants
#: variant -> (EARLY_DOWNLOAD, features method, UPLOAD_THREADS). Call 1 (before segment.py had the
#: early copies) also timed "piece": the threaded upload in 2 MB pieces, each sent as soon as copied
#: (no gain: the _util.UPLOAD_PIECE switch is gone), and the early copies through a replaced
#: segment._segment_gpu ("ovl*": now the tree's own path, the same as the rows without the prefix)
VARIANTS = {
    "old": (False, "runs", 4),    # session 9's path: one download at the end, raster features
    "new": (True, None, 4),       # the tree's defaults
    "base": (False, None, 4),
    "ovl": (True, None, 4),
    "ovloff": (False, None, 4),
    "ovlsort": (True, "sort", 4),
    "ovlt8": (True, None, 8),
    "sortf": (False, "sort", 4),
}


def set_variant(v: str) -> dict:
    """Switch to variant ``v`` (VARIANTS); returns the keywords its calls take."""
    from gpu_kernels.imseg import _util as U

    early, fm, threads = VARIANTS[v]
    U.EARLY_DOWNLOAD = early
    U.UPLOAD_THREADS = threads
    return {"features_method": fm} if fm else {}


# ----------------------------------------------------------------------------- phases
_PHASES: list = []
_T0 = [0]


def _wrap(mod, name: str, label: str):
    fn = getattr(mod, name)

    def w(*a, **k):
        t0 = time.perf_counter_ns()
        try:
            return fn(*a, **k)
        finally:
            _PHASES.append((label, t0 - _T0[0], time.perf_counter_ns() - _T0[0]))

    w.__wrapped__ = fn
    setattr(mod, name, w)
    return fn


def phases(call, rep: int) -> dict:
    """Median start / end (us from the call's start) and duration of each wrapped host phase."""
    from gpu_kernels.imseg import _util as U
    from gpu_kernels.imseg import color as C
    from gpu_kernels.imseg import features as F
    from gpu_kernels.imseg import kmeans as K
    from gpu_kernels.imseg import label as L
    from gpu_kernels.imseg import merge as M
    from gpu_kernels.imseg import segment as S

    targets = [(S, "as_image", "as_image"), (S, "_check_params", "check_params"), (S, "check_fits", "check_fits"),
               (S, "upload", "upload"), (C, "codes_device", "codes (queue)"), (K, "kmeans_device", "kmeans (queue)"),
               (L, "unionfind_device", "labelling (queue)"), (M, "merge_queue", "merge_queue"),
               (M, "merge_finish", "merge_finish"), (F, "features_device", "features (queue)"),
               (S, "download", "download (wait)"), (U.SyncCounter, "read_many", "read_many (wait)"),
               (U.EarlyDownload, "start", "early.start"), (U.EarlyDownload, "download", "early.download (wait)"),
               (U.StageTimer, "result", "timer.result")]
    saved = [(m, n, _wrap(m, n, lab)) for m, n, lab in targets]
    per: dict = {}
    walls = []
    try:
        for _ in range(rep):
            _PHASES.clear()
            _T0[0] = time.perf_counter_ns()
            call()
            walls.append((time.perf_counter_ns() - _T0[0]) / 1e3)
            seen: dict = {}
            for lab, a, b in _PHASES:
                s = seen.setdefault(lab, [a, 0.0, 0])
                s[1] += b - a
                s[2] += 1
            for lab, (a, d, cnt) in seen.items():
                per.setdefault(lab, []).append((a / 1e3, d / 1e3, cnt))
    finally:
        for m, n, fn in saved:
            setattr(m, n, fn)
    out = {"wall_us": median(walls)}
    for lab, rows in sorted(per.items(), key=lambda kv: median(r[0] for r in kv[1])):
        out[lab] = {"start_us": median(r[0] for r in rows), "us": median(r[1] for r in rows), "count": rows[0][2]}
    return out


# ----------------------------------------------------------------------------- timeline
def timeline(call, rep: int = 3) -> dict | None:
    """The GPU's activities of ``rep`` calls (CUPTI): busy time, the idle gaps over 15 us and
    the activities either side."""
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
    except Exception as exc:  # noqa: BLE001
        print(f"  (no torch.profiler: {exc})")
        return None
    call()
    marks = []
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(rep):
            t0 = time.perf_counter_ns()
            call()
            marks.append((t0, time.perf_counter_ns()))
    ev = sorted(((e.time_range.start, e.time_range.end, e.name[:40]) for e in prof.events()
                 if e.device_type == DeviceType.CUDA), key=lambda x: x[0])
    if not ev:
        return None
    # split into calls at gaps longer than 300 us (the host's return and next call)
    calls, cur = [], [ev[0]]
    for e in ev[1:]:
        if e[0] - max(x[1] for x in cur) > 300:
            calls.append(cur)
            cur = [e]
        else:
            cur.append(e)
    calls.append(cur)
    res = {"calls": []}
    for cl in calls:
        start, end = cl[0][0], max(x[1] for x in cl)
        busy, gaps, hi = 0.0, [], cl[0][0]
        prev = None
        for s, e, name in cl:
            if s > hi:
                if s - hi > 15:
                    gaps.append({"after": prev, "before": name, "at_us": round(hi - start, 1), "us": round(s - hi, 1)})
            busy += max(0.0, e - max(s, hi))
            hi = max(hi, e)
            prev = name
        res["calls"].append({"span_us": round(end - start, 1), "busy_us": round(busy, 1), "gaps": gaps,
                             "acts": [(round(s - start, 1), round(e - s, 1), n) for s, e, n in cl]})
    res["wall_us"] = [round((b - a) / 1e3, 1) for a, b in marks]
    return res


# ----------------------------------------------------------------------------- rounds
class _GcTimer:
    def __init__(self):
        self.t = 0.0
        self.n = 0
        self._s = 0

    def __call__(self, phase, info):
        if phase == "start":
            self._s = time.perf_counter_ns()
        else:
            self.t += (time.perf_counter_ns() - self._s) / 1e6
            self.n += 1


def timed_calls(call, rep: int) -> list[dict]:
    import cupy as cp

    pool, ppool = cp.get_default_memory_pool(), cp.get_default_pinned_memory_pool()
    gt = _GcTimer()
    gc.callbacks.append(gt)
    rows = []
    try:
        call()
        for _ in range(rep):
            tb, pb = pool.total_bytes(), ppool.n_free_blocks()
            gt.t, gt.n = 0.0, 0
            t0 = time.perf_counter()
            call()
            ms = 1e3 * (time.perf_counter() - t0)
            rows.append({"ms": ms, "gc_ms": gt.t, "gc_n": gt.n, "pool_grew": pool.total_bytes() - tb,
                         "pinned_free_delta": ppool.n_free_blocks() - pb})
    finally:
        gc.callbacks.remove(gt)
    return rows


def _pyloop_us() -> float:
    ts = []
    for _ in range(15):
        t0 = time.perf_counter()
        x = 0
        for i in range(20000):
            x += i * i
        ts.append(time.perf_counter() - t0)
    return 1e6 * median(ts)


def _stats(ms: list) -> dict:
    q = sorted(ms)
    return {"best": q[0], "median": median(q), "p90": q[(9 * len(q)) // 10], "max": q[-1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default="base,ovl,ovloff,ovlsort,ovlt8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rep", type=int, default=30)
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--timeline", action="store_true")
    ap.add_argument("--no-checks", action="store_true")
    ap.add_argument("--cpu-check", default="512x512", help="sizes checked against the CPU path too ('' none)")
    ap.add_argument("--also", default="", help="more calls timed each round with the tree's defaults: "
                    "kmeans512, contours512, contours1080 (library calls, host image in, host results out)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg.segment import segment_image

    be = get_backend("cuda")
    print(f"== device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, host loop {_pyloop_us():.0f} us",
          flush=True)
    img4k = natural_image(2160, 3840)
    variants = a.variants.split(",")
    res: dict = {"phases": {}, "timeline": {}, "rows": [], "checks": {}, "calls": {}}

    def call_for(v):
        kw = set_variant(v)
        return lambda: segment_image(img4k, device=be, **kw)

    if not a.no_checks:
        ref = None
        for v in variants:
            call = call_for(v)
            outs = [_outputs(call()) for _ in range(2)]
            if ref is None:
                ref = outs[0]
                s = call()
                print(f"== 4K: {s.n_regions} regions, k {s.n_clusters}, syncs {s.syncs} ({s.info['sync_reasons']}), "
                      f"rounds {s.info['merge_rounds']}", flush=True)
            bad = sorted({x for o in outs for x in _diff(ref, o)})
            res["checks"][f"{v}/4k"] = bad
            print(f"== check {v} 4K: {'same as ' + variants[0] if not bad else 'DIFFERS ' + str(bad)}", flush=True)
        for size in filter(None, a.cpu_check.split(",")):
            w, h = (int(x) for x in size.split("x"))
            img = natural_image(h, w)
            cpu = _outputs(segment_image(img, device="cpu"))
            for v in variants:
                kw = set_variant(v)
                bad = sorted({x for _ in range(2) for x in _diff_cpu(cpu, _outputs(segment_image(img, device=be, **kw)))})
                res["checks"][f"{v}/{size}/cpu"] = bad
                print(f"== check {v} {size} vs CPU: {'same' if not bad else 'DIFFERS ' + str(bad)}", flush=True)
    if a.phases:
        for v in variants[:4]:
            call = call_for(v)
            for _ in range(3):
                call()
            ph = phases(call, 20)
            res["phases"][v] = ph
            print(f"== phases {v}: wall {ph['wall_us']:.0f} us", flush=True)
            for k, r in ph.items():
                if k != "wall_us":
                    print(f"     {r['start_us']:8.0f} +{r['us']:7.0f} us x{r['count']} {k}", flush=True)
    if a.timeline:
        for v in variants[:4]:
            tl = timeline(call_for(v))
            if tl:
                res["timeline"][v] = tl
                for c in tl["calls"]:
                    print(f"== timeline {v}: span {c['span_us']:.0f} us, busy {c['busy_us']:.0f} us; gaps: "
                          + ", ".join(f"{g['us']:.0f}@{g['at_us']:.0f} ({g['after']} > {g['before']})"
                                      for g in c["gaps"]), flush=True)
                print(f"   walls {tl['wall_us']}", flush=True)
    from gpu_kernels.imseg.api import segment

    sizes = {"512": (512, 512), "1080": (1080, 1920)}
    extra = {}
    for name in filter(None, a.also.split(",")):
        method, size = re.fullmatch(r"(kmeans|contours)(512|1080)", name).groups()
        extra[name] = functools.partial(segment, natural_image(*sizes[size]), method=method, device=be)
    for rnd in range(a.rounds):
        loop = _pyloop_us()
        for v in variants + list(extra):
            if v in extra:
                set_variant("new")
                call = extra[v]
            else:
                call = call_for(v)
            for _ in range(2):
                call()
            rows = timed_calls(call, a.rep)
            st = _stats([r["ms"] for r in rows])
            slow = [r for r in rows if r["ms"] > 1.25 * st["median"]]
            row = {"round": rnd, "variant": v, "loop_us": loop, **st, "slow": slow,
                   "gc_ms_total": sum(r["gc_ms"] for r in rows),
                   "pool_grew_calls": sum(1 for r in rows if r["pool_grew"]),
                   "pinned_new_calls": sum(1 for r in rows if r["pinned_free_delta"] < 0)}
            res["rows"].append(row)
            res["calls"][f"{rnd}/{v}"] = [round(r["ms"], 3) for r in rows]
            print(f"== round {rnd} {v:6s} best {st['best']:.3f} median {st['median']:.3f} p90 {st['p90']:.3f} "
                  f"max {st['max']:.3f} ms | gc {row['gc_ms_total']:.2f} ms, pool grew {row['pool_grew_calls']}, "
                  f"pinned new {row['pinned_new_calls']}, loop {loop:.0f} us; slow: "
                  + ", ".join(f"{r['ms']:.2f} (gc {r['gc_ms']:.2f})" for r in slow), flush=True)
    set_variant("base")
    if res["rows"]:
        print("== summary (round medians: min / median / max; worst p90), ms", flush=True)
        for v in variants + list(extra):
            rs = [r for r in res["rows"] if r["variant"] == v]
            meds = [r["median"] for r in rs]
            print(f"   {v:6s} {min(meds):.3f} / {median(meds):.3f} / {max(meds):.3f}; p90 max "
                  f"{max(r['p90'] for r in rs):.3f}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
