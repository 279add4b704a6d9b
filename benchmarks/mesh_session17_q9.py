"""Issue 22, session 17 (helper mesh-q9): candidate L, the shipped integer-k recipe S plus ONE component-level column,
``largest_share`` (the largest cluster's share of the pair's component's area at this round: learned.FEATURES' 22nd
column, NumPy features and the compiled loop), against the control C (recipe S exactly as shipped, its 21 columns),
both trained on the same records (working-mesh draws s1421-1422 at ``WORKING_FACES`` 3,500), leave one category out,
judged in the real pipeline on new judging draws. The pre-registered rule is in benchmarks/results/mesh_q9_session17.md.

    python benchmarks/mesh_session17_q9.py round --data psb.npz --work W --out OUT --judge 1712,...,1719 \\
        --models-auto MA --c-folds CF [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4]
    python benchmarks/mesh_session17_q9.py judge OUT/rows.jsonl [--json j]
    python benchmarks/mesh_session17_q9.py timing 101.off --old OLD_NUMBA_MERGE.py --model-l W/models/L/ALL.npz \\
        [--rounds 41] [--rounds-k 15] [--k 6] [--json t.json]

``round`` (mesh-q8's ``mesh_session17_q`` round, its phases and pools):

1. **stores**: ``mesh_speed16w.make_stores`` at 3,500 faces for the training and the judging draws;
2. **record** (training draws, once; both arms train on it): ``mesh_session15_q.record_mesh`` (22 columns now);
3. **train**: ``L`` = ``mesh_session15_q.train_fold(..., "L")``, recipe S on the first 22 columns (64 trees, depth
   <= 4, rate 0.1, seed 0, the seeded 200,000-example subsample: the same rows as C), per held-out category and
   ``ALL``; ``C`` = recipe S (21 columns): its 19 category folds are mesh-q8's (``--c-folds``: trained this session on
   the records of the same draws by the same code, ``.carry-mq17/call1/models.tar``), its ``ALL`` retrained here and
   checked equal to mesh-q8's and to the shipped model (then the first 21 columns of these records are theirs);
4. **confirm** (judging draws): ``mesh_session13_q.confirm_mesh``, both arms in one job per mesh-draw (each mesh under
   its category's fold model; policy "gain"; session 11's k = "auto" fold models for both arms), batches of
   ``--batch`` draws, a batch only if ``--judge-end`` is not reached.

``judge``: the rule's (1)-(3) (``mesh_session17_q.judge_rows`` with cand ``L``). ``timing``: the rule's (4), 17k end to
end from the file with the defaults (k = "auto", pymeshlab), ONE process, arms ``old`` (the loop as shipped before this
candidate: ``--old``, the 21-column greedy_merge, and the shipped integer-k model) and ``new`` (the 22-column loop and
L's ``ALL``), a warm-up each, then ``--rounds`` rounds, the order reversed every other round; then (reported, not a
criterion) the same at the integer ``--k`` for ``--rounds-k`` rounds.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_session17_q as q17  # noqa: E402
import mesh_speed16w as w16  # noqa: E402

FACES = q17.FACES
#: (4) 17k end to end (k = "auto", the defaults), paired median new - old <= this (ms)
TIME_MARGIN_MS = 3.0
COL = "largest_share"


def _train_job(a):
    arm, rec, models, cat = a
    try:
        import mesh_session15_q as q15

        q15.RECIPES["L"] = ("y", 22)
        r = q15.train_fold(rec, models, cat, "L" if arm == "L" else "S")
        r["arm"] = arm
        if arm == "L":
            from gpu_kernels.mesh import learned as _ln

            m = _ln.TreeModel.from_npz(models / f"{cat}.npz")
            used = m.feature[m.feature >= 0]
            r["splits_on_col21"] = int((used == 21).sum())
            r["splits"] = int(used.size)
        return r
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"arm": arm, "fold": cat, "error": repr(e)}


def cmd_round(args) -> int:
    from gpu_kernels.mesh import learned as _ln

    if len(_ln.FEATURES) != 22 or _ln.FEATURES[21] != COL:
        raise SystemExit(f"the library's FEATURES must end with {COL!r} as its 22nd column")
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
    cats = sorted({mp.category_of(i) for i in ids})
    for arm in ("C", "L"):
        (work / "models" / arm).mkdir(parents=True, exist_ok=True)
    tasks = [("C", work / "rec", work / "models" / "C", "ALL")] + \
        [("L", work / "rec", work / "models" / "L", c) for c in ["ALL"] + cats]
    with w16._spawn_pool(args.jobs) as ex, open(out / "train.jsonl", "a") as fh:
        for r in ex.map(_train_job, tasks):
            fh.write(json.dumps(r) + "\n")
    tr = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines() if x.strip()]
    print(f"folds {len(tr)}, errors {sum('error' in r for r in tr)}; L's splits on {COL}: "
          f"{[(r['fold'], r.get('splits_on_col21')) for r in tr if r.get('arm') == 'L']} {el()}", flush=True)
    ca = work / "models" / "C" / "ALL.npz"
    ca_sha = q17._sha(ca) if ca.exists() else None
    cf_all = args.c_folds / "ALL.npz"
    print(f"C ALL retrained {ca_sha}; == the shipped model ({q17.shipped_sha()[:8]}...): {ca_sha == q17.shipped_sha()}; "
          f"== mesh-q8's C ALL: {cf_all.exists() and ca_sha == q17._sha(cf_all)}", flush=True)
    for c in cats:  # C's category folds: mesh-q8's (the same recipe, code and draws, this session)
        shutil.copyfile(args.c_folds / f"{c}.npz", work / "models" / "C" / f"{c}.npz")
    with open(out / "models.sha1", "w") as fh:
        for arm in ("C", "L"):
            for p in sorted((work / "models" / arm).glob("*.npz")):
                fh.write(f"{q17._sha(p)}  {arm}/{p.name}\n")
    la = work / "models" / "L" / "ALL.npz"
    if la.exists():
        m = _ln.TreeModel.from_npz(la)
        print(f"model L ALL sha1 {q17._sha(la)} trees {m.feature.shape[0]} depth {m.depth} max feature "
              f"{int(m.feature.max())}", flush=True)

    sets = {arm: (work / "models" / arm, "gain") for arm in ("C", "L")}
    n: dict = {}
    for b in range(0, len(judge), args.batch):
        batch = judge[b:b + args.batch]
        left = args.judge_end - (time.perf_counter() - t0)
        if left < args.draw_min:
            print(f"== judging draws {judge[b:]} not run: {left:.0f} s left {el()}", flush=True)
            break
        print(f"== confirm {batch} ({left:.0f} s before --judge-end) {el()}", flush=True)
        tasks = [(args.data, str(work / "stores" / "X" / f"pf3n0s{s}.npz"), i, sets, args.models_auto, args.device,
                  f"s{s}") for s in batch for i in ids]
        tasks.sort(key=lambda t: -cost[t[2]])
        with w16._spawn_pool(args.jobs) as ex, open(out / "rows.jsonl", "a") as fh:
            for r in ex.map(q17._confirm_job, tasks):
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                if "error" not in r:
                    n[r["draw"]] = n.get(r["draw"], 0) + 1
        print(f"   batch {batch} done; rows without error per draw: {n} {el()}", flush=True)
    print(f"round done {el()}", flush=True)
    return 0


def cmd_judge(args) -> int:
    raw = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    bad = [r for r in raw if "error" in r]
    rows = [r for r in raw if "error" not in r]
    j = q17.judge_rows(rows, bad, base="C", cand="L", min_draws=args.min_draws, n_meshes=args.n_meshes)
    print(f"rows {len(rows)}, error rows {len(bad)}" + (f" {bad[:2]}" if bad else "") +
          f"; complete draws {j['complete']}")
    for d, v in j["per_draw"].items():
        print(f"  {d}: C {v['C']:.4f} L {v['L']:.4f} ({v['L'] - v['C']:+.4f})  >0.30 C {v['over_C']} L {v['over_L']}"
              f"  auto C {v['C_auto']:.4f} / {v['C_in_range']:.1f} %  L {v['L_auto']:.4f} / {v['L_in_range']:.1f} %")
    if j["per_draw"]:
        print(f"  all: C {j['mean']['C']:.4f} L {j['mean']['L']:.4f} ({j['mean']['L'] - j['mean']['C']:+.4f}); "
              f">0.30 C {j['over_030']['C']} L {j['over_030']['L']}; auto C {j['auto_mean']['C']:.4f} L "
              f"{j['auto_mean']['L']:.4f} (equal on every row: {j['auto_equal_all_rows']}); mesh-draws better / worse "
              f"by > 0.01: {j['better_0.01']} / {j['worse_0.01']}; RMS |L - C| {j['rms_mesh_draw']:.4f}")
        print("  per category L - C: " + ", ".join(f"{c} {x:+.4f}" for c, x in sorted(j["per_category"].items(),
                                                                                      key=lambda t: t[1])))
        for m, v in j["watch"].items():
            print(f"  mesh {m}: C {v['C']}  L {v['L']}")
    print(f"RULE L (1)-(3): {'PASS' if j['pass'] else 'FAIL'} {j['criteria']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(j, indent=1))
    return 0


# --------------------------------------------------------------------------- timing (4)
def load_old_loop(path: Path):
    """The 21-column compiled loop as shipped before this candidate (its file, with its column count fixed at 21:
    the library's FEATURES has 22 now), as a module of its own."""
    src = Path(path).read_text()
    if "NF = len(FEATURES)" not in src or "if NF != 21" not in src:
        raise SystemExit(f"{path} is not the 21-column _numba_merge.py")
    d = Path("/tmp/q9_oldloop")
    d.mkdir(exist_ok=True)
    f = d / "q9_old_numba_merge.py"
    new = src.replace("NF = len(FEATURES)", "NF = 21")
    if not f.exists() or f.read_text() != new:
        f.write_text(new)
    spec = importlib.util.spec_from_file_location("q9_old_numba_merge", f)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["q9_old_numba_merge"] = mod
    spec.loader.exec_module(mod)
    return mod


def cmd_timing(args) -> int:
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh import _numba_merge as nm
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment

    old = load_old_loop(args.old)
    model_l = _ln.TreeModel.from_npz(args.model_l)
    arms = {"old": (old.greedy_merge, None), "new": (nm.greedy_merge, model_l)}
    new_fn = nm.greedy_merge

    def once(arm, k):
        fn, model = arms[arm]
        nm.greedy_merge, _ln.MODEL = fn, model
        try:
            t0 = time.perf_counter()
            v, f = read_mesh(args.mesh)
            seg = segment.segment_mesh(v, f, k=k, device=args.device)
            dt = 1e3 * (time.perf_counter() - t0)
        finally:
            nm.greedy_merge, _ln.MODEL = new_fn, None
        return dt, hashlib.sha1(seg.labels.tobytes()).hexdigest()[:12], int(seg.k)

    report = {}
    for label, k, rounds in (("auto", "auto", args.rounds), (f"k{args.k}", args.k, args.rounds_k)):
        if rounds <= 0:
            continue
        runs = {a: [] for a in arms}
        shas = {a: set() for a in arms}
        ks = {a: set() for a in arms}
        for a in arms:  # a warm-up each (the compile of each loop)
            for _ in range(args.warm):
                _, s, kk = once(a, k)
                shas[a].add(s)
                ks[a].add(kk)
        names = list(arms)
        for r in range(rounds):
            for a in (names if r % 2 == 0 else names[::-1]):
                dt, s, kk = once(a, k)
                runs[a].append(dt)
                shas[a].add(s)
                ks[a].add(kk)
        pair = [b - a for a, b in zip(runs["old"], runs["new"], strict=True)]
        rep = {"rounds": rounds, "median_old": statistics.median(runs["old"]),
               "median_new": statistics.median(runs["new"]), "paired_median": statistics.median(pair),
               "new_faster": sum(p < 0 for p in pair), "runs": runs, "shas": {a: sorted(s) for a, s in shas.items()},
               "k": {a: sorted(x) for a, x in ks.items()}}
        report[label] = rep
        print(f"timing {Path(args.mesh).name} {label}: {rounds} rounds, median old {rep['median_old']:.1f} ms, new "
              f"{rep['median_new']:.1f} ms, paired median new - old {rep['paired_median']:+.2f} ms (new faster in "
              f"{rep['new_faster']}/{rounds}); labels old {rep['shas']['old']} new {rep['shas']['new']}; k "
              f"{rep['k']}", flush=True)
    if "auto" in report:
        ok = report["auto"]["paired_median"] <= TIME_MARGIN_MS and report["auto"]["rounds"] == args.rounds
        report["criterion_4"] = ok
        print(f"RULE L (4): {'PASS' if ok else 'FAIL'} (17k end to end, k = auto, paired median "
              f"{report['auto']['paired_median']:+.2f} ms <= +{TIME_MARGIN_MS} ms)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
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
    r.add_argument("--c-folds", type=Path, required=True, help="mesh-q8's C fold models (<category>.npz, ALL.npz)")
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--device", default=None)
    r.add_argument("--judge-end", type=float, default=1e9, help="no batch of judging draws starts after this")
    r.add_argument("--draw-min", type=float, default=12.0, help="a batch starts only with this many seconds left")
    r.add_argument("--batch", type=int, default=4, help="judging draws per batch")
    r.add_argument("--ids", default="", help="only these meshes (a smoke test; the rule's run uses all 76)")
    j = sub.add_parser("judge")
    j.add_argument("rows", type=Path)
    j.add_argument("--json", default="")
    j.add_argument("--n-meshes", type=int, default=76)
    j.add_argument("--min-draws", type=int, default=q17.MIN_DRAWS)
    t = sub.add_parser("timing")
    t.add_argument("mesh")
    t.add_argument("--old", type=Path, required=True)
    t.add_argument("--model-l", type=Path, default=None)
    t.add_argument("--device", default="cuda")
    t.add_argument("--rounds", type=int, default=41)
    t.add_argument("--rounds-k", type=int, default=15)
    t.add_argument("--k", type=int, default=6)
    t.add_argument("--warm", type=int, default=2)
    t.add_argument("--json", default="")
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge, "timing": cmd_timing}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
