"""Session 7's acceptance rule (issue 22), applied to cross-validation rows.

The rule, fixed before the runs (the session brief): a candidate setting replaces the default
only when, over the leave-one-category-out folds of the 76 PSB meshes (19 categories),

1. the held-out mean of the pool {defaults, candidates} is lower than the defaults' mean, and
2. in at least 12 of the 19 folds the held-out category scores no worse than the defaults do
   on it (a fold that keeps the defaults counts as not worse), and
3. (k = auto) k stays in the humans' range on at least as many meshes as with the defaults.

Rows come from ``benchmarks/mesh_psb.py --cv --cv-out ROWS.jsonl`` (the pipeline) or from
``benchmarks/mesh_quality.py screen --json TABLE.json`` (the merge replay).

    python benchmarks/mesh_quality_session7.py --rows cv1.jsonl --base "defaults (...)" \
        --pool "eps_p=protocol epsilon 0.06,protocol epsilon 0.08" [--pool ...]
    python benchmarks/mesh_quality_session7.py --table replay.json --base NAME --pool ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

NOT_WORSE_FOLDS = 12


def _by_config(rows) -> dict:
    out: dict = {}
    for r in rows:
        if "error" not in r:
            out.setdefault(r["config"], {})[int(r["mesh"])] = r
    return out


def judge(by: dict, base: str, cands: list, key: str) -> dict:
    """The rule above for the pool ``[base] + cands`` on score ``key`` ("RI" or "RI_auto")."""
    from mesh_psb import category_of

    names = [base] + [c for c in cands if c != base]
    names = [n for n in names if n in by and all(key in r for r in by[n].values())]
    meshes = sorted(set.intersection(*(set(by[n]) for n in names)))
    cats = sorted({category_of(m) for m in meshes}, key=lambda c: min(m for m in meshes if category_of(m) == c))
    folds, held, base_held, inr, base_inr = [], [], [], 0, 0
    for c in cats:
        train = [m for m in meshes if category_of(m) != c]
        test = [m for m in meshes if category_of(m) == c]
        best = min(names, key=lambda n: (float(np.mean([by[n][m][key] for m in train])), names.index(n)))
        h = float(np.mean([by[best][m][key] for m in test]))
        b = float(np.mean([by[base][m][key] for m in test]))
        folds.append({"category": c, "chosen": best, "held_out": h, "defaults": b})
        held.append(h)
        base_held.append(b)
        if key == "RI_auto":
            inr += sum(bool(by[best][m]["in_range"]) for m in test)
            base_inr += sum(bool(by[base][m]["in_range"]) for m in test)
    not_worse = sum(f["held_out"] <= f["defaults"] + 1e-12 for f in folds)
    mean, bmean = float(np.mean(held)), float(np.mean(base_held))
    ok = mean < bmean - 1e-12 and not_worse >= NOT_WORSE_FOLDS and (key != "RI_auto" or inr >= base_inr)
    chosen = {}
    for f in folds:
        chosen[f["chosen"]] = chosen.get(f["chosen"], 0) + 1
    return {"key": key, "pool": names, "held_out": mean, "defaults": bmean, "not_worse": not_worse,
            "folds": len(folds), "in_range": inr if key == "RI_auto" else None,
            "defaults_in_range": base_inr if key == "RI_auto" else None, "chosen": chosen, "accepted": ok}


def _line(name, j) -> str:
    rng = f", k in range {j['in_range']} (defaults {j['defaults_in_range']})" if j["key"] == "RI_auto" else ""
    return (f"{name:28s} {j['key']:7s} held out {j['held_out']:.4f} vs defaults {j['defaults']:.4f}; "
            f"not worse in {j['not_worse']}/{j['folds']} folds{rng}; chosen {j['chosen']} -> "
            f"{'ACCEPTED' if j['accepted'] else 'rejected'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="", help="comma-separated JSON-lines files of mesh_psb.py --cv")
    ap.add_argument("--table", type=Path, default=None, help="mesh_quality.py screen --json output")
    ap.add_argument("--base", required=True)
    ap.add_argument("--pool", action="append", default=[], metavar="NAME=CAND1,CAND2")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.table:
        table = json.loads(args.table.read_text())
        by = {n: {int(m): {**r, "config": n, "mesh": int(m)} for m, r in rows.items()} for n, rows in table.items()}
    else:
        rows = [json.loads(x) for p in args.rows.split(",") if p for x in Path(p).read_text().splitlines() if x.strip()]
        by = _by_config(rows)
    out = []
    for spec in args.pool:
        name, _, cands = spec.partition("=")
        cands = [c for c in cands.split(",") if c]
        for key in ("RI", "RI_auto"):
            if any(c in by and all(key in r for r in by[c].values()) for c in cands):
                j = judge(by, args.base, cands, key)
                j["name"] = name
                out.append(j)
                print(_line(name, j), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
