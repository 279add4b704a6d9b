"""Issue 22, session 18 (helper mesh-q11): the starts' oracle with ``segment.CREASE_STARTS`` off and on (a
diagnosis before candidate X's rule, on throw-away draws only: never a judging draw).

X FAILED its rule (criteria (2) and (4)), so ``CREASE_STARTS`` is not in the library: this script needs the rule
commit's library (2a8ca40, ``git archive`` as the run script restores it).

Per mesh (its working mesh of the store ``pf3n0s<seed>``, ONE ``prepare_mesh``: both arms share the distances and
the clusterings, only the starts' cut differs): the k = "auto" starts (``AUTO_K_STARTS``: 24, 30, 36 clusters,
which an integer k's merges start from too, ``K_FROM_AUTO_STARTS``) are captured where the merges begin
(``segment._merge_to_targets``' labels), carried to every input face (``prep.nearest``), and scored:

- ``oracle_self``: per human j, the best start row with each start cluster given its majority segment of j,
  against j (session 12/14's per-human oracle: what a perfect merge of the starts reaches for j); mean over j;
- ``conc``: the starts' boundary concavity (:func:`segment.boundary_concavity` on the working graph, mean over the
  rows): how well the start boundaries follow concave creases;
- ``changed``: the share of working faces whose start label the re-cut changed (mean over the rows).

    python benchmarks/mesh_session18_q11_starts.py --seed 9905 --out rows.jsonl [--ids 381,303] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_speed16w as w16  # noqa: E402


def _oracle(lab, humans) -> list:
    out = []
    from gpu_kernels.mesh.metrics import rand_index_error

    for h in humans:
        n = np.zeros((int(lab.max()) + 1, int(h.max()) + 1))
        np.add.at(n, (lab, h), 1.0)
        out.append(float(rand_index_error(np.argmax(n, axis=1)[lab], h)))
    return out


def starts_mesh(data: Path, store: str, mesh_id: int, device=None) -> dict:
    from gpu_kernels.mesh import segment as sg

    mp._cv_simplifier()
    mp._cv_ready["stored"] = store
    sg.EARLY_SETTLE = False
    v, f = mp.load_mesh(data, mesh_id)
    humans = [np.asarray(h)[:] for h in mp.load_human(data, mesh_id)]
    prep = sg.prepare_mesh(v, f, device=device)
    gs = prep.working[0][1] if prep.working and prep.working[0][1] is not None else prep.graph
    near = prep.nearest[0] if prep.nearest and prep.nearest[0] is not None else None
    kept = prep.kept
    hum = [h[kept] for h in humans]
    got = []
    orig = sg._merge_to_targets

    def spy(graph, labels, *a, **kw):
        if graph.n == gs.n:
            got.append(np.asarray(labels).copy())
        return orig(graph, labels, *a, **kw)

    out = {"mesh": mesh_id, "category": mp.category_of(mesh_id), "faces_working": int(gs.n)}
    rows = {}
    sg._merge_to_targets = spy
    try:
        for arm, on in (("C", False), ("X", True)):
            sg.CREASE_STARTS = on
            got.clear()
            sg.segment_prepared(prep, k="auto", device=device)
            rows[arm] = list(got)
    finally:
        sg._merge_to_targets = orig
        sg.CREASE_STARTS = False
    for arm, rr in rows.items():
        per_h = []
        for r in rr:
            full = r[near] if near is not None else r
            per_h.append(_oracle(full.astype(np.int64), hum))
        per_h = np.asarray(per_h)  # rows x humans
        out[arm + "_oracle_self"] = float(per_h.min(axis=0).mean())
        out[arm + "_oracle_row_mean"] = float(per_h.mean())
        out[arm + "_conc"] = float(np.mean([sg.boundary_concavity(gs, r) for r in rr]))
        out[arm + "_rows"] = len(rr)
    out["changed"] = float(np.mean([np.mean(a != b) for a, b in zip(rows["C"], rows["X"], strict=False)]))
    return out


def _job(a):
    try:
        return starts_mesh(*a)
    except Exception as e:  # noqa: BLE001
        return {"mesh": a[2], "error": repr(e)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    ap.add_argument("--seed", type=int, default=9905)
    ap.add_argument("--work", type=Path, default=Path("/tmp/mq11_starts"))
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--ids", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--faces", type=int, default=3500)
    a = ap.parse_args(argv)
    if a.seed < 9900:
        raise SystemExit("throw-away seeds 9900-9999 only")
    w16.IDS[:] = [int(x) for x in a.ids.split(",") if x]
    ids = w16.IDS or mp.mesh_ids(a.data)
    store = a.work / "stores" / "X" / f"pf3n0s{a.seed}.npz"
    if not store.exists():
        w16.make_stores(a.data, {"X": a.faces}, [a.seed], a.work / "stores", a.jobs)
    cost = {i: mp._cost(a.data, i) for i in ids}
    tasks = sorted([(a.data, str(store), i, a.device) for i in ids], key=lambda t: -cost[t[2]])
    with w16._spawn_pool(a.jobs) as ex, open(a.out, "a") as fh:
        for r in ex.map(_job, tasks):
            fh.write(json.dumps(r) + "\n")
            fh.flush()
            print(json.dumps({k: (round(x, 4) if isinstance(x, float) else x) for k, x in r.items()}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
