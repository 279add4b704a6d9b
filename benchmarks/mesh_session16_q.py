"""Issue 22, session 16 (helper mesh-q7): candidate B, a BAGGED integer-k merge model (the mean of the predictions of
n models of today's recipe S, each trained on a different pair of working-mesh draws). The pre-registered rule is in
benchmarks/results/mesh_q7_session16.md.

    python benchmarks/mesh_session16_q.py bag --members dS,dT,dR --out dB
    python benchmarks/mesh_session16_q.py cost --data psb.npz --store pf3n0s1601.npz --mesh 101 --ks 4,6,10 \\
        --base dS/ALL.npz --cand dB/ALL.npz --rounds 15 [--device cuda] [--json out.json]
    python benchmarks/mesh_session16_q.py judge rows.jsonl --base S --cand B [--min-draws 4] [--json out.json]

``bag``: per fold (every ``*.npz`` the members share: the 19 held-out categories and ``ALL``) one
:class:`gpu_kernels.mesh.learned.TreeModel` that holds the members' trees in the members' order (node tables padded
with unused leaves to the widest), ``init`` = the mean of the members' ``init``, ``rate`` = 1 / n (the members are
scikit-learn exports, ``rate`` 1.0 each): its prediction ``init + rate x sum of every leaf`` is the mean of the
members' predictions (to rounding: checked here on random rows, max |difference| <= 1e-12), and both merge loops
(NumPy and numba) evaluate it as any other TreeModel, the trees added in order: the same floats on the CPU and in the
compiled loop, no library change needed to judge it.
``cost``: the integer-k merge's time on one mesh in the real pipeline (``prepare_mesh`` once, then
``segment_prepared`` at each k of ``--ks``), ``learned.k_merge`` timed by a wrapper (the sum over its calls in one
``segment_prepared``: one per start of the over-segmentation), the two models alternated
(base, cand, then cand, base every other round) after one warm-up each; medians and the paired difference; per k also
``segment_prepared``'s whole time and the labels' SHA-1. ``--ks`` may name ``auto`` (the library's default k): it
merges with the auto model (``learned.MODEL_AUTO``), not this one (no ``k_merge`` call: its time is a check).
``judge``: the rule's criteria (``mesh_session15_q6.judge``: (1) meshes over 0.30 summed over the complete draws
fewer under B, (2) B <= S + 0.001 on every complete draw, (3) B's k = "auto" <= 0.13 with >= 80 % in range on every
complete draw) with at least ``--min-draws`` complete draws (76 rows, no error row); reported: the per mesh-draw
spread |B - S|.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_kernels.mesh import learned as _ln  # noqa: E402


# --------------------------------------------------------------------------- bag
def bag_models(members: list) -> _ln.TreeModel:
    """One TreeModel whose prediction is the mean of ``members``' (each a scikit-learn export: ``rate`` 1.0)."""
    if not members:
        raise ValueError("no members")
    if any(float(m.rate) != 1.0 for m in members):
        raise ValueError("every member must have rate 1.0 (a scikit-learn export)")
    n_nodes = max(m.feature.shape[1] for m in members)
    T = sum(m.feature.shape[0] for m in members)
    feat = np.full((T, n_nodes), -1, dtype=np.int64)
    thr = np.zeros((T, n_nodes))
    left = np.tile(np.arange(n_nodes, dtype=np.int64), (T, 1))
    right = left.copy()
    val = np.zeros((T, n_nodes))
    t = 0
    for m in members:
        k, w = m.feature.shape
        feat[t:t + k, :w] = m.feature
        thr[t:t + k, :w] = m.threshold
        left[t:t + k, :w] = m.left
        right[t:t + k, :w] = m.right
        val[t:t + k, :w] = m.value
        t += k
    init = float(np.mean([float(m.init) for m in members]))
    return _ln.TreeModel(feat, thr, left, right, val, init, 1.0 / len(members), max(int(m.depth) for m in members))


def _check_rows(models: list, n: int = 4000, seed: int = 0) -> np.ndarray:
    """Random rows that reach every branch: per column, values drawn around the members' thresholds on it."""
    rng = np.random.default_rng(seed)
    nf = len(_ln.FEATURES)
    X = rng.normal(size=(n, nf))
    for c in range(nf):
        th = np.concatenate([m.threshold[m.feature == c] for m in models])
        if th.size:
            X[:, c] = rng.choice(th, n) + rng.normal(scale=1e-3 + 0.05 * np.std(th), size=n)
    return X


def cmd_bag(args) -> int:
    dirs = [Path(d) for d in args.members.split(",")]
    names = sorted(set.intersection(*[{p.name for p in d.glob("*.npz")} for d in dirs]))
    args.out.mkdir(parents=True, exist_ok=True)
    worst = 0.0
    for nm in names:
        ms = [_ln.TreeModel.from_npz(d / nm) for d in dirs]
        b = bag_models(ms)
        p = args.out / nm
        b.save(p)
        back = _ln.TreeModel.from_npz(p)
        X = _check_rows(ms)
        mean = np.mean([m.predict(X) for m in ms], axis=0)
        d_c = float(np.max(np.abs(back.predict(X) - mean)))
        d_n = float(np.max(np.abs(back.predict_numpy(X) - back.predict(X))))
        worst = max(worst, d_c)
        if d_c > 1e-12 or d_n != 0.0:
            raise SystemExit(f"{nm}: the bag does not predict the members' mean (|d| {d_c}, numpy vs compiled {d_n})")
        print(json.dumps({"fold": p.stem, "members": [str(d) for d in dirs], "trees": int(back.feature.shape[0]),
                          "nodes": int(back.feature.shape[1]), "init": back.init, "rate": back.rate,
                          "max_abs_vs_members_mean": d_c, "sha1": hashlib.sha1(p.read_bytes()).hexdigest()}))
    print(f"{len(names)} bagged models, max |bag - members' mean| {worst:.2e}")
    return 0


# --------------------------------------------------------------------------- cost
def cmd_cost(args) -> int:
    import mesh_psb as mp

    from gpu_kernels.mesh import segment as _segment

    mp._cv_simplifier()
    mp._cv_ready["stored"] = str(args.store) if args.store else None
    v, f = mp.load_mesh(args.data, args.mesh)
    models = {"base": _ln.TreeModel.from_npz(args.base), "cand": _ln.TreeModel.from_npz(args.cand)}
    ks = [x if x == "auto" else int(x) for x in args.ks.split(",")]
    prep = _segment.prepare_mesh(v, f, device=args.device)
    orig = _ln.k_merge
    clock: list = []

    def timed(*a, **kw):
        t0 = time.perf_counter()
        out = orig(*a, **kw)
        clock.append(time.perf_counter() - t0)
        return out

    _ln.k_merge = timed
    res = {name: {k: [] for k in ks} for name in models}
    tot = {name: {k: [] for k in ks} for name in models}
    labels = {}
    calls: dict = {}
    try:
        for r in range(-1, args.rounds):
            order = ["base", "cand"] if r % 2 == 0 else ["cand", "base"]
            for name in order:
                _ln.MODEL = models[name]
                for k in ks:
                    clock.clear()
                    t0 = time.perf_counter()
                    seg = _segment.segment_prepared(prep, k=k, device=args.device)
                    t1 = time.perf_counter() - t0
                    calls[k] = len(clock)
                    if r >= 0:
                        res[name][k].append(sum(clock) * 1e3)
                        tot[name][k].append(t1 * 1e3)
                    labels[(name, k)] = hashlib.sha1(np.asarray(seg.labels, dtype=np.int32).tobytes()).hexdigest()[:12]
    finally:
        _ln.k_merge = orig
        _ln.MODEL = None
    out = {"mesh": args.mesh, "faces": int(f.shape[0]), "working_faces": int(np.asarray(prep.faces).shape[0])
           if hasattr(prep, "faces") else None, "rounds": args.rounds,
           "trees": {n: int(m.feature.shape[0]) for n, m in models.items()}, "per_k": {}}
    for k in ks:
        b, c = res["base"][k], res["cand"][k]
        row = {"k_merge_calls": calls[k], "merge_ms_median": {"base": statistics.median(b), "cand": statistics.median(c)},
               "merge_ms_min": {"base": min(b), "cand": min(c)},
               "paired_median_ms": statistics.median([y - x for x, y in zip(b, c, strict=True)]),
               "segment_prepared_paired_median_ms": statistics.median(
                   [y - x for x, y in zip(tot["base"][k], tot["cand"][k], strict=True)]),
               "segment_prepared_ms_median": {"base": statistics.median(tot["base"][k]),
                                              "cand": statistics.median(tot["cand"][k])},
               "labels_sha1": {"base": labels[("base", k)], "cand": labels[("cand", k)]}}
        out["per_k"][str(k)] = row
        print(f"mesh {args.mesh} k = {k} ({calls[k]} k_merge calls): merge median base {row['merge_ms_median']['base']:.2f} ms, cand "
              f"{row['merge_ms_median']['cand']:.2f} ms (paired {row['paired_median_ms']:+.2f}); min "
              f"{row['merge_ms_min']['base']:.2f} / {row['merge_ms_min']['cand']:.2f}; segment_prepared "
              f"{row['segment_prepared_ms_median']['base']:.1f} / {row['segment_prepared_ms_median']['cand']:.1f} ms (paired "
              f"{row['segment_prepared_paired_median_ms']:+.2f}); labels {row['labels_sha1']}",
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


# --------------------------------------------------------------------------- judge
def spread(rows: list, a: str, b: str) -> dict:
    """Per mesh-draw |a - b| of the protocol figure over the rows that have both (reported only)."""
    d = np.array([r[b] - r[a] for r in rows if a in r and b in r])
    if not d.size:
        return {}
    return {"n": int(d.size), "rms": float(np.sqrt(np.mean(d * d))), "mean_abs": float(np.mean(np.abs(d)))}


def cmd_judge(args) -> int:
    import mesh_session15_q6 as mq6

    rows = [json.loads(x) for x in Path(args.rows).read_text().splitlines() if x.strip()]
    j = mq6.judge(rows, args.base, args.cand, min_draws=args.min_draws)
    good = [r for r in rows if r.get("draw") in j["complete"]]
    j["spread_vs_base"] = spread(good, args.base, args.cand)
    watch = {}
    for m in (185, 303, 305, 381, 104, 225, 45, 183):
        watch[str(m)] = {r["draw"]: [round(r[args.base], 4), round(r[args.cand], 4)] for r in good if r["mesh"] == m}
    j["watched_meshes"] = watch
    print(f"{args.cand} vs {args.base}: protocol {j['base_mean']} -> {j['cand_mean']}, over 0.30 {j['over_030'][0]} -> "
          f"{j['over_030'][1]}, complete draws {j['complete']} (at least {args.min_draws}): "
          f"{'PASS' if j['pass'] else 'FAIL'} {j['criteria']}")
    for d, v in j["per_draw"].items():
        print(f"   {d}: {args.base} {v[args.base]:.4f} {args.cand} {v[args.cand]:.4f} "
              f"({v[args.cand] - v[args.base]:+.4f})  over 0.30 {v['over_' + args.base]} -> {v['over_' + args.cand]}  "
              f"auto {v['auto_' + args.cand]:.4f} / {v['in_range_' + args.cand]:.1f} % (base auto "
              f"{v['auto_' + args.base]:.4f} / {v['in_range_' + args.base]:.1f} %)")
    print("   per category: " + ", ".join(f"{c} {d:+.3f}" for c, d in sorted(j["per_category"].items(),
                                                                              key=lambda t: t[1])))
    print(f"   mesh-draws better / worse by > 0.01: {j['mesh_draws_better_0.01']} / {j['mesh_draws_worse_0.01']}; "
          f"best {j['best'][:3]}; worst {j['worst'][-3:]}; spread {j['spread_vs_base']}")
    for m, v in watch.items():
        print(f"   mesh {m}: " + ", ".join(f"{d} {x[0]:.3f} -> {x[1]:.3f}" for d, x in sorted(v.items())))
    if args.json:
        Path(args.json).write_text(json.dumps(j, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bag")
    b.add_argument("--members", required=True)
    b.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("cost")
    c.add_argument("--data", type=Path, required=True)
    c.add_argument("--store", type=Path)
    c.add_argument("--mesh", type=int, default=101)
    c.add_argument("--ks", default="4,6,10")
    c.add_argument("--base", type=Path, required=True)
    c.add_argument("--cand", type=Path, required=True)
    c.add_argument("--rounds", type=int, default=15)
    c.add_argument("--device")
    c.add_argument("--json")
    j = sub.add_parser("judge")
    j.add_argument("rows")
    j.add_argument("--base", default="S")
    j.add_argument("--cand", default="B")
    j.add_argument("--min-draws", type=int, default=4)
    j.add_argument("--json")
    args = ap.parse_args(argv)
    return {"bag": cmd_bag, "cost": cmd_cost, "judge": cmd_judge}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
