"""Issue 22 (session 17, mesh-speed6): ``simplify.STILL_CLOCK`` (``clk``: the decimation plugin's ``clock`` slot at a
standing clock during our filter call only) re-judged against ``base`` (today) at the 3,500-face working mesh, by the
rule fixed by the lead and committed before its run (benchmarks/results/mesh_speed6_session17.md). It passed in the
session's one device call (H100), and ``STILL_CLOCK`` is on by default since: ``base`` (the switch off) is now the old
path.

The measurement is session 16's (``mesh_speed16_ab.py``, itself session 14's ``ab``): from the file with the
library's defaults, ``base,clk`` interleaved and reversed every other round after a warm-up each, in ONE process; per
run the total, pymeshlab's step (wall, thread CPU) and the labels' and colours' SHA-1. Here 41 rounds at 17k AND 41
at 50k, and ``--pieces`` on the 17k mesh's own intermediate at ``WORKING_FACES`` (reported, not judged).

- ``--judge clk``: (c1)-(c3) of the rule from the A/B's report;
- ``--verdict AB.json CPU2.json``: the whole rule, (c1)-(c4), from the call's two files ((c4) is the 2-core CPU run).

Example (device)::

    python benchmarks/mesh_speed17_ab.py 101.off 281.off --rounds 41 --configs base,clk --pieces 9 --judge clk \\
        --json ab.json
    taskset -c 0,1 python benchmarks/mesh_speed17_ab.py 281.off --device cpu --rounds 1 --json ab_cpu2.json
    python benchmarks/mesh_speed17_ab.py --verdict ab.json ab_cpu2.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_speed16_ab as ab16  # noqa: E402  (registers the configurations base / clk)

ab14 = ab16.ab14
simp = ab16.simp
#: the rule's thresholds (ms), fixed before the run
C1_MEDIAN_GAIN = 5.0    # 17k: median(clk) <= median(base) - 5 and paired median < 0
C2_E2E_50K = 3.0        # 50k: paired median <= +3; the step's paired median over both meshes' pairs pooled < 0
C4_CPU2_S = 3.0         # 2 host cores, CPU path, 50k: clk < 3 s


def _med(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def _pairs(rep: dict, cand: str, key: str) -> list:
    r = rep["runs"]
    if key == "step":
        return [x["step"]["wall"] - y["step"]["wall"] for x, y in zip(r[cand], r["base"], strict=True)
                if "step" in x and "step" in y]
    return [x["total"] - y["total"] for x, y in zip(r[cand], r["base"], strict=True)]


def judge(report: dict, cand: str = "clk", rounds: int = 41) -> dict:
    """(c1)-(c3) of the rule (mesh_speed6_session17.md). The first mesh is 17k, the second 50k. A mesh with fewer than
    ``rounds`` pairs (total and step) fails the check it enters."""
    names = [k for k in report if k.endswith(".off")]
    if len(names) < 2:
        print(f"RULE {cand} (c1-c3): FAIL ({len(names)} of 2 meshes ran)", flush=True)
        return {"c1": False, "c2": False, "c3": False}
    a, b = report[names[0]], report[names[1]]
    ta, sa, tb, sb = _pairs(a, cand, "total"), _pairs(a, cand, "step"), _pairs(b, cand, "total"), _pairs(b, cand, "step")
    med = {m: {c: _med(x["total"] for x in rep["runs"][c]) for c in ("base", cand)} for m, rep in (("a", a), ("b", b))}
    full_a = len(ta) == rounds and len(sa) == rounds
    full_b = len(tb) == rounds and len(sb) == rounds
    pooled = sa + sb
    checks = {
        "c1": full_a and med["a"][cand] <= med["a"]["base"] - C1_MEDIAN_GAIN and _med(ta) < 0.0,
        "c2": full_a and full_b and _med(tb) <= C2_E2E_50K and _med(pooled) < 0.0,
        "c3": bool(a["same"] and b["same"]),
    }
    print(f"RULE {cand} (c1-c3): c1 {checks['c1']} (17k medians base {med['a']['base']:.1f} / {cand} "
          f"{med['a'][cand]:.1f} = {med['a'][cand] - med['a']['base']:+.1f} ms, paired {_med(ta):+.1f} "
          f"({sum(p < 0 for p in ta)}/{len(ta)} faster)); c2 {checks['c2']} (50k paired {_med(tb):+.1f} "
          f"({sum(p < 0 for p in tb)}/{len(tb)} faster), medians {med['b']['base']:.1f} / {med['b'][cand]:.1f}; "
          f"step paired median over both meshes' {len(pooled)} pairs {_med(pooled):+.2f} "
          f"({sum(p < 0 for p in pooled)}/{len(pooled)} shorter); per mesh 17k {_med(sa):+.2f}, 50k {_med(sb):+.2f}, "
          f"their sum {_med(sa) + _med(sb):+.2f}); c3 {checks['c3']} (17k {a['shas']}, 50k {b['shas']})", flush=True)
    return checks


def verdict(ab_json: str, cpu_json: str, cand: str = "clk", rounds: int = 41) -> bool:
    """The whole rule: (c1)-(c3) from the A/B's file, (c4) from the 2-core CPU run's file."""
    checks = judge(json.loads(Path(ab_json).read_text()), cand, rounds)
    cpu = json.loads(Path(cpu_json).read_text())
    names = [k for k in cpu if k.endswith(".off")]
    tot = [x["total"] for x in cpu[names[0]]["runs"][cand]] if names else []
    base = [x["total"] for x in cpu[names[0]]["runs"]["base"]] if names else []
    checks["c4"] = bool(tot) and max(tot) < 1e3 * C4_CPU2_S
    print(f"RULE {cand} (c4): {checks['c4']} (2 host cores, CPU path, {names[0] if names else '?'}: {cand} "
          f"{' '.join(f'{t / 1e3:.3f}' for t in tot)} s, base {' '.join(f'{t / 1e3:.3f}' for t in base)} s; "
          f"shas {cpu[names[0]]['shas'] if names else '?'})", flush=True)
    ok = all(checks.values())
    print(f"RULE {cand}: {'PASS' if ok else 'FAIL'} ({', '.join(f'{k} {v}' for k, v in checks.items())})", flush=True)
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="*")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=41, help="A/B rounds of every mesh")
    ap.add_argument("--configs", default="base,clk")
    ap.add_argument("--pieces", type=int, default=0, help="rounds of the step's pieces (first mesh; not judged)")
    ap.add_argument("--judge", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--verdict", nargs=2, metavar=("AB_JSON", "CPU2_JSON"))
    args = ap.parse_args(argv)
    if args.verdict:
        return 0 if verdict(*args.verdict, rounds=args.rounds) else 1
    import gc

    from gpu_kernels.mesh.defaults import WORKING_FACES

    gc.callbacks.append(ab14.s13._gc_cb)
    print(f"ab17 simplifiers {simp.available_simplifiers()}; STILL_CLOCK default {simp.STILL_CLOCK}; WORKING_FACES "
          f"{WORKING_FACES}; GPULAB_PYMESHLAB_CLOCK {os.environ.get('GPULAB_PYMESHLAB_CLOCK', '')!r}; "
          f"cores {len(os.sched_getaffinity(0))}", flush=True)
    report: dict = {}

    def save():
        if args.json:
            Path(args.json).write_text(json.dumps(report, default=str))

    cfgs = args.configs.split(",")
    for path in args.meshes:
        report[Path(path).name] = ab14.ab(path, args.device, cfgs, args.rounds)
        save()
    if args.judge:
        report["rule"] = judge(report, args.judge, args.rounds)
        save()
    if args.pieces:
        report["pieces"] = ab16.pieces(args.meshes[0], args.pieces, cfgs, target=WORKING_FACES)
        save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
