"""Issue 22, session 12 (helper mesh-speed): a cheaper working mesh, judged on the 76 PSB meshes in the real
pipeline (benchmarks/results/mesh_speed_session12.md holds the pre-registered rule).

    python benchmarks/mesh_speed12_quality.py run --draws 1241,1242,1243,1244 --cands pf3,pf3n0 \
        --data psb.npz --device cuda --jobs 16 --out rows.jsonl
    python benchmarks/mesh_speed12_quality.py judge rows.jsonl --base pf3 [--json judged.json]

``run``: per mesh and draw (a seed: the cleaned mesh's vertices and faces in a random order, as
``benchmarks/mesh_simplify_session7_stores.py``'s ``shuffled``), each candidate simplifies that same shuffled mesh
to the working resolution (``pf3`` = today's ``fast+pymeshlab``, fast-simplification to 3 x 4,000 faces then
pymeshlab; ``n0`` = pymeshlab's ``preservenormal`` off; ``pf2`` = fast to 2 x 4,000), and the library's pipeline
(``prepare_mesh`` from that working mesh, then ``segment_prepared``, the full-resolution re-cut included, the
shipped learned integer-k merge: today's defaults) segments the ORIGINAL mesh
- at every human's k (the protocol k: per mesh the mean Rand Index error over the humans, each at its own k);
- at k = "auto" with today's default (``DEFAULT_AUTO_MERGE = "hand"``) and with the learned k = "auto"
  (``DEFAULT_AUTO_MERGE = "learned"``, the shipped auto model), each with its k and whether it is in the humans'
  range.
Every candidate of a (mesh, draw) runs in one worker process, one after the other; a candidate whose working mesh
is bit-identical to an earlier candidate's (the same SHA-1 of the stored arrays) takes that candidate's row
(``reused_from``): the pipeline is then the same computation on the same input.
``judge``: per draw and candidate the means over the 76 meshes, the differences to ``--base`` per draw and over
the draws, per category, and the rule's criteria (``RULE``).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
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
from mesh_simplify_session7_stores import store_entries  # noqa: E402

from gpu_kernels.mesh import defaults as _defaults  # noqa: E402
from gpu_kernels.mesh import segment as _segment  # noqa: E402
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402

#: the pre-registered rule (results/mesh_speed_session12.md): candidate - base, per draw and over the draws
RULE = {"protocol_draw": 0.003, "auto_draw": 0.008, "protocol_mean": 0.0015, "auto_mean": 0.004,
        "in_range_drop": 1.0, "draws": 4}
AUTOS = ("auto_hand", "auto_learned")


@contextlib.contextmanager
def _auto_merge(how: str):
    old = _defaults.DEFAULT_AUTO_MERGE
    _defaults.DEFAULT_AUTO_MERGE = how
    try:
        yield
    finally:
        _defaults.DEFAULT_AUTO_MERGE = old


def _serve(entries: dict):
    """The pipeline's simplification served from one candidate's working meshes (``store_entries``' keys)."""

    def simplify(vertices, faces, target_faces, method=None):
        k = mp._simplify_key(vertices, faces, target_faces)
        if f"v_{k}" not in entries:
            raise RuntimeError("no working mesh made for this mesh")
        return np.asarray(entries[f"v_{k}"], np.float64).copy(), np.asarray(entries[f"f_{k}"], np.int64)

    _segment.simplify_mesh = simplify
    _segment._can_simplify = lambda: True


def run_mesh(data: Path, mesh_id: int, seed: int, cands: list, device=None) -> list:
    """The rows of one mesh and draw: ``cands[0]`` is the base. A candidate whose working mesh is bit-identical to
    an earlier one's (the SHA-1 of the stored arrays) takes that row (``reused_from``): the same computation on the
    same input. Where every candidate's working mesh equals the base's, nothing is run: the rows say
    ``same_as_base`` and carry no scores (their differences are 0 by construction)."""
    _segment.EARLY_SETTLE = False
    v, f = mp.load_mesh(data, mesh_id)
    humans = mp.load_human(data, mesh_id)
    hk = [int(np.unique(h).size) for h in humans]
    cat = mp.category_of(mesh_id)
    target = int(_defaults.WORKING_FACES)
    made = []
    for cand in cands:
        t0 = time.perf_counter()
        entries = store_entries(f"{cand}s{seed}", v, f, target)
        t_simp = time.perf_counter() - t0
        sha = hashlib.sha1(b"".join(np.ascontiguousarray(entries[k]).tobytes() for k in sorted(entries))).hexdigest()
        made.append((cand, entries, sha, t_simp))
    head = {"mesh": mesh_id, "category": cat, "draw": f"s{seed}", "hk": hk}
    if all(sha == made[0][2] for _, _, sha, _ in made):
        return [{**head, "cand": cand, "store_sha1": sha[:12], "simplify_s": ts, "same_as_base": True}
                for cand, _, sha, ts in made]
    rows, done = [], {}
    for cand, entries, sha, t_simp in made:
        if sha in done:
            rows.append({**done[sha], "cand": cand, "reused_from": done[sha]["cand"], "simplify_s": t_simp})
            continue
        t0 = time.perf_counter()
        _serve(entries)
        out = {**head, "cand": cand, "store_sha1": sha[:12], "same_as_base": False,
               "working_faces": int(next((x.shape[0] for k, x in entries.items() if k.startswith("f_")), 0)),
               "simplify_s": t_simp}
        prep = _segment.prepare_mesh(v, f, device=device)
        ri = {}
        for k in sorted(set(hk)):
            seg = _segment.segment_prepared(prep, k=k, device=device)
            ri[k] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
        out["protocol"] = float(np.mean([ri[k] for k in hk]))
        out["protocol_per_k"] = {str(k): x for k, x in ri.items()}
        for name, how in (("auto_hand", "hand"), ("auto_learned", "learned")):
            with _auto_merge(how):
                seg = _segment.segment_prepared(prep, k="auto", device=device)
            out[name] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
            out[name + "_k"] = int(seg.k)
            out[name + "_in_range"] = bool(min(hk) <= int(seg.k) <= max(hk))
        out["seconds"] = time.perf_counter() - t0
        rows.append(out)
        done[sha] = out
    return rows


def _job(a):
    try:
        return run_mesh(*a)
    except Exception as e:  # noqa: BLE001
        return [{"mesh": a[1], "draw": f"s{a[2]}", "error": repr(e)}]


def cmd_run(args) -> int:
    ids = [int(x) for x in args.ids.split(",")] if args.ids else mp.mesh_ids(args.data)
    cands = args.cands.split(",")
    jobs = [(args.data, i, int(s), cands, args.device) for s in args.draws.split(",") for i in ids]
    jobs.sort(key=lambda j: -int(mp.load_mesh(args.data, j[1])[1].shape[0]))   # the largest first
    n = 0
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as ex, \
            open(args.out, "a") as fh:
        for rows in ex.map(_job, jobs):
            for r in rows:
                fh.write(json.dumps(r) + "\n")
                n += 1
            fh.flush()
    print(f"run: {n} rows written to {args.out}", flush=True)
    return 0


# --------------------------------------------------------------------------- judge
def judge(rows: list, cand: str, base: str) -> dict:
    """Per draw: the candidate's differences to the base summed over the meshes run and divided by every mesh of
    the draw (a mesh whose working meshes are identical adds 0), the in-range and over-0.30 counts' differences,
    and the absolute means over the meshes run (``run``: the meshes whose working mesh differs somewhere)."""
    draws = sorted({r["draw"] for r in rows})
    by = {(r["draw"], r["cand"], r["mesh"]): r for r in rows}
    meshes = sorted({r["mesh"] for r in rows})
    metrics = ("protocol", *AUTOS)
    per_draw, diffs = {}, []
    complete = True
    for dr in draws:
        pairs = [(by.get((dr, base, m)), by.get((dr, cand, m))) for m in meshes]
        pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
        complete &= len(pairs) == 76
        run = [(a, b) for a, b in pairs if not a.get("same_as_base")]
        diff = [(a, b) for a, b in run if b.get("reused_from") != base]
        d = {"n": len(pairs), "run": len(run), "differ": len(diff)}
        for x in metrics:
            d["D_" + x] = float(sum(b[x] - a[x] for a, b in run) / max(len(pairs), 1))
            d[x + "_run"] = [float(np.mean([a[x] for a, _ in run])) if run else 0.0,
                             float(np.mean([b[x] for _, b in run])) if run else 0.0]
            d["D_" + x + "_over_030"] = sum(b[x] > 0.30 for _, b in run) - sum(a[x] > 0.30 for a, _ in run)
        for x in AUTOS:
            d["D_" + x + "_in_range"] = sum(b[x + "_in_range"] for _, b in run) - sum(a[x + "_in_range"] for a, _ in run)
        per_draw[dr] = d
        diffs += [(a["mesh"], dr, {x: b[x] - a[x] for x in metrics}) for a, b in run]
    mean = {k: float(np.mean([per_draw[dr][k] for dr in draws]))
            for k in per_draw[draws[0]] if k.startswith("D_")} if draws else {}
    cats = sorted({r["category"] for r in rows})
    per_cat = {x: {c: float(sum(dd[x] for m, _, dd in diffs if mp.category_of(m) == c)
                            / max(1, sum(1 for r in rows if r["cand"] == base and r["category"] == c)))
                   for c in cats} for x in metrics}
    ok = {"a_protocol_every_draw": all(per_draw[dr]["D_protocol"] <= RULE["protocol_draw"] for dr in draws),
          "c_protocol_mean": mean.get("D_protocol", 1.0) <= RULE["protocol_mean"],
          "complete": complete and len(draws) >= RULE["draws"]}
    for x in AUTOS:
        ok[f"b_{x}_every_draw"] = all(per_draw[dr]["D_" + x] <= RULE["auto_draw"] for dr in draws)
        ok[f"c_{x}_mean"] = mean.get("D_" + x, 1.0) <= RULE["auto_mean"]
        ok[f"d_{x}_in_range"] = mean.get("D_" + x + "_in_range", -9.0) >= -RULE["in_range_drop"]
    worst = sorted(diffs, key=lambda t: -max(t[2].values()))[:8]
    best = sorted(diffs, key=lambda t: min(t[2].values()))[:8]
    return {"candidate": cand, "base": base, "per_draw": per_draw, "mean": mean, "per_category": per_cat,
            "categories_not_worse": {x: sum(d <= 1e-12 for d in per_cat[x].values()) for x in metrics},
            "worst": worst, "best": best, "criteria": ok, "pass": all(ok.values())}


def cmd_judge(args) -> int:
    rows = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    cands = sorted({r["cand"] for r in rows} - {args.base})
    print(f"rows {len(rows)}, error rows {len(bad)}: {bad[:3]}")
    out = {"error_rows": bad, "rule": RULE}
    for cand in cands:
        j = judge(rows, cand, args.base)
        if bad:
            j["criteria"]["complete"] = False
            j["pass"] = False
        out[cand] = j
        print(f"== {cand} against {args.base}: {'PASS' if j['pass'] else 'fail'} {j['criteria']}")
        for dr, d in j["per_draw"].items():
            print(f"   {dr}: meshes {d['n']}, run {d['run']}, working mesh differs {d['differ']}; D " + ", ".join(
                f"{x} {d['D_' + x]:+.4f}" for x in ("protocol", *AUTOS)) + "; D in range " + ", ".join(
                f"{d['D_' + x + '_in_range']:+d}" for x in AUTOS) + "; D > 0.30 " + ", ".join(
                f"{d['D_' + x + '_over_030']:+d}" for x in ("protocol", *AUTOS)) + "; on the meshes run " + ", ".join(
                f"{x} {d[x + '_run'][0]:.4f} -> {d[x + '_run'][1]:.4f}" for x in ("protocol", *AUTOS)))
        print("   mean over the draws: " + ", ".join(f"{k} {v:+.4f}" for k, v in j["mean"].items()))
        print(f"   categories not worse: {j['categories_not_worse']}")
        for x in ("protocol", *AUTOS):
            print(f"   {x} per category: " + ", ".join(f"{c} {d:+.4f}" for c, d in
                                                    sorted(j["per_category"][x].items(), key=lambda t: t[1])))
        print("   worst mesh-draws: " + "; ".join(f"{m} {dr} " + " ".join(f"{v:+.3f}" for v in dd.values())
                                                for m, dr, dd in j["worst"]))
        print("   best mesh-draws: " + "; ".join(f"{m} {dr} " + " ".join(f"{v:+.3f}" for v in dd.values())
                                               for m, dr, dd in j["best"]))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--draws", required=True)
    r.add_argument("--cands", default="pf3,pf3n0")
    r.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r.add_argument("--device", default=None)
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--ids", default="")
    r.add_argument("--out", type=Path, required=True)
    j = sub.add_parser("judge")
    j.add_argument("rows")
    j.add_argument("--base", default="pf3")
    j.add_argument("--json")
    args = ap.parse_args(argv)
    return {"run": cmd_run, "judge": cmd_judge}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
