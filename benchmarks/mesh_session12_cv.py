"""Issue 22 (session 12, helper mesh-cv2): the held-out (leave one category out) figures of the mesh tool with
TODAY's defaults, measured, nothing chosen or tuned.

Per PSB mesh and draw: the working mesh from a stored simplification made with today's default
(``pf3n0s<draw>``: fast-simplification to 3x the target, then pymeshlab with preservenormal off, on the mesh
with its vertices and faces in the draw's random order: ``benchmarks/mesh_simplify_session7_stores.py``), then
the real pipeline (``prepare_mesh`` + ``segment_prepared``, full-resolution re-cut, on ``--device``) with the
library's own merge paths (``defaults.DEFAULT_K_MERGE`` and ``DEFAULT_AUTO_MERGE``, both "learned" today), the
learned models set to session 11's FOLD models of the mesh's category (trained without it):
``learned.MODEL`` from ``--models/<cat>.npz`` (integer k), ``learned.MODEL_AUTO`` from ``--models-auto/<cat>.npz``
(k = "auto"). Protocol k: each human's own k (mean of the RI errors over the humans, each k scored against all
humans as ``mesh_session11_learned.py confirm``); k = "auto": one segmentation, its k in the humans' range
(min..max of the human segmentations' counts, as ``mesh_psb.py``). ``segment.EARLY_SETTLE = False`` as in
session 11's confirmations and mesh-speed's session-12 round (the clusterings' scheduling).

    python benchmarks/mesh_session12_cv.py run --store S.npz --draw s1281 --models M --models-auto MA \
        --out rows.jsonl [--data psb.npz] [--device cuda] [--jobs 16]
    python benchmarks/mesh_session12_cv.py summary rows.jsonl [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
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

from gpu_kernels.mesh import defaults as _defaults  # noqa: E402
from gpu_kernels.mesh import learned as _ln  # noqa: E402
from gpu_kernels.mesh import segment as _segment  # noqa: E402
from gpu_kernels.mesh import simplify as _simp  # noqa: E402
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402


def defaults_seen() -> dict:
    return {"DEFAULT_K_MERGE": _defaults.DEFAULT_K_MERGE, "DEFAULT_AUTO_MERGE": _defaults.DEFAULT_AUTO_MERGE,
            "PRESERVE_NORMAL": bool(_simp.PRESERVE_NORMAL), "PRE_FACTOR": float(_simp.PRE_FACTOR),
            "LEARNED_MAX_K": int(_defaults.LEARNED_MAX_K), "AUTO_STOP_P": float(_ln.AUTO_STOP_P)}


def run_mesh(data: Path, store: str, mesh_id: int, models: Path, models_auto: Path, device=None, draw="") -> dict:
    mp._cv_simplifier()
    mp._cv_ready["stored"] = store
    _segment.EARLY_SETTLE = False
    v, f = mp.load_mesh(data, mesh_id)
    humans = mp.load_human(data, mesh_id)
    hk = [int(np.unique(h).size) for h in humans]
    cat = mp.category_of(mesh_id)
    _ln.MODEL = _ln.TreeModel.from_npz(models / f"{cat}.npz")
    _ln.MODEL_AUTO = _ln.TreeModel.from_npz(models_auto / f"{cat}.npz")
    t0 = time.perf_counter()
    prep = _segment.prepare_mesh(v, f, device=device)
    out = {"mesh": mesh_id, "category": cat, "draw": draw, "hk": hk}
    ri = {}
    for k in sorted(set(hk)):
        seg = _segment.segment_prepared(prep, k=k, device=device)
        ri[k] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
    out["protocol"] = float(np.mean([ri[k] for k in hk]))
    out["protocol_per_k"] = {str(k): x for k, x in ri.items()}
    seg = _segment.segment_prepared(prep, k="auto", device=device)
    out["auto"] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
    out["auto_k"] = int(seg.k)
    out["in_range"] = bool(min(hk) <= int(seg.k) <= max(hk))
    out["seconds"] = time.perf_counter() - t0
    return out


def _job(a):
    try:
        return run_mesh(*a)
    except Exception as e:  # noqa: BLE001
        return {"mesh": a[2], "draw": a[6], "error": repr(e)}


def cmd_run(args) -> int:
    print(json.dumps({"defaults": defaults_seen()}), flush=True)
    ids = [int(x) for x in args.ids.split(",")] if args.ids else mp.mesh_ids(args.data)
    jobs = [(args.data, str(args.store), i, args.models, args.models_auto, args.device, args.draw) for i in ids]
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as ex, \
            open(args.out, "a") as fh:
        for r in ex.map(_job, jobs):
            fh.write(json.dumps(r) + "\n")
            fh.flush()
            print(json.dumps({k: v for k, v in r.items() if not k.endswith("per_k")}), flush=True)
    return 0


def summary(rows: list) -> dict:
    draws = sorted({r["draw"] for r in rows})
    per_draw = {}
    for dr in draws:
        rr = [r for r in rows if r["draw"] == dr]
        per_draw[dr] = {"n": len(rr), "protocol": float(np.mean([r["protocol"] for r in rr])),
                        "auto": float(np.mean([r["auto"] for r in rr])),
                        "in_range_pct": 100.0 * float(np.mean([r["in_range"] for r in rr])),
                        "in_range": int(sum(r["in_range"] for r in rr)),
                        "over_030_protocol": int(sum(r["protocol"] > 0.30 for r in rr)),
                        "over_030_auto": int(sum(r["auto"] > 0.30 for r in rr))}
    cats = sorted({r["category"] for r in rows})
    per_cat = {c: {"protocol": float(np.mean([r["protocol"] for r in rows if r["category"] == c])),
                   "auto": float(np.mean([r["auto"] for r in rows if r["category"] == c])),
                   "in_range_pct": 100.0 * float(np.mean([r["in_range"] for r in rows if r["category"] == c]))}
               for c in cats}
    keys = ("protocol", "auto", "in_range_pct", "over_030_protocol", "over_030_auto")
    mean = {k: float(np.mean([v[k] for v in per_draw.values()])) for k in keys}
    return {"per_draw": per_draw, "mean": mean, "per_category": per_cat}


def cmd_summary(args) -> int:
    rows = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    print(f"rows {len(rows)}, error rows {len(bad)}", *(f"  {b}" for b in bad[:5]), sep="\n")
    if not rows:
        return 1
    s = summary(rows)
    s["error_rows"] = bad
    for dr, v in s["per_draw"].items():
        print(f"{dr} (n {v['n']}): protocol {v['protocol']:.4f}, auto {v['auto']:.4f}, auto k in range "
              f"{v['in_range']}/{v['n']} ({v['in_range_pct']:.1f} %), >0.30 protocol {v['over_030_protocol']} "
              f"auto {v['over_030_auto']}")
    m = s["mean"]
    print(f"mean over {len(s['per_draw'])} draws: protocol {m['protocol']:.4f}, auto {m['auto']:.4f}, in range "
          f"{m['in_range_pct']:.1f} %, >0.30 protocol {m['over_030_protocol']:.2f} auto {m['over_030_auto']:.2f}")
    print("per category (protocol / auto / % in range):")
    for c, v in s["per_category"].items():
        print(f"  {c:10s} {v['protocol']:.4f} / {v['auto']:.4f} / {v['in_range_pct']:.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(s, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--store", type=Path, required=True)
    r.add_argument("--draw", required=True)
    r.add_argument("--models", type=Path, required=True)
    r.add_argument("--models-auto", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--ids", default="")
    r.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r.add_argument("--device", default=None)
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    s = sub.add_parser("summary")
    s.add_argument("rows")
    s.add_argument("--json")
    a = ap.parse_args(argv)
    return cmd_run(a) if a.cmd == "run" else cmd_summary(a)


if __name__ == "__main__":
    raise SystemExit(main())
