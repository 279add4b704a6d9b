"""Issue 22 (session 15): 17k faces ≤ 0.2 s at the median with margin. Two parts, one process each:

1. **The complete re-judgement of ``nearN``** (session 14's last candidate, whose run stopped before its 50k half):
   ``segment.NEAREST_BESIDE`` with a search thread per ``NEAREST_BESIDE_ROWS = 9000`` faces against ``base``
   (``NEAREST_BESIDE = False``), through session 14's A/B (``mesh_speed14_ab.ab``: from the file with the defaults,
   interleaved and reversed every other round after a warm-up each; per run the total, pymeshlab's step and "after")
   and its rule (``mesh_speed14_ab.judge``: (n1)-(n5)). ``--configs base,nearN --judge nearN``.
2. **``--pin N``: the host's slow phases against the process's CPU affinity** (a diagnosis, nothing to ship). N rounds
   of the first mesh under each core set of ``--pin-sets`` (``name=cpulist``, ``;``-separated; every thread of the
   process is moved with ``sched_setaffinity``, and threads started later inherit it), interleaved and reversed
   every other round, after a warm-up each. Per run: the total, pymeshlab's step (wall, CPU), "after", the
   pipeline's own stage timings (``seg.info["timings"]``), the host's steal time over the run (``/proc/stat``), the
   cgroup's CPU-quota throttling over the run (``/sys/fs/cgroup/cpu.stat``), and
   under the same affinity right after it a fixed pure-Python loop and a fixed 64 MB random gather (session 14's
   host-speed probes). Printed: best / median / max and the spread (75th − 25th percentile) of each, and the paired
   medians against the first set.
3. **``--gather-cores``**: the 64 MB gather on each core alone (the thread pinned), with its arrays first touched on
   that core and on the first core: does the memory's place matter on this host (session 14: 114 ms unpinned,
   28 ms pinned to one core)?

Example (device)::

    python benchmarks/mesh_speed15_ab.py 101.off 281.off --rounds 41 --rounds-rest 15 --configs base,nearN \\
        --judge nearN --json ab.json
    python benchmarks/mesh_speed15_ab.py 101.off --rounds 0 --pin 15 --pin-sets "all=0-15;a8=0-7;b8=8-15;q4=4-7" \\
        --gather-cores --json pin.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_speed14_ab as ab14  # noqa: E402

e2e = ab14.e2e
_N = "gpu_kernels.mesh.segment.NEAREST_BESIDE"
_R = "gpu_kernels.mesh.segment.NEAREST_BESIDE_ROWS"
e2e.CONFIGS.update({
    "base": {_N: False},
    "nearN": {_N: True, _R: 9000},   # session 14's last candidate: a thread of search per 9,000 faces
    "shipped": {},                   # the library's defaults as they are (NEAREST_BESIDE on since call 1)
})


def cpulist(text: str) -> set:
    """``"0-3,8"`` → {0, 1, 2, 3, 8}."""
    out: set = set()
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def pin_process(cpus) -> None:
    """Every thread of this process onto ``cpus`` (threads started later inherit their creator's set)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (OSError, ValueError):
            pass   # (a thread that has just ended)


def steal_jiffies() -> int:
    """The host's steal time so far (``/proc/stat``'s ``cpu`` line, 8th value), in jiffies."""
    try:
        return int(Path("/proc/stat").read_text().split("\n", 1)[0].split()[8])
    except (OSError, ValueError, IndexError):
        return -1


def throttled_usec() -> int:
    """The cgroup's CPU-quota throttling so far (``cpu.stat``'s ``throttled_usec``, cgroup v2), µs; −1 if none."""
    try:
        for line in Path("/sys/fs/cgroup/cpu.stat").read_text().splitlines():
            if line.startswith("throttled_usec"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


def _loop() -> int:
    s = 0
    for i in range(600_000):
        s += i
    return s


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return 1e3 * (time.perf_counter() - t)


def _q(xs, p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p * (len(xs) - 1))))] if xs else float("nan")


def _stat(xs) -> str:
    xs = list(xs)
    return (f"{min(xs):6.1f} / {statistics.median(xs):6.1f} / {max(xs):6.1f} (iqr {_q(xs, .75) - _q(xs, .25):5.1f})"
            if xs else "-")


def _once(path: str, dev: str) -> dict:
    """``mesh_speed14_ab.once`` of ``base`` with the pipeline's own stage timings (``seg.info["timings"]``)."""
    import hashlib

    old = e2e._set(e2e.CONFIGS["base"])
    ab14.STEPS.clear()
    try:
        t0 = time.perf_counter()
        v, f = e2e.read_mesh(path)
        seg = ab14.segment.segment_mesh(v, f, device=dev)
        t1 = time.perf_counter()
    finally:
        e2e._set(old)
    out = {"total": 1e3 * (t1 - t0),
           "sha": hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12],
           "timings": {k: 1e3 * v for k, v in seg.info.get("timings", {}).items() if isinstance(v, float)}}
    if ab14.STEPS:
        st = dict(ab14.STEPS[-1])
        st["start"], st["end"], st["after"] = 1e3 * (st["t0"] - t0), 1e3 * (st["t1"] - t0), 1e3 * (t1 - st["t1"])
        del st["t0"], st["t1"]
        out["step"] = st
    return out


def pin_runs(path: str, dev: str, sets: dict, rounds: int) -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    big = rng.random(8 << 20)                      # 64 MB (session 14's probe)
    idx = rng.integers(0, big.size, 2 << 20)
    names = list(sets)
    everything = os.sched_getaffinity(0)
    runs: dict = {c: [] for c in names}
    shas: dict = {c: set() for c in names}
    try:
        for r in range(rounds + 1):                # round 0: a warm-up each
            for c in (names if r % 2 == 0 else names[::-1]):
                pin_process(sets[c])
                s0, h0 = steal_jiffies(), throttled_usec()
                x = _once(path, dev)
                x["steal_jiffies"], x["throttled_ms"] = steal_jiffies() - s0, (throttled_usec() - h0) / 1e3
                x["loop"] = _timed(_loop)
                x["gather"] = _timed(lambda: float(big[idx].sum()))
                x["cpus_seen"] = sorted({x["step"]["cpu_start"], x["step"]["cpu_end"]}) if "step" in x else []
                shas[c].add(x["sha"])
                if r:
                    runs[c].append(x)
    finally:
        pin_process(everything)
    first = names[0]
    print(f"pin15 {dev} {Path(path).name}: {rounds} rounds per core set, ms best / median / max (iqr); paired medians "
          f"against {first!r} (rounds faster)", flush=True)
    for c in names:
        xs = runs[c]
        st = [x["step"] for x in xs if "step" in x]
        pair = [a["total"] - b["total"] for a, b in zip(xs, runs[first], strict=True)]
        print(f"pin15 {c:5s} cpus {len(sets[c]):2d}  total {_stat(x['total'] for x in xs)}  paired {statistics.median(pair):+6.1f}"
              f" ({sum(p < 0 for p in pair)}/{len(pair)})  sha {sorted(shas[c])}", flush=True)
        print(f"pin15 {c:5s}   step wall {_stat(s['wall'] for s in st)}  cpu {_stat(s['cpu'] for s in st)}  after "
              f"{_stat(s['after'] for s in st)}", flush=True)
        print(f"pin15 {c:5s}   loop {_stat(x['loop'] for x in xs)}  gather {_stat(x['gather'] for x in xs)}  steal "
              f"jiffies/run median {statistics.median(x['steal_jiffies'] for x in xs)} max "
              f"{max(x['steal_jiffies'] for x in xs)}  cgroup throttled ms/run max {max(x['throttled_ms'] for x in xs):.1f}",
              flush=True)
        keys = sorted({k for x in xs for k in x.get("timings", {})})
        parts = []
        for k in keys:
            v = [x["timings"][k] for x in xs if k in x.get("timings", {})]
            parts.append(f"{k} {statistics.median(v):.1f}/{_q(v, .75) - _q(v, .25):.1f}")
        print(f"pin15 {c:5s}   stages (median ms / iqr) " + "  ".join(parts), flush=True)
        tot = " ".join(f"{x['total']:.0f}" for x in xs)
        walls = " ".join(f"{s['wall']:.0f}" for s in st)
        loops = " ".join(f"{x['loop']:.0f}" for x in xs)
        print(f"pin15 {c:5s}   runs {tot}", flush=True)
        print(f"pin15 {c:5s}   steps {walls}  loops {loops}", flush=True)
    same = len(set().union(*shas.values())) == 1
    print(f"pin15 the same labels and colours under every core set: {same}", flush=True)
    return {"sets": {c: sorted(v) for c, v in sets.items()}, "runs": runs,
            "shas": {c: sorted(s) for c, s in shas.items()}, "same": same}


def gather_cores(reps: int = 3) -> dict:
    """The 64 MB gather on each core alone: arrays first touched on that core ("own") and on the first core
    ("first"); best of ``reps`` each, and the same unpinned."""
    import numpy as np

    cpus = sorted(os.sched_getaffinity(0))
    everything = set(cpus)

    def arrays():
        rng = np.random.default_rng(1)
        big = np.empty(8 << 20)
        big[:] = rng.random(big.size)
        idx = np.empty(2 << 20, dtype=np.int64)
        idx[:] = rng.integers(0, big.size, idx.size)
        return big, idx

    def best(big, idx) -> float:
        return min(_timed(lambda: float(big[idx].sum())) for _ in range(reps))

    out: dict = {}
    try:
        os.sched_setaffinity(0, {cpus[0]})
        on_first = arrays()
        for c in cpus:
            os.sched_setaffinity(0, {c})
            own = arrays()
            out[c] = {"own": best(*own), "first": best(*on_first)}
            del own
        os.sched_setaffinity(0, everything)
        out["unpinned"] = {"own": best(*arrays()), "first": best(*on_first)}
    finally:
        os.sched_setaffinity(0, everything)
    print(f"gather15 64 MB random gather, best of {reps}, ms: core own-touched / first-core-touched", flush=True)
    print("gather15 " + "  ".join(f"{c}:{v['own']:.0f}/{v['first']:.0f}" for c, v in out.items()), flush=True)
    return {str(k): v for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=41, help="A/B rounds of the first mesh (0: no A/B)")
    ap.add_argument("--rounds-rest", type=int, default=15, help="A/B rounds of the other meshes")
    ap.add_argument("--configs", default="base,nearN")
    ap.add_argument("--judge", default="", help="a candidate to judge by session 14's rule for nearN (two meshes)")
    ap.add_argument("--pin", type=int, default=0, help="rounds of the core-set diagnosis (first mesh)")
    ap.add_argument("--pin-sets", default="all=0-15;a8=0-7;b8=8-15;q4=4-7")
    ap.add_argument("--gather-cores", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import gc

    gc.callbacks.append(ab14.s13._gc_cb)
    print(f"ab15 simplifiers {ab14.simp.available_simplifiers()}; affinity {sorted(os.sched_getaffinity(0))}", flush=True)
    report: dict = {}

    def save():
        if args.json:
            Path(args.json).write_text(json.dumps(report, default=str))

    if args.rounds:
        cfgs = args.configs.split(",")
        for i, path in enumerate(args.meshes):
            report[Path(path).name] = ab14.ab(path, args.device, cfgs, args.rounds if i == 0 else args.rounds_rest)
            save()
        if args.judge:
            report["rule"] = ab14.judge(report, args.judge, args.rounds, args.rounds_rest)
            save()
    if args.gather_cores:
        report["gather_cores"] = gather_cores()
        save()
    if args.pin:
        have = os.sched_getaffinity(0)
        sets = {}
        for item in args.pin_sets.split(";"):
            name, _, cl = item.partition("=")
            s = cpulist(cl) & have
            if s:
                sets[name.strip()] = s
        report["pin"] = pin_runs(args.meshes[0], args.device, sets, args.pin)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
