"""Compiled (numba) twins of the flow's NumPy hot loops: the TV-L1 warp (linearised data term) and
iterations, the patches' templates and inverse search (integer search, propagation, Gauss-Newton),
and densification.

Imported only through :func:`gpu_kernels.flow._numba.kernels` (numba is optional: ``pip install
gpulab[fast]``). Each kernel does the float32 operations of its NumPy twin in the same order
(``fastmath=False``, no contraction into FMAs), and the patch sums follow NumPy's pairwise
summation of a contiguous row (eight running sums), so the results are the NumPy path's to the
bit on the machines we tried (tests/flow/test_flow_numba.py). Rows (pixels) or patches are spread
over the cores with ``prange``; compiled code is cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_F0 = np.float32(0)
_F1 = np.float32(1)
_FH = np.float32(0.5)


# ----------------------------------------------------------------------------- TV-L1
@njit(cache=True, fastmath=False, parallel=True)
def tv_warp_iterate(I1, I2s, i1x, i1y, w, has_w, occ, u, v, p, ginv, has_ginv, lt, theta, taut, iters, bands,
                    uo, vo, po):  # pragma: no cover - compiled
    """One warp of the TV-L1 at a level: the linearised data term of ``(u, v)`` (refine._warp_np,
    the GPU's tv_warp) and ``iters`` iterations (refine._iterate_np) from ``(u, v, p)``, the result
    in ``(uo, vo, po)``.

    The rows are split into ``bands`` bands that run in parallel, each on a copy with ``iters`` rows
    of its neighbours' recomputed (temporal blocking, as the GPU's tv_iterate_tile): one parallel
    region a call rather than two an iteration (a barrier per iteration stalls when the cores are
    shared). A band's own edges are wrong after an iteration and the error moves one row further
    each iteration, so only its rows ``iters`` away from them are kept. The rows are branch-free:
    the flow is padded by a copy of its last column and row (a zero forward difference, as
    NumPy's), the dual field by a zero column and row in front (nothing subtracted). The loops are
    written out in the parallel loop's body, where numba lets LLVM vectorise them (in a called
    function it does not, ~10x slower)."""
    H, W = u.shape
    nlt = -lt
    wm = np.float32(W - 1)
    hm = np.float32(H - 1)
    iocc = np.float32(1.0 / occ) if occ > 0 else _F0
    for bnd in prange(bands):
        r0 = max(0, (bnd * H) // bands - iters)
        r1 = min(H, ((bnd + 1) * H) // bands + iters)
        h = r1 - r0
        U = np.empty((h + 1, W + 1), np.float32)
        V = np.empty((h + 1, W + 1), np.float32)
        Q = np.zeros((4, h + 1, W + 1), np.float32)
        inv = np.empty((h, W), np.float32)
        G = np.ones((h, W), np.float32)
        T = np.empty(W, np.float32)
        gx = np.empty((h, W), np.float32)
        gy = np.empty((h, W), np.float32)
        rc = np.empty((h, W), np.float32)
        for y in range(h):
            fy0 = np.float32(r0 + y)
            for x in range(W):
                # the warp (refine._warp_np): each pixel's own flow only
                uu = u[r0 + y, x]
                vv = v[r0 + y, x]
                xs = np.float32(x) + uu
                ys = fy0 + vv
                if not (xs >= 0 and ys >= 0 and xs <= wm and ys <= hm):
                    gx[y, x] = _F0
                    gy[y, x] = _F0
                    rc[y, x] = _F0
                    continue
                s0 = _bilin(I2s, 0, xs, ys, H, W)
                s1 = _bilin(I2s, 1, xs, ys, H, W)
                s2 = _bilin(I2s, 2, xs, ys, H, W)
                ga = _FH * (s1 + i1x[r0 + y, x])
                gb = _FH * (s2 + i1y[r0 + y, x])
                r00 = s0 - I1[r0 + y, x]
                r = r00 - ga * uu - gb * vv
                wt = w[r0 + y, x] if has_w else _F1
                use_w = has_w
                if occ > 0:
                    z = r00 * iocc
                    wt = wt / (_F1 + z * z)
                    use_w = True
                if use_w:
                    sw = np.sqrt(wt)
                    ga = ga * sw
                    gb = gb * sw
                    r = r * sw
                gx[y, x] = ga
                gy[y, x] = gb
                rc[y, x] = r
        for y in range(h):
            for x in range(W):
                U[y, x] = u[r0 + y, x]
                V[y, x] = v[r0 + y, x]
                Q[0, y + 1, x + 1] = p[0, r0 + y, x]
                Q[1, y + 1, x + 1] = p[1, r0 + y, x]
                Q[2, y + 1, x + 1] = p[2, r0 + y, x]
                Q[3, y + 1, x + 1] = p[3, r0 + y, x]
                a = gx[y, x]
                b = gy[y, x]
                g2 = a * a + b * b
                inv[y, x] = _F1 / g2 if g2 > np.float32(1e-10) else _F0
            if has_ginv:
                for x in range(W):
                    G[y, x] = ginv[r0 + y, x]
            U[y, W] = U[y, W - 1]
            V[y, W] = V[y, W - 1]
        for _ in range(iters):
            # primal: reads the dual field, writes the flow
            for y in range(h):
                for x in range(W):
                    t = gx[y, x] * U[y, x]
                    t += gy[y, x] * V[y, x]
                    t += rc[y, x]
                    t *= inv[y, x]
                    T[x] = nlt if t < nlt else (lt if t > lt else t)
                for x in range(W):
                    d = Q[0, y + 1, x + 1] + Q[1, y + 1, x + 1]
                    d -= Q[0, y + 1, x]
                    d -= Q[1, y, x + 1]
                    d *= theta
                    d -= T[x] * gx[y, x]
                    U[y, x] += d
                for x in range(W):
                    d = Q[2, y + 1, x + 1] + Q[3, y + 1, x + 1]
                    d -= Q[2, y + 1, x]
                    d -= Q[3, y, x + 1]
                    d *= theta
                    d -= T[x] * gy[y, x]
                    V[y, x] += d
                U[y, W] = U[y, W - 1]
                V[y, W] = V[y, W - 1]
            for x in range(W + 1):
                U[h, x] = U[h - 1, x]
                V[h, x] = V[h - 1, x]
            # dual: reads the flow, writes the dual field
            for y in range(h):
                for x in range(W):
                    fx = U[y, x + 1] - U[y, x]
                    fy = U[y + 1, x] - U[y, x]
                    nrm = fx * fx
                    nrm += fy * fy
                    nrm = np.sqrt(nrm)
                    nrm *= G[y, x]
                    nrm *= taut
                    nrm += _F1
                    fx *= taut
                    fy *= taut
                    a = Q[0, y + 1, x + 1] + fx
                    Q[0, y + 1, x + 1] = a / nrm
                    b = Q[1, y + 1, x + 1] + fy
                    Q[1, y + 1, x + 1] = b / nrm
                for x in range(W):
                    fx = V[y, x + 1] - V[y, x]
                    fy = V[y + 1, x] - V[y, x]
                    nrm = fx * fx
                    nrm += fy * fy
                    nrm = np.sqrt(nrm)
                    nrm *= G[y, x]
                    nrm *= taut
                    nrm += _F1
                    fx *= taut
                    fy *= taut
                    a = Q[2, y + 1, x + 1] + fx
                    Q[2, y + 1, x + 1] = a / nrm
                    b = Q[3, y + 1, x + 1] + fy
                    Q[3, y + 1, x + 1] = b / nrm
        k0 = r0 + iters if r0 > 0 else 0
        k1 = r1 - iters if r1 < H else H
        for y in range(k0, k1):
            for x in range(W):
                uo[y, x] = U[y - r0, x]
                vo[y, x] = V[y - r0, x]
                po[0, y, x] = Q[0, y - r0 + 1, x + 1]
                po[1, y, x] = Q[1, y - r0 + 1, x + 1]
                po[2, y, x] = Q[2, y - r0 + 1, x + 1]
                po[3, y, x] = Q[3, y - r0 + 1, x + 1]


@njit(cache=True, fastmath=False, inline="always")
def _bilin(img, c, xs, ys, H, W):  # pragma: no cover - compiled
    """ops/warp.py's _bilinear_take at one point of plane ``c`` (xs, ys clamped already)."""
    x0 = np.int32(xs)
    y0 = np.int32(ys)
    a = xs - np.float32(x0)
    b = ys - np.float32(y0)
    x1 = x0 + 1 if x0 < W - 1 else x0
    y1 = y0 + 1 if y0 < H - 1 else y0
    p00 = img[c, y0, x0]
    p01 = img[c, y0, x1]
    p10 = img[c, y1, x0]
    p11 = img[c, y1, x1]
    top = p00 + a * (p01 - p00)
    bot = p10 + a * (p11 - p10)
    return top + b * (bot - top)


# ----------------------------------------------------------------------------- patches
@njit(cache=True, fastmath=False)
def _psum(a, o, n):  # pragma: no cover - compiled
    """NumPy's float32 sum of ``a[o:o + n]`` (8 <= n <= 128, contiguous): eight running sums."""
    b = a[o:o + n]
    r0 = b[0]
    r1 = b[1]
    r2 = b[2]
    r3 = b[3]
    r4 = b[4]
    r5 = b[5]
    r6 = b[6]
    r7 = b[7]
    i = np.uint64(8)
    top = np.uint64(n - n % 8)
    while i < top:
        r0 += b[i]
        r1 += b[i + np.uint64(1)]
        r2 += b[i + np.uint64(2)]
        r3 += b[i + np.uint64(3)]
        r4 += b[i + np.uint64(4)]
        r5 += b[i + np.uint64(5)]
        r6 += b[i + np.uint64(6)]
        r7 += b[i + np.uint64(7)]
        i += np.uint64(8)
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    nu = np.uint64(n)
    while i < nu:
        res += b[i]
        i += np.uint64(1)
    return res


@njit(cache=True, fastmath=False)
def _sum(a, n):  # pragma: no cover - compiled
    """NumPy's float32 sum of ``a[:n]`` (pairwise: blocks of at most 128; here n <= 256)."""
    if n < 8:
        res = _F0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        return _psum(a, 0, n)
    n2 = n // 2
    n2 -= n2 % 8
    return _psum(a, 0, n2) + _psum(a, n2, n - n2)


@njit(cache=True, fastmath=False)
def _cost(pad, T, oy, ox, P, m, u, v, X, Wv, S):  # pragma: no cover - compiled
    """search._Patches.cost for one patch (origin ``oy``, ``ox``; template ``T``) at ``(u, v)``:
    the SSD, with the residual in ``Wv`` (P * P); ``X`` (P + 1, P) and ``S`` (P * P) scratch. The x
    lerp of each window row once, then the y lerp: the float operations of the NumPy path, in its
    order. Unsigned flat indices: numba adds no negative-index wrap (about a third faster)."""
    n = P * P
    hmax = np.float32(pad.shape[0] - P - 1)
    wmax = np.float32(pad.shape[1] - P - 1)
    fu = np.floor(u)
    fv = np.floor(v)
    a = u - fu
    b = v - fv
    x0 = np.uint64(min(max(ox + fu + np.float32(m), _F0), wmax))
    y0 = np.uint64(min(max(oy + fv + np.float32(m), _F0), hmax))
    Pu = np.uint64(P)
    W2 = np.uint64(pad.shape[1])
    one = np.uint64(1)
    flat = pad.ravel()
    Xf = X.ravel()
    for k in range(P + 1):
        rb = (y0 + np.uint64(k)) * W2 + x0
        xb = np.uint64(k) * Pu
        for j in range(P):
            ju = np.uint64(j)
            b0 = flat[rb + ju]
            t = flat[rb + ju + one] - b0
            t *= a
            t += b0
            Xf[xb + ju] = t
    for q in range(n):
        qu = np.uint64(q)
        top = Xf[qu]
        w = Xf[qu + Pu] - top
        w *= b
        w += top
        Wv[qu] = w
    mean = _sum(Wv, n) * np.float32(1.0 / n)
    for q in range(n):
        qu = np.uint64(q)
        w = Wv[qu] - mean
        w -= T[qu]
        Wv[qu] = w
        S[qu] = w * w
    return _sum(S, n)


@njit(cache=True, fastmath=False)
def _chunk(N, nch, c):  # pragma: no cover - compiled
    return (c * N) // nch, ((c + 1) * N) // nch


@njit(cache=True, fastmath=False, parallel=True)
def patch_init(pad, T, oy_r, ox_r, P, m, u, v, cost, radius, R):  # pragma: no cover - compiled
    """coarse_match's start: each patch's cost at ``(u, v)`` (search._Patches.cost) into ``cost``
    and its residual into ``R``, then (``radius`` > 0) the integer search around ``(u, v)``,
    in place. One kernel for both (each parallel kernel costs seconds to compile)."""
    N = u.shape[0]
    n = P * P
    nch = min(N, 256)
    for ch in prange(nch):
        X = np.empty((P + 1, P), np.float32)
        Wv = np.empty(n, np.float32)
        S = np.empty(n, np.float32)
        lo, hi = _chunk(N, nch, ch)
        for i in range(lo, hi):
            bu = u[i]
            bv = v[i]
            c0 = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, bu, bv, X, R[i], S)
            cu0 = bu
            cv0 = bv
            r = radius if radius > 0 else -1
            for dy in range(-r, r + 1):
                for dx in range(-r, r + 1):
                    cu = bu + np.float32(dx)
                    cv = bv + np.float32(dy)
                    s = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, cu, cv, X, Wv, S)
                    if s < c0:
                        cu0, cv0, c0 = cu, cv, s
                        R[i, :] = Wv
            u[i] = cu0
            v[i] = cv0
            cost[i] = c0


@njit(cache=True, fastmath=False, parallel=True)
def patch_round(pad, T, Tx, Ty, oy_r, ox_r, P, m, u, v, cost, R, Ny, Nx, propagate, per, a, b, c, det,
                uo, vo, co, Ro):  # pragma: no cover - compiled
    """One round of coarse_match: the four grid neighbours' flows (``propagate``), then ``per``
    Gauss-Newton steps keeping the lowest cost; reads ``u, v, cost`` (and ``R``, the residual at
    each patch's ``(u, v)``), writes ``uo, vo, co, Ro``. A flow already evaluated for the patch is
    not evaluated again (its cost could only tie, and ties do not replace)."""
    N = u.shape[0]
    n = P * P
    nch = min(N, 256)
    for ch in prange(nch):
        X = np.empty((P + 1, P), np.float32)
        Wv = np.empty(n, np.float32)
        S = np.empty(n, np.float32)
        Rb = np.empty(n, np.float32)
        tu = np.empty(5, np.float32)
        tv = np.empty(5, np.float32)
        lo, hi = _chunk(N, nch, ch)
        for i in range(lo, hi):
            bu = u[i]
            bv = v[i]
            bc = cost[i]
            own = True
            if propagate:
                iy = i // Nx
                ix = i - iy * Nx
                tu[0] = bu
                tv[0] = bv
                nt = 1
                for k in range(4):
                    j = i
                    if k == 0 and ix < Nx - 1:
                        j = i + 1
                    elif k == 1 and ix > 0:
                        j = i - 1
                    elif k == 2 and iy < Ny - 1:
                        j = i + Nx
                    elif k == 3 and iy > 0:
                        j = i - Nx
                    cu = u[j]
                    cv = v[j]
                    seen = False
                    for q in range(nt):
                        if tu[q] == cu and tv[q] == cv:
                            seen = True
                            break
                    if seen:
                        continue
                    tu[nt] = cu
                    tv[nt] = cv
                    nt += 1
                    s = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, cu, cv, X, Wv, S)
                    if s < bc:
                        bu, bv, bc = cu, cv, s
                        Rb[:] = Wv
                        own = False
            if own:
                Rb[:] = R[i]
            uu = bu
            vv = bv
            for it in range(per + 1):
                if it == 0:
                    r = Rb          # (bu, bv) is evaluated already: its cost is bc
                else:
                    s = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, uu, vv, X, Wv, S)
                    r = Wv
                    if s < bc:
                        bu, bv, bc = uu, vv, s
                        Rb[:] = Wv
                if it == per:
                    break
                txi = Tx[i]
                tyi = Ty[i]
                for q in range(n):
                    qu = np.uint64(q)
                    S[qu] = txi[qu] * r[qu]
                ex = _sum(S, n)
                for q in range(n):
                    qu = np.uint64(q)
                    S[qu] = tyi[qu] * r[qu]
                ey = _sum(S, n)
                nu = uu - (c[i] * ex - b[i] * ey) / det[i]
                nv = vv - (a[i] * ey - b[i] * ex) / det[i]
                if nu == uu and nv == vv:
                    break           # a zero step: every later step is this one again (nothing to gain)
                uu = nu
                vv = nv
            uo[i] = bu
            vo[i] = bv
            co[i] = bc
            Ro[i, :] = Rb


# ----------------------------------------------------------------------------- densification
@njit(cache=True, fastmath=False, parallel=True)
def densify(I1, I2s, pu, pv, conf, u0, v0, ylo, yhi, xlo, xhi, eps, prior, uo, vo):  # pragma: no cover - compiled
    """search.densify's CPU path: each pixel's patches (rows ``ylo[y]..yhi[y]``, columns
    ``xlo[x]..xhi[x]`` of the grid) in the order NumPy's bincount adds them, in float64."""
    H, W = I1.shape
    wm = np.float32(W - 1)
    hm = np.float32(H - 1)
    for y in prange(H):
        fy = np.float32(y)
        for x in range(W):
            fx = np.float32(x)
            ws = 0.0
            su = 0.0
            sv = 0.0
            i1 = I1[y, x]
            for iy in range(ylo[y], yhi[y] + 1):
                for ix in range(xlo[x], xhi[x] + 1):
                    fu = pu[iy, ix]
                    fv = pv[iy, ix]
                    xs = min(max(fx + fu, _F0), wm)
                    ys = min(max(fy + fv, _F0), hm)
                    s = _bilin(I2s, 0, xs, ys, H, W)
                    w = conf[iy, ix] / max(abs(s - i1), eps)
                    ws += np.float64(w)
                    su += np.float64(w * fu)
                    sv += np.float64(w * fv)
            ws += prior
            su += np.float64(np.float32(prior) * u0[y, x])
            sv += np.float64(np.float32(prior) * v0[y, x])
            if ws > 1e-12:
                uo[y, x] = np.float32(su / ws)
                vo[y, x] = np.float32(sv / ws)
            else:
                uo[y, x] = u0[y, x]
                vo[y, x] = v0[y, x]


@njit(cache=True, fastmath=False, parallel=True)
def patch_setup(I1, gx, gy, oy, ox, P, T, Tx, Ty, a, b, c):  # pragma: no cover - compiled
    """search._Patches' arrays: each patch's mean-free template ``T``, gradients ``Tx``, ``Ty``
    (N, P * P) and the sums ``a, b, c`` of ``Tx Tx``, ``Tx Ty``, ``Ty Ty`` (NumPy's sums)."""
    Ny = oy.shape[0]
    Nx = ox.shape[0]
    n = P * P
    inv = np.float32(1.0 / n)
    for iy in prange(Ny):
        S = np.empty(n, np.float32)
        for ix in range(Nx):
            i = iy * Nx + ix
            for ky in range(P):
                for kx in range(P):
                    y = oy[iy] + ky
                    x = ox[ix] + kx
                    T[i, ky * P + kx] = I1[y, x]
                    Tx[i, ky * P + kx] = gx[y, x]
                    Ty[i, ky * P + kx] = gy[y, x]
            mean = _sum(T[i], n) * inv
            for q in range(n):
                T[i, q] = T[i, q] - mean
            for q in range(n):
                S[q] = Tx[i, q] * Tx[i, q]
            a[i] = _sum(S, n)
            for q in range(n):
                S[q] = Tx[i, q] * Ty[i, q]
            b[i] = _sum(S, n)
            for q in range(n):
                S[q] = Ty[i, q] * Ty[i, q]
            c[i] = _sum(S, n)

