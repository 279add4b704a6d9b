"""Issue 22 (session 14): 17k faces ≤ 0.2 s at the median on every host. Where pymeshlab's step loses its time, and
bit-identical candidates against today's path, in one process.

Built on sessions 10 and 13 (``mesh_e2e_session10.py``: from the file, read + ``segment_mesh`` with the defaults,
configurations interleaved and reversed every other round after one warm-up each, the labels' and colours' SHA-1
per configuration; ``mesh_speed13_ab.py``: the traced stages). Configurations (``--configs``):

- ``base``: today;
- ``wait`` (diagnostic): today's path, but the caller waits for pymeshlab's step before it builds the full mesh's
  dual graph: nothing of the caller's runs beside the step (the most a GIL-free graph could give the step; the
  graph's ~20 ms then add to the path).

The session's candidates ran in calls 1-3 and are gone with their switches (failed their rules; the code is in git at
e55bb5b): ``pool`` (``simplify.REUSE_THREAD``: pymeshlab's step on a long-lived thread), ``near`` / ``near2`` /
``nearN`` (``segment.NEAREST_BESIDE``: the full-to-working nearest faces on a thread beside the working mesh's
thickness and APSP, with every core / 2 / one per 9,000 faces of search threads) and ``both`` (pool + near).
``--judge`` applies near2's / nearN's rule to a candidate against ``base``. (Session 15 restored ``NEAREST_BESIDE`` and
turned it on after nearN's complete run passed this rule: ``base`` here is the library's defaults, so it now includes
it; ``mesh_speed15_ab.py`` names the switch's settings.)

Per run: the total, and pymeshlab's step inside it: its start and end (ms from the run's start), its wall time,
its thread's CPU time, minor page faults and voluntary / involuntary context switches (``RUSAGE_THREAD``), the
processor it started and ended on; "after" = the run's end minus the step's end (the path after the step).

- ``--pml-side N``: the step alone (the 17k mesh's 12k intermediate → 4k), N times each on the calling thread, on a
  fresh thread, and on a long-lived thread (a plain ``ThreadPoolExecutor`` here), interleaved, with the same
  per-thread counters.
- ``--stages N``: N traced runs per configuration of ``--stage-configs`` (session 13's tracer): per stage best /
  median / max and slow − fast.

Example (device)::

    python benchmarks/mesh_speed14_ab.py 101.off 281.off --rounds 41 --rounds-rest 15 --configs base,wait \\
        --pml-side 15 --stages 15 --stage-configs base,wait --json out.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_e2e_session10 as e2e  # noqa: E402
import mesh_speed13_ab as s13  # noqa: E402  (its gc switch and tracer; its swap configurations no longer run)

from gpu_kernels.mesh import segment  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402

_real_bg = simp.simplify_in_background


def _joined(*a, **kw):
    """``simplify_in_background`` that waits for its job before it returns (the ``wait`` diagnostic)."""
    job = _real_bg(*a, **kw)
    if hasattr(job, "join"):
        job.join()
    return job


e2e.CONFIGS.update({
    "base": {},
    "wait": {"gpu_kernels.mesh.segment.simplify_in_background": _joined},
})


STEPS: list = []


def _cpu_now() -> int:
    try:
        return int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return -1


def _measured_step(*a, **kw):
    """pymeshlab's step with its thread's counters (``STEPS``)."""
    c0, r0, t0, q0 = _cpu_now(), resource.getrusage(resource.RUSAGE_THREAD), time.perf_counter(), time.thread_time()
    try:
        return e2e._real_pml(*a, **kw)
    finally:
        t1, q1, r1 = time.perf_counter(), time.thread_time(), resource.getrusage(resource.RUSAGE_THREAD)
        STEPS.append({"t0": t0, "t1": t1, "wall": 1e3 * (t1 - t0), "cpu": 1e3 * (q1 - q0),
                      "minflt": r1.ru_minflt - r0.ru_minflt, "nvcsw": r1.ru_nvcsw - r0.ru_nvcsw,
                      "nivcsw": r1.ru_nivcsw - r0.ru_nivcsw, "cpu_start": c0, "cpu_end": _cpu_now(),
                      "thread": threading.current_thread().name})


simp._simplify_pymeshlab = _measured_step


def once(path: str, dev: str, cfg: str) -> dict:
    old = s13.e2e._set(e2e.CONFIGS[cfg])
    STEPS.clear()
    try:
        t0 = time.perf_counter()
        v, f = e2e.read_mesh(path)
        seg = segment.segment_mesh(v, f, device=dev)
        t1 = time.perf_counter()
    finally:
        s13.e2e._set(old)
    out = {"total": 1e3 * (t1 - t0),
           "sha": hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12]}
    if STEPS:
        s = dict(STEPS[-1])
        s["start"], s["end"], s["after"] = 1e3 * (s["t0"] - t0), 1e3 * (s["t1"] - t0), 1e3 * (t1 - s["t1"])
        del s["t0"], s["t1"]
        out["step"] = s
    return out


def _med(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def ab(path: str, dev: str, cfgs: list, rounds: int) -> dict:
    name = Path(path).name
    runs: dict = {c: [] for c in cfgs}
    shas: dict = {c: set() for c in cfgs}
    for c in cfgs:   # a warm-up each
        shas[c].add(once(path, dev, c)["sha"])
    for r in range(rounds):
        for c in (cfgs if r % 2 == 0 else cfgs[::-1]):
            x = once(path, dev, c)
            shas[c].add(x["sha"])
            runs[c].append(x)
    base = cfgs[0]
    print(f"ab14 {dev} {name}: {rounds} rounds, ms (best / median / max; pymeshlab's step in the runs: median wall, "
          "cpu, start, after; paired median vs the first configuration, rounds faster)", flush=True)
    for c in cfgs:
        tot = [x["total"] for x in runs[c]]
        st = [x["step"] for x in runs[c] if "step" in x]
        pair = [a["total"] - b["total"] for a, b in zip(runs[c], runs[base], strict=True)]
        pair_after = [a["step"]["after"] - b["step"]["after"] for a, b in zip(runs[c], runs[base], strict=True)
                      if "step" in a and "step" in b]
        pair_step = [a["step"]["wall"] - b["step"]["wall"] for a, b in zip(runs[c], runs[base], strict=True)
                     if "step" in a and "step" in b]
        print(f"ab14 {dev} {name} {c:5s} total {min(tot):6.1f} / {_med(tot):6.1f} / {max(tot):6.1f}"
              f"  paired {_med(pair):+6.1f} ({sum(p < 0 for p in pair)}/{len(pair)})"
              + (f"  step wall {_med(s['wall'] for s in st):6.1f} cpu {_med(s['cpu'] for s in st):6.1f}"
                 f" minflt {_med(s['minflt'] for s in st):6.0f} nvcsw {_med(s['nvcsw'] for s in st):4.0f}"
                 f" nivcsw {_med(s['nivcsw'] for s in st):3.0f} start {_med(s['start'] for s in st):5.1f}"
                 f" after {_med(s['after'] for s in st):6.1f}  paired step {_med(pair_step):+6.1f}"
                 f" after {_med(pair_after):+6.1f} ({sum(p < 0 for p in pair_after)}/{len(pair_after)})" if st else "")
              + f"  sha {sorted(shas[c])}", flush=True)
        print(f"ab14 {dev} {name} {c:5s} runs {' '.join(f'{t:.0f}' for t in tot)}", flush=True)
        if st:
            walls = " ".join(f"{s['wall']:.0f}/{s['cpu']:.0f}" for s in st)
            print(f"ab14 {dev} {name} {c:5s} steps wall/cpu {walls}", flush=True)
    same = len(set().union(*shas.values())) == 1
    print(f"ab14 {dev} {name}: the same labels and colours in every configuration: {same}", flush=True)
    return {"runs": runs, "shas": {c: sorted(s) for c, s in shas.items()}, "same": same}


def judge(report: dict, cand: str, rounds: int, rounds_rest: int) -> bool:
    """The rule of ``near2`` / ``nearN`` (benchmarks/results/mesh_speed_session14.md): (n1) 17k "after" paired median
    ≤ −3 ms, shorter in ≥ 27 of 41 rounds (2n // 3); (n2) 17k end to end paired median ≤ 0; (n3) 50k median ≤
    base's + 10 ms and "after" paired median ≤ 0; (n4) equal SHA-1s; (n5) complete. The first mesh is 17k, the
    second 50k."""
    names = [k for k in report if k.endswith(".off")]
    if len(names) < 2:
        print(f"RULE {cand}: FAIL (n5: {len(names)} of 2 meshes ran)", flush=True)
        return False
    (a, b) = (report[names[0]], report[names[1]])

    def pairs(rep, key):
        r = rep["runs"]
        if key == "after":
            return [x["step"]["after"] - y["step"]["after"] for x, y in zip(r[cand], r["base"], strict=True)]
        return [x["total"] - y["total"] for x, y in zip(r[cand], r["base"], strict=True)]

    pa, pt, pb = pairs(a, "after"), pairs(a, "total"), pairs(b, "after")
    med_b = {c: _med(x["total"] for x in b["runs"][c]) for c in ("base", cand)}
    checks = {
        "n1": _med(pa) <= -3.0 and sum(p < 0 for p in pa) >= 2 * len(pa) // 3,
        "n2": _med(pt) <= 0.0,
        "n3": med_b[cand] <= med_b["base"] + 10.0 and _med(pb) <= 0.0,
        "n4": bool(a["same"] and b["same"]),
        "n5": len(pa) == rounds and len(pb) == rounds_rest,
    }
    ok = all(checks.values())
    print(f"RULE {cand}: {'PASS' if ok else 'FAIL'} ({', '.join(f'{k} {v}' for k, v in checks.items())}; 17k after "
          f"{_med(pa):+.1f} ({sum(p < 0 for p in pa)}/{len(pa)}), e2e {_med(pt):+.1f}; 50k medians {med_b['base']:.1f} / "
          f"{med_b[cand]:.1f}, after {_med(pb):+.1f})", flush=True)
    return ok


def pml_side(path: str, n: int) -> dict:
    """The step alone: on the calling thread, on a fresh thread, on a long-lived one; interleaved."""
    from concurrent.futures import ThreadPoolExecutor

    from gpu_kernels.jobs import BackgroundCall
    from gpu_kernels.mesh.dualgraph import clean_mesh

    v, f = e2e.read_mesh(path)
    v, f, _, _ = clean_mesh(v, f)
    vm, fm = simp._simplify_fast(v, f, int(simp.PRE_FACTOR * 4000))
    vm, fm, _, _ = clean_mesh(vm, fm)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="side-pool")
    hows = ("caller", "fresh", "pool")
    out: dict = {h: [] for h in hows}
    for i in range(n + 1):
        for how in (hows if i % 2 == 0 else hows[::-1]):
            STEPS.clear()
            if how == "caller":
                _measured_step(vm, fm, 4000)
            elif how == "fresh":
                BackgroundCall(_measured_step, vm, fm, 4000, name="side-fresh").result()
            else:
                pool.submit(_measured_step, vm, fm, 4000).result()
            if i:
                s = dict(STEPS[-1])
                del s["t0"], s["t1"]
                out[how].append(s)
    pool.shutdown()
    for how, xs in out.items():
        w = [x["wall"] for x in xs]
        print(f"pmlside14 {Path(path).name} {how:6s} wall best {min(w):6.1f} median {_med(w):6.1f} max {max(w):6.1f}"
              f"  cpu {_med(x['cpu'] for x in xs):6.1f} minflt {_med(x['minflt'] for x in xs):6.0f}"
              f" nvcsw {_med(x['nvcsw'] for x in xs):4.0f} nivcsw {_med(x['nivcsw'] for x in xs):3.0f}"
              f"  runs {' '.join(f'{x:.0f}' for x in w)}", flush=True)
    return out


def stages(path: str, dev: str, cfgs: list, n: int) -> dict:
    tr = s13.Tracer13()
    if dev == "cpu":  # the CPU APSP's process pool pickles its functions: leave them unwrapped
        mods = e2e._modules
        e2e._modules = lambda: [m for m in mods() if not m.__name__.startswith("gpu_kernels.graph")]
    tr.install()
    runs: dict = {c: [] for c in cfgs}
    try:
        for c in cfgs:
            s13.traced_run(tr, path, dev, c)
        for i in range(n):
            for c in (cfgs if i % 2 == 0 else cfgs[::-1]):
                runs[c].append(s13.traced_run(tr, path, dev, c))
    finally:
        tr.remove()
    return {c: s13.stage_report(Path(path).name, c, runs[c]) for c in cfgs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=21, help="rounds of the first mesh")
    ap.add_argument("--rounds-rest", type=int, default=15, help="rounds of the other meshes")
    ap.add_argument("--configs", default="base,wait")
    ap.add_argument("--configs-rest", default="", help="configurations of the other meshes (default: --configs)")
    ap.add_argument("--pml-side", type=int, default=0)
    ap.add_argument("--stages", type=int, default=0)
    ap.add_argument("--stage-configs", default="base")
    ap.add_argument("--judge", default="", help="a candidate to judge by the rule of near2 / nearN (needs two meshes)")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import gc

    gc.callbacks.append(s13._gc_cb)
    print(f"ab14 simplifiers {simp.available_simplifiers()}", flush=True)
    report: dict = {}
    if args.pml_side:
        report["pml_side"] = pml_side(args.meshes[0], args.pml_side)
    cfgs = args.configs.split(",")
    rest = (args.configs_rest or args.configs).split(",")
    for i, path in enumerate(args.meshes):
        report[Path(path).name] = ab(path, args.device, cfgs if i == 0 else rest,
                                     args.rounds if i == 0 else args.rounds_rest)
        if args.json:
            Path(args.json).write_text(json.dumps(report, default=str))
    if args.judge:
        report["rule"] = judge(report, args.judge, args.rounds, args.rounds_rest)
    if args.stages:
        report["stages"] = stages(args.meshes[0], args.device, args.stage_configs.split(","), args.stages)
    if args.json:
        Path(args.json).write_text(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
