"""mesh-live7, session 18: the table of call 1's live.py runs (benchmarks/results/mesh_live7_session18_call1/).

    python benchmarks/results/mesh_live7_session18_summary.py benchmarks/results/mesh_live7_session18_call1

One row per run: the three k edits after the debounce (ms), their shares (cluster / segment / cut stages, paint,
repaint, other) as medians, and whether the last edit's result equals a fresh run's.
"""

from __future__ import annotations

import json
import pathlib
import statistics
import sys


def rows(folder: pathlib.Path):
    for f in sorted(folder.glob("live_*.json")):
        try:
            d = json.loads(f.read_text())
            t = d["tools"]["mesh-seg"]
        except (OSError, ValueError, KeyError):
            continue
        tg = t.get("target") or {}
        runs = tg.get("runs", [])
        if not runs:
            continue

        def med(key, runs=runs):
            return 1e3 * statistics.median(r[key] for r in runs)

        def stage(name, runs=runs):
            return 1e3 * statistics.median(r["stage_s"].get(name, 0.0) for r in runs)

        yield {"run": f.stem[5:], "full_res": bool((d.get("mesh_settle") or {}).get("full_resolution",
                                                                                     "F" in f.stem[5:])),
               "settle": d.get("mesh_settle"), "edits": [round(1e3 * r["after_debounce_s"], 1) for r in runs],
               "median": round(med("after_debounce_s"), 1), "cluster": round(stage("cluster"), 1),
               "segment": round(stage("segment"), 1), "cut": round(stage("cut"), 1), "paint": round(med("paint_s"), 1),
               "repaint": round(med("repaint_s"), 1), "other": round(med("other_s"), 1),
               "same": tg.get("same_as_full_run"), "same_last": t.get("same_as_full_run")}


def main(argv=None) -> int:
    folder = pathlib.Path((argv or sys.argv[1:])[0])
    print("| run | 3 k edits after the debounce (ms) | median | cluster | segment | cut | paint | repaint | other "
          "| = fresh run |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows(folder):
        print(f"| {r['run']} | {' / '.join(str(x) for x in r['edits'])} | {r['median']} | {r['cluster']} | "
              f"{r['segment']} | {r['cut']} | {r['paint']} | {r['repaint']} | {r['other']} | "
              f"{r['same']} / {r['same_last']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
