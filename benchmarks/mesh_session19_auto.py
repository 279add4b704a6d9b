"""Issue 22, session 19 (helper mesh-auto19): k = "auto" measured HELD OUT again. The shipped k = "auto" model
(``learned_model.NPZ_AUTO_BASE64``, SHA-1 618bddc1...) is session 11's round-2 ALL model (benchmarks/results/
mesh_q_session11.md, call 3): ``mesh_session11_learned.py record-auto`` + ``train`` of commit c2eb5bd on the stores
pf3s1107-1109 (4,000 faces, the library's fast + pymeshlab path of session 11, the mesh in the seed's random order).
Its 19 leave-one-category-out fold models were lost with a machine, so since session 18 every round judged k = "auto"
under the shipped (ALL) model in every fold: not held out. This script rebuilds the folds with that recipe (``folds``:
c2eb5bd's own record-auto + train, run in a tree of that commit; the retrained ALL must equal the shipped model) and
measures k = "auto" in the real pipeline of today's library under each mesh's held-out category fold (arm ``H``) and,
from the same prepared mesh, under the shipped model (arm ``S``: the figure the rounds since session 18 reported), so
the optimism is measured on the same rows. The measurement plan: benchmarks/results/mesh_auto19_session19.md.

    python benchmarks/mesh_session19_auto.py folds --old TREE --stores DIR --data psb.npz --work W --models M \\
        [--draws 1107,1108,1109] [--device cuda] [--jobs 16]
    python benchmarks/mesh_session19_auto.py round --data psb.npz --work W --out OUT --models-auto M \\
        --judge 1948,...,1971 [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session19_auto.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_round as mr  # noqa: E402
import mesh_speed16w as w16  # noqa: E402

#: the shipped k = "auto" model's SHA-1 (learned_model.NPZ_AUTO_BASE64)
SHIPPED_AUTO = "618bddc105fba4fab58d9d2cec95c05c7a1a1b94"
#: session 11's training stores (file SHA-1s printed by its call 3, benchmarks/results/mesh_q_session11_call3)
TRAIN_STORES = {1107: "47f04bfc0121cbcedc92cd2a373affb8b8e98475", 1108: "9e028a96466c4a6b9033f25e077e7e374f73aebe",
                1109: "17ad99942cfeea5e0709e87aa48a8f8faef91643"}
#: the commit whose record-auto / train made the shipped model (session 11's call 3 ran its working tree)
RECIPE_COMMIT = "c2eb5bd"
#: the issue's criterion, per complete draw: k = "auto" mean <= AUTO_MAX and k in the humans' range on >= IN_RANGE %
AUTO_MAX = 0.13
IN_RANGE = 80.0
MIN_DRAWS = 12
ARMS = ("H", "S")  # H: the held-out category fold; S: the shipped (ALL) model


def shipped_auto_sha() -> str:
    import base64
    import hashlib

    from gpu_kernels.mesh import learned_model

    return hashlib.sha1(base64.b64decode("".join(learned_model.NPZ_AUTO_BASE64))).hexdigest()


# --------------------------------------------------------------------------- folds (the recipe, in the old tree)
def cmd_folds(a) -> int:
    """c2eb5bd's ``record-auto`` per training draw and ``train`` (19 folds + ALL), run in ``--old`` (a tree of that
    commit) with its own library; the stores' and the ALL model's SHA-1s checked against session 11's (the stores'
    only printed with ``--no-store-check``: stores made elsewhere, session 22)."""
    t0 = time.perf_counter()
    old, work, models = a.old.resolve(), a.work.resolve(), a.models.resolve()
    rec = work / "rec_auto"
    ok = True
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(old), *filter(None, [os.environ.get("PYTHONPATH")])]))
    for s in [int(x) for x in a.draws.split(",")]:
        p = a.stores / f"pf3s{s}.npz"
        h = mr.sha(p)
        same = h == TRAIN_STORES.get(s)
        ok &= same or bool(getattr(a, "no_store_check", False))
        print(f"store pf3s{s} sha1 {h} {'== session 11' if same else 'DIFFERENT from session 11'}", flush=True)
        cmd = [sys.executable, "benchmarks/mesh_session11_learned.py", "record-auto", "--store", str(p.resolve()),
               "--draw", f"s{s}", "--out", str(rec), "--data", str(a.data.resolve()), "--jobs", str(a.jobs)]
        if a.ids:
            cmd += ["--ids", a.ids]
        if a.device:
            cmd += ["--device", a.device]
        r = subprocess.run(cmd, cwd=old, env=env, capture_output=True, text=True)
        lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
        errs = [x for x in lines if '"error"' in x]
        n = sum('"examples"' in x for x in lines)
        ok &= r.returncode == 0 and not errs and n == (len(a.ids.split(",")) if a.ids else a.n_meshes)
        with open(work / "record_auto.jsonl", "a") as fh:
            fh.write("\n".join(lines) + "\n")
        print(f"record-auto s{s}: rc {r.returncode}, rows {n}, errors {len(errs)} {errs[:2]} "
              f"[{time.perf_counter() - t0:.0f} s]" + (f"\n{r.stderr[-2000:]}" if r.returncode else ""), flush=True)
    cmd = [sys.executable, "benchmarks/mesh_session11_learned.py", "train", "--rec", str(rec), "--models", str(models),
           "--jobs", str(a.jobs)]
    r = subprocess.run(cmd, cwd=old, env=env, capture_output=True, text=True)
    lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
    (work / "train_auto.jsonl").write_text("\n".join(lines) + "\n")
    folds = sorted(models.glob("*.npz"))
    with open(work / "models_auto.sha1", "w") as fh:
        for p in folds:
            fh.write(f"{mr.sha(p)}  {p.name}\n")
    n_ex = [json.loads(x)["n_train"] for x in lines if '"fold": "ALL"' in x]
    all_sha = mr.sha(models / "ALL.npz") if (models / "ALL.npz").exists() else ""
    same = all_sha == SHIPPED_AUTO == shipped_auto_sha()
    print(f"train: rc {r.returncode}, folds {len(folds)}, ALL examples {n_ex}, ALL sha1 {all_sha} "
          f"{'== the shipped k = auto model' if same else '!= the shipped k = auto model ' + SHIPPED_AUTO}"
          f" [{time.perf_counter() - t0:.0f} s]" + (f"\n{r.stderr[-2000:]}" if r.returncode else ""), flush=True)
    ok &= r.returncode == 0 and len(folds) == (len({mp.category_of(int(i)) for i in a.ids.split(",")}) + 1
                                               if a.ids else 20)
    (work / "folds.json").write_text(json.dumps({"all_sha1": all_sha, "all_equal_shipped": same, "folds": len(folds),
                                                 "complete": bool(ok)}))
    print(f"RECIPE CHECK (ALL retrained == shipped 618bddc1): {'PASS' if same else 'FAIL'}; complete {bool(ok)}")
    return 0


def arm_folds(a, arm: str, store_dir: Path, cand: str, draws: list, work: Path, faces: int) -> dict:
    """One arm's folds from stores made elsewhere (``store_dir/<cand>s<seed>.npz``, ``faces`` faces): links named as
    :func:`cmd_folds` reads them (``work/auto_stores_<arm>/pf3s<seed>.npz``), then :func:`cmd_folds` into
    ``work/auto_folds_<arm>`` and ``work/models_auto/<arm>`` (``a``: :func:`add_folds_args`' arguments); returns its
    ``folds.json``. Used by session 22's ``mesh_session22_canon.py`` and session 23's ``mesh_session23_auto.py``."""
    link = work / f"auto_stores_{arm}"
    link.mkdir(parents=True, exist_ok=True)
    for s in draws:
        p = link / f"pf3s{s}.npz"
        p.unlink(missing_ok=True)
        p.symlink_to(store_dir / f"{cand}s{s}.npz")
    fw = work / f"auto_folds_{arm}"
    fw.mkdir(parents=True, exist_ok=True)
    text = ",".join(str(s) for s in draws)
    ns = argparse.Namespace(old=a.old, stores=link, data=a.data, work=fw, models=work / "models_auto" / arm,
                            draws=text, device=a.device, jobs=a.jobs, n_meshes=a.n_meshes, ids=a.ids,
                            no_store_check=True)
    print(f"== k = 'auto' folds of arm {arm} (stores {cand}s{text} at {faces} faces)", flush=True)
    cmd_folds(ns)
    return json.loads((fw / "folds.json").read_text())


# --------------------------------------------------------------------------- confirm (today's library)
def confirm_mesh(data: Path, store: str, mesh_id: int, models: dict, device, draw: str, order: list,
                 faces: int = mr.FACES) -> dict:
    """One judging mesh-draw: ``prepare_mesh`` once, then k = "auto" (``segment_prepared``, the full-resolution
    re-cut) under each arm's k = "auto" model of the mesh's category, in ``order``."""
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _segment
    from gpu_kernels.mesh.metrics import rand_index_error

    w16._set_faces(faces)
    v, f, humans, hk, cat, t0, prep = mp.judging_draw(data, store, mesh_id, device)
    out = {"mesh": mesh_id, "category": cat, "draw": draw, "hk": hk, "order": order}
    for name in order:
        _ln.MODEL_AUTO = _ln.TreeModel.from_npz(Path(models[name]) / f"{cat}.npz")
        seg = _segment.segment_prepared(prep, k="auto", device=device)
        out[name + "_auto"] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
        out[name + "_auto_k"] = int(seg.k)
        out[name + "_in_range"] = bool(min(hk) <= int(seg.k) <= max(hk))
    _ln.MODEL_AUTO = None
    out["seconds"] = time.perf_counter() - t0
    return out


def _confirm_job(a):
    try:
        return confirm_mesh(*a)
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"mesh": a[2], "draw": a[5], "error": repr(e)}


def cmd_round(a) -> int:
    from gpu_kernels.mesh import defaults as _df
    from gpu_kernels.mesh import learned as _ln

    if _df.DEFAULT_AUTO_MERGE != "learned" or _ln.AUTO_POLICY != "learned" or _ln.AUTO_STOP_P != 0.5:
        raise SystemExit("the library's k = auto must be as shipped (DEFAULT_AUTO_MERGE / AUTO_POLICY learned, "
                         "AUTO_STOP_P 0.5)")
    t0 = time.perf_counter()
    w16.IDS[:] = [int(x) for x in a.ids.split(",") if x]
    ids = w16.IDS or mp.mesh_ids(a.data)
    cats = sorted({mp.category_of(i) for i in ids})
    judge = [int(x) for x in a.judge.split(",") if x]
    a.out.mkdir(parents=True, exist_ok=True)
    shipped = mr.shipped_auto_dir(a.work / "models_auto_shipped", cats)
    models = {"H": a.models_auto, "S": shipped}
    res: dict = {"models_auto_all": mr.sha(a.models_auto / "ALL.npz"), "shipped": mr.sha(shipped / "ALL.npz"),
                 "H_folds": {c: mr.sha(a.models_auto / f"{c}.npz") for c in cats}}
    print(f"== H folds ALL {res['models_auto_all'][:8]}, S {res['shipped'][:8]} (every category); stores "
          f"{mr.FACES} faces, judge {judge} [{time.perf_counter() - t0:.0f} s]", flush=True)
    st = w16.make_stores(a.data, {"X": mr.FACES}, judge, a.work / "stores", a.jobs)
    (a.out / "stores.sha1.json").write_text(json.dumps(st, indent=1))
    confirm_draws(a, ids, judge, models, ARMS, a.work / "stores" / "X", "pf3n0", res, t0, a.draw_min)
    (a.out / "round.json").write_text(json.dumps(res, indent=1))
    print(f"round done [{res['seconds']:.0f} s]", flush=True)
    return 0


def confirm_draws(a, ids: list, judge: list, models: dict, arms: tuple, stores: Path, cand: str, res: dict, t0: float,
                  draw_min: float) -> None:
    """The judging draws in batches of ``a.batch`` (the largest meshes first) while ``a.judge_end`` seconds after
    ``t0`` are not reached (``draw_min`` at least left): every mesh-draw's k = "auto" under each arm's model of
    ``models`` (:func:`confirm_mesh`, the arms' order alternated), from the store ``stores/<cand>s<seed>.npz``; rows
    appended to ``a.out/rows.jsonl``; ``res`` gets ``draws_not_run``, ``rows_per_draw`` and ``seconds``. Used by
    :func:`cmd_round` and session 23's ``mesh_session23_auto.py``."""
    cost = {i: mp._cost(a.data, i) for i in ids}
    n: dict = {}
    res["draws_not_run"] = []
    for b in range(0, len(judge), a.batch):
        bt = judge[b:b + a.batch]
        left = a.judge_end - (time.perf_counter() - t0)
        if left < draw_min:
            print(f"== judging draws {judge[b:]} not run: {left:.0f} s left [{time.perf_counter() - t0:.0f} s]",
                  flush=True)
            res["draws_not_run"] = judge[b:]
            break
        print(f"== confirm {bt} ({left:.0f} s before the judging end) [{time.perf_counter() - t0:.0f} s]", flush=True)
        tasks = [(a.data, str(stores / f"{cand}s{s}.npz"), i, models, a.device, f"s{s}",
                  list(arms) if (i + s) % 2 == 0 else list(arms[::-1])) for s in bt for i in ids]
        tasks.sort(key=lambda t: -cost[t[2]])
        with w16._spawn_pool(a.jobs) as ex, open(a.out / "rows.jsonl", "a") as fh:
            for r in ex.map(_confirm_job, tasks):
                fh.write(json.dumps(r) + "\n")
                fh.flush()
                if "error" not in r:
                    n[r["draw"]] = n.get(r["draw"], 0) + 1
        print(f"   batch {bt} done; rows without error per draw: {n} [{time.perf_counter() - t0:.0f} s]", flush=True)
    res["rows_per_draw"] = n
    res["seconds"] = time.perf_counter() - t0


# --------------------------------------------------------------------------- judge
def judge_rows(rows: list, bad: list, n_meshes: int = 76, min_draws: int = MIN_DRAWS, folds_ok=None) -> dict:
    """The plan's report over the complete draws (``n_meshes`` rows, no error row): per draw each arm's k = "auto"
    mean and % in range; the issue's criterion on H (every complete draw <= AUTO_MAX and >= IN_RANGE %); the optimism
    H - S per draw; per category; the worst meshes. ``folds_ok``: the recipe check and the folds' completeness."""
    bad_draws = {r.get("draw") for r in bad}
    draws = sorted({r["draw"] for r in rows} | {d for d in bad_draws if d})
    complete = [d for d in draws if d not in bad_draws and sum(r["draw"] == d for r in rows) == n_meshes]
    rr = [r for r in rows if r["draw"] in complete]
    per = {}
    for d in complete:
        x = [r for r in rr if r["draw"] == d]
        per[d] = {arm: {"mean": float(np.mean([r[arm + "_auto"] for r in x])),
                        "in_range": 100.0 * sum(r[arm + "_in_range"] for r in x) / len(x),
                        "over_030": sum(r[arm + "_auto"] > mr.OVER for r in x),
                        "mean_k": float(np.mean([r[arm + "_auto_k"] for r in x]))} for arm in ARMS}
        per[d]["H_minus_S"] = per[d]["H"]["mean"] - per[d]["S"]["mean"]
    diffs = [v["H_minus_S"] for v in per.values()]
    out = {"draws": draws, "complete": complete, "per_draw": per, "folds_ok": folds_ok, "error_rows": len(bad)}
    if not per:
        out.update(criterion_met=False, verdict="not met (no complete draw)")
        return out
    out["mean"] = {arm: float(np.mean([v[arm]["mean"] for v in per.values()])) for arm in ARMS}
    out["in_range"] = {arm: float(np.mean([v[arm]["in_range"] for v in per.values()])) for arm in ARMS}
    out["range"] = {arm: [min(v[arm]["mean"] for v in per.values()), max(v[arm]["mean"] for v in per.values())]
                    for arm in ARMS}
    out["in_range_min"] = {arm: min(v[arm]["in_range"] for v in per.values()) for arm in ARMS}
    out["over_030"] = {arm: sum(v[arm]["over_030"] for v in per.values()) for arm in ARMS}
    out["optimism"] = {"mean": float(np.mean(diffs)),
                       "se": float(np.std(diffs, ddof=1) / np.sqrt(len(diffs))) if len(diffs) > 1 else float("nan"),
                       "draws_H_worse": sum(x > 0 for x in diffs), "draws_H_better": sum(x < 0 for x in diffs),
                       "rows_k_differ": sum(r["H_auto_k"] != r["S_auto_k"] for r in rr),
                       "rows_differ": sum(r["H_auto"] != r["S_auto"] for r in rr), "rows": len(rr)}
    out["per_category"] = {c: {arm: float(np.mean([r[arm + "_auto"] for r in rr if r["category"] == c]))
                               for arm in ARMS} for c in sorted({r["category"] for r in rr})}
    out["per_category_in_range"] = {c: 100.0 * float(np.mean([r["H_in_range"] for r in rr if r["category"] == c]))
                                    for c in out["per_category"]}
    meshes = sorted({r["mesh"] for r in rr})
    pm = {m: {arm: float(np.mean([r[arm + "_auto"] for r in rr if r["mesh"] == m])) for arm in ARMS} for m in meshes}
    for m in meshes:
        x = [r for r in rr if r["mesh"] == m]
        pm[m].update(category=x[0]["category"], H_over=sum(r["H_auto"] > mr.OVER for r in x), n=len(x),
                     H_in_range=sum(r["H_in_range"] for r in x), hk=x[0]["hk"],
                     H_k=sorted({r["H_auto_k"] for r in x}), S_k=sorted({r["S_auto_k"] for r in x}))
    out["worst"] = [{"mesh": m, **pm[m]} for m in sorted(meshes, key=lambda m: -pm[m]["H"])[:10]]
    out["most_optimistic"] = [{"mesh": m, **pm[m]} for m in sorted(meshes, key=lambda m: pm[m]["S"] - pm[m]["H"])[:8]]
    enough = len(complete) >= min_draws
    every = all(v["H"]["mean"] <= AUTO_MAX and v["H"]["in_range"] >= IN_RANGE for v in per.values())
    out["criterion"] = {"every_draw_H_le_0.13": all(v["H"]["mean"] <= AUTO_MAX for v in per.values()),
                        "every_draw_H_in_range_ge_80": all(v["H"]["in_range"] >= IN_RANGE for v in per.values()),
                        "complete_draws_ge_min": enough, "folds_ok": folds_ok}
    out["criterion_met"] = bool(every and enough)
    if not enough:
        out["verdict"] = f"no verdict (fewer than {min_draws} complete draws)"
    else:
        out["verdict"] = ("met" if every else "not met") + \
            (" (caveat: the folds' ALL is not the shipped model, see the recipe check)" if folds_ok is False else "")
    return out


def print_judgement(j: dict) -> None:
    print(f"complete draws {len(j['complete'])}: {j['complete']}; error rows {j['error_rows']}; folds {j['folds_ok']}")
    for d, v in j["per_draw"].items():
        print(f"  {d}: H {v['H']['mean']:.4f} / {v['H']['in_range']:.1f} % in range / {v['H']['over_030']} over 0.30"
              f" | S {v['S']['mean']:.4f} / {v['S']['in_range']:.1f} % / {v['S']['over_030']} | H - S "
              f"{v['H_minus_S']:+.4f}")
    if "mean" not in j:
        print(f"VERDICT (issue 22's auto-k criterion, held out): {j['verdict']}")
        return
    o = j["optimism"]
    print(f"mean H {j['mean']['H']:.4f} (draws {j['range']['H'][0]:.4f}-{j['range']['H'][1]:.4f}, in range "
          f"{j['in_range']['H']:.1f} %, lowest {j['in_range_min']['H']:.1f} %), S {j['mean']['S']:.4f} (draws "
          f"{j['range']['S'][0]:.4f}-{j['range']['S'][1]:.4f}, in range {j['in_range']['S']:.1f} %, lowest "
          f"{j['in_range_min']['S']:.1f} %); over 0.30 H {j['over_030']['H']} S {j['over_030']['S']}")
    print(f"optimism (H - S): {o['mean']:+.4f} +- {o['se']:.4f} SE, H worse on {o['draws_H_worse']} draws, better on "
          f"{o['draws_H_better']}; rows with a different k {o['rows_k_differ']} / figure {o['rows_differ']} of "
          f"{o['rows']}")
    print("per category H / S (H in range %): " + ", ".join(
        f"{c} {v['H']:.3f}/{v['S']:.3f} ({j['per_category_in_range'][c]:.0f})" for c, v in
        sorted(j["per_category"].items(), key=lambda kv: kv[1]["S"] - kv[1]["H"])))
    print("worst meshes (H mean): " + "; ".join(
        f"{w['mesh']} {w['category']} H {w['H']:.3f} S {w['S']:.3f} over {w['H_over']}/{w['n']} k H {w['H_k']} "
        f"S {w['S_k']} humans {sorted(set(w['hk']))}" for w in j["worst"]))
    print("most optimistic meshes (H - S): " + "; ".join(
        f"{w['mesh']} {w['category']} {w['H'] - w['S']:+.3f}" for w in j["most_optimistic"]))
    print(f"criterion {j['criterion']}")
    print(f"VERDICT (issue 22's auto-k criterion, held out): {j['verdict']}", flush=True)


def cmd_judge(a) -> int:
    rows, bad = mr.read_rows(a.rows)
    fj = Path(a.folds) if a.folds else None
    folds_ok = None
    if fj and fj.exists():
        f = json.loads(fj.read_text())
        folds_ok = bool(f.get("complete")) and bool(f.get("all_equal_shipped"))
        print(f"folds: {f}")
    j = judge_rows(rows, bad, a.n_meshes, a.min_draws, folds_ok)
    print_judgement(j)
    if a.json:
        Path(a.json).write_text(json.dumps(j, indent=1, default=str))
    return 0


def add_folds_args(f, *, stores: bool = True) -> argparse.ArgumentParser:
    """The arguments of :func:`cmd_folds` (``stores``: also ``--stores`` and ``--models``, which session 22's
    ``mesh_session22_canon.py auto-folds`` derives from its work folder, per arm)."""
    f.add_argument("--old", type=Path, required=True, help="a tree of commit c2eb5bd (git archive)")
    if stores:
        f.add_argument("--stores", type=Path, required=True)
    f.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    f.add_argument("--work", type=Path, required=True)
    if stores:
        f.add_argument("--models", type=Path, required=True)
    f.add_argument("--draws", default=",".join(str(s) for s in TRAIN_STORES))
    f.add_argument("--device", default=None)
    f.add_argument("--jobs", type=int, default=os.cpu_count())
    f.add_argument("--n-meshes", type=int, default=76)
    f.add_argument("--ids", default="", help="only these meshes (a smoke test)")
    return f


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = add_folds_args(sub.add_parser("folds"))
    f.add_argument("--no-store-check", action="store_true", help="stores made elsewhere: SHA-1s printed, not checked")
    r = sub.add_parser("round")
    r.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r.add_argument("--work", type=Path, required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--models-auto", type=Path, required=True)
    r.add_argument("--judge", required=True)
    r.add_argument("--jobs", type=int, default=os.cpu_count())
    r.add_argument("--device", default=None)
    r.add_argument("--judge-end", type=float, default=1e9)
    r.add_argument("--draw-min", type=float, default=6.0)
    r.add_argument("--batch", type=int, default=4)
    r.add_argument("--ids", default="")
    j = mr.add_judge_args(sub, MIN_DRAWS)
    j.add_argument("--folds", default="", help="the folds step's folds.json (the recipe check)")
    a = ap.parse_args(argv)
    return {"folds": cmd_folds, "round": cmd_round, "judge": cmd_judge}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
