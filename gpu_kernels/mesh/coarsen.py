"""A working resolution without remeshing: the faces grouped into patches, and the graph
of the patches.

:func:`coarsen` picks about ``target`` seed faces spread evenly over the surface (one per
cell of a 3-D grid whose cells hold about one patch's area, split by the facing of the
normal so that the two sides of a thin plate get their own seeds), grows a patch around
each seed by a multi-source Dijkstra on the dual graph (every face joins the seed it is
closest to, in the dual graph's own distance, so patches do not reach across creases), and
joins two patches that touch by an arc of weight ``min(d(a) + w(a, b) + d(b))`` over the
dual arcs ``(a, b)`` between them, ``d`` being a face's distance to its seed: the shortest
path from one seed to the other through the two patches.

The patch graph is a :class:`~gpu_kernels.mesh.dualgraph.DualGraph` (areas, centroids,
normals, boundary lengths and concavities summed or averaged over the patches), so the
clustering, the cuts and the merges run on it unchanged; the memberships of a patch go to
its faces, and the boundaries are then re-cut on the full-resolution graph.

Because the dual graph's distances do not depend on the triangulation
(:func:`gpu_kernels.mesh.dualgraph.scale_bending`) and the patches are laid out by area,
the same surface gives nearly the same patch graph whether it comes with 5,000 or 50,000
faces. NumPy and SciPy only; about linear in the number of faces.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.mesh.dualgraph import dual_graph
>>> from gpu_kernels.mesh.coarsen import coarsen
>>> # a flat 40 x 40 grid of squares, two triangles each
>>> n = 40
>>> xs, ys = np.meshgrid(np.arange(n + 1.0), np.arange(n + 1.0))
>>> v = np.c_[xs.ravel(), ys.ravel(), np.zeros(xs.size)]
>>> i = (np.arange(n)[:, None] * (n + 1) + np.arange(n)[None, :]).ravel()
>>> f = np.r_[np.c_[i, i + 1, i + n + 2], np.c_[i, i + n + 2, i + n + 1]]
>>> g = dual_graph(v, f, delta=0.5, eta_convex=0.1)
>>> pg, patch = coarsen(g, 200)
>>> 150 <= pg.n <= 260, patch.shape == (g.n,), bool(np.all(np.bincount(patch) > 0))
(True, True, True)
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components, dijkstra

from gpu_kernels.mesh.dualgraph import DualGraph

__all__ = ["coarsen"]

#: rounds of adjusting the grid cell to the wanted number of patches
_ROUNDS = 3


def _seeds(graph: DualGraph, cell: float) -> np.ndarray:
    """One seed face per occupied (grid cell, normal facing) bin: the face nearest the
    bin's area-weighted centroid."""
    c = graph.centroids
    q = np.floor((c - c.min(axis=0)) / cell).astype(np.int64)
    nrm = graph.normals
    axis = np.argmax(np.abs(nrm), axis=1)
    facing = axis * 2 + (nrm[np.arange(graph.n), axis] > 0)
    dims = q.max(axis=0) + 1
    key = ((q[:, 0] * dims[1] + q[:, 1]) * dims[2] + q[:, 2]) * 6 + facing
    # the mesh component too, so that every component gets its own seeds
    key = key * (graph.n_components) + graph.component
    uk, inv = np.unique(key, return_inverse=True)
    a = graph.areas
    wsum = np.bincount(inv, weights=a, minlength=uk.size)
    mean = np.stack([np.bincount(inv, weights=a * c[:, j], minlength=uk.size) for j in range(3)], axis=1)
    mean /= np.maximum(wsum, 1e-300)[:, None]
    d2 = ((c - mean[inv]) ** 2).sum(axis=1)
    order = np.lexsort((d2, inv))
    first = np.r_[True, inv[order][1:] != inv[order][:-1]]
    return order[first]


def coarsen(graph: DualGraph, target: int) -> tuple[DualGraph, np.ndarray]:
    """Group the faces of ``graph`` into about ``target`` connected patches.

    Returns ``(patch_graph, patch)``: the :class:`DualGraph` of the patches and the (F,)
    patch index of every face. With ``target >= graph.n`` every face is its own patch.
    """
    F = graph.n
    target = int(max(1, target))
    if target >= F or graph.n_edges == 0:
        return graph, np.arange(F, dtype=np.int64)
    total = float(graph.areas.sum())
    cell = np.sqrt(total / target)
    seeds = _seeds(graph, cell)
    for _ in range(_ROUNDS):
        if abs(seeds.size - target) <= 0.05 * target:
            break
        cell *= np.sqrt(seeds.size / target)
        seeds = _seeds(graph, cell)
    G = graph.csr()
    dist, _, src = dijkstra(G, directed=True, indices=seeds, min_only=True, return_predecessors=True)
    # faces no seed reaches (cannot happen with a seed per component, kept for safety)
    lost = src < 0
    if lost.any():
        extra = []
        ncomp, comp = connected_components(G[lost][:, lost], directed=False)
        idx = np.flatnonzero(lost)
        for c in range(ncomp):
            extra.append(idx[np.argmax(comp == c)])
        seeds = np.r_[seeds, np.asarray(extra, dtype=np.int64)]
        dist, _, src = dijkstra(G, directed=True, indices=seeds, min_only=True, return_predecessors=True)
    seed_index = np.full(F, -1, dtype=np.int64)
    seed_index[seeds] = np.arange(seeds.size)
    patch = seed_index[src]
    P = seeds.size
    # patch properties
    a = graph.areas
    area = np.bincount(patch, weights=a, minlength=P)
    cen = np.stack([np.bincount(patch, weights=a * graph.centroids[:, j], minlength=P) for j in range(3)], 1)
    cen /= np.maximum(area, 1e-300)[:, None]
    nrm = np.stack([np.bincount(patch, weights=a * graph.normals[:, j], minlength=P) for j in range(3)], 1)
    ln = np.linalg.norm(nrm, axis=1, keepdims=True)
    nrm = np.where(ln > 0, nrm / np.where(ln > 0, ln, 1.0), 0.0)
    # arcs between patches
    s, d = graph.src, graph.dst
    ps, pd = patch[s], patch[d]
    cross = ps != pd
    lo = np.minimum(ps[cross], pd[cross])
    hi = np.maximum(ps[cross], pd[cross])
    key = lo * P + hi
    uk, inv = np.unique(key, return_inverse=True)
    via = dist[s[cross]] + graph.weight[cross] + dist[d[cross]]
    w = np.full(uk.size, np.inf)
    np.minimum.at(w, inv, via)
    L = graph.edge_length[cross] if graph.edge_length is not None else np.ones(int(cross.sum()))
    Lsum = np.bincount(inv, weights=L, minlength=uk.size)
    Ls = np.maximum(Lsum, 1e-300)
    ang = np.bincount(inv, weights=L * graph.ang[cross], minlength=uk.size) / Ls
    conc = np.bincount(inv, weights=L * graph.concavity[cross], minlength=uk.size) / Ls
    src_p, dst_p = uk // P, uk % P
    geod = np.linalg.norm(cen[src_p] - cen[dst_p], axis=1)
    comp = graph.component[seeds]
    pg = DualGraph(
        n=P, src=src_p.astype(np.int64), dst=dst_p.astype(np.int64), weight=w, ang=ang, geod=geod,
        avg_ang=graph.avg_ang, avg_geod=graph.avg_geod, centroids=cen, normals=nrm, areas=area,
        component=comp.astype(np.int64), n_components=graph.n_components,
        edge_vertices=np.zeros((uk.size, 2), dtype=np.int64), concave=conc > 0,
        edge_length=Lsum, ref_scale=graph.ref_scale, delta=graph.delta, eta_convex=graph.eta_convex,
        warnings=[],
    )
    pg.concavity_values = conc
    return pg, patch
