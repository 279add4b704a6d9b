"""Issue 22, session 17 (helper mesh-q8): candidate K, the shipped integer-k recipe S with every training CATEGORY
weighing the same in the trees' fit, against the control C (recipe S exactly as shipped), both retrained the same way
on the same records (working-mesh draws s1421-1422 at ``WORKING_FACES`` 3,500: C's ``ALL`` = the shipped model),
leave one category out, judged in the real pipeline on new judging draws. The pre-registered rule is in
benchmarks/results/mesh_q8_session17.md.

    python benchmarks/mesh_session17_q.py round --data psb.npz --work W --out OUT --train 1421,1422 \\
        --judge 1700,...,1711 --models-auto MA [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4]
    python benchmarks/mesh_session17_q.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 6]

``round`` (each phase in its own pool of spawned processes: a forked child cannot use a CUDA context):

1. **stores**: ``mesh_speed16w.make_stores`` at 3,500 faces (the shipped working mesh) for the training and the
   judging draws (candidate ``pf3n0s<seed>``, as session 16);
2. **record** (training draws, ONCE: both arms train on the same examples): ``mesh_session15_q.record_mesh``;
3. **train**, per held-out category and ``ALL``: ``C`` = ``mesh_session15_q.train_fold(..., "S")`` (the shipped
   recipe: 21 columns, 64 trees, depth <= 4, rate 0.1, seed 0, the seeded 200,000-example subsample, target ``y``);
   ``K`` = the SAME subsample (the same rows, checked), the same trees, with ``sample_weight`` = 1 / (the number of
   the subsample's rows of the row's category), scaled to a mean of 1: every training category weighs the same;
4. **confirm** (judging draws): ``mesh_session13_q.confirm_mesh`` with both arms in one job (one ``prepare_mesh``,
   then every human k and k = "auto" under C's fold model, then under K's; each mesh under its own category's fold
   model; policy "gain"; session 11's k = "auto" fold models for both arms), the judging draws in batches of
   ``--batch`` draws, each batch the largest meshes first; a batch starts only if ``--judge-end`` seconds after the
   round's start are not reached (its draws are then missing, never re-run).

``judge``: the rule (1)-(3) (the candidate does not change the merge loop or its cost: (4) does not apply; K's
models have C's shape, checked in ``round``).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_speed16w as w16  # noqa: E402

#: the rule's figures (benchmarks/results/mesh_q8_session17.md)
FACES = 3500
MEAN_MARGIN = 0.0005     # (2) protocol mean over all complete draws K <= C + this
DRAW_MARGIN = 0.003      # (2) and on every complete draw K <= C + this
AUTO_MAX = 0.13          # (3) k = "auto" mean <= this on every draw ...
AUTO_IN_RANGE = 80.0     # ... with >= this % of the meshes' k in the humans' range
AUTO_MEAN_MARGIN = 0.0005  # (3) where K changes k = "auto": K's mean <= C's + this
MIN_DRAWS = 6
OVER = 0.30


# --------------------------------------------------------------------------- train
def _fold_data(rec_dir: Path, cat: str, nf: int):
    """The fold's capped examples exactly as recipe S (``mesh_session15_q.train_fold``) takes them, with each row's
    category."""
    import mesh_session12_q as ml12
    import mesh_session15_q as q15

    rows = q15._examples(rec_dir, "y")
    sel = [r for r in rows if r[2] != cat]
    X = np.concatenate([r[3] for r in sel]).astype(np.float64)
    t = np.concatenate([r[4] for r in sel]).astype(np.float64)
    names = sorted({r[2] for r in sel})
    c = np.concatenate([np.full(r[4].size, names.index(r[2]), np.int64) for r in sel])
    Xc, tc = ml12._cap(X, t)
    if t.size > ml12.TRAIN_CAP:
        keep = np.sort(np.random.default_rng(0).choice(t.size, ml12.TRAIN_CAP, replace=False))
        X, t, c = X[keep], t[keep], c[keep]
    if not (np.array_equal(X, Xc) and np.array_equal(t, tc)):
        raise RuntimeError("the weighted fold's rows differ from recipe S's subsample")
    return X[:, :nf], t, c, names, rows


def category_weights(c: np.ndarray) -> np.ndarray:
    """1 / (rows of the row's category), scaled to a mean of 1: every category's rows sum to the same weight."""
    n = np.bincount(c)
    w = 1.0 / n[c]
    return w * (w.size / w.sum())


def train_fold_k(rec_dir: Path, models: Path, cat: str) -> dict:
    import mesh_session12_q as ml12
    import mesh_session15_q as q15

    nf = q15.RECIPES["S"][1]
    X, t, c, names, rows = _fold_data(rec_dir, cat, nf)
    w = category_weights(c)
    t0 = time.perf_counter()
    m = ml12.fit(X, t, w)
    m.save(models / f"{cat}.npz")
    per = np.bincount(c, weights=w)
    out = {"recipe": "K", "fold": cat, "n": int(t.size), "n_features": nf, "categories": len(names),
           "rows_min": int(np.bincount(c).min()), "rows_max": int(np.bincount(c).max()),
           "weight_per_category_min": float(per.min()), "weight_per_category_max": float(per.max()),
           "trees": int(m.feature.shape[0]), "depth": int(m.depth), "seconds": time.perf_counter() - t0}
    held = [r for r in rows if r[2] == cat]
    if held:
        Xh = np.concatenate([r[3] for r in held]).astype(np.float64)[:, :nf]
        th = np.concatenate([r[4] for r in held]).astype(np.float64)
        out["held_mse"] = float(np.mean((m.predict(Xh) - th) ** 2))
        out["held_var"] = float(np.var(th))
    return out


def _train_job(a):
    arm, rec, models, cat = a
    try:
        if arm == "C":
            import mesh_session15_q as q15

            r = q15.train_fold(rec, models, cat, "S")
        else:
            r = train_fold_k(rec, models, cat)
        r["arm"] = arm
        return r
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"arm": arm, "fold": cat, "error": repr(e)}


def _confirm_job(a):
    data, store, mesh_id, sets, models_auto, device, draw = a
    try:
        w16._set_faces(FACES)
        import mesh_session13_q as q13

        return q13.confirm_mesh(data, store, mesh_id, sets, models_auto, device, draw)
    except Exception as e:  # noqa: BLE001
        return {"mesh": mesh_id, "draw": draw, "error": repr(e)}


def _sha(p: Path) -> str:
    return hashlib.sha1(Path(p).read_bytes()).hexdigest()


def shipped_sha() -> str:
    from gpu_kernels.mesh import learned_model

    return hashlib.sha1(base64.b64decode("".join(learned_model.NPZ_BASE64))).hexdigest()


def cmd_round(args) -> int:
    t0 = time.perf_counter()
    w16.IDS[:] = [int(x) for x in args.ids.split(",") if x]
    train = [int(s) for s in args.train.split(",") if s]
    judge = [int(s) for s in args.judge.split(",") if s]
    work, out = args.work, args.out
    out.mkdir(parents=True, exist_ok=True)

    def el():
        return f"[{time.perf_counter() - t0:.0f} s]"

    ids = w16.IDS or mp.mesh_ids(args.data)
    cost = {i: mp._cost(args.data, i) for i in ids}
    print(f"== stores {FACES} faces, train {train} judge {judge} {el()}", flush=True)
    sha = w16.make_stores(args.data, {"X": FACES}, train + judge, work / "stores", args.jobs)
    (out / "stores.sha1.json").write_text(json.dumps(sha, indent=1))

    print(f"== record {el()}", flush=True)
    tasks = []
    for s in train:
        d = work / "rec" / f"s{s}"
        d.mkdir(parents=True, exist_ok=True)
        tasks += [("X", FACES, args.data, str(work / "stores" / "X" / f"pf3n0s{s}.npz"), i, d, args.device)
                  for i in ids]
    tasks.sort(key=lambda t: -cost[t[4]])
    with w16._spawn_pool(args.jobs) as ex, open(out / "record.jsonl", "a") as fh:
        for r in ex.map(w16._record_job, tasks):
            fh.write(json.dumps(r) + "\n")
    recs = [json.loads(x) for x in (out / "record.jsonl").read_text().splitlines() if x.strip()]
    print(f"records {len(recs)}, errors {sum('error' in r for r in recs)}, examples "
          f"{sum(r.get('examples', 0) for r in recs)} {el()}", flush=True)

    print(f"== train {el()}", flush=True)
    cats = sorted({mp.category_of(i) for i in ids}) + ["ALL"]
    arms = ("C", "K")
    for arm in arms:
        (work / "models" / arm).mkdir(parents=True, exist_ok=True)
    tasks = [(arm, work / "rec", work / "models" / arm, c) for arm in arms for c in cats]
    with w16._spawn_pool(args.jobs) as ex, open(out / "train.jsonl", "a") as fh:
        for r in ex.map(_train_job, tasks):
            fh.write(json.dumps(r) + "\n")
    tr = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines() if x.strip()]
    print(f"folds {len(tr)}, errors {sum('error' in r for r in tr)} {el()}", flush=True)
    with open(out / "models.sha1", "w") as fh:
        for arm in arms:
            for p in sorted((work / "models" / arm).glob("*.npz")):
                fh.write(f"{_sha(p)}  {arm}/{p.name}\n")
    from gpu_kernels.mesh import learned as _ln

    shapes = {}
    for arm in arms:
        a = work / "models" / arm / "ALL.npz"
        if a.exists():
            m = _ln.TreeModel.from_npz(a)
            shapes[arm] = (int(m.feature.shape[0]), int(m.depth))
            print(f"model {arm} ALL sha1 {_sha(a)} trees {shapes[arm][0]} depth {shapes[arm][1]}", flush=True)
    ca = work / "models" / "C" / "ALL.npz"
    print(f"C ALL == the shipped model (learned_model.NPZ_BASE64, {shipped_sha()[:8]}...): "
          f"{ca.exists() and _sha(ca) == shipped_sha()}", flush=True)

    left = args.judge_end - (time.perf_counter() - t0)
    print(f"== confirm {judge} in batches of {args.batch} ({left:.0f} s before --judge-end) {el()}", flush=True)
    sets = {arm: (work / "models" / arm, "gain") for arm in arms}
    n: dict = {}
    for b in range(0, len(judge), args.batch):
        batch = judge[b:b + args.batch]
        left = args.judge_end - (time.perf_counter() - t0)
        if left < args.draw_min:
            print(f"== judging draws {judge[b:]} not run: {left:.0f} s left {el()}", flush=True)
            break
        tasks = [(args.data, str(work / "stores" / "X" / f"pf3n0s{s}.npz"), i, sets, args.models_auto, args.device,
                  f"s{s}") for s in batch for i in ids]
        tasks.sort(key=lambda t: -cost[t[2]])
        with w16._spawn_pool(args.jobs) as ex, open(out / "rows.jsonl", "a") as fh:
            for r in ex.map(_confirm_job, tasks):
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                if "error" not in r:
                    n[r["draw"]] = n.get(r["draw"], 0) + 1
        print(f"   batch {batch} done; rows without error per draw: {n} {el()}", flush=True)
    print(f"round done {el()}", flush=True)
    return 0


# --------------------------------------------------------------------------- judge
def judge_rows(rows: list, bad: list, base: str = "C", cand: str = "K", min_draws: int = MIN_DRAWS,
               n_meshes: int = 76) -> dict:
    bad_draws = {r.get("draw") for r in bad}
    rows = [r for r in rows if base in r and cand in r]
    draws = sorted({r["draw"] for r in rows})
    complete = [d for d in draws if d not in bad_draws and sum(r["draw"] == d for r in rows) == n_meshes]
    rr = [r for r in rows if r["draw"] in complete]
    per = {}
    for d in complete:
        x = [r for r in rr if r["draw"] == d]
        per[d] = {"over_" + base: sorted(r["mesh"] for r in x if r[base] > OVER),
                  "over_" + cand: sorted(r["mesh"] for r in x if r[cand] > OVER)}
        for a in (base, cand):
            per[d][a] = float(np.mean([r[a] for r in x]))
            per[d][a + "_auto"] = float(np.mean([r[a + "_auto"] for r in x]))
            per[d][a + "_in_range"] = 100.0 * float(np.mean([r[a + "_in_range"] for r in x]))
    mb = float(np.mean([v[base] for v in per.values()])) if per else float("nan")
    mc = float(np.mean([v[cand] for v in per.values()])) if per else float("nan")
    ab = float(np.mean([v[base + "_auto"] for v in per.values()])) if per else float("nan")
    ac = float(np.mean([v[cand + "_auto"] for v in per.values()])) if per else float("nan")
    o_b = sum(len(v["over_" + base]) for v in per.values())
    o_c = sum(len(v["over_" + cand]) for v in per.values())
    auto_same = all(r[base + "_auto"] == r[cand + "_auto"] and r[base + "_auto_k"] == r[cand + "_auto_k"] for r in rr)
    crit = {
        "1_over_030": bool(per) and o_c < o_b,
        "2_mean": bool(per) and mc <= mb + MEAN_MARGIN,
        "2_every_draw": bool(per) and all(v[cand] <= v[base] + DRAW_MARGIN for v in per.values()),
        "3_auto": bool(per) and all(v[cand + "_auto"] <= AUTO_MAX and v[cand + "_in_range"] >= AUTO_IN_RANGE
                                    for v in per.values()) and (auto_same or ac <= ab + AUTO_MEAN_MARGIN),
        "complete": len(complete) >= min_draws,
    }
    cats = sorted({r["category"] for r in rr})
    per_cat = {c: float(np.mean([r[cand] - r[base] for r in rr if r["category"] == c])) for c in cats}
    d = [r[cand] - r[base] for r in rr]
    watch = {}
    for m in (303, 305, 381, 185, 104, 225, 45):
        x = [r for r in rr if r["mesh"] == m]
        if x:
            watch[m] = {base: [round(r[base], 4) for r in x], cand: [round(r[cand], 4) for r in x]}
    return {"base": base, "cand": cand, "draws": draws, "complete": complete, "error_rows": len(bad),
            "mean": {base: mb, cand: mc}, "auto_mean": {base: ab, cand: ac}, "auto_equal_all_rows": auto_same,
            "over_030": {base: o_b, cand: o_c}, "per_draw": per, "per_category": per_cat,
            "better_0.01": sum(x < -0.01 for x in d), "worse_0.01": sum(x > 0.01 for x in d),
            "rms_mesh_draw": float(np.sqrt(np.mean(np.square(d)))) if d else None, "watch": watch,
            "criteria": crit, "pass": all(crit.values())}


def cmd_judge(args) -> int:
    raw = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    rows = [r for r in raw if "error" not in r]
    j = judge_rows(rows, bad, min_draws=args.min_draws, n_meshes=args.n_meshes)
    print(f"rows {len(rows)}, error rows {len(bad)}" + (f" {bad[:2]}" if bad else "") +
          f"; complete draws {j['complete']}")
    for d, v in j["per_draw"].items():
        print(f"  {d}: C {v['C']:.4f} K {v['K']:.4f} ({v['K'] - v['C']:+.4f})  >0.30 C {v['over_C']} K {v['over_K']}"
              f"  auto C {v['C_auto']:.4f} / {v['C_in_range']:.1f} %  K {v['K_auto']:.4f} / {v['K_in_range']:.1f} %")
    if j["per_draw"]:
        print(f"  all: C {j['mean']['C']:.4f} K {j['mean']['K']:.4f} ({j['mean']['K'] - j['mean']['C']:+.4f}); "
              f">0.30 C {j['over_030']['C']} K {j['over_030']['K']}; auto C {j['auto_mean']['C']:.4f} K "
              f"{j['auto_mean']['K']:.4f} (equal on every row: {j['auto_equal_all_rows']}); mesh-draws better / worse "
              f"by > 0.01: {j['better_0.01']} / {j['worse_0.01']}; RMS |K - C| {j['rms_mesh_draw']:.4f}")
        print("  per category K - C: " + ", ".join(f"{c} {x:+.4f}" for c, x in sorted(j["per_category"].items(),
                                                                                      key=lambda t: t[1])))
        for m, v in j["watch"].items():
            print(f"  mesh {m}: C {v['C']}  K {v['K']}")
    print(f"RULE K (1)-(3): {'PASS' if j['pass'] else 'FAIL'} {j['criteria']}", flush=True)
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
    r.add_argument("--train", default="1421,1422")
    r.add_argument("--judge", required=True)
    r.add_argument("--models-auto", type=Path, required=True)
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--device", default=None)
    r.add_argument("--judge-end", type=float, default=1e9, help="no batch of judging draws starts after this")
    r.add_argument("--draw-min", type=float, default=12.0, help="a batch starts only with this many seconds left")
    r.add_argument("--batch", type=int, default=4, help="judging draws per batch")
    r.add_argument("--ids", default="", help="only these meshes (a smoke test; the rule's run uses all 76)")
    j = sub.add_parser("judge")
    j.add_argument("rows", type=Path)
    j.add_argument("--json", default="")
    j.add_argument("--n-meshes", type=int, default=76, help="meshes of a complete draw (76; a smoke test: fewer)")
    j.add_argument("--min-draws", type=int, default=MIN_DRAWS)
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
