"""Issue 22, session 15 (helper mesh-q6): candidate P, round 2's recipe S trained on examples pooled from more
working-mesh draws (a model that depends less on its training draws). The pre-registered rule is in
benchmarks/results/mesh_q6_session15.md.

    python benchmarks/mesh_session15_q6.py pack --stores a.npz,b.npz --out stores.tar.xz
    python benchmarks/mesh_session15_q6.py train --rec W --models M --draws s1501,s1502,s1503,s1504 --cap 400000
    python benchmarks/mesh_session15_q6.py judge rows.jsonl --base S --cand P [--report T] [--json out.json]

``record`` is ``mesh_session15_q.py record`` (session 12's recorder: the hand-made merges replayed, each round's 12
weakest candidates recorded with the 21 columns of ``learned.FEATURES`` and ``y``, the mean over the humans).
``train``: recipe S exactly (``mesh_session15_q.train_fold``'s: the target ``y``, the first 21 columns, 64 trees of
depth <= 4, rate 0.1, seed 0; per held-out category the examples of the other 18, ``ALL`` every category) on the
examples of the draws named by ``--draws`` (in ``_examples``' order: the draws sorted, the meshes sorted), with the
seeded subsample (``numpy.random.default_rng(0).choice``, sorted) of ``--cap`` examples: S is ``--draws s1503,s1504
--cap 200000`` (equal to ``mesh_session15_q.py train --recipe S`` on those two draws), P ``--draws
s1501,s1502,s1503,s1504 --cap 400000`` (the examples of 4 draws at S's sampling rate).
``pack``: working-mesh stores re-saved uncompressed (every array checked equal) in one ``.tar.xz`` (to fit a carry).
``judge``: the rule's criteria (1)-(3) on ``mesh_session13_q.py confirm`` rows, per complete draw (76 rows, no
error row), at least 3 complete draws.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_session12_q as ml12  # noqa: E402
import mesh_session15_q as mq15  # noqa: E402

N_FEATURES = 21  # recipe S's columns (``mesh_session15_q.RECIPES["S"]``)
N_MESHES = 76


# --------------------------------------------------------------------------- pack
def cmd_pack(args) -> int:
    with tarfile.open(args.out, "w:xz") as tf:
        for s in args.stores.split(","):
            p = Path(s)
            z = np.load(p)
            arrs = {k: z[k] for k in z.files}
            buf = io.BytesIO()
            np.savez(buf, **arrs)
            back = np.load(io.BytesIO(buf.getvalue()))
            assert sorted(back.files) == sorted(arrs) and all(np.array_equal(back[k], arrs[k]) and
                                                              back[k].dtype == arrs[k].dtype for k in arrs)
            info = tarfile.TarInfo(f"stores/{p.name}")
            info.size = buf.getbuffer().nbytes
            buf.seek(0)
            tf.addfile(info, buf)
            print(f"{p.name}: {len(arrs)} arrays, uncompressed {info.size} bytes")
    return 0


# --------------------------------------------------------------------------- train
def train_fold(rec_dir: Path, models: Path, cat: str, draws: tuple, cap: int) -> dict:
    rows = [r for r in mq15._examples(rec_dir, "y") if r[0] in draws]
    found = sorted({r[0] for r in rows})
    if found != sorted(draws):
        raise ValueError(f"draws {sorted(draws)} asked, {found} recorded")
    sel = [r for r in rows if r[2] != cat]
    X = np.concatenate([r[3] for r in sel]).astype(np.float64)
    t = np.concatenate([r[4] for r in sel]).astype(np.float64)
    if X.shape[1] < N_FEATURES:
        raise ValueError(f"the records have {X.shape[1]} feature columns, recipe S needs {N_FEATURES}")
    n_all = int(t.size)
    if t.size > cap:
        keep = np.sort(np.random.default_rng(0).choice(t.size, cap, replace=False))
        X, t = X[keep], t[keep]
    X = X[:, :N_FEATURES]
    t0 = time.perf_counter()
    m = ml12.fit(X, t)
    m.save(models / f"{cat}.npz")
    out = {"fold": cat, "draws": sorted(draws), "cap": cap, "n_pool": n_all, "n": int(t.size),
           "target_mean": float(t.mean()), "seconds": time.perf_counter() - t0}
    held = [r for r in rows if r[2] == cat]
    if held:
        Xh = np.concatenate([r[3] for r in held]).astype(np.float64)[:, :N_FEATURES]
        th = np.concatenate([r[4] for r in held]).astype(np.float64)
        out["held_mse"] = float(np.mean((m.predict(Xh) - th) ** 2))
        out["held_var"] = float(np.var(th))
    return out


def _train_job(a):
    try:
        return train_fold(*a)
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"fold": a[2], "error": repr(e)}


def cmd_train(args) -> int:
    args.models.mkdir(parents=True, exist_ok=True)
    draws = tuple(sorted(args.draws.split(",")))
    cats = sorted({r[2] for r in mq15._examples(args.rec, "y") if r[0] in draws})
    with ProcessPoolExecutor(args.jobs) as ex:
        for r in ex.map(_train_job, [(args.rec, args.models, c, draws, args.cap) for c in cats + ["ALL"]]):
            print(json.dumps(r), flush=True)
    return 0


# --------------------------------------------------------------------------- judge
def judge(rows: list, base: str, cand: str, min_draws: int = 3) -> dict:
    """The rule (results/mesh_q6_session15.md): over the complete judging draws (76 rows, no error row; at least
    ``min_draws``): (1) meshes over 0.30 at the protocol's k summed over the draws fewer under the candidate, (2) the
    candidate's protocol mean <= the control's + 0.001 on every draw, (3) the candidate's k = "auto" mean <= 0.13
    with >= 80 % of the meshes' k in the humans' range on every draw."""
    draws = sorted({r["draw"] for r in rows})
    complete = [d for d in draws if sum(r["draw"] == d for r in rows) == N_MESHES
                and not any("error" in r for r in rows if r["draw"] == d)]
    per = {}
    for d in complete:
        rr = [r for r in rows if r["draw"] == d]
        v = {"n": len(rr)}
        for s in (base, cand):
            v[s] = float(np.mean([r[s] for r in rr]))
            v["over_" + s] = sorted(r["mesh"] for r in rr if r[s] > 0.30)
            v["auto_" + s] = float(np.mean([r[s + "_auto"] for r in rr]))
            v["in_range_" + s] = 100.0 * float(np.mean([r[s + "_in_range"] for r in rr]))
        per[d] = v
    o0 = sum(len(v["over_" + base]) for v in per.values())
    o1 = sum(len(v["over_" + cand]) for v in per.values())
    ok = {"enough_complete_draws": len(complete) >= min_draws,
          "1_fewer_over_030": o1 < o0,
          "2_every_draw_within_0.001": bool(per) and all(v[cand] <= v[base] + 0.001 for v in per.values()),
          "3_auto_every_draw": bool(per) and all(v["auto_" + cand] <= 0.13 and v["in_range_" + cand] >= 80.0
                                                 for v in per.values())}
    good = [r for r in rows if r["draw"] in complete]
    cats = sorted({r["category"] for r in good})
    per_cat = {c: float(np.mean([r[cand] - r[base] for r in good if r["category"] == c])) for c in cats}
    diff = sorted(((r[cand] - r[base], r["draw"], r["mesh"], round(r[base], 3), round(r[cand], 3)) for r in good),
                  key=lambda t: t[0])
    return {"base": base, "cand": cand, "draws": draws, "complete": complete, "per_draw": per,
            "over_030": [o0, o1], "base_mean": float(np.mean([v[base] for v in per.values()])) if per else None,
            "cand_mean": float(np.mean([v[cand] for v in per.values()])) if per else None,
            "per_category": per_cat, "categories_better": sum(x < -1e-12 for x in per_cat.values()),
            "categories_worse": sum(x > 1e-12 for x in per_cat.values()),
            "mesh_draws_better_0.01": sum(t[0] < -0.01 for t in diff),
            "mesh_draws_worse_0.01": sum(t[0] > 0.01 for t in diff),
            "best": [list(t) for t in diff[:6]], "worst": [list(t) for t in diff[-6:]],
            "criteria": ok, "pass": all(ok.values())}


def cmd_judge(args) -> int:
    rows = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    out = {}
    for cand in [args.cand] + [c for c in args.report.split(",") if c]:
        if not rows or not any(cand in r for r in rows):
            continue
        j = judge(rows, args.base, cand)
        if cand != args.cand:
            j["report_only"] = True
        out[cand] = j
        print(f"{cand} vs {args.base}{' (reported only)' if cand != args.cand else ''}: protocol "
              f"{j['base_mean']} -> {j['cand_mean']}, over 0.30 {j['over_030'][0]} -> {j['over_030'][1]}, complete "
              f"draws {j['complete']}: {'PASS' if j['pass'] else 'FAIL'} {j['criteria']}")
        for d, v in j["per_draw"].items():
            print(f"   {d}: {args.base} {v[args.base]:.4f} {cand} {v[cand]:.4f} ({v[cand] - v[args.base]:+.4f})  over "
                  f"0.30 {v['over_' + args.base]} -> {v['over_' + cand]}  auto {v['auto_' + cand]:.4f} / "
                  f"{v['in_range_' + cand]:.1f} %")
        print("   per category: " + ", ".join(f"{c} {d:+.3f}" for c, d in sorted(j["per_category"].items(),
                                                                                  key=lambda t: t[1])))
        print(f"   mesh-draws better / worse by > 0.01: {j['mesh_draws_better_0.01']} / {j['mesh_draws_worse_0.01']}; "
              f"best {j['best'][:3]}; worst {j['worst'][-3:]}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--stores", required=True)
    p.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("train")
    t.add_argument("--rec", type=Path, required=True)
    t.add_argument("--models", type=Path, required=True)
    t.add_argument("--draws", required=True)
    t.add_argument("--cap", type=int, required=True)
    t.add_argument("--jobs", type=int, default=os.cpu_count())
    j = sub.add_parser("judge")
    j.add_argument("rows")
    j.add_argument("--base", default="S")
    j.add_argument("--cand", default="P")
    j.add_argument("--report", default="")
    j.add_argument("--json")
    args = ap.parse_args(argv)
    return {"pack": cmd_pack, "train": cmd_train, "judge": cmd_judge}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
