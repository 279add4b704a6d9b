"""Exact boundaries between fuzzy clusters by minimum cuts (Katz & Tal 2003), and the
connectivity clean-up of hard labels.

A face is *fuzzy* when its two highest memberships differ by at most ``epsilon`` (after
renormalising them over the pair, see :func:`fuzzy_faces`). Fuzzy faces are grouped by
their two best clusters ``{A, B}``; each connected group is split by a minimum s-t cut on
the dual graph, with capacity ``1 / (1 + Ang / avg(Ang))`` between neighbours (cheap to cut
along concave, sharp creases) and infinite capacity from the already-assigned faces labelled
A (source) and B (sink) that border it. Regions where several clusters meet are thus
resolved pairwise, by the two top memberships of each face.

Capacities are scaled to integers for :func:`scipy.sparse.csgraph.maximum_flow`. This stage
runs on the CPU (its graphs are small and irregular); the memberships come to the host.

:func:`merge_islands` then makes every label one connected patch per mesh component: each
smaller patch of a label is merged into the neighbouring label it shares most dual arcs
with, and the count is reported.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, connected_components, maximum_flow

from gpu_kernels.env import flag
from gpu_kernels.jobs import as_progress
from gpu_kernels.mesh.dualgraph import DualGraph

__all__ = ["cut_capacity", "fuzzy_faces", "resolve_fuzzy_regions", "merge_islands", "dilate",
           "merge_weakest_boundaries", "part_memberships"]

CAP_SCALE = 1000
#: the cut's graph searches (:func:`_min_cut_source_side`, :func:`arc_components`) as compiled
#: loops (:mod:`gpu_kernels.mesh._numba_cut`) where numba imports: the same results as SciPy's,
#: without building sparse matrices (issue 20). ``GPULAB_MESH_NUMBA=0`` or False: SciPy only
COMPILED = flag("GPULAB_MESH_NUMBA", True)
_KERNELS: list = []


def _optional(cache: list, name: str):
    """The module ``gpu_kernels.mesh.<name>`` (imported once, kept in ``cache``), or None where it does not
    import (numba missing or broken) or :data:`COMPILED` is off."""
    if not COMPILED:
        return None
    if not cache:
        from gpu_kernels.mesh.learned import FeatureColumnsError

        try:
            mod = importlib.import_module(f"gpu_kernels.mesh.{name}")
        except FeatureColumnsError:
            raise                    # the compiled loop out of step with the features: a developer's error
        except Exception:  # noqa: BLE001 - numba absent or broken: the NumPy / SciPy paths
            mod = None
        cache.append(mod)
    return cache[0]


def compiled():
    """The compiled searches (:mod:`gpu_kernels.mesh._numba_cut`), or None (numba missing or
    broken, or :data:`COMPILED` off): then SciPy's."""
    return _optional(_KERNELS, "_numba_cut")
#: "batched": every fuzzy region is cut in one maximum-flow problem (one scipy call: regions
#: are disjoint, each between its own two labels, against the labels its neighbours had
#: before the cut); "sequential": one problem per region, largest first, each seeing the
#: earlier regions' new labels (one scipy call per region: about 3 ms each)
CUT_MODE = "batched"
MERGE_CRITERION = "contrast"
#: "smooth": merge decisions use :meth:`DualGraph.smooth_concavity` (measured over the
#: reference spacing, independent of the triangulation); "arc": the bend of each arc
MERGE_CONCAVITY = "smooth"


def merge_concavity(graph: DualGraph) -> np.ndarray:
    """(E,) the concavity that merge decisions compare (see ``MERGE_CONCAVITY``)."""
    if MERGE_CONCAVITY == "smooth" and graph.ref_scale > 0:
        return graph.smooth_concavity()
    return graph.concavity
INF_CAP = 1 << 29


def cut_capacity(graph: DualGraph) -> np.ndarray:
    """Per-arc cut capacity ``1 / (1 + Ang / avg(Ang))`` (1 on a flat mesh)."""
    if graph.avg_ang > 0:
        return 1.0 / (1.0 + graph.ang / graph.avg_ang)
    return np.ones(graph.n_edges)


def fuzzy_faces(P: np.ndarray, epsilon: float, *, pairwise: bool = True) -> np.ndarray:
    """(F,) bool: the face's two highest memberships differ by at most ``epsilon``.

    With ``pairwise`` (the default) the two memberships are first renormalised over the pair,
    ``(p1 - p2) / (p1 + p2) <= epsilon``, which is Katz & Tal's binary rule applied to the two
    nearest clusters (``(d2 - d1) / (d1 + d2)`` with ``P ~ 1/d``). It does not depend on how
    many other clusters there are; the raw difference ``p1 - p2`` shrinks as K grows, so with
    many clusters nearly every face would be fuzzy.
    """
    P = np.asarray(P)
    if P.shape[1] < 2:
        return np.zeros(P.shape[0], dtype=bool)
    p1, p2, _, _ = _top_two(P)
    diff = p1 - p2
    if pairwise:
        ssum = p1 + p2
        diff = diff / np.where(ssum > 0, ssum, 1.0)
    return diff <= epsilon


def _top_two(P: np.ndarray):
    """``(p1, p2, i1, i2)``: each row's highest and second-highest value and their columns (the
    first column of a repeated value, a repeated maximum both): ``-np.partition(-P, 1,
    axis=1)[:, :2]`` and the first two columns of a stable ``argsort(-P)``, compiled
    (``_numba_cut.top_two``) for float memberships, NumPy for any other real dtype."""
    kc = compiled()
    if kc is not None and P.dtype in (np.float32, np.float64):
        return kc.top_two(np.ascontiguousarray(P))
    rows = np.arange(P.shape[0])
    i1 = P.argmax(axis=1)
    Q = P.astype(np.result_type(P.dtype, np.float32))  # (a copy; -inf needs a float type)
    Q[rows, i1] = -np.inf
    i2 = Q.argmax(axis=1)
    return P[rows, i1], Q[rows, i2], i1, i2


def dilate(graph: DualGraph, mask: np.ndarray, rings: int) -> np.ndarray:
    """Grow a face mask by ``rings`` dual-graph neighbourhoods."""
    m = np.asarray(mask, dtype=bool).copy()
    if rings <= 0 or graph.n_edges == 0:
        return m
    s, d = graph.src, graph.dst
    for _ in range(int(rings)):
        grow = m.copy()
        grow[d[m[s]]] = True
        grow[s[m[d]]] = True
        m = grow
    return m


def _two_best(P: np.ndarray) -> np.ndarray:
    """(F, 2) each row's highest and second-highest column (the first of equal values)."""
    if P.shape[1] == 1:
        return np.zeros((P.shape[0], 2), dtype=np.int64)
    _, _, i1, i2 = _top_two(P)
    return np.stack([i1, i2], axis=1)


def _min_cut_source_side(m: int, ei, ej, cap, src_cap, snk_cap) -> np.ndarray:
    """Min s-t cut on m nodes. ``ei, ej, cap``: undirected interior arcs (integer caps);
    ``src_cap``/``snk_cap``: (m,) terminal capacities. Returns the (m,) source-side mask: the
    faces the source reaches in the residual network (the same for every maximum flow)."""
    kc = compiled()
    if kc is not None:
        def clip(x):
            return np.minimum(np.asarray(x, dtype=np.int64), INF_CAP)

        return kc.min_cut_source_side(int(m), np.asarray(ei, dtype=np.int64), np.asarray(ej, dtype=np.int64),
                                      clip(cap), clip(src_cap), clip(snk_cap))
    s, t = m, m + 1
    rows = [ei, ej]
    cols = [ej, ei]
    vals = [cap, cap]
    ns = np.flatnonzero(src_cap > 0)
    nt = np.flatnonzero(snk_cap > 0)
    rows += [np.full(ns.size, s), nt]
    cols += [ns, np.full(nt.size, t)]
    vals += [src_cap[ns], snk_cap[nt]]
    r = np.concatenate(rows).astype(np.int64)
    c = np.concatenate(cols).astype(np.int64)
    v = np.minimum(np.concatenate(vals), INF_CAP).astype(np.int64)
    C = sp.csr_matrix((v, (r, c)), shape=(m + 2, m + 2))
    C.sum_duplicates()
    C.data = np.minimum(C.data, INF_CAP).astype(np.int32)
    res = maximum_flow(C, s, t)
    flow = res.flow.tocsr()
    # residual capacity: C - flow, plus reverse arcs (flow is skew-symmetric)
    R = (C.astype(np.int64) - flow.astype(np.int64)).tocsr()
    R.data = np.where(R.data > 0, 1, 0).astype(np.int8)
    R.eliminate_zeros()
    reach = breadth_first_order(R, s, directed=True, return_predecessors=False)
    side = np.zeros(m + 2, dtype=bool)
    side[reach] = True
    return side[:m]


def resolve_fuzzy_regions(graph: DualGraph, P: np.ndarray, fuzzy: np.ndarray,
                          labels: np.ndarray | None = None, *, progress=None) -> tuple[np.ndarray, dict]:
    """Hard labels with every fuzzy region split by minimum cuts.

    The fuzzy faces are grouped by their two best clusters ``{A, B}``; each connected group
    is one region, cut between its neighbours labelled A (source) and B (sink). Regions
    are processed largest first and later regions see the earlier regions' new labels.
    A region that borders only A (or only B) joins it; one with neither keeps its labels.

    Parameters
    ----------
    graph : DualGraph
    P : (F, K) memberships (host array)
    fuzzy : (F,) bool faces to re-decide
    labels : (F,) initial hard labels (default: argmax of P); non-fuzzy faces keep theirs.

    Returns
    -------
    labels : (F,) int32
    stats : dict with ``n_regions``, ``n_cuts``, ``n_fuzzy``
    """
    prog = as_progress(progress)
    P = np.asarray(P, dtype=np.float32)
    F, K = P.shape
    lab = (np.argmax(P, axis=1) if labels is None else np.asarray(labels)).astype(np.int64).copy()
    fuzzy = np.asarray(fuzzy, dtype=bool)
    stats = {"n_fuzzy": int(fuzzy.sum()), "n_regions": 0, "n_cuts": 0}
    if not fuzzy.any() or K < 2 or graph.n_edges == 0:
        return lab.astype(np.int32), stats
    capf = cut_capacity(graph)
    capi = np.maximum(np.rint(capf * CAP_SCALE), 1).astype(np.int64)
    s, d = graph.src, graph.dst
    # the two best clusters of the fuzzy faces (the only ones read)
    best2 = np.zeros((F, 2), dtype=np.int64)
    best2[fuzzy] = np.sort(_two_best(P[fuzzy]), axis=1)
    pair = np.where(fuzzy, best2[:, 0] * K + best2[:, 1], -1)
    # regions: connected faces with the same (fuzzy) pair
    inner = (pair[s] >= 0) & (pair[s] == pair[d])
    fidx = np.flatnonzero(fuzzy)
    loc = np.full(F, -1, dtype=np.int64)
    loc[fidx] = np.arange(fidx.size)
    kc = compiled()
    if kc is not None:
        nreg, reg = kc.components(fidx.size, loc[s[inner]], loc[d[inner]], np.ones(int(inner.sum()), dtype=bool))
    else:
        A = sp.coo_matrix((np.ones(int(inner.sum())), (loc[s[inner]], loc[d[inner]])),
                          shape=(fidx.size, fidx.size))
        nreg, reg = connected_components(A, directed=False)
    stats["n_regions"] = int(nreg)
    region_of = np.full(F, -1, dtype=np.int64)
    region_of[fidx] = reg
    ia = np.flatnonzero(inner)
    # border arcs of each region: (face in region, face outside it, capacity)
    rs, rd = region_of[s], region_of[d]
    cross = rs != rd
    b1 = np.flatnonzero(cross & (rs >= 0))
    b2 = np.flatnonzero(cross & (rd >= 0))
    bf = np.concatenate([s[b1], d[b2]])
    bx = np.concatenate([d[b1], s[b2]])
    bc = np.concatenate([capi[b1], capi[b2]])
    b_reg = region_of[bf]
    if CUT_MODE == "batched":  # one problem: the arcs' order does not matter (sums and a canonical matrix)
        lab = _cut_batched(lab, fidx, reg, nreg, best2, bf, bx, bc, b_reg, ia, region_of, capi, s, d, stats)
        prog.update(1.0, "boundary cut")
        return lab.astype(np.int32), stats
    face_order = np.argsort(reg, kind="stable")
    face_starts = np.searchsorted(reg[face_order], np.arange(nreg + 1))
    ia_reg = region_of[s[ia]]
    o = np.argsort(ia_reg, kind="stable")
    ia = ia[o]
    ia_starts = np.searchsorted(ia_reg[o], np.arange(nreg + 1))
    o = np.argsort(b_reg, kind="stable")
    bf, bx, bc, b_reg = bf[o], bx[o], bc[o], b_reg[o]
    b_starts = np.searchsorted(b_reg, np.arange(nreg + 1))
    sizes = np.diff(face_starts)
    for it, r in enumerate(np.argsort(-sizes, kind="stable")):
        if it % 64 == 0:
            prog.update(it / nreg, "boundary cut")
        faces_r = fidx[face_order[face_starts[r]:face_starts[r + 1]]]
        a_lab, b_lab = best2[faces_r[0]]
        bsl = slice(b_starts[r], b_starts[r + 1])
        bfr, bxr, bcr = bf[bsl], bx[bsl], bc[bsl]
        other = lab[bxr]
        to_a = other == a_lab
        to_b = other == b_lab
        if not to_a.any() and not to_b.any():
            continue
        if not to_b.any():
            lab[faces_r] = a_lab
            continue
        if not to_a.any():
            lab[faces_r] = b_lab
            continue
        m = faces_r.size
        lid = np.full(F, -1, dtype=np.int64)
        lid[faces_r] = np.arange(m)
        arcs = ia[ia_starts[r]:ia_starts[r + 1]]
        src_cap = np.zeros(m, dtype=np.int64)
        snk_cap = np.zeros(m, dtype=np.int64)
        np.add.at(src_cap, lid[bfr[to_a]], bcr[to_a])
        np.add.at(snk_cap, lid[bfr[to_b]], bcr[to_b])
        side = _min_cut_source_side(m, lid[s[arcs]], lid[d[arcs]], capi[arcs], src_cap, snk_cap)
        stats["n_cuts"] += 1
        lab[faces_r] = np.where(side, a_lab, b_lab)
    prog.update(1.0, "boundary cut")
    return lab.astype(np.int32), stats


def _cut_batched(lab, fidx, reg, nreg, best2, bf, bx, bc, b_reg, ia, region_of, capi, s, d, stats):
    """All regions' cuts as one maximum-flow problem (``CUT_MODE = "batched"``).

    Node i is fuzzy face ``fidx[i]``; the source stands for each region's first label A, the
    sink for its second B. A region bordering only A (only B) joins it; one bordering neither
    keeps its labels. Arcs between regions are left out (their two sides are decided between
    different label pairs)."""
    m = fidx.size
    a_of = best2[fidx, 0]
    b_of = best2[fidx, 1]
    other = lab[bx]
    node = np.searchsorted(fidx, bf)
    to_a = other == a_of[node]
    to_b = other == b_of[node]
    has_a = np.bincount(b_reg[to_a], minlength=nreg) > 0
    has_b = np.bincount(b_reg[to_b], minlength=nreg) > 0
    only_a = has_a & ~has_b
    only_b = has_b & ~has_a
    both = has_a & has_b
    new = lab[fidx].copy()
    new[only_a[reg]] = a_of[only_a[reg]]
    new[only_b[reg]] = b_of[only_b[reg]]
    cut = both[reg]
    if cut.any():
        src_cap = np.bincount(node[to_a], weights=bc[to_a], minlength=m).astype(np.int64)
        snk_cap = np.bincount(node[to_b], weights=bc[to_b], minlength=m).astype(np.int64)
        src_cap[~cut] = 0
        snk_cap[~cut] = 0
        keep = cut[np.searchsorted(fidx, s[ia])]
        arcs = ia[keep]
        side = _min_cut_source_side(m, np.searchsorted(fidx, s[arcs]), np.searchsorted(fidx, d[arcs]),
                                    capi[arcs], src_cap, snk_cap)
        new[cut] = np.where(side[cut], a_of[cut], b_of[cut])
        stats["n_cuts"] += int(np.count_nonzero(both))
    lab[fidx] = new
    return lab


def arc_components(graph: DualGraph, keep: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the faces over the arcs where ``keep`` is true:
    ``(n, component of every face)``, numbered as :func:`scipy.sparse.csgraph.connected_components`
    numbers them. The symmetric sparse layout of the arcs is built once per graph (and kept
    on it), so a call only selects entries: no sorting (issue 20: merge_islands runs a few
    times per k edit); compiled (:func:`compiled`) it is one union-find over the arcs."""
    kc = compiled()
    if kc is not None:
        return kc.components(graph.n, graph.src, graph.dst, np.asarray(keep, dtype=bool))
    lay = getattr(graph, "_sym_layout", None)
    if lay is None:
        E = graph.n_edges
        rows = np.concatenate([graph.src, graph.dst])
        cols = np.concatenate([graph.dst, graph.src])
        o = np.lexsort((cols, rows))
        lay = (rows[o], cols[o].astype(np.int32), np.concatenate([np.arange(E), np.arange(E)])[o])
        graph._sym_layout = lay
    rows, cols, arc = lay
    sel = np.asarray(keep, dtype=bool)[arc]
    F = graph.n
    indptr = np.zeros(F + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows[sel], minlength=F), out=indptr[1:])
    A = sp.csr_matrix((np.ones(int(indptr[-1]), dtype=np.int8), cols[sel], indptr), shape=(F, F))
    return connected_components(A, directed=False)


def merge_islands(graph: DualGraph, labels: np.ndarray, *, max_rounds: int = 10) -> tuple[np.ndarray, dict]:
    """Make each label one connected patch (per mesh component).

    Every patch of a label other than its largest (by area) is merged into the neighbouring
    label with which it shares the most dual arcs. Returns ``(labels, stats)`` with
    ``n_islands_merged`` and ``area_merged`` (fraction of the total area).
    """
    lab = np.asarray(labels).astype(np.int64).copy()
    s, d = graph.src, graph.dst
    areas = graph.areas
    total_area = float(areas.sum()) or 1.0
    n_merged = 0
    area_merged = 0.0
    for _ in range(max_rounds):
        same = lab[s] == lab[d]
        npatch, patch = arc_components(graph, same)
        # largest patch (by area) per label
        parea = np.bincount(patch, weights=areas, minlength=npatch)
        plabel = np.zeros(npatch, dtype=np.int64)
        plabel[patch] = lab
        # components of the mesh: a label lives in one mesh component (labels are per component)
        order = np.lexsort((-parea, plabel))
        first = np.r_[True, plabel[order][1:] != plabel[order][:-1]]
        main = np.zeros(npatch, dtype=bool)
        main[order[first]] = True
        if main.all():
            break
        # neighbouring labels of stray patches, weighted by shared arc count
        diff = ~same
        ps = np.concatenate([patch[s[diff]], patch[d[diff]]])
        nl = np.concatenate([lab[d[diff]], lab[s[diff]]])
        stray = ~main[ps]
        ps, nl = ps[stray], nl[stray]
        if ps.size == 0:
            break  # stray patches with no other-label neighbour (isolated): leave them
        key = ps * (lab.max() + 1) + nl
        uk, cnt = np.unique(key, return_counts=True)
        kp, kl = uk // (lab.max() + 1), uk % (lab.max() + 1)
        o = np.lexsort((-cnt, kp))
        firstp = np.r_[True, kp[o][1:] != kp[o][:-1]]
        target = np.full(npatch, -1, dtype=np.int64)
        target[kp[o][firstp]] = kl[o][firstp]
        move = target[patch] >= 0
        n_merged += int(np.count_nonzero((target >= 0) & ~main))
        area_merged += float(areas[move].sum())
        lab[move] = target[patch][move]
    return lab.astype(np.int32), {"n_islands_merged": n_merged,
                                  "area_merged": area_merged / total_area}


def _thickness_contrast(graph: DualGraph, lab, ulo, uhi, K: int):
    """``1 + SDF_MERGE * d`` per adjacent pair, ``d = |mean log thickness
    of A - of B|`` (1 when off)."""
    from gpu_kernels.mesh import dualgraph

    th = getattr(graph, "thickness", None)
    if th is None or dualgraph.SDF_MERGE <= 0:
        return 1.0
    lg = np.log(np.maximum(th, 1e-300)) * graph.areas
    m = np.bincount(lab, weights=lg, minlength=K) / np.maximum(np.bincount(lab, weights=graph.areas, minlength=K), 1e-300)
    d = np.abs(m[ulo] - m[uhi])
    return 1.0 + dualgraph.SDF_MERGE * d


def merge_weakest_boundaries(graph: DualGraph, labels: np.ndarray, targets: dict,
                             label_component: np.ndarray, *, stop: dict | None = None,
                             strengths: list | None = None,
                             min_area: float = 0.0, area_gamma: float = 0.0,
                             area_s0: float = 1.0, progress=None) -> tuple[np.ndarray, list]:
    """Merge adjacent clusters along their least concave boundary until each mesh component
    has its target number of clusters.

    Each step merges the adjacent pair A, B whose boundary is the *weakest separation*:
    the largest ``sum(len * cap) / min(perimeter(A), perimeter(B))`` over the dual arcs
    between them, with the cut capacity ``cap = 1 / (1 + Ang / avg(Ang))`` (near 1 on flat
    or smooth surface, small across concave creases) and the edge length ``len``. Parts meet
    at concave creases (the minima rule), so a boundary that runs over smooth surface and
    makes up much of a cluster's outline is the first to go.

    Parameters
    ----------
    labels : (F,) hard labels 0..K-1
    targets : {component id: wanted cluster count}
    label_component : (K,) mesh component of each label
    stop : {component id: strength}, optional
        Merge in that component only while its weakest boundary is weaker than this
        (``k = "auto"``); ``targets`` is then the least number of clusters kept.
    strengths : list, optional
        Receives the strength of each merged boundary, in order.
    min_area : float
        A cluster with less than this fraction of its component's area is a sliver, not a
        part: while there are more clusters than the target, slivers are merged first (the
        smallest first), into the neighbour they share the longest boundary with.
    area_gamma, area_s0 : float
        Weigh each boundary's strength by the two clusters' shares of their component's area:
        ``s -> area_s0 + (s - area_s0) (share_A share_B / 0.01) ** area_gamma``, so small
        clusters join before a large part is cut in two. 0 (the default, and what the
        pipeline uses): unweighted. Kept for the session-7 merge screens
        (``benchmarks/mesh_quality.py screen``, variant key ``"area_gamma"``), where it lost
        the leave-one-category-out rule.
    progress : gpu_kernels.jobs.Progress, optional
        Its cancel flag is checked every few merge rounds (:data:`CANCEL_ROUNDS`): a cancel
        raises :class:`gpu_kernels.jobs.Cancelled` within a few milliseconds.

    Returns ``(labels, merges)`` with ``merges`` a list of ``(kept, removed)`` label pairs (the
    kept one is the larger by area); labels are *not* renumbered.
    """
    if int(np.asarray(label_component).size) <= DENSE_MERGE_MAX:
        return _merge_tables(graph, labels, targets, label_component, stop, strengths, min_area, area_gamma, area_s0,
                             progress=progress)
    return _merge_arcs(graph, labels, targets, label_component, stop, strengths, min_area, area_gamma, area_s0,
                       progress=progress)


#: up to this many clusters, :func:`merge_weakest_boundaries` keeps K x K tables of the
#: boundaries and updates them per merge (:func:`_merge_tables`); above it, it sums over the
#: arcs at every merge (:func:`_merge_arcs`, the same merges: a test checks it)
DENSE_MERGE_MAX = 256
#: the merge loops check the cancel flag of their ``progress`` every this many rounds (the compiled loop
#: returns to Python between blocks of rounds; a round of the NumPy loops is a millisecond or more)
CANCEL_ROUNDS = 64
#: the least contrast offset c0 (the mesh's mean concavity): a convex mesh (no concave edge, c0 = 0) would give
#: every boundary the strength 0 / 0 (NaN), and the merges would follow the pairs' index order; with the floor
#: every contrast is 1 there and the order follows the thickness contrast and, for the learned merges, the model
#: (issue 22, session 12; no mesh with a concave edge changes: their c0 is many orders above)
C0_FLOOR = 1e-12


def _contrast_offset(length, conc) -> float:
    """The contrast strength's offset c0: the mean concavity over the arcs (length-weighted), at least
    :data:`C0_FLOOR`."""
    return max(float((length * conc).sum() / max(length.sum(), 1e-300)), C0_FLOOR)


class _MergeState:
    """The greedy merges' state on K x K tables, shared by :func:`_merge_tables` (the hand-made order) and
    :func:`gpu_kernels.mesh.learned.learned_merge` (the learned order; ``extra``: the tables its features need,
    and the log-thickness sums always): the boundary sums between every two clusters (length ``BL``, arcs ``BN``,
    ``crit``'s numerator ``BX``; with ``extra`` also length x concavity² ``BX2``, concave length ``BV``, length
    with concavity over 2 c0 ``BH``), the inside concavity sums, areas, normals, the clusters per component, and
    :meth:`merge`, which updates them all. ``c0``: the contrast offset (None: this graph's, :func:`_contrast_offset`)."""

    def __init__(self, graph, labels, targets, label_component, *, crit="contrast", extra=False, c0=None):
        lab0 = np.asarray(labels).astype(np.int64)
        K = int(np.asarray(label_component).size)
        label_component = np.asarray(label_component)
        self.lab0, self.K, self.label_component, self.crit, self.extra = lab0, K, label_component, crit, extra
        # current clusters per component
        present = np.zeros(K, dtype=bool)
        present[np.unique(lab0)] = True
        self.present = present
        self.count = {c: int(np.count_nonzero(present & (label_component == c))) for c in targets}
        self.start = dict(self.count)
        self.done: set = set()
        length = graph.edge_length if graph.edge_length is not None else np.ones(graph.n_edges)
        s, d = graph.src, graph.dst
        a, b = lab0[s], lab0[d]
        cut = a != b
        lo, hi = np.minimum(a[cut], b[cut]), np.maximum(a[cut], b[cut])
        L = length[cut]
        # the boundary between every two clusters and the inside of every cluster, summed once over
        # the arcs; a merge then adds rows of these K x K tables (issue 20: a merge used to sum
        # over every arc again)
        key = lo * K + hi

        def pair_table(w):
            t = np.bincount(key, weights=w, minlength=K * K).reshape(K, K)
            return t + t.T

        self.BL = pair_table(L)
        self.BN = pair_table(np.ones(L.size))  # arcs between two clusters: they are adjacent
        self.lg, self.sdf, self.c0 = None, 0.0, 0.0
        if crit == "outline":
            self.BX = pair_table(L * cut_capacity(graph)[cut])
        else:
            conc = merge_concavity(graph)
            cc = conc[cut]
            self.BX = pair_table(L * cc)
        if crit == "contrast":
            same = ~cut
            self.in_num = np.bincount(a[same], weights=length[same] * conc[same], minlength=K)
            self.in_den = np.bincount(a[same], weights=length[same], minlength=K)
            self.c0 = c0 = _contrast_offset(length, conc) if c0 is None else float(c0)
            from gpu_kernels.mesh import dualgraph

            th = getattr(graph, "thickness", None)
            self.sdf = float(dualgraph.SDF_MERGE) if th is not None else 0.0
            if self.sdf > 0 or extra:
                logth = np.log(np.maximum(th, 1e-300)) if th is not None else np.zeros(graph.n)
                self.lg = np.bincount(lab0, weights=logth * graph.areas, minlength=K)
        self.area = np.bincount(lab0, weights=graph.areas, minlength=K)
        self.comp_area = np.bincount(label_component, weights=self.area, minlength=int(label_component.max()) + 1)
        self.tables = [self.BL, self.BN, self.BX]
        self.nrm = None
        if extra:
            self.BX2 = pair_table(L * cc * cc)
            self.BV = pair_table(L * np.asarray(graph.concave, dtype=np.float64)[cut])
            self.BH = pair_table(L * (cc > 2.0 * c0))
            self.tables += [self.BX2, self.BV, self.BH]
            self.nrm = np.stack([np.bincount(lab0, weights=graph.normals[:, j] * graph.areas, minlength=K)
                                 for j in range(3)], 1)
            self.comp_lg = np.bincount(label_component, weights=self.lg, minlength=self.comp_area.size) \
                / np.maximum(self.comp_area, 1e-300)
        self.comp_tab = None
        self.root = np.arange(K)
        self.merges: list = []

    def merge(self, keep, gone):
        """Cluster ``gone`` joins ``keep``: every table and sum updated, the merge recorded."""
        if self.crit == "contrast":
            self.in_num[keep] += self.in_num[gone] + self.BX[keep, gone]
            self.in_den[keep] += self.in_den[gone] + self.BL[keep, gone]
            if self.lg is not None:
                self.lg[keep] += self.lg[gone]
                self.lg[gone] = 0.0
        if self.nrm is not None:
            self.nrm[keep] += self.nrm[gone]
            self.nrm[gone] = 0.0
        for T in self.tables:
            T[keep] += T[gone]
            T[:, keep] += T[:, gone]
            T[keep, keep] = 0.0
            T[gone] = 0.0
            T[:, gone] = 0.0
        if self.comp_tab is not None:
            for C in self.comp_tab:
                C[keep] += C[gone]
                C[gone] = 0.0
        root = self.root
        root[root == gone] = keep
        _record_merge(keep, gone, self.area, self.present, self.count, self.label_component, self.merges)

    def contrast(self, ulo, uhi, bl):
        """The candidate pairs' contrast strengths (the thickness contrast included where it is on), with their
        boundary and inside concavities and the clusters' mean log thickness ``m`` (None without it)."""
        bnd = self.BX[ulo, uhi] / np.maximum(bl, 1e-300)
        inner = (self.in_num[ulo] + self.in_num[uhi]) / np.maximum(self.in_den[ulo] + self.in_den[uhi], 1e-300)
        c0 = self.c0
        strength = (bnd + c0) / (inner + c0)
        m = None
        if self.lg is not None:
            m = self.lg / np.maximum(self.area, 1e-300)
            if self.sdf > 0:
                strength = strength * (1.0 + self.sdf * np.abs(m[ulo] - m[uhi]))
        return strength, bnd, inner, m

    def labels(self):
        return self.root[self.lab0].astype(np.int32)

    def greedy(self, targets, min_area, strengths, pick, progress=None):
        """The greedy loop in NumPy: while a component has more clusters than its target, its slivers (under
        ``min_area`` of its area) join the neighbour they share the longest boundary with, else the candidate
        pair ``pick(ulo, uhi, bl, over)`` chooses merges (the larger by area keeps its label; ``pick`` returns
        ``(j, strength)``, None to stop, or -1 for a round without a merge). The cancel flag of ``progress``
        is checked every :data:`CANCEL_ROUNDS` rounds. Returns ``(labels, merges)``."""
        K, label_component = self.K, self.label_component
        area, comp_area, present, count, BL, BN = self.area, self.comp_area, self.present, self.count, self.BL, self.BN
        iu, ju = np.triu_indices(K, 1)  # the pairs in the order of lo * K + hi
        lc_iu = label_component[iu]
        is_over = np.zeros(comp_area.size, dtype=bool)
        rounds = 0
        while True:
            if progress is not None and rounds % CANCEL_ROUNDS == 0:
                progress.check()
            rounds += 1
            over = [c for c in targets if count[c] > targets[c] and c not in self.done]
            if not over:
                break
            is_over[:] = False
            is_over[over] = True
            cand = (BN[iu, ju] > 0) & is_over[lc_iu]
            if not cand.any():
                break
            ulo, uhi = iu[cand], ju[cand]
            bl = BL[ulo, uhi]
            if min_area > 0:
                frac = area / np.maximum(comp_area[label_component], 1e-300)
                in_pair = np.zeros(K, dtype=bool)
                in_pair[ulo] = True
                in_pair[uhi] = True
                small = present & (frac < min_area) & is_over[label_component] & in_pair
                if small.any():
                    sl = int(np.flatnonzero(small)[np.argmin(frac[small])])
                    touch = (ulo == sl) | (uhi == sl)
                    j = int(np.flatnonzero(touch)[np.argmax(bl[touch])])
                    nb = int(uhi[j] if ulo[j] == sl else ulo[j])
                    self.merge(nb, sl)
                    if strengths is not None:
                        strengths.append(0.0)
                    continue
            got = pick(ulo, uhi, bl, over)
            if got is None:
                break
            if got == -1:
                continue
            j, s_j = got
            if strengths is not None:
                strengths.append(float(s_j))
            p, q = int(ulo[j]), int(uhi[j])
            self.merge(*((p, q) if area[p] >= area[q] else (q, p)))
        return self.labels(), self.merges

    def compiled(self, targets, min_area, strengths, *, policy=0, lim=None, stop_p=None, model=None,
                 progress=None, gain_power=1.0, gain_beta=0.0, hull=None):
        """The greedy loop by :func:`gpu_kernels.mesh._numba_merge.greedy_merge` (the ``"contrast"`` criterion):
        the same merges and strengths as :meth:`greedy` with the hand-made pick (``policy`` 0, ``lim``: a
        per-component strength limit, ``stop``) or the learned one (1 learned, 2 blend, 3 gain; ``model``,
        ``stop_p``; ``gain_power`` / ``gain_beta``: :data:`gpu_kernels.mesh.learned.GAIN_POWER` /
        ``GAIN_BETA``, read by the gain order only;
        ``hull``: a :class:`gpu_kernels.mesh.learned._Hull` for the union-depth feature, updated in place),
        run in blocks of :data:`CANCEL_ROUNDS` rounds with the cancel flag checked between them. Returns
        ``(labels, merges)``."""
        from gpu_kernels.mesh import _numba_merge as nm

        label_component = np.ascontiguousarray(self.label_component, dtype=np.int64)
        nc = max(int(self.comp_area.size), max((int(c) + 1 for c in targets), default=0))
        cnt = np.zeros(nc, dtype=np.int64)
        target = np.zeros(nc, dtype=np.int64)
        start = np.zeros(nc, dtype=np.int64)
        tracked = np.zeros(nc, dtype=np.bool_)
        done = np.zeros(nc, dtype=np.bool_)
        for c, t in targets.items():
            cnt[int(c)] = self.count[c]
            target[int(c)] = int(t)
            start[int(c)] = self.start[c]
            tracked[int(c)] = True
        has_lim = lim is not None
        lim_a = np.full(nc, np.inf)
        if has_lim:
            lim_a[:lim.size] = lim
        comp_area = np.zeros(nc)
        comp_area[:self.comp_area.size] = self.comp_area
        learned = policy != 0
        e2 = np.empty((0, 0))
        if learned:
            BX2, BV, BH, nrm = self.BX2, self.BV, self.BH, self.nrm
            comp_lg = np.zeros(nc)
            comp_lg[:self.comp_lg.size] = self.comp_lg
            tree = (model.feature, model.threshold, model.left, model.right, model.value, float(model.init),
                    float(model.rate), int(model.depth))
        else:
            BX2 = BV = BH = e2
            nrm = np.empty((0, 3))
            comp_lg = np.empty(0)
            z = np.zeros((1, 1), dtype=np.int64)
            tree = (z - 1, np.zeros((1, 1)), z, z, np.zeros((1, 1)), 0.0, 0.0, 0)
        lg = np.empty(0) if self.lg is None else self.lg
        on = hull is not None and learned
        # (the exact hull's union depths (K, K), NaN until hull.fill; the pairs to fill)
        hdep = np.full((self.K, self.K) if on else (0, 0), np.nan)
        hneed = np.empty((self.K * (self.K - 1) // 2 if on else 0, 2), dtype=np.int64)
        if on:
            h_args = (True, hull.sup, hull.pts, hull.cnt, hdep, hneed)
        else:
            h_args = (False, np.empty((0, 1)), np.empty((0, 1, 3)), np.empty(0, dtype=np.int64), hdep, hneed)
        K = self.K
        keeps = np.empty(max(K, 1), dtype=np.int64)
        gones = np.empty(max(K, 1), dtype=np.int64)
        st = np.empty(max(K, 1), dtype=np.float64)
        n = 0
        while True:
            if progress is not None:
                progress.check()
            n, finished, need = nm.greedy_merge(
                int(policy), self.BL, self.BN, self.BX, BX2, BV, BH, self.in_num, self.in_den, lg, float(self.sdf),
                float(self.c0), max(float(self.c0), C0_FLOOR), self.area, comp_area, label_component, self.present,
                cnt, target, tracked, start, done, lim_a, has_lim, float(min_area),
                float(stop_p) if stop_p is not None else 0.0, stop_p is not None, float(gain_power),
                float(gain_beta), nrm, comp_lg,
                *tree, self.root,
                keeps, gones, st, n, int(CANCEL_ROUNDS), *h_args)
            if need:  # (the exact hull's depths of the next round's new pairs: learned._Hull.fill, then on)
                hull.fill(hdep, hneed[:need])
                continue
            if finished:
                break
        for c in targets:
            self.count[c] = int(cnt[int(c)])
        self.merges.extend((int(keeps[i]), int(gones[i])) for i in range(n))
        if strengths is not None:
            strengths.extend(float(x) for x in st[:n])
        return self.labels(), self.merges


def _merge_tables(graph, labels, targets, label_component, stop, strengths, min_area, area_gamma=0.0, area_s0=1.0,
                  progress=None):
    """:func:`merge_weakest_boundaries` with the boundary sums in K x K tables (:class:`_MergeState`)."""
    crit = MERGE_CRITERION
    state = _MergeState(graph, labels, targets, label_component, crit=crit)
    label_component = state.label_component
    lim = None
    if stop:
        lim = np.array([stop.get(int(c), np.inf) for c in range(int(label_component.max()) + 1)])
    if COMPILED_MERGE and crit == "contrast" and not area_gamma and compiled_merge() is not None:
        return state.compiled(targets, min_area, strengths, policy=0, lim=lim, progress=progress)
    area, comp_area, BL = state.area, state.comp_area, state.BL

    def pick(ulo, uhi, bl, over):
        if crit == "outline":
            # the share of the smaller cluster's outline that this smooth boundary makes up
            perim = BL.sum(axis=1)
            strength = -state.BX[ulo, uhi] / np.maximum(np.minimum(perim[ulo], perim[uhi]), 1e-300)
        elif crit == "contrast":
            # boundary concavity against the concavity inside the two clusters
            strength = state.contrast(ulo, uhi, bl)[0]
            if area_gamma:
                strength = _area_weighted(strength, area, comp_area, label_component, ulo, uhi, area_gamma, area_s0)
        else:  # "concavity": mean concavity along the boundary
            strength = state.BX[ulo, uhi] / np.maximum(bl, 1e-300)
        j = _weakest_allowed(strength, None if lim is None else lim[label_component[ulo]], None)
        return None if j is None else (j, strength[j])

    return state.greedy(targets, min_area, strengths, pick, progress)


#: the greedy merge loops for the default criterion ("contrast", no area weighting) compiled
#: (:func:`gpu_kernels.mesh._numba_merge.greedy_merge`, the hand-made and the learned order; the same merges and
#: strengths bit for bit, issue 22, sessions 11-12) where numba imports; False: the NumPy loops
COMPILED_MERGE = True
_MERGE_KERNEL: list = []


def compiled_merge():
    """:mod:`gpu_kernels.mesh._numba_merge`, or None (numba missing or broken, or :data:`COMPILED` off)."""
    return _optional(_MERGE_KERNEL, "_numba_merge")


def _area_weighted(strength, area, comp_area, label_component, ulo, uhi, gamma, s0):
    """``s0 + (strength - s0) * g`` with ``g = (share_A * share_B / 0.01) ** gamma`` (the two
    clusters' shares of their component's area): with ``gamma > 0`` a boundary stronger than
    ``s0`` between two large clusters counts as stronger still, and one around a small cluster
    as weaker, so the merges join small clusters before they cut a large part in two (the
    Rand Index weighs a wrong decision by the product of the two areas). 0: unchanged."""
    if not gamma:
        return strength
    ca = np.maximum(comp_area[label_component[ulo]], 1e-300)
    g = (np.maximum(area[ulo] * area[uhi], 0.0) / (ca * ca) / 0.01) ** float(gamma)
    return float(s0) + (strength - float(s0)) * g


def _record_merge(keep, gone, area, present, count, label_component, merges):
    """The bookkeeping of one merge of cluster ``gone`` into ``keep`` shared by
    :func:`_merge_tables` and :func:`_merge_arcs`: areas, the present clusters, the count
    per component and the list of merges (updated in place)."""
    area[keep] += area[gone]
    area[gone] = 0
    present[gone] = False
    count[int(label_component[keep])] -= 1
    merges.append((keep, gone))


def _weakest_allowed(strength, limit, strengths):
    """Index of the weakest boundary whose strength is under its ``limit`` (None: no limit), or
    None when every boundary is at or over it; its strength is appended to ``strengths``."""
    if limit is not None:
        allowed = strength < limit
        if not allowed.any():
            return None
        strength = np.where(allowed, strength, np.inf)
    j = int(np.argmin(strength))
    if strengths is not None:
        strengths.append(float(strength[j]))
    return j


def _merge_arcs(graph, labels, targets, label_component, stop, strengths, min_area, area_gamma=0.0, area_s0=1.0,
                progress=None):
    """:func:`merge_weakest_boundaries` summing over the arcs at every merge (any K; the cancel flag of
    ``progress`` checked every round)."""
    lab = np.asarray(labels).astype(np.int64).copy()
    K = int(label_component.size)
    # current clusters per component
    present = np.zeros(K, dtype=bool)
    present[np.unique(lab)] = True
    count = {c: int(np.count_nonzero(present & (label_component == c))) for c in targets}
    cap = cut_capacity(graph)
    length = graph.edge_length if graph.edge_length is not None else np.ones(graph.n_edges)
    area = np.bincount(lab, weights=graph.areas, minlength=K)
    comp_area = np.bincount(label_component, weights=area, minlength=int(label_component.max()) + 1)
    merges = []
    s, d = graph.src, graph.dst
    lim = None
    if stop:
        lim = np.array([stop.get(int(c), np.inf) for c in range(int(label_component.max()) + 1)])
    while True:
        if progress is not None:
            progress.check()
        over = [c for c in targets if count[c] > targets[c]]
        if not over:
            break
        a, b = lab[s], lab[d]
        cut = a != b
        lo = np.minimum(a[cut], b[cut])
        hi = np.maximum(a[cut], b[cut])
        L = length[cut]
        perim = np.bincount(lo, weights=L, minlength=K) + np.bincount(hi, weights=L, minlength=K)
        ok = np.isin(label_component[lo], over)
        if not ok.any():
            break
        lo, hi, L = lo[ok], hi[ok], L[ok]
        key = lo * K + hi
        uk, inv = np.unique(key, return_inverse=True)
        ulo, uhi = uk // K, uk % K
        if min_area > 0:
            frac = area / np.maximum(comp_area[label_component], 1e-300)
            small = present & (frac < min_area) & np.isin(label_component, over)
            small &= np.isin(np.arange(K), np.r_[ulo, uhi])
            if small.any():
                sl = int(np.flatnonzero(small)[np.argmin(frac[small])])
                shared = np.bincount(inv, weights=L)
                touch = (ulo == sl) | (uhi == sl)
                j = int(np.flatnonzero(touch)[np.argmax(shared[touch])])
                nb = int(uhi[j] if ulo[j] == sl else ulo[j])
                lab[lab == sl] = nb
                _record_merge(nb, sl, area, present, count, label_component, merges)
                if strengths is not None:
                    strengths.append(0.0)
                continue
        num = np.bincount(inv, weights=L * cap[cut][ok])
        if MERGE_CRITERION == "outline":
            # the share of the smaller cluster's outline that this smooth boundary makes up
            strength = -num / np.maximum(np.minimum(perim[ulo], perim[uhi]), 1e-300)
        elif MERGE_CRITERION == "contrast":
            # boundary concavity against the concavity inside the two clusters
            conc = merge_concavity(graph)
            same = ~cut
            li = lab[s][same]
            wi = length[same]
            in_num = np.bincount(li, weights=wi * conc[same], minlength=K)
            in_den = np.bincount(li, weights=wi, minlength=K)
            c0 = _contrast_offset(length, conc)
            numc = np.bincount(inv, weights=L * conc[cut][ok])
            bnd = numc / np.maximum(np.bincount(inv, weights=L), 1e-300)
            inner = (in_num[ulo] + in_num[uhi]) / np.maximum(in_den[ulo] + in_den[uhi], 1e-300)
            strength = (bnd + c0) / (inner + c0)
            strength = strength * _thickness_contrast(graph, lab, ulo, uhi, K)
            if area_gamma:
                strength = _area_weighted(strength, area, comp_area, label_component, ulo, uhi, area_gamma, area_s0)
        else:  # "concavity": mean concavity along the boundary
            numc = np.bincount(inv, weights=L * merge_concavity(graph)[cut][ok])
            strength = numc / np.maximum(np.bincount(inv, weights=L), 1e-300)
        j = _weakest_allowed(strength, None if lim is None else lim[label_component[ulo]], strengths)
        if j is None:
            break
        p, q = int(uk[j] // K), int(uk[j] % K)
        keep, gone = (p, q) if area[p] >= area[q] else (q, p)
        lab[lab == gone] = keep
        _record_merge(keep, gone, area, present, count, label_component, merges)
    return lab.astype(np.int32), merges


def part_memberships(graph: DualGraph, labels: np.ndarray, k: int, *, scale: float,
                     cutoff: float = 4.0) -> np.ndarray:
    """(F, k) float32 memberships of the final parts, consistent with the labels.

    ``P_j(f)`` is proportional to ``1 / (d_j(f) + scale) - 1 / (cutoff * scale + scale)``,
    with ``d_j(f)`` the dual-graph distance from face f to the nearest face of part j (0 for
    the face's own part), and 0 beyond ``cutoff * scale``. A face's own part therefore
    always has its highest membership; a face deep inside a part belongs to it with
    membership 1; a face next to a boundary over smooth surface is shared nearly evenly,
    one next to a sharp concave crease much less (crossing the crease is long).

    One multi-source Dijkstra per part, stopped at the cutoff (``scipy.sparse.csgraph``):
    about linear in the number of faces.
    """
    from scipy.sparse.csgraph import dijkstra

    lab = np.asarray(labels, dtype=np.int64)
    F = lab.size
    k = int(k)
    scale = float(scale)
    if k <= 1 or graph.n_edges == 0:
        P = np.zeros((F, max(k, 1)), dtype=np.float32)
        P[np.arange(F), np.clip(lab, 0, max(k, 1) - 1)] = 1.0
        return P
    limit = float(cutoff) * scale
    floor = 1.0 / (limit + scale)
    G = graph.csr()
    W = np.zeros((F, k), dtype=np.float64)
    # a path from part j to a face outside it leaves j through one of j's faces next to
    # another part, so those faces alone are the sources (the same distances, and the search
    # stays within the cutoff of the boundaries instead of covering every part)
    s, d = graph.src, graph.dst
    edge = lab[s] != lab[d]
    on_bd = np.zeros(F, dtype=bool)
    on_bd[s[edge]] = True
    on_bd[d[edge]] = True
    sources = [np.flatnonzero((lab == j) & on_bd) for j in range(k)]
    dists = _part_distances(G, sources, limit)
    for j in range(k):
        src = sources[j]
        if src.size == 0:
            continue
        d = dists[j] if dists is not None else dijkstra(G, directed=True, indices=src, min_only=True, limit=limit)
        ok = np.isfinite(d)
        W[ok, j] = np.maximum(1.0 / (d[ok] + scale) - floor, 0.0)
    W[np.arange(F), lab] = np.maximum(W[np.arange(F), lab], 1.0 / scale - floor)
    return (W / W.sum(axis=1, keepdims=True)).astype(np.float32)


#: :func:`part_memberships`' searches, one per part, by a compiled Dijkstra
#: (:func:`gpu_kernels.mesh._numba_cut.dijkstra_min`: SciPy's distances bit for bit) on threads of their own,
#: the parts side by side (SciPy's search holds the GIL; issue 22, session 11); False: SciPy's, one by one
COMPILED_DIJKSTRA = True
#: at most this many threads for them (the calling thread included)
DIJKSTRA_THREADS = 8


def _part_distances(G, sources: list, limit: float) -> list | None:
    """Per part the distances from its sources (``sources[j]``, empty: None), as SciPy's
    ``dijkstra(G, directed=True, indices=sources[j], min_only=True, limit=limit)``, by the compiled search
    with the parts spread over up to :data:`DIJKSTRA_THREADS` threads (not daemons; every started one is
    joined before this returns or raises). None where it does not apply (switched off, no numba, a
    negative or NaN weight): then SciPy's."""
    nb_ = compiled() if COMPILED_DIJKSTRA else None
    if nb_ is None or not sources:
        return None
    import threading

    data = np.asarray(G.data, dtype=np.float64)
    if data.size and not bool((data >= 0).all()):
        return None
    indptr = np.asarray(G.indptr, dtype=np.int64)
    indices = np.asarray(G.indices, dtype=np.int64)
    n = int(G.shape[0])
    todo = [j for j, s in enumerate(sources) if s.size]
    out: list = [None] * len(sources)
    for j in todo:
        out[j] = np.empty(n, dtype=np.float64)
    lim = float(limit)
    errors: list = []

    def run(js):
        try:
            for j in js:
                nb_.dijkstra_min(indptr, indices, data, np.asarray(sources[j], dtype=np.int64), lim, out[j])
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            errors.append(exc)

    w = max(1, min(len(todo), int(DIJKSTRA_THREADS), os.cpu_count() or 1))
    # the largest searches first, dealt round the threads
    order = sorted(todo, key=lambda j: -sources[j].size)
    chunks = [order[i::w] for i in range(w)]
    threads = [threading.Thread(target=run, args=(c,), name="gpulab-part-dijkstra", daemon=False)
               for c in chunks[1:] if c]
    try:
        for t in threads:
            t.start()
        run(chunks[0])
    finally:
        for t in threads:
            if t.ident is not None:
                t.join()
    if errors:
        raise errors[0]
    return out
