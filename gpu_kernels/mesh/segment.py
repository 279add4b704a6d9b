"""End-to-end mesh segmentation: clean -> dual graph -> APSP -> fuzzy clustering -> cuts.

:func:`segment_mesh` is the one entry point for the app and the CLI. It follows Katz & Tal
(2003) as used by Marras et al.: the dual graph's all-pairs shortest-path matrix drives a
fuzzy k-way clustering, and the fuzzy boundary between clusters is settled by minimum cuts
along the sharpest concave creases. Each connected component is clustered on its own.

By default (``max_faces="auto"``) a mesh with more than ``WORKING_FACES`` = 3500 faces is
clustered on a quadric-edge-collapse copy of that size, on every device (fast-simplification
down to 3 x that (10,500 faces), then pymeshlab: :mod:`gpu_kernels.mesh.simplify`); its memberships are
carried back to every input face and the boundaries are re-cut on the input mesh. So a
user gets the same parts from a 5,000- or a 50,000-face scan, on the CPU or the GPU. A
mesh whose largest component's N x N matrix does not fit in memory is simplified too;
``max_faces=None`` clusters at full resolution (and raises :class:`MeshTooLargeError` when
it does not fit, unless ``simplify``).

Defaults (chosen by leave-one-category-out cross-validation over the 76 shared Princeton
Segmentation Benchmark meshes, 19 categories, Princeton protocol: ``benchmarks/mesh_psb.py
--cv``, every candidate's score in benchmarks/results/mesh_cv.md; the earlier choices on 19
meshes are in benchmarks/results/mesh_defaults_log.md; no choice inside this function looks
at labels):

* the dual graph's bend is measured at a fixed physical scale
  (:func:`gpu_kernels.mesh.dualgraph.scale_bending`), so distances do not depend on the
  triangulation (Katz & Tal's ``1 - cos`` per arc made every crease a wall on fine meshes:
  0.204 at full resolution with the old defaults);
* ``delta = 0.05``, ``eta_convex = 0.02``: the distance is almost all angular and convex
  edges are nearly free to cross, so clusters end at concave creases;
* ``update_power = 2``: the representative update weights faces by ``P_j(f)^2`` (power 1
  drags every representative to the medoid);
* ``oversegment = (1, 1.5, 2, 3)``: cluster into ``ceil(f k)`` parts for each factor f, merge
  adjacent clusters whose boundary is no more concave than their inside down to k
  (slivers, clusters with less than ``MIN_PART_AREA`` of the area, first), and keep the
  result whose boundaries are the most concave on average (:func:`boundary_concavity`);
* ``k = "auto"``: over-segment into ``AUTO_K_STARTS`` = 24, 30 and 36 clusters (the
  distances shared), merge each the same way while the weakest boundary is weaker than
  ``max(AUTO_K_STRENGTH, AUTO_K_RELATIVE x the strongest boundary on the way down to 2
  clusters)`` (1.5 and 0.4; 1.5 was chosen in all 19 cross-validation folds, 1.8 before), and
  keep the result that agrees best with the other two (session 4: 0.168 against 0.176 held out,
  chosen in 19 of 19 folds; one over-segmentation of 30 before);
* the boundary cut solves every fuzzy region in one maximum-flow problem
  (``boundary.CUT_MODE = "batched"``: 0.1719 against 0.1715 for one problem per region);
* merges count a boundary between clusters of different thickness as stronger
  (``dualgraph.SDF_MERGE = 0.5``, :mod:`gpu_kernels.mesh.thickness`: the shrinking-ball
  shape diameter at the working resolution), so thin parts that meet a thick body over
  smooth surface (fins, tails, handles) stay parts (issue 22, chosen in all 19 folds);
* ``epsilon = 0.04``; fuzziness is measured on the two best memberships renormalised over
  the pair (Katz & Tal's binary rule, see :func:`gpu_kernels.mesh.boundary.fuzzy_faces`).
  The returned memberships are those of the final parts
  (:func:`gpu_kernels.mesh.boundary.part_memberships`), so a face's highest membership is
  always its own part.

Scores (Rand Index error, Princeton protocol, 76 meshes): cross-validated (mean of the 19
held-out folds of the selection among the quick candidates) 0.161 with the protocol's k and
0.168 with k = auto (0.176 with one over-segmentation; 0.178 and 0.195 without the thickness
contrast); k inside the human range on 51 of 76; ``consensus=True`` (three working
resolutions, one auto-k over-segmentation, session 4) 0.153 and 0.163, about 2.3x the time
on the H100 (benchmarks/results/mesh_session4.md).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import threading
import time
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.spatial import cKDTree

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.env import flag
from gpu_kernels.errors import TooLargeError
from gpu_kernels.jobs import BackgroundCall, Cancelled, Progress, as_progress
from gpu_kernels.mesh import autok as _autok
from gpu_kernels.mesh import boundary as _bd
from gpu_kernels.mesh import defaults as _defaults
from gpu_kernels.mesh.cluster import farthest_order, fuzzy_cluster, fuzzy_cluster_many
from gpu_kernels.mesh.colors import DEFAULT_SHADING, blend_face_colors, palette
from gpu_kernels.mesh.dualgraph import MeshInputError, clean_mesh, dual_graph, uses_thickness, with_thickness
from gpu_kernels.mesh.metrics import contingency
from gpu_kernels.mesh.nearest import kd_nearest
from gpu_kernels.mesh.simplify import (
    available_simplifiers,
    simplify_in_background,
    simplify_mesh,
    transfer_memberships,
)

__all__ = [
    "DEFAULT_DELTA",
    "DEFAULT_ETA_CONVEX",
    "DEFAULT_EPSILON",
    "DEFAULT_UPDATE_POWER",
    "DEFAULT_OVERSEGMENT",
    "DEFAULT_MAX_ITER",
    "MAX_K",
    "MIN_COMPONENT_FACES",
    "MeshSegmentation",
    "MeshTooLargeError",
    "MeshInputError",
    "segment_mesh",
    "max_faces_for_device",
]

# The defaults and limits (chosen on the Princeton Segmentation Benchmark subset, see
# benchmarks/RESULTS.md; WORKING_FACES: the working resolution of max_faces="auto") live in
# gpu_kernels.mesh.defaults, free of NumPy, so that declaring the tool stays light.
from gpu_kernels.mesh.defaults import (  # noqa: E402
    DEFAULT_AUTO_LAYOUT,
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    DEFAULT_ETA_CONVEX,
    DEFAULT_MAX_FACES,
    DEFAULT_MAX_ITER,
    DEFAULT_OVERSEGMENT,
    DEFAULT_REFINE_BOUNDARIES,
    DEFAULT_UPDATE_POWER,
    MAX_K,
    WORKING_FACES,
)

#: k = "auto": over-segment into this many clusters, then merge adjacent clusters while
#: their boundary is weaker than AUTO_K_STRENGTH (see merge_weakest_boundaries)
AUTO_K_START = 30
#: k = "auto" over-segments once per entry (cluster counts; the distances are shared), merges
#: each down by the stop rule and keeps the result that agrees best with the others
#: (:func:`choose_consensus`, medoid). ``()``: one over-segmentation of AUTO_K_START clusters.
#: (24, 30, 36) since session 4: leave-one-category-out over the 76 PSB meshes (replay of the
#: merges, benchmarks/results/mesh_session4.md) 0.1678 held out against 0.1751, chosen in 19 of
#: 19 folds; the distances are shared, so it costs two more clusterings and merge sequences
AUTO_K_STARTS: tuple = (24, 30, 36)
AUTO_K_STRENGTH = 1.5
#: an integer k also over-segments into the AUTO_K_STARTS cluster counts (where k is below
#: them), merges those down to k too, and keeps the medoid of all the results (over-segmentation
#: factors and starts) instead of the most concave factor. Session 6: leave-one-category-out
#: over the 76 PSB meshes (benchmarks/results/mesh_quality_session6.md), replay 0.1586 -> 0.1526
#: held out, chosen in 19 of 19 folds; the starts do not depend on k
K_FROM_AUTO_STARTS = True
#: where an integer k takes the auto-k starts (K_FROM_AUTO_STARTS, k at most the smallest start), the medoid is
#: chosen among the starts' results alone: the over-segmentation factors (k x DEFAULT_OVERSEGMENT clusters) are
#: not clustered, merged or cut (with the default ``oversegment`` factors; other factors a caller gives are kept
#: beside the starts, as before). Session 20 (round q15, benchmarks/results/mesh_q15_session20.md): passed its
#: pre-registered round, leave one category out, every fold retrained, the real pipeline on 20 new draws
#: s2000-2019 (H100): protocol 0.1211 -> 0.1189 (lower on 18 of 20 draws), meshes over 0.30 64 -> 55; k = "auto"
#: unchanged. False: the medoid of the factors' and the starts' results (sessions 6-19)
K_STARTS_ONLY = True
#: an integer k's start cluster counts (K_FROM_AUTO_STARTS, K_STARTS_ONLY; memoized beside the auto-k starts, so a
#: k edit clusters nothing); None: AUTO_K_STARTS. Session 20 (round q16, benchmarks/results/mesh_q16_session20.md):
#: (20, 24, 30, 36, 42) passed its pre-registered round against (24, 30, 36), leave one category out, every fold
#: retrained, the real pipeline on 20 new draws s2024-2043 (H100): protocol 0.1189 -> 0.1157 (lower on 20 of 20
#: draws), meshes over 0.30 53 -> 53; k = "auto" unchanged. Session 26 (round starts26,
#: benchmarks/results/mesh_starts26_session26.md): two finer starts, 50 and 60, passed against those five, the model
#: retrained on the seven starts' records, the real pipeline on 24 new draws s2288-2311 (H200): protocol 0.1103 ->
#: 0.1072 (lower on 24 of 24 draws), meshes over 0.30 46 -> 33 (fourleg 381 on 19 -> 8 draws); k = "auto" the same
#: mean (0.1119). An integer k above 20 takes the factors alone
K_STARTS: tuple | None = (20, 24, 30, 36, 42, 50, 60)
#: the thickness contrast (dualgraph.SDF_MERGE) of an integer k's merges: with k fixed, a thin
#: part (a fin, an arm, a handle) against a thick body is kept as a part before the body is
#: cut into chunks. k = "auto" keeps SDF_MERGE, against which its stop bar was chosen. Session 6:
#: leave one category out over the 76 PSB meshes (replay, benchmarks/mesh_quality.py) among
#: 0.5 (= SDF_MERGE), 0.75, 1, 1.5, 2, 3: 2 in 19 of 19 folds, protocol 0.1526 -> 0.1432 held
#: out (fish 0.052 better, bearing 0.048 worse). None: SDF_MERGE
K_SDF_MERGE = 2.0
#: k = "auto"'s last step: in each component, parts with less than this share of its area join
#: the neighbour they share the longest boundary with (:func:`absorb_small_parts`; 0: off). They
#: barely move the Rand Index but make k less human-like. Session 6, replay over the 76 PSB
#: meshes: k in the human range 56 -> 62 (0.0075-0.01), Rand Index 0.1454 -> 0.1456. Chosen by
#: leave one category out with the criterion "most meshes in the human range on the other 18
#: categories, Rand Index within 0.001 of off": 0.01 in 17 of 19 folds, held out 0.1461 and
#: 61 of 76 in range (by the Rand Index alone the candidates tie within 0.0005). Device
#: confirmation pending (benchmarks/results/mesh_quality_session6.md)
AUTO_K_MIN_PART = 0.01
#: ... and while it is weaker than this share of the strongest boundary met on the way
#: down to two clusters (a mesh whose parts meet at very sharp creases has strong seams
#: inside its parts too)
AUTO_K_RELATIVE = 0.4
#: "merge" (the rule above), "elbow" (stop at the elbow of the merge curve, see
#: :func:`elbow_stop`) or "gap" (the farthest-point gap rule of Katz & Tal)
AUTO_K_RULE = "merge"
#: extra working resolutions, as multiples of WORKING_FACES, clustered besides WORKING_FACES
#: itself (``max_faces="auto"``); the consensus of the results is kept (CONSENSUS_RULE).
#: () = one working resolution
CONSENSUS_SCALES: tuple = ()
#: the scales ``consensus=True`` uses (1,750 / 3,500 / 5,250 faces; the best of the consensus
#: candidates cross-validated, at 2,000 / 4,000 / 6,000 before WORKING_FACES became 3,500)
CONSENSUS_RESOLUTIONS = (0.5, 1.5)
#: "medoid": the result that agrees best with the others (area-weighted Rand index);
#: "concavity": the one whose boundaries are the most concave on average
CONSENSUS_RULE = "medoid"
#: "all": every working resolution's result is re-cut at full resolution before the consensus
#: compares them; "winner": the results are compared as carried (nearest working face) and
#: only the one kept is re-cut (one full-resolution cut instead of one per resolution)
CONSENSUS_RECUT = "all"
#: memberships of the final parts: 1 / (d + s) with d the dual-graph distance to the part
#: (0 inside it) and s the cost of crossing MEMBERSHIP_SPACINGS reference spacings
#: (dualgraph.ref_scale) of flat surface
MEMBERSHIP_SPACINGS = 3.0
#: clusters with less than this fraction of their component's area are slivers: merged
#: first when clusters are merged down to k
MIN_PART_AREA = 0.002
#: which over-segmentation factor's result is kept: "concavity" (the most concave boundaries
#: on average) or "medoid" (the one that agrees best with the other factors' results, ties to
#: the most concave; an experiment of issue 22)
OVERSEG_RULE = "concavity"
#: how a working resolution is made: "patches" (:mod:`gpu_kernels.mesh.coarsen`, no remeshing)
#: or "simplify" (pymeshlab's quadric edge collapse)
COARSENING = "simplify"
#: (the full-resolution re-cut of the boundaries is the keyword ``refine_boundaries``,
#: default ``defaults.DEFAULT_REFINE_BOUNDARIES``; it re-decides the faces within
#: ceil(sqrt(full faces / working faces)) + REFINE_EXTRA_RINGS rings of the carried labels' changes)
REFINE_EXTRA_RINGS = 1
# components with fewer faces than this are one segment each (k = "auto")
MIN_COMPONENT_FACES = 64


class MeshTooLargeError(TooLargeError):
    """The N x N distance matrix does not fit; simplification (``max_faces``) is proposed."""

    def __init__(self, n_faces: int, max_faces: int, where: str = "the device"):
        self.n_faces = int(n_faces)
        self.max_faces = int(max_faces)
        super().__init__(
            n_faces, max_faces, unit="faces", parameter="max_faces", where=where,
            remedy="simplify the mesh; the labels are carried back to every original face",
            message=(
                f"the mesh has {self.n_faces:,} faces (in its largest connected component), but the "
                f"{self.n_faces:,} x {self.n_faces:,} distance matrix only fits for up to "
                f"{self.max_faces:,} faces on {where}; simplify it to at most that many faces "
                "(max_faces; the labels are carried back to every original face)"))


@dataclass
class MeshSegmentation:
    labels: np.ndarray           # (F,) int32 hard labels 0..K-1 over the input faces
    memberships: np.ndarray      # (F, K) float32, rows sum to 1
    representatives: np.ndarray  # (K,) int64 input-face ids
    fuzzy: np.ndarray            # (F,) bool, fuzzy before the cut
    face_colors: np.ndarray      # (F, 3) uint8
    cluster_colors: np.ndarray   # (K, 3) uint8
    k: int
    component: np.ndarray        # (F,) int connected-component id
    info: dict = field(default_factory=dict)

    def cluster_table(self, face_areas) -> list[dict]:
        """One row per cluster: ``label``, ``color`` (r, g, b), ``faces``, ``area``,
        ``area_fraction``, ``representative``."""
        a = np.asarray(face_areas, dtype=np.float64)
        cnt = np.bincount(self.labels, minlength=self.k)
        ar = np.bincount(self.labels, weights=a, minlength=self.k)
        tot = float(ar.sum()) or 1.0
        return [
            {"label": j, "color": tuple(int(c) for c in self.cluster_colors[j]),
             "faces": int(cnt[j]), "area": float(ar[j]), "area_fraction": float(ar[j] / tot),
             "representative": int(self.representatives[j])}
            for j in range(self.k)
        ]


# --------------------------------------------------------------------------- APSP access
def _resolve_method(method: str, backend, n: int = 0) -> str:
    """The method ``apsp.all_pairs_shortest_paths`` runs for ``auto`` (for labels and
    memory estimates; the APSP module makes the choice itself, including its fall-back
    to the CPU when the GPU is short of memory)."""
    if method != "auto":
        return method
    from gpu_kernels.graph import apsp

    return "gpu-sym" if backend.is_gpu else apsp.auto_cpu_method(n)


def integer_k_starts() -> tuple:
    """The start cluster counts an integer k takes (one working resolution): :data:`K_STARTS`, or
    :data:`AUTO_K_STARTS` where it is None."""
    return tuple(K_STARTS) if K_STARTS is not None else tuple(AUTO_K_STARTS)


def working_faces(n_faces: int, backend=None, method: str = "auto") -> int | None:
    """The clustering resolution that ``max_faces="auto"`` uses for a mesh of ``n_faces``:
    ``WORKING_FACES`` for a larger mesh, ``None`` (its own resolution) for a smaller one.
    (``backend`` and ``method`` are accepted for callers that pass them; the choice is the
    same on every device.)"""
    return WORKING_FACES if n_faces > WORKING_FACES else None


def _can_simplify() -> bool:
    return bool(available_simplifiers())


def max_faces_for_device(backend, method: str = "auto") -> int:
    """Largest component size whose distance matrix fits in the free memory now (GPU memory
    on a CUDA backend, host RAM on the CPU), leaving room for the clustering's work arrays."""
    from gpu_kernels.graph import apsp

    free, _ = backend.mem_info()
    usable = max(int(0.95 * free) - (64 << 20), 0)
    return int(apsp.max_nodes_for_memory(usable, _resolve_method(method, backend)))


def _apsp(n, src, dst, w, method, backend, progress):
    from gpu_kernels.graph import apsp

    try:
        return apsp.all_pairs_shortest_paths(
            n, np.asarray(src), np.asarray(dst), np.asarray(w, dtype=np.float32), directed=False,
            method=method, device=backend, progress=progress)
    except apsp.ApspMemoryError as exc:
        raise MeshTooLargeError(n, getattr(exc, "max_n", 0) or 0) from exc


# --------------------------------------------------------------------------- k per component
def _k_per_component(k, sizes: np.ndarray, areas: np.ndarray, warnings: list) -> list:
    nc = sizes.size
    if isinstance(k, str):
        if k != "auto":
            raise MeshInputError(f"k must be a positive integer or 'auto', got {k!r}")
        out = ["auto" if s >= MIN_COMPONENT_FACES else 1 for s in sizes]
        if nc > 1:
            small = int(np.count_nonzero(sizes < MIN_COMPONENT_FACES))
            warnings.append(
                f"the mesh has {nc} connected components; each is clustered on its own"
                + (f" ({small} with fewer than {MIN_COMPONENT_FACES} faces are one segment each)"
                   if small else ""))
        return out
    k = int(k)
    if k < 1:
        raise MeshInputError(f"k must be >= 1, got {k}")
    if nc == 1:
        return [min(k, int(sizes[0]))]
    if k <= nc:
        if k < nc:
            warnings.append(f"k={k} is smaller than the number of connected components ({nc}): "
                            f"each component is one segment, so there are {nc} segments")
        else:
            warnings.append(f"the mesh has {nc} connected components: one segment each")
        return [1] * nc
    extra = k - nc
    share = areas / areas.sum() * extra
    base = np.floor(share).astype(int)
    rem = extra - int(base.sum())
    order = np.argsort(-(share - base), kind="stable")
    base[order[:rem]] += 1
    ks = np.minimum(1 + base, sizes).astype(int)
    warnings.append(f"the mesh has {nc} connected components, each clustered on its own; "
                    f"k={k} is split between them by area")
    return [int(x) for x in ks]


# --------------------------------------------------------------------------- core
def _component_index(graph):
    """``(order, starts, sizes, local, arc_comp)``: the faces of component c are
    ``order[starts[c]:starts[c + 1]]`` (ascending), ``local`` a face's index within its component."""
    comp = graph.component
    sizes = np.bincount(comp, minlength=graph.n_components)
    order = np.argsort(comp, kind="stable")
    starts = np.r_[0, np.cumsum(sizes)]
    local = np.empty(graph.n, dtype=np.int64)
    local[order] = np.arange(graph.n) - np.repeat(starts[:-1], sizes)
    return order, starts, sizes, local, comp[graph.src]


def _component_apsp(graph, index, c, apsp_method, backend, prog):
    """The distance matrix of component ``c`` (on the backend's device)."""
    order, starts, sizes, local, arc_comp = index
    m = arc_comp == c
    D = _apsp(int(sizes[c]), local[graph.src[m]], local[graph.dst[m]], graph.weight[m], apsp_method,
              backend, prog)
    D = backend.asarray(D)
    if backend.is_gpu:
        backend.synchronize()
    return D


def graph_distances(graph, apsp_method, backend, prog, min_faces: int = 2) -> dict:
    """{component: distance matrix} for every component of ``graph`` with at least
    ``min_faces`` faces: the stage that depends only on the graph (delta, eta_convex and the
    working resolution), re-used by every k and epsilon."""
    index = _component_index(graph)
    sizes = index[2]
    work = np.maximum(sizes.astype(np.float64), 1) ** 2
    wsum, done, out = work.sum(), 0.0, {}
    for c in range(graph.n_components):
        if sizes[c] >= max(min_faces, 2):
            out[c] = _component_apsp(graph, index, c, apsp_method, backend,
                                     prog.sub(done / wsum, (done + work[c]) / wsum, "APSP"))
        done += work[c]
    return out


#: how many representatives of each distance matrix's farthest-point order stage 1 computes
#: (k = "auto" starts at up to 36 clusters, an integer k at up to 3k: k <= 21 needs no more;
#: a longer order is continued from it when a k needs one)
FARTHEST_PREFIX = 64


def distance_orders(distances: list, count: int = FARTHEST_PREFIX, device=None) -> list:
    """Per entry of ``distances`` ({component: matrix}), {component: the matrix's farthest-point
    order up to ``count``} (:func:`gpu_kernels.mesh.cluster.farthest_order`): it depends only on
    the distances, so stage 1 computes it once for every k (issue 20)."""
    return [{c: farthest_order(D, count, device=device) for c, D in d.items()} for d in distances]


def _cluster_graph(graph, k, epsilon, apsp_method, max_iter, backend, prog, info, power=None,
                   overseg=1.0, dists=None, starts=None, orders=None):
    """Cluster every component of ``graph``; returns (labels, P, reps, fuzzy) on its faces.

    ``overseg`` is a factor, or a tuple of factors: then each is tried on the same distance
    matrices and the result whose boundaries are the most concave on average
    (:func:`boundary_concavity`, no ground truth involved) is kept. ``dists``:
    :func:`graph_distances`'s matrices (a component missing there is computed here);
    ``orders``: their farthest-point orders (:func:`distance_orders`), re-used by every k.
    The clusterings of one component run in lockstep (:func:`fuzzy_cluster_many`).
    It is :func:`_clusterings` (what k and the iteration cap decide) and then :func:`_settle`
    (what epsilon decides: cuts, merges, the choice).
    """
    cl = _clusterings(graph, k, apsp_method, max_iter, backend, prog, info, power, overseg, dists, starts, orders,
                      early_epsilon=epsilon)
    return _settle(graph, cl, k, epsilon, prog, info)


def _clusterings(graph, k, apsp_method, max_iter, backend, prog, info, power=None, overseg=1.0, dists=None,
                 starts=None, orders=None, early_epsilon=None, memo=None, cuts=None) -> dict:
    """The first half of :func:`_cluster_graph`: every component's fuzzy clusterings (one per
    over-segmentation factor or auto-k start) on its distance matrix. Returns ``{"targets",
    "factors", "auto_starts", "blocks", "kused"}`` for :func:`_settle`.

    ``early_epsilon``: on a GPU (one mesh component, :data:`EARLY_SETTLE`), each clustering's
    cuts and merges for that epsilon start on a host thread as soon as it has converged, while
    the GPU iterates the others; :func:`_settle` takes them when its epsilon is the same
    (``"early"``; the same work, so the same result) and does the work itself otherwise.

    ``memo``: a dict kept with the distances (:attr:`PreparedMesh.memo`) that holds the
    clusterings of the auto-k starts' cluster counts (``AUTO_K_STARTS``), which every k uses
    and none changes: a k edit clusters only its own over-segmentations (issue 20). ``cuts``: a dict kept
    beside it that holds the fuzzy cuts of the clusterings made only of the memo's (the auto-k starts' cuts,
    which an integer k at k = "auto"'s k cuts again: :func:`_assemble_and_cut`)."""
    comp = graph.component
    sizes = np.bincount(comp, minlength=graph.n_components)
    careas = np.bincount(comp, weights=graph.areas, minlength=graph.n_components)
    targets = _k_per_component(k, sizes, careas, info["warnings"])
    factors = tuple(overseg) if isinstance(overseg, tuple | list) else (float(overseg),)
    asked = AUTO_K_STARTS if starts is None else starts
    # an integer k's starts (K_STARTS; None: the auto-k starts), memoized beside them
    k_asked = integer_k_starts() if starts is None else tuple(asked)
    memo_counts = {int(x) for x in asked} | {int(x) for x in k_asked}
    starts = (AUTO_K_START,)
    if isinstance(k, str):
        starts = tuple(int(x) for x in asked) or (AUTO_K_START,)
        if AUTO_K_RULE not in ("merge", "elbow"):
            starts = starts[:1]
        factors = (1.0,) * len(starts)
    auto_starts = starts if isinstance(k, str) and len(starts) > 1 else None
    ks_by = []
    for i_f, fac in enumerate(factors):
        row = []
        start = starts[i_f] if isinstance(k, str) else AUTO_K_START
        for c, t in enumerate(targets):
            if t == "auto":
                row.append(int(min(sizes[c], int(start))) if AUTO_K_RULE in ("merge", "elbow") else "auto")
            elif t == 1 or fac <= 1.0:
                row.append(t)
            else:
                row.append(int(min(sizes[c], math.ceil(fac * t))))
        ks_by.append(row)
    k_starts = ()
    if not isinstance(k, str) and K_FROM_AUTO_STARTS and k_asked:
        # (an integer k from k = "auto"'s over-segmentations too, where every one has more clusters)
        rows = [[t if t == 1 else int(min(sizes[c], int(st))) for c, t in enumerate(targets)] for st in k_asked]
        if all(r[c] >= t for r in rows for c, t in enumerate(targets)):
            k_starts = tuple(int(st) for st in k_asked)
            if K_STARTS_ONLY and factors == tuple(DEFAULT_OVERSEGMENT):
                # (the default factors' rows dropped: the starts' results alone; factors the caller
                # chose are kept beside the starts)
                factors, ks_by = (), rows
            else:
                ks_by += rows
    index = _component_index(graph)
    work = np.maximum(sizes.astype(np.float64), 1) ** 2
    wsum = work.sum()
    nf = len(ks_by)
    blocks = [[] for _ in ks_by]
    kused = [[] for _ in ks_by]
    iters, conv = [], []
    early = {} if (early_epsilon is not None and EARLY_SETTLE and ((backend.is_gpu and EARLY_WORKERS > 0)
                                                                   or EARLY_SETTLE_CPU)
                   and graph.n_components == 1) else None
    order, starts = index[0], index[1]
    memo_keyed = [set() for _ in range(graph.n_components)]  # per component: the counts from the memo
    trivial = [False] * graph.n_components
    t_apsp = t_clu = 0.0
    done = 0.0
    for c in range(graph.n_components):
        faces_c = order[starts[c]:starts[c + 1]]
        n = faces_c.size
        a0 = 0.05 + 0.75 * done / wsum
        # the APSP's share of a component's work, measured: ~95 % on the CPU (Dijkstra), less on a GPU
        a1 = 0.05 + 0.75 * (done + (0.8 if backend.is_gpu else 0.95) * work[c]) / wsum
        a2 = 0.05 + 0.75 * (done + work[c]) / wsum
        done += work[c]
        if targets[c] == 1 or n == 1:
            trivial[c] = True
            for i in range(nf):
                blocks[i].append((faces_c, np.ones((n, 1), np.float32), np.array([faces_c[0]])))
                kused[i].append(1)
            continue
        t0 = time.perf_counter()
        D = dists.get(c) if dists is not None else None
        if D is None:
            D = _component_apsp(graph, index, c, apsp_method, backend, prog.sub(a0, a1, "APSP"))
        t1 = time.perf_counter()
        prog.check()
        far = orders.get(c) if orders is not None else None
        want = list(dict.fromkeys(ks_by[i][c] for i in range(nf)))
        counts = [x for x in want if not isinstance(x, str)]
        sub = prog.sub(a1, a2)
        host: dict = {}
        # the auto-k starts' clusterings do not depend on k: kept on stage 1's output (``memo``),
        # on stage 1's distances only (a small component's, computed here, follow apsp_method,
        # which the key does not hold)
        mine = memo is not None and dists is not None and dists.get(c) is not None
        # (the key's last item: the batch the count is clustered in, MEMO_FIXED_BATCHES)
        keys = {x: _memo_key(c, x, max_iter, power, memo_counts) for x in counts if mine and x in memo_counts}
        hit = {x: memo[key] for x, key in keys.items() if key in memo}
        todo = [x for x in counts if x not in hit]
        memo_keyed[c] = {x: key[4] for x, key in keys.items()}

        def submit_early(x, reps_x, Pc, _c=c, _faces=faces_c, _keys=keys):
            ck = ((cuts, ("cut", (("m", x, _keys[x][4]),), int(max_iter), power)) if cuts is not None and x in _keys
                  else None)
            fut = None  # (rows with the same clustering, a factor's and a start's: one settle, the same result)
            for i in range(nf):
                if ks_by[i][_c] == x:
                    fut = fut or _settle_pool().submit(
                        _settle_one, graph, [(_faces, Pc, _faces[reps_x])], [int(np.asarray(reps_x).size)],
                        targets, k, early_epsilon, nf, ck)
                    early[i] = fut

        on_done = None
        if early is not None:
            _prime_lazy()
            for x, (fc_x, Pc_x) in hit.items():  # cut at once, while the GPU clusters the others
                submit_early(x, fc_x.reps, Pc_x)

            def on_done(j, reps_j, P_j, _todo=todo, _host=host):
                # a converged clustering: its memberships to the host, its cuts to the thread
                Pc = _host[_todo[j]] = asnumpy(P_j)
                submit_early(_todo[j], reps_j, Pc)
        try:
            # the memo's counts in a batch of their own (STARTS_OWN_BATCH): a product's rounding may
            # depend on the batch's other columns, and a memo hit must equal a fresh run
            if MEMO_FIXED_BATCHES and keys:
                groups = _memo_groups(todo, {x: key[4] for x, key in keys.items()})
            else:
                groups = ([[x for x in todo if x in keys], [x for x in todo if x not in keys]]
                          if STARTS_OWN_BATCH and keys else [todo])
            done_k = {}
            groups = [g for g in groups if g]  # (none where every count is a memo hit: no call at all)
            for i_g, grp in enumerate(groups):
                cb = None if on_done is None else (
                    lambda j, r, P, _g=grp, _od=on_done, _t=todo: _od(_t.index(_g[j]), r, P) if _g[j] in _t else None)
                gp = sub if len(groups) == 1 else sub.sub(i_g / len(groups), (i_g + 1) / len(groups))
                done_k.update(zip(grp, fuzzy_cluster_many(D, grp, max_iter=max_iter, power=power, progress=gp,
                                                          order=far, device=backend, on_done=cb), strict=True))
        except BaseException:  # cancelled or failed: the early cuts not started are dropped
            for fut in (early or {}).values():
                fut.cancel()
            raise
        for x in want:
            if isinstance(x, str):  # the farthest-point gap rule (AUTO_K_RULE "gap")
                done_k[x] = fuzzy_cluster(D, x, max_iter=max_iter, power=power, progress=sub, order=far)
        for x, (fc_x, Pc_x) in hit.items():
            done_k[x] = fc_x
            host[x] = Pc_x
        for x in want:
            iters.append(done_k[x].n_iter)
            conv.append(done_k[x].converged)
            done_k[x] = (done_k[x], host[x] if x in host else asnumpy(done_k[x].P))
            if x in keys and x not in hit:
                for old in [key for key in memo if key[2:4] != keys[x][2:4]]:
                    del memo[old]  # one iteration cap and power at a time: the memo stays small
                fc_x, Pc_x = done_k[x]
                memo[keys[x]] = (replace(fc_x, P=Pc_x), Pc_x)
        for i in range(nf):
            kc = ks_by[i][c]
            fc, Pc = done_k[kc]
            kused[i].append(fc.k)
            blocks[i].append((faces_c, Pc, faces_c[fc.reps]))
        del D
        t2 = time.perf_counter()
        t_apsp += t1 - t0
        t_clu += t2 - t1
    info["timings"]["apsp"] += t_apsp
    info["timings"]["clustering"] += t_clu
    info["iterations"] = iters
    info["converged"] = all(conv) if conv else True
    out = {"targets": targets, "factors": factors, "auto_starts": auto_starts, "blocks": blocks, "kused": kused,
           "k_starts": k_starts}
    if cuts is not None:  # the rows made only of the memo's clusterings (and one-part blocks): their cuts' keys
        out["cuts"] = (cuts, [_row_cut_key(ks_by[i], memo_keyed, trivial, max_iter, power) for i in range(nf)])
    if early:
        out["early"] = {"epsilon": float(early_epsilon), "futures": early}
    return out


def _row_cut_key(row, memo_keyed, trivial, max_iter, power):
    """The key of a row of clusterings (one count per component) in :func:`_clusterings`' ``cuts``: None unless
    every component's clustering is the memo's (or a one-part block)."""
    parts = []
    for c, x in enumerate(row):
        if trivial[c]:
            parts.append(("1",))
        elif x in memo_keyed[c]:
            parts.append(("m", x, memo_keyed[c][x]))
        else:
            return None
    return ("cut", tuple(parts), int(max_iter), power)


def _settle(graph, cl: dict, k, epsilon, prog, info):
    """The second half of :func:`_cluster_graph`: each clustering's fuzzy faces cut, its
    clusters merged down to k, and the result kept (the most concave boundaries; k = "auto":
    the medoid of the starts). Returns (labels, P, reps, fuzzy); ``cl`` is not modified."""
    nf = len(cl["blocks"])
    early = cl.get("early")
    if early is not None and early["epsilon"] != float(epsilon):
        # another epsilon than the guess: the guess's cuts not started yet are not wanted (left
        # queued, they would hold the one host thread and compete with the cuts done here)
        for fut in early["futures"].values():
            fut.cancel()
        early = None
    early = dict(early["futures"]) if early is not None else {}
    for i, fut in list(early.items()):
        if fut.cancel():  # not started on the thread: done here, while the thread finishes its own
            del early[i]
    cuts, cut_keys = cl.get("cuts", (None, [None] * nf))
    # the rows left to cut here, on the rows pool's threads at once (SETTLE_WORKERS; the same work, so the same result)
    pending = _submit_rows(graph, cl, k, epsilon, early, cuts, cut_keys, prog)
    try:
        return _settle_rows(graph, cl, k, epsilon, prog, info, early, pending, cuts, cut_keys)
    except BaseException:
        _drop_rows(pending)
        raise


def _submit_rows(graph, cl, k, epsilon, early, cuts, cut_keys, prog) -> dict:
    """{row: its future on the settle pool} for the rows :func:`_settle_rows` would cut itself (neither cut early
    nor the same clusterings as an earlier row it cut), when :data:`SETTLE_WORKERS` > 1 and the graph has at least
    :data:`PARALLEL_ROWS_MIN_FACES` faces; {} otherwise, and with :data:`EARLY_SETTLE` off (what the quality
    benchmarks' recorders turn off for the rows' cuts in their order)."""
    if SETTLE_WORKERS <= 1 or not EARLY_SETTLE or graph.n < PARALLEL_ROWS_MIN_FACES:
        return {}
    blocks, kused, targets = cl["blocks"], cl["kused"], cl["targets"]
    nf = len(blocks)
    quiet = Progress(None, prog._cancel) if isinstance(prog, Progress) else None  # (its cancel flag only)
    seen, todo = {}, []
    for i in range(nf):
        same = (tuple(id(b[1]) for b in blocks[i]), tuple(kused[i]))
        if i in early:
            seen[same] = "early"
        elif same not in seen or seen[same] == "early":  # (as _settle_rows decides)
            seen[same] = "row"
            todo.append(i)
    if len(todo) < 2:
        return {}
    _prime_lazy()
    pool = _rows_pool()
    return {i: pool.submit(_settle_row, graph, blocks[i], kused[i], targets, k, epsilon, nf,
                           (cuts, cut_keys[i]) if cuts is not None and cut_keys[i] else None, quiet) for i in todo}


def _prime_lazy() -> None:
    """What the rows' cuts and merges load on first use, loaded here on the calling thread before rows go to
    threads: the learned models (decoded under their own lock since session 18's review: two threads loading them at
    once had left the integer k's model where k = "auto"'s is read; k = "auto" on 101.off came out k 5 instead of 6),
    the compiled loops' modules and the trees' compiled prediction: no row's time is spent loading them."""
    from gpu_kernels.mesh import learned as _learned

    with _POOL_LOCK:
        _learned.shipped_model()
        _learned.shipped_auto_model()
        _bd.compiled()
        _bd.compiled_merge()
        _learned._compiled_predict()


def _settle_row(graph, blocks, kused, targets, k, epsilon, nf, cut=None, progress=None):
    """One row of :func:`_settle_rows` on a pool thread: ``(result, its info, its score)`` (as :func:`_settle_one`;
    ``progress``: a quiet Progress whose cancel flag the cut and the merges check)."""
    trial = {"timings": {"cut": 0.0}, "warnings": []}
    if cut is not None:
        trial["cut_cache"] = cut
    res = _assemble_and_cut(graph, blocks, kused, targets, k, epsilon, progress, trial)
    return res, trial, (boundary_concavity(graph, res[0]) if nf > 1 else 0.0)


def _drop_rows(pending: dict) -> None:
    """After a cancel or an error: the rows not started are dropped, the running ones waited for (they share the
    job's cancel flag and stop at their next check); their own outcomes are not wanted."""
    for fut in pending.values():
        fut.cancel()
    for fut in pending.values():
        with contextlib.suppress(BaseException):
            fut.result()


def _settle_rows(graph, cl, k, epsilon, prog, info, early, pending, cuts, cut_keys):
    """:func:`_settle` once the rows are handed out: each row's result (from the early cuts, ``pending`` or cut
    here), then the choice."""
    targets, factors, auto_starts = cl["targets"], cl["factors"], cl["auto_starts"]
    blocks, kused = cl["blocks"], cl["kused"]
    nf = len(blocks)
    k_starts = cl.get("k_starts", ())
    best = None
    scores, results, trials = [], [], []
    # rows of the same clusterings (an integer k's factor and an auto-k start with the same count): settled once
    seen: dict = {}
    for i in range(nf):
        same = (tuple(id(b[1]) for b in blocks[i]), tuple(kused[i]))
        if i in pending:
            res, trial, score = pending[i].result()
            prog.update(0.8 + 0.15 * (i + 1) / nf)
            seen[same] = (res, trial, score)
        elif i in early:  # cut on the thread while the GPU clustered (_clusterings' early_epsilon)
            res, trial, score = early[i].result()
            trial = _copy_info(trial)
            if any(f is early[i] for f in seen.values()):
                trial["timings"] = {"cut": 0.0}  # (its time is counted once)
            seen[same] = early[i]
        elif same in seen and not hasattr(seen[same], "result"):
            res, trial, score = seen[same]
            trial = {**_copy_info(trial), "timings": {"cut": 0.0}}
        else:
            trial = {"timings": {"cut": 0.0}, "warnings": []}
            if cuts is not None and cut_keys[i]:
                trial["cut_cache"] = (cuts, cut_keys[i])
            cut_prog = prog.sub(0.8 + 0.15 * i / nf, 0.8 + 0.15 * (i + 1) / nf)
            res = _assemble_and_cut(graph, blocks[i], kused[i], targets, k, epsilon, cut_prog, trial)
            score = boundary_concavity(graph, res[0]) if nf > 1 else 0.0
            seen[same] = (res, trial, score)
        scores.append(score)
        results.append(res)
        trials.append(trial)
        info["timings"]["cut"] += trial["timings"]["cut"]
        # a result that kept every cluster beats one that lost some to the cut
        key = (int(np.unique(res[0]).size), score)
        if best is None or key[0] > best[0][0] or (key[0] == best[0][0] and score > best[0][1] + 1e-12):
            best = (key, i, res, trial)
    if auto_starts or k_starts:
        # k = "auto" from several over-segmentations, or an integer k from the factors and the
        # auto-k starts: the medoid of the results
        j = choose_consensus(graph, [r[0] for r in results], rule="medoid")[0]
        best = ((int(np.unique(results[j][0]).size), scores[j]), j, results[j], trials[j])
    elif OVERSEG_RULE == "medoid" and nf > 2:
        full = [j for j in range(nf) if int(np.unique(results[j][0]).size) == best[0][0]]
        if len(full) > 2:
            agree = {j: sum(labels_agreement(results[j][0], results[m][0], graph.areas) for m in full if m != j)
                     for j in full}
            top = max(agree.values())
            j = max((j for j in full if agree[j] >= top - 1e-9), key=lambda j: scores[j])
            best = ((best[0][0], scores[j]), j, results[j], trials[j])
    _, i, res, trial = best
    for key in ("cut", "merges", "merge_strengths", "k_per_component", "k_clustered_per_component"):
        if key in trial:
            info[key] = trial[key]
    if auto_starts:
        info["auto_k_starts"] = {int(st): int(np.unique(r[0]).size) for st, r in zip(auto_starts, results, strict=True)}
        info["auto_k_start_used"] = int(auto_starts[i])
    elif nf > 1:
        info["oversegment_scores"] = {float(f): float(sc) for f, sc in zip(factors, scores[:len(factors)], strict=True)}
        info["oversegment_used"] = float(factors[i]) if i < len(factors) else f"start {k_starts[i - len(factors)]}"
        if k_starts:
            info["k_start_scores"] = {int(st): float(sc) for st, sc in zip(k_starts, scores[len(factors):], strict=True)}
    return res


#: the auto-k starts' cluster counts (what :attr:`PreparedMesh.memo` keeps) are clustered in a batch
#: of their own (:func:`fuzzy_cluster_many`), apart from an integer k's factors: a GPU matrix
#: product's rounding can depend on the other columns of its batch, so a memo hit filled by
#: k = "auto" would not always equal a fresh integer-k run (session 7: the reviewer's finding). Since session 20 the
#: memo also keeps an integer k's starts, so this one batch held them all; MEMO_FIXED_BATCHES (on) splits it in two
#: fixed batches and this switch is read only where that one is off
STARTS_OWN_BATCH = True
#: the memo's cluster counts (the auto-k starts and an integer k's starts, K_STARTS) are clustered in two fixed
#: batches, the auto-k starts and the others (:func:`_memo_batch`), whichever k asks: a GPU product's rounding depends
#: on its batch's shape, so the auto-k starts batched with an integer k's other starts (sessions 20-27, one batch of
#: seven) could give k = "auto" other parts after an integer k than fresh (session 28). False: the batch of the counts
#: asked (STARTS_OWN_BATCH)
MEMO_FIXED_BATCHES = True


def _memo_counts() -> set:
    """The cluster counts :func:`_clusterings` memoizes when no ``starts`` are given: the auto-k starts and an
    integer k's (:func:`integer_k_starts`)."""
    return {int(x) for x in AUTO_K_STARTS} | {int(x) for x in integer_k_starts()}


def _memo_key(c: int, x: int, max_iter: int, power, memo_counts) -> tuple:
    """A clustering's key in :attr:`PreparedMesh.memo`'s dict of one resolution: (component, cluster count, iteration
    cap, power, its batch (:func:`_memo_batch`))."""
    return (c, int(x), int(max_iter), power, _memo_batch(int(x), memo_counts))


def _memo_groups(todo: list, batch_of: dict) -> list:
    """The clustering calls for the counts ``todo`` (:data:`MEMO_FIXED_BATCHES`): each memo batch that holds one of
    them, whole (its other counts too, so that a count's clustering does not depend on which k asked for it first),
    then the counts that are not the memo's (``batch_of``: memo count -> its batch), in one call."""
    return [list(g) for g in dict.fromkeys(batch_of[x] for x in todo if x in batch_of)] + [
        [x for x in todo if x not in batch_of]]


def _memo_batch(x: int, memo_counts) -> tuple | None:
    """The batch the memo's count ``x`` is clustered in (:data:`MEMO_FIXED_BATCHES`): the auto-k starts among
    ``memo_counts`` where ``x`` is one of them, else the other counts, each sorted; None where the switch is off."""
    if not MEMO_FIXED_BATCHES:
        return None
    auto = {int(a) for a in AUTO_K_STARTS}
    mine = x in auto
    return tuple(sorted(int(c) for c in memo_counts if (int(c) in auto) == mine))
#: on a GPU, an over-segmentation's cuts and merges start on a host thread once its clustering
#: has converged, while the GPU iterates the others (:func:`_clusterings`' ``early_epsilon``;
#: issue 20). ``GPULAB_MESH_EARLY_SETTLE=0`` or False: after every clustering, in turn
EARLY_SETTLE = flag("GPULAB_MESH_EARLY_SETTLE", True)
#: the same on the CPU (the tests' switch: there the clusterings compete with it for the cores)
EARLY_SETTLE_CPU = False
#: the rows pool's threads (:func:`_rows_pool`): the rows :func:`_settle` cuts itself run on this many host threads
#: at once (the cuts' and merges' compiled loops release the GIL), not one after the other on
#: one thread (sessions 10-17). A row's result does not depend on the others', so it is the same result (session 18,
#: the full-resolution k edit: seven rows of cuts and merges on a 17k-face graph). ``GPULAB_MESH_SETTLE_WORKERS``; 1:
#: the old way (one early-cut thread, the other rows in turn on the caller's thread)
def _env_count(name: str, default: int) -> int:
    """A count from the environment variable ``name`` (a whole number >= 0); ``default`` where it is unset, empty or
    not such a number (a typo in a shell must not stop the library from importing)."""
    text = os.environ.get(name, "").strip()
    return int(text) if text.isdigit() else default


SETTLE_WORKERS = max(1, _env_count("GPULAB_MESH_SETTLE_WORKERS", 0) or min(4, os.cpu_count() or 1))
#: on a GPU, the early cuts' threads (:func:`_settle_pool`) beside the clusterings' loop: 0 = no early cuts (every
#: row cut after the loop, on the rows pool's SETTLE_WORKERS threads), 1 = one thread (sessions 10-17). Session 18
#: (H100, 17k at full resolution): the threads beside the loop slow it (the cluster stage's median 35 ms with none,
#: 47 with one, 55 with four: their NumPy code holds the GIL between the loop's GPU steps). ``GPULAB_MESH_EARLY_WORKERS``
EARLY_WORKERS = _env_count("GPULAB_MESH_EARLY_WORKERS", 1)
#: the rows go to the rows pool only on a graph of at least this many faces (a full-resolution mesh): at the
#: default working resolution (3,500 faces) a row is ~1-3 ms of host work and the threads' hand-over and GIL
#: contention ate the gain (session 18, call 4: the segment stage 18-22 ms in turn, 25-33 on the threads), so the
#: default path keeps the rows in turn as before
PARALLEL_ROWS_MIN_FACES = 8000
#: on a GPU, the full-to-working nearest faces (a k-d tree search on the host, ~6 ms at 17k faces) run on a thread
#: of their own beside the working mesh's thickness and APSP on the GPU (True), instead of after them (False:
#: sessions 8-14). The same search on the same arrays (issue 22). On since session 15: its pre-registered rule passed
#: in one complete run on the H100 (17k: -7.8 ms paired end to end, the path after pymeshlab's step -6.2 ms, shorter in
#: 37 of 41 rounds; 50k: 343.1 against 351.7 ms at the median; SHA-1s equal): benchmarks/results/mesh_speed_session15.md
NEAREST_BESIDE = True
#: the same on the CPU (the tests' switch)
NEAREST_BESIDE_CPU = False
#: the rows (full-resolution faces) per thread of that search beside the GPU work (None: every core, as after it).
#: Session 14 (H100): on every core (16) the search slowed the thickness beside it from 3.8 to 7.3 ms and the path
#: after pymeshlab's step did not get shorter at 17k (call 1); two threads shortened it by 5.2 ms at 17k but
#: lengthened it by 8.0 at 50k (call 2); threads in proportion to the rows keep each one's share as at 17k
NEAREST_BESIDE_ROWS = 9000
_POOL: list = []
_POOL_LOCK = threading.Lock()


_LAYOUT_POOL: list = []
_ROWS_POOL: list = []


def _pool_after_fork() -> None:
    """In a forked child: fresh locks (the parent's may have been held by another thread at
    the fork, a row's cut-cache store included, and would then never be released here) and no executor (its
    thread is not there)."""
    global _POOL_LOCK, _CUT_LOCK
    _POOL_LOCK = threading.Lock()
    _CUT_LOCK = threading.Lock()
    _POOL.clear()
    _LAYOUT_POOL.clear()
    _ROWS_POOL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_pool_after_fork)


def _settle_pool():
    """The host threads of the early cuts (:data:`EARLY_WORKERS`, at least one; made on first use, and again in a
    forked child, which does not inherit the threads)."""
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] != os.getpid():
            from concurrent.futures import ThreadPoolExecutor

            _POOL[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=max(1, EARLY_WORKERS),
                                                         thread_name_prefix="mesh-early-cut"))]
        return _POOL[0][1]


def _rows_pool():
    """The host threads of the rows :func:`_settle` cuts itself (:data:`SETTLE_WORKERS`), apart from the early cuts'
    (whose threads may still cut rows for another epsilon, and are not waited for)."""
    with _POOL_LOCK:
        if not _ROWS_POOL or _ROWS_POOL[0][0] != os.getpid() or _ROWS_POOL[0][2] != SETTLE_WORKERS:
            from concurrent.futures import ThreadPoolExecutor

            _ROWS_POOL[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=SETTLE_WORKERS,
                                                              thread_name_prefix="mesh-settle-row"), SETTLE_WORKERS)]
        return _ROWS_POOL[0][1]


def _layout_pool():
    """The one host thread of :data:`LAYOUT_OVERLAP`'s cut (apart from the early cuts' thread, which the integer
    k's clusterings use meanwhile)."""
    with _POOL_LOCK:
        if not _LAYOUT_POOL or _LAYOUT_POOL[0][0] != os.getpid():
            from concurrent.futures import ThreadPoolExecutor

            _LAYOUT_POOL[:] = [(os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="mesh-layout-cut"))]
        return _LAYOUT_POOL[0][1]


def _settle_one(graph, blocks, kused, targets, k, epsilon, nf, cut=None):
    """One over-segmentation's part of :func:`_settle`: ``(result, its info, its score)``."""
    trial = {"timings": {"cut": 0.0}, "warnings": []}
    if cut is not None:
        trial["cut_cache"] = cut
    res = _assemble_and_cut(graph, blocks, kused, targets, k, epsilon, None, trial)
    return res, trial, (boundary_concavity(graph, res[0]) if nf > 1 else 0.0)


def _membership_scale(graph) -> float:
    """The dual-graph cost of crossing MEMBERSHIP_SPACINGS reference spacings of flat surface."""
    from gpu_kernels.mesh.dualgraph import GEOD_FLOOR

    return MEMBERSHIP_SPACINGS * (max(graph.delta, 0.01) + GEOD_FLOOR)


def boundary_concavity(graph, labels) -> float:
    """Edge-length-weighted mean of ``1 - cos(dihedral)`` over concave arcs between different
    labels (convex arcs count 0): how well the boundaries follow concave creases."""
    lab = np.asarray(labels)
    cut = lab[graph.src] != lab[graph.dst]
    if not cut.any():
        return 0.0
    L = graph.edge_length[cut] if graph.edge_length is not None else np.ones(int(cut.sum()))
    return float((L * _bd.merge_concavity(graph)[cut]).sum() / max(L.sum(), 1e-300))


#: the cut caches' (:func:`_assemble_and_cut`) evictions (the early cuts' thread and the caller both add)
_CUT_LOCK = threading.Lock()


def _assemble_and_cut(graph, blocks, kused, targets, k, epsilon, prog, info):
    """One row of clusterings (a block per component) assembled, its fuzzy faces cut, its clusters merged to
    the targets. ``info["cut_cache"]`` (taken out of ``info``): ``(cache, key)`` (:func:`_clusterings`'
    ``cuts``): the fuzzy cut is taken from the cache when it holds it for this epsilon (the same clusterings,
    so the same cut), else stored there."""
    F = graph.n
    K = int(sum(b[1].shape[1] for b in blocks))
    P = np.zeros((F, K), dtype=np.float32)
    reps = np.zeros(K, dtype=np.int64)
    col = 0
    for faces_c, Pc, rc in blocks:
        kc = Pc.shape[1]
        P[faces_c, col:col + kc] = Pc
        reps[col:col + kc] = rc
        col += kc
    info["k_per_component"] = list(kused)
    t0 = time.perf_counter()
    cache, ckey = info.pop("cut_cache", None) or (None, None)
    ckey = None if cache is None or ckey is None else ckey + (float(epsilon),)
    hit = cache.get(ckey) if ckey is not None else None
    if hit is not None:
        fuzzy, labels, st = hit[0].copy(), hit[1].copy(), dict(hit[2])
    else:
        fuzzy = _bd.fuzzy_faces(P, epsilon)
        labels, st = _bd.resolve_fuzzy_regions(graph, P, fuzzy, progress=prog)
        if ckey is not None:
            with _CUT_LOCK:  # one iteration cap, power and epsilon at a time: the cache stays small
                for old in [key for key in cache if key[2:] != ckey[2:]]:
                    del cache[old]
                cache[ckey] = (fuzzy.copy(), labels.copy(), dict(st))
    info["timings"]["cut"] += time.perf_counter() - t0
    info["cut"] = st
    info["k_clustered_per_component"] = list(kused)
    auto_merge = AUTO_K_RULE in ("merge", "elbow") and any(t == "auto" for t in targets)
    if auto_merge or any(t != "auto" and a > t for a, t in zip(kused, targets, strict=True)):
        labels, P, reps = _merge_to_targets(graph, labels, P, reps, kused, targets, info, progress=prog)
        info["k_per_component"] = [int(np.unique(labels[graph.component == c]).size)
                                   for c in range(len(kused))]
    return labels, P, reps, fuzzy


def elbow_stop(strengths) -> int:
    """How many merges of a merge curve to keep (``AUTO_K_RULE = "elbow"``).

    ``strengths`` are the boundary strengths of the merges in order (weakest first, from
    AUTO_K_START clusters down to 2). Their running maximum is a rising curve; scaled to the
    unit square, its elbow is the point farthest below the chord from its first to its last
    point (Kneedle). The merges up to the elbow are kept, and at least every merge before
    the first one whose boundary is as strong as AUTO_K_STRENGTH.
    """
    st = np.asarray(strengths, dtype=np.float64)
    m = st.size
    if m < 3:
        return int(np.count_nonzero(st < AUTO_K_STRENGTH))
    cm = np.maximum.accumulate(st)
    span = cm[-1] - cm[0]
    if not span > 0:
        return m
    x = np.arange(m) / (m - 1)
    y = (cm - cm[0]) / span
    knee = int(np.argmax(x - y))
    n = knee + 1
    strong = st >= AUTO_K_STRENGTH
    floor = int(np.argmax(strong)) if strong.any() else m
    return int(max(n, floor))


def k_merge_graph(graph):
    """``graph`` as an integer k's merges see it: its thickness raised to the power
    ``K_SDF_MERGE / SDF_MERGE``, which scales every cluster's mean log thickness and so makes
    the merges' thickness contrast ``K_SDF_MERGE`` (cached on the graph)."""
    from gpu_kernels.mesh import dualgraph as _dg

    th = getattr(graph, "thickness", None)
    if th is None or K_SDF_MERGE is None or not _dg.SDF_MERGE > 0 or K_SDF_MERGE == _dg.SDF_MERGE:
        return graph
    key = (float(K_SDF_MERGE), float(_dg.SDF_MERGE))
    cached = getattr(graph, "_k_merge_graph", None)
    if cached is None or cached[0] != key or cached[1].thickness.shape != th.shape:
        cached = (key, replace(graph, thickness=np.power(th, key[0] / key[1])))
        graph._k_merge_graph = cached
    return cached[1]


def absorb_small_parts(graph, labels, label_comp, comps, min_share: float, strengths: list | None = None,
                       progress=None):
    """k = "auto"'s last step: in each component of ``comps``, merge down to the number of parts
    holding at least ``min_share`` of the component's area, the smallest parts first, each into
    the neighbour it shares the longest boundary with
    (:func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries`' slivers). Returns
    ``(labels, merges)``; nothing changes where no part is that small."""
    lab = np.asarray(labels)
    if not min_share > 0 or not comps:
        return lab, []
    K = int(np.asarray(label_comp).size)
    lc = np.asarray(label_comp, dtype=np.int64)
    area = np.bincount(lab, weights=graph.areas, minlength=K)
    present = np.bincount(lab, minlength=K) > 0
    comp_area = np.bincount(lc, weights=area)
    share = area / np.maximum(comp_area[lc], 1e-300)
    tg = {}
    for c in comps:
        mine = present & (lc == c)
        big = int(np.count_nonzero(mine & (share >= min_share)))
        if 1 <= big < int(np.count_nonzero(mine)):
            tg[c] = big
    if not tg:
        return lab, []
    return _bd.merge_weakest_boundaries(graph, lab.astype(np.int32), tg, lc, strengths=strengths,
                                        min_area=min_share, progress=progress)


def _merge_to_targets(graph, labels, P, reps, ks, targets, info, *, progress=None):
    """Merge over-segmented clusters along their least concave boundaries (see
    :func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries`; an integer k's merges weigh
    thickness contrast by K_SDF_MERGE: :func:`k_merge_graph`). ``progress``: the row's Progress, whose
    cancel the merge loops check."""
    t0 = time.perf_counter()
    labels, _ = _bd.merge_islands(graph, labels)
    label_comp = np.repeat(np.arange(len(ks)), ks)
    tg = {c: (min(2, int(kc)) if t == "auto" else int(t)) for c, (t, kc) in enumerate(zip(targets, ks, strict=True))}
    auto = {c for c, t in enumerate(targets) if t == "auto"}
    strengths: list = []
    learned_auto = bool(auto) and _defaults.DEFAULT_AUTO_MERGE == "learned"
    if learned_auto:  # k = "auto" by the learned score's order and stop (defaults.DEFAULT_AUTO_MERGE; session 11)
        from gpu_kernels.mesh import learned as _learned

        labels, merges, strengths = _learned.auto_merge(graph, labels, tg, label_comp, auto, min_area=MIN_PART_AREA,
                                                        min_share=AUTO_K_MIN_PART, progress=progress)
    elif auto or _defaults.DEFAULT_K_MERGE == "hand" or max(tg.values(), default=0) > _defaults.LEARNED_MAX_K:
        merged, merges = _bd.merge_weakest_boundaries(graph if auto else k_merge_graph(graph), labels, tg, label_comp,
                                                      strengths=strengths, min_area=MIN_PART_AREA, progress=progress)
    else:  # an integer k's merges by the learned score (defaults.DEFAULT_K_MERGE; session 11)
        from gpu_kernels.mesh import learned as _learned

        merged, merges = _learned.k_merge(k_merge_graph(graph), labels, tg, label_comp, strengths=strengths,
                                          min_area=MIN_PART_AREA, progress=progress)
    if learned_auto:
        pass  # (the labels, merges and strengths are the learned stop's)
    elif auto:
        # k = "auto": the merges were run down to 2 clusters; keep those before the first
        # boundary that is strong in absolute terms (AUTO_K_STRENGTH) and against the
        # strongest boundary of the same component (AUTO_K_RELATIVE of it)
        comp_of = [int(label_comp[keep]) for keep, _ in merges]
        # (the strongest boundary, each weighted by its smaller part's area share: autok.py)
        shares = _autok.merge_shares(graph.areas, labels, merges, label_comp)
        smax = {c: _autok.reference_strength([st for st, cc in zip(strengths, comp_of, strict=True) if cc == c],
                                             [sh for sh, cc in zip(shares, comp_of, strict=True) if cc == c])
                for c in auto}
        thr = {c: max(AUTO_K_STRENGTH, AUTO_K_RELATIVE * smax[c]) for c in auto}
        # (the first merge over the bar, or a bigger step of the merge curve just after it: autok.stop_index)
        stop_at = _autok.stop_index if AUTO_K_RULE != "elbow" else (lambda st, *_a, **_k: elbow_stop(st))
        n_keep = {c: stop_at([st for st, cc in zip(strengths, comp_of, strict=True) if cc == c], thr[c],
                             floor=AUTO_K_STRENGTH) for c in auto}
        kept, kept_st = [], []
        seen = dict.fromkeys(auto, 0)
        for (keep, gone), st, c in zip(merges, strengths, comp_of, strict=True):
            if c in auto:
                seen[c] += 1
                if seen[c] > n_keep[c]:
                    continue
            kept.append((keep, gone))
            kept_st.append(st)
        lab = np.asarray(labels).astype(np.int64).copy()
        for keep, gone in kept:
            lab[lab == gone] = keep
        # (then the parts under AUTO_K_MIN_PART of their component join a neighbour)
        extra_st: list = []
        lab, extra = absorb_small_parts(graph, lab.astype(np.int32), label_comp, auto, AUTO_K_MIN_PART, extra_st,
                                        progress=progress)
        kept, kept_st = kept + list(extra), kept_st + extra_st
        labels, merges, strengths = np.asarray(lab).astype(np.int32), kept, kept_st
        info["auto_k_threshold"] = {int(c): float(v) for c, v in thr.items()}
    else:
        labels = merged
    info["merge_strengths"] = strengths
    P = P.copy()
    for keep, gone in merges:
        P[:, keep] += P[:, gone]
        P[:, gone] = 0.0
    used = np.bincount(labels, minlength=P.shape[1]) > 0
    remap = np.cumsum(used) - 1
    labels = remap[labels].astype(np.int32)
    P = P[:, used]
    P /= np.maximum(P.sum(axis=1, keepdims=True), 1e-30)
    reps = reps[used]
    info["merges"] = len(merges)
    info["timings"]["cut"] += time.perf_counter() - t0
    return labels, P.astype(np.float32), reps


def _finish_labels(graph, labels, P, reps, info):
    """Island merging and compaction of empty clusters."""
    labels, st = _bd.merge_islands(graph, labels)
    info["islands_merged"] = st["n_islands_merged"]
    if st["n_islands_merged"]:
        msg = (f"{st['n_islands_merged']} stray patches ({100 * st['area_merged']:.2f}% of the area) "
               "were merged into a neighbouring segment so that every segment is connected")
        if st["area_merged"] > 0.02:
            info["warnings"].append(msg)
        else:
            info.setdefault("notes", []).append(msg)
    K = P.shape[1]
    used = np.bincount(labels, minlength=K) > 0
    if not used.all():
        info["warnings"].append(f"{int((~used).sum())} clusters lost all their faces to the "
                                "boundary cut and were removed")
        remap = np.cumsum(used) - 1
        labels = remap[labels].astype(np.int32)
        P = P[:, used]
        s = P.sum(axis=1, keepdims=True)
        # a face whose memberships were all in removed clusters: give it its label
        zero = s[:, 0] <= 0
        P = np.where(s > 0, P / np.where(s > 0, s, 1), 0).astype(np.float32)
        if zero.any():
            P[zero, labels[zero]] = 1.0
        reps = reps[used]
    return labels.astype(np.int32), P.astype(np.float32), reps


def segment_mesh(vertices, faces, *, k="auto", delta=None, eta_convex=None,
                 epsilon=DEFAULT_EPSILON, apsp_method="auto", max_iter=DEFAULT_MAX_ITER,
                 max_faces=DEFAULT_MAX_FACES,
                 simplify=False, device=None, progress=None,
                 update_power=None, oversegment=None, shading=DEFAULT_SHADING,
                 consensus=False, simplifier="auto", prepared=None, clustered=None,
                 refine_boundaries=DEFAULT_REFINE_BOUNDARIES,
                 auto_layout=DEFAULT_AUTO_LAYOUT) -> MeshSegmentation:
    """Segment a triangle mesh into k parts by fuzzy clustering and minimum cuts.

    Parameters
    ----------
    vertices : (V, 3) float
    faces : (F, 3) int
    k : int or "auto"
        Number of segments (distributed across connected components), or ``"auto"`` for
        the farthest-point gap rule per component.
    delta : float in [0, 1], optional
        Weight of the geodesic term in the dual-graph distance (``None``: ``DEFAULT_DELTA``).
    eta_convex : float, optional
        Angular-distance factor of convex edges (``None``: ``DEFAULT_ETA_CONVEX``).
    epsilon : float
        Faces whose two best memberships differ by at most this are fuzzy.
    apsp_method : {"auto", "gpu-sym", "gpu", "cpu", "cpu-mt"}
    max_iter : int
        Cap on the representative-update iterations.
    max_faces : int, "auto" or None
        The clustering (working) resolution. An int: a mesh with more faces is simplified
        to about that many first; the memberships are carried back to every face and the
        boundaries re-cut at full resolution. ``"auto"`` (default): :func:`working_faces`,
        i.e. ``WORKING_FACES`` for a larger mesh (on every device). ``None``: the full
        resolution (see ``simplify``).
    simplify : bool or "auto"
        With ``max_faces=None``: ``True``/``"auto"`` simplifies when the distance matrix
        would not fit; ``False`` raises :class:`MeshTooLargeError` instead.
    device : str or Backend, optional
    progress : callable or Progress, optional
    update_power : float, optional
        Exponent m in the representative update ``argmin_f sum_i P_j(f_i)^m d(f, f_i)``
        (``None``: ``DEFAULT_UPDATE_POWER``; 1 is the update exactly as Katz & Tal write it).
    oversegment : float or tuple of floats, optional
        With an integer k, cluster into ``ceil(oversegment * k)`` parts and merge adjacent
        clusters along their weakest boundaries down to k; with several factors, each is
        tried and the result with the most concave boundaries is kept (``None``:
        ``DEFAULT_OVERSEGMENT``; 1 disables merging). Not used with ``k="auto"``. Where k is
        at most the smallest of :data:`K_STARTS` (:data:`K_FROM_AUTO_STARTS`), the default
        factors are not run and the medoid of the starts' results is kept
        (:data:`K_STARTS_ONLY`); other factors given here are run beside the starts and the
        medoid of all the results is kept.
    consensus : bool, optional
        With ``max_faces="auto"``: also cluster at ``CONSENSUS_RESOLUTIONS`` x the working
        resolution (1,750 and 5,250 faces besides 3,500) and keep the result that agrees best
        with the others (:func:`choose_consensus`). About 3x the clustering work (the 6,000-face
        APSP is 3.4x the 4,000-face one on a CPU); cross-validated on the PSB (at 2,000 / 4,000 / 6,000): 0.165 against
        0.176 (protocol k), 0.187 against 0.197 (auto k, same threshold). ``None``:
        ``CONSENSUS_SCALES`` (no consensus by default).
    simplifier : {"auto", "fast", "pymeshlab", "fast+pymeshlab"}, optional
        How the working resolution is made (:func:`gpu_kernels.mesh.simplify.simplify_mesh`;
        ``None``: ``simplify.SIMPLIFIER``). "fast" is about 3x quicker end to end on a 50k-face
        mesh but cross-validates at 0.198 against 0.176.
    shading : float in [0, 1]
        How far the least certain faces of ``face_colors`` move towards white
        (:func:`gpu_kernels.mesh.colors.blend_face_colors`; 0: flat part colours).
    prepared : PreparedMesh, optional
        :func:`prepare_mesh`'s result for these vertices and faces (then ``delta``,
        ``eta_convex``, ``max_faces``, ``simplify``, ``consensus`` and ``simplifier`` are
        those it was made with): the run starts at the clustering (the distances are in it).
    clustered : ClusteredMesh, optional
        :func:`cluster_prepared`'s result for ``prepared`` (then k, epsilon, the iteration cap,
        ``update_power``, ``oversegment`` and ``shading`` are those it was made with): the run
        starts at the full-resolution cut, the clustering re-used. The tool's last stage
        (:mod:`app.tools.mesh_seg`) calls it so: a change of ``refine_boundaries`` starts there.
    refine_boundaries : bool
        After clustering at a working resolution, re-cut the parts' boundaries on the
        full-resolution graph (smoother boundaries along the full mesh's creases); False: every
        face takes its nearest working face's part. No effect without a working resolution.
    auto_layout : {"auto", "concave"}
        With ``k="auto"``: "concave" also clusters the integer k at the k that k = "auto" chose and keeps
        the result with the more concave boundaries (:func:`gpu_kernels.mesh.autok.relayout`'s rule, decided
        where :data:`gpu_kernels.mesh.autok.LAYOUT_DECIDE` says: the working mesh; one integer-k clustering
        more, with ``clustered``'s parameters where it is given, kept on it). "auto": k = "auto"'s own
        result. Not used with an integer k.
        Default ``defaults.DEFAULT_AUTO_LAYOUT``.

    Raises
    ------
    MeshInputError, MeshTooLargeError, gpu_kernels.jobs.Cancelled, BackendError
    """
    t_start = time.perf_counter()
    prog = as_progress(progress)
    backend = get_backend(device)
    auto_layout = _autok.check_layout(auto_layout)  # (a bad value is one line on every path)
    if clustered is not None:
        if prepared is None:
            raise MeshInputError("clustered= needs the prepared= mesh it was clustered from")
        return _cut_and_lay_out(prepared, clustered, refine_boundaries=refine_boundaries, auto_layout=auto_layout,
                                device=backend, progress=prog)
    seg_kw = _segment_params(k, epsilon, max_iter, update_power, oversegment, shading)
    prep = prepared if prepared is not None else prepare_mesh(
        vertices, faces, delta=delta, eta_convex=eta_convex, max_faces=max_faces, simplify=simplify,
        consensus=consensus, simplifier=simplifier, apsp_method=apsp_method, device=backend,
        progress=prog.sub(0.0, 0.4))
    seg = segment_prepared(prep, apsp_method=apsp_method, device=backend,
                           progress=prog if prepared is not None else prog.sub(0.4, 1.0),
                           refine_boundaries=refine_boundaries, auto_layout=auto_layout, **seg_kw)
    seg.info["timings"]["total"] = time.perf_counter() - t_start
    return seg


def _segment_params(k, epsilon, max_iter, update_power, oversegment, shading) -> dict:
    """The checked parameters of :func:`segment_prepared` (checked before any work)."""
    if epsilon is None:
        epsilon = DEFAULT_EPSILON
    epsilon = float(epsilon)
    if not (0.0 <= epsilon <= 1.0):
        raise MeshInputError(f"epsilon must lie in [0, 1], got {epsilon}")
    shading = DEFAULT_SHADING if shading is None else float(shading)
    if not (0.0 <= shading <= 1.0):
        raise MeshInputError(f"shading must lie in [0, 1], got {shading}")
    if isinstance(k, str) and k != "auto":
        raise MeshInputError(f"k must be a positive integer or 'auto', got {k!r}")
    p_used = DEFAULT_UPDATE_POWER if update_power is None else float(update_power)
    if oversegment is None:
        o_used = DEFAULT_OVERSEGMENT
    elif isinstance(oversegment, tuple | list):
        o_used = tuple(max(1.0, float(x)) for x in oversegment)
    else:
        o_used = max(1.0, float(oversegment))
    return {"k": k, "epsilon": epsilon, "max_iter": int(max_iter), "update_power": p_used,
            "oversegment": o_used, "shading": shading}


@dataclass
class PreparedMesh:
    """What :func:`prepare_mesh` makes and :func:`segment_prepared` reads (never modifies):
    the cleaned mesh, its dual graph, the dual graphs of its working resolutions and their
    all-pairs shortest paths. It depends only on the mesh and on delta, eta_convex, the
    working resolution, the simplifier, the consensus and the APSP method, so a change of k,
    epsilon or the iteration cap re-uses it, distances included."""

    vertices_in: np.ndarray       # the caller's arrays (dropped faces are labelled from them)
    faces_in: np.ndarray
    vertices: np.ndarray          # cleaned
    faces: np.ndarray
    kept: np.ndarray              # (F',) input index of each cleaned face
    report: dict                  # clean_mesh's report
    graph: object                 # DualGraph of the cleaned mesh
    working: list                 # [(target faces, DualGraph or None (the full graph), patch)]
    info: dict                    # params, timings, warnings and notes so far
    #: per working resolution (or [the full graph] when there is none): {component: distance
    #: matrix} (:func:`graph_distances`), on the device that made them
    distances: list = field(default_factory=list)
    #: per working resolution: the nearest working face of every full-resolution face (None
    #: for the full graph or patches)
    nearest: list = field(default_factory=list)
    #: per entry of ``distances``: {component: its matrix's farthest-point order
    #: (:class:`gpu_kernels.mesh.cluster.FarthestOrder`)}: every k's first representatives
    orders: list = field(default_factory=list)
    #: the epsilon of the last :func:`settle_prepared` on it: the guess of
    #: :func:`clusterings_prepared`'s early cuts (a hint only: no result depends on it)
    last_epsilon: float | None = None
    #: {(resolution,): {(component, cluster count, iteration cap, power, batch): (its clustering, its host
    #: memberships)}} for the auto-k starts' counts (and an integer k's, K_STARTS), filled by the first clustering that needs
    #: them (:func:`_clusterings`' ``memo``; the same as computing them again)
    memo: dict = field(default_factory=dict)
    #: {(resolution,): {key: (fuzzy faces, labels, stats)}}: the fuzzy cuts of the memo's clusterings for the
    #: last epsilon (:func:`_assemble_and_cut`: an integer k at k = "auto"'s k, ``auto_layout="concave"``, cuts
    #: the auto-k starts again; the same as cutting them again)
    cuts: dict = field(default_factory=dict)
    #: the background clustering of an integer k's extra starts (:func:`prefetch_k_starts`), or None;
    #: :func:`clusterings_prepared` waits for it before it reads or changes ``memo``
    prefetch: object = field(default=None, repr=False, compare=False)
    #: the device that prepared it (its backend's label: "cpu", "cuda:N"): the later stages' device where they are
    #: given none (session 30: a mesh prepared on the CPU and segmented with ``device=None`` on a machine with a GPU
    #: stopped in a CuPy kernel on its host arrays)
    device: str | None = None


def prepare_mesh(vertices, faces, *, delta=None, eta_convex=None, max_faces=DEFAULT_MAX_FACES,
                 simplify=False, consensus=False, simplifier="auto", apsp_method="auto", device=None,
                 progress=None) -> PreparedMesh:
    """The first stage of :func:`segment_mesh`: clean the mesh, build its dual graph, choose
    the working resolution(s), build their dual graphs (simplifying the mesh; the faces'
    thickness at the resolution that is clustered), their all-pairs shortest paths (every
    component of at least ``MIN_COMPONENT_FACES`` faces) and the full-to-working face mapping:
    everything a change of k, epsilon or the iteration cap leaves as it was.

    Parameters are those of :func:`segment_mesh` (``apsp_method`` and ``device`` choose and run
    the APSP, and decide whether a full-resolution distance matrix would fit). Returns a
    :class:`PreparedMesh`.
    """
    prog = as_progress(progress)
    backend = get_backend(device)
    d_used = DEFAULT_DELTA if delta is None else float(delta)
    e_used = DEFAULT_ETA_CONVEX if eta_convex is None else float(eta_convex)
    info = {
        "params": {"delta": d_used, "eta_convex": e_used, "apsp_method": apsp_method,
                   "max_faces": max_faces, "simplify": simplify, "delta_auto": delta is None,
                   "consensus": bool(consensus), "simplifier": simplifier,
                   "eta_convex_auto": eta_convex is None},
        "timings": {"clean": 0.0, "dual_graph": 0.0, "simplify": 0.0, "apsp": 0.0,
                    "clustering": 0.0, "cut": 0.0, "transfer": 0.0},
        "warnings": [],
        "simplified": False,
    }
    # the thickness's nearest-sample searches on the GPU (thickness.ON_GPU)
    from gpu_kernels.mesh import thickness as _thickness

    xp = backend.xp if (backend.is_gpu and _thickness.ON_GPU) else None
    with backend.activate(), contextlib.ExitStack() as leave:
        prog.update(0.0, "dual graph")
        t0 = time.perf_counter()
        v, f, kept, rep = clean_mesh(vertices, faces)
        F_in = rep["n_input_faces"]
        info["n_faces"] = F_in
        info["cleaning"] = {key: val for key, val in rep.items() if key != "dropped_faces"}
        if rep["n_duplicate_faces"]:
            info["warnings"].append(f"{rep['n_duplicate_faces']} duplicate faces were left out of the "
                                    "graph and take the label of their twin")
        if rep["n_degenerate_faces"]:
            info["warnings"].append(f"{rep['n_degenerate_faces']} zero-area faces were left out of the "
                                    "graph and take the label of a neighbour")
        # the automatic working resolution's simplification starts now, on a thread of its own,
        # and runs while the full mesh's dual graph is built (issue 22; the same call as
        # working_graph's, so the same working mesh). An error surfaces where it did before.
        early = None
        t1 = time.perf_counter()
        if max_faces == "auto" and COARSENING == "simplify" and _can_simplify():
            wf0 = working_faces(f.shape[0], backend, apsp_method)
            if wf0 is not None and wf0 < f.shape[0]:
                try:
                    early = (wf0, simplify_in_background(
                        v, f, wf0, None if simplifier in (None, "auto") else simplifier, fn=simplify_mesh))
                except (ValueError, RuntimeError):
                    early = None
                else:
                    # whatever way this call ends (a cancel, an error before working_graph picks it,
                    # a target it does not pick), the simplification has ended: never a decimation
                    # left running beside the next run's (a no-op once picked)
                    leave.callback(_wait_quietly, early[1])
        t2 = time.perf_counter()  # (the simplification's time on this thread counts as the simplification's)
        graph = dual_graph(v, f, delta=d_used, eta_convex=e_used, thickness=False)
        info["timings"]["clean"] = t1 - t0
        info["timings"]["dual_graph"] = time.perf_counter() - t2
        if early is not None and not early[1].done():
            # the parts' memberships' weight matrix (cached on the graph) while the simplification runs (issue 22,
            # session 12: ~1 ms at 17k off the path after pymeshlab's step; the same matrix)
            graph.csr()
        info["warnings"].extend(graph.warnings)
        info["n_components"] = graph.n_components
        info["n_nonmanifold_edges"] = graph.n_nonmanifold_edges
        prog.update(0.05, "dual graph")
        largest = int(np.bincount(graph.component).max())
        limit = max_faces_for_device(backend, apsp_method)
        target = None
        auto_res = isinstance(max_faces, str)
        if auto_res:
            if max_faces != "auto":
                raise MeshInputError(f"max_faces must be a face count, 'auto' or None, got {max_faces!r}")
            wf = working_faces(graph.n, backend, apsp_method)
            if wf is not None and wf < graph.n:
                if _can_simplify():
                    target = wf
                else:
                    info["warnings"].append(
                        "neither fast-simplification nor pymeshlab is installed, so the mesh is clustered "
                        f"at its full resolution ({graph.n:,} faces) instead of {wf:,}; this is slower, "
                        "and sharp creases weigh more at full resolution")
        if not auto_res and max_faces is not None and graph.n > int(max_faces):
            target = int(max_faces)
        elif target is None and largest > limit:
            if simplify in (False, None, "no") and not auto_res:
                where = f"{backend.label} ({'GPU' if backend.is_gpu else 'host'} memory free now)"
                raise MeshTooLargeError(largest, limit, where)
            target = int(0.9 * limit * graph.n / largest)
        working = []
        # NEAREST_BESIDE: each working mesh's full-to-working nearest faces on a thread of their own, started once
        # its dual graph is built, while this thread measures its thickness and runs the APSP on the GPU
        near_jobs: dict = {}
        near_hook = None
        if NEAREST_BESIDE and (backend.is_gpu or NEAREST_BESIDE_CPU):
            def near_hook(t, gs):
                # a thread per NEAREST_BESIDE_ROWS faces, never more than the machine's cores (a 1M-face scan would
                # start over a hundred threads; 17k and 50k give 2 and 6, as judged)
                workers = (None if NEAREST_BESIDE_ROWS is None
                           else min(os.cpu_count() or 1, -(-graph.n // int(NEAREST_BESIDE_ROWS))))
                near_jobs[t] = job = BackgroundCall(_nearest_faces, gs.centroids, graph.centroids, workers,
                                                    name="gpulab-kd-nearest")
                leave.callback(_wait_quietly, job)
        if target is None and uses_thickness():  # the full graph is clustered: it needs the thickness
            graph = with_thickness(graph, v, f, xp)
        if target is not None:
            info["simplified"] = True
            scales = CONSENSUS_SCALES if consensus is None else (CONSENSUS_RESOLUTIONS if consensus else ())
            targets = consensus_targets(target, graph.n, scales) if auto_res else [target]
            prog.update(0.05, "working resolution")
            t0 = time.perf_counter()
            for t in targets:
                if t >= graph.n:
                    working.append((int(t), None, None))
                else:
                    pre = early[1] if early is not None and early[0] == t else None
                    hook = None if near_hook is None else functools.partial(near_hook, int(t))
                    working.append((int(t), *working_graph(v, f, graph, t, d_used, e_used, simplifier, xp,
                                                           pre=pre, on_graph=hook)))
            info["timings"]["simplify"] = time.perf_counter() - t0 + (t2 - t1)
            gs0 = working[0][1]
            msg = (f"clustered at a working resolution of {gs0.n:,} faces (simplified from {graph.n:,})"
                   + (f" and at {len(working) - 1} more for a consensus" if len(working) > 1 else "")
                   + "; the parts were carried back to every face and their boundaries re-cut at full resolution")
            if max_faces == "auto":
                info.setdefault("notes", []).append(msg)
            else:
                info["warnings"].append(msg)
        # the distances: they depend on nothing that stage 2 changes
        t0 = time.perf_counter()
        graphs = [graph if gs is None else gs for _, gs, _ in working] or [graph]
        nfull = len(graphs)
        distances = [graph_distances(g, apsp_method, backend, prog.sub(0.1 + 0.9 * i / nfull, 0.1 + 0.9 * (i + 1) / nfull),
                                     MIN_COMPONENT_FACES) for i, g in enumerate(graphs)]
        # the farthest-point order of each matrix: every k's first representatives are a prefix
        orders = distance_orders(distances, device=backend)
        info["timings"]["apsp"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        nearest = [None if gs is None or patch is not None else
                   near_jobs[t].result() if t in near_jobs else
                   _nearest_faces(gs.centroids, graph.centroids) for t, gs, patch in working]
        info["timings"]["transfer"] = time.perf_counter() - t0
    return PreparedMesh(vertices_in=vertices, faces_in=faces, vertices=v, faces=f, kept=kept, report=rep,
                        graph=graph, working=working, info=info, distances=distances, nearest=nearest,
                        orders=orders, device=backend.label)


def _prepared_backend(prep: PreparedMesh, device):
    """The backend of a later stage on ``prep``: ``device``, or where that is None, the device that prepared it."""
    if device is None and getattr(prep, "device", None):
        return get_backend(prep.device)
    return get_backend(device)


def _wait_quietly(job) -> None:
    """Wait for a :func:`~gpu_kernels.mesh.simplify.simplify_in_background` job; its value or error
    is not wanted (the call's own result or error is the one on its way out)."""
    try:
        job.result()
    except BaseException:  # noqa: BLE001, S110 - see above
        pass


def _nearest_faces(centroids_s, centroids, workers: int | None = None) -> np.ndarray:
    return kd_nearest(cKDTree(centroids_s), centroids, workers=workers)[1].astype(np.int64)


def working_graph(v, f, graph, target: int, delta: float, eta_convex: float, simplifier=None, xp=None,
                  pre=None, on_graph=None):
    """The dual graph of a working resolution of about ``target`` faces: a simplified copy of
    the mesh (``COARSENING = "simplify"``) or patches of the full graph (``"patches"``).
    Returns ``(graph, patch)``, ``patch`` the patch of every full-resolution face or None.
    ``pre``: the same simplification already started
    (:func:`gpu_kernels.mesh.simplify.simplify_in_background`, which imports the simplifier on
    the calling thread first: pymeshlab imported first from a worker thread corrupted the heap,
    session 6). ``on_graph(gs)``: called with the simplified mesh's dual graph before its thickness is measured
    (:data:`NEAREST_BESIDE`)."""
    if COARSENING == "patches":
        from gpu_kernels.mesh.coarsen import coarsen

        return coarsen(graph, target)
    if pre is not None:
        vs, fs = pre.result()
    else:
        vs, fs = (simplify_mesh(v, f, target) if simplifier in (None, "auto")
                  else simplify_mesh(v, f, target, method=simplifier))
    vs, fs, _, _ = clean_mesh(vs, fs)
    gs = dual_graph(vs, fs, delta=delta, eta_convex=eta_convex, thickness=False)
    if on_graph is not None:
        on_graph(gs)
    return (with_thickness(gs, vs, fs, xp) if uses_thickness() else gs), None


def segment_prepared(prep: PreparedMesh, *, k="auto", epsilon=DEFAULT_EPSILON, apsp_method="auto",
                     max_iter=DEFAULT_MAX_ITER, update_power=None, oversegment=None,
                     shading=DEFAULT_SHADING, device=None, progress=None,
                     refine_boundaries=DEFAULT_REFINE_BOUNDARIES,
                     auto_layout=DEFAULT_AUTO_LAYOUT) -> MeshSegmentation:
    """The second stage of :func:`segment_mesh`: fuzzy clustering and cuts on a
    :class:`PreparedMesh` (which it does not modify), carried back to every input face:
    :func:`cluster_prepared` (what k, epsilon and the iteration cap change) and then
    :func:`cut_clustered` (what ``refine_boundaries`` changes). Parameters are those of
    :func:`segment_mesh`; ``device`` None (here and in the other stages on a prepared mesh): the device that
    prepared ``prep`` (:attr:`PreparedMesh.device`)."""
    prog = as_progress(progress)
    relay = _relays(k, auto_layout)
    p1 = prog.sub(0.0, 0.6) if relay else prog
    cm = cluster_prepared(prep, k=k, epsilon=epsilon, apsp_method=apsp_method, max_iter=max_iter,
                          update_power=update_power, oversegment=oversegment, shading=shading, device=device,
                          progress=p1.sub(0.0, 0.8))
    return _cut_and_lay_out(prep, cm, refine_boundaries=refine_boundaries, auto_layout=auto_layout, device=device,
                            progress=prog, cut_progress=p1.sub(0.8, 1.0))


def _relays(k, auto_layout) -> bool:
    """Whether k = "auto"'s result is laid out again (``auto_layout`` other than "auto")."""
    return isinstance(k, str) and _autok.check_layout(auto_layout) != "auto"


def _cut_and_lay_out(prep: PreparedMesh, cm: ClusteredMesh, *, refine_boundaries, auto_layout, device, progress,
                     cut_progress=None) -> MeshSegmentation:
    """:func:`cut_clustered` of ``cm``, then, with k = "auto" and ``auto_layout`` "concave", its k laid out again
    by the integer k's pipeline on ``prep`` with ``cm``'s parameters (:func:`gpu_kernels.mesh.autok.relayout`'s
    rule): what :func:`segment_prepared` and ``segment_mesh(clustered=...)`` (the tool's last stage) both do.

    Both results are cut at full resolution (labels only), :func:`gpu_kernels.mesh.autok.choose_layout` keeps one,
    and only the kept one gets its parts' memberships and colours (the same result as cutting both in full).
    The integer k's clustered result (:func:`layout_clustered`) is kept in ``cm.layouts``: a second cut of
    ``cm`` (another ``refine_boundaries``: the tool's last stage) does not cluster it again. The cut reports to ``cut_progress`` (default: ``progress``, or its
    first 60 % when the layout runs), the rest to the last 40 % of ``progress`` ("auto-k layout: ...")."""
    prog = as_progress(progress)
    relay = _relays(cm.kw["k"], auto_layout)
    if cut_progress is None:
        cut_progress = prog.sub(0.0, 0.6) if relay else prog
    if not relay:
        return cut_clustered(prep, cm, refine_boundaries=refine_boundaries, device=device, progress=cut_progress)
    t0 = time.perf_counter()
    mode = _autok.check_layout(auto_layout)
    backend = _prepared_backend(prep, device)
    if _autok.LAYOUT_DECIDE == "working" and _one_carried(cm):
        return _lay_out_working(prep, cm, refine_boundaries=refine_boundaries, mode=mode, backend=backend, prog=prog,
                                t0=t0)
    guess = _carried_k(cm) if LAYOUT_OVERLAP else 0
    if guess > 1 and int(guess) not in cm.layouts:
        # k = "auto"'s full-resolution cut on a host thread while the integer k clusters at the working
        # resolution's k (the final k but where the cut loses a part: then it clusters again below)
        fut = _layout_pool().submit(_cut_labels_on, backend, prep, cm, refine_boundaries, prog)
        try:
            _kept_layout(prep, cm, guess, mode, backend, prog.sub(0.6, 1.0, prefix="auto-k layout").sub(0.0, 0.7))
        except BaseException:
            # (a cancel or an error here: the thread, which shares the job's cancel flag, stops at its next check;
            # wait for it, but its own outcome never replaces this one)
            fut.cancel()
            try:
                fut.result()
            except BaseException:
                pass
            raise
        own = fut.result()
        cut_progress.update(1.0, "boundary cut")
    else:
        with backend.activate():
            own = _cut_labels(prep, cm, refine_boundaries, cut_progress)
    k = int(own[1].shape[1])
    if k <= 1:
        own[4]["auto_layout"] = {"rule": mode, "k": k, "kept": "auto", "why": "one part"}
        return _finish_cut(prep, cm, own, backend, prog.sub(0.6, 1.0), time.perf_counter() - t0)
    lay = prog.sub(0.6, 1.0, prefix="auto-k layout")
    alt, before = _kept_layout(prep, cm, k, mode, backend, lay.sub(0.0, 0.7))
    with backend.activate():
        other = _cut_labels(prep, alt, refine_boundaries, lay.sub(0.7, 0.9))
    use_other, note = _autok.choose_layout(
        prep.graph, own[0], k, own[4].get("k_per_component", []), other[0], int(other[1].shape[1]),
        other[4].get("k_per_component", []), rule=mode)
    if use_other:
        for key in ("auto_k_threshold", "auto_k_starts", "auto_k_start_used"):
            if key in own[4]:
                other[4].setdefault(key, own[4][key])
    (other if use_other else own)[4]["auto_layout"] = _autok.layout_note(note, use_other)
    win = alt if use_other else cm
    return _finish_cut(prep, win, other if use_other else own, backend, lay.sub(0.9, 1.0), time.perf_counter() - t0,
                       extra_seconds=cm.seconds + before - win.seconds)


#: with ``auto_layout="concave"`` (the rule decided on the full mesh): k = "auto"'s full-resolution cut runs on a
#: host thread of its own while the integer k clusters (the same results; False: one after the other)
LAYOUT_OVERLAP = True


def _carried_k(cm: ClusteredMesh) -> int:
    """``cm``'s parts at its clustered resolution (one working resolution, or none), 0 for several: the final
    k unless the full-resolution cut loses a part."""
    if cm.result is not None:
        return int(np.unique(np.asarray(cm.result[0])).size)
    if _one_carried(cm):
        return int(np.unique(np.asarray(cm.coarse[0][0]["lab0"])).size)
    return 0


def _cut_labels_on(backend, prep, cm, refine_boundaries, progress=None):
    """:func:`_cut_labels` on ``backend`` (a thread's), without progress reports; cancelled with ``progress``
    (its cancel flag only)."""
    quiet = Progress(None, progress._cancel) if isinstance(progress, Progress) else as_progress(None)
    with backend.activate():
        return _cut_labels(prep, cm, refine_boundaries, quiet)


def _one_carried(cm: ClusteredMesh) -> bool:
    """Whether ``cm`` was clustered at one working resolution (a simplified copy or patches) and carried to every
    face: what :data:`gpu_kernels.mesh.autok.LAYOUT_DECIDE` "working" decides on."""
    return cm.result is None and len(cm.coarse) == 1 and isinstance(cm.coarse[0][0], dict)


def _kept_layout(prep: PreparedMesh, cm: ClusteredMesh, k: int, mode: str, backend, progress):
    """``(the integer k's clustered result at k, its clusterings' time if made before this call)``: from
    ``cm.layouts``, else :func:`layout_clustered` (kept there: one k at a time)."""
    alt = cm.layouts.get(int(k))
    if alt is not None:
        return alt, alt.seconds
    alt = layout_clustered(prep, cm, k=int(k), auto_layout=mode, device=backend, progress=progress)
    cm.layouts.clear()
    cm.layouts[int(k)] = alt
    return alt, 0.0


def _lay_out_working(prep: PreparedMesh, cm: ClusteredMesh, *, refine_boundaries, mode, backend, prog, t0):
    """:func:`_cut_and_lay_out` with ``autok.LAYOUT_DECIDE = "working"``: the layout rule on the working
    resolution's labels (:func:`gpu_kernels.mesh.autok.choose_layout` on its dual graph), and only the kept
    result cut at full resolution."""
    res = cm.coarse[0][0]
    k = int(res["P"].shape[1])
    alt, before = (_kept_layout(prep, cm, k, mode, backend, prog.sub(0.6, 0.8, prefix="auto-k layout")) if k > 1
                   else (None, 0.0))
    use_other, note = False, {"rule": mode, "k": k, "why": "one part"}
    if alt is not None and _one_carried(alt):
        ores = alt.coarse[0][0]
        use_other, note = _autok.choose_layout(
            prep.working[0][1], res["labels_s"], k, cm.info.get("k_per_component", []), ores["labels_s"],
            int(ores["P"].shape[1]), alt.info.get("k_per_component", []), rule=mode)
    note["decided_on"] = "working"
    win = alt if use_other else cm
    with backend.activate():
        cut = _cut_labels(prep, win, refine_boundaries, prog.sub(0.8, 1.0).sub(0.0, 0.8))
    if use_other:
        for key in ("auto_k_threshold", "auto_k_starts", "auto_k_start_used"):
            if key in cm.info:
                cut[4].setdefault(key, cm.info[key])
    cut[4]["auto_layout"] = _autok.layout_note(note, use_other)
    return _finish_cut(prep, win, cut, backend, prog.sub(0.96, 1.0), time.perf_counter() - t0,
                       extra_seconds=cm.seconds + before - win.seconds)


def layout_clustered(prep: PreparedMesh, cm: ClusteredMesh, *, k=None, auto_layout="concave", device=None,
                     progress=None) -> ClusteredMesh | None:
    """The integer k's clustered result at k = "auto"'s k, on ``prep`` with ``cm``'s parameters: what
    ``auto_layout="concave"`` lays out again (:func:`_cut_and_lay_out`). ``k``: the k (default: ``cm``'s parts
    at its clustered resolution, carried to every face: the final k unless the full-resolution cut loses a
    part, where :func:`_cut_and_lay_out` clusters again at the final k). None where nothing is laid out again:
    an integer k, ``auto_layout`` "auto", one part, or several working resolutions without ``k``."""
    mode = _autok.check_layout(auto_layout)
    if not _relays(cm.kw["k"], mode):
        return None
    if k is None:
        k = _carried_k(cm)
    if int(k) <= 1:
        return None
    kw = cm.kw
    return cluster_prepared(prep, k=int(k), epsilon=kw["epsilon"], apsp_method=cm.apsp_method, max_iter=kw["max_iter"],
                            update_power=kw["update_power"], oversegment=kw["oversegment"], shading=kw["shading"],
                            device=device, progress=progress)


@dataclass
class ClusteredMesh:
    """What :func:`cluster_prepared` makes and :func:`cut_clustered` reads (never modifies):
    the clusterings of a :class:`PreparedMesh` for one k, epsilon and iteration cap, before
    the full-resolution re-cut of their boundaries."""

    kw: dict                      # the checked parameters (_segment_params)
    info: dict                    # params, timings, warnings and notes so far
    apsp_method: str
    #: per working resolution: (its clustering: a :func:`_cluster_working` dict, or the
    #: (labels, P, reps, fuzzy) of the full graph, its own info); [] without a working resolution
    coarse: list
    #: without a working resolution: (labels, P, reps, fuzzy) of the full graph
    result: tuple | None
    seconds: float = 0.0
    #: {k: the integer k's ClusteredMesh at k} (:func:`layout_clustered`) for ``auto_layout="concave"``, kept by
    #: the first cut that lays it out (:func:`_cut_and_lay_out`; a cache: the same as clustering it again).
    #: A memo written after the stage cache measured this ClusteredMesh (as ``PreparedMesh.cuts`` is after the
    #: PreparedMesh), so the cache's byte count is stale by about one integer-k ClusteredMesh (its P: F x K
    #: float32): outside the cache's accounting (review A #12, session 10)
    layouts: dict = field(default_factory=dict)


def _copy_info(src: dict) -> dict:
    return {key: (dict(val) if isinstance(val, dict) else list(val) if isinstance(val, list) else val)
            for key, val in src.items()}


def cluster_prepared(prep: PreparedMesh, *, k="auto", epsilon=DEFAULT_EPSILON, apsp_method="auto",
                     max_iter=DEFAULT_MAX_ITER, update_power=None, oversegment=None,
                     shading=DEFAULT_SHADING, device=None, progress=None) -> ClusteredMesh:
    """The clustering half of :func:`segment_prepared`: the fuzzy clusterings of every working
    resolution (:func:`clusterings_prepared`: their over-segmentations in lockstep, on the
    distances and farthest-point orders of ``prep``), then their cuts and merges at that
    resolution and their labels carried to every face (:func:`settle_prepared`); without a
    working resolution, the final labels of the full graph. A change of ``refine_boundaries``
    re-uses it (:func:`cut_clustered`)."""
    prog = as_progress(progress)
    cs = clusterings_prepared(prep, k=k, apsp_method=apsp_method, max_iter=max_iter, update_power=update_power,
                              oversegment=oversegment, device=device, progress=prog.sub(0.0, 0.8), epsilon=epsilon)
    return settle_prepared(prep, cs, epsilon=epsilon, shading=shading, device=device, progress=prog.sub(0.8, 1.0))


@dataclass
class ClusterSet:
    """What :func:`clusterings_prepared` makes and :func:`settle_prepared` reads (never
    modifies): the fuzzy clusterings of every working resolution for one k and iteration cap,
    before any cut (an epsilon edit starts after them)."""

    kw: dict                      # the checked parameters (_segment_params; epsilon and shading: defaults)
    info: dict
    apsp_method: str
    #: per working resolution: (its :func:`_clusterings` dict, its own info); without a working
    #: resolution: [(the full graph's, info)]
    sets: list
    seconds: float = 0.0


def _memo_entries(prep: PreparedMesh) -> list:
    """``[(memo key, graph, {component: distances}, {component: farthest order})]`` of the resolution whose
    clusterings :func:`_clusterings` memoizes: the one working resolution, or the full graph (none with several)."""
    orders = prep.orders or [None] * max(len(prep.distances), 1)
    if prep.working:
        if len(prep.working) > 1:
            return []
        _, gs, _patch = prep.working[0]
        return [(("working", 0), prep.graph if gs is None else gs, prep.distances[0] if prep.distances else None,
                 orders[0] or {})]
    return [(("full", 0), prep.graph, prep.distances[0] if prep.distances else None, orders[0] or {})]


def _missing_starts(prep: PreparedMesh, counts: tuple, max_iter: int, power) -> list:
    """``[(memo, component, distances, farthest order, [counts])]``: the clusterings of ``counts`` that ``prep``'s memo
    lacks, per component, in the order and batch an integer k's first clustering would run them (its rows' counts,
    less the memo's), so that making them ahead gives the same arrays."""
    out = []
    mc = _memo_counts()
    for key, graph, dists, orders in _memo_entries(prep):
        memo = prep.memo.setdefault(key, {})
        sizes = np.bincount(graph.component, minlength=graph.n_components)
        for c in range(graph.n_components):
            D = dists.get(c) if dists is not None else None
            if D is None or sizes[c] <= 1:
                continue
            todo = [x for x in dict.fromkeys(int(min(sizes[c], st)) for st in counts)
                    if _memo_key(c, x, max_iter, power, mc) not in memo]
            if todo and MEMO_FIXED_BATCHES:  # each memo batch whole, as _clusterings runs it
                for grp in _memo_groups(todo, {x: _memo_batch(x, mc) for x in todo if x in mc}):
                    if grp:
                        out.append((memo, c, D, orders.get(c), grp))
            elif todo:
                out.append((memo, c, D, orders.get(c), todo))
    return out


def _prefetch(work: list, max_iter: int, power, backend, prog: Progress) -> int:
    """:func:`prefetch_k_starts`' work (on its thread): ``work`` from :func:`_missing_starts`; returns the number of
    clusterings made. ``prog``: its own progress, which an edit waiting for it reports and cancels (a component's
    clusterings reach the memo only once all are made)."""
    made = 0
    mc = _memo_counts()
    with backend.activate():
        for i, (memo, c, D, order, todo) in enumerate(work):
            res = fuzzy_cluster_many(D, todo, max_iter=max_iter, power=power, order=order, device=backend,
                                     progress=prog.sub(i / len(work), (i + 1) / len(work)))
            for x, fc in zip(todo, res, strict=True):
                Pc = asnumpy(fc.P)
                memo[_memo_key(c, x, max_iter, power, mc)] = (replace(fc, P=Pc), Pc)
                made += 1
    return made


def prefetch_k_starts(prep: PreparedMesh, cs: ClusterSet, *, device=None):
    """Start, on a thread of its own, the clusterings an integer k takes beside k = "auto"'s (the counts of
    :func:`integer_k_starts` that ``prep``'s memo lacks: 20 and 42 after a k = "auto" run), with ``cs``'s iteration
    cap and power, into ``prep``'s memo: the first integer-k edit after a k = "auto" run then clusters nothing (CPU,
    PSB 101, 17k faces: the edit 148 -> 28 ms). They are the arrays that edit would compute (the same counts in one
    batch), so no result changes. :func:`clusterings_prepared` waits for it. The mesh tool's live runs start it
    after a run (:attr:`app.tools.stages.Stage.prefetch`); a one-shot run (the CLI, batch) does not.

    Returns the handle (:class:`gpu_kernels.jobs.BackgroundCall`; ``result()`` is the number of clusterings made;
    ``cancel()`` stops it at its next progress check, and a cancelled one adds nothing to the memo: a component's
    clusterings reach it only once all are made, so an edit that comes back to this mesh clusters them itself, the
    same arrays), or None where an integer k takes no starts (several working resolutions, :data:`K_FROM_AUTO_STARTS` off) or
    every one is in the memo already.

    Example
    -------
    >>> import numpy as np
    >>> from scipy.spatial import ConvexHull
    >>> from gpu_kernels.mesh.segment import prepare_mesh, clusterings_prepared, prefetch_k_starts
    >>> p = np.random.default_rng(0).normal(size=(300, 3))
    >>> p /= np.linalg.norm(p, axis=1, keepdims=True)          # 596 faces of a sphere
    >>> prep = prepare_mesh(p, ConvexHull(p).simplices, device="cpu", apsp_method="cpu")
    >>> job = prefetch_k_starts(prep, clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu"),
    ...                         device="cpu")
    >>> job.result() > 0, prefetch_k_starts(prep, clusterings_prepared(prep, k=4, device="cpu"), device="cpu")
    (True, None)
    """
    counts = integer_k_starts()
    if not K_FROM_AUTO_STARTS or not counts or not _memo_entries(prep):
        return None
    max_iter, power = int(cs.kw["max_iter"]), cs.kw["update_power"]
    _wait_prefetch(prep)  # (one at a time)
    work = _missing_starts(prep, tuple(counts), max_iter, power)
    if not work:
        return None
    prog = Progress()
    job = BackgroundCall(_prefetch, work, max_iter, power, _prepared_backend(prep, device), prog,
                         name="gpulab-mesh-prefetch",
                         on_cancel=prog.cancel)
    job.progress = prog
    prep.prefetch = job
    return job


def _wait_prefetch(prep: PreparedMesh, prog: Progress | None = None) -> bool:
    """Wait for ``prep``'s background clustering, if one runs (its error is dropped: the clusterings are then made
    where they are needed, as without it). With ``prog`` (an edit's progress), the wait reports the background
    clustering's progress, and a cancel of the edit cancels it too (then raises :class:`Cancelled`): a large one
    (a full-resolution graph on a CPU) waits as the edit's own clustering would. True if one was waited for."""
    job = prep.prefetch
    if job is None:
        return False
    try:
        while prog is not None and not job.done():
            prog.update(0.0, f"clustering (begun in the background: {100 * job.progress.fraction:.0f} %)")
            job.join(0.05)
    except Cancelled:
        job.progress.cancel()
        raise
    finally:
        job.join()
        prep.prefetch = None
    return True


def clusterings_prepared(prep: PreparedMesh, *, k="auto", apsp_method="auto", max_iter=DEFAULT_MAX_ITER,
                         update_power=None, oversegment=None, device=None, progress=None,
                         epsilon=None) -> ClusterSet:
    """The fuzzy clusterings of every working resolution of ``prep`` (or of its full graph): what
    k and the iteration cap decide, on the distances and farthest-point orders of stage 1.

    ``epsilon`` (optional; default: the last one :func:`settle_prepared` used on ``prep``, else
    the default) does not change the clusterings: on a GPU, the cuts and merges for it start on
    a host thread while the GPU still iterates (:func:`_clusterings`), and
    :func:`settle_prepared` with the same epsilon takes them instead of cutting again (with
    another epsilon it cuts again: the same result either way)."""
    t_start = time.perf_counter()
    prog = as_progress(progress)
    _wait_prefetch(prep, prog)  # (a background clustering of the extra starts writes the memo: let it finish)
    backend = _prepared_backend(prep, device)
    kw = _segment_params(k, None, max_iter, update_power, oversegment, None)
    if epsilon is None:
        epsilon = prep.last_epsilon
    early_eps = _segment_params(k, epsilon, max_iter, None, None, None)["epsilon"]
    k, max_iter = kw["k"], kw["max_iter"]
    p_used, o_used = kw["update_power"], kw["oversegment"]
    info = _copy_info(prep.info)
    info["params"].update({"k": k, "apsp_method": apsp_method, "max_iter": max_iter,
                           "update_power": p_used, "oversegment": o_used})
    info["device"] = backend.label
    graph = prep.graph
    info["method"] = _resolve_method(apsp_method, backend, int(prep.report["n_input_faces"]))
    orders = prep.orders or [None] * max(len(prep.distances), 1)
    sets = []
    # (a stage of its own from the start: where every clustering comes from the memo, nothing below reports)
    prog.update(0.0, "clustering" if isinstance(k, str) else f"clustering into {k} parts")
    prog.check()
    with backend.activate():
        if prep.working:
            multi = len(prep.working) > 1
            nt = len(prep.working)
            for i, (_, gs, _patch) in enumerate(prep.working):
                sub = info if not multi else {"params": info["params"], "timings": info["timings"],
                                              "warnings": [], "notes": []}
                sp = prog.sub(i / nt, (i + 1) / nt) if multi else prog
                dist = prep.distances[i] if prep.distances else None
                # several resolutions: k = "auto" over-segments each once (AUTO_K_START, not
                # AUTO_K_STARTS): the consensus of resolutions was cross-validated so (session 4)
                starts = () if multi else None
                g = graph if gs is None else gs
                sub["n_faces_segmented"] = g.n
                cl = _clusterings(g, k, apsp_method, max_iter, backend, sp.sub(0.05, 0.8), sub, p_used, o_used,
                                  dist, starts, orders[i], early_epsilon=early_eps,
                                  memo=prep.memo.setdefault(("working", i), {}),
                                  cuts=prep.cuts.setdefault(("working", i), {}))
                sets.append((cl, sub))
        else:
            info["n_faces_segmented"] = graph.n
            cl = _clusterings(graph, k, apsp_method, max_iter, backend, prog, info, p_used, o_used,
                              prep.distances[0] if prep.distances else None, None, orders[0],
                              early_epsilon=early_eps, memo=prep.memo.setdefault(("full", 0), {}),
                              cuts=prep.cuts.setdefault(("full", 0), {}))
            sets.append((cl, info))
    return ClusterSet(kw=kw, info=info, apsp_method=apsp_method, sets=sets, seconds=time.perf_counter() - t_start)


def settle_prepared(prep: PreparedMesh, cs: ClusterSet, *, epsilon=DEFAULT_EPSILON, shading=DEFAULT_SHADING,
                    device=None, progress=None) -> ClusteredMesh:
    """The clusterings of ``cs`` cut (fuzzy faces within ``epsilon``), merged and chosen at their
    resolution, and carried to every face: what an epsilon edit re-runs (the clusterings
    re-used). No result in ``prep`` or ``cs`` is modified: ``prep.last_epsilon`` (the next
    clusterings' guess) is set to ``epsilon``, and early cuts of ``cs`` not yet started are
    cancelled (:func:`_settle`: done here instead, the same result)."""
    t_start = time.perf_counter()
    prog = as_progress(progress)
    backend = _prepared_backend(prep, device)
    kw = _segment_params(cs.kw["k"], epsilon, cs.kw["max_iter"], cs.kw["update_power"], cs.kw["oversegment"],
                         shading)
    k, epsilon = kw["k"], kw["epsilon"]
    prep.last_epsilon = epsilon  # the next clusterings' guess (a hint, see clusterings_prepared)
    info = _copy_info(cs.info)
    info["params"]["epsilon"] = epsilon
    graph = prep.graph
    coarse, result = [], None
    with backend.activate():
        if prep.working:
            multi = len(prep.working) > 1
            nt = len(prep.working)
            for i, ((_, gs, patch), (cl, sub0)) in enumerate(zip(prep.working, cs.sets, strict=True)):
                if multi:
                    sub = _copy_info(sub0)
                    sub["params"], sub["timings"] = info["params"], info["timings"]
                else:
                    sub = info
                sp = prog.sub(i / nt, (i + 1) / nt) if multi else prog
                if gs is None:
                    res = _settle(graph, cl, k, epsilon, sp, sub)
                else:
                    res = _carry_working(graph, gs, patch, cl, k, epsilon, sp, sub,
                                         prep.nearest[i] if prep.nearest else None)
                coarse.append((res, sub))
        else:
            result = _settle(graph, cs.sets[0][0], k, epsilon, prog, info)
    return ClusteredMesh(kw=kw, info=info, apsp_method=cs.apsp_method, coarse=coarse, result=result,
                         seconds=cs.seconds + time.perf_counter() - t_start)


def cut_clustered(prep: PreparedMesh, cm: ClusteredMesh, *, refine_boundaries=DEFAULT_REFINE_BOUNDARIES,
                  device=None, progress=None) -> MeshSegmentation:
    """The cut half of :func:`segment_prepared`: the full-resolution re-cut of the carried
    boundaries (``refine_boundaries``), the consensus of several working resolutions, the
    clean-up, the parts' memberships, every input face's label and colour. Neither ``prep``
    nor ``cm`` is modified."""
    t_start = time.perf_counter()
    prog = as_progress(progress)
    backend = _prepared_backend(prep, device)
    with backend.activate():
        cut = _cut_labels(prep, cm, refine_boundaries, prog)
    return _finish_cut(prep, cm, cut, backend, prog, time.perf_counter() - t_start)


def _cut_labels(prep: PreparedMesh, cm: ClusteredMesh, refine_boundaries, prog) -> tuple:
    """:func:`cut_clustered`'s first half (on the active device): the re-cut, the consensus and the
    clean-up. Returns ``(labels, P, reps, fuzzy, info)`` on the cleaned faces: the final labels and
    k (``P.shape[1]``), the clusters' memberships (not yet the parts')."""
    info = _copy_info(cm.info)
    info["params"]["refine_boundaries"] = bool(refine_boundaries)
    graph = prep.graph
    if prep.working:
        labels, P, reps, fuzzy = _cut_resolutions(graph, prep.working, cm, cm.kw["epsilon"], prog, info,
                                                  bool(refine_boundaries))
    else:
        labels, P, reps, fuzzy = cm.result
    prog.update(0.95, "boundary cut")  # after the re-cut's share (it ends at 0.95)
    t0 = time.perf_counter()
    labels, P, reps = _finish_labels(graph, labels, P, reps, info)
    info["timings"]["cut"] += time.perf_counter() - t0
    return labels, P, reps, fuzzy, info


def _finish_cut(prep: PreparedMesh, cm: ClusteredMesh, cut: tuple, backend, prog, seconds: float,
                extra_seconds: float = 0.0) -> MeshSegmentation:
    """:func:`cut_clustered`'s second half: :func:`_cut_labels`' result ``cut`` with the parts'
    memberships, carried to every input face and coloured. ``seconds``: the cut's time so far
    (``extra_seconds``: other stages' besides ``cm``'s and ``prep``'s, in the total)."""
    t_start = time.perf_counter()
    labels, P, reps, fuzzy, info = cut
    graph, kept, rep = prep.graph, prep.kept, prep.report
    F_in = rep["n_input_faces"]
    with backend.activate():
        t0 = time.perf_counter()
        # memberships of the final parts (the clustering's memberships describe the clusters
        # before the cut and the merges, so they can disagree with the labels)
        P = _bd.part_memberships(graph, labels, P.shape[1], scale=_membership_scale(graph))
        info["timings"]["cut"] += time.perf_counter() - t0
    # back to the input faces
    n_drop = F_in - prep.faces.shape[0]
    K = P.shape[1]
    labels_in = np.zeros(F_in, dtype=np.int32)
    P_in = np.zeros((F_in, K), dtype=np.float32)
    fuzzy_in = np.zeros(F_in, dtype=bool)
    comp_in = np.zeros(F_in, dtype=np.int64)
    labels_in[kept] = labels
    P_in[kept] = P
    fuzzy_in[kept] = fuzzy
    comp_in[kept] = graph.component
    if n_drop:
        vin = np.asarray(prep.vertices_in, dtype=np.float64)
        fin = np.asarray(prep.faces_in, dtype=np.int64)
        dropped = rep["dropped_faces"]
        cen = vin[fin[dropped]].mean(axis=1)
        _, near = cKDTree(graph.centroids).query(cen, k=1)
        labels_in[dropped] = labels[near]
        P_in[dropped] = P[near]
        comp_in[dropped] = graph.component[near]
    cluster_colors = palette(K)
    face_colors = blend_face_colors(P_in, labels_in, cluster_colors, shading=cm.kw["shading"])
    info["k"] = K
    stage = cm.seconds + extra_seconds + seconds + time.perf_counter() - t_start
    info["timings"]["total"] = stage + sum(prep.info["timings"][x]
                                           for x in ("clean", "dual_graph", "simplify", "apsp", "transfer"))
    prog.update(1.0, "done")
    return MeshSegmentation(
        labels=labels_in, memberships=P_in, representatives=kept[reps].astype(np.int64),
        fuzzy=fuzzy_in, face_colors=face_colors, cluster_colors=cluster_colors, k=K,
        component=comp_in, info=info)


def consensus_targets(target: int, n_faces: int, scales=None) -> list[int]:
    """The working resolutions clustered for ``max_faces="auto"``: ``target`` first, then
    ``scales`` (default ``CONSENSUS_SCALES``) times it (capped at the mesh's own face count,
    duplicates dropped)."""
    out = [int(target)]
    for sc in (CONSENSUS_SCALES if scales is None else scales):
        t = min(int(round(float(sc) * target)), int(n_faces))
        if t >= 200 and t not in out:
            out.append(t)
    return out


def labels_agreement(a, b, weights) -> float:
    """Area-weighted Rand index of two labelings of the same faces (1: the same partition)."""
    n = contingency(a, b, weights)
    tot = float(n.sum()) or 1.0
    s_ab = float((n ** 2).sum())
    s_a = float((n.sum(axis=1) ** 2).sum())
    s_b = float((n.sum(axis=0) ** 2).sum())
    return 1.0 - (s_a + s_b - 2.0 * s_ab) / tot ** 2


def agreement_matrix(labelings: list, weights) -> np.ndarray:
    """(m, m) :func:`labels_agreement` of every two labelings (0 on the diagonal), each labeling
    compacted once rather than once per pair (issue 20: the medoid of a k edit's seven results at
    17k faces took ~15 ms in 42 ``np.unique`` sorts); the same numbers."""
    m = len(labelings)
    comp = [np.unique(np.asarray(lab).reshape(-1), return_inverse=True) for lab in labelings]
    comp = [(inv.reshape(-1), u.size) for u, inv in comp]
    w = np.asarray(weights, dtype=np.float64)
    agree = np.zeros((m, m))
    for i in range(m):
        a, ka = comp[i]
        for j in range(i + 1, m):
            b, kb = comp[j]
            if a.size != b.size:
                raise ValueError(f"segmentations cover {a.size} and {b.size} faces")
            n = np.bincount(a * kb + b, weights=w, minlength=ka * kb).reshape(ka, kb).astype(np.float64)
            tot = float(n.sum()) or 1.0
            s_ab = float((n ** 2).sum())
            s_a = float((n.sum(axis=1) ** 2).sum())
            s_b = float((n.sum(axis=0) ** 2).sum())
            agree[i, j] = agree[j, i] = 1.0 - (s_a + s_b - 2.0 * s_ab) / tot ** 2
    return agree


def choose_consensus(graph, labelings: list, rule: str | None = None) -> tuple[int, list]:
    """Index of the labeling kept among results at several working resolutions, and the
    per-candidate scores. ``"medoid"``: the highest summed agreement with the others
    (:func:`labels_agreement`; ties and two candidates go to the most concave boundaries);
    ``"concavity"``: the most concave boundaries (:func:`boundary_concavity`)."""
    rule = CONSENSUS_RULE if rule is None else rule
    m = len(labelings)
    conc = [boundary_concavity(graph, lab) for lab in labelings]
    if m == 1:
        return 0, [1.0]
    if rule == "concavity" or m == 2:
        return int(np.argmax(conc)), conc
    agree = agreement_matrix(labelings, graph.areas)
    score = agree.sum(axis=1)
    best = np.flatnonzero(score >= score.max() - 1e-9)
    return int(best[np.argmax(np.asarray(conc)[best])]), [float(x) for x in score]


def _cut_resolutions(graph, working, cm: ClusteredMesh, epsilon, prog, info, refine):
    """Re-cut the clusterings of ``cm`` at full resolution and keep the consensus of several
    working resolutions (:func:`choose_consensus`); one working resolution: its re-cut."""
    if len(working) == 1:
        res, _ = cm.coarse[0]
        _, gs, patch = working[0]
        return _recut_full(graph, gs, patch, res, epsilon, prog, info, refine) if isinstance(res, dict) else res
    results, infos = [], []
    nt = len(working)
    winner_only = CONSENSUS_RECUT == "winner"
    for i, ((_, gs, patch), (res, sub0)) in enumerate(zip(working, cm.coarse, strict=True)):
        sub = _copy_info(sub0)
        sub["params"], sub["timings"] = info["params"], info["timings"]
        if isinstance(res, dict) and not winner_only:
            res = _recut_full(graph, gs, patch, res, epsilon, prog.sub(i / nt, (i + 1) / nt), sub, refine)
        results.append(res)
        infos.append(sub)
    best, scores = choose_consensus(graph, [r["lab0"] if isinstance(r, dict) else r[0] for r in results])
    if isinstance(results[best], dict):  # winner_only: re-cut the one kept
        _, gs, patch = working[best]
        results[best] = _recut_full(graph, gs, patch, results[best], epsilon, prog, infos[best], refine)
    for key, val in infos[best].items():
        if key in ("params", "timings"):
            continue
        if key in ("warnings", "notes"):
            info.setdefault(key, []).extend(val)
        else:
            info[key] = val
    sizes = [graph.n if gs is None else gs.n for _, gs, _ in working]
    info["consensus"] = {"resolutions": [int(min(t, graph.n)) for t, _, _ in working], "faces": sizes,
                         "scores": scores, "kept": int(min(working[best][0], graph.n)),
                         "k": [int(np.unique(r["lab0"] if isinstance(r, dict) else r[0]).size) for r in results]}
    return results[best]


def _squared_distances(ct, c) -> np.ndarray:
    """``((centroids - c) ** 2).sum(axis=1)`` bit for bit, from the coordinates' rows ``ct``
    (``centroids.T``, contiguous): NumPy sums a row of three left to right, so this is
    ``((x - cx)² + (y - cy)²) + (z - cz)²``, without the (F, 3) temporaries and the reduction over
    a short axis (issue 22, session 9: ~9x quicker at 17k faces on the development CPU)."""
    d0 = ct[0] - c[0]
    d1 = ct[1] - c[1]
    d2 = ct[2] - c[2]
    return (d0 * d0 + d1 * d1) + d2 * d2


def _nearest_centroids(centroids, points) -> np.ndarray:
    """(K,) int64: for each point, the first centroid at the smallest squared distance (as
    ``argmin(((centroids - c) ** 2).sum(axis=1))``, the same index)."""
    centroids = np.asarray(centroids)
    ct = np.ascontiguousarray(centroids.T)
    nb = _bd.compiled() if COMPILED_NEAREST and ct.dtype == np.float64 and ct.shape[1] > 0 else None
    if nb is not None:
        return nb.nearest_centroids(ct, np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3))
    return np.asarray([int(np.argmin(_squared_distances(ct, c))) for c in np.asarray(points)], dtype=np.int64)


#: :func:`_nearest_centroids` by one compiled pass per point (:func:`gpu_kernels.mesh._numba_cut.nearest_centroids`,
#: the same indices; issue 22, session 11) where numba imports; False: NumPy per point
COMPILED_NEAREST = True


def _patch_centre_face(graph, patch, p, centre) -> int:
    faces = np.flatnonzero(patch == p)
    return int(faces[np.argmin(((graph.centroids[faces] - centre) ** 2).sum(axis=1))])


def _cluster_working(graph, gs, patch, k, epsilon, apsp_method, max_iter, backend, prog, info,
                     power=None, overseg=1.0, dists=None, nearest=None, starts=None, orders=None) -> dict:
    """Cluster the working resolution ``gs`` (a simplified copy, or patches ``patch`` of the full
    graph) and carry its labels and memberships to every face of ``graph`` by the nearest
    working face (no cut).
    Returns ``{"labels_s", "reps_s", "P", "nearest", "lab0"}``."""
    info["n_faces_segmented"] = gs.n
    # the coarse clustering fills the bar up to 80 %; the full-resolution re-cut follows (no step back)
    cl = _clusterings(gs, k, apsp_method, max_iter, backend, prog.sub(0.05, 0.8), info, power, overseg, dists,
                      starts, orders, early_epsilon=epsilon)
    return _carry_working(graph, gs, patch, cl, k, epsilon, prog.sub(0.05, 0.8), info, nearest)


def _carry_working(graph, gs, patch, cl: dict, k, epsilon, prog, info, nearest=None) -> dict:
    """The second half of :func:`_cluster_working`: settle the working resolution's clusterings
    (:func:`_settle`) and carry the labels and memberships to every face of ``graph``."""
    labels_s, P_s, reps_s, _ = _settle(gs, cl, k, epsilon, prog, info)
    labels_s, P_s, reps_s = _finish_labels(gs, labels_s, P_s, reps_s, {"warnings": []})
    t0 = time.perf_counter()
    if patch is not None:
        P, nearest = np.asarray(P_s, dtype=np.float32)[patch], patch
    elif nearest is not None:  # stage 1's mapping (the same as transfer_memberships')
        P = np.asarray(P_s, dtype=np.float32)[nearest]
    else:
        P, nearest = transfer_memberships(gs.centroids, P_s, graph.centroids)
    lab0 = labels_s[nearest].astype(np.int64)
    info["timings"]["transfer"] += time.perf_counter() - t0
    return {"labels_s": labels_s, "reps_s": reps_s, "P": P, "nearest": nearest, "lab0": lab0}


def _recut_full(graph, gs, patch, coarse: dict, epsilon, prog, info, refine=DEFAULT_REFINE_BOUNDARIES):
    """After :func:`_cluster_working`: re-decide the faces near the carried
    labels' changes by a cut on the full-resolution graph; the representatives."""
    t0 = time.perf_counter()
    P, lab0, reps_s = coarse["P"], coarse["lab0"], coarse["reps_s"]
    # faces near label changes are re-decided by a cut on the full-resolution graph
    change = lab0[graph.src] != lab0[graph.dst]
    mask = np.zeros(graph.n, dtype=bool)
    mask[graph.src[change]] = True
    mask[graph.dst[change]] = True
    rings = int(math.ceil(math.sqrt(graph.n / max(gs.n, 1)))) + REFINE_EXTRA_RINGS
    # the band: the rings around the carried labels' changes that the working resolution's
    # staircase spans. (Adding every face whose carried memberships are fuzzy, as before
    # session 3b, let the cut move a boundary far, e.g. swallow most of a plier's handle:
    # 0.1614 -> 0.1609 protocol k, 0.1772 -> 0.1761 auto k on the 76 PSB meshes, chosen in 19/19
    # leave-one-category-out folds, benchmarks/results/mesh_session3.md)
    band = _bd.dilate(graph, mask, rings)
    if not refine:
        band[:] = False
    # never let the band swallow a whole cluster: its most certain half stays fixed
    Pl = P[np.arange(graph.n), lab0]
    for j in range(P.shape[1]):
        mine = lab0 == j
        nmine = int(mine.sum())
        if nmine and band[mine].sum() > 0.8 * nmine:
            thr = np.median(Pl[mine])
            band[mine & (Pl >= thr)] = False
    labels, st = _bd.resolve_fuzzy_regions(graph, P, band, labels=lab0,
                                           progress=prog.sub(0.8, 0.95))
    info["cut_full_resolution"] = st
    # representatives: the input face nearest to each simplified representative (K points:
    # a direct search, no tree over every face)
    reps = _nearest_centroids(graph.centroids, gs.centroids[reps_s])
    if patch is not None:  # the face nearest the patch's centre, within the patch
        reps = np.asarray([_patch_centre_face(graph, patch, int(r), gs.centroids[int(r)]) for r in reps_s])
    info["timings"]["transfer"] += time.perf_counter() - t0
    # the faces reported as uncertain: the re-cut band and the fuzzy carried memberships
    uncertain = band | _bd.fuzzy_faces(P, epsilon) if refine else band
    return labels, P, np.asarray(reps, dtype=np.int64), uncertain
