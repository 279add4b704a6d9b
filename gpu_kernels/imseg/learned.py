"""The learned merge (issue 21): the contours method's superpixels and region graph merged by a
boosted-tree estimate of "these two regions lie in different segments" instead of the hand-made
merge cost (session 11's accepted ``e2w`` model, GALA-style; ``benchmarks/results/imseg_q_session11.md``;
the reference implementation ``benchmarks/imseg_session10_gala.py``).

Each round, for every pair of adjacent regions, 24 features (:data:`FEATURES`: the hand-made cost,
colour distance, the boundary's gradient histogram, colour-histogram χ², sizes, shared perimeter,
the regions' inner gradient and colour variance, the merge's context and progress) feed 64 trees of
depth <= 4; p = their sum (float64, in tree order) + base, clipped at 0, as float32. The pairs that
are each other's lowest p (ties: the float32 bits, then the other region's index) and below τ merge;
the merged regions' sums (area, colour sums and squares, inner gradient, 48-bin L/a/b histograms,
image-border pixels) and the pairs' sums (length, gradient, 8-bin gradient histogram) add. When no
pair is below τ, regions smaller than S²/4 join their lowest-p neighbour (the contours default's
clean-up), and the rounds go on until nothing changes. With ``n_segments`` the rounds merge the
mutual lowest pairs whatever p is, until exactly that many regions are left (as the contours merge).

τ comes from the coarseness (:func:`tau_from_coarseness`): τ = 0.39 + 0.06 (c − 3.3) from the default
coarseness 3.3 up, and 0.39 c / 3.3 below it (session 16: down to τ = 0, no merge but the clean-up, at
coarseness 0 — before, coarseness 0 still gave τ 0.19 and a few dozen segments), so the default gives the
accepted τ 0.39, and larger coarseness gives fewer segments over the whole range.

The CPU path (:func:`merge_learned_np`, compiled with numba when it imports) and the GPU path
(``gpu_kernels/cuda/imseg_learned.cu``: the graph's extra sums in one pass over the pixels, then all
rounds in one cooperative launch over every SM, ``lm_merge_grid``, three grid barriers a round; session
12's one-block kernel ``lm_merge`` stays selectable, :data:`KERNELS`) give the same labels: every sum
is a sum of integers, every float operation is done in the same order (CUDA with ``--fmad=false``;
the chi2 sums by shuffles in NumPy's pairwise order, the trees' leaf values in tree order), and the
logarithm is this module's own (:func:`flog`: frexp and a polynomial of +, −, ×, ÷ only), so its bits
agree on both paths. A pair's trees are walked again only when its float32 features changed.
"""

from __future__ import annotations

import base64
import io
import math
import zlib

import numpy as np

from gpu_kernels.backend import cache_key
from gpu_kernels.imseg import contours as _ct
from gpu_kernels.imseg import defaults as _dflt

__all__ = ["FEATURES", "NFEAT", "default_tau", "model", "tau_from_coarseness", "graph_extras_np",
           "merge_learned_np", "merge_device", "edge_features_np", "flog", "predict_np", "thresholds23"]

NFEAT = 24
NB = 16          # colour histogram bins per channel
NH = 3 * NB
NG = 8           # boundary-gradient histogram bins (edges at 1, 2, 4, ..., 64 gradient units)
FEATURES = ("log cost", "log harmonic area", "log colour distance", "log length", "log boundary",
            "share >= 2", "share >= 4", "share >= 8", "share >= 16", "chi2 L", "chi2 a", "chi2 b",
            "log smaller share", "log larger share", "length / smaller perimeter", "length / larger perimeter",
            "log texture product", "|log texture ratio|", "log boundary / texture", "log variance product",
            "|log variance ratio|", "context min", "context max", "log progress")
#: τ per unit of coarseness above the default (τ = 0.39 at the default 3.3, 0.792 at 10); below it τ falls
#: linearly to 0 at coarseness 0
TAU_PER_COARSENESS = 0.06
# the contour merge's cost terms, which the features reuse (numba reads them as constants when it compiles,
# and its disk cache follows this file only: after changing them in contours.py, delete
# gpu_kernels/imseg/__pycache__/learned.*.nb*; the kernels take them as arguments)
_GSCALE = _ct.GSCALE
_B0 = _ct.B0
_SIZE_K = _ct.SIZE_K

# own logarithm: x = m 2^e (m in [sqrt(1/2), sqrt(2))), log m = 2 atanh(s), s = (m - 1) / (m + 1)
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_SQRT_HALF = 0.7071067811865476
_LOGC = tuple(1.0 / (2 * k + 1) for k in range(1, 13))   # 1/3, 1/5, ..., 1/25


def default_tau() -> float:
    """The accepted τ (session 11's decision, stored with the model: 0.39), the default coarseness's."""
    return float(model()["tau"])


def tau_from_coarseness(coarseness: float, base_tau: float | None = None) -> float:
    """The learned merge's τ at a coarseness c: τ₀ + 0.06 (c − 3.3) from the default 3.3 up, τ₀ c / 3.3 below
    it (0 at c = 0: the superpixels with only the clean-up), within [0, 1]; τ₀ = ``base_tau`` (None: the shipped
    model's, 0.39).

    Examples
    --------
    >>> tau_from_coarseness(3.3), tau_from_coarseness(0.0), round(tau_from_coarseness(1.65), 3)
    (0.39, 0.0, 0.195)
    """
    t0 = default_tau() if base_tau is None else float(base_tau)
    c, c0 = float(coarseness), _dflt.DEFAULT_COARSENESS
    t = t0 + TAU_PER_COARSENESS * (c - c0) if c >= c0 else t0 * max(c, 0.0) / c0
    return float(min(1.0, max(0.0, t)))


_MODEL = None


def load_model(module) -> dict:
    """The arrays of a model module (its ``NPZ_ZLIB_B64``: a zlib-compressed, base64-encoded ``.npz``):
    ``feat`` (int8), ``thr``, ``left``, ``right``, ``leaf``, ``val``, ``base`` and ``tau`` (floats)."""
    z = np.load(io.BytesIO(zlib.decompress(base64.b64decode("".join(module.NPZ_ZLIB_B64)))))
    m = {k: z[k] for k in z.files}
    m["base"] = float(m["base"])
    m["tau"] = float(m["tau"])
    return m


def model() -> dict:
    """The shipped model's arrays (:func:`load_model` of ``learned_model``: 64 trees x 31 nodes)."""
    global _MODEL
    if _MODEL is None:
        from gpu_kernels.imseg import learned_model

        _MODEL = load_model(learned_model)
    return _MODEL


# --------------------------------------------------------------------------- the per-image sums
def graph_extras_np(comps: np.ndarray, R: int, gq: np.ndarray, q: np.ndarray, graph: dict) -> dict:
    """The learned merge's sums beyond :func:`contours.region_graph_np`'s ``graph``: per region the
    colour squares ``rsq``, inner gradient ``gin``, L/a/b histograms ``hist`` (R, 48) and image-border
    pixels ``bord``; per pair the boundary-gradient histogram ``gh`` (E, 8). All int64. The boundary
    pixel pairs come from ``graph``, which must have kept them (``region_graph_np(..., boundary=True)``)."""
    lab0 = comps.astype(np.int64) - 1
    h, w = lab0.shape
    fl = lab0.ravel()
    qq = q.reshape(3, -1).astype(np.int64)
    rsq = np.bincount(fl, weights=((qq * qq).sum(0)).astype(np.float64), minlength=R).astype(np.int64)
    gin = np.bincount(fl, weights=gq.ravel().astype(np.float64), minlength=R).astype(np.int64)
    bl = np.clip(qq[0] // 100, 0, NB - 1)
    ba = np.clip((qq[1] + 1024) // 128, 0, NB - 1)
    bb = np.clip((qq[2] + 1024) // 128, 0, NB - 1)
    hist = np.zeros((R, NH), np.int64)
    for k, bk in enumerate((bl, ba, bb)):
        hist[:, k * NB:(k + 1) * NB] = np.bincount(fl * NB + bk, minlength=R * NB).reshape(R, NB)
    border = np.zeros((h, w), bool)
    border[0], border[-1], border[:, 0], border[:, -1] = True, True, True, True
    bord = np.bincount(lab0[border], minlength=R).astype(np.int64)
    if "boundary_pair" not in graph:
        raise ValueError("graph_extras_np needs the graph of region_graph_np(..., boundary=True)")
    inv, s = graph["boundary_pair"], graph["boundary_sum"]
    n = len(graph["ea"])
    gbin = (s >= 16).astype(np.int64)
    for k in range(1, NG - 1):
        gbin += s >= 16 * (1 << k)   # the bin: how many of 1, 2, 4, ..., 64 are <= s / 16
    gh = np.bincount(inv * NG + gbin, minlength=n * NG).reshape(n, NG).astype(np.int64)
    return {"rsq": rsq, "gin": gin, "hist": hist, "bord": bord, "gh": gh}


# --------------------------------------------------------------------------- compiled pieces
def flog(x):
    """log(x) for x > 0 from frexp, +, −, × and ÷ only (the GPU's ``lm_log``: the same bits)."""
    m, e = math.frexp(x)
    if m < _SQRT_HALF:
        m = m * 2.0
        e = e - 1
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    r = _LOGC[11]
    r = r * z + _LOGC[10]
    r = r * z + _LOGC[9]
    r = r * z + _LOGC[8]
    r = r * z + _LOGC[7]
    r = r * z + _LOGC[6]
    r = r * z + _LOGC[5]
    r = r * z + _LOGC[4]
    r = r * z + _LOGC[3]
    r = r * z + _LOGC[2]
    r = r * z + _LOGC[1]
    r = r * z + _LOGC[0]
    s2 = s + s
    fe = float(e)
    return fe * _LN2_HI + ((s2 + (s2 * z) * r) + fe * _LN2_LO)


def _cost32(aA, aB, rs, a, b, ln, gs, inv_norm, npx):
    """The contours merge cost of a pair as float32 (``contours.merge_cost_np``, one pair)."""
    dd0 = rs[a, 0] / aA - rs[b, 0] / aB
    dd1 = rs[a, 1] / aA - rs[b, 1] / aB
    dd2 = rs[a, 2] / aA - rs[b, 2] / aB
    d2 = ((dd0 * dd0 + dd1 * dd1) + dd2 * dd2) / 256.0
    hm = (aA * aB) / (aA + aB)
    bnd = gs / ((ln * 2.0) * _GSCALE)
    t = bnd + _B0
    t2 = t * t
    cost = (((hm * d2) / ln) * t2) * inv_norm
    f = (aA + aB) / npx
    f3 = (f * f) * f
    cost = cost * (1.0 + _SIZE_K * f3)
    return np.float32(cost)


def _chi2(hist, a, b, k, iA, iB):
    """½ Σ (x − y)² / (x + y) over channel k's 16 bins of the normalised histograms (NumPy's
    pairwise order for 16 values: 8 partial sums, then ((0+1)+(2+3))+((4+5)+(6+7)))."""
    r0 = 0.0
    r1 = 0.0
    r2 = 0.0
    r3 = 0.0
    r4 = 0.0
    r5 = 0.0
    r6 = 0.0
    r7 = 0.0
    for j in range(NB):
        x = hist[a, k * NB + j] / iA
        y = hist[b, k * NB + j] / iB
        s = x + y
        d = 0.0
        if s > 0:
            dx = x - y
            d = (dx * dx) / s
        jj = j % 8
        if j < 8:
            if jj == 0:
                r0 = d
            elif jj == 1:
                r1 = d
            elif jj == 2:
                r2 = d
            elif jj == 3:
                r3 = d
            elif jj == 4:
                r4 = d
            elif jj == 5:
                r5 = d
            elif jj == 6:
                r6 = d
            else:
                r7 = d
        else:
            if jj == 0:
                r0 += d
            elif jj == 1:
                r1 += d
            elif jj == 2:
                r2 += d
            elif jj == 3:
                r3 += d
            elif jj == 4:
                r4 += d
            elif jj == 5:
                r5 += d
            elif jj == 6:
                r6 += d
            else:
                r7 += d
    return 0.5 * (((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)))


def _features(e, X, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, per, lc, mn, npx, f23):
    """The 24 features of pair e into X (float64), as ``imseg_session10_gala.edge_features``."""
    a = ea[e]
    b = eb[e]
    aA = float(area[a])
    aB = float(area[b])
    ln = float(el[e])
    gs = float(eg[e])
    mA0 = rsum[a, 0] / aA
    mA1 = rsum[a, 1] / aA
    mA2 = rsum[a, 2] / aA
    mB0 = rsum[b, 0] / aB
    mB1 = rsum[b, 1] / aB
    mB2 = rsum[b, 2] / aB
    d0 = mA0 - mB0
    d1 = mA1 - mB1
    d2_ = mA2 - mB2
    d2 = ((d0 * d0 + d1 * d1) + d2_ * d2_) / 256.0
    hm = (aA * aB) / (aA + aB)
    t = gs / ((ln * 2.0) * _GSCALE) + _B0
    vA = rsq[a] / aA - ((mA0 * mA0 + mA1 * mA1) + mA2 * mA2)
    vB = rsq[b] / aB - ((mB0 * mB0 + mB1 * mB1) + mB2 * mB2)
    vA = max(vA, 0.0) / 256.0 + 1.0
    vB = max(vB, 0.0) / 256.0 + 1.0
    tA = (gin[a] / aA) / _GSCALE + 0.5
    tB = (gin[b] / aB) / _GSCALE + 0.5
    pA = per[a]
    pB = per[b]
    X[0] = lc[e]
    X[1] = flog(hm)
    X[2] = flog(d2 + 1e-4)
    X[3] = flog(ln)
    X[4] = flog(t)
    c = gh[e, 7] + gh[e, 6]
    c = c + gh[e, 5]
    X[8] = c / ln          # >= 16
    c = c + gh[e, 4]
    X[7] = c / ln          # >= 8
    c = c + gh[e, 3]
    X[6] = c / ln          # >= 4
    c = c + gh[e, 2]
    X[5] = c / ln          # >= 2
    iA = max(aA, 1.0)
    iB = max(aB, 1.0)
    X[9] = _chi2(hist, a, b, 0, iA, iB)
    X[10] = _chi2(hist, a, b, 1, iA, iB)
    X[11] = _chi2(hist, a, b, 2, iA, iB)
    X[12] = flog(min(aA, aB) / npx)
    X[13] = flog(max(aA, aB) / npx)
    X[14] = ln / min(pA, pB)
    X[15] = ln / max(pA, pB)
    X[16] = flog(tA * tB)
    X[17] = abs(flog(tA / tB))
    X[18] = flog(t / max(tA, tB))
    X[19] = flog(vA * vB)
    X[20] = abs(flog(vA / vB))
    cA = lc[e] - mn[a]
    cB = lc[e] - mn[b]
    X[21] = min(cA, cB)
    X[22] = max(cA, cB)
    X[23] = f23


def _walk(x32, feat, thr, left, right, leaf, val, base):
    """The trees' sum (float64, in tree order) + base, clipped at 0, as float32."""
    acc = base
    for t in range(feat.shape[0]):
        n = 0
        while not leaf[t, n]:
            if np.float64(x32[feat[t, n]]) <= thr[t, n]:
                n = left[t, n]
            else:
                n = right[t, n]
        acc += val[t, n]
    return np.float32(max(acc, 0.0))


def _find(parent, x):
    while parent[x] != x:
        x = parent[x]
    return x


def _aggregate(R, ea, eb, el, eg, gh, X32, p32, lcs):
    """Pairs (ea < eb after renaming) summed per key; a key's kept features, p and log cost are its
    first row's (a renamed or summed pair has a grown region: they are computed again)."""
    E = ea.shape[0]
    key = ea * R + eb
    order = np.argsort(key, kind="mergesort")
    n = 0
    for i in range(E):
        if i == 0 or key[order[i]] != key[order[i - 1]]:
            n += 1
    nea = np.empty(n, np.int64)
    neb = np.empty(n, np.int64)
    nel = np.zeros(n, np.int64)
    neg = np.zeros(n, np.int64)
    ngh = np.zeros((n, NG), np.int64)
    nX = np.empty((n, NFEAT), np.float32)
    np_ = np.empty(n, np.float32)
    nlc = np.empty(n, np.float64)
    j = -1
    for i in range(E):
        o = order[i]
        if i == 0 or key[o] != key[order[i - 1]]:
            j += 1
            nea[j] = ea[o]
            neb[j] = eb[o]
            nX[j] = X32[o]
            np_[j] = p32[o]
            nlc[j] = lcs[o]
        nel[j] += el[o]
        neg[j] += eg[o]
        for k in range(NG):
            ngh[j, k] += gh[o, k]
    return nea, neb, nel, neg, ngh, nX, np_, nlc


def _merge_loop(R, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, bord, feat, thr, left, right, leaf, val, base,
                t23, tau32, target, min_area, inv_norm, npx, max_rounds, check, ctl):
    """All rounds of the learned merge: (into, count, rounds, tree walks, feature recomputations,
    cache mismatches found by ``check``).

    A pair's log cost and features 0-20 depend only on its two regions' sums, perimeters and its own
    sums, which change only when one of its regions grew (``chg``): the other pairs keep them. The
    trees are walked again only where the float32 features 0-22 or the interval of feature 23 among
    the model's thresholds on it (``t23``) changed. ``check``: recompute every pair and count
    differences from the kept values (a test). ``ctl`` (int64, 3): [0] set by another thread stops the
    rounds (a cancel); the loop writes the rounds done into [1] and the regions left into [2]."""
    into = np.arange(R)
    count = R
    rounds = 0
    walks = 0
    recomputed = 0
    mismatches = 0
    E = ea.shape[0]
    X = np.empty(NFEAT, np.float64)
    x32 = np.empty(NFEAT, np.float32)
    X32 = np.zeros((E, NFEAT), np.float32)   # the features of the last walk (23: the interval of feature 23)
    lcs = np.zeros(E, np.float64)
    p32 = np.zeros(E, np.float32)
    chg = np.ones(R, np.bool_)
    mn = np.empty(R, np.float64)
    per = np.empty(R, np.float64)
    best = np.empty(R, np.uint64)
    pbits = p32.view(np.uint32)
    NONE = np.uint64(0xFFFFFFFFFFFFFFFF)
    LOW = np.uint64(0xFFFFFFFF)
    while E > 0 and rounds < max_rounds and not (target > 0 and count <= target) and ctl[0] == 0:
        ctl[1] = rounds
        ctl[2] = count
        for r in range(R):
            mn[r] = np.inf
            per[r] = float(bord[r])
            best[r] = NONE
        for e in range(E):
            a = ea[e]
            b = eb[e]
            if chg[a] or chg[b] or check:
                c32 = _cost32(float(area[a]), float(area[b]), rsum, a, b, float(el[e]), float(eg[e]), inv_norm, npx)
                v = flog(max(np.float64(c32), 1e-12))
                if check and not (chg[a] or chg[b]) and v != lcs[e]:
                    mismatches += 1
                lcs[e] = v
            v = lcs[e]
            mn[a] = min(mn[a], v)
            mn[b] = min(mn[b], v)
            per[a] += el[e]
            per[b] += el[e]
        f23 = flog(count / R)
        f32 = np.float32(f23)
        bin23 = 0
        for k in range(t23.shape[0]):
            if np.float64(f32) > t23[k]:
                bin23 += 1
        for e in range(E):
            a = ea[e]
            b = eb[e]
            dirty = chg[a] or chg[b] or rounds == 0
            if dirty or check:
                _features(e, X, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, per, lcs, mn, npx, f23)
                recomputed += 1
                for k in range(21):
                    v32 = np.float32(X[k])
                    if not dirty and v32 != X32[e, k]:
                        mismatches += 1
                    x32[k] = v32
            else:
                for k in range(21):
                    x32[k] = X32[e, k]
            cA = lcs[e] - mn[a]
            cB = lcs[e] - mn[b]
            x32[21] = np.float32(min(cA, cB))
            x32[22] = np.float32(max(cA, cB))
            x32[23] = np.float32(bin23)
            same = rounds > 0
            for k in range(NFEAT):
                if x32[k] != X32[e, k]:
                    same = False
            if not same:
                X32[e] = x32
                x32[23] = f32
                p32[e] = _walk(x32, feat, thr, left, right, leaf, val, base)
                walks += 1
            key = np.uint64(pbits[e]) << np.uint64(32)
            ka = key | np.uint64(b)
            kb = key | np.uint64(a)
            if ka < best[a]:
                best[a] = ka
            if kb < best[b]:
                best[b] = kb
        for r in range(R):
            chg[r] = False
        sel = np.zeros(E, np.bool_)
        nm = 0
        for e in range(E):
            a = ea[e]
            b = eb[e]
            if np.int64(best[a] & LOW) == b and np.int64(best[b] & LOW) == a and p32[e] < tau32:
                sel[e] = True
                nm += 1
        if nm == 0:
            if target > 0 or min_area <= 1:
                break
            # clean-up: every region smaller than min_area joins its lowest-p neighbour
            root = np.arange(R)
            ns = 0
            for e in range(E):
                a = ea[e]
                b = eb[e]
                if (np.int64(best[a] & LOW) == b and area[a] < min_area) or \
                        (np.int64(best[b] & LOW) == a and area[b] < min_area):
                    ra = _find(root, a)
                    rb = _find(root, b)
                    if ra < rb:
                        root[rb] = ra
                    elif rb < ra:
                        root[ra] = rb
                    ns += 1
            if ns == 0:
                break
            mv = 0
            for r in range(R):
                if into[r] != r:
                    continue
                rr = _find(root, r)
                if rr != r:
                    chg[rr] = True
                    area[rr] += area[r]
                    for c in range(3):
                        rsum[rr, c] += rsum[r, c]
                    rsq[rr] += rsq[r]
                    gin[rr] += gin[r]
                    for k in range(NH):
                        hist[rr, k] += hist[r, k]
                    bord[rr] += bord[r]
                    into[r] = rr
                    mv += 1
            for r in range(R):
                root[r] = _find(root, r)
            keep = np.empty(E, np.bool_)
            for e in range(E):
                keep[e] = root[ea[e]] != root[eb[e]]
            na = root[ea]
            nb = root[eb]
            count -= mv
        else:
            if target > 0 and count - nm < target:
                k = count - target
                idx = np.flatnonzero(sel)
                keys = np.empty(len(idx), np.uint64)
                for i in range(len(idx)):
                    keys[i] = (np.uint64(pbits[idx[i]]) << np.uint64(32)) | np.uint64(ea[idx[i]])
                order = np.argsort(keys)
                for i in range(k, len(idx)):
                    sel[idx[order[i]]] = False
                nm = k
            for e in range(E):
                if sel[e]:
                    a = ea[e]
                    b = eb[e]
                    into[b] = a
                    chg[a] = True
                    area[a] += area[b]
                    for c in range(3):
                        rsum[a, c] += rsum[b, c]
                    rsq[a] += rsq[b]
                    gin[a] += gin[b]
                    for k in range(NH):
                        hist[a, k] += hist[b, k]
                    bord[a] += bord[b]
            keep = np.empty(E, np.bool_)
            na = np.empty(E, np.int64)
            nb = np.empty(E, np.int64)
            for e in range(E):
                na[e] = into[ea[e]]
                nb[e] = into[eb[e]]
                keep[e] = (not sel[e]) and na[e] != nb[e]
            count -= nm
        idx = np.flatnonzero(keep)
        lo = np.minimum(na[idx], nb[idx])
        hi = np.maximum(na[idx], nb[idx])
        ea, eb, el, eg, gh, X32, p32, lcs = _aggregate(R, lo, hi, el[idx], eg[idx], gh[idx], X32[idx], p32[idx],
                                                       lcs[idx])
        pbits = p32.view(np.uint32)
        E = ea.shape[0]
        rounds += 1
    return into, count, rounds, walks, recomputed, mismatches


def _initial_features(R, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, bord, inv_norm, npx, count, R0):
    E = ea.shape[0]
    out = np.empty((E, NFEAT), np.float64)
    lc = np.empty(E, np.float64)
    mn = np.full(R, np.inf)
    per = np.empty(R, np.float64)
    for r in range(R):
        per[r] = float(bord[r])
    for e in range(E):
        a = ea[e]
        b = eb[e]
        c32 = _cost32(float(area[a]), float(area[b]), rsum, a, b, float(el[e]), float(eg[e]), inv_norm, npx)
        v = flog(max(np.float64(c32), 1e-12))
        lc[e] = v
        mn[a] = min(mn[a], v)
        mn[b] = min(mn[b], v)
        per[a] += el[e]
        per[b] += el[e]
    f23 = flog(count / R0)
    X = np.empty(NFEAT, np.float64)
    for e in range(E):
        _features(e, X, ea, eb, el, eg, gh, area, rsum, rsq, gin, hist, per, lc, mn, npx, f23)
        out[e] = X
    return out


def _predict_rows(X32, feat, thr, left, right, leaf, val, base):
    out = np.empty(X32.shape[0], np.float32)
    for e in range(X32.shape[0]):
        out[e] = _walk(X32[e], feat, thr, left, right, leaf, val, base)
    return out


_NAMES = ("flog", "_cost32", "_chi2", "_features", "_walk", "_find", "_aggregate", "_merge_loop",
          "_initial_features", "_predict_rows")
_K = None


def _kernels():
    """The compiled functions (numba, cached on disk), or this module's plain Python ones."""
    global _K
    if _K is None:
        import types

        g = globals()
        try:
            import numba
        except ImportError:  # the optional "fast" extra: the same code, interpreted (slow)
            _K = types.SimpleNamespace(**{n: g[n] for n in _NAMES})
            return _K
        ns = {}
        for n in _NAMES:  # in dependency order: each compiled function calls the compiled ones
            fn = numba.njit(cache=True, nogil=True)(g[n])   # nogil: the merge runs beside its watcher
            ns[n] = fn
            g[n] = fn
        _K = types.SimpleNamespace(**ns)
    return _K


# --------------------------------------------------------------------------- the CPU path
def _model_arrays(m: dict):
    return (np.ascontiguousarray(m["feat"], np.int64), np.ascontiguousarray(m["thr"], np.float64),
            np.ascontiguousarray(m["left"], np.int64), np.ascontiguousarray(m["right"], np.int64),
            np.ascontiguousarray(m["leaf"], np.bool_), np.ascontiguousarray(m["val"], np.float64),
            float(m["base"]))


def thresholds23(m: dict) -> np.ndarray:
    """The model's thresholds on feature 23 (the merge's progress), sorted: two values on the same
    side of each of them walk every tree alike."""
    return np.sort(np.asarray(m["thr"], np.float64)[(m["feat"] == NFEAT - 1) & ~np.asarray(m["leaf"], bool)])


def _state(graph: dict):
    R = int(graph["R"])
    return (R, np.asarray(graph["ea"], np.int64).copy(), np.asarray(graph["eb"], np.int64).copy(),
            np.asarray(graph["el"], np.int64).copy(), np.asarray(graph["eg"], np.int64).copy(),
            np.ascontiguousarray(graph["gh"], np.int64).copy(), np.asarray(graph["area"], np.int64).copy(),
            np.ascontiguousarray(graph["rsum"], np.int64).copy(), np.asarray(graph["rsq"], np.int64).copy(),
            np.asarray(graph["gin"], np.int64).copy(), np.ascontiguousarray(graph["hist"], np.int64).copy(),
            np.asarray(graph["bord"], np.int64).copy())


def merge_learned_np(graph: dict, target: int, tau: float, inv_norm: float, *, min_area: int = 0,
                     max_rounds: int = 100_000, model_arrays: dict | None = None, stats: dict | None = None,
                     check: bool = False, progress=None):
    """The learned merge of a region graph with :func:`graph_extras_np`'s sums (CPU):
    ``(into, count, rounds)``; ``stats`` (a dict) receives the numbers of tree walks, feature
    recomputations and (``check``: every pair recomputed every round) kept values that differ.
    ``progress``: the rounds run on a thread of their own while this one reports them (every 50 ms)
    and checks for cancel; a cancel stops the rounds at the next one and raises here."""
    K = _kernels()
    st = _state(graph)
    m = model_arrays or model()
    npx = float(int(st[6].sum()))
    tau32 = np.float32(math.inf if target > 0 else tau)
    ctl = np.zeros(3, np.int64)
    args = (*st, *_model_arrays(m), thresholds23(m), tau32, int(target), int(min_area), float(inv_norm), npx,
            int(max_rounds), bool(check), ctl)
    if progress is None:
        res = K._merge_loop(*args)
    else:
        res = _watched(K._merge_loop, args, ctl, int(st[0]), int(target), progress)
    into, count, rounds, walks, rec, bad = res
    if stats is not None:
        stats.update(walks=int(walks), recomputed=int(rec), mismatches=int(bad))
    return into, int(count), int(rounds)


def _watched(loop, args, ctl, R: int, target: int, progress):
    """``loop(*args)`` on a thread while this one reports its rounds (``ctl``) and checks for cancel."""
    import threading

    from gpu_kernels.jobs import as_progress

    progress = as_progress(progress)
    progress.check()
    box: dict = {}

    def run():
        try:
            box["res"] = loop(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            box["err"] = exc

    t = threading.Thread(target=run, name="gpulab-imseg-merge")
    t.start()
    goal = max(1, R - max(target, 1))
    try:
        while t.is_alive():
            t.join(0.05)
            left = int(ctl[2]) or R
            progress.update(min(0.99, (R - left) / goal), f"merging: {left:,} regions, round {int(ctl[1]) + 1}")
            progress.check()
    except BaseException:
        ctl[0] = 1   # the rounds stop at the next one
        t.join()
        raise
    if "err" in box:
        raise box["err"]
    return box["res"]


def edge_features_np(graph: dict, inv_norm: float, count: int | None = None) -> np.ndarray:
    """The 24 features (float64, (E, 24)) of the graph's pairs before any merge (``count``: the
    regions left, for the progress feature; default R)."""
    K = _kernels()
    st = _state(graph)
    R = st[0]
    npx = float(int(st[6].sum()))
    return K._initial_features(*st, float(inv_norm), npx, float(count or R), float(R))


def predict_np(X: np.ndarray, model_arrays: dict | None = None) -> np.ndarray:
    """The model's p (float32) of feature rows X (cast to float32 first)."""
    K = _kernels()
    return K._predict_rows(np.ascontiguousarray(X, np.float32), *_model_arrays(model_arrays or model()))


# --------------------------------------------------------------------------- the GPU path
_SRC = "imseg_learned.cu"
_OPTS = ("--fmad=false",)
_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)


def _dev_model(be, m: dict):
    """The model's arrays on the device (kept per device): thr, val (float64) and meta (feature |
    left << 8 | right << 16 | leaf << 24), each T x L."""
    key = (id(be), id(m))
    hit = _DEV_MODELS.get(key)
    if hit is not None and hit[0] is m:   # (the dict is kept with its arrays: its id cannot be reused meanwhile)
        return hit[1]
    if max(int(m["left"].max()), int(m["right"].max()), int(m["feat"].max())) > 255:
        raise ValueError("the GPU merge packs a tree's nodes and features in 8 bits: at most 256 of each")
    meta = (m["feat"].astype(np.int32) & 255) | ((m["left"].astype(np.int32) & 255) << 8) | \
        ((m["right"].astype(np.int32) & 255) << 16) | (m["leaf"].astype(np.int32) << 24)
    xp = be.xp
    d = (xp.asarray(np.ascontiguousarray(m["thr"], np.float64).ravel()),
         xp.asarray(np.ascontiguousarray(m["val"], np.float64).ravel()),
         xp.asarray(np.ascontiguousarray(meta, np.int32).ravel()), int(m["feat"].shape[0]),
         int(m["feat"].shape[1]), xp.asarray(np.ascontiguousarray(thresholds23(m), np.float64)))
    _DEV_MODELS[key] = (m, d)
    return d


_DEV_MODELS: dict = {}


#: lm_merge's phases (``prof``)
PHASES = ("reset", "log cost", "lists", "features", "compare", "walk", "sum", "best", "mutual", "merge", "rename",
          "fill")


def _null(be):
    from gpu_kernels.imseg._util import NULL

    return NULL


#: lm_merge's static shared memory (the model: 2048 nodes x (8 + 8 + 4) bytes, and a few ints), rounded up
_STATIC_SMEM = 41 * 1024


def region_smem_bytes(R: int) -> int:
    """The dynamic shared memory lm_merge keeps the regions' arrays in (area, 3 colour sums,
    squares, gradient, perimeter, lowest log cost, lowest p: 8 bytes each; border, into, changed: 4)."""
    return int(R * (9 * 8 + 3 * 4))


def uses_region_smem(be, R: int) -> bool:
    """Whether :func:`merge_device` (``smem=None``) keeps the regions' arrays in shared memory."""
    from gpu_kernels.imseg import contours as C

    return region_smem_bytes(R) <= C._max_smem(be) - _STATIC_SMEM


#: the GPU merge's kernel: "grid" (``lm_merge_grid``: every SM, one cooperative launch; the default; H100,
#: session 14: 4.3 ms end to end at 512x512, 9.6 ms at 1080p on the benchmark image) or "block" (``lm_merge``:
#: one block; session 12's kernel, 22.7 / 100 ms; the fallback); the same labels
KERNELS = ("grid", "block")
DEFAULT_KERNEL = "grid"
#: lm_merge_grid's phases (``prof``, int64 of 16: ns summed over the rounds, from the end of a phase's
#: opening barrier to the latest block's arrival at its closing one; "barriers": that arrival to the release)
GRID_PHASES = ("B: new pairs, lowest log cost", "C: context, trees, lowest p", "D: mutual, merge, rename",
               "clean-up and target count", "barriers")
#: threads a block of lm_merge_grid: 512 (128 registers a thread; 16-19 % faster on the H100 than 1024,
#: session 13 call 3) or 1024 (64 registers); a benchmark knob
GRID_THREADS = 512
_LG_N = 12


def merge_device(be, labels_d, R: int, h: int, w: int, gq, q, target: int, tau: float, inv_norm: float, *,
                 min_area: int = 0, max_rounds: int = 100_000, timer=None, model_arrays: dict | None = None,
                 smem: bool | None = None, prof=None, kernel: str | None = None, info: dict | None = None):
    """The graph with the learned merge's sums and all merge rounds on the device: ``(into (R,) int32,
    state int32: [count, rounds, tree walks, error bits])``; nothing is read back. ``smem``: the regions'
    arrays in shared memory (None: where they fit; the "block" kernel only).
    ``prof``: a device int64 array that receives the time of each phase of the rounds (the "block"
    kernel: 12, block thread 0's clock cycles, :data:`PHASES`; the "grid" kernel: 16, ns,
    :data:`GRID_PHASES`, or 64 with :data:`GRID_CHECKPOINTS`). ``kernel``: :data:`KERNELS` (None: :data:`DEFAULT_KERNEL`); both give the
    same labels. ``info`` (a dict, optional) receives the kernel that ran (``"kernel"``: "grid" or "block", after
    any fallback) and whether its regions' arrays were in shared memory (``"smem"``: "regions" or False).

    Precondition: every region 1..R of ``labels_d`` is ONE 4-connected piece, as the contours method's
    superpixel stage guarantees (SLIC then connected components). The pair arrays hold 3R + 16 pairs
    and the hash table ~6R keys, bounds that hold for such a partition (a planar region adjacency
    graph); labels whose regions are split in several pieces can exceed them (session 12 review #2).
    Both kernels check them on the device: a full table (error bit 1) or more pairs than positions
    (bit 2) stops the rounds, and ``contours.check_merge_state(state, 3)`` (called by ``contours.stage_merge``)
    raises one line, instead of writing out of bounds."""
    from gpu_kernels.backend import set_max_dynamic_smem
    from gpu_kernels.imseg import contours as C
    from gpu_kernels.imseg._util import grid
    from gpu_kernels.imseg._util import kernel as _kernel

    which = DEFAULT_KERNEL if kernel is None else kernel
    if which not in KERNELS:
        raise ValueError(f"unknown learned merge kernel {which!r}: use {' or '.join(KERNELS)}")
    if which == "grid" and kernel is None and not _cooperative_ok(be):
        which = "block"   # a device without cooperative launches: the one-block kernel (same labels)

    xp = be.xp
    n = h * w
    lc = C._logcap(R)
    cap = 1 << lc
    hkey = xp.full(cap, _EMPTY, dtype=xp.uint64)
    hlen = xp.zeros(cap, dtype=xp.int32)
    hgs = xp.zeros(cap, dtype=xp.uint64)
    hgh = xp.zeros(cap * NG, dtype=xp.int32)
    area = xp.zeros(R, dtype=xp.int64)
    rsum = xp.zeros(3 * R, dtype=xp.int64)
    rsq = xp.zeros(R, dtype=xp.int64)
    gin = xp.zeros(R, dtype=xp.int64)
    hist = xp.zeros(NH * R, dtype=xp.int32)
    bord = xp.zeros(R, dtype=xp.int32)
    gc = xp.zeros(_LG_N, dtype=xp.int32)   # lm_merge_grid's counters; [0]: error bits
    chunks = -(-n // 16)
    _kernel(be, _SRC, "lm_rag_pixels", options=_OPTS)(grid(chunks, 256), (256,), (
        labels_d, gq, q, np.int32(w), np.int32(h), area, rsum, rsq, gin, hist, bord, hkey, hlen, hgs, hgh,
        np.int32(lc), gc))
    if timer is not None:
        timer.mark("graph")
    emax = 3 * R + 16
    m = model_arrays or model()
    m_thr, m_val, m_meta, T, L, t23 = _dev_model(be, m)
    if T * L > 2048:
        raise ValueError("the model has more than 2048 nodes")
    tau32 = np.float32(np.inf if target > 0 else tau)
    if which == "grid" and (T > 64 or len(t23) > 256):
        if kernel is not None:
            raise ValueError("the grid kernel walks at most 64 trees with at most 256 thresholds on feature 23")
        which = "block"   # a larger model than the grid kernel holds: the one-block kernel (the same labels)
    if info is not None:
        info.update(kernel=which, smem=False)
    if which == "grid":
        try:
            return _merge_grid(be, R, n, hkey, hlen, hgs, hgh, lc, area, rsum, rsq, gin, hist, bord, emax, m,
                               (m_thr, m_val, m_meta, T, L, t23), tau32, target, min_area, inv_norm, max_rounds, gc,
                               prof)
        except Exception as e:  # noqa: BLE001 - only a refused cooperative launch falls back
            if kernel is not None or not _launch_refused(e):
                raise
            # the driver would not start the grid (MPS limits, SMs held): the one-block kernel, the same labels;
            # nothing of the graph above was changed by the refused launch
            from gpu_kernels.imseg._util import is_cupy

            if is_cupy(be):  # (remembered per device: later merges there go straight to it)
                _COOPERATIVE[cache_key(be)] = False
    ea, eb, el, eg, gh, pb, lcost, X32, slots = _pair_arrays(xp, emax)
    holes = xp.empty(emax, dtype=xp.int32)
    dlist = xp.empty(emax, dtype=xp.int32)
    wlist = xp.empty(emax, dtype=xp.int32)
    Xn = xp.empty(emax * NFEAT, dtype=xp.float32)
    leafv = xp.empty(emax * int(m["feat"].shape[0]), dtype=xp.float64)
    clist = xp.empty(R, dtype=xp.int32)
    rd = xp.empty(5 * R, dtype=xp.float64)
    hn = xp.empty(NH * R, dtype=xp.float64)
    per = xp.empty(R, dtype=xp.int64)
    mn = xp.empty(R, dtype=xp.uint64)
    best = xp.empty(R, dtype=xp.uint64)
    into = xp.empty(R, dtype=xp.int32)
    chg = xp.empty(R, dtype=xp.int32)
    state = xp.zeros(4, dtype=xp.int32)
    fm = _kernel(be, _SRC, "lm_merge", options=_OPTS)
    smem_bytes = region_smem_bytes(R)
    fits = uses_region_smem(be, R)
    use = fits if smem is None else bool(smem) and fits
    if info is not None:   # (the grid kernel fell back here, or the block kernel was asked for)
        info.update(kernel="block", smem="regions" if use else False)
    if use:
        set_max_dynamic_smem(fm, smem_bytes)
    fm((1,), (1024,), (
        np.int32(R), hkey, hlen, hgs, hgh, np.int32(lc), ea, eb, el, eg, gh, pb, lcost, X32, slots, holes,
        dlist, wlist, Xn, leafv, clist, rd, hn, area, rsum, rsq, gin, hist, bord, per, mn, best, into, chg, m_thr, m_val, m_meta, np.int32(T), np.int32(L),
        np.float64(m["base"]), t23, np.int32(len(t23)), tau32, np.int32(target), np.int32(min_area),
        np.float64(inv_norm), np.float64(n), np.float64(_GSCALE), np.float64(_B0), np.float64(_SIZE_K), np.int32(emax),
        np.int32(max_rounds), state, np.int32(use),
        prof if prof is not None else _null(be)),
        shared_mem=smem_bytes if use else 0)
    state[3:] |= gc[:1]   # the pixel pass's full table (bit 1) as well
    return into, state


def _pair_arrays(xp, emax: int):
    """The pair arrays both merge kernels keep (ends, boundary length and gradient sums, gradient histogram,
    p bits, log cost, features, slots), for ``emax`` pairs."""
    return (xp.empty(emax, dtype=xp.int32), xp.empty(emax, dtype=xp.int32), xp.empty(emax, dtype=xp.int32),
            xp.empty(emax, dtype=xp.uint64), xp.empty(emax * NG, dtype=xp.int32), xp.empty(emax, dtype=xp.uint32),
            xp.empty(emax, dtype=xp.float64), xp.empty(emax * NFEAT, dtype=xp.float32), xp.empty(emax, dtype=xp.int32))


def _merge_grid(be, R, n, hkey, hlen, hgs, hgh, lc, area, rsum, rsq, gin, hist, bord, emax, m, dm, tau32, target,
                min_area, inv_norm, max_rounds, gc, prof):
    """lm_merge_grid: every round over the whole GPU (one cooperative launch)."""
    from gpu_kernels.backend import cooperative_blocks
    from gpu_kernels.imseg._util import kernel as _kernel

    xp = be.xp
    if prof is not None and GRID_CHECKPOINTS and prof.size < 64:
        raise ValueError("GRID_CHECKPOINTS needs a prof of 64 entries")
    m_thr, m_val, m_meta, T, L, t23 = dm
    ea, eb, el, eg, gh, pb, lcost, X32, slots = _pair_arrays(xp, emax)
    skey = xp.empty(emax, dtype=xp.uint64)
    holes = xp.empty(emax, dtype=xp.int32)
    hstamp = xp.empty(emax, dtype=xp.int32)
    rd = xp.empty(5 * R, dtype=xp.float64)
    hn = xp.empty(NH * R, dtype=xp.float64)
    per = xp.zeros(R, dtype=xp.int64)
    mn2 = xp.empty(2 * R, dtype=xp.uint64)
    best2 = xp.empty(2 * R, dtype=xp.uint64)
    into = xp.empty(R, dtype=xp.int32)
    grown = xp.empty(R, dtype=xp.int32)
    bar = xp.zeros(2, dtype=xp.uint32)
    state = xp.zeros(4, dtype=xp.int32)
    threads = GRID_THREADS
    fm = _kernel(be, _SRC, "lm_merge_grid" if threads == 1024 else f"lm_merge_grid{threads}", options=_OPTS,
                 cooperative=True, defines={"LG_CHECKPOINTS": 1} if GRID_CHECKPOINTS else None)
    blocks = max(1, min(cooperative_blocks(fm, threads, device=getattr(be, "device_id", None)), _grid_blocks_cap()))
    fm((blocks,), (threads,), (
        np.int32(R), hkey, hlen, hgs, hgh, np.int32(lc), ea, eb, el, eg, gh, pb, lcost, X32, slots, skey, holes,
        hstamp, rd, hn, area, rsum, rsq, gin, hist, bord, per, mn2, best2, into, grown, m_thr, m_val, m_meta, np.int32(T),
        np.int32(L), np.float64(m["base"]), t23, np.int32(len(t23)), tau32, np.int32(target), np.int32(min_area),
        np.float64(_GSCALE), np.float64(_B0), np.float64(_SIZE_K), np.float64(inv_norm), np.float64(n),
        np.int32(max_rounds), np.int32(emax), bar, gc, state, prof if prof is not None else _null(be)))
    return into, state


def _cooperative_ok(be) -> bool:
    """Whether the device launches cooperative kernels (every CUDA GPU since Pascal; the emulator)."""
    from gpu_kernels.imseg._util import is_cupy

    if not is_cupy(be):
        return True
    key = cache_key(be)
    if key not in _COOPERATIVE:
        try:
            _COOPERATIVE[key] = bool(be.xp.cuda.Device(int(be.device_id)).attributes.get("CooperativeLaunch", 1))
        except Exception:  # noqa: BLE001 - no attribute query: assume the usual
            _COOPERATIVE[key] = True
    return _COOPERATIVE[key]


#: per device (:func:`gpu_kernels.backend.cache_key`): whether it launches cooperative kernels (asked once; False after a refused launch)
_COOPERATIVE: dict[tuple, bool] = {}


def _launch_refused(e: BaseException) -> bool:
    """A driver error that refuses a cooperative launch (too many blocks for what the device gives now, or no
    support), as opposed to an error of the kernel itself."""
    text = str(e).upper()
    return type(e).__name__ == "CUDADriverError" and ("COOPERATIVE" in text or "NOT_SUPPORTED" in text)


#: at most this many blocks for lm_merge_grid (None: as many as the device holds at once); a benchmark knob
GRID_BLOCKS: int | None = None
#: build lm_merge_grid with its per-phase checkpoints (-DLG_CHECKPOINTS; ``prof`` then needs 64 entries:
#: imseg_learned.cu says what each holds); a benchmark knob, slower, the same labels
GRID_CHECKPOINTS = False


def _grid_blocks_cap() -> int:
    return int(GRID_BLOCKS) if GRID_BLOCKS else 1 << 30
