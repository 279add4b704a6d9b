"""Session 8 (issue 22): apply the pre-registered rule of benchmarks/results/mesh_quality_session8.md to
``mesh_psb.py --cv`` rows with configs named "<candidate> s<seed>" (defaults: "defaults s<seed>").

    python benchmarks/mesh_quality_session8_judge.py ROWS.jsonl [--timing T.json] [--json OUT.json]

Per draw, leave one category out over the pool {defaults, candidate} at k = "auto" (chosen on the
other 18 categories' meshes of that draw, scored on the held-out 4), then criteria (a)-(e) over
the draws, (f) from the timing rows.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_cli import BadInput, check_json_input, check_output, run, write_json  # noqa: E402


def loco_draw(dflt: dict, cand: dict):
    """{mesh: row} of the defaults and the candidate on one draw -> (held-out mean, {category:
    held-out mean}, {category: defaults' mean})."""
    cats = sorted({r["category"] for r in dflt.values()})
    held, base = {}, {}
    for c in cats:
        train = [m for m, r in dflt.items() if r["category"] != c]
        test = [m for m, r in dflt.items() if r["category"] == c]
        pick = cand if np.mean([cand[m]["RI_auto"] for m in train]) < np.mean([dflt[m]["RI_auto"] for m in train]) else dflt
        held[c] = float(np.mean([pick[m]["RI_auto"] for m in test]))
        base[c] = float(np.mean([dflt[m]["RI_auto"] for m in test]))
    n = {c: sum(r["category"] == c for r in dflt.values()) for c in cats}
    tot = sum(n.values())
    return sum(held[c] * n[c] for c in cats) / tot, held, base


def judge(rows: list, timing: list | None = None) -> dict:
    by = defaultdict(dict)
    for r in rows:
        name, _, seed = r["config"].rpartition(" ")
        by[(name, seed)][r["mesh"]] = r
    seeds = sorted({s for _, s in by})
    cands = sorted({n for n, _ in by if n != "defaults"})
    out = {"seeds": seeds, "defaults": {}, "candidates": {}}
    d = {s: by[("defaults", s)] for s in seeds}
    out["defaults"] = {s: {"auto": float(np.mean([r["RI_auto"] for r in d[s].values()])),
                           "protocol": float(np.mean([r["RI"] for r in d[s].values()])),
                           "in_range": int(sum(r["in_range"] for r in d[s].values())),
                           "over_030_auto": int(sum(r["RI_auto"] > 0.30 for r in d[s].values())),
                           "over_030_protocol": int(sum(r["RI"] > 0.30 for r in d[s].values()))} for s in seeds}
    for c in cands:
        per, held_c, base_c = {}, defaultdict(list), defaultdict(list)
        ok = all(len(by.get((c, s), {})) == len(d[s]) and not any("error" in r for r in by[(c, s)].values())
                 for s in seeds)
        for s in seeds:
            x = by.get((c, s), {})
            if len(x) != len(d[s]):
                continue
            held, h, b = loco_draw(d[s], x)
            per[s] = {"held_out": held, "plain": float(np.mean([r["RI_auto"] for r in x.values()])),
                      "defaults": out["defaults"][s]["auto"],
                      "in_range": int(sum(r["in_range"] for r in x.values())),
                      "over_030": int(sum(r["RI_auto"] > 0.30 for r in x.values()))}
            for cat in h:
                held_c[cat].append(h[cat])
                base_c[cat].append(b[cat])
        if not ok:
            out["candidates"][c] = {"per_draw": per, "verdict": "fail (incomplete)"}
            continue
        ho = np.mean([per[s]["held_out"] for s in seeds])
        dm = np.mean([per[s]["defaults"] for s in seeds])
        crit = {
            "a_heldout_mean_minus_defaults": float(ho - dm),
            "a": bool(ho <= dm - 0.002),
            "b_draws_better": int(sum(per[s]["held_out"] < per[s]["defaults"] - 1e-9 for s in seeds)),
            "c_categories_not_worse": int(sum(np.mean(held_c[k]) <= np.mean(base_c[k]) + 1e-12 for k in held_c)),
            "d_in_range": float(np.mean([per[s]["in_range"] for s in seeds])),
            "d_in_range_defaults": float(np.mean([out["defaults"][s]["in_range"] for s in seeds])),
            "e_over_030": float(np.mean([per[s]["over_030"] for s in seeds])),
            "e_over_030_defaults": float(np.mean([out["defaults"][s]["over_030_auto"] for s in seeds])),
        }
        crit["b"] = crit["b_draws_better"] >= 4
        crit["c"] = crit["c_categories_not_worse"] >= 12
        crit["d"] = crit["d_in_range"] >= crit["d_in_range_defaults"]
        crit["e"] = crit["e_over_030"] <= crit["e_over_030_defaults"] + 0.5
        if timing:
            t = {(Path(r["file"]).stem, r["set"].rpartition("=")[2] or "defaults"): r["total_s"] for r in timing
                 if r["k"] == "auto"}
            ratios = {f: t[(f, c)] / t[(f, "defaults")] for f, _ in t if (f, c) in t}
            crit["f_time_ratio"] = ratios
            crit["f"] = bool(ratios) and all(v <= 1.05 for v in ratios.values())
        keys = [k for k in "abcdef" if k in crit]
        crit["verdict"] = "pass" if all(crit[k] for k in keys) else "fail: " + ",".join(k for k in keys if not crit[k])
        out["candidates"][c] = {"per_draw": per, "held_out_mean": float(ho), "defaults_mean": float(dm),
                                "categories": {k: [float(np.mean(held_c[k])), float(np.mean(base_c[k]))]
                                               for k in sorted(held_c)}, **crit}
    return out


def check_args(a):
    """Before anything (one line and status 2 otherwise, ``bench_cli``): the rows are ``mesh_psb.py
    --cv`` JSON lines with the defaults' draws, ``--timing`` is a JSON list of timing rows,
    ``--json`` may be written. Returns (rows, timing or None)."""
    rows = check_json_input("rows", a.rows, lines=True)
    if not rows or not all(isinstance(r, dict) and {"config", "mesh"} <= r.keys() for r in rows):
        raise BadInput(f"rows: {a.rows} holds no mesh_psb.py --cv rows (JSON lines with config and mesh)")
    if not any(r["config"].startswith("defaults ") for r in rows):
        raise BadInput(f"rows: {a.rows} has no 'defaults s<seed>' rows to judge against")
    timing = check_json_input("--timing", a.timing) if a.timing else None
    if timing is not None and not (isinstance(timing, list) and all(isinstance(r, dict) for r in timing)):
        raise BadInput(f"--timing: {a.timing} is not a list of timing rows")
    if a.json:
        check_output("--json", a.json)
    return rows, timing


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--timing", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    rows, timing = check_args(a)
    res = judge(rows, timing)
    for s, v in res["defaults"].items():
        print(f"defaults {s}: protocol {v['protocol']:.4f} auto {v['auto']:.4f} in range {v['in_range']} "
              f">0.30 {v['over_030_protocol']}/{v['over_030_auto']}")
    for c, v in res["candidates"].items():
        print(f"\n{c}: {v['verdict']}")
        for s, p in v["per_draw"].items():
            print(f"  {s}: held out {p['held_out']:.4f} plain {p['plain']:.4f} defaults {p['defaults']:.4f} "
                  f"in range {p['in_range']} >0.30 {p['over_030']}")
        if "held_out_mean" in v:
            print(f"  mean held out {v['held_out_mean']:.4f} vs defaults {v['defaults_mean']:.4f} "
                  f"(a {v['a_heldout_mean_minus_defaults']:+.4f}); draws better {v['b_draws_better']}/5; categories not "
                  f"worse {v['c_categories_not_worse']}/19; in range {v['d_in_range']:.1f} vs {v['d_in_range_defaults']:.1f}; "
                  f">0.30 {v['e_over_030']:.1f} vs {v['e_over_030_defaults']:.1f}; time {v.get('f_time_ratio')}")
    if a.json:
        write_json(a.json, res, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(run(main))
