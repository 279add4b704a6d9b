"""Issue 21, session 8, helper imseg-boundary: a better boundary map for the contours default's
merge cost (rule: ``benchmarks/results/imseg_boundary_session8.md``, committed before any run).

The merge cost's boundary weight is t = mean(B) + B0 along the shared boundary, B today the
single-scale (σ 1) CIELAB gradient G. Candidates substitute B:

- ``ms_max`` / ``ms_mean``: max / mean over σ ∈ {1, 2, 4} of σ·G_σ (scale-normalised gradient);
- ``pb``: Pb-lite, κ·P with P the half-disc colour-histogram χ² (8 orientations, radii 5 and 10,
  16 bins per CIELAB channel), max over orientations, mean over radii and channels;
- ``pb_g``: (G + κ·P) / 2.

Everything else is the production CPU path (superpixels, region graph, ``merge_cost_np``), merged
by session 7's hooked copy of ``merge_np``; scoring is session 3's, the rule session 8's.

Usage::

    python benchmarks/imseg_session8_boundary.py screen --workers 2
    python benchmarks/imseg_session8_boundary.py full --workers 16 [--val]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
import imseg_session7_quality as S7  # noqa: E402
import imseg_session8_quality as S8  # noqa: E402
from _common import bsds_options, majority_agreement, superpixel_graph, worker_map  # noqa: E402
from bench_cli import BadInput, check_bsds, check_folder, check_json_input, check_results_file, write_json  # noqa: E402

SIGMAS = (1.0, 2.0, 4.0)
RADII = (5, 10)
N_ORIENT = 8
NB = 16
CANDS = ("ms_max", "ms_mean", "pb", "pb_g")
SEEDS = tuple(range(821, 829))
SCREEN_N = 50
TARGET_200 = 27.105
GSCALE = 8.0
RESULTS = ROOT / "benchmarks" / "results"


# --------------------------------------------------------------------------- boundary maps
def half_disc_masks(r: int, n_orient: int = N_ORIENT) -> list:
    """Per orientation θ = kπ/n: the two half discs of radius ``r`` split by the line through the
    centre at θ (pixels on the line in neither), each normalised to sum 1, as float32 (2r+1)²."""
    y, x = np.mgrid[-r:r + 1, -r:r + 1].astype(np.float64)
    disc = x * x + y * y <= r * r
    out = []
    for k in range(n_orient):
        th = k * math.pi / n_orient
        side = x * math.sin(th) - y * math.cos(th)  # signed distance from the line along (cos θ, sin θ)
        side = np.where(np.abs(side) < 1e-9, 0.0, side)
        left, right = disc & (side > 0), disc & (side < 0)
        out.append((left.astype(np.float32) / left.sum(), right.astype(np.float32) / right.sum()))
    return out


def hist_bins(q: np.ndarray) -> np.ndarray:
    """(3, H, W) bin of every pixel per channel (0..15) from the fixed-point CIELAB q."""
    L = np.clip(q[0] // 100, 0, NB - 1)
    a = np.clip((q[1] + 1024) // 128, 0, NB - 1)
    b = np.clip((q[2] + 1024) // 128, 0, NB - 1)
    return np.stack([L, a, b])


def chi2_halfdisc(bins: np.ndarray, r: int, n_orient: int = N_ORIENT) -> np.ndarray:
    """(n_orient, H, W) half-disc χ² = ½ Σ_bins (g − h)² / (g + h) of one channel's bin image."""
    import cv2

    masks = half_disc_masks(r, n_orient)
    h, w = bins.shape
    out = np.zeros((n_orient, h, w), np.float64)
    for v in np.unique(bins):
        ind = (bins == v).astype(np.float32)
        for k, (ml, mr) in enumerate(masks):
            g = cv2.filter2D(ind, cv2.CV_32F, ml, borderType=cv2.BORDER_REFLECT).astype(np.float64)
            hh = cv2.filter2D(ind, cv2.CV_32F, mr, borderType=cv2.BORDER_REFLECT).astype(np.float64)
            g, hh = np.clip(g, 0, None), np.clip(hh, 0, None)  # DFT round-off
            s = g + hh
            out[k] += np.where(s > 1e-7, (g - hh) ** 2 / np.where(s > 1e-7, s, 1.0), 0.0)
    return 0.5 * out


def pb_lite(q: np.ndarray, radii=RADII, n_orient: int = N_ORIENT) -> np.ndarray:
    """P in [0, 1]: mean over channels and radii of the max over orientations of the χ²."""
    bins = hist_bins(q)
    acc = np.zeros(q.shape[1:], np.float64)
    for c in range(3):
        for r in radii:
            acc += chi2_halfdisc(bins[c], r, n_orient).max(0)
    return (acc / (3 * len(radii))).astype(np.float32)


def multiscale(u8: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(max, mean) over σ ∈ SIGMAS of σ·G_σ, G_σ the production gradient of the σ-blurred planes."""
    from gpu_kernels.imseg import contours as C

    lab = C.lab_planes_np(u8)
    gs = [np.float32(s) * C.gradient_np(C.blur_np(lab, s))[0] for s in SIGMAS]
    return np.max(gs, 0), np.mean(gs, 0, dtype=np.float64).astype(np.float32)


def edge_sums(labels: np.ndarray, R: int, B: np.ndarray) -> np.ndarray:
    """float64 Σ (B_p + B_q) over the boundary pixel pairs of each adjacent region pair, in the order
    of ``region_graph_np``'s edges (sorted by lo * R + hi)."""
    from gpu_kernels.imseg import contours as C

    lab0 = labels.astype(np.int64) - 1
    Bf = B.astype(np.float64)
    lo, hi, s = C.boundary_pairs(lab0, Bf)
    key = lo * R + hi
    _, inv = np.unique(key, return_inverse=True)
    return np.bincount(inv, weights=s)


# --------------------------------------------------------------------------- data
def prepare(args) -> dict:
    """The default's superpixels, region graph and contingency, with each map's raw edge sums."""
    from imseg_session3 import contingency


    (i, img, gts, _), maps = args
    sp = superpixel_graph(img)
    h, w, u8, G, gq, q, S, comps, R, g = (sp[k] for k in ("h", "w", "u8", "G", "gq", "q", "S", "comps", "R", "graph"))
    raw = {"G": edge_sums(comps, R, G)}
    if {"ms_max", "ms_mean"} & set(maps):
        mx, mn = multiscale(u8)
        raw["ms_max"], raw["ms_mean"] = edge_sums(comps, R, mx), edge_sums(comps, R, mn)
    sums = {"G": float(G.sum(dtype=np.float64)), "npx": h * w}
    if {"pb", "pb_g"} & set(maps):
        P = pb_lite(q)
        raw["P"] = edge_sums(comps, R, P)
        sums["P"] = float(P.sum(dtype=np.float64))
    assert len(raw["G"]) == len(g["ea"])
    return {"id": i, "h": h, "w": w, "S": S, "graph": g, "raw": raw, "sums": sums,
            "cont": contingency(comps, gts)}


def cand_eg(d: dict, cand: str, kappa: float) -> np.ndarray:
    """The candidate's boundary sums in the production's fixed point (8 steps per unit)."""
    raw = d["raw"]
    if cand == "default":
        return d["graph"]["eg"]
    if cand in ("ms_max", "ms_mean"):
        s = raw[cand]
    elif cand == "pb":
        s = kappa * raw["P"]
    elif cand == "pb_g":
        s = 0.5 * (raw["G"] + kappa * raw["P"])
    else:
        raise ValueError(cand)
    return np.rint(GSCALE * s).astype(np.int64)


def cost_prod(st, a, b, el, eg, inv_norm, npx, size_k):
    from gpu_kernels.imseg import contours as C

    return C.merge_cost_np(st["area"], st["rsum"], a, b, el, eg, 2.0 * C.GSCALE, C.B0, inv_norm, npx, size_k)


def run(d: dict, cand: str, c: float, kappa: float):
    """(covering, PRI, VI, segments) of one image under a boundary map and a coarseness."""
    from imseg_session3 import scores

    from gpu_kernels.imseg import contours as C

    g = dict(d["graph"])
    g["eg"] = cand_eg(d, cand, kappa)
    n = d["h"] * d["w"]
    into = S7.merge(g, cost_prod, 1 / math.sqrt(n), C.min_region_area(d["S"]), C.SIZE_K, {"kind": "thr", "c": c})
    seg, count = C._resolve(into)
    return (*scores(d, seg), count)


def _job(args):
    d, rows, kappa = args
    return [run(d, cand, c, kappa) for cand, c in rows]


def name(cand: str, c: float) -> str:
    return "kind=thr|c=3.3" if cand == "default" else f"map={cand}|c={c:.2f}"


def matched_c(D, mapf, cand: str, kappa: float, target: float, lo=2.5, hi=5.5, steps=8):
    """The coarseness (0.01) whose mean segment count on D is closest to ``target`` (bisection)."""
    seen = {}
    for _ in range(steps):
        mid = round((lo + hi) / 2, 2)
        seen[mid] = float(np.mean([r[0][3] for r in mapf(_job, [(d, [(cand, mid)], kappa) for d in D])]))
        lo, hi = (mid, hi) if seen[mid] > target else (lo, mid)
    return min(seen, key=lambda c: abs(seen[c] - target)), seen


def score_rows(D, mapf, rows: list, kappa: float) -> dict:
    res = mapf(_job, [(d, rows, kappa) for d in D])
    return {name(*rc): [list(r[i]) for r in res] for i, rc in enumerate(rows)}


def screen_pick(means: dict, groups: dict, n: int = 2) -> list:
    """The ``n`` candidates whose best row has the largest margin over the default (ties: order)."""
    dm = means[name("default", 3.3)]
    best = {cand: max(S8.margin(means[k], dm) for k in keys) for cand, keys in groups.items()}
    return sorted(best, key=lambda cand: -best[cand])[:n], best


# --------------------------------------------------------------------------- post hoc diagnostic
def auc(score: np.ndarray, pos: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    from scipy.stats import rankdata

    r = rankdata(score)
    n1, n0 = int(pos.sum()), int((~pos).sum())
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def diag_pairs(args):
    """Adjacent pairs after the default merge has reached ``target`` regions: 'different human
    segments' (the majority segment differs in more than half the human segmentations), each map's
    mean boundary value and each map's full merge cost (the production formula)."""
    from gpu_kernels.imseg import contours as C

    d, target, kappa = args
    g = d["graph"]
    n = d["h"] * d["w"]
    into, _, _ = C.merge_np(g, target, math.inf, 1 / math.sqrt(n))
    seg, cnt = C._resolve(into)
    s0 = seg - 1
    area = np.bincount(s0, weights=g["area"], minlength=cnt).astype(np.int64)
    rsum = np.stack([np.bincount(s0, weights=g["rsum"][:, k], minlength=cnt) for k in range(3)], 1).astype(np.int64)
    a, b = s0[g["ea"]], s0[g["eb"]]
    ok = a != b
    out = {}
    for cand in ("default",) + CANDS:
        ea, eb, el, eg = C._aggregate(np.minimum(a, b)[ok], np.maximum(a, b)[ok], g["el"][ok],
                                      cand_eg(d, cand, kappa)[ok], cnt)
        out[cand + ":boundary"] = eg / (el * 2.0 * GSCALE)
        out[cand + ":cost"] = C.merge_cost_np(area, rsum, ea, eb, el, eg, 2.0 * GSCALE, C.B0, 1 / math.sqrt(n),
                                              float(n), C.SIZE_K).astype(np.float64)
    out["diff"] = majority_agreement(d["cont"], s0, cnt, ea, eb) < 0.5
    return out


# --------------------------------------------------------------------------- main
#: what a stage reads from the screen's results (its first stage)
SCREEN_KEYS = {"diag": ("kappa",), "oracle": ("kappa", "bisection"), "full": ("kappa", "chosen")}


def check_args(a) -> Path:
    """Before anything runs (one line and status 2 otherwise, ``bench_cli``): ``--data`` holds
    BSDS500, ``--out`` is a writable folder, the screen's results are there for the later stages,
    and the stage's results file is new unless ``--out`` is named (committed results are never
    written over unnamed). Returns the results folder."""
    check_bsds("--data", a.data, val=a.val and a.stage == "full")
    out = check_folder("--out", RESULTS if a.out is None else a.out, writable=True)
    if a.stage in SCREEN_KEYS:
        scr = check_json_input(f"the {a.stage} stage's input", out / "imseg_boundary_session8_screen.json")
        missing = [k for k in SCREEN_KEYS[a.stage] if not isinstance(scr, dict) or k not in scr]
        if missing:
            raise BadInput(f"{out / 'imseg_boundary_session8_screen.json'} is not the screen stage's results "
                           f"(no {', '.join(missing)}); run the screen stage first")
    mine = out / f"imseg_boundary_session8_{a.stage}.json"
    check_results_file("--out", mine if a.out is not None else None, mine)
    return out


def main(argv=None):
    import imseg as B

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stage", choices=("screen", "full", "diag", "oracle"))
    bsds_options(ap, val="full: score the 20 images too (after the decision)",
                 out=f"the results folder (default {RESULTS}, where a stage writes only a file that does not exist "
                     "yet: name it to write over one)")
    a = ap.parse_args(argv)
    out = check_args(a)
    t0 = time.time()
    mapf, close_pool = worker_map(a.workers)
    items = list(B.bsds_items(Path(a.data) / "train"))
    default = ("default", 3.3)
    if a.stage == "screen":
        D = mapf(prepare, [(it, CANDS) for it in items[:SCREEN_N]])
        kappa = sum(d["sums"]["G"] for d in D) / sum(d["sums"]["P"] for d in D)
        print(f"{len(D)} screen images prepared ({time.time() - t0:.0f} s), kappa {kappa:.4f}", flush=True)
        rep = {"kappa": kappa, "n": len(D), "bisection": {}}
        rows = [default]
        base = score_rows(D, mapf, [default], kappa)
        target = float(np.mean(base[name(*default)], 0)[3])
        rep["target"] = target
        groups = {}
        for cand in CANDS:
            c, seen = matched_c(D, mapf, cand, kappa, target)
            rep["bisection"][cand] = {"c_star": c, "segments": {str(k): round(v, 3) for k, v in seen.items()}}
            print(f"{cand}: c* {c} ({time.time() - t0:.0f} s) {seen}", flush=True)
            rc = [(cand, round(c + dc, 2)) for dc in (-0.05, 0.0, 0.05)]
            rows += rc
            groups[cand] = [name(*x) for x in rc]
        res = score_rows(D, mapf, rows, kappa)
        rep["means"] = {k: np.mean(v, 0).round(4).tolist() for k, v in res.items()}
        rep["chosen"], rep["screen_score"] = screen_pick(rep["means"], groups)
        for k, m in rep["means"].items():
            print(f"   {k:24s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
        print("screen scores", rep["screen_score"], "-> full run:", rep["chosen"], flush=True)
        rep["rows"] = res
        rep["seconds"] = round(time.time() - t0, 1)
        write_json(out / "imseg_boundary_session8_screen.json", rep, indent=0)
    elif a.stage == "diag":  # post hoc, after the decision: how well each map ranks the pairs
        kappa = json.loads((out / "imseg_boundary_session8_screen.json").read_text())["kappa"]
        D = mapf(prepare, [(it, CANDS) for it in items[:SCREEN_N]])
        rep = {"kappa": kappa, "n": len(D)}
        for target in (80, 40, 20):
            P = mapf(diag_pairs, [(d, target, kappa) for d in D])
            pos = np.concatenate([p["diff"] for p in P])
            rep[str(target)] = {"pairs": int(len(pos)), "different": int(pos.sum())}
            for k in P[0]:
                if k != "diff":
                    rep[str(target)][k] = round(auc(np.concatenate([p[k] for p in P]), pos), 4)
            print(target, rep[str(target)], flush=True)
        rep["seconds"] = round(time.time() - t0, 1)
        write_json(out / "imseg_boundary_session8_diag.json", rep, indent=0)
    elif a.stage == "oracle":  # post hoc: the hierarchy's room, best coarseness per image (by covering)
        scr = json.loads((out / "imseg_boundary_session8_screen.json").read_text())
        D = mapf(prepare, [(it, CANDS) for it in items[:SCREEN_N]])
        rep = {"n": len(D), "grid": "c* - 0.6 .. c* + 0.6, step 0.05"}
        for cand in ("default",) + CANDS:
            c0 = 3.3 if cand == "default" else scr["bisection"][cand]["c_star"]
            grid = [(cand, round(c0 + dc, 2)) for dc in np.arange(-0.6, 0.601, 0.05)]
            res = np.array(mapf(_job, [(d, grid, scr["kappa"]) for d in D]))  # (images, grid, 4)
            best = res[np.arange(len(D)), res[:, :, 0].argmax(1)]
            rep[cand] = best.mean(0).round(4).tolist()
            print(cand, rep[cand], flush=True)
        rep["seconds"] = round(time.time() - t0, 1)
        write_json(out / "imseg_boundary_session8_oracle.json", rep, indent=0)
    else:
        scr = json.loads((out / "imseg_boundary_session8_screen.json").read_text())
        chosen, kappa = scr["chosen"], scr["kappa"]
        D = mapf(prepare, [(it, chosen) for it in items])
        print(f"{len(D)} training images prepared ({time.time() - t0:.0f} s); chosen {chosen}, kappa {kappa:.4f}",
              flush=True)
        rep = {"chosen": chosen, "kappa": kappa, "bisection": {}}
        rows = [default]
        for cand in chosen:
            c, seen = matched_c(D, mapf, cand, kappa, TARGET_200)
            rep["bisection"][cand] = {"c_star": c, "segments": {str(k): round(v, 3) for k, v in seen.items()}}
            print(f"{cand}: c* {c} ({time.time() - t0:.0f} s) {seen}", flush=True)
            rows += [(cand, round(c + dc, 2)) for dc in (-0.05, 0.0, 0.05)]
        res = score_rows(D, mapf, rows, kappa)
        rep["train_means"] = {k: np.mean(v, 0).round(4).tolist() for k, v in res.items()}
        for k, m in rep["train_means"].items():
            print(f"   {k:24s} " + " / ".join(f"{x:.4f}" for x in m), flush=True)
        ok = np.allclose(rep["train_means"][name(*default)], [0.5965, 0.8214, 1.7437, 27.105], atol=1e-4)
        rep["default_reproduces"] = bool(ok)
        rep["cv"] = S8.cv(res, SEEDS)
        rep["paired_pick_minus_default"] = S8.paired(res, rep["cv"]["pick_all200"])
        for p in rep["cv"]["perms"]:
            print(p, flush=True)
        print({k: v for k, v in rep["cv"].items() if k != "perms"}, rep["paired_pick_minus_default"],
              "default reproduces:", ok, flush=True)
        rep["rows"] = res
        write_json(out / "imseg_boundary_session8_full.json", rep, indent=0)
        if a.val:  # after the decision (printed above): the 20 images choose nothing
            V = mapf(prepare, [(it, chosen) for it in B.bsds_items(Path(a.data))])
            vres = score_rows(V, mapf, rows, kappa)
            rep["val_means"] = {k: np.mean(v, 0).round(4).tolist() for k, v in vres.items()}
            print("the 20 images (after the decision):", json.dumps(rep["val_means"], indent=0), flush=True)
        rep["seconds"] = round(time.time() - t0, 1)
        write_json(out / "imseg_boundary_session8_full.json", rep, indent=0)
    close_pool()


if __name__ == "__main__":
    import bench_cli

    sys.exit(bench_cli.run(main))
