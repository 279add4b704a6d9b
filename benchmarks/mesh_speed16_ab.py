"""Issue 22 (session 16): 17k faces ≤ 0.2 s at the median with margin. Where pymeshlab's 12k → 4k step spends its
time, and the bit-identical candidate ``clk`` against today's path, in one process.

- **A/B** (session 14's ``mesh_speed14_ab.ab``: from the file with the defaults, interleaved and reversed every other
  round after a warm-up each; per run the total, pymeshlab's step (wall, thread CPU) and "after"), configurations
  ``base`` (``simplify.STILL_CLOCK = False``: today) and ``clk`` (``STILL_CLOCK = True``: the decimation plugin's
  ``clock`` slot points at a standing clock). Every other switch is the library's default (``NEAREST_BESIDE`` on).
- ``--pieces N``: the step's pieces, N rounds per configuration, each on a fresh thread as in the pipeline, on the
  17k mesh's own 12k intermediate: ``MeshSet()``, ``Mesh(...)``, ``add_mesh``, the filter, reading the mesh back
  (wall and the thread's CPU time each), and the working mesh's SHA-1 (vertices + faces). Then, once: the process's
  thread count, the cost of one ``clock()`` call here (ctypes, 20,000 calls), and the number of ``clock()`` calls
  of one filter (the slot pointed at a counting Python callback for that one call).
- ``--judge clk``: the rule committed before the run (benchmarks/results/mesh_speed_session16.md), (c1)-(c5);
  (c6), 2 host cores, is read from the CPU run's line.

**A record since call 1:** ``clk`` failed its rule there (c3: the 50k step +2.2 ms paired over 15 rounds), and
``STILL_CLOCK`` with ``_standing_clock`` / ``_clock_slot`` left the library as the rule said. Session 17 brought it back
(the code of 2203a8a) and re-judged it with ``mesh_speed17_ab.py``, which reuses this script's configurations and
pieces: it passed and is on by default since (benchmarks/results/mesh_speed6_session17.md). ``base`` here is the
switch off.

Example (device)::

    python benchmarks/mesh_speed16_ab.py 101.off 281.off --rounds 41 --rounds-rest 15 --configs base,clk \\
        --pieces 15 --judge clk --json ab.json
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_speed14_ab as ab14  # noqa: E402

e2e = ab14.e2e
simp = ab14.simp
_S = "gpu_kernels.mesh.simplify.STILL_CLOCK"
e2e.CONFIGS.update({
    "base": {_S: False},   # today (every other switch the library's default)
    "clk": {_S: True},     # the decimation's clock stands still
})


def _med(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def _tasks() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return -1


def _pieces_once(v, f, target: int) -> dict:
    import numpy as np
    import pymeshlab

    out: dict = {}
    marks = [(time.perf_counter(), time.thread_time())]
    ms = pymeshlab.MeshSet()
    marks.append((time.perf_counter(), time.thread_time()))
    m0 = pymeshlab.Mesh(vertex_matrix=v, face_matrix=f.astype(np.int32))
    marks.append((time.perf_counter(), time.thread_time()))
    ms.add_mesh(m0)
    marks.append((time.perf_counter(), time.thread_time()))
    with simp._PYMESHLAB_LOCK, simp._standing_clock(bool(simp.STILL_CLOCK)):   # (as in simplify._simplify_pymeshlab)
        ms.meshing_decimation_quadric_edge_collapse(
            targetfacenum=target, preservenormal=bool(simp.PRESERVE_NORMAL), preservetopology=False,
            optimalplacement=True, planarquadric=True, qualitythr=0.3, autoclean=True)
    marks.append((time.perf_counter(), time.thread_time()))
    m = ms.current_mesh()
    vo = np.asarray(m.vertex_matrix(), dtype=np.float64)
    fo = np.asarray(m.face_matrix(), dtype=np.int64)
    marks.append((time.perf_counter(), time.thread_time()))
    for key, (a, b) in zip(("meshset", "mesh", "add", "filter", "read"), zip(marks[:-1], marks[1:], strict=True), strict=True):
        out[key] = 1e3 * (b[0] - a[0])
        out[key + "_cpu"] = 1e3 * (b[1] - a[1])
    out["total"] = 1e3 * (marks[-1][0] - marks[0][0])
    out["sha"] = hashlib.sha1(vo.tobytes() + fo.tobytes()).hexdigest()[:12]
    return out


def _count_clock_calls(v, f, target: int) -> int:
    """One filter with the slot pointed at a counting Python callback (a real clock: ``time.process_time``)."""
    slot = simp._clock_slot()
    if slot is None:
        return -1
    addr = slot[0]
    n = [0]

    @ctypes.CFUNCTYPE(ctypes.c_long)
    def counting():
        n[0] += 1
        return int(time.process_time() * 1e6)

    cell = ctypes.c_void_p.from_address(addr)
    old = cell.value
    try:
        cell.value = ctypes.cast(counting, ctypes.c_void_p).value
        _pieces_once_raw(v, f, target)
    finally:
        cell.value = old
    return n[0]


def _pieces_once_raw(v, f, target: int) -> None:
    import numpy as np
    import pymeshlab

    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(vertex_matrix=v, face_matrix=f.astype(np.int32)))
    ms.meshing_decimation_quadric_edge_collapse(
        targetfacenum=target, preservenormal=bool(simp.PRESERVE_NORMAL), preservetopology=False,
        optimalplacement=True, planarquadric=True, qualitythr=0.3, autoclean=True)


def clock_cost(n: int = 20000) -> float:
    """µs per libc ``clock()`` call in this process now (ctypes overhead included)."""
    clk = ctypes.CDLL(None).clock
    t = time.perf_counter()
    for _ in range(n):
        clk()
    return 1e6 * (time.perf_counter() - t) / n


def pieces(path: str, n: int, cfgs: list, target: int = 4000) -> dict:
    from gpu_kernels.jobs import BackgroundCall
    from gpu_kernels.mesh.dualgraph import clean_mesh

    v, f = e2e.read_mesh(path)
    v, f, _, _ = clean_mesh(v, f)
    vm, fm = simp._simplify_fast(v, f, int(simp.PRE_FACTOR * target))
    vm, fm, _, _ = clean_mesh(vm, fm)
    runs: dict = {c: [] for c in cfgs}
    for i in range(n + 1):                      # round 0: a warm-up each
        for c in (cfgs if i % 2 == 0 else cfgs[::-1]):
            old = e2e._set(e2e.CONFIGS[c])
            try:
                x = BackgroundCall(_pieces_once, vm, fm, target, name="gpulab-simplify").result()
            finally:
                e2e._set(old)
            if i:
                runs[c].append(x)
    name = Path(path).name
    print(f"pieces16 {name}: the step ({fm.shape[0]} -> {target} faces) on a fresh thread, {n} rounds per "
          "configuration, ms median wall / thread cpu (best wall)", flush=True)
    for c in cfgs:
        xs = runs[c]
        parts = "  ".join(f"{k} {_med(x[k] for x in xs):6.2f}/{_med(x[k + '_cpu'] for x in xs):6.2f}"
                          f" ({min(x[k] for x in xs):.2f})" for k in ("meshset", "mesh", "add", "filter", "read"))
        print(f"pieces16 {name} {c:4s} total {_med(x['total'] for x in xs):6.1f} ({min(x['total'] for x in xs):.1f})"
              f"  {parts}  sha {sorted({x['sha'] for x in xs})}", flush=True)
        print(f"pieces16 {name} {c:4s} filters {' '.join(str(round(x['filter'])) for x in xs)}", flush=True)
    base = cfgs[0]
    for c in cfgs[1:]:
        pf = [a["filter"] - b["filter"] for a, b in zip(runs[c], runs[base], strict=True)]
        print(f"pieces16 {name} {c} - {base}: filter paired median {_med(pf):+.2f} ms ({sum(p < 0 for p in pf)}/{len(pf)}"
              " shorter)", flush=True)
    extra = {"tasks": _tasks(), "clock_us": clock_cost(), "clock_calls": _count_clock_calls(vm, fm, target),
             "slot_found": simp._clock_slot() is not None}
    if EXTRA_THREADS:
        extra["more_threads"] = _with_more_threads(vm, fm, target, cfgs, max(5, n // 2))
    print(f"pieces16 process threads {extra['tasks']}; one clock() call {extra['clock_us']:.2f} us (ctypes included);"
          f" clock() calls in one filter {extra['clock_calls']}; the plugin's clock slot found: {extra['slot_found']}",
          flush=True)
    same = len({x["sha"] for c in cfgs for x in runs[c]}) == 1
    print(f"pieces16 the same working mesh in every configuration: {same}", flush=True)
    return {"runs": runs, "same": same, **extra}


#: ``--pieces``: the filter again with this many more idle threads in the process (the app's Qt, CuPy and numba
#: threads, a batch's workers; reported, not judged)
EXTRA_THREADS = 64


def _with_more_threads(vm, fm, target: int, cfgs: list, n: int) -> dict:
    import threading

    from gpu_kernels.jobs import BackgroundCall

    gate = threading.Event()
    idle = [threading.Thread(target=gate.wait, daemon=True) for _ in range(EXTRA_THREADS)]
    for t in idle:
        t.start()
    runs: dict = {c: [] for c in cfgs}
    try:
        tasks, cost = _tasks(), clock_cost()
        for i in range(n):
            for c in (cfgs if i % 2 == 0 else cfgs[::-1]):
                old = e2e._set(e2e.CONFIGS[c])
                try:
                    runs[c].append(BackgroundCall(_pieces_once, vm, fm, target, name="gpulab-simplify").result())
                finally:
                    e2e._set(old)
    finally:
        gate.set()
        for t in idle:
            t.join()
    base = cfgs[0]
    line = "  ".join(f"{c} filter {_med(x['filter'] for x in runs[c]):6.2f}" for c in cfgs)
    pf = {c: _med(a["filter"] - b["filter"] for a, b in zip(runs[c], runs[base], strict=True)) for c in cfgs[1:]}
    print(f"pieces16 with {EXTRA_THREADS} more idle threads ({tasks} in all; one clock() call {cost:.2f} us), {n} rounds:"
          f" {line}  paired {' '.join(f'{c} {v:+.2f}' for c, v in pf.items())} ms  sha "
          f"{sorted({x['sha'] for c in cfgs for x in runs[c]})}", flush=True)
    return {"tasks": tasks, "clock_us": cost, "runs": runs, "paired": pf}


def judge(report: dict, cand: str, rounds: int, rounds_rest: int) -> bool:
    """The rule of ``clk`` (benchmarks/results/mesh_speed_session16.md, committed before the run): (c1) 17k pymeshlab
    step paired median ≤ −3 ms, shorter in ≥ 27 of 41 rounds (2n // 3); (c2) 17k end to end paired median ≤ 0; (c3)
    50k median ≤ base's + 10 ms and the step's paired median ≤ 0; (c4) equal SHA-1s of labels and colours at 17k and
    50k, and the same working mesh in the pieces; (c5) complete. The first mesh is 17k, the second 50k."""
    names = [k for k in report if k.endswith(".off")]
    if len(names) < 2 or "pieces" not in report:
        print(f"RULE {cand}: FAIL (c5: {len(names)} of 2 meshes ran, pieces {'pieces' in report})", flush=True)
        return False
    (a, b) = (report[names[0]], report[names[1]])

    def pairs(rep, key):
        r = rep["runs"]
        if key == "step":
            return [x["step"]["wall"] - y["step"]["wall"] for x, y in zip(r[cand], r["base"], strict=True)
                    if "step" in x and "step" in y]
        return [x["total"] - y["total"] for x, y in zip(r[cand], r["base"], strict=True)]

    ps, pt, pb = pairs(a, "step"), pairs(a, "total"), pairs(b, "step")
    med_b = {c: _med(x["total"] for x in b["runs"][c]) for c in ("base", cand)}
    checks = {
        "c1": _med(ps) <= -3.0 and sum(p < 0 for p in ps) >= 2 * rounds // 3,
        "c2": _med(pt) <= 0.0,
        "c3": med_b[cand] <= med_b["base"] + 10.0 and _med(pb) <= 0.0,
        "c4": bool(a["same"] and b["same"] and report["pieces"]["same"]),
        "c5": len(ps) == rounds and len(pt) == rounds and len(pb) == rounds_rest,
    }
    ok = all(checks.values())
    print(f"RULE {cand}: {'PASS' if ok else 'FAIL'} ({', '.join(f'{k} {v}' for k, v in checks.items())}; 17k step "
          f"{_med(ps):+.1f} ({sum(p < 0 for p in ps)}/{len(ps)}), e2e {_med(pt):+.1f}; 50k medians {med_b['base']:.1f} / "
          f"{med_b[cand]:.1f}, step {_med(pb):+.1f})", flush=True)
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=41, help="A/B rounds of the first mesh (0: no A/B)")
    ap.add_argument("--rounds-rest", type=int, default=15, help="A/B rounds of the other meshes")
    ap.add_argument("--configs", default="base,clk")
    ap.add_argument("--pieces", type=int, default=0, help="rounds of the step's pieces (first mesh)")
    ap.add_argument("--judge", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import gc

    gc.callbacks.append(ab14.s13._gc_cb)
    print(f"ab16 simplifiers {simp.available_simplifiers()}; STILL_CLOCK default {simp.STILL_CLOCK}; "
          f"cores {len(os.sched_getaffinity(0))}", flush=True)
    report: dict = {}

    def save():
        if args.json:
            Path(args.json).write_text(json.dumps(report, default=str))

    cfgs = args.configs.split(",")
    if args.rounds:
        for i, path in enumerate(args.meshes):
            report[Path(path).name] = ab14.ab(path, args.device, cfgs, args.rounds if i == 0 else args.rounds_rest)
            save()
    if args.pieces:
        report["pieces"] = pieces(args.meshes[0], args.pieces, cfgs)
        save()
    if args.judge:
        report["rule"] = judge(report, args.judge, args.rounds, args.rounds_rest)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
