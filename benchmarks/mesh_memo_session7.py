"""Session 7 (issue 22, the reviewer's item): does a memo hit give the same parts as a fresh run?

The auto-k starts' clusterings (24/30/36 clusters) are kept on a prepared mesh
(:attr:`gpu_kernels.mesh.segment.PreparedMesh.memo`) and re-used by the next k. Before session 7
they were clustered in one batch with whatever else the first k needed (an integer k's
over-segmentation factors), and a GPU matrix product's rounding can depend on its batch. Per
PSB mesh (the stored working meshes, as the cross-validation uses them), for each setting of
``segment.STARTS_OWN_BATCH``:

* k then auto on one prepared mesh (auto is a memo hit filled by the integer k's batch) against
  auto on a fresh prepared mesh;
* auto then k (k's starts are memo hits filled by auto's batch) against k fresh.

It prints how many meshes differ, the share of faces with another label (after matching the
parts), and the change of the Rand Index error against the humans.

    python benchmarks/mesh_memo_session7.py --data .carry-mesh5/psb.npz --stored .carry-mesh5/hyb.npz \
        --device cuda --jobs 8 --json out.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _differ(a, b) -> float:
    """Share of faces whose label differs after matching each part of ``a`` to its best part of ``b``."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return 1.0
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    c = np.zeros((ua.size, ub.size), np.int64)
    np.add.at(c, (ia, ib), 1)
    return float(1.0 - c.max(axis=1).sum() / a.size) if ua.size <= ub.size else float(1.0 - c.max(axis=0).sum() / a.size)


def one(args):
    data, stored, mesh_id, device, own = args
    import mesh_psb as mp

    from gpu_kernels.mesh import segment as sg
    from gpu_kernels.mesh.metrics import rand_index_error

    mp._install_simplified(stored)
    sg.STARTS_OWN_BATCH = bool(own)
    v, f = mp.load_mesh(Path(data), mesh_id)
    humans = mp.load_human(Path(data), mesh_id)
    k = int(np.median([np.unique(h).size for h in humans]))

    def ri(lab):
        return float(np.mean([rand_index_error(lab, h) for h in humans]))

    def run(order):
        prep = sg.prepare_mesh(v, f, device=device)
        return {kk: sg.segment_prepared(prep, k=kk, device=device).labels for kk in order}

    k_then_auto = run([k, "auto"])
    auto_then_k = run(["auto", k])
    out = {"mesh": mesh_id, "k": k, "own_batch": bool(own)}
    # auto: hit (filled by k's batch) vs fresh; k: hit (filled by auto's batch) vs fresh
    for name, hit, fresh in (("auto", k_then_auto["auto"], auto_then_k["auto"]),
                             ("k", auto_then_k[k], k_then_auto[k])):
        out[f"{name}_equal"] = bool(np.array_equal(hit, fresh))
        out[f"{name}_faces_differ"] = _differ(hit, fresh)
        out[f"{name}_dRI"] = ri(hit) - ri(fresh)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--stored", type=Path, required=True)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--meshes", default="")
    ap.add_argument("--own", default="0,1", help="STARTS_OWN_BATCH settings to run")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import mesh_psb as mp

    ids = [int(x) for x in args.meshes.split(",") if x] or mp.mesh_ids(args.data)
    tasks = [(str(args.data), str(args.stored), i, args.device, int(o)) for o in args.own.split(",") for i in ids]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
            rows = list(ex.map(one, tasks))
    else:
        rows = [one(t) for t in tasks]
    for own in sorted({r["own_batch"] for r in rows}):
        mine = [r for r in rows if r["own_batch"] == own]
        for name in ("auto", "k"):
            neq = [r for r in mine if not r[f"{name}_equal"]]
            print(f"STARTS_OWN_BATCH={int(own)} {name:4s}: memo hit == fresh on {len(mine) - len(neq)}/{len(mine)} "
                  f"meshes; differing: {[r['mesh'] for r in neq]}; max share of faces "
                  f"{max((r[f'{name}_faces_differ'] for r in mine), default=0):.4f}; mean |dRI| "
                  f"{np.mean([abs(r[f'{name}_dRI']) for r in mine]):.5f}, max |dRI| "
                  f"{max((abs(r[f'{name}_dRI']) for r in mine), default=0):.4f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
