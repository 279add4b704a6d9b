"""Issue 22, session 17 (helper mesh-auto8): the k = "auto" model (``learned.MODEL_AUTO``, ``DEFAULT_AUTO_MERGE =
"learned"``) retrained on the shipped 3,500-face working mesh (candidate A35) against the same recipe retrained the
same way on 4,000-face working meshes of the SAME training draws (control A40), leave one category out, judged in the
real pipeline at the shipped ``WORKING_FACES`` 3,500 in BOTH arms on new judging draws. The pre-registered rule is in
benchmarks/results/mesh_auto8_session17.md.

    python benchmarks/mesh_session17_auto.py round --data psb.npz --work W --out OUT --train 1720,1721,1722,1723 \\
        --judge 1724,...,1739 --models-k MK --models-s11 MA [--jobs 16] [--device cuda] [--judge-end SECONDS]
    python benchmarks/mesh_session17_auto.py judge OUT/rows.jsonl [--json j]

``round`` runs, each phase in its own pool of spawned processes (a forked child cannot use a CUDA context):

1. **stores** (``mesh_speed16w.make_stores``: candidate ``pf3n0s<seed>``, the library's fast + pymeshlab path,
   preservenormal off, the mesh in the seed's random order): the training draws at 4,000 (A40) and 3,500 (A35) faces,
   the judging draws at 3,500 only (both arms are judged on the shipped working mesh);
2. **record** (training draws, both arms): session 11's ``record_auto`` (``mesh_session11_learned.py``: k = "auto"'s
   settle watched; the three starts' rows before their merges replayed with the hand-made strength down to 2 parts
   per component, every round's 12 weakest candidates recorded with their features and ``y``, the plain graph),
   with ``segment.WORKING_FACES`` set to the arm's count in the worker;
3. **train** (both arms): session 11's k = "auto" recipe: the first 20 columns of ``learned.FEATURES`` (the columns
   the session-11 model was trained on; the 21st came in session 15), scikit-learn's ``HistGradientBoostingRegressor``
   (64 trees, depth <= 4, rate 0.1, no early stopping, seed 0), target ``y``, the other 18 categories' examples of all
   training draws pooled, a seeded subsample of 200,000 where there are more (``TRAIN_CAP``, seed 0, as session 11's
   ``_train_job``); ``ALL``: every category;
4. **confirm** (judging draws, one row per mesh-draw, ``segment.WORKING_FACES`` = 3,500): ``prepare_mesh`` once, then
   per arm (A40 and A35, the order alternating by mesh-draw) ``learned.MODEL_AUTO`` = the arm's fold of the mesh's
   category and ``segment_prepared`` at every human k (the protocol; the integer-k model is session 16's W fold of the
   mesh's category, policy "gain", the same in both arms) and at k = "auto"; then k = "auto" under session 11's fold
   (``A11``, the shipped model's recipe at 4,000 of s1107-1109: reported, never judged). Draws are queued in order
   (largest meshes first within a draw); no queued row starts after ``--judge-end`` seconds (rows not run are missing,
   never re-run; a draw with a missing row is incomplete).

``judge``: the rule's criteria (1)-(4) and completeness.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402

#: the rule's figures (benchmarks/results/mesh_auto8_session17.md)
DRAW_MARGIN = 0.003      # (1) on every draw A35 <= A40 + this (and the mean over the draws A35 <= A40)
IN_RANGE_MIN = 80.0      # (2) A35's k in the humans' range on >= this % of the meshes, on every draw ...
IN_RANGE_SLACK = 1       # ... and summed over the draws A35 >= A40 - this many mesh-draws
OVER = 0.30              # (3) meshes over this under k = "auto", summed over the draws: A35 <= A40
MIN_DRAWS = 6
N_FEATURES = 20          # session 11's k = "auto" model's columns
TRAIN_CAP = 200_000
ARMS = {"A40": 4000, "A35": 3500}
JUDGE_FACES = 3500

#: ``--ids`` (a smoke test on a few meshes); empty: every PSB mesh
IDS: list = []


def _spawn_pool(jobs: int):
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


def _set_faces(faces: int) -> None:
    from gpu_kernels.mesh import defaults as _defaults
    from gpu_kernels.mesh import segment as _segment

    _segment.WORKING_FACES = int(faces)
    _defaults.WORKING_FACES = int(faces)


# --------------------------------------------------------------------------- record / train / confirm
def _record_job(a):
    arm, faces, data, store, mesh_id, out, device = a
    try:
        _set_faces(faces)
        import mesh_session11_learned as ml11

        r = ml11.record_auto(data, store, mesh_id, out, device)
        r.update(arm=arm, faces=faces, draw=out.name)
        return r
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"arm": arm, "mesh": mesh_id, "store": str(store), "error": repr(e)}


def train_fold(rec_dir: Path, models: Path, cat: str) -> dict:
    """Session 11's k = "auto" recipe (``mesh_session11_learned._train_job``) on the first :data:`N_FEATURES`
    columns: the other categories' examples (``ALL``: every one) of every recorded draw, a seeded subsample of
    :data:`TRAIN_CAP` where there are more."""
    import mesh_session11_learned as ml11

    rows = ml11._examples(Path(rec_dir))
    sel = [r for r in rows if r[2] != cat]
    X = np.concatenate([r[3] for r in sel]).astype(np.float64)[:, :N_FEATURES]
    y = np.concatenate([r[4] for r in sel]).astype(np.float64)
    n_all = int(y.size)
    if y.size > TRAIN_CAP:
        keep = np.sort(np.random.default_rng(0).choice(y.size, TRAIN_CAP, replace=False))
        X, y = X[keep], y[keep]
    t0 = time.perf_counter()
    m = ml11._fit(X, y)
    assert int(m.feature.max()) < N_FEATURES
    Path(models).mkdir(parents=True, exist_ok=True)
    m.save(Path(models) / f"{cat}.npz")
    held = [r for r in rows if r[2] == cat]
    out = {"fold": cat, "n_examples": n_all, "n_train": int(y.size), "seconds": time.perf_counter() - t0}
    if held:
        Xh = np.concatenate([r[3] for r in held]).astype(np.float64)[:, :N_FEATURES]
        yh = np.concatenate([r[4] for r in held]).astype(np.float64)
        out["held_mse"] = float(np.mean((m.predict(Xh) - yh) ** 2))
        out["held_var"] = float(np.var(yh))
    return out


def _train_job(a):
    arm, rec, models, cat = a
    try:
        r = train_fold(rec, models, cat)
        r["arm"] = arm
        return r
    except Exception as e:  # noqa: BLE001
        return {"arm": arm, "fold": cat, "error": repr(e)}


def confirm_mesh(data: Path, store: str, mesh_id: int, models_k: Path, models: dict, device, draw: str,
                 order: list) -> dict:
    """One judging mesh-draw at :data:`JUDGE_FACES`: the protocol and k = "auto" per arm of ``order`` (the arm's
    k = "auto" fold), then k = "auto" under the reported arms (``models`` beyond ``order``)."""
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _segment
    from gpu_kernels.mesh.metrics import rand_index_error

    _set_faces(JUDGE_FACES)
    mp._cv_simplifier()
    mp._cv_ready["stored"] = store
    _segment.EARLY_SETTLE = False
    v, f = mp.load_mesh(data, mesh_id)
    humans = mp.load_human(data, mesh_id)
    hk = [int(np.unique(h).size) for h in humans]
    cat = mp.category_of(mesh_id)
    t0 = time.perf_counter()
    prep = _segment.prepare_mesh(v, f, device=device)
    out = {"mesh": mesh_id, "category": cat, "draw": draw, "hk": hk, "order": order,
           "working_faces": int(_segment.WORKING_FACES)}
    _ln.MODEL = _ln.TreeModel.from_npz(models_k / f"{cat}.npz")
    _ln.POLICY = "gain"

    def ri(labels):
        return float(np.mean([rand_index_error(labels, h) for h in humans]))

    for name in order + [a for a in models if a not in order]:
        _ln.MODEL_AUTO = _ln.TreeModel.from_npz(models[name] / f"{cat}.npz")
        if name in order:
            per_k = {k: ri(_segment.segment_prepared(prep, k=k, device=device).labels) for k in sorted(set(hk))}
            out[name] = float(np.mean([per_k[k] for k in hk]))
            out[name + "_per_k"] = {str(k): x for k, x in per_k.items()}
        seg = _segment.segment_prepared(prep, k="auto", device=device)
        out[name + "_auto"] = ri(seg.labels)
        out[name + "_auto_k"] = int(seg.k)
        out[name + "_in_range"] = bool(min(hk) <= int(seg.k) <= max(hk))
    out["seconds"] = time.perf_counter() - t0
    return out


def _confirm_job(a):
    try:
        return confirm_mesh(*a)
    except Exception as e:  # noqa: BLE001
        return {"mesh": a[2], "draw": a[6], "error": repr(e)}


def _sha_models(work: Path, arms) -> dict:
    return {f"{arm}/{p.name}": hashlib.sha1(p.read_bytes()).hexdigest()
            for arm in arms for p in sorted((work / "models" / arm).glob("*.npz"))}


def cmd_round(args) -> int:
    from mesh_speed16w import make_stores

    t0 = time.perf_counter()
    IDS[:] = [int(x) for x in args.ids.split(",") if x]
    if IDS:
        import mesh_speed16w as w16

        w16.IDS[:] = IDS
    train = [int(s) for s in args.train.split(",") if s]
    judge = [int(s) for s in args.judge.split(",") if s]
    work, out = args.work, args.out
    out.mkdir(parents=True, exist_ok=True)

    def el():
        return f"[{time.perf_counter() - t0:.0f} s]"

    ids = IDS or mp.mesh_ids(args.data)
    cost = {i: mp._cost(args.data, i) for i in ids}
    print(f"== stores: train {train} at {ARMS}, judge {judge} at {JUDGE_FACES} {el()}", flush=True)
    sha = make_stores(args.data, ARMS, train, work / "stores", args.jobs) if train else {}
    sha |= make_stores(args.data, {"J": JUDGE_FACES}, judge, work / "stores", args.jobs) if judge else {}
    (out / "stores.sha1.json").write_text(json.dumps(sha, indent=1))
    print(f"== record {el()}", flush=True)
    tasks = []
    for arm, faces in ARMS.items():
        for s in train:
            d = work / "rec" / arm / f"s{s}"
            d.mkdir(parents=True, exist_ok=True)
            tasks += [(arm, faces, args.data, str(work / "stores" / arm / f"pf3n0s{s}.npz"), i, d, args.device)
                      for i in ids]
    tasks.sort(key=lambda t: -cost[t[4]])
    with _spawn_pool(args.jobs) as ex, open(out / "record.jsonl", "a") as fh:
        for r in ex.map(_record_job, tasks):
            fh.write(json.dumps(r) + "\n")
    recs = [json.loads(x) for x in (out / "record.jsonl").read_text().splitlines() if x.strip()]
    n_ex = {arm: sum(r.get("examples", 0) for r in recs if r.get("arm") == arm) for arm in ARMS}
    print(f"records {len(recs)}, errors {sum('error' in r for r in recs)}, examples {n_ex} {el()}", flush=True)
    print(f"== train {el()}", flush=True)
    cats = sorted({mp.category_of(i) for i in ids}) + ["ALL"]
    tasks = [(arm, work / "rec" / arm, work / "models" / arm, c) for arm in ARMS for c in cats]
    with _spawn_pool(args.jobs) as ex, open(out / "train.jsonl", "a") as fh:
        for r in ex.map(_train_job, tasks):
            fh.write(json.dumps(r) + "\n")
    tr = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines() if x.strip()]
    print(f"folds {len(tr)}, errors {sum('error' in r for r in tr)} {el()}", flush=True)
    msha = _sha_models(work, ARMS)
    (out / "models.sha1").write_text("".join(f"{v}  {k}\n" for k, v in msha.items()))
    for arm in ARMS:
        print(f"model {arm} ALL sha1 {msha.get(f'{arm}/ALL.npz')}", flush=True)
    if not judge:
        return 0
    models = {arm: work / "models" / arm for arm in ARMS} | {"A11": args.models_s11}
    tasks = []
    for di, s in enumerate(judge):
        for j, i in enumerate(sorted(ids, key=lambda i: -cost[i])):
            order = list(ARMS) if (di + j) % 2 == 0 else list(ARMS)[::-1]
            tasks.append((args.data, str(work / "stores" / "J" / f"pf3n0s{s}.npz"), i, args.models_k, models,
                          args.device, f"s{s}", order))
    print(f"== confirm {judge}: {len(tasks)} rows queued, none starts after {args.judge_end:.0f} s {el()}", flush=True)
    n: dict = {}
    ex = _spawn_pool(args.jobs)
    pending = {ex.submit(_confirm_job, t) for t in tasks}
    cancelled = 0
    with open(out / "rows.jsonl", "a") as fh:
        while pending:
            done, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for fu in done:
                if fu.cancelled():
                    continue
                r = fu.result()
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                if "error" not in r:
                    n[r["draw"]] = n.get(r["draw"], 0) + 1
            if time.perf_counter() - t0 > args.judge_end and not cancelled:
                cancelled = sum(fu.cancel() for fu in pending)
                pending = {fu for fu in pending if not fu.cancelled()}
                print(f"   --judge-end reached: {cancelled} queued rows not started {el()}", flush=True)
    ex.shutdown()
    print(f"   rows without error per draw: {dict(sorted(n.items()))} {el()}", flush=True)
    print(f"round done {el()}", flush=True)
    return 0


# --------------------------------------------------------------------------- judge
def judge_rows(rows: list, bad: list, base: str = "A40", cand: str = "A35", report: str = "A11",
               min_draws: int = MIN_DRAWS, n_meshes: int = 76) -> dict:
    bad_draws = {r.get("draw") for r in bad}
    draws = sorted({r["draw"] for r in rows})
    complete = [d for d in draws if d not in bad_draws and sum(r["draw"] == d for r in rows) == n_meshes]
    rr = [r for r in rows if r["draw"] in complete]
    per: dict = {}
    for d in complete:
        x = [r for r in rr if r["draw"] == d]
        v: dict = {}
        for a in (base, cand, report):
            if a + "_auto" not in x[0]:
                continue
            v[a + "_auto"] = float(np.mean([r[a + "_auto"] for r in x]))
            v[a + "_in_range_n"] = int(sum(bool(r[a + "_in_range"]) for r in x))
            v[a + "_in_range"] = 100.0 * v[a + "_in_range_n"] / len(x)
            v[a + "_over"] = sorted(r["mesh"] for r in x if r[a + "_auto"] > OVER)
            v[a + "_mean_k"] = float(np.mean([r[a + "_auto_k"] for r in x]))
        for a in (base, cand):
            v[a + "_protocol"] = float(np.mean([r[a] for r in x]))
            v[a + "_protocol_over"] = sorted(r["mesh"] for r in x if r[a] > OVER)
        v["protocol_equal_rows"] = int(sum(r[base + "_per_k"] == r[cand + "_per_k"] for r in x))
        per[d] = v

    def tot(key):
        return sum(len(v[key]) if isinstance(v[key], list) else v[key] for v in per.values())

    mb = float(np.mean([v[base + "_auto"] for v in per.values()])) if per else float("nan")
    mc = float(np.mean([v[cand + "_auto"] for v in per.values()])) if per else float("nan")
    crit = {
        "1_mean": bool(per) and mc <= mb,
        "1_every_draw": bool(per) and all(v[cand + "_auto"] <= v[base + "_auto"] + DRAW_MARGIN for v in per.values()),
        "2_in_range_every_draw": bool(per) and all(v[cand + "_in_range"] >= IN_RANGE_MIN for v in per.values()),
        "2_in_range_sum": bool(per) and tot(cand + "_in_range_n") >= tot(base + "_in_range_n") - IN_RANGE_SLACK,
        "3_over_030": bool(per) and tot(cand + "_over") <= tot(base + "_over"),
        "4_protocol_unchanged": bool(per) and all(v["protocol_equal_rows"] == n_meshes for v in per.values()),
        "complete": len(complete) >= min_draws,
    }
    cats = sorted({r["category"] for r in rr})
    per_cat = {c: float(np.mean([r[cand + "_auto"] - r[base + "_auto"] for r in rr if r["category"] == c]))
               for c in cats}
    d = [r[cand + "_auto"] - r[base + "_auto"] for r in rr]
    out = {"base": base, "cand": cand, "report": report, "draws": draws, "complete": complete,
           "error_rows": len(bad), "auto_mean": {base: mb, cand: mc},
           "in_range_sum": {base: tot(base + "_in_range_n") if per else 0, cand: tot(cand + "_in_range_n") if per else 0},
           "over_sum": {base: tot(base + "_over") if per else 0, cand: tot(cand + "_over") if per else 0},
           "per_draw": per, "per_category": per_cat,
           "rms_mesh_draw": float(np.sqrt(np.mean(np.square(d)))) if d else None,
           "k_changed": int(sum(r[cand + "_auto_k"] != r[base + "_auto_k"] for r in rr)),
           "criteria": crit, "pass": all(crit.values())}
    if per and report + "_auto" in rr[0]:
        out["auto_mean"][report] = float(np.mean([v[report + "_auto"] for v in per.values()]))
        out["in_range_sum"][report] = tot(report + "_in_range_n")
        out["over_sum"][report] = tot(report + "_over")
    if per:
        out["protocol_mean"] = float(np.mean([v[base + "_protocol"] for v in per.values()]))
        out["protocol_over_sum"] = tot(base + "_protocol_over")
    return out


def cmd_judge(args) -> int:
    raw = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    rows = [r for r in raw if "error" not in r]
    j = judge_rows(rows, bad, n_meshes=args.n_meshes)
    print(f"rows {len(rows)}, error rows {len(bad)}" + (f" {bad[:2]}" if bad else "") +
          f"; draws {len(j['draws'])}, complete {j['complete']}")
    for d, v in j["per_draw"].items():
        s = "  ".join(f"{a} {v[a + '_auto']:.4f} / {v[a + '_in_range']:.1f} % / >0.30 {v[a + '_over']}"
                      for a in ("A40", "A35", "A11") if a + "_auto" in v)
        print(f"  {d}: k=auto {s}  (A35-A40 {v['A35_auto'] - v['A40_auto']:+.4f}); protocol {v['A40_protocol']:.4f}"
              f" (>0.30 {v['A40_protocol_over']}), equal in both arms on {v['protocol_equal_rows']} meshes")
    if j["per_draw"]:
        print("  all: k=auto " + ", ".join(f"{a} {x:.4f}" for a, x in j["auto_mean"].items()) +
              f"; in range (mesh-draws) {j['in_range_sum']}; >0.30 {j['over_sum']}; protocol {j['protocol_mean']:.4f}"
              f" (>0.30 {j['protocol_over_sum']}); k changed A40 -> A35 on {j['k_changed']} mesh-draws; per mesh-draw "
              f"RMS |A35 - A40| {j['rms_mesh_draw']:.4f}")
        print("  per category A35 - A40: " + ", ".join(f"{c} {x:+.4f}" for c, x in
                                                       sorted(j["per_category"].items(), key=lambda t: t[1])))
    print(f"RULE A35: {'PASS' if j['pass'] else 'FAIL'} {j['criteria']}", flush=True)
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
    r.add_argument("--train", default="")
    r.add_argument("--judge", default="")
    r.add_argument("--models-k", type=Path, required=True, help="the integer k's fold models (session 16's W)")
    r.add_argument("--models-s11", type=Path, required=True, help="session 11's k = auto fold models (reported)")
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--device", default=None)
    r.add_argument("--judge-end", type=float, default=1e9, help="no queued judging row starts after this many seconds")
    r.add_argument("--ids", default="", help="only these meshes (a smoke test; the rule's run uses all 76)")
    j = sub.add_parser("judge")
    j.add_argument("rows", type=Path)
    j.add_argument("--json", default="")
    j.add_argument("--n-meshes", type=int, default=76, help="meshes of a complete draw (76; a smoke test: fewer)")
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
