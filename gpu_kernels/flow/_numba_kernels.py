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
@njit(cache=True, fastmath=False)
def _tv_band(u, v, p, gx, gy, rc, ginv, has_ginv, lt, theta, taut, iters):  # pragma: no cover - compiled
    """``iters`` TV-L1 iterations in place over the rows given (serial). Where these are a band of
    the image, its first and last rows are wrong after an iteration, and the error moves one row
    further in each iteration: :func:`tv_iterate` keeps only rows ``iters`` away from such edges."""
    H, W = u.shape
    inv = np.empty((H, W), np.float32)
    for y in range(H):
        for x in range(W):
            g2 = gx[y, x] * gx[y, x] + gy[y, x] * gy[y, x]
            inv[y, x] = _F1 / g2 if g2 > np.float32(1e-10) else _F0
    nlt = -lt
    for _ in range(iters):
        # primal: reads p, writes u, v
        for y in range(H):
            up = y > 0
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
                if up:
                    d -= p[1, y - 1, x]
                d *= theta
                d -= t * gx[y, x]
                u[y, x] += d
                d = p[2, y, x] + p[3, y, x]
                if x > 0:
                    d -= p[2, y, x - 1]
                if up:
                    d -= p[3, y - 1, x]
                d *= theta
                d -= t * gy[y, x]
                v[y, x] += d
        # dual: reads u, v, writes p
        for y in range(H):
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


@njit(cache=True, fastmath=False, parallel=True)
def tv_iterate(u, v, p, gx, gy, rc, ginv, has_ginv, lt, theta, taut, iters, bands):  # pragma: no cover
    """``iters`` TV-L1 iterations in place: :func:`gpu_kernels.flow.refine._iterate_np`, the rows
    split into ``bands`` bands that run in parallel, each with ``iters`` rows of its neighbours'
    recomputed (temporal blocking, as the GPU's tv_iterate_tile): one parallel region a call
    rather than two an iteration (a barrier per iteration stalls when the cores are shared)."""
    H, W = u.shape
    if bands <= 1:
        _tv_band(u, v, p, gx, gy, rc, ginv, has_ginv, lt, theta, taut, iters)
        return
    for bnd in prange(bands):
        r0 = (bnd * H) // bands
        r1 = ((bnd + 1) * H) // bands
        a0 = max(0, r0 - iters)
        a1 = min(H, r1 + iters)
        lu = u[a0:a1].copy()
        lv = v[a0:a1].copy()
        lp = p[:, a0:a1].copy()
        _tv_band(lu, lv, lp, gx[a0:a1], gy[a0:a1], rc[a0:a1], ginv[a0:a1], has_ginv, lt, theta,
                 taut, iters)
        u[r0:r1] = lu[r0 - a0:r1 - a0]
        v[r0:r1] = lv[r0 - a0:r1 - a0]
        p[:, r0:r1] = lp[:, r0 - a0:r1 - a0]


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
    the SSD, with the residual in ``Wv`` (P * P); ``X`` (2, P) and ``S`` (P * P) scratch. The x
    lerp of each window row once, then the y lerp: the float operations of the NumPy path, in its
    order."""
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
    for j in range(P):
        b0 = pad[y0, x0 + j]
        t = pad[y0, x0 + j + 1] - b0
        t *= a
        t += b0
        X[0, j] = t
    cur = 1
    for k in range(P):
        for j in range(P):
            b0 = pad[y0 + k + 1, x0 + j]
            t = pad[y0 + k + 1, x0 + j + 1] - b0
            t *= a
            t += b0
            X[cur, j] = t
            top = X[1 - cur, j]
            w = t - top
            w *= b
            w += top
            Wv[k * P + j] = w
        cur = 1 - cur
    mean = _sum(Wv, n) * np.float32(1.0 / n)
    for i in range(n):
        w = Wv[i] - mean
        w -= T[i]
        Wv[i] = w
        S[i] = w * w
    return _sum(S, n)


@njit(cache=True, fastmath=False)
def _chunk(N, nch, c):  # pragma: no cover - compiled
    return (c * N) // nch, ((c + 1) * N) // nch


@njit(cache=True, fastmath=False, parallel=True)
def patch_costs(pad, T, oy_r, ox_r, P, m, u, v, R):  # pragma: no cover - compiled
    """The cost of every patch at ``(u, v)`` (search._Patches.cost), residuals into ``R``."""
    N = u.shape[0]
    out = np.empty(N, np.float32)
    nch = min(N, 256)
    for ch in prange(nch):
        X = np.empty((2, P), np.float32)
        S = np.empty(P * P, np.float32)
        lo, hi = _chunk(N, nch, ch)
        for i in range(lo, hi):
            out[i] = _cost(pad, T[i], oy_r[i], ox_r[i], P, m, u[i], v[i], X, R[i], S)
    return out


@njit(cache=True, fastmath=False, parallel=True)
def patch_int_search(pad, T, oy_r, ox_r, P, m, u, v, cost, radius, R):  # pragma: no cover - compiled
    """coarse_match's integer search around ``(u, v)`` (in place, with ``cost`` and the residuals ``R``)."""
    N = u.shape[0]
    n = P * P
    nch = min(N, 256)
    for ch in prange(nch):
        X = np.empty((2, P), np.float32)
        Wv = np.empty(n, np.float32)
        S = np.empty(n, np.float32)
        lo, hi = _chunk(N, nch, ch)
        for i in range(lo, hi):
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
        X = np.empty((2, P), np.float32)
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
                for q in range(n):
                    S[q] = Tx[i, q] * r[q]
                ex = _sum(S, n)
                for q in range(n):
                    S[q] = Ty[i, q] * r[q]
                ey = _sum(S, n)
                uu = uu - (c[i] * ex - b[i] * ey) / det[i]
                vv = vv - (a[i] * ey - b[i] * ex) / det[i]
            uo[i] = bu
            vo[i] = bv
            co[i] = bc
            Ro[i, :] = Rb
