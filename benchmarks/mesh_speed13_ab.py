"""Issue 22 (session 13): where a MEDIAN 17k run's time goes, and bit-identical candidates against it, in one process.

Built on session 10's end-to-end A/B (``benchmarks/mesh_e2e_session10.py``: from the file, read + ``segment_mesh``,
configurations interleaved after one warm-up each, the labels' and colours' SHA-1 per configuration):

- ``--stages N``: N traced runs per configuration (interleaved) of the first mesh. Every plain Python function of
  the mesh pipeline is wrapped (session 10's tracer) and each run's inclusive / self time per function, its
  thread and its first start / last end (ms from the run's start) are kept, with the run's garbage-collection
  time (``gc.callbacks``). Printed per configuration: for the functions over 0.5 ms, best / median / max and
  "slow − fast" = the median over the slower half of the runs (by total) minus the median over the quicker half:
  which stages make the median worse than the best.
- ``--pml-side N``: pymeshlab's step (the 17k mesh's 12k intermediate → 4k) N times on the calling thread and N
  times on a fresh thread that the caller joins (as the pipeline ran it in sessions 10-12), interleaved.
- Configurations (``--configs``): ``base`` (the tree); ``swap`` (``segment.SIMPLIFY_ON_CALLER = True``: pymeshlab's
  step on the calling thread, the full dual graph on a thread of its own); ``noswap`` (``= False``); ``gcoff``
  (``gc.disable()`` for the run); ``swapgc`` (both).

Session 14: ``SIMPLIFY_ON_CALLER`` is gone (its rule failed twice), so the configurations ``swap``, ``noswap`` and
``swapgc`` no longer run; this script records session 13's runs, and ``mesh_speed14_ab.py`` uses its tracer.

Example (device)::

    python benchmarks/mesh_speed13_ab.py 101.off 281.off --rounds 11 --configs base,swap,gcoff --stages 12 \\
        --pml-side 12 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_e2e_session10 as e2e  # noqa: E402

e2e.CONFIGS.update({
    "swap": {"gpu_kernels.mesh.segment.SIMPLIFY_ON_CALLER": True},
    "noswap": {"gpu_kernels.mesh.segment.SIMPLIFY_ON_CALLER": False},
    "gcoff": {"gc": False},
    "swapgc": {"gpu_kernels.mesh.segment.SIMPLIFY_ON_CALLER": True, "gc": False},
})
_set10 = e2e._set


def _set(cfg: dict) -> dict:
    """Session 10's switches, and ``"gc": False`` (the collector off for the run)."""
    cfg = dict(cfg)
    old = {}
    if "gc" in cfg:
        want = cfg.pop("gc")
        old["gc"] = gc.isenabled()
        (gc.enable if want else gc.disable)()
    old.update(_set10(cfg))
    return old


e2e._set = _set

GC: list = []


def _gc_cb(phase, info):
    if phase == "start":
        GC.append([info["generation"], time.perf_counter(), 0.0])
    elif GC:
        GC[-1][2] = time.perf_counter() - GC[-1][1]


class Tracer13(e2e.Tracer):
    """Session 10's tracer, also keeping every call's thread and start / end time."""

    def __init__(self):
        super().__init__()
        self.events: list = []

    def reset(self):
        super().reset()
        self.events = []

    def _wrap(self, fn, name):
        inner = super()._wrap(fn, name)
        tr = self

        def wrapped(*a, **kw):
            t = time.perf_counter()
            try:
                return inner(*a, **kw)
            finally:
                tr.events.append((name, threading.current_thread().name, t, time.perf_counter()))
        wrapped.__wrapped__ = fn
        wrapped.__name__ = getattr(fn, "__name__", name)
        wrapped.__doc__ = getattr(fn, "__doc__", None)
        return wrapped


def traced_run(tr: Tracer13, path: str, dev: str, cfg: str) -> dict:
    old = e2e._set(e2e.CONFIGS[cfg])
    tr.reset()
    GC.clear()
    try:
        t0 = time.perf_counter()
        v, f = e2e.read_mesh(path)
        t_read = time.perf_counter()
        seg = e2e.segment.segment_mesh(v, f, device=dev)
        total = time.perf_counter() - t0
    finally:
        e2e._set(old)
    first: dict = {}
    for name, thread, a, b in tr.events:
        s = first.setdefault(name, [a, b, set()])
        s[0], s[1] = min(s[0], a), max(s[1], b)
        s[2].add(thread.replace("gpulab-", ""))
    return {
        "total": 1e3 * total, "read": 1e3 * (t_read - t0),
        "incl": {k: 1e3 * v[1] for k, v in tr.stats.items()},
        "self": {k: 1e3 * v[2] for k, v in tr.stats.items()},
        "calls": {k: v[0] for k, v in tr.stats.items()},
        "span": {k: [1e3 * (v[0] - t0), 1e3 * (v[1] - t0), sorted(v[2])] for k, v in first.items()},
        "gc_ms": 1e3 * sum(x[2] for x in GC), "gc_n": [sum(1 for x in GC if x[0] == g) for g in range(3)],
        "timings": {k: 1e3 * v for k, v in seg.info.get("timings", {}).items() if isinstance(v, float)},
        "sha": hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12],
    }


def stage_report(name: str, cfg: str, runs: list) -> dict:
    tot = [r["total"] for r in runs]
    med = statistics.median(tot)
    slow = [r for r in runs if r["total"] > med]
    fast = [r for r in runs if r["total"] <= med]
    keys = set().union(*[r["incl"] for r in runs]) | {"read", "gc"}

    def val(r, k, kind="incl"):
        if k == "read":
            return r["read"]
        if k == "gc":
            return r["gc_ms"]
        return r[kind].get(k, 0.0)

    rows = {}
    for k in keys:
        xs = [val(r, k) for r in runs]
        if statistics.median(xs) < 0.5 and k not in ("gc",):
            continue
        rows[k] = {
            "best": min(xs), "median": statistics.median(xs), "max": max(xs),
            "self_median": statistics.median(val(r, k, "self") for r in runs) if k not in ("read", "gc") else None,
            "slow_minus_fast": (statistics.median(val(r, k) for r in slow) - statistics.median(val(r, k) for r in fast))
            if slow and fast else 0.0,
            "span_median": [statistics.median(r["span"][k][0] for r in runs if k in r["span"]),
                            statistics.median(r["span"][k][1] for r in runs if k in r["span"])]
            if all(k in r["span"] for r in runs) else None,
            "threads": sorted(set().union(*[set(r["span"][k][2]) for r in runs if k in r["span"]])),
        }
    gcs = " ".join(f"{r['gc_ms']:.1f}" for r in runs)
    print(f"stages13 {name} {cfg}: totals best {min(tot):.1f} median {med:.1f} max {max(tot):.1f} ms "
          f"(runs {' '.join(f'{x:.0f}' for x in tot)}); gc ms per run {gcs}; "
          f"gen2 collections {sum(r['gc_n'][2] for r in runs)}; shas {sorted({r['sha'] for r in runs})}", flush=True)
    print(f"stages13 {name} {cfg}: {'function':44s} {'best':>7s} {'median':>7s} {'max':>7s} {'self':>7s} "
          f"{'slow-fast':>9s}  span(ms from start)  threads")
    for k, r in sorted(rows.items(), key=lambda kv: -kv[1]["median"]):
        sp = "" if r["span_median"] is None else f"{r['span_median'][0]:6.1f}-{r['span_median'][1]:6.1f}"
        slf = "" if r["self_median"] is None else f"{r['self_median']:7.2f}"
        print(f"stages13 {name} {cfg}: {k:44s} {r['best']:7.2f} {r['median']:7.2f} {r['max']:7.2f} {slf:>7s} "
              f"{r['slow_minus_fast']:+9.2f}  {sp:15s} {','.join(r['threads'])}")
    return {"totals": tot, "rows": rows, "runs": runs}


def pml_side(path: str, n: int) -> dict:
    """pymeshlab's step on the 12k intermediate: on the calling thread against on a fresh joined thread."""
    from gpu_kernels.jobs import BackgroundCall
    from gpu_kernels.mesh import simplify as simp
    from gpu_kernels.mesh.dualgraph import clean_mesh

    v, f = e2e.read_mesh(path)
    v, f, _, _ = clean_mesh(v, f)
    vm, fm = simp._simplify_fast(v, f, int(simp.PRE_FACTOR * 4000))
    vm, fm, _, _ = clean_mesh(vm, fm)
    step = e2e._real_pml
    out: dict = {"caller": [], "thread": []}
    for i in range(n + 1):
        for how in (("caller", "thread") if i % 2 == 0 else ("thread", "caller")):
            t = time.perf_counter()
            if how == "caller":
                step(vm, fm, 4000)
            else:
                BackgroundCall(step, vm, fm, 4000, name="gpulab-simplify").result()
            if i:
                out[how].append(1e3 * (time.perf_counter() - t))
    for how, xs in out.items():
        print(f"pmlside13 {Path(path).name} {how:7s} best {min(xs):6.1f} median {statistics.median(xs):6.1f} "
              f"max {max(xs):6.1f} ms  runs {' '.join(f'{x:.1f}' for x in xs)}", flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--configs", default="base,swap")
    ap.add_argument("--stages", type=int, default=0)
    ap.add_argument("--stage-configs", default="")
    ap.add_argument("--pml-side", type=int, default=0)
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    gc.callbacks.append(_gc_cb)
    report: dict = {}
    if args.pml_side:
        report["pml_side"] = pml_side(args.meshes[0], args.pml_side)
    if args.rounds:
        ab_json = (args.json + ".ab.json") if args.json else ""
        e2e.main([*args.meshes, "--device", args.device, "--rounds", str(args.rounds), "--configs", args.configs]
                 + (["--json", ab_json] if ab_json else []))
        if ab_json:
            report["ab"] = json.loads(Path(ab_json).read_text())
    if args.stages:
        cfgs = (args.stage_configs or args.configs).split(",")
        path = args.meshes[0]
        tr = Tracer13()
        if args.device == "cpu":  # the CPU APSP's process pool pickles its functions: leave them unwrapped
            mods = e2e._modules
            e2e._modules = lambda: [m for m in mods() if not m.__name__.startswith("gpu_kernels.graph")]
        tr.install()
        runs: dict = defaultdict(list)
        try:
            for c in cfgs:  # a warm-up each, traced (first calls through the wrappers)
                traced_run(tr, path, args.device, c)
            for i in range(args.stages):
                for c in (cfgs if i % 2 == 0 else cfgs[::-1]):
                    runs[c].append(traced_run(tr, path, args.device, c))
        finally:
            tr.remove()
        report["stages"] = {c: stage_report(Path(path).name, c, runs[c]) for c in cfgs}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
