"""Issue 21, session 8: the pre-registered re-test of the inner-gradient contrast factor
(rule: ``benchmarks/results/imseg_quality_session8.md``, committed before this script ran).

The default and nine inner-gradient rows (a 16 / 32 / 64, coarseness c* and c* ± 0.05) are scored per
image on the 200 training images (session 7's ``prepare`` / ``run``: the production superpixels and
merge loop with the factor as a cost hook); the margin rule picks, in each of five folds of eight
new permutations (seeds 801-808), on the other 160 and is scored on the held-out 40.
``--val`` scores the 20 images too (only after the decision).

Usage::

    python benchmarks/imseg_session8_quality.py --cache /tmp/imq8 --workers 2 [--val]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import imseg_session7_quality as S7  # noqa: E402
from _common import bsds_arguments, worker_map  # noqa: E402
from bench_cli import check_bsds, check_cache_source, check_new_folder, check_results_file, run, write_json  # noqa: E402

SEEDS = tuple(range(801, 809))
OUT = ROOT / "benchmarks" / "results" / "imseg_quality_session8.json"
DEFAULT = S7.DEFAULT
CANDS = [DEFAULT] + [{"kind": "thr", "c": c, "at": at} for at, cs in ((16, (3.55, 3.6, 3.65)),
                                                                      (32, (3.65, 3.7, 3.75)),
                                                                      (64, (3.75, 3.8, 3.85))) for c in cs]


def margin(m, dm) -> float:
    """The smallest margin over the default: covering, PRI, VI / 10."""
    return min(m[0] - dm[0], m[1] - dm[1], (dm[2] - m[2]) / 10)


def pick(rows: dict, idx) -> str:
    """The pre-registered margin rule on images ``idx``: the qualifier with the largest smallest
    margin over the default, or the default when none qualifies."""
    dk = S7.name(DEFAULT)
    dm = rows[dk][idx].mean(0)
    ok = [(margin(rows[k][idx].mean(0), dm), k) for k in rows
          if k != dk and S7.qualifies(rows[k][idx].mean(0), dm)]
    return max(ok)[1] if ok else dk


def beats(m, dm) -> bool:
    return bool(m[0] > dm[0] and m[1] > dm[1] and m[2] < dm[2])


def cv(rows: dict, seeds=SEEDS) -> dict:
    """Per permutation: the held-out figure of the rule's fold picks, whether it beats the
    default, and the acceptance (>= 7 of 8 and the mean over permutations beats the default)."""
    rows = {k: np.asarray(v, float) for k, v in rows.items()}
    dk = S7.name(DEFAULT)
    n = len(rows[dk])
    dm = rows[dk].mean(0)
    perms = []
    for seed in seeds:
        folds = [np.sort(f) for f in np.array_split(np.random.default_rng(seed).permutation(n), 5)]
        held = np.zeros((n, rows[dk].shape[1]))
        picks = []
        for f in folds:
            p = pick(rows, np.setdiff1d(np.arange(n), f))
            picks.append(p)
            held[f] = rows[p][f]
        m = held.mean(0)
        perms.append({"seed": seed, "picks": picks, "held_out": m.round(4).tolist(), "beats": beats(m, dm)})
    grand = np.mean([p["held_out"] for p in perms], 0)
    npass = sum(p["beats"] for p in perms)
    full = pick(rows, np.arange(n))
    return {"default": dm.round(4).tolist(), "perms": perms, "n_pass": npass, "mean_held_out": grand.round(4).tolist(),
            "mean_beats": beats(grand, dm), "pick_all200": full,
            "accepted": bool(npass >= 7 and beats(grand, dm) and full != dk)}


def paired(rows: dict, k: str) -> dict:
    d = np.asarray(rows[k], float) - np.asarray(rows[S7.name(DEFAULT)], float)
    return {"mean": d.mean(0).round(4).tolist(), "se": (d.std(0, ddof=1) / np.sqrt(len(d))).round(4).tolist()}


def check_args(a, default_out: Path, *, mark: bool = True) -> Path:
    """Before anything runs (one line and status 2 otherwise, ``bench_cli``): ``--data`` holds BSDS500,
    ``--cache`` can be made (a cache made from other data does not stand in for ``--data``), and
    the results file: ``--out`` as named, or the default where it does not exist yet (committed
    results are never written over unnamed). ``mark``: name ``--data`` in a new cache (the last
    step; a caller with checks of its own after these calls ``check_cache_source`` itself)."""
    check_bsds("--data", a.data, val=a.val)
    check_new_folder("--cache", a.cache)
    out = check_results_file("--out", a.out, default_out)
    if mark:
        check_cache_source("--cache", a.cache, a.data)
    return out


def main(argv=None):
    a = bsds_arguments(__doc__.splitlines()[0], argv, cache="/tmp/imq8",
                       val="also score the 20 images (after the decision)",
                       out=f"the results JSON (default {OUT}, written only where it does not exist yet: name it "
                           "to write over it)")
    out = check_args(a, OUT)
    t0 = time.time()
    mapf, close_pool = worker_map(a.workers)
    D = S7.load(Path(a.data) / "train", Path(a.cache), "train", mapf)
    print(f"{len(D)} training images prepared ({time.time() - t0:.0f} s)", flush=True)
    res = mapf(S7._job, [(d, CANDS) for d in D])
    rows = {S7.name(c): [list(r[i]) for r in res] for i, c in enumerate(CANDS)}
    rep = {"train_means": {k: np.mean(v, 0).round(4).tolist() for k, v in rows.items()}}
    for k, m in rep["train_means"].items():
        print(f"   {k:30s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
    rep["cv"] = cv(rows)
    rep["paired_pick_minus_default"] = paired(rows, rep["cv"]["pick_all200"])
    for p in rep["cv"]["perms"]:
        print(p, flush=True)
    print({k: v for k, v in rep["cv"].items() if k != "perms"}, rep["paired_pick_minus_default"], flush=True)
    if a.val:
        V = S7.load(Path(a.data), Path(a.cache), "val", mapf)
        vres = mapf(S7._job, [(d, CANDS) for d in V])
        rep["val_means"] = {S7.name(c): np.mean([r[i] for r in vres], 0).round(4).tolist() for i, c in enumerate(CANDS)}
        print("the 20 images (after the decision):", json.dumps(rep["val_means"], indent=0), flush=True)
    rep["rows"] = rows
    rep["seconds"] = round(time.time() - t0, 1)
    write_json(out, rep, indent=0)
    close_pool()


if __name__ == "__main__":
    sys.exit(run(main))
