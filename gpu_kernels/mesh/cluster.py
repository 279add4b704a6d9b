"""Fuzzy clustering of faces from their all-pairs distance matrix (Katz & Tal 2003).

Given the dense (N, N) matrix ``D`` of dual-graph shortest-path distances of one connected
component:

1. the first representative minimises the sum of distances to all faces; each next one
   maximises its minimum distance to those already chosen (farthest-point order); ``G(k)``
   is that minimum distance for the k-th representative;
2. ``k = "auto"`` picks the k (2 <= k <= 20) that maximises ``G(k) - G(k+1)``;
3. memberships ``P_j(f) = (1/d(f, rep_j)) / sum_l 1/d(f, rep_l)`` (a face at distance 0
   from a representative belongs to it with membership 1);
4. representatives are recomputed as ``argmin_f sum_i P_j(f_i) d(f, f_i)``, i.e. the column
   argmins of ``D @ P`` (one dense product: ``xp.matmul``, cuBLAS SGEMM on the GPU);
5. 3-4 repeat until no representative changes, or ``max_iter``.

Every function takes arrays of one module (NumPy or CuPy) and works with ``xp`` ops only,
so the same code runs on either backend. Only small (K,) vectors come back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpu_kernels.backend import array_module, asnumpy
from gpu_kernels.errors import InputError
from gpu_kernels.jobs import as_progress

__all__ = [
    "KMAX_AUTO",
    "FuzzyClustering",
    "farthest_representatives",
    "choose_k",
    "memberships",
    "update_representatives",
    "fuzzy_cluster",
    "FarthestOrder",
    "farthest_order",
    "fuzzy_cluster_many",
    "column_argmin",
    "product_argmin",
]

KMAX_AUTO = 20


@dataclass
class FarthestOrder:
    """The farthest-point order of a distance matrix so far (:func:`farthest_order`): it
    depends only on ``D``, and every count's representatives are a prefix of it, so it is
    computed once per matrix and re-used by every k (issue 20). ``mind`` (the minimum
    distance of every face to ``reps``, an xp array) lets a longer order continue from it;
    ``done``: every face is at distance 0 from a representative (the order cannot grow)."""

    reps: np.ndarray
    G: np.ndarray
    mind: object
    done: bool = False

    @property
    def count(self) -> int:
        return int(self.reps.size)


def farthest_order(D, count: int, start: FarthestOrder | None = None, device=None) -> FarthestOrder:
    """The farthest-point order of ``D`` up to ``count`` representatives, continued from
    ``start`` (which is not modified) when given. See :func:`farthest_representatives`.
    On a CUDA device (``device``, or that of a CuPy ``D``) the steps run in one kernel launch
    (``mesh_farthest``, ``cuda/mesh_cluster.cu``): the same order."""
    xp = array_module(D)
    n = D.shape[0]
    count = max(1, min(int(count), n))
    if device is None and xp is not np:
        from gpu_kernels.backend import device_of

        device = device_of(D)
    if (device is not None and getattr(device, "is_gpu", False) and FUSED_MEMBERSHIPS
            and D.dtype == np.float32 and D.flags.c_contiguous):
        return _farthest_order_kernel(D, count, start, device)
    if start is None:
        r0 = int(xp.argmin(D.sum(axis=1, dtype=xp.float64)))
        reps = [r0]
        G = [np.inf]
        mind = D[r0].astype(xp.float32, copy=True)
        done = False
    else:
        if start.done or start.count >= count:
            return start
        reps, G, mind, done = list(start.reps), list(start.G), start.mind, False
    while len(reps) < count:
        r = int(xp.argmax(mind))
        g = float(mind[r])
        if not g > 0:
            done = True
            break
        reps.append(r)
        G.append(g)
        mind = xp.minimum(mind, D[r])
    return FarthestOrder(np.asarray(reps, dtype=np.int64), np.asarray(G, dtype=np.float64), mind, done)


def _farthest_order_kernel(D, count: int, start: FarthestOrder | None, device) -> FarthestOrder:
    from gpu_kernels.backend import kernel

    xp = device.xp
    n = int(D.shape[0])
    if start is not None and (start.done or start.count >= count):
        return start
    if start is None:
        r0 = int(xp.argmin(D.sum(axis=1, dtype=xp.float64)))
        reps, G = np.array([r0], dtype=np.int64), np.array([np.inf])
        mind = D[r0].astype(xp.float32, copy=True)
    else:
        reps, G, mind = start.reps, start.G, start.mind.copy()
    have = int(reps.size)
    reps_d = xp.zeros(count, dtype=xp.int64)
    G_d = xp.zeros(count, dtype=xp.float64)
    got = xp.zeros(1, dtype=xp.int32)
    fn = kernel(device, "mesh_cluster.cu", "mesh_farthest")
    fn((1,), (1024,), (D, np.int64(n), mind, reps_d, G_d, np.int32(have), np.int32(count), got))
    m = int(asnumpy(got)[0])
    reps = np.concatenate([reps, asnumpy(reps_d[have:m]).astype(np.int64)])
    G = np.concatenate([G, asnumpy(G_d[have:m]).astype(np.float64)])
    return FarthestOrder(reps, G, mind, m < count)


def farthest_representatives(D, count: int, order: FarthestOrder | None = None):
    """Farthest-point order of up to ``count`` representatives.

    Returns ``(reps, G)`` as NumPy arrays: ``reps[0]`` minimises the row sum of ``D``;
    ``G[i]`` (i >= 1) is the minimum distance of ``reps[i]`` to ``reps[:i]`` (``G[0] = inf``).
    Stops early when every face is already at distance 0 from a representative.
    ``order``: a :class:`FarthestOrder` of the same ``D`` to start from (the result is the same).
    """
    n = D.shape[0]
    count = max(1, min(int(count), n))
    o = farthest_order(D, count, order)
    return o.reps[:count].copy(), o.G[:count].copy()


def choose_k(G: np.ndarray, kmax: int = KMAX_AUTO) -> int:
    """k in ``2..kmax`` maximising ``G(k) - G(k+1)`` (1-based k; ``G`` from
    :func:`farthest_representatives`). Returns 1 when fewer than 2 representatives exist."""
    G = np.asarray(G, dtype=np.float64)
    m = G.size  # G[k-1] is G(k)
    if m < 2:
        return 1
    if m == 2:
        return 2
    best_k, best = 2, -np.inf
    for k in range(2, min(kmax, m - 1) + 1):
        gap = G[k - 1] - G[k]
        if gap > best:
            best, best_k = gap, k
    return best_k


def memberships(D, reps):
    """(N, K) float32 fuzzy memberships ``P_j(f)`` (rows sum to 1)."""
    xp = array_module(D)
    idx = xp.asarray(np.asarray(reps, dtype=np.int64))
    Dr = D[:, idx].astype(xp.float32)
    zero = Dr <= 0
    inv = 1.0 / xp.where(zero, xp.float32(1.0), Dr)
    any_zero = zero.any(axis=1, keepdims=True)
    inv = xp.where(any_zero, zero.astype(xp.float32), inv)
    P = inv / inv.sum(axis=1, keepdims=True)
    return P.astype(xp.float32, copy=False)


UPDATE_POWER = 1.0
#: the representative update weighs only the faces whose best cluster it is (a medoid of
#: its own faces) instead of every face by its membership
UPDATE_OWN_FACES = False


def update_representatives(D, P, old_reps=None, power: float | None = None) -> np.ndarray:
    """New representatives: column argmins of ``D @ P**power`` (one dense matmul).

    ``power = 1`` is Katz & Tal's ``argmin_f sum_i P_j(f_i) d(f, f_i)``. A representative
    that would coincide with an earlier cluster's keeps its old face.
    """
    xp = array_module(D)
    m = UPDATE_POWER if power is None else float(power)
    W = P if m == 1.0 else (P ** m).astype(xp.float32)
    if UPDATE_OWN_FACES:
        # each representative is pulled only by the faces it is the best cluster of
        own = P == P.max(axis=1, keepdims=True)
        W = xp.where(own, W, xp.float32(0.0)).astype(xp.float32)
    new = product_argmin(D, W)  # argmin_f C[f, j], C[f, j] = sum_i d(f, f_i) W_j(f_i)
    return new if old_reps is None else _keep_old_on_duplicate(new, old_reps)


def column_argmin(C):
    """``argmin(C, axis=0)`` as int64 on the host: on a GPU over a contiguous copy of ``C.T`` (a reduction
    along rows instead of a strided one down columns: the same first-minimum index, ~10x faster at
    16,998 x 53); NumPy's ``argmin`` on the CPU."""
    xp = array_module(C)
    if xp is np:
        return np.argmin(C, axis=0).astype(np.int64)
    return asnumpy(xp.ascontiguousarray(C.T).argmin(axis=1)).astype(np.int64)


def product_argmin(D, W) -> np.ndarray:
    """``argmin(D @ W, axis=0)`` (host int64): the matrix product (cuBLAS's SGEMM on a GPU) and
    :func:`column_argmin`. A fused product + argmin kernel of ours was measured slower than this on an H100 and
    taken out (session 19, ``benchmarks/results/mesh_live8_session19.md``; its code: commit 68e81ef)."""
    return column_argmin(array_module(D).matmul(D, W))


def _advance(i, new, it, reps, history, n_iter, conv) -> bool:
    """One lockstep iteration of clustering ``i`` with the representatives ``new``: True while
    it still moves (``new`` recorded), False once it has converged (``conv[i]`` set)."""
    n_iter[i] = it
    if np.array_equal(new, reps[i]):
        conv[i] = True
        return False
    reps[i] = new
    history[i].append(new.copy())
    return True


def _keep_old_on_duplicate(new: np.ndarray, old_reps) -> np.ndarray:
    """``new`` (changed in place) where a representative that repeats an earlier cluster's face
    keeps its old face ``old_reps[j]``: one rule for every representative update."""
    seen = set()
    for j in range(new.size):
        if int(new[j]) in seen:
            new[j] = old_reps[j]
        seen.add(int(new[j]))
    return new


@dataclass
class FuzzyClustering:
    reps: np.ndarray          # (K,) int64 face ids (component-local)
    P: object                 # (N, K) float32, xp array
    k: int
    n_iter: int
    converged: bool
    G: np.ndarray             # farthest-point gaps used for k
    k_auto: bool
    history: list = field(default_factory=list)


def fuzzy_cluster(D, k="auto", *, max_iter: int = 20, kmax: int = KMAX_AUTO,
                  power: float | None = None, progress=None, order: FarthestOrder | None = None) -> FuzzyClustering:
    """Run Katz-Tal fuzzy clustering on one component's distance matrix ``D``.

    Parameters
    ----------
    D : (N, N) float32 NumPy or CuPy array, finite, zero diagonal
    k : int or "auto"
    max_iter : int
        Cap on the representative-update iterations.
    power : float, optional
        Exponent on the memberships in the representative update (``UPDATE_POWER``).
    progress : optional
        Receives ``"clustering iteration i/N"`` stages; checked for cancellation.
    order : FarthestOrder, optional
        ``D``'s farthest-point order computed earlier (:func:`farthest_order`; same result).
    """
    prog = as_progress(progress)
    n = D.shape[0]
    auto = isinstance(k, str)
    if auto and k != "auto":
        raise InputError(f"k must be a positive integer or 'auto', got {k!r}")
    if not auto:
        k = int(k)
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
    want = (kmax + 1) if auto else k
    reps, G = farthest_representatives(D, min(want, n), order)
    if auto:
        k = choose_k(G, kmax)
    k = int(min(k, reps.size))
    reps = reps[:k]
    P = memberships(D, reps)
    history = [reps.copy()]
    converged = False
    it = 0
    max_iter = max(int(max_iter), 0)
    for it in range(1, max_iter + 1):
        # one stage text per clustering (a log gets one line per stage, not per iteration);
        # the fraction shows the iterations
        prog.update((it - 1) / max(max_iter, 1), f"clustering into {k} parts")
        new = update_representatives(D, P, reps, power)
        if np.array_equal(new, reps):
            converged = True
            break
        reps = new
        history.append(reps.copy())
        P = memberships(D, reps)
    prog.update(1.0, f"clustering into {k} parts")
    return FuzzyClustering(reps=reps, P=P, k=k, n_iter=it, converged=converged, G=G,
                           k_auto=auto, history=history)


#: on a CUDA device, fuzzy_cluster_many computes every clustering's memberships and update
#: weights in one kernel (``cuda/mesh_cluster.cu``) instead of a dozen array operations each
FUSED_MEMBERSHIPS = True


def memberships_many(D, reps_list, power: float = 1.0, device=None):
    """``(P, W)``, each (N, sum K): the memberships of every clustering of ``reps_list`` side by
    side (:func:`memberships` per clustering) and ``W = P ** power``, in one launch of
    ``mesh_memberships`` (``gpu_kernels/cuda/mesh_cluster.cu``) on ``device``, a CUDA Backend
    (or the test suite's emulator) holding ``D`` (float32, C-contiguous)."""
    from gpu_kernels.backend import kernel

    xp = device.xp
    n = int(D.shape[0])
    sizes = [int(np.asarray(r).size) for r in reps_list]
    ktot = int(sum(sizes))
    reps = xp.asarray(np.concatenate([np.asarray(r, dtype=np.int64) for r in reps_list]))
    seg = xp.asarray(np.r_[0, np.cumsum(sizes)].astype(np.int32))
    P = xp.empty((n, ktot), dtype=xp.float32)
    W = xp.empty((n, ktot), dtype=xp.float32)
    fn = kernel(device, "mesh_cluster.cu", "mesh_memberships")
    fn(((n + 127) // 128,), (128,), (D, np.int64(n), reps, seg, np.int32(len(sizes)), np.int32(ktot),
                                     np.float32(power), P, W))
    return P, W


def fuzzy_cluster_many(D, ks, *, max_iter: int = 20, power: float | None = None, progress=None,
                       order: FarthestOrder | None = None, device=None, on_done=None) -> list:
    """:func:`fuzzy_cluster` for several integer ``ks`` on the same ``D``, in lockstep.

    Each clustering goes through exactly the iterations it would alone (it stops when its
    representatives stop changing), but one iteration updates every clustering still running
    with **one** product ``D @ [W_1 | W_2 | ...]``: ``D`` is read once per iteration instead of
    once per clustering and iteration, and the host waits once per iteration (issue 20: a k
    edit clusters four over-segmentations). A column of a product does not depend on the
    other columns, so the clusterings are those of :func:`fuzzy_cluster` (up to the rounding
    of the matrix product's summation order). Returns one :class:`FuzzyClustering` per k.

    ``on_done(i, reps, P)``, if given, is called once per clustering ``i`` with its final
    representatives and memberships (a device array on a GPU) as soon as it has converged,
    while the others still iterate (issue 20: the host can cut it meanwhile).
    """
    prog = as_progress(progress)
    xp = array_module(D)
    n = D.shape[0]
    ks = [int(k) for k in ks]
    if any(k < 1 for k in ks):
        raise InputError(f"k must be >= 1, got {min(ks)}")
    if not ks:
        return []
    order = farthest_order(D, min(max(ks), n), order)
    m = UPDATE_POWER if power is None else float(power)
    reps = [order.reps[:min(k, order.count)].copy() for k in ks]
    kk = [int(r.size) for r in reps]
    if device is None and xp is not np:
        from gpu_kernels.backend import device_of

        device = device_of(D)
    if (device is not None and getattr(device, "is_gpu", False) and FUSED_MEMBERSHIPS and not UPDATE_OWN_FACES
            and D.dtype == np.float32 and D.flags.c_contiguous):
        return _fuzzy_cluster_many_fused(D, ks, reps, kk, order, m, max_iter, prog, device, on_done)
    Ps = [memberships(D, r) for r in reps]
    history = [[r.copy()] for r in reps]
    active = list(range(len(ks)))
    n_iter = [0] * len(ks)
    conv = [False] * len(ks)
    max_iter = max(int(max_iter), 0)
    label = "/".join(str(k) for k in kk)
    for it in range(1, max_iter + 1):
        if not active:
            break
        prog.update((it - 1) / max(max_iter, 1), f"clustering into {label} parts")
        Ws = []
        for i in active:
            W = Ps[i] if m == 1.0 else (Ps[i] ** m).astype(xp.float32)
            if UPDATE_OWN_FACES:
                own = Ps[i] == Ps[i].max(axis=1, keepdims=True)
                W = xp.where(own, W, xp.float32(0.0)).astype(xp.float32)
            Ws.append(W)
        am = product_argmin(D, Ws[0] if len(Ws) == 1 else xp.concatenate(Ws, axis=1))
        still, col = [], 0
        for i in active:
            new = _keep_old_on_duplicate(am[col:col + kk[i]].copy(), reps[i])
            col += kk[i]
            if _advance(i, new, it, reps, history, n_iter, conv):
                Ps[i] = memberships(D, new)
                still.append(i)
            elif on_done is not None:  # converged: its memberships are final
                on_done(i, reps[i], Ps[i])
        active = still
    prog.update(1.0, f"clustering into {label} parts")
    if on_done is not None:  # stopped by the iteration cap
        for i in active:
            on_done(i, reps[i], Ps[i])
    return [FuzzyClustering(reps=reps[i], P=Ps[i], k=kk[i], n_iter=n_iter[i], converged=conv[i],
                            G=order.G[:kk[i]].copy(), k_auto=False, history=history[i])
            for i in range(len(ks))]


def _fuzzy_cluster_many_fused(D, ks, reps, kk, order, m, max_iter, prog, device, on_done=None) -> list:
    """:func:`fuzzy_cluster_many` on a CUDA device: per iteration one membership kernel for the
    clusterings still running (:func:`memberships_many`), one product ``D @ W`` over their
    columns only, one argmin and one copy to the host."""
    nk = len(ks)
    P_of = [None] * nk
    history = [[r.copy()] for r in reps]
    active = list(range(nk))
    n_iter = [0] * nk
    conv = [False] * nk
    max_iter = max(int(max_iter), 0)
    label = "/".join(str(k) for k in kk)

    def refresh(which):
        P, W = memberships_many(D, [reps[i] for i in which], m, device)
        offs = np.r_[0, np.cumsum([kk[i] for i in which])]
        for j, i in enumerate(which):
            P_of[i] = P[:, offs[j]:offs[j + 1]]
        return W, offs

    W, offs = refresh(active)
    for it in range(1, max_iter + 1):
        if not active:
            break
        prog.update((it - 1) / max(max_iter, 1), f"clustering into {label} parts")
        am = product_argmin(D, W)
        still = []
        for j, i in enumerate(active):
            new = _keep_old_on_duplicate(am[offs[j]:offs[j + 1]].copy(), reps[i])
            if _advance(i, new, it, reps, history, n_iter, conv):
                still.append(i)
            elif on_done is not None:  # converged: its memberships are final
                on_done(i, reps[i], P_of[i])
        active = still
        if active:
            W, offs = refresh(active)
    if on_done is not None:  # stopped by the iteration cap
        for i in active:
            on_done(i, reps[i], P_of[i])
    prog.update(1.0, f"clustering into {label} parts")
    return [FuzzyClustering(reps=reps[i], P=P_of[i], k=kk[i], n_iter=n_iter[i], converged=conv[i],
                            G=order.G[:kk[i]].copy(), k_auto=False, history=history[i])
            for i in range(nk)]
