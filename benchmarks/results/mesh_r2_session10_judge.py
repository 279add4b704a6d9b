"""Session 10 (mesh-r2, issue 22): the judge of the pre-registered round in mesh_r2_session10.md.

    python benchmarks/results/mesh_r2_session10_judge.py ROWS.jsonl [--json OUT.json]

ROWS: ``benchmarks/mesh_psb.py --cv`` rows of grid entries "layout s<seed>" (``"layout10": true``, k = "auto"):
per mesh the defaults' k = "auto" (``RI_auto``), R2 as shipped (``RI_auto_r2``: the layout decided on the full
mesh) and the candidate R2W (``RI_auto_r2w``: decided on the working resolution). Per draw, leave one category
out over {defaults, candidate} (session 9's ``loco_draw``), for R2W and for R2; then the rule's criteria.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mesh_quality_session9 import SD8, loco_draw  # noqa: E402

#: share of R2's held-out gain over the defaults that R2W must keep (criterion e)
KEEP = 0.9
#: draws better than the defaults that criterion (a) asks for, of 10 (session 9: 4 of 5)
BETTER = 8


def judge(rows: list) -> dict:
    by = defaultdict(dict)
    for r in rows:
        name, _, seed = r["config"].rpartition(" ")
        if name == "layout":
            by[seed][r["mesh"]] = r
    seeds = sorted(by)
    out = {"seeds": seeds, "per_draw": {}, "errors": sum("error" in r for d in by.values() for r in d.values())}
    base = {s: {m: {"RI_auto": r["RI_auto"], "category": r["category"]} for m, r in by[s].items()} for s in seeds}
    for s in seeds:
        d = by[s]
        p = {"n": len(d), "defaults": float(np.mean([r["RI_auto"] for r in d.values()])),
             "in_range": int(sum(r["in_range"] for r in d.values())),
             "over": int(sum(r["RI_auto"] > 0.30 for r in d.values()))}
        for tag in ("r2", "r2w"):
            cand = {m: {"RI_auto": r[f"RI_auto_{tag}"], "category": r["category"]} for m, r in d.items()}
            p[f"held_{tag}"] = loco_draw(base[s], cand, "RI_auto")
            p[f"plain_{tag}"] = float(np.mean([r[f"RI_auto_{tag}"] for r in d.values()]))
            p[f"in_range_{tag}"] = int(sum(r[f"in_range_{tag}"] for r in d.values()))
            p[f"over_{tag}"] = int(sum(r[f"RI_auto_{tag}"] > 0.30 for r in d.values()))
            p[f"integer_kept_{tag}"] = int(sum(r[f"kept_{tag}"] == "integer k" for r in d.values()))
        p["decisions_differ"] = int(sum(r["kept_r2"] != r["kept_r2w"] for r in d.values()))
        out["per_draw"][s] = p
    P = out["per_draw"]
    complete = len(seeds) == 10 and all(P[s]["n"] == 76 for s in seeds) and out["errors"] == 0
    sd = max(SD8["RI_auto"], float(np.std([P[s]["defaults"] for s in seeds], ddof=1)) if len(seeds) > 1 else 0.0)
    out["sd_bar"] = sd
    dflt = float(np.mean([P[s]["defaults"] for s in seeds]))
    out["defaults"] = {"held": dflt, "in_range": float(np.mean([P[s]["in_range"] for s in seeds])),
                       "over": float(np.mean([P[s]["over"] for s in seeds]))}
    for tag in ("r2", "r2w"):
        gain = float(np.mean([P[s]["defaults"] - P[s][f"held_{tag}"] for s in seeds]))
        better = int(sum(P[s][f"held_{tag}"] < P[s]["defaults"] - 1e-9 for s in seeds))
        rng = float(np.mean([P[s][f"in_range_{tag}"] for s in seeds]))
        over = float(np.mean([P[s][f"over_{tag}"] for s in seeds]))
        crit = {"a_gain": gain > sd, "a_draws": better >= BETTER, "c_over_030": over <= out["defaults"]["over"],
                "d_in_range": rng >= out["defaults"]["in_range"], "complete": complete}
        out[tag] = {"held": float(np.mean([P[s][f"held_{tag}"] for s in seeds])), "gain": gain, "draws_better": better,
                    "in_range": rng, "over": over, "criteria": crit}
    g2, gw = out["r2"]["gain"], out["r2w"]["gain"]
    out["r2w"]["criteria"]["e_keeps_r2_gain"] = gw >= (KEEP * g2 if g2 > 0 else g2)
    for tag in ("r2", "r2w"):
        c = out[tag]["criteria"]
        out[tag]["verdict"] = "pass" if all(c.values()) else "fail: " + ",".join(k for k, v in c.items() if not v)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rows", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    rows = [json.loads(x) for x in a.rows.read_text().splitlines() if x.strip()]
    res = judge(rows)
    print(f"SD bar {res['sd_bar']:.4f}; defaults held out {res['defaults']['held']:.4f}, in range "
          f"{res['defaults']['in_range']:.1f}, over 0.30 {res['defaults']['over']:.1f}; errors {res['errors']}")
    for s, p in res["per_draw"].items():
        print(f"  {s}: " + " ".join(f"{k} {x:.4f}" if isinstance(x, float) else f"{k} {x}" for k, x in p.items()))
    for tag in ("r2", "r2w"):
        v = res[tag]
        print(f"{tag}: held {v['held']:.4f} gain {v['gain']:+.4f} better {v['draws_better']}/10 in range "
              f"{v['in_range']:.1f} over {v['over']:.1f} -> {v['verdict']}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
