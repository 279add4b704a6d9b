"""Issue 22, session 20 (the lead, round q16): an integer k's consensus from five starts. Control C (as shipped after
round q16: ``segment.K_STARTS_ONLY`` True, ``segment.K_STARTS`` None = the auto-k starts 24/30/36) against F
(``K_STARTS`` = (20, 24, 30, 36, 42): the medoid of five starts' results; an integer k up to 20 takes them, above it the
factors alone). Each arm its own switch set (its own records of s1421-1422 and its own folds: recipe S, leave one
category out), judged in the real pipeline on new draws from s2024-2047. The pre-registered rule:
benchmarks/results/mesh_q16_session20.md. A thin script on ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session20_q16.py round --data psb.npz --work W --out OUT --judge 2024,...,2047 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session20_q16.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402

STARTS = "gpu_kernels.mesh.segment.K_STARTS"
ONLY = "gpu_kernels.mesh.segment.K_STARTS_ONLY"
#: C = as shipped (the three auto-k starts); F = five starts; recipe S, "gain"
ARMS = [mr.Arm("C", ("y", 21), switches={STARTS: None, ONLY: True}),
        mr.Arm("F", ("y", 21), switches={STARTS: (20, 24, 30, 36, 42), ONLY: True})]
CANDIDATES = ("F",)
#: the rule (benchmarks/results/mesh_q16_session20.md), F against C over the complete draws:
#: (1) protocol mean F <= C - 0.0010 AND F's per-draw mean lower than C's on more draws than higher;
#: (2) meshes over 0.30 summed F <= C; (3) k = "auto": the switch is not read there, so report-only while k = "auto"
#: is equal to C's on every row; if any row differs: >= 80 % in range on every complete draw and mean F <= C + 0.002;
#: (4) report-only (the rows' seconds per switch set); (5) >= 12 complete draws, 2 x 2 x 76 records and 40 folds
#: without error, C's ALL = the shipped model.
MEAN_MARGIN = 0.0010
AUTO_IN_RANGE = 80.0
AUTO_MEAN_MARGIN = 0.002
MIN_DRAWS = 12
#: the per-arm report the brief asks for (never criteria)
REPORT_MESHES = (303, 381, 305)
REPORT_CATEGORIES = ("fish", "octopus")


def judge_one(rows: list, bad: list, cand: str, n_meshes: int, min_draws: int, complete_ok) -> dict:
    j = mr.judge_rows(rows, bad, "C", cand, mr.Rule(min_draws=min_draws), n_meshes)
    per = j["per_draw"]
    better = sum(v[cand] < v["C"] for v in per.values())
    worse = sum(v[cand] > v["C"] for v in per.values())
    ok = bool(per)
    if j["auto_equal_all_rows"]:
        c3, how3 = ok, "report-only (k = auto equal to C on every row)"
    else:
        c3 = ok and all(v[cand + "_in_range"] >= AUTO_IN_RANGE for v in per.values()) \
            and j["auto_mean"][cand] <= j["auto_mean"]["C"] + AUTO_MEAN_MARGIN
        how3 = "criterion (a row differs from C at k = auto)"
    crit = {
        "1_mean": ok and j["mean"][cand] <= j["mean"]["C"] - MEAN_MARGIN and better > worse,
        "2_over_030": ok and j["over_030"][cand] <= j["over_030"]["C"],
        "3_auto": c3,
        "5_complete": len(j["complete"]) >= min_draws and complete_ok is True,
    }
    j["draws_better_worse"] = [better, worse]
    j["auto_how"] = how3
    j["criteria_q16"] = crit
    j["pass_q16"] = all(crit.values())
    return j


def per_arm(rows: list, complete: list, arms: list) -> dict:
    """The brief's per-arm report over the complete draws: meshes 303 / 381 / 305 (mean, draws over 0.30) and the
    fish / octopus categories (mean), plus every category's mean and the meshes over 0.30."""
    rr = [r for r in rows if r["draw"] in complete and all(a in r for a in arms)]
    out: dict = {"meshes": {}, "categories": {}, "over_030": {}, "mean": {}}
    for m in REPORT_MESHES:
        x = [r for r in rr if r["mesh"] == m]
        if x:
            out["meshes"][m] = {a: {"mean": float(np.mean([r[a] for r in x])),
                                    "over": sum(r[a] > mr.OVER for r in x), "n": len(x)} for a in arms}
    for c in sorted({r["category"] for r in rr}):
        x = [r for r in rr if r["category"] == c]
        out["categories"][c] = {a: float(np.mean([r[a] for r in x])) for a in arms}
    for a in arms:
        out["over_030"][a] = sum(r[a] > mr.OVER for r in rr)
        out["mean"][a] = float(np.mean([r[a] for r in rr])) if rr else None
    return out


def print_per_arm(p: dict, arms: list) -> None:
    print("per arm (complete draws; report-only):")
    for m, v in p["meshes"].items():
        print(f"  mesh {m}: " + "; ".join(f"{a} {v[a]['mean']:.4f} ({v[a]['over']}/{v[a]['n']} over 0.30)"
                                          for a in arms))
    for c in REPORT_CATEGORIES:
        if c in p["categories"]:
            print(f"  category {c}: " + "; ".join(f"{a} {p['categories'][c][a]:.4f}" for a in arms))
    print("  every category: " + ", ".join(c + " " + "/".join(f"{v[a]:.4f}" for a in arms)
                                           for c, v in p["categories"].items()) + f" ({'/'.join(arms)})")


def seconds_report(rows: list, complete: list, round_json: dict) -> dict:
    """(4), report-only: the rows' seconds per switch set (one prepare_mesh + every k and k = "auto" per set)."""
    name = {s["set"]: "+".join(s["arms"]) for s in round_json.get("switch_sets", [])}
    rr = [r for r in rows if r["draw"] in complete and "seconds_per_set" in r]
    tot: dict = {}
    for r in rr:
        for s, x in r["seconds_per_set"].items():
            tot[name.get(s, s)] = tot.get(name.get(s, s), 0.0) + x
    med = {}
    if name and rr:
        base = [s for s, n in name.items() if n == "C"]
        for s, n in name.items():
            if base and s != base[0]:
                med[n + " - C"] = statistics.median(r["seconds_per_set"][s] - r["seconds_per_set"][base[0]]
                                                    for r in rr if s in r["seconds_per_set"])
    return {"seconds_sum": tot, "median_per_mesh_draw": med}


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _sg

    if (_ln.GAIN_POWER != 0.5 or _sg.K_SDF_MERGE != 2.0 or _ln.POLICY != "gain" or _ln.AUTO_POLICY != "learned"
            or _sg.K_STARTS_ONLY is not True or _sg.K_STARTS is not None or _sg.K_FROM_AUTO_STARTS is not True):
        raise SystemExit("the library must be as shipped (GAIN_POWER 0.5, K_SDF_MERGE 2.0, POLICY gain, "
                         "AUTO_POLICY learned, K_STARTS_ONLY True, K_STARTS None, K_FROM_AUTO_STARTS True)")
    mr.round_from_args(ARMS, a)
    return 0


def cmd_judge(a) -> int:
    raw = [json.loads(x) for x in Path(a.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    rows = [r for r in raw if "error" not in r]
    if bad:
        print(f"error rows {len(bad)}: {bad[:2]}")
    rj = Path(a.rows).with_name("round.json")
    rnd = json.loads(rj.read_text()) if rj.exists() else {}
    n_rec, n_fold = 2 * 2 * a.n_meshes, 2 * (1 + (19 if a.n_meshes == 76 else len({r["category"] for r in rows})))
    checks = {"shipped_equal": rnd.get("shipped_equal"), "records": rnd.get("records"),
              "record_errors": rnd.get("record_errors"), "folds": rnd.get("folds"),
              "fold_errors": rnd.get("fold_errors"), "records_expected": n_rec, "folds_expected": n_fold}
    complete_ok = (rnd.get("shipped_equal") is True and rnd.get("records") == n_rec and rnd.get("record_errors") == 0
                   and rnd.get("folds") == n_fold and rnd.get("fold_errors") == 0)
    print(f"(5) the round's checks (round.json): {checks} -> {complete_ok}; examples per set "
          f"{rnd.get('examples_per_set')}; draws not run {rnd.get('draws_not_run')}")
    rep: dict = {"round_checks": checks, "round_checks_ok": complete_ok}
    for cand in CANDIDATES:
        j = judge_one(rows, bad, cand, a.n_meshes, a.min_draws, complete_ok)
        mr.print_judgement(j, f"{cand} [mesh_round's default Rule, NOT this round's rule: ignore this verdict]")
        print(f"  draws better / worse (protocol mean) {j['draws_better_worse']}; mean {cand} - C "
              f"{j['mean'][cand] - j['mean']['C']:+.4f} (<= -{MEAN_MARGIN}); over 0.30 C {j['over_030']['C']} "
              f"{cand} {j['over_030'][cand]} (<= C), draws fewer / more {j['draws_fewer_more']}; k = auto: "
              f"{j['auto_how']}; mean C {j['auto_mean']['C']:.4f} {cand} {j['auto_mean'][cand]:.4f}, lowest % in "
              f"range {min((v[cand + '_in_range'] for v in j['per_draw'].values()), default=float('nan')):.1f}")
        print(f"RULE q16 {cand}: {'PASS' if j['pass_q16'] else 'FAIL'} {j['criteria_q16']}", flush=True)
        rep[cand] = j
    complete = sorted(set.intersection(*(set(rep[c]["complete"]) for c in CANDIDATES)))
    arms = ["C", *CANDIDATES]
    rep["per_arm"] = per_arm(rows, complete, arms)
    print_per_arm(rep["per_arm"], arms)
    rep["seconds"] = seconds_report(rows, complete, rnd)
    print(f"(4) report-only, the rows' seconds per switch set: {rep['seconds']}")
    passed = [c for c in CANDIDATES if rep[c]["pass_q16"]]
    ship = min(passed, key=lambda c: rep[c]["mean"][c]) if passed else None
    rep["ships"] = ship
    print(f"SHIPS: {ship or 'none (C stays)'}", flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(rep, indent=1, default=str))
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
