"""k = "auto" rules, cross-validated from a cache of merge sequences (issue 22, session 3).

The default k = "auto" over-segments a mesh's working resolution into AUTO_K_START clusters,
merges them down to two along the weakest boundaries and keeps the merges before a stop
rule fires. Every stop rule sees the same merge sequence, so one run per mesh is enough to
score every rule: this script records, per mesh, the clusters before the merges, the
merges with their strengths, and the map from the input faces to the working faces, then
replays any stop rule without clustering again.

    python benchmarks/mesh_autok.py cache --out /tmp/autok [--ids 1,3,...]   # one run per mesh
    python benchmarks/mesh_autok.py cv --cache /tmp/autok                    # LOCO over the rules

Since session 4 the default k = "auto" over-segments three times (``segment.AUTO_K_STARTS`` =
24, 30 and 36 clusters) and keeps the medoid of the three results; ``cache`` records the single
sequence of ``AUTO_K_START`` = 30 clusters (the replay's reference, 0.1751), and ``starts``
scores sets of starts with the medoid:

    python benchmarks/mesh_autok.py starts --cache /tmp/autok --out /tmp/starts --json s.json \
        --starts 20,24,30,36,40 --sets "24/30/36;20/30/40;20/24/30/36/40"

The replay carries the working resolution's labels to the input faces by the nearest-face
map (as the pipeline does before its full-resolution boundary cut): the cut moves boundary
faces only (its Rand Index effect was 0.001 on 19 meshes, ``mesh_cv.md``); ``cache`` also
records the real pipeline's k and Rand Index at the default rule, and ``cv`` prints how
far the replay is from it.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402

from gpu_kernels.mesh import boundary as _bd  # noqa: E402
from gpu_kernels.mesh import segment as _segment  # noqa: E402
from gpu_kernels.mesh.metrics import contingency, rand_index_error  # noqa: E402

STORED = ROOT / ".carry-mesh4" / "hyb.npz"


# --------------------------------------------------------------------------- cache
def cache_mesh(data: Path, mesh_id: int, out: Path) -> dict:
    """Run the default k = "auto" on one mesh and record its merge sequence."""
    from scipy.spatial import cKDTree

    v, f = mp.load_mesh(data, mesh_id)
    humans = mp.load_human(data, mesh_id)
    rec: dict = {}
    orig = _bd.merge_weakest_boundaries

    def spy(graph, labels, targets, label_component, *, stop=None, strengths=None, min_area=0.0, progress=None):
        merged, merges = orig(graph, labels, targets, label_component, stop=stop, strengths=strengths,
                              min_area=min_area, progress=progress)
        rec.update(labels=np.asarray(labels).copy(), merges=list(merges), strengths=list(strengths or []),
                   label_comp=np.asarray(label_component).copy(), targets=dict(targets), n=graph.n)
        return merged, merges

    _bd.merge_weakest_boundaries = spy
    starts = _segment.AUTO_K_STARTS
    _segment.AUTO_K_STARTS = ()  # one merge sequence, of AUTO_K_START clusters
    try:
        t0 = time.perf_counter()
        prep = _segment.prepare_mesh(v, f)
        seg = _segment.segment_prepared(prep, k="auto", auto_layout="auto")  # auto's own merges
        secs = time.perf_counter() - t0
    finally:
        _bd.merge_weakest_boundaries = orig
        _segment.AUTO_K_STARTS = starts
    graph = prep.graph
    F_in = f.shape[0]
    if prep.working:
        gs = prep.working[0][1]
        near = prep.nearest[0] if prep.nearest and prep.nearest[0] is not None else \
            cKDTree(gs.centroids).query(graph.centroids, k=1)[1]
        g2w = np.asarray(near, dtype=np.int64)
    else:
        gs = graph
        g2w = np.arange(graph.n, dtype=np.int64)
    in2w = np.zeros(F_in, dtype=np.int64)
    in2w[prep.kept] = g2w
    dropped = prep.report["dropped_faces"]
    if len(dropped):
        vin, fin = np.asarray(v, np.float64), np.asarray(f, np.int64)
        cen = vin[fin[dropped]].mean(axis=1)
        in2w[dropped] = g2w[cKDTree(graph.centroids).query(cen, k=1)[1]]
    comp_of = [int(rec["label_comp"][keep]) for keep, _ in rec["merges"]]
    out_rec = {
        "mesh": mesh_id, "category": mp.category_of(mesh_id), "faces": int(F_in),
        "labels": rec["labels"], "merges": rec["merges"], "strengths": rec["strengths"], "comp_of": comp_of,
        "label_comp": rec["label_comp"], "targets": rec["targets"], "in2w": in2w,
        "gs": gs, "areas": np.asarray(gs.areas, np.float64),
        "k_default": int(seg.k),
        "RI_default": float(np.mean([rand_index_error(seg.labels, h) for h in humans])),
        "seconds": secs,
    }
    with open(out / f"{mesh_id}.pkl", "wb") as fh:
        pickle.dump(out_rec, fh)
    return out_rec


def cmd_cache(args) -> int:
    mp._cv_simplifier()
    mp._cv_ready["stored"] = str(args.stored)
    args.out.mkdir(parents=True, exist_ok=True)
    ids = [int(x) for x in args.ids.split(",")] if args.ids else mp.mesh_ids(args.data)
    for i in ids:
        if (args.out / f"{i}.pkl").exists():
            continue
        r = cache_mesh(args.data, i, args.out)
        print(f"{i:4d} {r['category']:10s} k {r['k_default']:3d} RI {r['RI_default']:.4f} "
              f"merges {len(r['merges'])} {r['seconds']:.1f} s", flush=True)
    return 0


def _prepared_meshes(args, *, skip=()):
    """The meshes the run subcommands go through: ``(id, humans, human ks, prepared mesh)`` of
    each of ``args.ids`` (default every shared mesh) not in ``skip``, with the CV's simplifier,
    the stored working meshes and any ``--set`` constants in force."""
    mp._cv_simplifier()
    mp._cv_ready["stored"] = str(args.stored)
    ids = [int(x) for x in args.ids.split(",")] if args.ids else mp.mesh_ids(args.data)
    mp._apply_settings(getattr(args, "set", None) or [])
    for i in ids:
        if i in skip:
            continue
        v, f = mp.load_mesh(args.data, i)
        humans = mp.load_human(args.data, i)
        yield i, humans, [int(np.unique(h).size) for h in humans], _segment.prepare_mesh(v, f)


def _print_row(name, rows) -> None:
    """One line of a screen: mean Rand Index error, k in the human range, meshes above 0.30
    (``rows``: mesh -> (RI, in range, k, category))."""
    v = list(rows.values())
    print(f"{name:28s} RI {np.mean([x[0] for x in v]):.4f} in range {sum(x[1] for x in v)}/{len(v)} "
          f">0.30 {sum(x[0] > 0.30 for x in v)}", flush=True)


def _ri(seg, humans) -> float:
    return float(np.mean([rand_index_error(seg.labels, h) for h in humans]))


def cmd_cut_effect(args) -> int:
    """k = "auto" with and without the full-resolution boundary cut (``refine_boundaries``),
    the same prepared mesh for both; one JSON line per mesh."""
    with open(args.out, "a") as fh:
        for i, humans, hk, prep in _prepared_meshes(args):
            row = {"mesh": i, "category": mp.category_of(i), "k_human_min": min(hk), "k_human_max": max(hk)}
            for cut in (True, False):
                seg = _segment.segment_prepared(prep, k="auto", refine_boundaries=cut, auto_layout="auto")
                key = "cut" if cut else "nocut"
                row[f"k_{key}"] = int(seg.k)
                row[f"RI_{key}"] = _ri(seg, humans)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"{i:4d} {row['category']:10s} k {row['k_cut']}/{row['k_nocut']} RI {row['RI_cut']:.4f} / "
                  f"{row['RI_nocut']:.4f}", flush=True)
    return 0


def cmd_proto_cache(args) -> int:
    """The protocol's k with the default pipeline, per mesh and k: the Rand Index against every
    human and the over-segmentation factors' boundary concavities (the pipeline keeps the most
    concave result), for scoring other candidates under the same choice. JSON lines."""
    done = set()
    if args.out.exists():
        done = {json.loads(line)["mesh"] for line in args.out.read_text().splitlines() if line.strip()}
    with open(args.out, "a") as fh:
        for i, humans, hk, prep in _prepared_meshes(args, skip=done):
            row = {"mesh": i, "category": mp.category_of(i), "hk": hk, "per_k": {}}
            for k in sorted(set(hk)):
                seg = _segment.segment_prepared(prep, k=k, refine_boundaries=not args.no_refine)
                row["per_k"][str(k)] = {
                    "RI": _ri(seg, humans), "k": int(seg.k),
                    "scores": seg.info.get("oversegment_scores"), "used": seg.info.get("oversegment_used")}
            row["RI"] = float(np.mean([row["per_k"][str(k)]["RI"] for k in hk]))
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"{i:4d} {row['category']:10s} RI {row['RI']:.4f}", flush=True)
    return 0


def cmd_two_pass(args) -> int:
    """k from the default k = "auto", then the protocol's pipeline run at that k (a second
    clustering with the over-segmentation factors); JSON lines with both results."""
    with open(args.out, "a") as fh:
        for i, humans, hk, prep in _prepared_meshes(args):
            auto = _segment.segment_prepared(prep, k="auto", auto_layout="auto")
            again = _segment.segment_prepared(prep, k=int(auto.k))
            row = {"mesh": i, "category": mp.category_of(i), "k_human_min": min(hk), "k_human_max": max(hk),
                   "k_auto": int(auto.k), "k_two_pass": int(again.k),
                   "RI_auto": _ri(auto, humans), "RI_two_pass": _ri(again, humans)}
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"{i:4d} {row['category']:10s} k {row['k_auto']} RI {row['RI_auto']:.4f} -> {row['RI_two_pass']:.4f}",
                  flush=True)
    return 0


# --------------------------------------------------------------------------- replay
class Replay:
    """One cached mesh: the labels and Rand Index for any number of kept merges."""

    def __init__(self, rec: dict, humans: list):
        self.r = rec
        self.humans = humans
        self.hk = [int(np.unique(h).size) for h in humans]
        self.auto = sorted({c for c, t in rec["targets"].items() if int(t) <= 2} & set(rec["comp_of"]))
        self.weights = np.bincount(rec["in2w"], minlength=rec["labels"].size).astype(np.float64)
        self._memo: dict = {}
        self._levels: dict = {}

    def seq(self, c) -> np.ndarray:
        return np.asarray([s for s, cc in zip(self.r["strengths"], self.r["comp_of"], strict=True) if cc == c])

    def small(self, c) -> np.ndarray:
        """The smaller part's share of its component's area at each merge of component ``c``."""
        if ("small", c) not in self._memo:
            lab = np.asarray(self.r["labels"]).astype(np.int64)
            area = np.bincount(lab, weights=self.r["areas"], minlength=self.r["label_comp"].size)
            comp_area = np.bincount(self.r["label_comp"], weights=area)
            out = []
            for (keep, gone), cc in zip(self.r["merges"], self.r["comp_of"], strict=True):
                if cc == c:
                    out.append(min(area[keep], area[gone]) / max(comp_area[cc], 1e-300))
                area[keep] += area[gone]
                area[gone] = 0.0
            self._memo[("small", c)] = np.asarray(out)
        return self._memo[("small", c)]

    def labels(self, n_keep: dict) -> np.ndarray:
        lab = np.asarray(self.r["labels"]).astype(np.int64).copy()
        seen: dict = {}
        for (keep, gone), c in zip(self.r["merges"], self.r["comp_of"], strict=True):
            seen[c] = seen.get(c, 0) + 1
            if c in n_keep and seen[c] > n_keep[c]:
                continue
            lab[lab == gone] = keep
        lab, _ = _bd.merge_islands(self.r["gs"], lab)
        return lab

    def score(self, n_keep: dict) -> tuple[float, int]:
        key = tuple(sorted(n_keep.items()))
        if key not in self._memo:
            lab = self.labels(n_keep)[self.r["in2w"]]
            k = int(np.unique(lab).size)
            ri = float(np.mean([rand_index_error(lab, h) for h in self.humans]))
            self._memo[key] = (ri, k)
        return self._memo[key]

    def level_distances(self, c) -> np.ndarray:
        """(m+1, m+1) Rand Index errors between the partitions after 0..m merges of component
        ``c`` (input faces counted: the working faces weighted by their input faces)."""
        if c not in self._levels:
            m = len(self.seq(c))
            labs = [self.labels({c: n}) for n in range(m + 1)]
            D = np.zeros((m + 1, m + 1))
            w = self.weights
            N = w.sum()
            for i in range(m + 1):
                for j in range(i + 1, m + 1):
                    t = contingency(labs[i], labs[j], w)
                    v = (t.sum(1) ** 2).sum() + (t.sum(0) ** 2).sum() - 2 * (t ** 2).sum()
                    D[i, j] = D[j, i] = v / max(N * N, 1e-300)
            self._levels[c] = D
        return self._levels[c]


# --------------------------------------------------------------------------- stop rules
# A rule maps (strengths of one component's merges in order, the level distance callable,
# params) to the number of merges kept. k after n merges = AUTO_K_START - n.
def rule_default(st, D=None, tau=1.5, rel=0.4, small=None, **_):
    """Stop at the first boundary as strong as max(tau, rel * reference) (the default). The
    reference is :func:`gpu_kernels.mesh.autok.reference_strength` when the smaller parts'
    area shares ``small`` are given (session 5), else the strongest boundary (session 4)."""
    from gpu_kernels.mesh import autok

    st = np.asarray(st)
    if st.size == 0:
        return 0
    ref = st.max() if small is None else autok.reference_strength(st, small)
    thr = max(tau, rel * ref)
    hit = np.flatnonzero(st >= thr)
    return int(hit[0]) if hit.size else int(st.size)


def rule_gap(st, D=None, lo=1.0, hi=3.0, kmin=2, kmax=30, start=30, rel=None, **_):
    """Stop before the largest jump of the running maximum (as a ratio) among the merges whose
    strength lies in [lo, hi]; below lo every merge is kept, at hi it stops."""
    st = np.asarray(st, dtype=np.float64)
    m = st.size
    if m == 0:
        return 0
    if rel is not None:
        hi = min(hi, max(lo * 1.0001, rel * st.max()))
    cm = np.maximum.accumulate(st)
    prev = np.concatenate([[max(cm[0], 1e-9)], cm[:-1]])
    ratio = cm / np.maximum(prev, 1e-9)
    n_hi = int(np.flatnonzero(cm >= hi)[0]) if (cm >= hi).any() else m
    n_lo = int(np.flatnonzero(cm >= lo)[0]) if (cm >= lo).any() else m
    cand = [n for n in range(n_lo, n_hi + 1) if kmin <= start - n <= kmax]
    if not cand:
        return min(max(n_lo, 0), m)
    best = max(cand, key=lambda n: (ratio[n] if n < m else 1.0, -n))
    return int(best)


def rule_medoid_k(st, D, ka=3, kb=20, start=30, **_):
    """The level that agrees best (Rand Index) with every level of k in [ka, kb]."""
    m = len(st)
    ks = np.arange(m + 1)
    lv = [n for n in ks if ka <= start - n <= kb] or [m]
    Dm = D()
    sub = Dm[np.ix_(lv, lv)]
    return int(lv[int(np.argmin(sub.sum(axis=1)))])


def rule_medoid_tau(st, D, taus=(1.2, 1.5, 2.0, 3.0), rels=(0.0, 0.4), **_):
    """The medoid (Rand Index) of the stops of the default rule over a set of thresholds."""
    stops = [rule_default(st, None, t, r) for t in taus for r in rels]
    Dm = D()
    sub = Dm[np.ix_(stops, stops)]
    return int(stops[int(np.argmin(sub.sum(axis=1)))])


def rule_medoid_band(st, D, lo=1.2, hi=3.0, rel=0.0, **_):
    """The medoid of the levels between the default rule's stops at thresholds hi and lo."""
    a = rule_default(st, None, lo, rel)
    b = rule_default(st, None, hi, rel)
    lv = list(range(min(a, b), max(a, b) + 1))
    Dm = D()
    sub = Dm[np.ix_(lv, lv)]
    return int(lv[int(np.argmin(sub.sum(axis=1)))])


def rule_sliver(st, D=None, small=None, tau=1.5, rel=0.4, a=0.02, b=0.0, **_):
    """The default rule, blind to slivers: the relative threshold is taken of the strongest
    merge whose smaller part has at least ``a`` of the component's area, and only a merge whose
    smaller part has at least ``b`` of it stops the merging (smaller merges are made)."""
    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    small = np.asarray(small, dtype=np.float64)
    big = small >= a
    smax = st[big].max() if big.any() else st.max()
    thr = max(tau, rel * smax)
    hit = np.flatnonzero((st >= thr) & (small >= b))
    return int(hit[0]) if hit.size else int(st.size)


def rule_rank(st, D=None, tau=1.5, rel=0.4, rank=2, **_):
    """The default rule with the relative threshold taken of the ``rank``-th strongest merge
    (a few very sharp small parts do not set it)."""
    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    ref = np.sort(st)[::-1][min(rank, st.size) - 1]
    thr = max(tau, rel * ref)
    hit = np.flatnonzero(st >= thr)
    return int(hit[0]) if hit.size else int(st.size)


def rule_median(st, D=None, tau=1.5, rel=0.4, c=2.0, **_):
    """The default rule with a third floor, ``c`` x the median strength of the merge sequence
    (a mesh with sharp creases everywhere has strong seams inside its parts too)."""
    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    thr = max(tau, rel * st.max(), c * float(np.median(st)))
    hit = np.flatnonzero(st >= thr)
    return int(hit[0]) if hit.size else int(st.size)


RULES = {"median": rule_median, "rank": rule_rank, "sliver": rule_sliver, "default": rule_default, "gap": rule_gap, "medk": rule_medoid_k, "medtau": rule_medoid_tau,
         "medband": rule_medoid_band}


def rule_grid():
    grid = [("default tau1.5 rel0.4", "default", {"tau": 1.5, "rel": 0.4})]
    for tau in (1.2, 1.3, 1.4, 1.6, 1.8):
        for rel in (0.0, 0.3, 0.4, 0.5):
            grid.append((f"default tau{tau} rel{rel}", "default", {"tau": tau, "rel": rel}))
    for lo in (1.0, 1.2, 1.4):
        for hi in (2.0, 3.0, 4.0):
            for rel in (None, 0.6):
                grid.append((f"gap lo{lo} hi{hi} rel{rel}", "gap", {"lo": lo, "hi": hi, "rel": rel}))
    for ka in (2, 3, 4):
        for kb in (12, 16, 20, 25, 30):
            grid.append((f"medk {ka}-{kb}", "medk", {"ka": ka, "kb": kb}))
    for taus in ((1.2, 1.5, 2.0, 3.0), (1.0, 1.5, 2.0, 2.5, 3.0, 4.0), (1.2, 1.5, 1.8, 2.2)):
        for rels in ((0.0,), (0.0, 0.4), (0.4,)):
            grid.append((f"medtau {taus} {rels}", "medtau", {"taus": taus, "rels": rels}))
    for lo in (1.0, 1.2, 1.5):
        for hi in (2.5, 3.0, 4.0, 6.0):
            for rel in (0.0, 0.4):
                grid.append((f"medband {lo}-{hi} rel{rel}", "medband", {"lo": lo, "hi": hi, "rel": rel}))
    for c in (1.5, 2.0, 2.5, 3.0):
        for rel in (0.0, 0.4):
            grid.append((f"median c{c} rel{rel}", "median", {"c": c, "rel": rel}))
    for rank in (2, 3):
        for rel in (0.4, 0.5, 0.6):
            grid.append((f"rank{rank} rel{rel}", "rank", {"rank": rank, "rel": rel}))
    for a in (0.01, 0.02, 0.03, 0.05):
        for b in (0.0, a):
            grid.append((f"sliver a{a} b{b}", "sliver", {"a": a, "b": b}))
    return grid


def apply_rule(rep: Replay, fn, kw) -> tuple[float, int]:
    n_keep = {c: fn(rep.seq(c), lambda c=c: rep.level_distances(c), small=rep.small(c), **kw) for c in rep.auto}
    return rep.score(n_keep)


def loco(table: dict, meshes: list, cats: dict, names: list):
    """table[name][mesh] = (RI, in_range). Per category: the rule with the lowest mean over the
    other categories, scored on the held-out one."""
    out = []
    for c in sorted(set(cats.values()), key=lambda c: min(m for m in meshes if cats[m] == c)):
        train = [m for m in meshes if cats[m] != c]
        test = [m for m in meshes if cats[m] == c]
        best = min(names, key=lambda n: (np.mean([table[n][m][0] for m in train]), names.index(n)))
        out.append({"category": c, "chosen": best,
                    "train": float(np.mean([table[best][m][0] for m in train])),
                    "held_out": float(np.mean([table[best][m][0] for m in test])),
                    "in_range": int(sum(table[best][m][1] for m in test)), "n": len(test),
                    "worst": max((table[best][m][0], m) for m in test)})
    return out


def cmd_cv(args) -> int:
    reps = []
    for p in sorted(args.cache.glob("*.pkl"), key=lambda p: int(p.stem)):
        with open(p, "rb") as fh:
            rec = pickle.load(fh)
        reps.append(Replay(rec, mp.load_human(args.data, rec["mesh"])))
    meshes = [r.r["mesh"] for r in reps]
    cats = {r.r["mesh"]: r.r["category"] for r in reps}
    grid = [g for g in rule_grid() if not args.only or any(g[0].startswith(p) for p in args.only.split(","))]
    table: dict = {}
    for name, kind, kw in grid:
        row = {}
        for rp in reps:
            ri, k = apply_rule(rp, RULES[kind], kw)
            row[rp.r["mesh"]] = (ri, min(rp.hk) <= k <= max(rp.hk), k)
        table[name] = row
    # the replay against the real pipeline at the default rule
    d = table["default tau1.5 rel0.4"]
    dk = sum(d[m][2] == rp.r["k_default"] for m, rp in zip(meshes, reps, strict=True))
    print(f"replay vs pipeline (default rule): RI {np.mean([d[m][0] for m in meshes]):.4f} vs "
          f"{np.mean([rp.r['RI_default'] for rp in reps]):.4f}; same k on {dk}/{len(reps)}")
    # oracle: the best k per mesh among the merge sequence's stops
    orc = []
    for rp in reps:
        c = rp.auto[0] if rp.auto else None
        if c is None:
            orc.append(rp.r["RI_default"])
            continue
        m = len(rp.seq(c))
        orc.append(min(rp.score({**{cc: 0 for cc in rp.auto}, c: n})[0] for n in range(m + 1)))
    print(f"oracle (best stop per mesh, first auto component): {np.mean(orc):.4f}")
    names = [g[0] for g in grid]
    plain = sorted(names, key=lambda n: np.mean([table[n][m][0] for m in meshes]))
    for n in plain[:args.top]:
        v = [table[n][m] for m in meshes]
        print(f"{n:32s} RI {np.mean([x[0] for x in v]):.4f} in range {sum(x[1] for x in v)}/{len(v)} "
              f">0.30 {sum(x[0] > 0.30 for x in v)}")
    pools = {"all": names}
    if args.pools:
        for item in args.pools.split(";"):
            key, _, pre = item.partition("=")
            pools[key] = [n for n in names if any(n.startswith(p) for p in pre.split(","))]
    result = {}
    for pool, pn in pools.items():
        lo = loco(table, meshes, cats, pn)
        ho = float(np.mean([r["held_out"] for r in lo]))
        inr = sum(r["in_range"] for r in lo)
        print(f"\nLOCO pool {pool} ({len(pn)} rules): held-out mean {ho:.4f}, in range {inr}/{len(meshes)}")
        for r in lo:
            print(f"  {r['category']:10s} {r['chosen']:32s} train {r['train']:.4f} held {r['held_out']:.4f} "
                  f"in {r['in_range']}/{r['n']} worst {r['worst'][1]} ({r['worst'][0]:.3f})")
        result[pool] = {"held_out": ho, "in_range": inr, "folds": lo}
    if args.json:
        args.json.write_text(json.dumps({"table": {n: {str(m): list(x) for m, x in row.items()}
                                                   for n, row in table.items()},
                                         "loco": result}, default=str))
    return 0


def _load_cache(path: Path, data: Path) -> list:
    out = []
    for p in sorted(path.glob("*.pkl"), key=lambda p: int(p.stem)):
        with open(p, "rb") as fh:
            rec = pickle.load(fh)
        out.append((rec, mp.load_human(data, rec["mesh"])))
    return out


def cmd_variants(args) -> int:
    """Merge-criterion variants for k = "auto": the cached over-segmentations merged again with
    module constants changed (``{"name": {"dualgraph.SDF_MERGE": 0.25}, ...}``), stopped by the
    default rule. Writes ``{name: {mesh: [RI, k in human range, k, category]}}``."""
    import importlib

    variants = json.loads(args.variants)
    cache = _load_cache(args.cache, args.data)
    table = {}
    for name, sets in variants.items():
        old = []
        for key, val in sets.items():
            mod, _, attr = key.rpartition(".")
            m = importlib.import_module(f"gpu_kernels.mesh.{mod}")
            old.append((m, attr, getattr(m, attr)))
            setattr(m, attr, val)
        rows = {}
        try:
            for rec, humans in cache:
                st: list = []
                _, merges = _bd.merge_weakest_boundaries(rec["gs"], rec["labels"], rec["targets"], rec["label_comp"],
                                                         strengths=st, min_area=_segment.MIN_PART_AREA)
                r2 = dict(rec, merges=merges, strengths=st, comp_of=[int(rec["label_comp"][k]) for k, _ in merges])
                rp = Replay(r2, humans)
                ri, k = apply_rule(rp, rule_default, {"tau": _segment.AUTO_K_STRENGTH, "rel": _segment.AUTO_K_RELATIVE})
                rows[rec["mesh"]] = (ri, bool(min(rp.hk) <= k <= max(rp.hk)), k, rec["category"])
        finally:
            for m, attr, val in old:
                setattr(m, attr, val)
        table[name] = rows
        _print_row(name, rows)
    if args.json:
        args.json.write_text(json.dumps(table))
    return 0


def cmd_starts(args) -> int:
    """k = "auto" from several over-segmentations (``--starts`` cluster counts) of each cached
    mesh's working resolution, its distances computed once: every start's merged result (saved
    under ``--out``), then for every set of ``--sets`` the medoid of its results
    (:func:`segment.choose_consensus`), carried to the input faces like the replay. Writes
    ``{name: {mesh: [RI, k in human range, k, category]}}`` (for ``loco-tables``)."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.jobs import as_progress
    from gpu_kernels.mesh.defaults import DEFAULT_EPSILON, DEFAULT_MAX_ITER, DEFAULT_UPDATE_POWER

    starts = [int(x) for x in args.starts.split(",")]
    sets = {"start " + "/".join(map(str, ss)) if len(ss) == 1 else "consensus " + "/".join(map(str, ss)): ss
            for ss in ([int(x) for x in g.split("/")] for g in [str(s) for s in starts] + args.sets.split(";") if g)}
    be = get_backend("cpu")
    args.out.mkdir(parents=True, exist_ok=True)
    table: dict = {n: {} for n in sets}
    saved = (_segment.AUTO_K_START, _segment.AUTO_K_STARTS)
    try:
        for rec, humans in _load_cache(args.cache, args.data):
            gs, out = rec["gs"], args.out / f"{rec['mesh']}.npz"
            if out.exists():
                labs = dict(np.load(out))
            else:
                prog = as_progress(None)
                dists = _segment.graph_distances(gs, "cpu-mt", be, prog, _segment.MIN_COMPONENT_FACES)
                labs = {}
                _segment.AUTO_K_STARTS = ()
                for st in starts:
                    _segment.AUTO_K_START = st
                    info = {"timings": {"apsp": 0.0, "clustering": 0.0, "cut": 0.0}, "warnings": []}
                    lab, P, reps, _ = _segment._cluster_graph(gs, "auto", DEFAULT_EPSILON, "cpu-mt", DEFAULT_MAX_ITER,
                                                              be, prog, info, DEFAULT_UPDATE_POWER, 1.0, dists)
                    labs[f"s{st}"] = np.asarray(_segment._finish_labels(gs, lab, P, reps, {"warnings": []})[0], np.int32)
                np.savez(out, **labs)
            hk = [int(np.unique(h).size) for h in humans]
            for name, ss in sets.items():
                cand = [labs[f"s{st}"] for st in ss]
                j = _segment.choose_consensus(gs, cand, rule="medoid")[0] if len(cand) > 1 else 0
                lab = cand[j][rec["in2w"]]
                k = int(np.unique(lab).size)
                table[name][rec["mesh"]] = (_ri_labels(lab, humans), bool(min(hk) <= k <= max(hk)), k, rec["category"])
    finally:
        _segment.AUTO_K_START, _segment.AUTO_K_STARTS = saved
    for name, rows in table.items():
        _print_row(name, rows)
    if args.json:
        args.json.write_text(json.dumps(table))
    return 0


def _ri_labels(labels, humans) -> float:
    return float(np.mean([rand_index_error(labels, h) for h in humans]))


def cmd_loco_tables(args) -> int:
    """LOCO over a pool of the rows of one or more tables (``variants`` / ``cv --json``)."""
    tabs: dict = {}
    for f in args.tables.split(","):
        t = json.loads(Path(f).read_text())
        tabs.update(t.get("table", t))
    pool = args.pool.split(",") if args.pool else list(tabs)
    meshes = sorted(tabs[pool[0]], key=int)
    cats = {m: mp.category_of(int(m)) for m in meshes}
    table = {n: {m: tuple(tabs[n][m][:3]) for m in meshes} for n in pool}
    lo = loco(table, meshes, cats, pool)
    print(f"LOCO over {pool}: held-out mean {np.mean([r['held_out'] for r in lo]):.4f}, "
          f"in range {sum(r['in_range'] for r in lo)}/{len(meshes)}")
    for r in lo:
        print(f"  {r['category']:10s} {r['chosen']:32s} train {r['train']:.4f} held {r['held_out']:.4f} "
              f"in {r['in_range']}/{r['n']} worst {r['worst'][1]} ({r['worst'][0]:.3f})")
    return 0


def _run_args(p) -> None:
    """The options of the subcommands that run the pipeline on meshes."""
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--ids", default="")
    p.add_argument("--stored", type=Path, default=STORED)
    p.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("cache")
    _run_args(a)
    b = sub.add_parser("cv")
    b.add_argument("--cache", type=Path, required=True)
    b.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    b.add_argument("--top", type=int, default=15)
    b.add_argument("--pools", default="")
    b.add_argument("--json", type=Path)
    b.add_argument("--only", default="", help="rule name prefixes to evaluate")
    e = sub.add_parser("cut-effect")
    _run_args(e)
    e.add_argument("--set", action="append", default=[], help="module.CONST=value, e.g. segment.REFINE_BAND=rings")
    g = sub.add_parser("proto-cache")
    _run_args(g)
    g.add_argument("--set", action="append", default=[], help="module.CONST=value, e.g. dualgraph.SDF_MERGE=0.25")
    g.add_argument("--no-refine", action="store_true", help="refine_boundaries=False")
    t = sub.add_parser("two-pass")
    _run_args(t)
    va = sub.add_parser("variants")
    va.add_argument("--cache", type=Path, required=True)
    va.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    va.add_argument("--variants", required=True, help='JSON: {"name": {"module.CONST": value}}')
    va.add_argument("--json", type=Path)
    sa = sub.add_parser("starts")
    sa.add_argument("--cache", type=Path, required=True)
    sa.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    sa.add_argument("--out", type=Path, required=True, help="folder for each mesh's results per start")
    sa.add_argument("--starts", default="20,24,30,36,40")
    sa.add_argument("--sets", default="24/30/36;20/30/40;20/24/30/36/40")
    sa.add_argument("--json", type=Path)
    lt = sub.add_parser("loco-tables")
    lt.add_argument("--tables", required=True)
    lt.add_argument("--pool", default="")
    args = ap.parse_args(argv)
    return {"variants": cmd_variants, "loco-tables": cmd_loco_tables, "cache": cmd_cache, "cv": cmd_cv, "cut-effect": cmd_cut_effect, "proto-cache": cmd_proto_cache,
            "two-pass": cmd_two_pass, "starts": cmd_starts}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
