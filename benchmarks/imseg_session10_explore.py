"""Issue 21, session 10, after the decision (exploration for the next session; chooses nothing, train
images only, the 20 not touched): the learned merge of ``imseg_session10_gala.py`` fitted on training
images 0-99 and scored on 100-199, with the examples unweighted (the rejected rule's model) or weighted
by the smaller region's share of the image (pixels at stake), at τ 0.30-0.45.

Usage: ``python benchmarks/imseg_session10_explore.py --workers 2``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import imseg_session10_gala as G  # noqa: E402

TAUS = (0.30, 0.33, 0.36, 0.39, 0.42, 0.45)


def fit_weighted(X, Y, w):
    from sklearn.ensemble import HistGradientBoostingRegressor

    m = HistGradientBoostingRegressor(max_iter=64, max_depth=4, learning_rate=0.1, max_bins=255,
                                      early_stopping=False, random_state=0)
    m.fit(X, Y, sample_weight=w)
    return G.export(m)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "bsds500"))
    ap.add_argument("--cache", default="/tmp/gala10")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    tr = G.load(Path(a.data) / "train", Path(a.cache), "train")
    G._D = tr
    mapf, close = G._pool(a.workers)
    fit_i, test_i = np.arange(100), np.arange(100, 200)
    EX = mapf(G._ex_job, fit_i)
    drow = np.array(mapf(G._def_job, test_i))
    close()
    X, Y = np.concatenate([x for x, _ in EX]), np.concatenate([y for _, y in EX])
    models = {"unweighted": G.fit(X, Y, seed=0), "weighted": fit_weighted(X, Y, np.exp(X[:, 12].astype(np.float64)))}
    mapf, close = G._pool(a.workers)
    out = {"default": drow.mean(0).tolist(), "taus": TAUS}
    print("default (100-199):", np.round(drow.mean(0), 4).tolist(), flush=True)
    for k, m in models.items():
        rows = np.array([r for part in mapf(G._rows_job, [(m, c, TAUS) for c in G._chunks(test_i, 8)]) for r in part])
        out[k] = rows.mean(0).tolist()
        for j, t in enumerate(TAUS):
            print(f"{k} tau {t}: {np.round(rows[:, j].mean(0), 4).tolist()}", flush=True)
    close()
    if a.out:
        Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
