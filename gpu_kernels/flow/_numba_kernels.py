"""Compiled (numba) twins of the flow's NumPy hot loops: the TV-L1 iterations, the TV-L1 warp
(linearised data term) and the patches' inverse search (integer search, propagation, Gauss-Newton).

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
def tv_iterate(u, v, p, gx, gy, rc, ginv, has_ginv, lt, theta, taut, iters):  # pragma: no cover - compiled
    """``iters`` TV-L1 iterations in place: :func:`gpu_kernels.flow.refine._iterate_np`."""
    H, W = u.shape
    inv = np.empty((H, W), np.float32)
    for y in prange(H):
        for x in range(W):
            g2 = gx[y, x] * gx[y, x] + gy[y, x] * gy[y, x]
            inv[y, x] = _F1 / g2 if g2 > np.float32(1e-10) else _F0
    nlt = -lt
    for _ in range(iters):
        # primal: reads p, writes u, v
        for y in prange(H):
            for x in range(W):
                t = gx[y, x] * u[y, x]
                t += gy[y, x] * v[y, x]
                t += rc[y, x]
                t *= inv[y, x]
                if t < nlt:
                    t = nlt
                elif t > lt:
                    t = lt
                d = p[0, y, x] + p[1, y, x]
                if x > 0:
                    d -= p[0, y, x - 1]
                if y > 0:
                    d -= p[1, y - 1, x]
                d *= theta
                d -= t * gx[y, x]
                u[y, x] += d
                d = p[2, y, x] + p[3, y, x]
                if x > 0:
                    d -= p[2, y, x - 1]
                if y > 0:
                    d -= p[3, y - 1, x]
                d *= theta
                d -= t * gy[y, x]
                v[y, x] += d
        # dual: reads u, v, writes p
        for y in prange(H):
            for x in range(W):
                for k in range(2):
                    f = u if k == 0 else v
                    fx = f[y, x + 1] - f[y, x] if x < W - 1 else _F0
                    fy = f[y + 1, x] - f[y, x] if y < H - 1 else _F0
                    nrm = fx * fx
                    nrm += fy * fy
                    nrm = np.sqrt(nrm)
                    if has_ginv:
                        nrm *= ginv[y, x]
                    nrm *= taut
                    nrm += _F1
                    fx *= taut
                    fy *= taut
                    a = p[2 * k, y, x] + fx
                    p[2 * k, y, x] = a / nrm
                    b = p[2 * k + 1, y, x] + fy
                    p[2 * k + 1, y, x] = b / nrm


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


@njit(cache=True, fastmath=False, parallel=True)
def tv_warp(I1, I2s, u, v, w, has_w, i1x, i1y, occ, gxy, rc):  # pragma: no cover - compiled
    """The linearised data term of one warp: :func:`gpu_kernels.flow.refine._warp_np` into
    ``gxy`` (2, H, W) and ``rc`` (H, W)."""
    H, W = I1.shape
    wm = np.float32(W - 1)
    hm = np.float32(H - 1)
    iocc = np.float32(1.0 / occ) if occ > 0 else _F0
    for y in prange(H):
        fy0 = np.float32(y)
        for x in range(W):
            xs = np.float32(x) + u[y, x]
            ys = fy0 + v[y, x]
            if not (xs >= 0 and ys >= 0 and xs <= wm and ys <= hm):
                gxy[0, y, x] = _F0
                gxy[1, y, x] = _F0
                rc[y, x] = _F0
                continue
            cx = min(max(xs, _F0), wm)
            cy = min(max(ys, _F0), hm)
            s0 = _bilin(I2s, 0, cx, cy, H, W)
            s1 = _bilin(I2s, 1, cx, cy, H, W)
            s2 = _bilin(I2s, 2, cx, cy, H, W)
            gx = _FH * (s1 + i1x[y, x])
            gy = _FH * (s2 + i1y[y, x])
            r0 = s0 - I1[y, x]
            r = r0 - gx * u[y, x] - gy * v[y, x]
            wt = w[y, x] if has_w else _F1
            use_w = has_w
            if occ > 0:
                z = r0 * iocc
                wt = wt / (_F1 + z * z)
                use_w = True
            if use_w:
                sw = np.sqrt(wt)
                gx = gx * sw
                gy = gy * sw
                r = r * sw
            gxy[0, y, x] = gx
            gxy[1, y, x] = gy
            rc[y, x] = r


# ----------------------------------------------------------------------------- patches
@njit(cache=True, fastmath=False, inline="always")
def _psum(a, n):  # pragma: no cover - compiled
    """NumPy's float32 sum of a contiguous row of ``n`` (8 <= n <= 128): eight running sums."""
    r0 = a[0]
    r1 = a[1]
    r2 = a[2]
    r3 = a[3]
    r4 = a[4]
    r5 = a[5]
    r6 = a[6]
    r7 = a[7]
    i = 8
    top = n - n % 8
    while i < top:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[i]
        i += 1
    return res


@njit(cache=True, fastmath=False, inline="always")
def _sum(a, n):  # pragma: no cover - compiled
    if n < 8:
        res = _F0
        for i in range(n):
            res += a[i]
        return res
    return _psum(a, n)


@njit(cache=True, fastmath=False)
def _cost(pad, T, oy, ox, P, m, u, v, X, Wv, S):  # pragma: no cover - compiled
    """search._Patches.cost for one patch (origin ``oy``, ``ox``; template ``T``) at ``(u, v)``:
    the SSD, with the residual in ``Wv`` (P * P); ``X`` (P + 1, P) and ``S`` (P * P) scratch."""
    n = P * P
    hmax = np.float32(pad.shape[0] - P - 1)
    wmax = np.float32(pad.shape[1] - P - 1)
    fu = np.floor(u)
    fv = np.floor(v)
    a = u - fu
    b = v - fv
    xf = ox + fu + np.float32(m)
    yf = oy + fv + np.float32(m)
    x0 = int(min(max(xf, _F0), wmax))
    y0 = int(min(max(yf, _F0), hmax))
    for k in range(P + 1):
        for j in range(P):
            b0 = pad[y0 + k, x0 + j]
            b1 = pad[y0 + k, x0 + j + 1]
            t = b1 - b0
            t *= a
            t += b0
            X[k, j] = t
    for k in range(P):
        for j in range(P):
            t = X[k + 1, j] - X[k, j]
            t *= b
            t += X[k, j]
            Wv[k * P + j] = t
    mean = _sum(Wv, n) * np.float32(1.0 / n)
    for i in range(n):
        Wv[i] -= mean
        Wv[i] -= T[i]
    for i in range(n):
        S[i] = Wv[i] * Wv[i]
    return _sum(S, n)


@njit(cache=True, fastmath=False, parallel=True)
def patch_costs(pad, T, oy_r, ox_r, P, m, u, v):  # pragma: no cover - compiled
    """The cost of every patch at ``(u, v)`` (search._Patches.cost(...)[0])."""
    N = u.shape[0]
    out = np.empty(N, np.float32)
    for i in prange(N):
        X = np.empty((P + 1, P), np.float32)
        Wv = np.empty(P * P, np.float32)
        S = np.empty(P * P, np.float32)
        out[i] = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, u[i], v[i], X, Wv, S)
    return out


@njit(cache=True, fastmath=False, parallel=True)
def patch_int_search(pad, T, oy_r, ox_r, P, m, u, v, cost, radius):  # pragma: no cover - compiled
    """coarse_match's integer search around ``(u, v)`` (in place, with ``cost``)."""
    N = u.shape[0]
    for i in prange(N):
        X = np.empty((P + 1, P), np.float32)
        Wv = np.empty(P * P, np.float32)
        S = np.empty(P * P, np.float32)
        bu = u[i]
        bv = v[i]
        cu0 = u[i]
        cv0 = v[i]
        c0 = cost[i]
        for dy in range(-radius, radius + 1):
            for dx in range(-radius, radius + 1):
                cu = bu + np.float32(dx)
                cv = bv + np.float32(dy)
                s = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, cu, cv, X, Wv, S)
                if s < c0:
                    cu0, cv0, c0 = cu, cv, s
        u[i] = cu0
        v[i] = cv0
        cost[i] = c0


@njit(cache=True, fastmath=False, parallel=True)
def patch_round(pad, T, Tx, Ty, oy_r, ox_r, P, m, u, v, cost, Ny, Nx, propagate, per, a, b, c, det,
                uo, vo, co):  # pragma: no cover - compiled
    """One round of coarse_match: the four grid neighbours' flows (``propagate``), then ``per``
    Gauss-Newton steps keeping the lowest cost; reads ``u, v, cost``, writes ``uo, vo, co``."""
    N = u.shape[0]
    n = P * P
    for i in prange(N):
        X = np.empty((P + 1, P), np.float32)
        Wv = np.empty(P * P, np.float32)
        S = np.empty(P * P, np.float32)
        bu = u[i]
        bv = v[i]
        bc = cost[i]
        if propagate:
            ii = np.int64(i)
            iy = ii // Nx
            ix = ii - iy * Nx
            for k in range(4):
                j = ii
                if k == 0 and ix < Nx - 1:
                    j = ii + 1
                elif k == 1 and ix > 0:
                    j = ii - 1
                elif k == 2 and iy < Ny - 1:
                    j = ii + Nx
                elif k == 3 and iy > 0:
                    j = ii - Nx
                s = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, u[j], v[j], X, Wv, S)
                if s < bc:
                    bu, bv, bc = u[j], v[j], s
        uu = bu
        vv = bv
        for it in range(per + 1):
            s = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, uu, vv, X, Wv, S)
            if s < bc:
                bu, bv, bc = uu, vv, s
            if it == per:
                break
            for q in range(n):
                S[q] = Tx[i, q] * Wv[q]
            ex = _sum(S, n)
            for q in range(n):
                S[q] = Ty[i, q] * Wv[q]
            ey = _sum(S, n)
            uu = uu - (c[i] * ex - b[i] * ey) / det[i]
            vv = vv - (a[i] * ey - b[i] * ex) / det[i]
        uo[i] = bu
        vo[i] = bv
        co[i] = bc
