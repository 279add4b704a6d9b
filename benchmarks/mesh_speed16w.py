"""Issue 22, session 16 (helper mesh-speed5): candidate W, a cheaper working mesh (``WORKING_FACES`` 3,500 instead of
4,000; nothing else changes) with the shipped recipe S retrained on W's working meshes, against the control C (recipe
S retrained the same way on 4,000-face working meshes of the SAME training draws), judged by leave one category out
in the real pipeline on NEW judging draws, plus the speed from the file in one process. The pre-registered rule is in
benchmarks/results/mesh_speed5_session16.md.

    python benchmarks/mesh_speed16w.py round --data psb.npz --work W --train 1421,1422 --judge 1431,1432,1433,1434 \\
        --models-auto MA --out OUT [--arms C=4000,W=3500] [--jobs 16] [--device cuda] [--judge-end SECONDS]
    python benchmarks/mesh_speed16w.py judge OUT/rows.jsonl [--json j]
    python benchmarks/mesh_speed16w.py speed 101.off 281.off --model-w W/models/W/ALL.npz --rounds 41 \\
        --rounds-rest 21 [--configs base,W] [--device cuda] [--json ab.json]

``round`` runs, each phase in its own pool of spawned processes (a forked child cannot use a CUDA context):

1. **stores**: per arm and draw the working meshes of the 76 PSB meshes as ``mesh_simplify_session7_stores.py``
   makes them (candidate ``pf3n0s<seed>``: the library's fast + pymeshlab path, preservenormal off, on the mesh with
   its vertices and faces in the seed's random order), at the arm's face count;
2. **record** (training draws, both arms): ``mesh_session15_q.py record``'s per-mesh record (the hand-made integer-k
   merges replayed, each round's 12 weakest candidates recorded with their features and ``y``), with
   ``segment.WORKING_FACES`` set to the arm's count in the worker;
3. **train** (both arms): recipe S (``mesh_session15_q.py train_fold``: 21 columns, 64 trees, depth <= 4, rate 0.1,
   seed 0, the seeded 200,000-example subsample of the other 18 categories; ``ALL`` every category) per held-out
   category, on the arm's own records of the training draws;
4. **confirm** (judging draws, both arms): ``mesh_session13_q.py confirm_mesh`` (the real pipeline: ``prepare_mesh`` +
   ``segment_prepared``, the full-resolution re-cut) at every human k and at k = "auto", each mesh under its own
   category's fold model of its arm (policy "gain"), session 11's k = "auto" fold models for both arms, with
   ``segment.WORKING_FACES`` set to the arm's count in the worker; every judging draw in one batch, the largest
   meshes first, started only if ``--judge-end`` seconds after the round's start are not reached (rows not run are
   missing, never re-run).

``judge``: the rule (1)-(3) on the confirm rows; (4), the speed, is ``speed``'s line plus the 2-core run's.
``speed``: session 14's A/B (``mesh_speed14_ab.ab``: from the file with the defaults, configurations interleaved and
reversed every other round after a warm-up each, one process): ``base`` = the library as shipped, ``W`` =
``segment.WORKING_FACES`` 3,500 and ``learned.MODEL`` = W's ALL model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402

#: the rule's figures (benchmarks/results/mesh_speed5_session16.md)
MEAN_MARGIN = 0.001      # (1) protocol mean over all judging draws W <= C + this
DRAW_MARGIN = 0.003      # (1) and on every draw W <= C + this
AUTO_MAX = 0.13          # (3) k = "auto" mean <= this on every draw ...
AUTO_IN_RANGE = 80.0     # ... with >= this % of the meshes' k in the humans' range
MIN_DRAWS = 4
SPEED_17K = 0.93         # (4) 17k median W <= this x base's median
SPEED_50K = 0.01         # (4) 50k paired median W - base <= this x base's median
CPU2_LIMIT = 3.0         # (4) 2 cores, 50k: W < this many seconds


#: ``--ids`` (a smoke test on a few meshes); empty: every PSB mesh
IDS: list = []


def _spawn_pool(jobs: int):
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


def _set_faces(faces: int) -> None:
    from gpu_kernels.mesh import defaults as _defaults
    from gpu_kernels.mesh import segment as _segment

    _segment.WORKING_FACES = int(faces)
    _defaults.WORKING_FACES = int(faces)


# --------------------------------------------------------------------------- stores
def _store_job(a):
    data, seed, target, mesh_id, cand = a
    from mesh_simplify_session7_stores import store_entries

    v, f = mp.load_mesh(data, mesh_id)
    return mesh_id, store_entries(f"{cand}s{seed}", v, f, int(target))


def make_stores(data: Path, arms: dict, seeds: list, out: Path, jobs: int, cand: str = "pf3n0") -> dict:
    """``out/<arm>/<cand>s<seed>.npz`` per arm and seed (uncompressed; ``cand`` a candidate of
    ``mesh_simplify_session7_stores.store_entries``: ``pf3n0`` the shuffled listings, ``pf3n0c`` the canonical order's
    salts); returns their SHA-1s."""
    ids = IDS or mp.mesh_ids(data)
    keys = [(arm, s) for arm in arms for s in seeds]
    stores: dict = {k: {} for k in keys}
    tasks = [(data, s, arms[arm], i, cand) for arm, s in keys for i in ids]
    with _spawn_pool(jobs) as ex:
        for (arm, s, _i), (_mid, ent) in zip(((arm, s, i) for arm, s in keys for i in ids),
                                             ex.map(_store_job, tasks, chunksize=4), strict=True):
            stores[(arm, s)].update(ent)
    sha = {}
    for (arm, s), st in stores.items():
        (out / arm).mkdir(parents=True, exist_ok=True)
        p = out / arm / f"{cand}s{s}.npz"
        np.savez(p, **st)
        sha[f"{arm}/{cand}s{s}" if cand != "pf3n0" else f"{arm}/s{s}"] = h = hashlib.sha1(p.read_bytes()).hexdigest()
        fc = [st[k].shape[0] for k in st if k.startswith("f_")]
        print(json.dumps({"store": f"{arm}/{cand}s{s}", "meshes": len(fc), "faces_max": max(fc) if fc else 0,
                          "faces_min": min(fc) if fc else 0, "sha1": h}), flush=True)
    return sha


# --------------------------------------------------------------------------- record / train / confirm
def _record_job(a):
    arm, faces, data, store, mesh_id, out, device = a
    try:
        _set_faces(faces)
        import mesh_session15_q as q15

        r = q15.record_mesh(data, store, mesh_id, out, device)
        r.update(arm=arm, faces=faces)
        return r
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"arm": arm, "mesh": mesh_id, "store": str(store), "error": repr(e)}


def _train_job(a):
    arm, rec, models, cat = a
    try:
        import mesh_session15_q as q15

        r = q15.train_fold(rec, models, cat, "S")
        r["arm"] = arm
        return r
    except Exception as e:  # noqa: BLE001
        return {"arm": arm, "fold": cat, "error": repr(e)}


def _confirm_job(a):
    arm, faces, data, store, mesh_id, models, models_auto, device, draw = a
    try:
        _set_faces(faces)
        import mesh_session13_q as q13

        r = q13.confirm_mesh(data, store, mesh_id, {arm: (models, "gain")}, models_auto, device, draw)
        r.update(arm=arm, faces=faces)
        return r
    except Exception as e:  # noqa: BLE001
        return {"arm": arm, "mesh": mesh_id, "draw": draw, "error": repr(e)}


def cmd_round(args) -> int:
    t0 = time.perf_counter()
    IDS[:] = [int(x) for x in args.ids.split(",") if x]
    arms = {k: int(v) for k, v in (x.split("=") for x in args.arms.split(","))}
    train = [int(s) for s in args.train.split(",") if s]
    judge = [int(s) for s in args.judge.split(",") if s]
    work, out = args.work, args.out
    out.mkdir(parents=True, exist_ok=True)

    def el():
        return f"[{time.perf_counter() - t0:.0f} s]"

    if not args.skip_stores:
        print(f"== stores {arms} train {train} judge {judge} {el()}", flush=True)
        sha = make_stores(args.data, arms, train + judge, work / "stores", args.jobs)
        (out / "stores.sha1.json").write_text(json.dumps(sha, indent=1))
    ids = IDS or mp.mesh_ids(args.data)
    if train:
        print(f"== record {el()}", flush=True)
        tasks = []
        for arm, faces in arms.items():
            for s in train:
                d = work / "rec" / arm / f"s{s}"
                d.mkdir(parents=True, exist_ok=True)
                tasks += [(arm, faces, args.data, str(work / "stores" / arm / f"pf3n0s{s}.npz"), i, d, args.device)
                          for i in ids]
        cost = {i: mp._cost(args.data, i) for i in ids}
        tasks.sort(key=lambda t: -cost[t[4]])   # the largest meshes first (a shorter tail)
        with _spawn_pool(args.jobs) as ex, open(out / "record.jsonl", "a") as fh:
            for r in ex.map(_record_job, tasks):
                fh.write(json.dumps(r) + "\n")
        recs = [json.loads(x) for x in (out / "record.jsonl").read_text().splitlines() if x.strip()]
        print(f"records {len(recs)}, errors {sum('error' in r for r in recs)} {el()}", flush=True)
        print(f"== train {el()}", flush=True)
        cats = sorted({mp.category_of(i) for i in ids}) + ["ALL"]
        tasks = [(arm, work / "rec" / arm, work / "models" / arm, c) for arm in arms for c in cats]
        for arm in arms:
            (work / "models" / arm).mkdir(parents=True, exist_ok=True)
        with _spawn_pool(args.jobs) as ex, open(out / "train.jsonl", "a") as fh:
            for r in ex.map(_train_job, tasks):
                fh.write(json.dumps(r) + "\n")
        tr = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines() if x.strip()]
        print(f"folds {len(tr)}, errors {sum('error' in r for r in tr)} {el()}", flush=True)
        with open(out / "models.sha1", "w") as fh:
            for arm in arms:
                for p in sorted((work / "models" / arm).glob("*.npz")):
                    fh.write(f"{hashlib.sha1(p.read_bytes()).hexdigest()}  {arm}/{p.name}\n")
        for arm in arms:
            print(f"model {arm} ALL sha1 {hashlib.sha1((work / 'models' / arm / 'ALL.npz').read_bytes()).hexdigest()}",
                  flush=True)
    if judge:
        # every judging draw in one batch, the largest meshes first (no barrier between draws: a shorter tail)
        left = args.judge_end - (time.perf_counter() - t0)
        print(f"== confirm {judge} ({left:.0f} s before --judge-end) {el()}", flush=True)
        if left < args.draw_min:
            print(f"== judging draws not run: {left:.0f} s left {el()}", flush=True)
        else:
            cost = {i: mp._cost(args.data, i) for i in ids}
            tasks = [(arm, faces, args.data, str(work / "stores" / arm / f"pf3n0s{s}.npz"), i,
                      work / "models" / arm, args.models_auto, args.device, f"s{s}")
                     for s in judge for i in ids for arm, faces in arms.items()]
            tasks.sort(key=lambda t: -cost[t[4]])
            n: dict = {}
            with _spawn_pool(args.jobs) as ex, open(out / "rows.jsonl", "a") as fh:
                for r in ex.map(_confirm_job, tasks):
                    fh.write(json.dumps(r) + "\n")
                    fh.flush()
                    if "error" not in r:
                        n[r["draw"]] = n.get(r["draw"], 0) + 1
            print(f"   rows without error per draw (both arms): {n} {el()}", flush=True)
    print(f"round done {el()}", flush=True)
    return 0


# --------------------------------------------------------------------------- judge
def merged_rows(path: Path, arms=("C", "W")):
    """Per (draw, mesh): both arms' figures in one row; the error rows apart."""
    raw = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    by: dict = {}
    for r in raw:
        if "error" in r:
            continue
        a = r["arm"]
        m = by.setdefault((r["draw"], r["mesh"]), {"draw": r["draw"], "mesh": r["mesh"], "category": r["category"],
                                                   "hk": r["hk"]})
        for k in (a, a + "_auto", a + "_auto_k", a + "_in_range", a + "_per_k"):
            m[k] = r[k]
    rows = [m for m in by.values() if all(a in m for a in arms)]
    return rows, bad, len(by) - len(rows)


def judge_rows(rows: list, bad: list, base: str = "C", cand: str = "W", min_draws: int = MIN_DRAWS,
               n_meshes: int = 76) -> dict:
    bad_draws = {r.get("draw") for r in bad}
    draws = sorted({r["draw"] for r in rows})
    complete = [d for d in draws if d not in bad_draws and sum(r["draw"] == d for r in rows) == n_meshes]
    rr = [r for r in rows if r["draw"] in complete]
    per = {}
    for d in complete:
        x = [r for r in rr if r["draw"] == d]
        per[d] = {base: float(np.mean([r[base] for r in x])), cand: float(np.mean([r[cand] for r in x])),
                  "over_" + base: sorted(r["mesh"] for r in x if r[base] > 0.30),
                  "over_" + cand: sorted(r["mesh"] for r in x if r[cand] > 0.30)}
        for a in (base, cand):
            per[d][a + "_auto"] = float(np.mean([r[a + "_auto"] for r in x]))
            per[d][a + "_in_range"] = 100.0 * float(np.mean([r[a + "_in_range"] for r in x]))
    mb = float(np.mean([v[base] for v in per.values()])) if per else float("nan")
    mc = float(np.mean([v[cand] for v in per.values()])) if per else float("nan")
    o_b = sum(len(v["over_" + base]) for v in per.values())
    o_c = sum(len(v["over_" + cand]) for v in per.values())
    crit = {
        "1_mean": bool(per) and mc <= mb + MEAN_MARGIN,
        "1_every_draw": bool(per) and all(v[cand] <= v[base] + DRAW_MARGIN for v in per.values()),
        "2_over_030": bool(per) and o_c <= o_b,
        "3_auto": bool(per) and all(v[cand + "_auto"] <= AUTO_MAX and v[cand + "_in_range"] >= AUTO_IN_RANGE
                                    for v in per.values()),
        "complete": len(complete) >= min_draws,
    }
    cats = sorted({r["category"] for r in rr})
    per_cat = {c: float(np.mean([r[cand] - r[base] for r in rr if r["category"] == c])) for c in cats}
    d = [r[cand] - r[base] for r in rr]
    return {"base": base, "cand": cand, "draws": draws, "complete": complete, "error_rows": len(bad),
            "mean": {base: mb, cand: mc}, "over_030": {base: o_b, cand: o_c}, "per_draw": per,
            "per_category": per_cat, "rms_mesh_draw": float(np.sqrt(np.mean(np.square(d)))) if d else None,
            "criteria": crit, "pass_1_3": all(crit.values())}


def cmd_judge(args) -> int:
    rows, bad, half = merged_rows(args.rows)
    j = judge_rows(rows, bad, n_meshes=args.n_meshes)
    print(f"rows {len(rows)} (both arms), error rows {len(bad)}, rows of one arm only {half}; complete draws "
          f"{j['complete']}")
    for d, v in j["per_draw"].items():
        print(f"  {d}: C {v['C']:.4f} W {v['W']:.4f} ({v['W'] - v['C']:+.4f})  >0.30 C {v['over_C']} W {v['over_W']}"
              f"  auto C {v['C_auto']:.4f} / {v['C_in_range']:.1f} %  W {v['W_auto']:.4f} / {v['W_in_range']:.1f} %")
    if j["per_draw"]:
        print(f"  all: C {j['mean']['C']:.4f} W {j['mean']['W']:.4f} ({j['mean']['W'] - j['mean']['C']:+.4f}); "
              f">0.30 C {j['over_030']['C']} W {j['over_030']['W']}; per mesh-draw RMS |W - C| {j['rms_mesh_draw']:.4f}")
        print("  per category W - C: " + ", ".join(f"{c} {x:+.4f}" for c, x in sorted(j["per_category"].items(),
                                                                                      key=lambda t: t[1])))
    print(f"RULE W (1)-(3): {'PASS' if j['pass_1_3'] else 'FAIL'} {j['criteria']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(j, indent=1))
    return 0


# --------------------------------------------------------------------------- speed
def _med(xs) -> float:
    xs = list(xs)
    return statistics.median(xs) if xs else float("nan")


def speed_judge(rep: dict, cpu2: float | None) -> dict:
    """(4): 17k median W <= 0.93 x base's; 50k paired median W - base <= +1 % of base's median; 2 cores 50k W < 3 s."""
    names = [k for k in rep if k.endswith(".off")]
    out: dict = {"meshes": names}
    if len(names) >= 2:
        a, b = rep[names[0]]["runs"], rep[names[1]]["runs"]
        m17 = {c: _med(x["total"] for x in a[c]) for c in ("base", "W")}
        m50 = _med(x["total"] for x in b["base"])
        p50 = _med(x["total"] - y["total"] for x, y in zip(b["W"], b["base"], strict=True))
        out.update(m17=m17, ratio17=m17["W"] / m17["base"], m50_base=m50, m50_W=_med(x["total"] for x in b["W"]),
                   paired50=p50, paired50_pct=100.0 * p50 / m50, n17=len(a["W"]), n50=len(b["W"]))
        out["c17"] = out["ratio17"] <= SPEED_17K
        out["c50"] = p50 <= SPEED_50K * m50
    out["cpu2_W_s"] = cpu2
    out["c_cpu2"] = cpu2 is not None and cpu2 < CPU2_LIMIT
    out["pass_4"] = bool(out.get("c17") and out.get("c50") and out["c_cpu2"])
    return out


def cmd_speed(args) -> int:
    import gc

    import mesh_speed14_ab as ab14

    from gpu_kernels.mesh import learned as _ln

    e2e = ab14.e2e
    w_model = _ln.TreeModel.from_npz(args.model_w)
    e2e.CONFIGS.update({
        "base": {},
        "W": {"gpu_kernels.mesh.segment.WORKING_FACES": int(args.faces_w), "gpu_kernels.mesh.learned.MODEL": w_model},
    })
    gc.callbacks.append(ab14.s13._gc_cb)
    cfgs = args.configs.split(",")
    print(f"speed16w {args.device}: configs {cfgs}, W = WORKING_FACES {args.faces_w} + {args.model_w}; cores "
          f"{len(os.sched_getaffinity(0))}", flush=True)
    rep: dict = {}
    for i, path in enumerate(args.meshes):
        rep[Path(path).name] = ab14.ab(path, args.device, cfgs, args.rounds if i == 0 else args.rounds_rest)
        if args.json:
            Path(args.json).write_text(json.dumps(rep, default=str))
    for name, r in rep.items():
        med = {c: _med(x["total"] for x in r["runs"][c]) for c in cfgs}
        print(f"speed16w {name}: median " + ", ".join(f"{c} {v:.1f} ms" for c, v in med.items()), flush=True)
    return 0


def cmd_speed_judge(args) -> int:
    rep = json.loads(Path(args.ab).read_text())
    cpu2 = None
    if args.cpu2 and Path(args.cpu2).exists():
        c = json.loads(Path(args.cpu2).read_text())
        runs = next(iter(c.values()))["runs"]["W"]
        cpu2 = _med(x["total"] for x in runs) / 1e3
    j = speed_judge(rep, cpu2)
    print(f"RULE W (4): {'PASS' if j['pass_4'] else 'FAIL'} {json.dumps(j)}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(j, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("round")
    r.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--arms", default="C=4000,W=3500")
    r.add_argument("--train", default="")
    r.add_argument("--judge", default="")
    r.add_argument("--models-auto", type=Path, required=True)
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--device", default=None)
    r.add_argument("--judge-end", type=float, default=1e9, help="no judging draw starts after this many seconds")
    r.add_argument("--draw-min", type=float, default=12.0, help="a draw starts only with this many seconds left")
    r.add_argument("--skip-stores", action="store_true")
    r.add_argument("--ids", default="", help="only these meshes (a smoke test; the rule's run uses all 76)")
    j = sub.add_parser("judge")
    j.add_argument("rows", type=Path)
    j.add_argument("--json", default="")
    j.add_argument("--n-meshes", type=int, default=76, help="meshes of a complete draw (76; a smoke test: fewer)")
    s = sub.add_parser("speed")
    s.add_argument("meshes", nargs="+")
    s.add_argument("--model-w", type=Path, required=True)
    s.add_argument("--faces-w", type=int, default=3500)
    s.add_argument("--device", default="cuda")
    s.add_argument("--rounds", type=int, default=41)
    s.add_argument("--rounds-rest", type=int, default=21)
    s.add_argument("--configs", default="base,W")
    s.add_argument("--json", default="")
    sj = sub.add_parser("speed-judge")
    sj.add_argument("ab")
    sj.add_argument("--cpu2", default="")
    sj.add_argument("--json", default="")
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge, "speed": cmd_speed, "speed-judge": cmd_speed_judge}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
