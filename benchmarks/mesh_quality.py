"""Merge-stage screens for the mesh segmentation's quality (issue 22, session 5).

The pipeline's last decisions -- which over-segmented clusters merge, in which order, and
where k = "auto" stops -- run on a working resolution's clusters after the boundary cut.
This script records, per PSB mesh, those clusters for every clustering the default pipeline
does (k = "auto": the starts 24/30/36; the protocol's k: every over-segmentation factor of
every human k), then replays the merges under variants of the merge criterion and of the
stop rule, picks among the results exactly as the pipeline does (the medoid of the starts;
the most concave factor), carries the labels to the input faces by the nearest working face
and scores both modes against every human segmentation. Leave-one-category-out picks, per
held-out category, the variant with the best mean over the other 18.

    python benchmarks/mesh_quality.py cache --out /tmp/mq            # one pipeline run per mesh
    python benchmarks/mesh_quality.py screen --cache /tmp/mq --variants V.json --json out.json
    python benchmarks/mesh_psb.py --cv ...                           # the figure that counts
    python benchmarks/mesh_quality.py timing --files A.off,B.off --device cuda  # consensus cost

The replay leaves out the full-resolution boundary re-cut (its effect was 0.001-0.002,
``mesh_session3.md``), so its figures are screens; candidates that survive are scored by the
real pipeline (``mesh_psb.py --cv`` with ``set`` entries).
"""

from __future__ import annotations

import argparse
import importlib
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
from gpu_kernels.mesh.metrics import rand_index_error  # noqa: E402

STORED = ROOT / ".carry-mesh5" / "hyb.npz"


# --------------------------------------------------------------------------- cache
def _record(prep, k, oversegment=None):
    """Run ``segment_prepared(prep, k)`` and record each clustering's labels after the cut
    (before any merge), with its cluster counts and targets."""
    calls = []
    orig_cut, orig_assemble = _bd.resolve_fuzzy_regions, _segment._assemble_and_cut

    def assemble(graph, blocks, kused, targets, kk, epsilon, prog, info):
        res = orig_assemble(graph, blocks, kused, targets, kk, epsilon, prog, info)
        calls[-1].update(kused=list(map(int, kused)), targets=list(targets), final=np.asarray(res[0]).copy())
        return res

    def cut(graph, P, fuzzy, **kw):
        labels, st = orig_cut(graph, P, fuzzy, **kw)
        calls.append({"labels": np.asarray(labels).astype(np.int32).copy()})
        return labels, st

    # (the early cuts off: on a GPU they run on a host thread, in the order the clusterings
    # converge and beside the cuts of this thread, and ``calls[-1]`` would pair a cut with
    # another clustering's assembly; the records are in the clusterings' order)
    orig_early = _segment.EARLY_SETTLE
    _bd.resolve_fuzzy_regions, _segment._assemble_and_cut = cut, assemble
    _segment.EARLY_SETTLE = False
    try:
        seg = _segment.segment_prepared(prep, k=k, oversegment=oversegment, auto_layout="auto")
    finally:
        _bd.resolve_fuzzy_regions, _segment._assemble_and_cut = orig_cut, orig_assemble
        _segment.EARLY_SETTLE = orig_early
    return seg, [c for c in calls if "kused" in c]


def cache_mesh(data: Path, mesh_id: int, out: Path, oversegment=None, order_mix=None) -> dict:
    from scipy.spatial import cKDTree

    v, f = mp.load_mesh(data, mesh_id)
    humans = mp.load_human(data, mesh_id)
    hk = [int(np.unique(h).size) for h in humans]
    t0 = time.perf_counter()
    prep = _segment.prepare_mesh(v, f)
    if order_mix is not None:
        _geodesic_orders(prep, order_mix)
    graph = prep.graph
    if prep.working:
        gs = prep.working[0][1]
        near = prep.nearest[0] if prep.nearest and prep.nearest[0] is not None else \
            cKDTree(gs.centroids).query(graph.centroids, k=1)[1]
        g2w = np.asarray(near, dtype=np.int64)
    else:
        gs, g2w = graph, np.arange(graph.n, dtype=np.int64)
    in2w = np.zeros(f.shape[0], dtype=np.int64)
    in2w[prep.kept] = g2w
    dropped = prep.report["dropped_faces"]
    if len(dropped):
        cen = np.asarray(v, np.float64)[np.asarray(f, np.int64)[dropped]].mean(axis=1)
        in2w[dropped] = g2w[cKDTree(graph.centroids).query(cen, k=1)[1]]
    if oversegment:  # extra over-segmentation factors of the protocol's k only
        rec = {"mesh": mesh_id, "protocol": {k: _record(prep, k, oversegment)[1] for k in sorted(set(hk))}}
        with open(out / f"{mesh_id}.pkl", "wb") as fh:
            pickle.dump(rec, fh)
        return {"category": mp.category_of(mesh_id), "RI": float("nan"), "k_auto": 0, "RI_auto": float("nan"),
                "seconds": time.perf_counter() - t0}
    seg, auto_calls = _record(prep, "auto")
    rec = {"mesh": mesh_id, "category": mp.category_of(mesh_id), "gs": gs, "in2w": in2w, "hk": hk,
           "auto": auto_calls, "k_auto": int(seg.k),
           "RI_auto": float(np.mean([rand_index_error(seg.labels, h) for h in humans])), "protocol": {}}
    ri = {}
    for k in sorted(set(hk)):
        seg, calls = _record(prep, k)
        rec["protocol"][k] = calls
        ri[k] = float(np.mean([rand_index_error(seg.labels, h) for h in humans]))
    rec["RI"] = float(np.mean([ri[k] for k in hk]))
    rec["seconds"] = time.perf_counter() - t0
    with open(out / f"{mesh_id}.pkl", "wb") as fh:
        pickle.dump(rec, fh)
    return rec


def _geodesic_orders(prep, mix: float, count: int = 128) -> None:
    """Experiment: the clustering's initial representatives (the farthest-point order) taken
    on ``D / mean(D) + mix * Dg / mean(Dg)`` with ``Dg`` the geodesic-only distances of the
    working graph (``mix`` = inf: ``Dg`` alone) instead of on ``D``: representatives spread
    over the surface rather than crowding where the angular distance is large."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    from gpu_kernels.mesh.cluster import farthest_order

    gs = prep.working[0][1] if prep.working else prep.graph
    order, starts, sizes, local, arc_comp = _segment._component_index(gs)
    out = {}
    for c, D in prep.distances[0].items():
        m = arc_comp == c
        n = int(sizes[c])
        A = sp.coo_matrix((gs.geod[m], (local[gs.src[m]], local[gs.dst[m]])), shape=(n, n)).tocsr()
        Dg = dijkstra(A, directed=False).astype(np.float32)
        Dn = np.asarray(D, dtype=np.float32)
        M = Dg / Dg.mean() if not np.isfinite(mix) else Dn / Dn.mean() + np.float32(mix) * Dg / Dg.mean()
        out[c] = farthest_order(np.ascontiguousarray(M, dtype=np.float32), min(count, n))
    prep.orders = [out] + list(prep.orders[1:])


def cmd_cache(args) -> int:
    mp._cv_simplifier()
    mp._cv_ready["stored"] = str(args.stored)
    args.out.mkdir(parents=True, exist_ok=True)
    ids = [int(x) for x in args.ids.split(",")] if args.ids else mp.mesh_ids(args.data)
    for i in ids:
        if (args.out / f"{i}.pkl").exists():
            continue
        r = cache_mesh(args.data, i, args.out, tuple(map(float, args.oversegment.split(","))) if args.oversegment else None,
                       float(args.order_mix) if args.order_mix else None)
        print(f"{i:4d} {r['category']:10s} RI {r['RI']:.4f} auto k {r['k_auto']:3d} RI {r['RI_auto']:.4f} "
              f"{r['seconds']:.1f} s", flush=True)
    return 0


# --------------------------------------------------------------------------- replay
def _stop_default(st, tau, rel, small=None, lookahead=None, **_):
    """The pipeline's rule (:mod:`gpu_kernels.mesh.autok`, its module constants in force;
    ``lookahead``: ``autok.AUTO_K_LOOKAHEAD`` when None)."""
    from gpu_kernels.mesh import autok

    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    thr = max(tau, rel * autok.reference_strength(st, small))
    return autok.stop_index(st, thr, floor=tau, lookahead=lookahead)


def _stop_robust(st, tau, rel, small=None, min_small=0.0, rank=1, **_):
    """The default rule, its relative threshold taken from the ``rank``-th strongest merge
    among those whose smaller part holds at least ``min_small`` of the component's area."""
    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    ok = st if small is None else st[np.asarray(small) >= min_small]
    ref = np.sort(ok)[::-1][min(rank, ok.size) - 1] if ok.size else 0.0
    thr = max(tau, rel * ref)
    hit = np.flatnonzero(st >= thr)
    return int(hit[0]) if hit.size else int(st.size)


def _stop_weighted(st, tau, rel, small=None, s0=0.02, **_):
    """The default rule, its relative threshold taken from the strongest merge with each
    strength scaled by min(1, smaller part's area share / s0) (small parts count less)."""
    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    ref = float(np.max(st * np.minimum(1.0, np.asarray(small) / s0)))
    thr = max(tau, rel * ref)
    hit = np.flatnonzero(st >= thr)
    return int(hit[0]) if hit.size else int(st.size)


def _stop_elbow(st, tau, rel, small=None, **_):
    """The pipeline's ``AUTO_K_RULE = "elbow"`` (:func:`gpu_kernels.mesh.segment.elbow_stop`:
    Kneedle on the running maximum of the merge curve, at least the merges below tau)."""
    old = _segment.AUTO_K_STRENGTH
    _segment.AUTO_K_STRENGTH = tau
    try:
        return _segment.elbow_stop(st) if len(st) else 0
    finally:
        _segment.AUTO_K_STRENGTH = old


def _stop_jump(st, tau, rel, small=None, cap=None, s0=None, back=0, weighted=False, floor_thr=False, **_):
    """Session 6 experiment: stop at the merge whose strength jumps most above every
    boundary merged before it (largest ``log(st[i] / max(st[:i]))``) among the merges at
    least as strong as ``tau`` (and, with ``cap``, at most the default rule's stop + cap
    merges later and ``back`` merges earlier): the merge curve's biggest step rather than a
    fixed bar. ``cap=1`` is the pipeline's ``autok.AUTO_K_LOOKAHEAD = 1``."""
    st = np.asarray(st, dtype=np.float64)
    if st.size == 0:
        return 0
    cm = np.maximum.accumulate(np.r_[1e-9, st])[:-1]
    w = st if not weighted else st * np.minimum(1.0, np.asarray(small) / 0.03)
    jump = np.log(np.maximum(w, 1e-9) / np.maximum(cm, 1e-9))
    if floor_thr:  # candidates past the stop must reach the stop's bar, not only tau
        from gpu_kernels.mesh import autok
        tau = max(tau, rel * autok.reference_strength(st, small))
    cand = np.flatnonzero(st >= tau)
    if cand.size == 0:
        return int(st.size)
    if cap is not None:
        d = _stop_default(st, tau, rel, small, lookahead=0)
        cand = cand[(cand >= d - int(back)) & (cand <= d + int(cap))]
        if cand.size == 0:
            return d
    return int(cand[np.argmax(jump[cand])])


STOPS = {"default": _stop_default, "robust": _stop_robust, "weighted": _stop_weighted, "elbow": _stop_elbow,
         "jump": _stop_jump}


def _merge(gs, labels, kused, targets, auto: bool, stop: dict):
    """The pipeline's ``_merge_to_targets`` on recorded clusters, with the stop rule ``stop``."""
    labels, _ = _bd.merge_islands(gs, labels)
    label_comp = np.repeat(np.arange(len(kused)), kused)
    tg = {c: (min(2, int(kc)) if t == "auto" else int(t)) for c, (t, kc) in enumerate(zip(targets, kused, strict=True))}
    st: list = []
    merged, merges = _bd.merge_weakest_boundaries(gs if auto else _segment.k_merge_graph(gs), labels, tg, label_comp,
                                                  strengths=st, min_area=_segment.MIN_PART_AREA if auto
                                                  else max(_segment.MIN_PART_AREA, K_MIN_PART_SCALE / max(
                                                      [int(x) for x in targets if x != "auto"] or [1])),
                                                  area_gamma=0.0 if auto else K_AREA[0], area_s0=K_AREA[1])
    if not auto:
        return merged
    lab = np.asarray(labels).astype(np.int64)
    area = np.bincount(lab, weights=gs.areas, minlength=label_comp.size)
    comp_area = np.bincount(label_comp, weights=area)
    comp_of = [int(label_comp[keep]) for keep, _ in merges]
    small = []
    for keep, gone in merges:
        small.append(min(area[keep], area[gone]) / max(comp_area[label_comp[keep]], 1e-300))
        area[keep] += area[gone]
        area[gone] = 0.0
    fn = STOPS[stop.get("rule", "default")]
    kw = {"tau": _segment.AUTO_K_STRENGTH, "rel": _segment.AUTO_K_RELATIVE, **stop}
    n_keep = {}
    for c in {cc for cc, t in enumerate(targets) if t == "auto"}:
        idx = [j for j, cc in enumerate(comp_of) if cc == c]
        n_keep[c] = fn([st[j] for j in idx], small=[small[j] for j in idx], **kw)
    lab = np.asarray(labels).astype(np.int64).copy()
    seen: dict = {}
    for (keep, gone), c in zip(merges, comp_of, strict=True):
        seen[c] = seen.get(c, 0) + 1
        if c in n_keep and seen[c] > n_keep[c]:
            continue
        lab[lab == gone] = keep
    # each start's small parts absorbed before the medoid (the pipeline's segment.AUTO_K_MIN_PART)
    share = float(stop.get("absorb_each", _segment.AUTO_K_MIN_PART))
    return np.asarray(_segment.absorb_small_parts(gs, lab.astype(np.int32), label_comp, set(n_keep), share)[0],
                      dtype=np.int32)


def _merge_or_keep(gs, call, auto, stop):
    kused, targets = call["kused"], call["targets"]
    if auto or any(t != "auto" and a > t for a, t in zip(kused, targets, strict=True)):
        return _merge(gs, call["labels"], kused, targets, auto, stop)
    return call["labels"]


def _weakest_left(gs, lab) -> float:
    """The strength of the weakest boundary left between the parts (the next merge's)."""
    u, inv = np.unique(np.asarray(lab), return_inverse=True)
    if u.size < 2:
        return 0.0
    st: list = []
    lc = np.zeros(u.size, dtype=np.int64)
    _bd.merge_weakest_boundaries(gs, inv.astype(np.int32), {0: u.size - 1}, lc, strengths=st)
    return float(st[0]) if st else 0.0


def _starts_to_k(gs, auto_calls, k: int, stop: dict) -> list:
    """Session 6 experiment: the protocol's k from k = "auto"'s over-segmentations (24/30/36
    clusters) merged down to exactly k, one result per start; [] where a component would need
    more clusters than a start has (the factors' path is then used)."""
    sizes = np.bincount(gs.component, minlength=gs.n_components)
    careas = np.bincount(gs.component, weights=gs.areas, minlength=gs.n_components)
    tg = _segment._k_per_component(k, sizes, careas, [])
    out = []
    for c in auto_calls:
        if any(t > ku for t, ku in zip(tg, c["kused"], strict=True)):
            return []
        if stop.get("start_min") and k * float(stop["start_min"]) > min(c["kused"]):
            return []
        if stop.get("start_kmin") and k < int(stop["start_kmin"]):  # session 7: factors alone below this k
            return []
        out.append(_merge_or_keep(gs, {"labels": c["labels"], "kused": c["kused"], "targets": tg}, False, stop))
    return out


def replay_mesh(rec, humans, stop: dict, what=("auto", "protocol")) -> dict:
    gs = rec["gs"]
    if stop.get("extra"):  # calls of extra over-segmentation factors, from another cache
        with open(Path(stop["extra"]) / f"{rec['mesh']}.pkl", "rb") as fh:
            ext = pickle.load(fh)["protocol"]
        keep = stop.get("extra_keep")
        rec = dict(rec, protocol={k: [c for j, c in enumerate(calls + ext[k]) if keep is None or j in keep]
                                  for k, calls in rec["protocol"].items()})
    out = {}
    if "auto" in what:
        res = [_merge_or_keep(gs, c, True, stop) for c in rec["auto"]]
        j = _segment.choose_consensus(gs, res, rule="medoid")[0] if len(res) > 1 else 0
        if stop.get("auto_then_k"):  # experiment: k from the auto rule, the parts from the integer-k merges
            kk = int(np.unique(_bd.merge_islands(gs, res[j])[0]).size)
            res = _starts_to_k(gs, rec["auto"], kk, stop) or res
            j = _segment.choose_consensus(gs, res, rule="medoid")[0] if len(res) > 1 else 0
        if stop.get("auto_pick") == "vote" and len(res) > 1 and gs.n_components == 1:
            # session 7 experiment: the starts' boundary votes, merged down to the medoid's k
            kk = int(np.unique(_bd.merge_islands(gs, res[j])[0]).size)
            lab_v = vote_consensus(gs, [_bd.merge_islands(gs, x)[0] for x in res], {0: kk},
                                            float(stop.get("vote_min_area", _segment.MIN_PART_AREA)))
            if lab_v is not None:
                res = list(res)
                res[j] = lab_v
        if stop.get("absorb"):  # experiment: parts under this area share merged into a neighbour at the end
            r = _bd.merge_islands(gs, res[j])[0]
            u, inv = np.unique(r, return_inverse=True)
            share = np.bincount(inv, weights=gs.areas) / gs.areas.sum()
            big = int(np.count_nonzero(share >= float(stop["absorb"])))
            if 1 <= big < u.size and gs.n_components == 1:
                r = _bd.merge_weakest_boundaries(gs, inv.astype(np.int32), {0: big}, np.zeros(u.size, np.int64),
                                                 min_area=float(stop["absorb"]))[0]
            res = list(res)
            res[j] = r
        lab = _bd.merge_islands(gs, res[j])[0][rec["in2w"]]
        k = int(np.unique(lab).size)
        out.update(RI_auto=float(np.mean([rand_index_error(lab, h) for h in humans])), k_auto=k,
                   in_range=bool(min(rec["hk"]) <= k <= max(rec["hk"])))
    if "protocol" in what:
        ri = {}
        rule = stop.get("factor_rule", "concavity")
        src = stop.get("protocol_from", "factors")
        for k, calls in rec["protocol"].items():
            best = None
            starts = _starts_to_k(gs, rec["auto"], int(k), stop) if src != "factors" else None
            if starts:
                fac = [_merge_or_keep(gs, c, False, stop) for j, c in enumerate(calls)
                       if j not in stop.get("drop_factors", ())]
                labs = starts if src == "starts" else starts + fac
                pick = stop.get("protocol_pick", "medoid")
                if pick == "vote" and len(labs) > 1:  # session 7: boundary votes of every result
                    sizes = np.bincount(gs.component, minlength=gs.n_components)
                    careas = np.bincount(gs.component, weights=gs.areas, minlength=gs.n_components)
                    tg = dict(enumerate(_segment._k_per_component(int(k), sizes, careas, [])))
                    lab = vote_consensus(gs, [_bd.merge_islands(gs, x)[0] for x in labs], tg,
                                                  float(stop.get("vote_min_area", _segment.MIN_PART_AREA)))
                    if lab is None:
                        lab = labs[_segment.choose_consensus(gs, labs, rule="medoid")[0]]
                elif pick == "medoid" and len(labs) > 1:
                    lab = labs[_segment.choose_consensus(gs, labs, rule="medoid")[0]]
                else:
                    lab = max(labs, key=lambda x: (int(np.unique(x).size), _segment.boundary_concavity(gs, x)))
                lab = _bd.merge_islands(gs, lab)[0][rec["in2w"]]
                ri[int(k)] = float(np.mean([rand_index_error(lab, h) for h in humans]))
                continue
            labs = [_merge_or_keep(gs, c, False, stop) for c in calls]
            if rule.startswith("only"):  # one over-segmentation factor: "only0".."only3"
                labs = labs[min(int(rule[4:]), len(labs) - 1):][:1]
            for lab in labs:
                score = _weakest_left(gs, lab) if rule == "weakest" else _segment.boundary_concavity(gs, lab)
                key = (int(np.unique(lab).size), score)
                if best is None or key[0] > best[0][0] or (key[0] == best[0][0] and key[1] > best[0][1] + 1e-12):
                    best = (key, lab)
            if rule == "medoid" and len(labs) > 2:
                full = [x for x in labs if int(np.unique(x).size) == best[0][0]]
                if len(full) > 2:
                    best = (None, full[_segment.choose_consensus(gs, full, rule="medoid")[0]])
            lab = _bd.merge_islands(gs, best[1])[0][rec["in2w"]]
            ri[int(k)] = float(np.mean([rand_index_error(lab, h) for h in humans]))
        out["RI"] = float(np.mean([ri[int(k)] for k in rec["hk"]]))
    return out


#: session 7 experiment (rejected): an integer k's merges take a cluster under K_MIN_PART_SCALE / k of
#: its component's area for a sliver (0: off; a screen variant sets it with ``"kmin": x``)
K_MIN_PART_SCALE = 0.0
#: session 7 experiment (rejected): an integer k's merges weigh each boundary by the clusters' areas,
#: ``boundary.merge_weakest_boundaries(area_gamma=, area_s0=)`` (0: off; a variant sets it with
#: ``"k_area": [gamma, s0]``, or with the recorded ``"set": {"segment.K_AREA_GAMMA": g,
#: "segment.K_AREA_S0": s0}`` of ``results/mesh_quality_session7_replay_variants.txt``)
K_AREA = (0.0, 1.0)
#: switches removed from the library in session 8 (their screens lost): re-run them at this commit
REMOVED_AT = {"boundary.CONTRAST_C0_SCALE": "e8d27f4", "boundary.AREA_BEFORE_THICKNESS": "e8d27f4",
              "segment.K_STARTS_EXTRA": "e8d27f4"}


def vote_consensus(graph, labelings: list, targets: dict, min_area: float = 0.002,
                   max_fragments: int = 1500):
    """An integer k's results combined by boundary votes (session 7 experiment, ``K_CHOICE = "vote"``).

    Each dual arc's vote is the share of ``labelings`` that cut it. The faces that no labeling
    separates form fragments (connected over arcs with no vote); adjacent fragments are then
    merged, slivers under ``min_area`` of their component first (into the neighbour with the
    longest shared boundary), else the pair whose shared boundary has the lowest mean vote
    (length-weighted), until each component has its ``targets[c]`` parts. Returns the labels
    (0..), or None when there are more than ``max_fragments`` fragments."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    labs = [np.asarray(x) for x in labelings]
    s, d = graph.src, graph.dst
    vote = np.mean([(x[s] != x[d]) for x in labs], axis=0)
    keep = vote == 0
    A = coo_matrix((np.ones(int(keep.sum())), (s[keep], d[keep])), shape=(graph.n, graph.n))
    K, frag = connected_components(A, directed=False)
    if K > max_fragments:
        return None
    frag = frag.astype(np.int64)
    comp = np.zeros(K, dtype=np.int64)
    comp[frag] = graph.component
    length = graph.edge_length if graph.edge_length is not None else np.ones(graph.n_edges)
    a, b = frag[s], frag[d]
    cut = a != b
    key = np.minimum(a[cut], b[cut]) * K + np.maximum(a[cut], b[cut])
    BL = np.bincount(key, weights=length[cut], minlength=K * K).reshape(K, K)
    BV = np.bincount(key, weights=length[cut] * vote[cut], minlength=K * K).reshape(K, K)
    BL, BV = BL + BL.T, BV + BV.T
    area = np.bincount(frag, weights=graph.areas, minlength=K)
    comp_area = np.bincount(comp, weights=area)
    count = {int(c): int(np.count_nonzero(comp == c)) for c in targets}
    root = np.arange(K)
    alive = np.ones(K, dtype=bool)
    while True:
        over = [c for c in targets if count[c] > targets[c]]
        if not over:
            break
        mine = alive & np.isin(comp, over)
        frac = area / np.maximum(comp_area[comp], 1e-300)
        small = mine & (frac < min_area) & (BL.sum(axis=1) > 0)
        if small.any():
            g = int(np.flatnonzero(small)[np.argmin(frac[small])])
            k_ = int(np.argmax(BL[g]))
        else:
            M = np.where((BL > 0) & mine[:, None] & mine[None, :], BV / np.maximum(BL, 1e-300), np.inf)
            j = int(np.argmin(M))
            if not np.isfinite(M.flat[j]):
                break
            g, k_ = divmod(j, K)
            if area[g] > area[k_]:
                g, k_ = k_, g
        # fragment g joins k_
        for T in (BL, BV):
            T[k_] += T[g]
            T[:, k_] += T[:, g]
            T[k_, k_] = 0.0
            T[g] = 0.0
            T[:, g] = 0.0
        area[k_] += area[g]
        area[g] = 0.0
        alive[g] = False
        root[root == g] = k_
        count[int(comp[g])] -= 1
    lab = root[frag]
    return np.unique(lab, return_inverse=True)[1].astype(np.int32)



def _area_aware(contrast, gamma, s0):
    """A stand-in for boundary._thickness_contrast that also remaps each pair's strength x to
    s0 + (x - s0) * g with g = (share_A * share_B / 0.01) ** gamma: at equal strength a weak
    boundary between large parts merges earlier, a strong one later (the Rand Index weighs a
    wrong decision by the product of the two areas). Screens only."""
    state = {}

    def fn(graph, lab, ulo, uhi, K):
        base = contrast(graph, lab, ulo, uhi, K)
        area = np.bincount(lab, weights=graph.areas, minlength=K)
        key = id(graph)
        if key not in state:
            ca = np.bincount(graph.component, weights=graph.areas)
            state.clear()
            state[key] = ca[graph.component]
        lab_comp_area = np.zeros(K)
        lab_comp_area[lab] = state[key]
        g = (area[ulo] * area[uhi] / np.maximum(lab_comp_area[ulo] ** 2, 1e-300) / 0.01) ** gamma
        # the caller multiplies its strength x by the returned factor: return (s0 + (x b - s0) g) / x
        return _Remap(base, g, s0)

    return fn


class _Remap:
    """``x * _Remap(b, g, s0)`` is ``s0 + (x b - s0) g`` (numpy arrays x)."""

    __array_ufunc__ = None  # numpy defers x * self to __rmul__

    def __init__(self, b, g, s0):
        self.b, self.g, self.s0 = b, g, s0

    def __rmul__(self, x):
        return self.s0 + (np.asarray(x) * self.b - self.s0) * self.g


def _load(cache: Path, data: Path, ids=None):
    for p in sorted(cache.glob("*.pkl"), key=lambda p: int(p.stem)):
        if ids and int(p.stem) not in ids:
            continue
        with open(p, "rb") as fh:
            rec = pickle.load(fh)
        yield rec, mp.load_human(data, rec["mesh"])


def cmd_screen(args) -> int:
    """Each variant ``{"name": {"set": {"module.CONST": value}, "stop": {...}, "what": [...]}}``
    replayed on every cached mesh; rows ``{name: {mesh: {RI, RI_auto, k_auto, in_range, category}}}``."""
    variants = json.loads(Path(args.variants).read_text() if args.variants.endswith(".json") else args.variants)
    ids = {int(x) for x in args.ids.split(",")} if args.ids else None
    recs = list(_load(args.cache, args.data, ids))
    table = json.loads(args.json.read_text()) if args.json and args.json.exists() else {}
    for name, spec in variants.items():
        old = []
        me = sys.modules[__name__]
        sets = dict(spec.get("set", {}))
        k_area = spec.get("k_area")
        if "segment.K_AREA_GAMMA" in sets or "segment.K_AREA_S0" in sets:
            k_area = (sets.pop("segment.K_AREA_GAMMA", 0.0), sets.pop("segment.K_AREA_S0", 1.0))
        if k_area is not None:
            old.append((me, "K_AREA", me.K_AREA))
            me.K_AREA = (float(k_area[0]), float(k_area[1]))
        for key, val in sets.items():
            if key in REMOVED_AT:
                raise SystemExit(f"variant {name!r}: {key} was removed in session 8; re-run it at commit "
                                 f"{REMOVED_AT[key]}")
            mod, _, attr = key.rpartition(".")
            m = importlib.import_module(f"gpu_kernels.mesh.{mod}")
            old.append((m, attr, getattr(m, attr)))
            setattr(m, attr, tuple(val) if isinstance(val, list) else val)
        if spec.get("kmin"):  # session 7 experiment: K_MIN_PART_SCALE
            old.append((me, "K_MIN_PART_SCALE", me.K_MIN_PART_SCALE))
            me.K_MIN_PART_SCALE = float(spec["kmin"])
        if spec.get("area_gamma"):  # experiment: area-aware merge order (arc path, strength remapped)
            old.append((_bd, "_merge_tables", _bd._merge_tables))
            old.append((_bd, "_thickness_contrast", _bd._thickness_contrast))
            _bd._merge_tables = _bd._merge_arcs
            _bd._thickness_contrast = _area_aware(_bd._thickness_contrast, float(spec["area_gamma"]),
                                                  float(spec.get("area_s0", 1.5)))
        rows = {}
        t0 = time.perf_counter()
        try:
            for rec, humans in recs:
                r = replay_mesh(rec, humans, spec.get("stop", {}), tuple(spec.get("what", ("auto", "protocol"))))
                r["category"] = rec["category"]
                rows[str(rec["mesh"])] = r
        finally:
            for m, attr, val in old:
                setattr(m, attr, val)
        table[name] = rows
        _summary(name, rows, time.perf_counter() - t0)
        if args.json:
            args.json.write_text(json.dumps(table))
    return 0


def _summary(name, rows, secs=0.0) -> None:
    ri = [r["RI"] for r in rows.values() if "RI" in r]
    ra = [r["RI_auto"] for r in rows.values() if "RI_auto" in r]
    inr = sum(r.get("in_range", False) for r in rows.values())
    over = sum(r.get("RI_auto", 0) > 0.30 for r in rows.values())
    print(f"{name:40s} n {len(rows):3d} protocol {np.mean(ri) if ri else float('nan'):.4f} "
          f"auto {np.mean(ra) if ra else float('nan'):.4f} in range {inr} >0.30(auto) {over}  {secs:.0f} s", flush=True)


def loco(table: dict, names: list, key: str) -> tuple[float, list]:
    """Leave one category out: per category, the name with the best mean ``key`` over the
    other categories' meshes, scored on the held-out category."""
    meshes = sorted(table[names[0]], key=int)
    cats = {m: table[names[0]][m]["category"] for m in meshes}
    out = []
    for cat in sorted(set(cats.values())):
        train = [m for m in meshes if cats[m] != cat]
        held = [m for m in meshes if cats[m] == cat]
        best = min(names, key=lambda n: np.mean([table[n][m][key] for m in train]))
        out.append((cat, best, float(np.mean([table[best][m][key] for m in held])),
                    sum(table[best][m].get("in_range", False) for m in held) if key == "RI_auto" else None,
                    max((table[best][m][key], m) for m in held)))
    return float(np.mean([o[2] for o in out])), out


def cmd_loco(args) -> int:
    table = json.loads(args.json.read_text())
    names = args.pool.split(",") if args.pool else list(table)
    for key in ("RI", "RI_auto"):
        if not all(key in next(iter(table[n].values())) for n in names):
            continue
        mean, out = loco(table, names, key)
        inr = sum(o[3] or 0 for o in out)
        print(f"LOCO {key} over {names}: held-out mean {mean:.4f}" + (f", in range {inr}" if key == "RI_auto" else ""))
        for cat, best, held, n_in, worst in out:
            print(f"  {cat:10s} {best:36s} held {held:.4f} worst {worst[1]} ({worst[0]:.3f})"
                  + (f" in {n_in}/4" if n_in is not None else ""))
    return 0


# --------------------------------------------------------------------------- timing
def cmd_timing(args) -> int:
    """End to end from the file (read + ``segment_mesh``, colours included), one warm-up and
    the best of ``--repeat``, for each k, each ``--sets`` entry (module constants as in
    ``mesh_psb.py --set``; the empty entry is the defaults) and ``consensus=True``
    (``--consensus``): what the three working resolutions, or another setting, cost."""
    from app.io.mesh_io import read_mesh
    from gpu_kernels.mesh.segment import segment_mesh

    rows = []
    variants = [(False, x) for x in args.sets.split(";")] + ([(True, "")] if args.consensus else [])
    for path in args.files.split(","):
        for k in args.k.split(","):
            kk = k if k == "auto" else int(k)
            for cons, setting in variants:
                snap = mp._settings_snapshot([setting] if setting else [])
                mp._apply_settings([setting] if setting else [])

                def once(path=path, kk=kk, cons=cons):
                    t0 = time.perf_counter()
                    v, f = read_mesh(path)
                    seg = segment_mesh(v, f, k=kk, device=args.device, consensus=cons)
                    return time.perf_counter() - t0, seg, len(f)

                try:
                    once()
                    best = min((once() for _ in range(max(1, args.repeat))), key=lambda r: r[0])
                finally:
                    for m, attr, old in snap:
                        setattr(m, attr, old)
                row = {"file": Path(path).name, "faces": best[2], "k": k, "consensus": cons, "set": setting,
                       "device": args.device, "total_s": best[0], "k_out": int(best[1].k)}
                rows.append(row)
                print(f"timing {row['file']} ({row['faces']} faces) k={k} consensus={cons} {setting or 'defaults'}: "
                      f"{best[0]:.3f} s (k out {row['k_out']})", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("cache")
    a.add_argument("--out", type=Path, required=True)
    a.add_argument("--ids", default="")
    a.add_argument("--stored", type=Path, default=STORED)
    a.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    a.add_argument("--oversegment", default="", help="record only the protocol's k with these factors (extra factors)")
    a.add_argument("--order-mix", default="", help="experiment: initial representatives from D + mix x geodesic ('inf': geodesic)")
    s = sub.add_parser("screen")
    s.add_argument("--cache", type=Path, required=True)
    s.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    s.add_argument("--variants", required=True, help='JSON or a .json file: {"name": {"set": {...}, "stop": {...}}}')
    s.add_argument("--ids", default="")
    s.add_argument("--json", type=Path)
    lo = sub.add_parser("loco")
    lo.add_argument("--json", type=Path, required=True)
    lo.add_argument("--pool", default="")
    t = sub.add_parser("timing")
    t.add_argument("--files", required=True)
    t.add_argument("--k", default="auto,6")
    t.add_argument("--device", default="cpu")
    t.add_argument("--repeat", type=int, default=3)
    t.add_argument("--sets", default="", help="';'-separated module settings to time besides the defaults ('' = defaults)")
    t.add_argument("--consensus", action="store_true", help="also time consensus=True")
    t.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    return {"cache": cmd_cache, "screen": cmd_screen, "loco": cmd_loco, "timing": cmd_timing}[args.cmd](args)


if __name__ == "__main__":
    raise SystemExit(main())
