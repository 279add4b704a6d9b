"""Issue 22, session 18 (helper mesh-q12): re-judging the two integer-k switches of the default path at the shipped
3,500-face working mesh. Control C (both as shipped: ``segment.K_FROM_AUTO_STARTS`` True, ``segment.K_SDF_MERGE``
2.0) against two candidates, each differing from C in ONE switch: A (``K_FROM_AUTO_STARTS`` False) and T
(``K_SDF_MERGE`` None, the merges' thickness contrast = ``dualgraph.SDF_MERGE`` 0.5, as before session 6). Each arm is
its own switch set: recipe S retrained per fold (leave one category out) on ITS OWN records of s1421-1422, judged in
the real pipeline on new draws from 1856-1879. The pre-registered rule: benchmarks/results/mesh_q12_session18.md. A
thin script on the shared driver ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session18_q12.py round --data psb.npz --work W --out OUT --judge 1856,...,1871 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session18_q12.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402

STARTS = "gpu_kernels.mesh.segment.K_FROM_AUTO_STARTS"
CONTRAST = "gpu_kernels.mesh.segment.K_SDF_MERGE"
SHIPPED = {STARTS: True, CONTRAST: 2.0}
#: C = as shipped; A = K_FROM_AUTO_STARTS flipped; T = K_SDF_MERGE off (None: SDF_MERGE); recipe S, "gain" order
ARMS = [mr.Arm("C", ("y", 21), switches=dict(SHIPPED)),
        mr.Arm("A", ("y", 21), switches={**SHIPPED, STARTS: False}),
        mr.Arm("T", ("y", 21), switches={**SHIPPED, CONTRAST: None})]
CANDIDATES = ("A", "T")
#: the rule (benchmarks/results/mesh_q12_session18.md), each candidate against C: (1) protocol mean cand <= C - 0.0010
#: and cand better than C on more complete draws than worse; (2) meshes over 0.30 summed cand <= C; (3) k = "auto"
#: (shipped auto model) >= 80 % in range on every complete draw and mean cand <= C + 0.002; (4) report-only (neither
#: switch is read at k = "auto", the end-to-end default; at an integer k a flip removes work); (5) >= 12 complete
#: draws, 3 x 2 x 76 records without error, 60 folds without error, C's ALL = the shipped model
MEAN_MARGIN = 0.0010
AUTO_IN_RANGE = 80.0
AUTO_MEAN_MARGIN = 0.002
MIN_DRAWS = 12


def judge_one(rows: list, bad: list, cand: str, n_meshes: int, min_draws: int) -> dict:
    j = mr.judge_rows(rows, bad, "C", cand, mr.Rule(min_draws=min_draws), n_meshes)
    per = j["per_draw"]
    better = sum(v[cand] < v["C"] for v in per.values())
    worse = sum(v[cand] > v["C"] for v in per.values())
    ok = bool(per)
    crit = {
        "1_mean": ok and j["mean"][cand] <= j["mean"]["C"] - MEAN_MARGIN and better > worse,
        "2_over_030": ok and j["over_030"][cand] <= j["over_030"]["C"],
        "3_auto": ok and all(v[cand + "_in_range"] >= AUTO_IN_RANGE for v in per.values())
        and j["auto_mean"][cand] <= j["auto_mean"]["C"] + AUTO_MEAN_MARGIN,
        "5_draws": len(j["complete"]) >= min_draws,
    }
    j["draws_better_worse"] = [better, worse]
    j["criteria_q12"] = crit
    j["pass_q12"] = all(crit.values())
    return j


def cmd_round(a) -> int:
    from gpu_kernels.mesh import segment as _sg

    if _sg.K_FROM_AUTO_STARTS is not True or _sg.K_SDF_MERGE != 2.0:
        raise SystemExit("the library must have the shipped switches (K_FROM_AUTO_STARTS True, K_SDF_MERGE 2.0)")
    mr.round_from_args(ARMS, a)
    return 0


def cmd_judge(a) -> int:
    raw = [json.loads(x) for x in Path(a.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    rows = [r for r in raw if "error" not in r]
    if bad:
        print(f"error rows {len(bad)}: {bad[:2]}")
    rep = {}
    for cand in CANDIDATES:
        j = judge_one(rows, bad, cand, a.n_meshes, a.min_draws)
        mr.print_judgement(j, f"{cand} [mesh_round's default Rule, NOT this round's rule: ignore this verdict]")
        print(f"  draws better / worse {j['draws_better_worse']}; mean {cand} - C "
              f"{j['mean'][cand] - j['mean']['C']:+.4f} (<= -{MEAN_MARGIN}); k = auto equal on every row: "
              f"{j['auto_equal_all_rows']}")
        print(f"RULE q12 {cand}: {'PASS' if j['pass_q12'] else 'FAIL'} {j['criteria_q12']}", flush=True)
        rep[cand] = j
    passed = [c for c in CANDIDATES if rep[c]["pass_q12"]]
    ship = min(passed, key=lambda c: rep[c]["mean"][c]) if passed else None
    rep["ships"] = ship
    print(f"SHIPS: {ship or 'none (C stays)'}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rep, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mr.add_round_args(sub)
    mr.add_judge_args(sub, MIN_DRAWS)
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
