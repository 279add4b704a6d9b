"""The greedy merge loop of the mesh segmentation, compiled (numba; issue 22, session 12): the hand-made
"contrast" order (:func:`gpu_kernels.mesh.boundary._merge_tables`) and the learned order
(:func:`gpu_kernels.mesh.learned.learned_merge`: the features of every candidate pair and the boosted trees'
prediction in the loop) in one function, on the K x K tables of :class:`gpu_kernels.mesh.boundary._MergeState`.

Every value is computed by the same operations in the same order as the NumPy loops (NumPy's pairwise sum of a
table row for the perimeters, ``(x0 + x1) + x2`` for a 3-vector's sums, a stable sort for the ranks, NumPy's
``argmin`` / ``lexsort`` rules for NaN), so the merges and strengths are the NumPy loops' bit for bit; the log
features use the C library's ``log`` in both (:func:`gpu_kernels.mesh.learned._log`). The loop stops after
``max_rounds`` rounds and can be called again on the same state (the caller checks its cancel flag between
calls)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gpu_kernels.mesh.learned import FEATURES, POLICIES, SHARE_COLS, FeatureColumnsError

#: the policies of :func:`greedy_merge` (their codes: :data:`gpu_kernels.mesh.learned.POLICIES`, the one table)
HAND, LEARNED, BLEND, GAIN = (POLICIES[n] for n in ("hand", "learned", "blend", "gain"))
#: the features' count and the two areas' shares' columns (the ``"gain"`` weights), from :mod:`learned` (one table)
NF = len(FEATURES)
SS, SL = SHARE_COLS
# greedy_merge fills the feature columns 0-20 by number, and numba's disk cache follows this file only (a
# FEATURES edit in learned.py alone would leave a warm cache with the old columns): stop at import instead
if NF != 21 or SHARE_COLS != (10, 11):
    raise FeatureColumnsError("gpu_kernels/mesh/_numba_merge.py fills learned.FEATURES' columns 0-20 by number: update "
                      "greedy_merge's feature block with learned.FEATURES (and delete its __pycache__ *.nb* files)")


@njit(cache=True, nogil=True)
def _np_max(a, b):  # pragma: no cover - compiled
    """``np.maximum(a, b)`` of two floats (a NaN wins)."""
    if a != a or a >= b:
        return a
    return b


@njit(cache=True, nogil=True)
def _block_sum(a, lo, n):  # pragma: no cover - compiled
    """NumPy's pairwise sum of ``a[lo:lo + n]`` for ``n <= 128`` (one block: eight accumulators)."""
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    top = n - n % 8
    while i < top:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, nogil=True)
def _pairwise(a, n):  # pragma: no cover - compiled
    """NumPy's pairwise sum of ``a[:n]`` (``np.add.reduce`` of a contiguous row: blocks of at most 128 summed
    as a binary tree, the halves split at a multiple of 8): the same floats. The recursion by an explicit stack."""
    if n <= 128:
        return _block_sum(a, 0, n)
    s_lo = np.empty(64, dtype=np.int64)
    s_n = np.empty(64, dtype=np.int64)
    s_stage = np.empty(64, dtype=np.int64)
    s_left = np.empty(64, dtype=np.float64)
    sp = 1
    s_lo[0] = 0
    s_n[0] = n
    s_stage[0] = 0
    ret = 0.0
    while sp > 0:
        t = sp - 1
        lo = s_lo[t]
        m = s_n[t]
        if m <= 128:
            ret = _block_sum(a, lo, m)
            sp -= 1
            continue
        m2 = m // 2
        m2 -= m2 % 8
        if s_stage[t] == 0:
            s_stage[t] = 1
            s_lo[sp] = lo
            s_n[sp] = m2
            s_stage[sp] = 0
            sp += 1
        elif s_stage[t] == 1:
            s_left[t] = ret
            s_stage[t] = 2
            s_lo[sp] = lo + m2
            s_n[sp] = m - m2
            s_stage[sp] = 0
            sp += 1
        else:
            ret = s_left[t] + ret
            sp -= 1
    return ret


@njit(cache=True, nogil=True)
def _lt(a, b):  # pragma: no cover - compiled
    """NumPy's sort order of floats: NaN after everything."""
    return a < b or (b != b and a == a)


@njit(cache=True, nogil=True)
def _stable_rank(x, n, order, tmp, rank):  # pragma: no cover - compiled
    """``rank[:n] = argsort(argsort(x[:n], stable), stable)`` (NaN last): a bottom-up merge sort of the indices."""
    for i in range(n):
        order[i] = i
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i = lo
            j = mid
            k = lo
            while i < mid and j < hi:
                if _lt(x[order[j]], x[order[i]]):
                    tmp[k] = order[j]
                    j += 1
                else:
                    tmp[k] = order[i]
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = order[i]
                i += 1
                k += 1
            while j < hi:
                tmp[k] = order[j]
                j += 1
                k += 1
            lo += 2 * width
        for i in range(n):
            order[i] = tmp[i]
        width *= 2
    for i in range(n):
        rank[order[i]] = i


@njit(cache=True, nogil=True)
def _norm3(x0, x1, x2):  # pragma: no cover - compiled
    """``np.linalg.norm`` of a row of three (NumPy's ``sqrt(add.reduce(x * x))``)."""
    return np.sqrt((x0 * x0 + x1 * x1) + x2 * x2)


@njit(cache=True, nogil=True)
def _predict_row(X, i, feature, threshold, left, right, value, init, rate, depth):  # pragma: no cover - compiled
    """The boosted trees' prediction for row ``i`` of ``X`` (the trees added in order, as
    :meth:`gpu_kernels.mesh.learned.TreeModel.predict`)."""
    T = feature.shape[0]
    acc = 0.0
    for t in range(T):
        node = 0
        for _ in range(depth):
            f = feature[t, node]
            if f < 0:
                break
            if X[i, f] <= threshold[t, node]:
                node = left[t, node]
            else:
                node = right[t, node]
        acc += value[t, node]
    return init + rate * acc


@njit(cache=True, nogil=True, inline="always")
def _cautious(p, beta):  # pragma: no cover - compiled
    """``2 p - 1``, plus ``beta`` where that is not 0 (learned._cautious's floats)."""
    c = 2.0 * p - 1.0
    if beta != 0.0:
        c = c + beta
    return c


@njit(cache=True, nogil=True, error_model="numpy")  # 0/0 -> NaN as in the NumPy loops
def greedy_merge(policy, BL, BN, BX, BX2, BV, BH, in_num, in_den, lg, sdf, c0, c0s, area, comp_area,
                 label_component, present, count, target, tracked, start, done, lim, has_lim, min_area, stop_p,
                 has_stop, gain_power, gain_beta, nrm, comp_lg, feature, threshold, left, right, value, init, rate,
                 depth, root,
                 keeps, gones, strengths, n, max_rounds, hull_on, hsup, hpts, hcnt, hdep,
                 hneed):  # pragma: no cover - compiled
    """Up to ``max_rounds`` rounds of the greedy merge loop on the state (updated in place: the tables, ``in_num``,
    ``in_den``, ``lg``, ``nrm``, ``area``, ``present``, ``count``, ``done``, ``root``); the merges are written to
    ``keeps`` / ``gones`` / ``strengths`` from row ``n``. ``policy``: :data:`HAND` (the weakest hand-made strength,
    ``lim`` per component where ``has_lim``), :data:`LEARNED` (the lowest prediction, ties by the strength) or
    :data:`BLEND` (the lowest sum of the two ranks, ties by the prediction) or :data:`GAIN` (the lowest
    ``(2 p - 1) x share_small x share_large``, the product raised to ``gain_power`` where that is not 1
    (:data:`gpu_kernels.mesh.learned.GAIN_POWER`: an argument, since numba would freeze a global),
    ``gain_beta`` (:data:`gpu_kernels.mesh.learned.GAIN_BETA`) added to ``2 p - 1`` where it is not 0, ties by the
    strength); ``has_stop``: a component stops once no
    candidate of it is predicted under ``stop_p``. ``lg``: the log-thickness sums (empty: none); the strength takes
    the thickness contrast where ``sdf > 0``. ``hull_on`` (:data:`gpu_kernels.mesh.learned.HULL_FEATURE`): a 22nd
    feature column, the pair's union depth under its exact convex hull, read from ``hdep`` (K, K), which
    :meth:`gpu_kernels.mesh.learned._Hull.fill` fills outside: where a round's candidates lack some, the loop stops
    before the round and lists them in ``hneed`` (rows ``(p, q)``). A merge sets the two clusters' rows and columns of
    ``hdep`` back to NaN (as :class:`gpu_kernels.mesh.learned._Hull` drops its cached pairs) and updates the hull's
    tables as :meth:`gpu_kernels.mesh.learned._Hull.merge` does: ``hsup`` (K, 26) the supports (for the k-DOP
    depth of a pair with no full-dimensional hull), ``hpts`` / ``hcnt`` the kept centroids.
    Returns ``(n, finished, need)``: ``need`` > 0 the number of pairs listed (fill them and call again)."""
    K = BL.shape[0]
    nc = count.size
    has_lg = lg.size > 0
    learned = policy != HAND
    is_over = np.zeros(nc, dtype=np.bool_)
    npair = K * (K - 1) // 2
    ulo = np.empty(npair, dtype=np.int64)
    uhi = np.empty(npair, dtype=np.int64)
    st = np.empty(npair, dtype=np.float64)
    bnd_ = np.empty(npair if learned else 0)
    inner_ = np.empty(npair if learned else 0)
    in_pair = np.zeros(K, dtype=np.bool_)
    m_ = np.zeros(K)
    nf = NF + (1 if hull_on else 0) if learned else 0
    nd = hsup.shape[1]
    hm = hpts.shape[1]
    htmp = np.empty((2 * hm if hull_on else 0, 3))
    X = np.empty((npair if learned else 0, nf))
    p_ = np.empty(npair if learned else 0)
    g_ = np.empty(npair if policy == GAIN else 0)
    ls = np.empty(npair if learned else 0)
    order = np.empty(npair, dtype=np.int64)
    tmp = np.empty(npair, dtype=np.int64)
    rank = np.empty(npair, dtype=np.int64)
    rank2 = np.empty(npair if policy == BLEND else 0, dtype=np.int64)
    perim = np.zeros(K)
    low = np.zeros(nc, dtype=np.bool_)
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        anyo = False
        for c in range(nc):
            o = tracked[c] and count[c] > target[c] and not done[c]
            is_over[c] = o
            anyo = anyo or o
        if not anyo:
            return n, True, 0
        m = 0
        for i in range(K):
            if not is_over[label_component[i]]:
                continue
            for j in range(i + 1, K):
                if BN[i, j] > 0:
                    ulo[m] = i
                    uhi[m] = j
                    m += 1
        if m == 0:
            return n, True, 0
        keep = -1
        gone = -1
        s_j = 0.0
        if min_area > 0:
            for i in range(K):
                in_pair[i] = False
            for t in range(m):
                in_pair[ulo[t]] = True
                in_pair[uhi[t]] = True
            sl = -1
            best = 0.0
            for i in range(K):
                lc = label_component[i]
                fr = area[i] / _np_max(comp_area[lc], 1e-300)
                if present[i] and fr < min_area and is_over[lc] and in_pair[i]:
                    if sl < 0 or fr < best:
                        sl = i
                        best = fr
            if sl >= 0:
                jb = -1
                bb = 0.0
                for t in range(m):
                    if ulo[t] == sl or uhi[t] == sl:
                        b = BL[ulo[t], uhi[t]]
                        if jb < 0 or b > bb:
                            jb = t
                            bb = b
                keep = uhi[jb] if ulo[jb] == sl else ulo[jb]
                gone = sl
                s_j = 0.0
        if keep < 0:
            if learned and hull_on:
                need = 0
                for t in range(m):
                    if hdep[ulo[t], uhi[t]] != hdep[ulo[t], uhi[t]]:
                        hneed[need, 0] = ulo[t]
                        hneed[need, 1] = uhi[t]
                        need += 1
                if need > 0:
                    return n, False, need
            if has_lg:
                for i in range(K):
                    m_[i] = lg[i] / _np_max(area[i], 1e-300)
            for t in range(m):
                p = ulo[t]
                q = uhi[t]
                bnd = BX[p, q] / _np_max(BL[p, q], 1e-300)
                inner = (in_num[p] + in_num[q]) / _np_max(in_den[p] + in_den[q], 1e-300)
                s = (bnd + c0) / (inner + c0)
                if learned:
                    bnd_[t] = bnd
                    inner_[t] = inner
                if has_lg and sdf > 0:
                    s = s * (1.0 + sdf * np.abs(m_[p] - m_[q]))
                if has_lim and not s < lim[label_component[p]]:
                    s = np.inf
                st[t] = s
            if has_lim:
                ok = False
                for t in range(m):
                    if st[t] < lim[label_component[ulo[t]]]:
                        ok = True
                        break
                if not ok:
                    return n, True, 0
            if not learned:
                # np.argmin: the first NaN, else the first smallest
                jb = 0
                for t in range(m):
                    if st[t] != st[t]:
                        jb = t
                        break
                    if st[t] < st[jb]:
                        jb = t
            else:
                for i in range(K):
                    perim[i] = _pairwise(BL[i], K)
                _stable_rank(st, m, order, tmp, rank)
                lsmin = np.inf
                for t in range(m):
                    v = np.log(_np_max(st[t], 1e-12))
                    ls[t] = v
                    if v != v or lsmin != lsmin:
                        lsmin = np.nan
                    elif v < lsmin:
                        lsmin = v
                den = float(max(m - 1, 1))
                for t in range(m):
                    p = ulo[t]
                    q = uhi[t]
                    bl = BL[p, q]
                    bnd = bnd_[t]  # (as the strength's loop computed them)
                    inner = inner_[t]
                    dth = np.abs(m_[p] - m_[q])
                    if area[p] <= area[q]:
                        sm = p
                        lgc = q
                    else:
                        sm = q
                        lgc = p
                    comp = label_component[p]
                    ca = _np_max(comp_area[comp], 1e-300)
                    blc = _np_max(bl, 1e-300)
                    var = _np_max(BX2[p, q] / blc - bnd * bnd, 0.0)
                    npn = _np_max(_norm3(nrm[p, 0], nrm[p, 1], nrm[p, 2]), 1e-300)
                    nqn = _np_max(_norm3(nrm[q, 0], nrm[q, 1], nrm[q, 2]), 1e-300)
                    dot = ((nrm[p, 0] / npn) * (nrm[q, 0] / nqn) + (nrm[p, 1] / npn) * (nrm[q, 1] / nqn)) \
                        + (nrm[p, 2] / npn) * (nrm[q, 2] / nqn)
                    nu = _norm3(nrm[p, 0] + nrm[q, 0], nrm[p, 1] + nrm[q, 1], nrm[p, 2] + nrm[q, 2])
                    ns = _norm3(nrm[sm, 0], nrm[sm, 1], nrm[sm, 2])
                    if tracked[comp]:
                        cnt = float(count[comp])
                        tgt = float(max(target[comp], 1))
                        st0 = float(max(start[comp], 1))
                    else:
                        cnt = 1.0
                        tgt = 1.0
                        st0 = 1.0
                    X[t, 0] = ls[t]
                    X[t, 1] = rank[t] / den
                    X[t, 2] = ls[t] - lsmin
                    X[t, 3] = bnd / c0s
                    X[t, 4] = inner / c0s
                    X[t, 5] = np.sqrt(var) / c0s
                    X[t, 6] = BV[p, q] / blc
                    X[t, 7] = BH[p, q] / blc
                    X[t, 8] = bl / _np_max(perim[sm], 1e-300)
                    X[t, 9] = bl / _np_max(perim[lgc], 1e-300)
                    X[t, 10] = area[sm] / ca
                    X[t, 11] = area[lgc] / ca
                    X[t, 12] = np.log(_np_max(area[sm], 1e-300) / _np_max(area[lgc], 1e-300))
                    X[t, 13] = dth
                    X[t, 14] = m_[sm] - comp_lg[comp]
                    X[t, 15] = 1.0 - dot
                    X[t, 16] = 1.0 - nu / _np_max(area[p] + area[q], 1e-300)
                    X[t, 17] = 1.0 - ns / _np_max(area[sm], 1e-300)
                    X[t, 18] = cnt / tgt
                    X[t, 19] = cnt / st0
                    X[t, 20] = m_[sm] - m_[lgc]
                    if hull_on:
                        X[t, NF] = hdep[p, q] / math.sqrt(ca)
                    p_[t] = _predict_row(X, t, feature, threshold, left, right, value, init, rate, depth)
                if has_stop:
                    for c in range(nc):
                        low[c] = False
                    for t in range(m):
                        if p_[t] < stop_p:
                            low[label_component[ulo[t]]] = True
                    stopped = False
                    for c in range(nc):
                        if is_over[c] and not low[c]:
                            done[c] = True
                            stopped = True
                    if stopped:
                        continue
                jb = 0
                if policy == LEARNED:
                    # np.lexsort((strength, p))[0]: the lowest p, then the lowest strength, then the first
                    for t in range(1, m):
                        if _lt(p_[t], p_[jb]) or (not _lt(p_[jb], p_[t]) and _lt(st[t], st[jb])):
                            jb = t
                elif policy == GAIN:
                    # np.lexsort((strength, (2 p - 1) * share_small * share_large))[0]; the product to the power
                    # gain_power (math.pow: the C library's, as learned._pow) where that is not 1
                    # (learned.GAIN_BETA: 2 p - 1 + gain_beta where that is not 0)
                    if gain_power == 1.0:
                        for t in range(m):
                            g_[t] = _cautious(p_[t], gain_beta) * X[t, SS] * X[t, SL]
                    else:
                        for t in range(m):
                            g_[t] = _cautious(p_[t], gain_beta) * math.pow(X[t, SS] * X[t, SL], gain_power)
                    for t in range(1, m):
                        if _lt(g_[t], g_[jb]) or (not _lt(g_[jb], g_[t]) and _lt(st[t], st[jb])):
                            jb = t
                else:
                    # np.lexsort((p, rank_s + rank_p))[0]
                    _stable_rank(p_, m, order, tmp, rank2)
                    for t in range(1, m):
                        rt = rank[t] + rank2[t]
                        rb = rank[jb] + rank2[jb]
                        if rt < rb or (rt == rb and _lt(p_[t], p_[jb])):
                            jb = t
            s_j = st[jb]
            p = ulo[jb]
            q = uhi[jb]
            if area[p] >= area[q]:
                keep = p
                gone = q
            else:
                keep = q
                gone = p
        # the merge of ``gone`` into ``keep``
        in_num[keep] += in_num[gone] + BX[keep, gone]
        in_den[keep] += in_den[gone] + BL[keep, gone]
        if has_lg:
            lg[keep] += lg[gone]
            lg[gone] = 0.0
        if learned:
            for j in range(3):
                nrm[keep, j] += nrm[gone, j]
                nrm[gone, j] = 0.0
        for ti in range(6 if learned else 3):
            if ti == 0:
                T = BL
            elif ti == 1:
                T = BN
            elif ti == 2:
                T = BX
            elif ti == 3:
                T = BX2
            elif ti == 4:
                T = BV
            else:
                T = BH
            for j in range(K):
                T[keep, j] += T[gone, j]
            for i in range(K):
                T[i, keep] += T[i, gone]
            T[keep, keep] = 0.0
            for j in range(K):
                T[gone, j] = 0.0
            for i in range(K):
                T[i, gone] = 0.0
        if hull_on:
            for d in range(nd):
                if hsup[gone, d] > hsup[keep, d]:
                    hsup[keep, d] = hsup[gone, d]
            nk = hcnt[keep]
            tot = nk + hcnt[gone]
            for i in range(nk):
                for j in range(3):
                    htmp[i, j] = hpts[keep, i, j]
            for i in range(hcnt[gone]):
                for j in range(3):
                    htmp[nk + i, j] = hpts[gone, i, j]
            if tot <= hm:
                for i in range(tot):
                    for j in range(3):
                        hpts[keep, i, j] = htmp[i, j]
                hcnt[keep] = tot
            else:
                for i in range(hm):
                    r = (i * tot) // hm
                    for j in range(3):
                        hpts[keep, i, j] = htmp[r, j]
                hcnt[keep] = hm
            hcnt[gone] = 0
            for i in range(K):
                hdep[keep, i] = np.nan
                hdep[i, keep] = np.nan
                hdep[gone, i] = np.nan
                hdep[i, gone] = np.nan
        for i in range(root.size):
            if root[i] == gone:
                root[i] = keep
        area[keep] += area[gone]
        area[gone] = 0
        present[gone] = False
        count[label_component[keep]] -= 1
        keeps[n] = keep
        gones[n] = gone
        strengths[n] = s_j
        n += 1
    return n, False, 0


@njit(cache=True, nogil=True, error_model="numpy")
def _plane(P, a, b, c, nrm, f):  # pragma: no cover - compiled
    """Face ``f``'s unit normal and offset (``nrm[f] = (n0, n1, n2, d)``, ``n . x = d`` on the plane) through
    ``P[a], P[b], P[c]``, counter-clockwise seen from outside; False where the three points are collinear."""
    u0, u1, u2 = P[b, 0] - P[a, 0], P[b, 1] - P[a, 1], P[b, 2] - P[a, 2]
    v0, v1, v2 = P[c, 0] - P[a, 0], P[c, 1] - P[a, 1], P[c, 2] - P[a, 2]
    n0, n1, n2 = u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0
    ln = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if not ln > 0.0:
        return False
    n0, n1, n2 = n0 / ln, n1 / ln, n2 / ln
    nrm[f, 0], nrm[f, 1], nrm[f, 2] = n0, n1, n2
    nrm[f, 3] = n0 * P[a, 0] + n1 * P[a, 1] + n2 * P[a, 2]
    return True


@njit(cache=True, nogil=True, error_model="numpy")
def _height(nrm, f, P, j):  # pragma: no cover - compiled
    """How far point ``P[j]`` lies above face ``f``'s plane (> 0: outside)."""
    return nrm[f, 0] * P[j, 0] + nrm[f, 1] * P[j, 1] + nrm[f, 2] * P[j, 2] - nrm[f, 3]


@njit(cache=True, nogil=True, error_model="numpy")
def _first_seen(nrm, alive, P, j, lo, hi, eps):  # pragma: no cover - compiled
    """The first live face of ``lo..hi-1`` that point ``j`` lies above by more than ``eps``, and how far; (-1, 0)."""
    for f in range(lo, hi):
        if alive[f]:
            d = _height(nrm, f, P, j)
            if d > eps:
                return f, d
    return -1, 0.0


@njit(cache=True, nogil=True)
def _link(face, edge, n, f, a, b, c):  # pragma: no cover - compiled
    """Face ``f`` = ``(a, b, c)`` and its three directed edges in the edge map."""
    face[f, 0], face[f, 1], face[f, 2] = a, b, c
    edge[a * n + b] = f
    edge[b * n + c] = f
    edge[c * n + a] = f


@njit(cache=True, nogil=True)
def _across(face, edge, alive, n, f, e, nxt):  # pragma: no cover - compiled
    """The live face across edge ``e`` of face ``f`` (the one holding the reverse edge), or -1: the surface is open."""
    g = edge[face[f, nxt[e]] * n + face[f, e]]
    return g if g >= 0 and alive[g] else -1


@njit(cache=True, nogil=True, error_model="numpy")
def hull_depth(P):  # pragma: no cover - compiled
    """The deepest of the points ``P`` (n, 3) under their convex hull, by an incremental hull (session 25: Qhull
    per pair, :func:`gpu_kernels.mesh.learned._exact_depth`, cost ~0.3 ms a pair; this ~20 us for 128 points).
    NaN where it cannot say: fewer than 5 points, a flat or collinear set (no full-dimensional hull, as Qhull's
    error), or a hull that fails its own check (a closed surface, every point on the inner side of every face
    within the tolerance); the caller then asks Qhull."""
    n = P.shape[0]
    NXT = np.array([1, 2, 0])  # (the next corner of a face; a lookup: ``% 3`` cost a third of the time)
    if n < 5:
        return np.nan
    ext = 0.0
    for j in range(3):
        lo = P[0, j]
        hi = P[0, j]
        for i in range(n):
            lo = min(lo, P[i, j])
            hi = max(hi, P[i, j])
        ext = max(ext, hi - lo)
    if not ext > 0.0:
        return np.nan
    eps = 1e-10 * ext
    # the first tetrahedron: the lowest x, the farthest from it, from their line, from their plane
    i0 = 0
    for i in range(n):
        if P[i, 0] < P[i0, 0]:
            i0 = i
    i1, best = -1, -1.0
    for i in range(n):
        d = (P[i, 0] - P[i0, 0]) ** 2 + (P[i, 1] - P[i0, 1]) ** 2 + (P[i, 2] - P[i0, 2]) ** 2
        if d > best:
            i1, best = i, d
    if not math.sqrt(best) > eps:
        return np.nan
    e0, e1, e2 = P[i1, 0] - P[i0, 0], P[i1, 1] - P[i0, 1], P[i1, 2] - P[i0, 2]
    el = math.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    i2, best = -1, -1.0
    for i in range(n):
        w0, w1, w2 = P[i, 0] - P[i0, 0], P[i, 1] - P[i0, 1], P[i, 2] - P[i0, 2]
        c0, c1, c2 = w1 * e2 - w2 * e1, w2 * e0 - w0 * e2, w0 * e1 - w1 * e0
        d = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2) / el
        if d > best:
            i2, best = i, d
    if not best > eps:
        return np.nan
    cap = 16 * n + 16  # (faces made in all; more: NaN, Qhull then)
    face = np.empty((cap, 3), dtype=np.int64)
    nrm = np.empty((cap, 4))
    alive = np.zeros(cap, dtype=np.bool_)
    if not _plane(P, i0, i1, i2, nrm, 0):
        return np.nan
    i3, best = -1, -1.0
    for i in range(n):
        d = abs(nrm[0, 0] * P[i, 0] + nrm[0, 1] * P[i, 1] + nrm[0, 2] * P[i, 2] - nrm[0, 3])
        if d > best:
            i3, best = i, d
    if not best > eps:
        return np.nan
    ci = np.empty(3)
    for j in range(3):
        ci[j] = (P[i0, j] + P[i1, j] + P[i2, j] + P[i3, j]) / 4.0
    # edge (a, b) -> the face holding it in that direction
    edge = np.full(n * n, -1, dtype=np.int64)
    tet = ((i0, i1, i2), (i0, i1, i3), (i0, i2, i3), (i1, i2, i3))
    nf = 0
    for t in range(4):
        a, b, c = tet[t]
        _plane(P, a, b, c, nrm, nf)
        if nrm[nf, 0] * ci[0] + nrm[nf, 1] * ci[1] + nrm[nf, 2] * ci[2] - nrm[nf, 3] > 0.0:
            b, c = c, b  # (the inner point on the outer side: the other winding)
            _plane(P, a, b, c, nrm, nf)
        _link(face, edge, n, nf, a, b, c)
        alive[nf] = True
        nf += 1
    vis = np.zeros(cap, dtype=np.bool_)
    hz = np.empty((cap, 2), dtype=np.int64)
    stack = np.empty(cap, dtype=np.int64)
    region = np.empty(cap, dtype=np.int64)
    # conflict lists: each point not yet on the hull keeps one live face it sees (-1: inside, for good, since the hull
    # only grows); a point is added where it is, and the points of the faces it removes look at the new faces only
    cf = np.full(n, -1, dtype=np.int64)
    cd = np.zeros(n)
    newid = np.empty(cap, dtype=np.int64)
    nalive = 4
    for i in range(n):
        if i == i0 or i == i1 or i == i2 or i == i3:
            continue
        cf[i], cd[i] = _first_seen(nrm, alive, P, i, 0, 4, eps)
    while True:
        # the farthest point above its face next (quickhull's order: the hull grows fast, the points it swallows
        # drop out at once)
        i = -1
        for j in range(n):
            if cf[j] >= 0 and (i < 0 or cd[j] > cd[i]):
                i = j
        if i < 0:
            break
        # the faces i sees: from its conflict face, across edges, while they are seen
        f0 = cf[i]
        cf[i] = -1
        vis[f0] = True
        stack[0] = f0
        ns, nr = 1, 0
        while ns > 0:
            ns -= 1
            f = stack[ns]
            region[nr] = f
            nr += 1
            for e in range(3):
                g = _across(face, edge, alive, n, f, e, NXT)
                if g < 0:
                    return np.nan
                if not vis[g] and _height(nrm, g, P, i) > eps:
                    vis[g] = True
                    stack[ns] = g
                    ns += 1
        nh = 0
        for r in range(nr):
            f = region[r]
            for e in range(3):
                a = face[f, e]
                b = face[f, NXT[e]]
                if not vis[edge[b * n + a]]:
                    hz[nh, 0], hz[nh, 1] = a, b
                    nh += 1
        if nf + nh > cap:
            return np.nan
        for r in range(nr):
            f = region[r]
            alive[f] = False
            for e in range(3):
                a = face[f, e]
                b = face[f, NXT[e]]
                if edge[a * n + b] == f:
                    edge[a * n + b] = -1
        new0 = nf
        for h in range(nh):
            a, b = hz[h, 0], hz[h, 1]
            if not _plane(P, a, b, i, nrm, nf):
                return np.nan
            _link(face, edge, n, nf, a, b, i)
            alive[nf] = True
            vis[nf] = False
            nf += 1
        for j in range(n):
            g = cf[j]
            if g >= 0 and not alive[g]:
                # its face is gone: a new face it sees, else any live face (a point may see an old face that i
                # does not), else it is inside for good
                cf[j], cd[j] = _first_seen(nrm, alive, P, j, new0, nf, eps)
                if cf[j] < 0:
                    cf[j], cd[j] = _first_seen(nrm, alive, P, j, 0, new0, eps)
        for r in range(nr):
            vis[region[r]] = False
        nalive += nh - nr
        if nf > 2 * nalive + 64:  # (the dead faces dropped, so that the scans read live ones)
            k = 0
            for f in range(nf):
                if alive[f]:
                    newid[f] = k
                    for j in range(3):
                        face[k, j] = face[f, j]
                    for j in range(4):
                        nrm[k, j] = nrm[f, j]
                    alive[k] = True
                    _link(face, edge, n, k, face[k, 0], face[k, 1], face[k, 2])
                    k += 1
            for f in range(k, nf):
                alive[f] = False
            for j in range(n):
                if cf[j] >= 0:
                    cf[j] = newid[cf[j]]
            nf = k
    # the check: a closed surface (every edge's reverse on a live face) with every point inside every face
    live = np.empty(nf, dtype=np.int64)
    nl = 0
    for f in range(nf):
        if not alive[f]:
            continue
        live[nl] = f
        nl += 1
        for e in range(3):
            if _across(face, edge, alive, n, f, e, NXT) < 0:
                return np.nan
    # each point's least height under the faces (faces outside, points inside: the inner loop runs over the points)
    X0, X1, X2 = np.empty(n), np.empty(n), np.empty(n)
    for i in range(n):
        X0[i], X1[i], X2[i] = P[i, 0], P[i, 1], P[i, 2]
    m = np.full(n, np.inf)
    for r in range(nl):
        f = live[r]
        a0, a1, a2, a3 = nrm[f, 0], nrm[f, 1], nrm[f, 2], nrm[f, 3]
        for i in range(n):
            d = a3 - (a0 * X0[i] + a1 * X1[i] + a2 * X2[i])
            m[i] = min(m[i], d)
    deepest = -np.inf
    for i in range(n):
        if m[i] < -100.0 * eps:
            return np.nan
        if m[i] > deepest:
            deepest = m[i]
    return deepest


@njit(cache=True, nogil=True)
def _gather(hpts, hcnt, p, q, P):  # pragma: no cover - compiled
    """``p``'s then ``q``'s kept points into ``P``; their count."""
    k = 0
    for c in (p, q):
        for i in range(hcnt[c]):
            for j in range(3):
                P[k, j] = hpts[c, i, j]
            k += 1
    return k


@njit(cache=True, nogil=True)
def fill_exact(hpts, hcnt, need, table):  # pragma: no cover - compiled
    """``table[p, q]`` = :func:`hull_depth` of ``p``'s then ``q``'s kept points for each row of ``need``; NaN left
    where it cannot say (the caller asks Qhull for those). Returns how many values are left NaN."""
    left = 0
    P = np.empty((2 * hpts.shape[1], 3))
    for r in range(need.shape[0]):
        p = need[r, 0]
        q = need[r, 1]
        k = _gather(hpts, hcnt, p, q, P)
        d = hull_depth(P[:k])
        table[p, q] = d
        if d != d:
            left += 1
    return left
