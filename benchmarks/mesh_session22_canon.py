"""Issue 22, session 22 (the lead, round canon22): the canonical order of the simplifiers' input
(``simplify.CANONICAL_ORDER``, one working mesh for any listing of a mesh), held out. Control C (as shipped: the mesh
simplified in the order the file lists it; its draws are seeded shuffled listings, store ``pf3n0s<seed>``) against K
(``CANONICAL_ORDER`` on; its draws are salts of the canonical order, store ``pf3n0cs<seed>``: another equally likely
working mesh of the same geometry). Each arm trains EVERY model on its own working meshes: recipe S's integer-k folds
on its records of s1421-1422 (3,500 faces), and session 11's k = "auto" recipe (c2eb5bd's ``record-auto`` + ``train``,
run in a tree of that commit) on its stores of s1107-1109 at 4,000 faces (session 11's count), 19 categories + ALL
each, leave one category out; judged in the real pipeline on new draws. A non-inferiority rule (the benefit, one result
per mesh, holds by construction): benchmarks/results/mesh_canon22_session22.md. K failed (k = "auto"); round canon22b
(``--cand H``) judges the hashed order alone (``CANONICAL_ZORDER`` off) the same way:
benchmarks/results/mesh_canon22b_session22.md.

    python benchmarks/mesh_session22_canon.py auto-folds --old TREE --data psb.npz --work W [--device cuda] [--cand K]
    python benchmarks/mesh_session22_canon.py round --data psb.npz --work W --out OUT --judge 2048,... [--cand K]
    python benchmarks/mesh_session22_canon.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12] [--cand K]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
import mesh_round as mr  # noqa: E402
import mesh_session19_auto as a19  # noqa: E402
import mesh_speed16w as w16  # noqa: E402

CANON = "gpu_kernels.mesh.simplify.CANONICAL_ORDER"
ZORDER = "gpu_kernels.mesh.simplify.CANONICAL_ZORDER"
#: arm -> (switches, store candidate): C the control; K round canon22 (the canonical order as session 21 built it);
#: H round canon22b (the hashed order alone, no Z-order before pymeshlab: benchmarks/results/mesh_canon22b_session22.md)
ARM_STORES = {"C": ({CANON: False, ZORDER: True}, "pf3n0"), "K": ({CANON: True, ZORDER: True}, "pf3n0c"),
              "H": ({CANON: True, ZORDER: False}, "pf3n0h"), "Z": ({CANON: True, ZORDER: True}, "pf3n0c")}
#: the candidate -> its round's name. Round canon22c (Z: K's switch) judges the working meshes alone: both arms take the
#: SAME ready models, C's folds of round canon22 (``--ready``: no training), benchmarks/results/mesh_canon22c_session22.md
ROUND_NAMES = {"K": "canon22", "H": "canon22b", "Z": "canon22c"}
#: session 11's k = "auto" recipe's working faces (its training draws: mesh_session19_auto.TRAIN_STORES)
AUTO_FACES = 4000
MIN_DRAWS = 12


def arms(cand: str = "K", models_auto_root: Path | None = None, ready: Path | None = None) -> list:
    """C and the candidate; with ``models_auto_root``, each reads its own k = "auto" folds (``<root>/<arm>``); with
    ``ready`` (round canon22c), both take the same ready folds: ``<ready>/models/C`` (integer k, ALL included) and
    ``<ready>/models_auto/C`` (k = "auto")."""
    def one(n: str) -> mr.Arm:
        if ready is not None:
            folds, auto = str(ready / "models" / "C"), str(ready / "models_auto" / "C")
        else:
            folds, auto = "", str(models_auto_root / n) if models_auto_root else ""
        return mr.Arm(n, ("y", 21), switches=dict(ARM_STORES[n][0]), store=ARM_STORES[n][1], folds=folds,
                      models_auto=auto)

    return [one(n) for n in ("C", cand)]


#: the rule (benchmarks/results/mesh_canon22_session22.md), K against C over the complete draws, NON-INFERIORITY:
#: (1) protocol mean K <= C + 0.0010; (2) meshes over 0.30 summed K <= C + 2; (3) k = "auto" (each arm under its own
#: held-out folds): >= 80 % in range on every complete draw and mean K <= C + 0.002; (4) report-only (seconds);
#: (5) >= 12 complete draws, 2 x 2 x 76 records and 40 folds without error, C's integer-k ALL = the shipped model, both
#: arms' k = "auto" folds complete (3 x 76 record-auto rows, 20 models each).
#: Round canon22b (H against C) has the same rule.
def judge_round(cand: str = "K") -> mr.MarginRound:
    return mr.MarginRound(ROUND_NAMES[cand], arms(cand), (cand,), mean_margin=-0.0010, need_better=False,
                          over_allow=2, min_draws=MIN_DRAWS, round_checks=("auto_folds_ok",),
                          train_draws=0 if cand == "Z" else 2)


def cmd_auto_folds(a) -> int:
    """Both arms' k = "auto" folds: stores of ``--draws`` (session 11's, 1107-1109) at ``AUTO_FACES`` (the arm's
    candidate, made with today's library), then c2eb5bd's record-auto + train in ``--old``
    (``mesh_session19_auto.cmd_folds``)."""
    ids = [int(x) for x in a.ids.split(",") if x]
    w16.IDS[:] = ids
    work = a.work.resolve()
    res: dict = {}
    for arm in ("C", a.cand):
        cand = ARM_STORES[arm][1]
        draws = [int(x) for x in a.draws.split(",")]
        sha = w16.make_stores(a.data, {arm: AUTO_FACES}, draws, work / "auto_stores", a.jobs, cand=cand)
        f = a19.arm_folds(a, arm, work / "auto_stores" / arm, cand, draws, work, AUTO_FACES)
        res[arm] = {"stores": sha, **f}
    res["ok"] = all(res[arm].get("complete") is True for arm in ("C", a.cand))
    (work / "auto_folds.json").write_text(json.dumps(res, indent=1))
    print(f"AUTO FOLDS: C ALL {res['C'].get('all_sha1', '')[:8]}, {a.cand} ALL "
          f"{res[a.cand].get('all_sha1', '')[:8]}, complete {res['ok']}", flush=True)
    return 0


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _sg
    from gpu_kernels.mesh import simplify as _sp

    if (_ln.GAIN_POWER != 0.5 or _ln.POLICY != "gain" or _ln.AUTO_POLICY != "learned" or _sp.CANONICAL_ORDER
            or _sp.CANONICAL_SALT != 0 or _sp.CANONICAL_ZORDER is not True or _sg.K_STARTS_ONLY is not True or _sg.K_STARTS != (20, 24, 30, 36, 42)
            or _sg.K_SDF_MERGE != 2.0 or _sg.K_FROM_AUTO_STARTS is not True):
        raise SystemExit("the library must be as shipped when these rounds ran (before canon22c turned the canonical "
                         "order on; GPULAB_MESH_CANONICAL_ORDER=0 gives it): GAIN_POWER 0.5, POLICY gain, AUTO_POLICY "
                         "learned, CANONICAL_ORDER off, CANONICAL_SALT 0, K_STARTS_ONLY True, K_STARTS (20, 24, 30, 36, 42), "
                         "K_SDF_MERGE 2.0, K_FROM_AUTO_STARTS True")
    work = a.work.resolve()
    if a.cand == "Z":  # round canon22c: the same ready models in both arms, no training
        if a.ready is None:
            raise SystemExit("--cand Z needs --ready DIR (round canon22's models: models/C, models_auto/C)")
        ready = a.ready.resolve()
        a.train = ""
        res = mr.round_from_args(arms(a.cand, ready=ready), a)
        cats = sorted({mp.category_of(i) for i in mp.mesh_ids(a.data)})
        res["auto_folds_ok"] = all((ready / "models_auto" / "C" / f"{c}.npz").exists() for c in ["ALL", *cats])
        (a.out / "round.json").write_text(json.dumps(res, indent=1))
        return 0
    af = work / "auto_folds.json"
    if not af.exists():
        raise SystemExit(f"{af}: run auto-folds first")
    res = mr.round_from_args(arms(a.cand, work / "models_auto"), a)
    res["auto_folds_ok"] = json.loads(af.read_text()).get("ok") is True
    (a.out / "round.json").write_text(json.dumps(res, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = a19.add_folds_args(sub.add_parser("auto-folds"), stores=False)
    r = mr.add_round_args(sub)
    r.add_argument("--ready", type=Path, default=None, help="round canon22c: round canon22's models (models/C, "
                   "models_auto/C)")
    for p in (f, r, mr.add_judge_args(sub, MIN_DRAWS)):
        p.add_argument("--cand", default="K", choices=sorted(ROUND_NAMES), help="the candidate arm (its round)")
    a = ap.parse_args(argv)
    if a.cmd == "judge":
        return judge_round(a.cand).cmd_judge(a)
    return {"auto-folds": cmd_auto_folds, "round": cmd_round}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
