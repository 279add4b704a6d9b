"""Issue 22, session 17 (helper mesh-auto8), part 2, descriptive (CPU, no rule, nothing ships): does
``autok.AUTO_K_LOOKAHEAD`` still act on the DEFAULT k = "auto" path (``defaults.DEFAULT_AUTO_MERGE = "learned"``), and
how much does it move the hand-made stop rule (``DEFAULT_AUTO_MERGE = "hand"``, the switch's other value) at the shipped
3,500-face working mesh against the 4,000 it was chosen at?

    python benchmarks/mesh_session17_auto_lookahead.py run --out rows.jsonl [--ids 23,101] [--jobs 2]
    python benchmarks/mesh_session17_auto_lookahead.py report rows.jsonl

``run``: per PSB mesh (the library's own working mesh from the OFF file: fast + pymeshlab, unshuffled) and per
``WORKING_FACES`` in (3,500, 4,000): ``prepare_mesh`` once (CPU), then k = "auto" (``segment_mesh(prepared=...)``) for
each merge rule (learned, hand) and ``AUTO_K_LOOKAHEAD`` in (0, 1, 2): k, the mean Rand Index error over the humans, the
labels' SHA-1. The prepared mesh's memo holds only the clusterings (a memo hit equals a fresh run), so the merges and
the stop run afresh each time. One draw, every mesh in-sample: a description, not a judgement.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402

FACES = (3500, 4000)
RULES = ("learned", "hand")
LOOKAHEADS = (0, 1, 2)


def run_mesh(data: Path, mesh_id: int) -> dict:
    from gpu_kernels.mesh import autok, defaults
    from gpu_kernels.mesh import segment as seg_mod
    from gpu_kernels.mesh.metrics import rand_index_error

    v, f = mp.load_mesh(data, mesh_id)
    humans = mp.load_human(data, mesh_id)
    hk = [int(np.unique(h).size) for h in humans]
    out = {"mesh": mesh_id, "category": mp.category_of(mesh_id), "hk": hk}
    t0 = time.perf_counter()
    for faces in FACES:
        seg_mod.WORKING_FACES = faces
        defaults.WORKING_FACES = faces
        prep = seg_mod.prepare_mesh(v, f, device="cpu")
        for rule in RULES:
            defaults.DEFAULT_AUTO_MERGE = rule
            for L in LOOKAHEADS:
                autok.AUTO_K_LOOKAHEAD = L
                s = seg_mod.segment_mesh(v, f, k="auto", device="cpu", prepared=dataclasses.replace(prep))
                key = f"{faces}_{rule}_L{L}"
                out[key] = {"k": int(s.k), "ri": float(np.mean([rand_index_error(s.labels, h) for h in humans])),
                            "sha": hashlib.sha1(np.ascontiguousarray(s.labels, dtype=np.int32).tobytes()).hexdigest()[:12]}
    out["seconds"] = time.perf_counter() - t0
    return out


def _job(a):
    try:
        return run_mesh(*a)
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"mesh": a[1], "error": repr(e)}


def cmd_run(args) -> int:
    ids = [int(x) for x in args.ids.split(",") if x] or mp.mesh_ids(args.data)
    ids.sort(key=lambda i: -mp._cost(args.data, i))
    with ProcessPoolExecutor(args.jobs) as ex, open(args.out, "a") as fh:
        for r in ex.map(_job, [(args.data, i) for i in ids]):
            fh.write(json.dumps(r) + "\n")
            fh.flush()
    return 0


def summary(rows: list) -> dict:
    out: dict = {"meshes": len(rows)}
    for faces in FACES:
        for rule in RULES:
            ks = [f"{faces}_{rule}_L{L}" for L in LOOKAHEADS]
            out[f"{faces}_{rule}"] = {
                "labels_differ_L0_L1": sum(r[ks[0]]["sha"] != r[ks[1]]["sha"] for r in rows),
                "labels_differ_L1_L2": sum(r[ks[1]]["sha"] != r[ks[2]]["sha"] for r in rows),
                **{f"L{L}_mean": float(np.mean([r[k]["ri"] for r in rows])) for L, k in zip(LOOKAHEADS, ks, strict=True)},
                **{f"L{L}_in_range": sum(min(r["hk"]) <= r[k]["k"] <= max(r["hk"]) for r in rows)
                   for L, k in zip(LOOKAHEADS, ks, strict=True)},
                **{f"L{L}_over_030": sum(r[k]["ri"] > 0.30 for r in rows) for L, k in zip(LOOKAHEADS, ks, strict=True)},
                "L1_minus_L0_changed": {str(r["mesh"]): round(r[ks[1]]["ri"] - r[ks[0]]["ri"], 4) for r in rows
                                        if r[ks[0]]["sha"] != r[ks[1]]["sha"]},
            }
    return out


def cmd_report(args) -> int:
    raw = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    rows = [r for r in raw if "error" not in r]
    print(f"rows {len(rows)}, error rows {len(raw) - len(rows)}")
    s = summary(rows)
    for key, v in s.items():
        if key == "meshes":
            continue
        print(f"{key}: labels differ L0/L1 on {v['labels_differ_L0_L1']}, L1/L2 on {v['labels_differ_L1_L2']} meshes; "
              + "; ".join(f"L{L} {v[f'L{L}_mean']:.4f} in range {v[f'L{L}_in_range']} >0.30 {v[f'L{L}_over_030']}"
                          for L in LOOKAHEADS))
        if v["L1_minus_L0_changed"]:
            print("   L1 - L0 where the labels differ: " + ", ".join(f"{m} {d:+.3f}" for m, d in
                                                                     v["L1_minus_L0_changed"].items()))
    for r in rows:
        if r["mesh"] == 23:
            print("cup 23: " + ", ".join(f"{k} k {x['k']} {x['ri']:.3f}" for k, x in r.items() if isinstance(x, dict)))
    if args.json:
        Path(args.json).write_text(json.dumps(s, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--ids", default="")
    r.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    p = sub.add_parser("report")
    p.add_argument("rows", type=Path)
    p.add_argument("--json", default="")
    a = ap.parse_args(argv)
    return {"run": cmd_run, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
