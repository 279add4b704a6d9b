"""Compiled (numba) twins of the boundary cut's graph searches: the minimum s-t cut of the
fuzzy regions and the connected components of the faces over chosen arcs.

Imported only through :func:`gpu_kernels.mesh.boundary.compiled` (numba is optional:
``pip install gpulab[fast]``); :mod:`scipy.sparse.csgraph` stays the fallback. Both give
exactly what SciPy gives:

- :func:`min_cut_source_side` is Dinic's maximum flow followed by a search from the source
  over the arcs left with residual capacity. The faces reachable from the source in the
  residual network of *any* maximum flow are the same set (the inclusion-smallest minimum
  cut), so the side does not depend on the flow algorithm (SciPy's ``maximum_flow`` is
  another one);
- :func:`components` numbers the components in the order of their smallest face, as
  ``scipy.sparse.csgraph.connected_components`` does for an undirected graph.

On the 17k-face PSB mesh a k edit cuts four over-segmentations and searches components a
few times each; SciPy's calls cost 1-3 ms each there, most of it building and checking
sparse matrices (issue 20). Compiled code is cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _find(parent, x):  # pragma: no cover - compiled
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:  # path compression
        nxt = parent[x]
        parent[x] = root
        x = nxt
    return root


@njit(cache=True, nogil=True)
def components(n, src, dst, keep):  # pragma: no cover - compiled
    """``(count, labels)``: the connected components of nodes ``0..n-1`` over the arcs
    ``src[e] - dst[e]`` with ``keep[e]``, numbered by their smallest node (SciPy's order)."""
    parent = np.arange(n)
    for e in range(src.size):
        if keep[e]:
            a = _find(parent, src[e])
            b = _find(parent, dst[e])
            if a != b:
                if a < b:
                    parent[b] = a
                else:
                    parent[a] = b
    labels = np.empty(n, dtype=np.int32)
    lab_of = np.full(n, -1, dtype=np.int32)
    count = 0
    for i in range(n):
        r = _find(parent, i)
        if lab_of[r] < 0:
            lab_of[r] = count
            count += 1
        labels[i] = lab_of[r]
    return count, labels


@njit(cache=True, nogil=True)
def _arc_pair(tail, head, res, a, u, v, cap_uv, cap_vu):  # pragma: no cover - compiled
    """Arcs ``a`` (u -> v, capacity ``cap_uv``) and ``a + 1`` (its reverse, ``cap_vu``): each
    the other's reverse (``a ^ 1``). Returns the next free arc."""
    tail[a] = u
    head[a] = v
    res[a] = cap_uv
    tail[a + 1] = v
    head[a + 1] = u
    res[a + 1] = cap_vu
    return a + 2


@njit(cache=True, nogil=True)
def min_cut_source_side(m, ei, ej, cap, src_cap, snk_cap):  # pragma: no cover - compiled
    """The source side (an (m,) bool mask) of the smallest minimum s-t cut of ``m`` nodes:
    undirected arcs ``ei[e] - ej[e]`` of capacity ``cap[e]``, arcs from the source of
    ``src_cap`` and to the sink of ``snk_cap`` (integers; 0: no arc).

    The nodes fall apart into components joined only through the source and the sink (the
    boundary cut batches every fuzzy region into one problem): each component is its own
    maximum flow, and what the source reaches in one does not depend on the others. So each
    is solved alone (:func:`_dinic_side`), its searches covering only its own nodes: at 50k
    faces the batched cut took 69 phases of a search over all 13k fuzzy faces, most regions
    long finished (66 -> a few ms, issue 22). A component the source has no arc into has
    nothing on the source side."""
    for e in range(ei.size):  # an arc that names a terminal (m: source, m + 1: sink): as one problem
        if ei[e] >= m or ej[e] >= m:
            return _dinic_side(m, ei, ej, cap, src_cap, snk_cap)
    side = np.zeros(m, dtype=np.bool_)
    if m == 0:
        return side
    nc, comp = components(m, ei, ej, np.ones(ei.size, dtype=np.bool_))
    # nodes and arcs grouped by component (counting sorts, file order kept within a group)
    nstart = np.zeros(nc + 1, dtype=np.int64)
    astart = np.zeros(nc + 1, dtype=np.int64)
    has_src = np.zeros(nc, dtype=np.bool_)
    for i in range(m):
        nstart[comp[i] + 1] += 1
        if src_cap[i] > 0:
            has_src[comp[i]] = True
    for e in range(ei.size):
        astart[comp[ei[e]] + 1] += 1
    for c in range(nc):
        nstart[c + 1] += nstart[c]
        astart[c + 1] += astart[c]
    nodes = np.empty(m, dtype=np.int64)
    local = np.empty(m, dtype=np.int64)
    fill = nstart[:nc].copy()
    for i in range(m):
        c = comp[i]
        local[i] = fill[c] - nstart[c]
        nodes[fill[c]] = i
        fill[c] += 1
    arcs = np.empty(ei.size, dtype=np.int64)
    fill = astart[:nc].copy()
    for e in range(ei.size):
        c = comp[ei[e]]
        arcs[fill[c]] = e
        fill[c] += 1
    for c in range(nc):
        if not has_src[c]:
            continue
        n0, n1 = nstart[c], nstart[c + 1]
        a0, a1 = astart[c], astart[c + 1]
        mc = n1 - n0
        li = np.empty(a1 - a0, dtype=np.int64)
        lj = np.empty(a1 - a0, dtype=np.int64)
        lc = np.empty(a1 - a0, dtype=np.int64)
        for q in range(a1 - a0):
            e = arcs[a0 + q]
            li[q] = local[ei[e]]
            lj[q] = local[ej[e]]
            lc[q] = cap[e]
        ls = np.empty(mc, dtype=np.int64)
        lt = np.empty(mc, dtype=np.int64)
        for q in range(mc):
            ls[q] = src_cap[nodes[n0 + q]]
            lt[q] = snk_cap[nodes[n0 + q]]
        sub = _dinic_side(mc, li, lj, lc, ls, lt)
        for q in range(mc):
            side[nodes[n0 + q]] = sub[q]
    return side


@njit(cache=True, nogil=True)
def _dinic_side(m, ei, ej, cap, src_cap, snk_cap):  # pragma: no cover - compiled
    """:func:`min_cut_source_side` of one problem as a whole: Dinic's maximum flow, then the
    nodes the source still reaches."""
    s = m
    t = m + 1
    n = m + 2
    ns = 0
    nt = 0
    for i in range(m):
        if src_cap[i] > 0:
            ns += 1
        if snk_cap[i] > 0:
            nt += 1
    na = 2 * (ei.size + ns + nt)
    tail = np.empty(na, dtype=np.int64)
    head = np.empty(na, dtype=np.int64)
    res = np.empty(na, dtype=np.int64)
    a = 0
    for e in range(ei.size):  # an undirected arc: a pair, each the other's reverse
        a = _arc_pair(tail, head, res, a, ei[e], ej[e], cap[e], cap[e])
    for i in range(m):  # the terminals' arcs: one way (the reverse has no capacity)
        if src_cap[i] > 0:
            a = _arc_pair(tail, head, res, a, s, i, src_cap[i], 0)
        if snk_cap[i] > 0:
            a = _arc_pair(tail, head, res, a, i, t, snk_cap[i], 0)
    # the arcs leaving each node
    start = np.zeros(n + 1, dtype=np.int64)
    for a in range(na):
        start[tail[a] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:n].copy()
    out = np.empty(na, dtype=np.int64)
    for a in range(na):
        out[fill[tail[a]]] = a
        fill[tail[a]] += 1
    level = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    it = np.empty(n, dtype=np.int64)
    path_v = np.empty(n + 1, dtype=np.int64)
    path_a = np.empty(n + 1, dtype=np.int64)
    while True:
        # levels by a breadth-first search over arcs with residual capacity
        level[:] = -1
        level[s] = 0
        qh = 0
        qt = 1
        queue[0] = s
        while qh < qt:
            v = queue[qh]
            qh += 1
            for p in range(start[v], start[v + 1]):
                b = out[p]
                w = head[b]
                if res[b] > 0 and level[w] < 0:
                    level[w] = level[v] + 1
                    queue[qt] = w
                    qt += 1
        if level[t] < 0:
            break
        # a blocking flow: augmenting paths along increasing levels
        for v in range(n):
            it[v] = start[v]
        depth = 0
        path_v[0] = s
        while True:
            v = path_v[depth]
            if v == t:
                f = res[path_a[0]]
                for q in range(1, depth):
                    if res[path_a[q]] < f:
                        f = res[path_a[q]]
                first = -1
                for q in range(depth):
                    b = path_a[q]
                    res[b] -= f
                    res[b ^ 1] += f
                    if first < 0 and res[b] == 0:
                        first = q
                depth = first  # go on from the tail of the first arc it saturated
                continue
            moved = False
            while it[v] < start[v + 1]:
                b = out[it[v]]
                w = head[b]
                if res[b] > 0 and level[w] == level[v] + 1:
                    path_a[depth] = b
                    depth += 1
                    path_v[depth] = w
                    moved = True
                    break
                it[v] += 1
            if not moved:
                if depth == 0:
                    break
                level[v] = -1  # a dead end for the rest of this phase
                depth -= 1
                it[path_v[depth]] += 1
    # the source side: what the source still reaches (the last search, which missed the sink)
    side = np.empty(m, dtype=np.bool_)
    for i in range(m):
        side[i] = level[i] >= 0
    return side


@njit(cache=True, nogil=True)
def top_two(P):  # pragma: no cover - compiled
    """Each row's highest and second-highest value and their columns ``(p1, p2, i1, i2)``: the
    first column of a repeated value, a repeated maximum both (``argmax``, then ``argmax`` with
    that column left out)."""
    F, K = P.shape
    p1 = np.empty(F, dtype=P.dtype)
    p2 = np.empty(F, dtype=P.dtype)
    i1 = np.empty(F, dtype=np.int64)
    i2 = np.empty(F, dtype=np.int64)
    for f in range(F):
        a = P[f, 0]
        ia = 0
        b = -np.inf
        ib = -1
        for j in range(1, K):
            v = P[f, j]
            if v > a:
                b = a
                ib = ia
                a = v
                ia = j
            elif v > b:
                b = v
                ib = j
        if ib < 0:  # every other value is -inf (or K == 1): argmax's first column
            ib = 0
        p1[f] = a
        p2[f] = b
        i1[f] = ia
        i2[f] = ib
    return p1, p2, i1, i2


@njit(cache=True, nogil=True)
def nearest_centroids(ct, points):  # pragma: no cover - compiled
    """(K,) for each row of ``points`` the first column of ``ct`` (the centroids' coordinates as
    rows, (3, F)) at the smallest ``((x - px)² + (y - py)²) + (z - pz)²``: NumPy's
    ``argmin(((centroids - p) ** 2).sum(axis=1))`` bit for bit (the first NaN, else the first
    smallest), in one pass per point without temporaries."""
    K = points.shape[0]
    F = ct.shape[1]
    out = np.zeros(K, dtype=np.int64)
    for r in range(K):
        px = points[r, 0]
        py = points[r, 1]
        pz = points[r, 2]
        best = np.inf
        jb = 0
        for j in range(F):
            d0 = ct[0, j] - px
            d1 = ct[1, j] - py
            d2 = ct[2, j] - pz
            d = (d0 * d0 + d1 * d1) + d2 * d2
            if d != d:
                jb = j
                break
            if j == 0 or d < best:
                best = d
                jb = j
        out[r] = jb
    return out


@njit(cache=True, nogil=True)
def dijkstra_min(indptr, indices, data, sources, limit, dist):  # pragma: no cover - compiled
    """``scipy.sparse.csgraph.dijkstra(G, directed=True, indices=sources, min_only=True, limit=limit)``
    into ``dist`` (float64, G's order), on G's CSR arrays (every stored entry an arc, as SciPy takes
    them): the distance from the nearest source, ``inf`` where it is over ``limit``. A binary heap
    instead of SciPy's Fibonacci heap: the same distances bit for bit, because a face's distance is
    the smallest ``d(u) + w(u, f)`` over its neighbours u with ``d(u) <= d(f)`` whatever the order they
    are settled in (``x + w >= x`` for ``w >= 0`` in floating point too)."""
    n = dist.size
    for i in range(n):
        dist[i] = np.inf
    done = np.zeros(n, dtype=np.bool_)
    cap = indices.size + sources.size + 1
    hk = np.empty(cap, dtype=np.float64)
    hv = np.empty(cap, dtype=np.int64)
    size = 0
    for s in sources:
        if dist[s] != 0.0:
            dist[s] = 0.0
            # push (0, s)
            i = size
            size += 1
            while i > 0:
                p = (i - 1) >> 1
                if hk[p] <= 0.0:
                    break
                hk[i] = hk[p]
                hv[i] = hv[p]
                i = p
            hk[i] = 0.0
            hv[i] = s
    while size > 0:
        d = hk[0]
        u = hv[0]
        # pop the root
        size -= 1
        if size > 0:
            kx = hk[size]
            vx = hv[size]
            i = 0
            while True:
                c = 2 * i + 1
                if c >= size:
                    break
                if c + 1 < size and hk[c + 1] < hk[c]:
                    c += 1
                if hk[c] >= kx:
                    break
                hk[i] = hk[c]
                hv[i] = hv[c]
                i = c
            hk[i] = kx
            hv[i] = vx
        if done[u] or d != dist[u]:
            continue
        done[u] = True
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if done[v]:
                continue
            nd = d + data[e]
            if nd <= limit and nd < dist[v]:
                dist[v] = nd
                i = size
                size += 1
                while i > 0:
                    p = (i - 1) >> 1
                    if hk[p] <= nd:
                        break
                    hk[i] = hk[p]
                    hv[i] = hv[p]
                    i = p
                hk[i] = nd
                hv[i] = v
