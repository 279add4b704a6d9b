"""NumPy/SciPy implementations of the motion estimator's building blocks.

Each function computes exactly what its CUDA counterpart in ``_gpu.py`` computes (the
kernels in ``gpu_kernels/cuda/echo_*.cu``); the GPU tests compare the two. Arrays are
float32, C-contiguous, indexed [z, y, x]; fields are (3, Z, Y, X) with component i along
array axis i.

Conventions shared with the kernels:

* Borders are replicated ("nearest"): a read outside the volume reads the nearest voxel.
* Derivatives are zero on the border voxels where the stencil would leave the volume.
* The structure tensor ``T`` has 9 channels: J00, J11, J22, J01, J02, J12, b0, b1, b2 with
  ``J = grad I grad I^T`` and ``b = grad I * It``; :func:`finish` replaces the first six by
  the inverse of the per-voxel 3x3 system matrix and the last three by the right-hand side.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

__all__ = [
    "gaussian_kernel1d",
    "gaussian",
    "derivatives",
    "tensor",
    "smooth_channels",
    "finish",
    "rhs",
    "system_inverse",
    "to_half",
    "sweep",
    "resample",
    "warp",
]

#: Gaussian kernels are truncated at TRUNCATE standard deviations (as scipy.ndimage)
TRUNCATE = 3.0
#: longest Gaussian the GPU keeps in constant memory (radius)
MAX_RADIUS = 64


def gaussian_kernel1d(sigma: float) -> np.ndarray:
    """Normalised 1-D Gaussian weights, radius ``int(TRUNCATE * sigma + 0.5)`` (scipy's rule)."""
    r = int(TRUNCATE * float(sigma) + 0.5)
    r = min(r, MAX_RADIUS)
    x = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-0.5 * (x / float(sigma)) ** 2)
    return (w / w.sum()).astype(np.float32)


def gaussian(vol: np.ndarray, sigma, *, out=None) -> np.ndarray:
    """Separable Gaussian (z, then y, then x passes), border replicated. ``sigma`` per axis."""
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (3,))
    res = np.array(vol, dtype=np.float32, copy=True) if out is None else out
    if out is not None and out is not vol:
        res[...] = vol
    for ax in (0, 1, 2):
        if sig[ax] > 0:
            w = gaussian_kernel1d(sig[ax]).astype(np.float64)
            ndi.correlate1d(res, w, axis=ax, output=res, mode="nearest")
    return res


def derivatives(vol: np.ndarray, kind: str = "central") -> np.ndarray:
    """(3, Z, Y, X) spatial derivatives along z, y, x, zero on the border voxels.

    ``forward``: ``I(p + e) - I(p)``, zero on the last voxel of the axis;
    ``central``: ``(I(p + e) - I(p - e)) / 2``, zero on the first and last voxels.
    """
    g = np.zeros((3,) + vol.shape, dtype=np.float32)
    for ax in range(3):
        n = vol.shape[ax]
        if n < 2:
            continue
        sl = [slice(None)] * 3
        if kind == "forward":
            a, b, c = list(sl), list(sl), list(sl)
            a[ax] = slice(0, n - 1)
            b[ax] = slice(1, n)
            g[ax][tuple(a)] = vol[tuple(b)] - vol[tuple(a)]
        else:
            if n < 3:
                continue
            a, b, c = list(sl), list(sl), list(sl)
            a[ax] = slice(1, n - 1)
            b[ax] = slice(2, n)
            c[ax] = slice(0, n - 2)
            g[ax][tuple(a)] = 0.5 * (vol[tuple(b)] - vol[tuple(c)])
    return g


def _grid(shape):
    return np.meshgrid(*[np.arange(n, dtype=np.float32) for n in shape], indexing="ij", sparse=True)


def warp(vol: np.ndarray, u: np.ndarray | None) -> np.ndarray:
    """``vol(x + u(x))`` by trilinear interpolation, coordinates clamped to the volume."""
    if u is None:
        return np.array(vol, dtype=np.float32, copy=True)
    g = _grid(vol.shape)
    coords = [np.clip(g[i] + u[i], 0, vol.shape[i] - 1) for i in range(3)]
    return ndi.map_coordinates(vol, coords, order=1, mode="nearest", prefilter=False).astype(np.float32)


def resample(vol: np.ndarray, out_shape, scale, offset) -> np.ndarray:
    """``out[i] = vol(scale * i + offset)`` per axis, trilinear, coordinates clamped."""
    g = _grid(out_shape)
    coords = [np.clip(g[i] * np.float32(scale[i]) + np.float32(offset[i]), 0, vol.shape[i] - 1)
              for i in range(3)]
    coords = np.broadcast_arrays(*coords)
    return ndi.map_coordinates(vol, coords, order=1, mode="nearest", prefilter=False).astype(np.float32)


def tensor(fixed: np.ndarray, moving: np.ndarray, u0: np.ndarray | None, kind: str = "central",
           parts: int = 3) -> np.ndarray:
    """The unsmoothed channels of the structure tensor at the linearisation point ``u0``.

    ``grad`` is the derivative of ``fixed`` (:func:`derivatives`), ``It = moving(x + u0) - fixed``.
    ``parts``: 1 the six spatial products ``J`` (independent of ``moving`` and ``u0``), 2 the
    three data products ``b``, 3 all nine (J then b).
    """
    g = derivatives(fixed, kind)
    n = (6 if parts & 1 else 0) + (3 if parts & 2 else 0)
    T = np.empty((n,) + fixed.shape, dtype=np.float32)
    c = 0
    if parts & 1:
        T[0] = g[0] * g[0]
        T[1] = g[1] * g[1]
        T[2] = g[2] * g[2]
        T[3] = g[0] * g[1]
        T[4] = g[0] * g[2]
        T[5] = g[1] * g[2]
        c = 6
    if parts & 2:
        it = warp(moving, u0) - fixed
        T[c] = g[0] * it
        T[c + 1] = g[1] * it
        T[c + 2] = g[2] * it
    return T


def smooth_channels(T: np.ndarray, rho) -> np.ndarray:
    """Gaussian ``K_rho`` on every channel of ``T`` in place."""
    if np.any(np.asarray(rho) > 0):
        for c in range(T.shape[0]):
            gaussian(T[c], rho, out=T[c])
    return T


def neighbour_counts(shape) -> np.ndarray:
    """(3, Z, Y, X) number of in-volume neighbours of each voxel along each axis (0, 1 or 2)."""
    n = np.zeros((3,) + tuple(shape), dtype=np.float32)
    for ax in range(3):
        idx = np.arange(shape[ax])
        c = (idx > 0).astype(np.float32) + (idx < shape[ax] - 1).astype(np.float32)
        sh = [1, 1, 1]
        sh[ax] = -1
        n[ax] = c.reshape(sh)
    return n


def mixed_weights(shape):
    """Per axis, the weights ``g(d)`` and ``h(d)``, d = -1, 0, 1, of the mixed-derivative stencil.

    The cross terms ``2 d_i u_i d_k u_k`` of ``(div u)^2`` are discretised on plaquettes (the
    2x2 cells of the (i, k) plane that lie inside the volume): each plaquette multiplies the
    mean forward difference of ``u_i`` along its two i-edges by that of ``u_k``. The Euler-
    Lagrange term for ``u_i`` at p is then ``beta/4 sum_{a,b} g_i(a) h_k(b) u_k(p + a e_i + b e_k)``
    with ``g(-1) = [p >= 1]``, ``g(0) = [p >= 1] - [p <= n - 2]``, ``g(1) = -[p <= n - 2]`` and
    ``h(d) = -g(d)`` for d != 0, ``h(0) = g(0)``. Inside the volume this is exactly the central
    mixed difference; at the border it is the energy's natural boundary condition, which
    keeps the system symmetric (so Gauss-Seidel/SOR converge for any omega in (0, 2)).
    Each weight is an array broadcastable along its axis.
    """
    out = []
    for ax in range(3):
        n = shape[ax]
        idx = np.arange(n)
        lo = (idx >= 1).astype(np.float32)
        hi = (idx <= n - 2).astype(np.float32)
        sh = [1, 1, 1]
        sh[ax] = -1
        g = [lo.reshape(sh), (lo - hi).reshape(sh), (-hi).reshape(sh)]
        h = [(-lo).reshape(sh), (lo - hi).reshape(sh), hi.reshape(sh)]
        out.append((g, h))
    return out


def finish(T: np.ndarray, u0: np.ndarray | None, alpha: float, beta: float) -> np.ndarray:
    """Turn the smoothed tensor into the per-voxel system: in place.

    The Euler-Lagrange equations of ``w^T J w + alpha |grad u|^2 + beta (div u)^2`` for the
    total field ``u`` (linearised at ``u0``) read at each voxel p::

        (J + diag(alpha n + beta n_i)) u(p) = alpha S(p) + beta A(p) + beta M(p) - (b - J u0)

    with ``n`` the in-volume neighbours, ``n_i`` those along axis i, S/A/M the neighbour
    sums of the Laplacian, the axis-i second difference and the mixed derivatives. Channels
    0..5 become the inverse of ``K = J + diag(...)`` (symmetric: K00, K11, K22, K01, K02,
    K12 of the inverse), channels 6..8 the right-hand side ``-(b - J u0)``. The two halves
    are :func:`system_inverse` (J alone: once per pyramid level) and :func:`rhs` (per warp).
    """
    J = T[:6].copy()
    rhs(J, T[6:9], u0, T)
    return system_inverse(J, alpha, beta, T)


def rhs(J: np.ndarray, B: np.ndarray, u0: np.ndarray | None, out: np.ndarray) -> np.ndarray:
    """``out[6:9] = -(b - J u0)`` from the spatial tensor ``J`` (6) and ``B`` = b (3)."""
    J00, J11, J22, J01, J02, J12 = (J[k] for k in range(6))
    for i, (a, b, c) in enumerate(((J00, J01, J02), (J01, J11, J12), (J02, J12, J22))):
        r = B[i] - (a * u0[0] + b * u0[1] + c * u0[2]) if u0 is not None else np.array(B[i], dtype=np.float32)
        out[6 + i] = -r
    return out


def system_inverse(J: np.ndarray, alpha: float, beta: float, out: np.ndarray) -> np.ndarray:
    """``out[0:6]``: the inverse of the per-voxel matrix ``K = J + diag(alpha n + beta n_i)`` (see
    :func:`finish`) from the spatial tensor ``J`` (6 channels)."""
    cnt = neighbour_counts(J.shape[1:])
    ntot = cnt[0] + cnt[1] + cnt[2]
    J00, J11, J22, J01, J02, J12 = (J[k].astype(np.float32) for k in range(6))
    a = J00 + np.float32(alpha) * ntot + np.float32(beta) * cnt[0]
    b = J11 + np.float32(alpha) * ntot + np.float32(beta) * cnt[1]
    c = J22 + np.float32(alpha) * ntot + np.float32(beta) * cnt[2]
    # the mixed terms couple the components of one voxel on the volume's edges
    w0 = mixed_weights(J.shape[1:])
    g0 = [w0[ax][0][1] for ax in range(3)]
    q = np.float32(0.25 * beta)
    d = J01 + q * g0[0] * g0[1]
    e = J02 + q * g0[0] * g0[2]
    f = J12 + q * g0[1] * g0[2]
    A00 = b * c - f * f
    A01 = e * f - d * c
    A02 = d * f - b * e
    A11 = a * c - e * e
    A12 = d * e - a * f
    A22 = a * b - d * d
    inv = np.float32(1.0) / (a * A00 + d * A01 + e * A02)
    out[0] = A00 * inv
    out[1] = A11 * inv
    out[2] = A22 * inv
    out[3] = A01 * inv
    out[4] = A02 * inv
    out[5] = A12 * inv
    return out


def to_half(a: np.ndarray) -> np.ndarray:
    """Round ``a`` in place to IEEE half precision (clamped to +-65504), as the GPU stores a
    half-precision system (``cvt.rn.f16.f32``: round to nearest even)."""
    np.clip(a, -65504.0, 65504.0, out=a)
    a[...] = a.astype(np.float16)
    return a


def colours(shape) -> np.ndarray:
    """The 4-colouring ``((x + z) % 2) + 2 ((y + z) % 2)`` of the voxels.

    The relaxation stencil couples a voxel to its 6 axis neighbours and its 12 in-plane
    diagonal neighbours (the mixed derivatives). Red-black (``(x + y + z) % 2``) leaves the
    diagonal neighbours in the same colour, so a red-black sweep would read voxels it is
    writing. In this colouring no two coupled voxels share a colour (4 is the fewest
    possible: a voxel and three mutually coupled neighbours form a 4-clique), so each colour
    is updated in place, in parallel, and four passes make one exact (block) Gauss-Seidel
    sweep.
    """
    z, y, x = np.ogrid[: shape[0], : shape[1], : shape[2]]
    return (((x + z) & 1) + 2 * ((y + z) & 1)).astype(np.int8)


def sweep(T, src, dst, colour: int, omega: float, alpha: float, beta: float,
          stats: np.ndarray | None = None, _cache: dict | None = None) -> None:
    """One relaxation pass of the coupled 3x3 point solver.

    ``colour < 0`` (Jacobi): every voxel of ``dst`` from ``src`` (two different arrays).
    ``colour`` in 0..3 (SOR): the voxels of that colour (:func:`colours`) in place
    (``src is dst``). ``new = old + omega (v - old)`` with ``v`` the exact solution of the
    voxel's 3x3 system with its neighbours fixed. ``stats`` (1 value) accumulates the sum
    of ``|v - old|^2`` over the updated voxels.
    """
    shape = src.shape[1:]
    U = src
    if colour < 0:
        sel = None
    else:
        col = colours(shape) if _cache is None else _cache.setdefault("col", colours(shape))
        sel = col == colour
    cnt = neighbour_counts(shape) if _cache is None else _cache.setdefault("cnt", neighbour_counts(shape))
    wts = mixed_weights(shape) if _cache is None else _cache.setdefault("wts", mixed_weights(shape))
    ntot = cnt[0] + cnt[1] + cnt[2]
    P = np.pad(U, ((0, 0), (1, 1), (1, 1), (1, 1)), mode="edge")
    Z, Y, X = shape

    def at(c, dz, dy, dx):
        return P[c, 1 + dz:1 + dz + Z, 1 + dy:1 + dy + Y, 1 + dx:1 + dx + X]

    offs = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    rhs = []
    for i in range(3):
        ui = U[i]
        s6 = np.zeros(shape, dtype=np.float32)
        ax = np.zeros(shape, dtype=np.float32)
        for a in range(3):
            dm = tuple(-o for o in offs[a])
            pair = at(i, *offs[a]) + at(i, *dm)
            s6 += pair
            if a == i:
                ax = pair
        S = s6 - (6.0 - ntot) * ui
        A = ax - (2.0 - cnt[i]) * ui
        M = np.zeros(shape, dtype=np.float32)
        for k in range(3):
            if k == i:
                continue
            gi, hk = wts[i][0], wts[k][1]
            for a in (-1, 0, 1):
                for b in (-1, 0, 1):
                    if a == 0 and b == 0:
                        continue
                    off = [0, 0, 0]
                    off[i] += a
                    off[k] += b
                    M -= 0.25 * (gi[a + 1] * hk[b + 1]) * at(k, *off)
        rhs.append(np.float32(alpha) * S + np.float32(beta) * (A + M) + T[6 + i])
    r0, r1, r2 = rhs
    v0 = T[0] * r0 + T[3] * r1 + T[4] * r2
    v1 = T[3] * r0 + T[1] * r1 + T[5] * r2
    v2 = T[4] * r0 + T[5] * r1 + T[2] * r2
    v = np.stack([v0, v1, v2])
    old = U
    new = old + np.float32(omega) * (v - old)
    if stats is not None:
        d2 = ((v - old) ** 2).sum(axis=0)
        stats[0] += float(d2.sum(dtype=np.float64) if sel is None else d2[sel].sum(dtype=np.float64))
    if sel is None:
        dst[...] = new
    else:
        np.copyto(dst, new, where=sel[None])


__all__ += ["colours", "mixed_weights", "neighbour_counts"]
