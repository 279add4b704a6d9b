"""Issue 22, session 19 (helper mesh-q13): a tempered "gain" merge order for an integer k. The shipped order merges
first the pair of the lowest ``(2 p - 1) x share_small x share_large``; candidates raise the area product to
``learned.GAIN_POWER`` g < 1 (toward "lowest p first": the bust 303 and the four-legged 381 keep splitting their one
dominant body while a leg of high p is merged first). Control C (g = 1.0, as shipped) against G75 (g = 0.75) and G50
(g = 0.5), each its own switch set: recipe S retrained per fold (leave one category out) on ITS OWN records of
s1421-1422, judged in the real pipeline on new draws from 1900-1923. The pre-registered rule:
benchmarks/results/mesh_q13_session19.md. A thin script on the shared driver ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session19_q13.py round --data psb.npz --work W --out OUT --judge 1900,...,1915 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session19_q13.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
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

POWER = "gpu_kernels.mesh.learned.GAIN_POWER"
#: C = as shipped (g = 1.0); G75, G50: the area product to the power 0.75 / 0.5; recipe S, the "gain" order
ARMS = [mr.Arm("C", ("y", 21), switches={POWER: 1.0}),
        mr.Arm("G75", ("y", 21), switches={POWER: 0.75}),
        mr.Arm("G50", ("y", 21), switches={POWER: 0.5})]
CANDIDATES = ("G75", "G50")
#: the rule (benchmarks/results/mesh_q13_session19.md), each candidate against C over the complete draws:
#: (1) meshes over 0.30 summed cand <= C - 3 AND fewer than C on more draws than more; (2) protocol mean
#: cand <= C + 0.0010; (3) k = "auto": report-only (AUTO_POLICY "learned" never reads GAIN_POWER; the rows'
#: equality is printed); (4) report-only (the end-to-end default is k = "auto"); (5) >= 12 complete draws,
#: 3 x 2 x 76 records without error, 60 folds without error, C's ALL = the shipped model
OVER_MARGIN = 3
MEAN_MARGIN = 0.0010
MIN_DRAWS = 12


def judge_one(rows: list, bad: list, cand: str, n_meshes: int, min_draws: int, shipped_equal) -> dict:
    j = mr.judge_rows(rows, bad, "C", cand, mr.Rule(over_margin=OVER_MARGIN, min_draws=min_draws), n_meshes)
    per = j["per_draw"]
    fewer, more = j["draws_fewer_more"]
    ok = bool(per)
    crit = {
        "1_over_030": ok and j["over_030"][cand] <= j["over_030"]["C"] - OVER_MARGIN and fewer > more,
        "2_mean": ok and j["mean"][cand] <= j["mean"]["C"] + MEAN_MARGIN,
        "5_complete": len(j["complete"]) >= min_draws and shipped_equal is not False,
    }
    j["draws_better_worse"] = [sum(v[cand] < v["C"] for v in per.values()),
                               sum(v[cand] > v["C"] for v in per.values())]
    j["criteria_q13"] = crit
    j["pass_q13"] = all(crit.values())
    return j


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln

    if _ln.GAIN_POWER != 1.0 or _ln.POLICY != "gain" or _ln.AUTO_POLICY != "learned":
        raise SystemExit("the library must be as shipped (GAIN_POWER 1.0, POLICY gain, AUTO_POLICY learned)")
    mr.round_from_args(ARMS, a)
    return 0


def cmd_judge(a) -> int:
    raw = [json.loads(x) for x in Path(a.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    rows = [r for r in raw if "error" not in r]
    if bad:
        print(f"error rows {len(bad)}: {bad[:2]}")
    rj = Path(a.rows).with_name("round.json")
    shipped_equal = json.loads(rj.read_text()).get("shipped_equal") if rj.exists() else None
    print(f"C's ALL retrained == the shipped model: {shipped_equal} (round.json)")
    rep = {"shipped_equal": shipped_equal}
    for cand in CANDIDATES:
        j = judge_one(rows, bad, cand, a.n_meshes, a.min_draws, shipped_equal)
        mr.print_judgement(j, f"{cand} [mesh_round's default Rule, NOT this round's rule: ignore this verdict]")
        print(f"  draws better / worse (protocol mean) {j['draws_better_worse']}; mean {cand} - C "
              f"{j['mean'][cand] - j['mean']['C']:+.4f} (<= +{MEAN_MARGIN}); over 0.30 C {j['over_030']['C']} "
              f"{cand} {j['over_030'][cand]} (<= C - {OVER_MARGIN}), draws fewer / more {j['draws_fewer_more']}; "
              f"k = auto equal on every row (report-only): {j['auto_equal_all_rows']}")
        print(f"RULE q13 {cand}: {'PASS' if j['pass_q13'] else 'FAIL'} {j['criteria_q13']}", flush=True)
        rep[cand] = j
    passed = [c for c in CANDIDATES if rep[c]["pass_q13"]]
    ship = min(passed, key=lambda c: (rep[c]["over_030"][c], rep[c]["mean"][c])) if passed else None
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
