"""Segmentation-comparison metrics of the Princeton Segmentation Benchmark (Chen,
Golovinskiy & Funkhouser 2009), implemented as the benchmark's own evaluation code does:

* **Rand Index error** ``1 - RI`` over face pairs, counted per face (not area weighted),
  from the contingency table: ``(sum C(a_i,2) + sum C(b_j,2) - 2 sum C(n_ij,2)) / C(N,2)``;
* **Hamming distance** (Huang & Dom), area weighted: each segment is matched to the segment
  of the other segmentation it overlaps most; ``Rm`` (missing rate) = directional distance
  from the algorithm's segments to the reference's, divided by the total area, ``Rf``
  (false-alarm rate) the reverse, and the distance ``(Rm + Rf) / 2``;
* **GCE / LCE** (Martin et al.), per face counts: with ``E(S1,S2,f) = |R(S1,f) \\ R(S2,f)| /
  |R(S1,f)|``, ``GCE = min(sum_f E12, sum_f E21) / N`` and ``LCE = sum_f min(E12, E21) / N``;
* **cut discrepancy**: for every mesh vertex on a cut (an edge between faces of different
  segments) of one segmentation, its geodesic distance (Dijkstra along mesh edges) to the
  nearest cut vertex of the other; the mean over both directions, divided by the mesh's
  average radius (mean vertex distance to the area-weighted centroid).

Argument order follows the benchmark: ``metric(algorithm, reference)``; RI, GCE, LCE, CD
and the Hamming distance are symmetric, Rm and Rf swap.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

__all__ = [
    "contingency",
    "rand_index_error",
    "hamming_distance",
    "consistency_error",
    "cut_discrepancy",
    "average_radius",
    "compare_segmentations",
]


def _compact(labels) -> tuple[np.ndarray, int]:
    u, inv = np.unique(np.asarray(labels).reshape(-1), return_inverse=True)
    return inv.reshape(-1), u.size


def contingency(a, b, weights=None) -> np.ndarray:
    """(Ka, Kb) table of face counts (or summed ``weights``) per label pair."""
    a, ka = _compact(a)
    b, kb = _compact(b)
    if a.size != b.size:
        raise ValueError(f"segmentations cover {a.size} and {b.size} faces")
    idx = a * kb + b
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    return np.bincount(idx, weights=w, minlength=ka * kb).reshape(ka, kb).astype(np.float64)


def _c2(x):
    x = np.asarray(x, dtype=np.float64)
    return x * (x - 1.0) / 2.0


def rand_index_error(a, b) -> float:
    """``1 - RI`` over all face pairs (0 for identical partitions)."""
    n = contingency(a, b)
    N = n.sum()
    if N < 2:
        return 0.0
    val = _c2(n.sum(1)).sum() + _c2(n.sum(0)).sum() - 2.0 * _c2(n).sum()
    return float(val / _c2(N))


def hamming_distance(a, b, areas=None) -> tuple[float, float, float]:
    """``(distance, Rm, Rf)`` with ``a`` the algorithm and ``b`` the reference, area weighted."""
    n = contingency(a, b, areas)
    total = n.sum()
    if total <= 0:
        return 0.0, 0.0, 0.0
    dh12 = total - n.max(axis=0).sum()  # reference segments matched to best algorithm segment
    dh21 = total - n.max(axis=1).sum()
    return float((dh12 + dh21) / (2 * total)), float(dh12 / total), float(dh21 / total)


def consistency_error(a, b) -> tuple[float, float]:
    """``(GCE, LCE)`` per face (the benchmark returns 0 when either side is trivial)."""
    n = contingency(a, b)
    N = n.sum()
    ka, kb = n.shape
    if ka == 1 or kb == 1 or ka == N or kb == N:
        return 0.0, 0.0
    sa = n.sum(1, keepdims=True)
    sb = n.sum(0, keepdims=True)
    e12 = 1.0 - n / sa
    e21 = 1.0 - n / sb
    gce = min((e12 * n).sum(), (e21 * n).sum()) / N
    lce = (np.minimum(e12, e21) * n).sum() / N
    return float(gce), float(lce)


def _edges(faces):
    f = np.asarray(faces, dtype=np.int64)
    F = f.shape[0]
    a = f[:, [0, 1, 2]].reshape(-1)
    b = f[:, [1, 2, 0]].reshape(-1)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    fid = np.repeat(np.arange(F), 3)
    return lo, hi, fid


def average_radius(vertices, faces) -> float:
    """Mean distance of the vertices from the area-weighted surface centroid."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    ar = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)
    cen = (p0 + p1 + p2) / 3.0
    c = (cen * ar[:, None]).sum(0) / max(ar.sum(), 1e-300)
    return float(np.linalg.norm(v - c, axis=1).mean())


class _CutContext:
    """Mesh edge graph and manifold edge -> face pairs, shared by many comparisons."""

    def __init__(self, vertices, faces):
        v = np.asarray(vertices, dtype=np.float64)
        lo, hi, fid = _edges(faces)
        nv = v.shape[0]
        key = lo * nv + hi
        order = np.argsort(key, kind="stable")
        ks = key[order]
        starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        counts = np.diff(np.r_[starts, ks.size])
        m2 = starts[counts == 2]
        self.fa = fid[order[m2]]
        self.fb = fid[order[m2 + 1]]
        self.ea = lo[order[m2]]
        self.eb = hi[order[m2]]
        u = lo[order[starts]]
        w = hi[order[starts]]
        length = np.linalg.norm(v[u] - v[w], axis=1)
        self.graph = sp.coo_matrix((np.r_[length, length], (np.r_[u, w], np.r_[w, u])),
                                   shape=(nv, nv)).tocsr()
        self.nv = nv
        self.radius = average_radius(v, faces)

    def cut_vertices(self, labels) -> np.ndarray:
        lab = np.asarray(labels)
        cut = lab[self.fa] != lab[self.fb]
        return np.unique(np.r_[self.ea[cut], self.eb[cut]])

    def distance_from(self, verts) -> np.ndarray:
        return dijkstra(self.graph, directed=False, indices=verts, min_only=True)


def cut_discrepancy(vertices, faces, a, b, *, context=None) -> float | None:
    """Mean geodesic distance between the two segmentations' cut vertices, divided by the
    average radius; ``None`` when either segmentation has no cut."""
    ctx = context if context is not None else _CutContext(vertices, faces)
    ca, cb = ctx.cut_vertices(a), ctx.cut_vertices(b)
    if ca.size == 0 or cb.size == 0:
        return None
    da = ctx.distance_from(ca)
    db = ctx.distance_from(cb)
    vals = np.r_[db[ca], da[cb]]
    vals = vals[np.isfinite(vals)]
    if vals.size == 0:
        return None
    return float(vals.mean() / ctx.radius)


def compare_segmentations(vertices, faces, labels, references, *, areas=None) -> dict:
    """Every metric of ``labels`` against each reference segmentation, averaged.

    Returns a dict with ``RI`` (Rand Index error), ``HD``, ``Rm``, ``Rf``, ``GCE``, ``LCE``,
    ``CD`` (mean over the references where defined) and ``n_refs``.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    if areas is None:
        p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
        areas = 0.5 * np.linalg.norm(np.cross(p1 - p0, p2 - p0), axis=1)
    ctx = _CutContext(v, f)
    rows = []
    for ref in references:
        hd, rm, rf = hamming_distance(labels, ref, areas)
        gce, lce = consistency_error(labels, ref)
        rows.append({"RI": rand_index_error(labels, ref), "HD": hd, "Rm": rm, "Rf": rf,
                     "GCE": gce, "LCE": lce,
                     "CD": cut_discrepancy(v, f, labels, ref, context=ctx)})
    out = {}
    for key in ("RI", "HD", "Rm", "Rf", "GCE", "LCE", "CD"):
        vals = [r[key] for r in rows if r[key] is not None]
        out[key] = float(np.mean(vals)) if vals else None
    out["n_refs"] = len(rows)
    return out
