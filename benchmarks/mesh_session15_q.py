"""Issue 22, session 15 (helper mesh-q4): training targets per human. The learned merge's trees regress ``y``, the
share of a candidate pair's face pairs the humans keep apart, MEAN over the humans; candidate ``M`` regresses the
MEDIAN human's share instead (the same examples, features, subsample and trees). The pre-registered rule is in
benchmarks/results/mesh_q_session15.md.

    python benchmarks/mesh_session15_q.py record --store S.npz --draw s1501 --out W [--device cuda] [--jobs 16]
    python benchmarks/mesh_session15_q.py train --rec W --models M --recipe C|M [--jobs 16]

``record`` is session 12's (``mesh_session12_q.py record``: the hand-made merges replayed, each round's 12 weakest
candidates by the hand-made strength recorded with their features and ``y``), and in the same pass each recorded
pair's share per human (``learned.pair_targets``' terms, one per human segmentation, before the mean): the example
file ``<mesh>_ex.npz`` also holds ``y_med`` (the median over the mesh's humans; ``numpy.median``, so the mean of the
two middle humans for an even count) and ``n_humans``. ``y`` is bit for bit what the library's recorder gives (it is
its own return value; checked: the mean of the per-human shares equals it within 1e-5).
``train``: per held-out category (and ``ALL``) today's recipe (64 trees, depth <= 4, rate 0.1, seed 0, the same seeded
200,000 examples of the other 18 categories, the 20 columns of ``learned.FEATURES``) on ``y`` (``C``, the control:
today's model retrained) or on ``y_med`` (``M``).
Round 2 (the rule's section 4): recipe ``S``, today's target and recipe on 21 columns: the 21st,
``thickness_small_minus_large`` (the smaller cluster's mean log thickness minus the larger's, signed: the union's
thickness against its parts; in ``learned.FEATURES``, the NumPy features and the compiled loop), against ``C`` on its
first 20.
Round 3 (section 9): recipe ``U`` on 22 columns (the 22nd, ``log_union_spread_over_parts``: the union's
area-weighted positional variance over its parts' mean one) against ``S`` (today's recipe since round 2) on its first 21.
Round 3's U failed the lead's second confirmation (s1511-1514, `results/mesh_q5_session15.md`): the library no longer
computes the 22nd column (its code is in git at c0cdd5c / b172404); U's paths here need that library.
``evaluate`` / ``confirm`` are ``mesh_session13_q.py``'s (sets ``C=dC:gain,M=dM:gain``); ``judge`` is
``mesh_session14_q.py``'s (``--base C --cand M --n-draws 2``: fewer meshes over 0.30 summed over the draws, the
protocol mean within 0.001 of the control's on every draw, complete; in a confirmation k = "auto" <= 0.13 / >= 80 %).
"""

from __future__ import annotations

import argparse
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
import mesh_session11_learned as ml11  # noqa: E402
import mesh_session12_q as ml12  # noqa: E402

from gpu_kernels.mesh import learned as _ln  # noqa: E402

#: recipe -> (the target column of the example files, the number of leading feature columns the trees see):
#: C today's recipe before this session, M (round 1) the median human's target, S (round 2, shipped) with the 21st
#: column ``thickness_small_minus_large``, U (round 3) with the 22nd ``log_union_spread_over_parts``
RECIPES = {"C": ("y", 20), "M": ("y_med", 20), "S": ("y", 21), "U": ("y", 22)}
_PER_HUMAN: list = []
_ORIG_PAIR_TARGETS = _ln.pair_targets


def _pair_targets_per_human(comp, lo, hi):
    """``learned.pair_targets`` (its own return value, unchanged), keeping each human's share beside it."""
    y, ok = _ORIG_PAIR_TARGETS(comp, lo, hi)
    d = np.zeros((len(comp), lo.size))
    for j, C in enumerate(comp):
        na, nb = C[lo].sum(axis=1), C[hi].sum(axis=1)
        d[j] = 1.0 - (C[lo] * C[hi]).sum(axis=1) / np.maximum(na * nb, 1e-300)
    _PER_HUMAN.append(d[:, ok].T)
    return y, ok


def record_mesh(data: Path, store: str, mesh_id: int, out: Path, device=None) -> dict:
    from gpu_kernels.mesh import defaults as _defaults

    _defaults.DEFAULT_K_MERGE = "hand"  # (as session 12's record: the hand-made integer-k merges)
    _PER_HUMAN.clear()
    _ln.pair_targets = _pair_targets_per_human
    try:
        res = ml11.record_mesh(data, store, mesh_id, out, device)
    finally:
        _ln.pair_targets = _ORIG_PAIR_TARGETS
    p = out / f"{mesh_id}_ex.npz"
    z = dict(np.load(p))
    D = np.concatenate(_PER_HUMAN) if _PER_HUMAN else np.zeros((0, 1))
    if D.shape[0] != z["y"].size:
        raise RuntimeError(f"mesh {mesh_id}: {D.shape[0]} per-human rows for {z['y'].size} examples")
    if z["y"].size and not np.allclose(D.mean(axis=1), z["y"], atol=1e-5):
        raise RuntimeError(f"mesh {mesh_id}: the per-human shares' mean differs from y")
    z["y_med"] = np.median(D, axis=1).astype(np.float32) if D.shape[0] else np.zeros(0, np.float32)
    z["n_humans"] = np.int64(D.shape[1])
    np.savez(p, **z)
    res["y_mean"] = float(z["y"].mean()) if z["y"].size else None
    res["y_med_mean"] = float(z["y_med"].mean()) if z["y"].size else None
    return res


def _record_job(a):
    try:
        return record_mesh(*a)
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"mesh": a[2], "error": repr(e)}


def cmd_record(args) -> int:
    out = args.out / args.draw
    out.mkdir(parents=True, exist_ok=True)
    ids = [int(x) for x in args.ids.split(",")] if args.ids else mp.mesh_ids(args.data)
    jobs = [(args.data, str(args.store), i, out, args.device) for i in ids]
    # spawn: a forked child cannot use a CUDA context
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as ex:
        for r in ex.map(_record_job, jobs):
            print(json.dumps(r), flush=True)
    return 0


# --------------------------------------------------------------------------- train
def _examples(rec_dir: Path, col: str):
    """(draw, mesh, category, X, target) per recorded mesh, in ``mesh_session11_learned._examples``' order."""
    rows = []
    for draw in sorted(p for p in rec_dir.iterdir() if p.is_dir()):
        for p in sorted(draw.glob("*_ex.npz")):
            mid = int(p.stem.split("_")[0])
            z = np.load(p)
            rows.append((draw.name, mid, mp.category_of(mid), z["X"], z[col]))
    return rows


def train_fold(rec_dir: Path, models: Path, cat: str, recipe: str, cap_seed: int = 0) -> dict:
    """Today's recipe on the target column ``RECIPES[recipe]``: the examples of the other categories (all for
    ``ALL``), the seeded 200,000 subsample (the same rows for C and M; ``cap_seed``, session 29: another seed draws
    other rows), 64 trees of depth <= 4."""
    col, nf = RECIPES[recipe]
    rows = _examples(rec_dir, col)
    sel = [r for r in rows if r[2] != cat]
    X = np.concatenate([r[3] for r in sel]).astype(np.float64)
    t = np.concatenate([r[4] for r in sel]).astype(np.float64)
    if X.shape[1] < nf:
        raise ValueError(f"the records have {X.shape[1]} feature columns, recipe {recipe} needs {nf}")
    X, t = ml12._cap(X, t, seed=cap_seed)
    X = X[:, :nf]
    t0 = time.perf_counter()
    m = ml12.fit(X, t)
    m.save(models / f"{cat}.npz")
    out = {"recipe": recipe, "fold": cat, "n": int(t.size), "n_features": nf, "target_mean": float(t.mean()),
           "seconds": time.perf_counter() - t0}
    if cap_seed:
        out["cap_seed"] = cap_seed
    held = [r for r in rows if r[2] == cat]
    if held:
        Xh = np.concatenate([r[3] for r in held]).astype(np.float64)[:, :nf]
        th = np.concatenate([r[4] for r in held]).astype(np.float64)
        out["held_mse"] = float(np.mean((m.predict(Xh) - th) ** 2))
        out["held_var"] = float(np.var(th))
    return out


def _train_job(a):
    try:
        return train_fold(*a)
    except Exception as e:  # noqa: BLE001 - reported as a row
        return {"fold": a[2], "recipe": a[3], "error": repr(e)}


def cmd_train(args) -> int:
    if args.recipe not in RECIPES:
        raise SystemExit(f"--recipe must be one of {sorted(RECIPES)}")
    args.models.mkdir(parents=True, exist_ok=True)
    cats = sorted({r[2] for r in _examples(args.rec, "y")})
    with ProcessPoolExecutor(args.jobs) as ex:
        for r in ex.map(_train_job, [(args.rec, args.models, c, args.recipe) for c in cats + ["ALL"]]):
            print(json.dumps(r), flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--jobs", type=int, default=os.cpu_count())
    common.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    r = sub.add_parser("record", parents=[common])
    r.add_argument("--store", type=Path, required=True)
    r.add_argument("--draw", required=True)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--ids", default="")
    r.add_argument("--device", default=None)
    t = sub.add_parser("train", parents=[common])
    t.add_argument("--rec", type=Path, required=True)
    t.add_argument("--models", type=Path, required=True)
    t.add_argument("--recipe", required=True)
    args = ap.parse_args(argv)
    return {"record": cmd_record, "train": cmd_train}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
