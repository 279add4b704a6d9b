"""Maps derived from a displacement field, field composition, and evaluation metrics.

A field ``u`` is (3, Z, Y, X) in voxels along the array axes (z, y, x). Spatial derivatives
are central differences inside the volume and one-sided on its faces (``numpy.gradient``),
taken per voxel, so the Jacobian determinant and the divergence do not depend on the voxel
size; magnitudes and endpoint errors can be given in mm with ``spacing``.

Every function takes NumPy or CuPy arrays and returns the same kind.

Example
-------
>>> import numpy as np
>>> u = np.zeros((3, 8, 8, 8), np.float32)
>>> u[2] = 0.1 * np.arange(8)              # x-displacement growing along x: stretch by 10 %
>>> round(float(jacobian_determinant(u)[4, 4, 4]), 3)
1.1
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import array_module, asnumpy, get_backend
from gpu_kernels.echo.errors import EchoInputError

__all__ = [
    "displacement_gradient",
    "jacobian_determinant",
    "divergence",
    "magnitude",
    "warp_volume",
    "compose",
    "endpoint_error",
    "ncc",
    "mean_squared_difference",
    "check_field",
]


def check_field(u, shape=None, name: str = "displacement field"):
    """Raise :class:`EchoInputError` unless ``u`` is a finite (3, Z, Y, X) field (of ``shape``)."""
    s = getattr(u, "shape", None)
    if s is None or len(s) != 4 or s[0] != 3:
        raise EchoInputError(f"the {name} must have shape (3, Z, Y, X), got {tuple(s) if s is not None else type(u).__name__}")
    if shape is not None and tuple(s[1:]) != tuple(shape):
        raise EchoInputError(f"the {name} is {tuple(s[1:])} voxels but the volume is {tuple(shape)}")
    xp = array_module(u)
    if not bool(xp.isfinite(u).all()):
        raise EchoInputError(f"the {name} contains NaN or infinite values")


def _xp(u):
    return array_module(u)


def displacement_gradient(u):
    """(3, 3, Z, Y, X) with ``[i, j] = d u_i / d x_j`` (per voxel)."""
    xp = _xp(u)
    g = xp.empty((3, 3) + tuple(u.shape[1:]), dtype=xp.float32)
    for i in range(3):
        gi = xp.gradient(u[i].astype(xp.float32))
        for j in range(3):
            g[i, j] = gi[j]
    return g


def jacobian_determinant(u):
    """``det(I + grad u)`` per voxel: > 1 where the tissue expands, < 1 where it compresses."""
    g = displacement_gradient(u)
    a, b, c = 1 + g[0, 0], g[0, 1], g[0, 2]
    d, e, f = g[1, 0], 1 + g[1, 1], g[1, 2]
    p, q, r = g[2, 0], g[2, 1], 1 + g[2, 2]
    return (a * (e * r - f * q) - b * (d * r - f * p) + c * (d * q - e * p)).astype(g.dtype)


def divergence(u):
    """``div u`` per voxel (the first-order volume change)."""
    xp = _xp(u)
    out = xp.zeros(u.shape[1:], dtype=xp.float32)
    for i in range(3):
        out += xp.gradient(u[i].astype(xp.float32), axis=i)
    return out


def magnitude(u, spacing=None):
    """``|u|`` per voxel, in voxels, or in mm when ``spacing`` (z, y, x) is given."""
    xp = _xp(u)
    sp = (1.0, 1.0, 1.0) if spacing is None else tuple(float(s) for s in spacing)
    return xp.sqrt(sum((u[i].astype(xp.float32) * sp[i]) ** 2 for i in range(3))).astype(xp.float32)


def warp_volume(moving, u, *, device=None):
    """``moving(x + u(x))`` by trilinear interpolation (coordinates clamped): the moving
    volume resampled onto the fixed grid, which matches the fixed volume when ``u`` is right."""
    from gpu_kernels.echo.motion import _ops_for

    be = get_backend(device) if device is not None else get_backend("cuda" if _xp(moving) is not np else "cpu")
    xp = be.xp
    with be.activate():
        m = xp.asarray(moving, dtype=xp.float32)
        if m.ndim != 3:
            raise EchoInputError(f"the moving volume must be 3-D, got shape {tuple(m.shape)}")
        uu = xp.asarray(u, dtype=xp.float32)
        check_field(uu, m.shape)
        return _ops_for(be, "cache").warp(xp.ascontiguousarray(m), xp.ascontiguousarray(uu))


def compose(first, second, *, device=None):
    """The field of "``first``, then ``second``": ``c(x) = first(x) + second(x + first(x))``.

    With ``first`` from frame a to b and ``second`` from b to c (both in the convention
    ``moving(x + u(x)) = fixed(x)``), the result goes from a to c.
    """
    from gpu_kernels.echo.motion import _ops_for

    be = get_backend(device) if device is not None else get_backend("cuda" if _xp(first) is not np else "cpu")
    xp = be.xp
    with be.activate():
        a = xp.ascontiguousarray(xp.asarray(first, dtype=xp.float32))
        b = xp.ascontiguousarray(xp.asarray(second, dtype=xp.float32))
        check_field(a)
        check_field(b, a.shape[1:])
        ops = _ops_for(be, "cache")
        out = xp.empty_like(a)
        for i in range(3):
            out[i] = a[i] + ops.warp(xp.ascontiguousarray(b[i]), a)
        return out


def endpoint_error(u, gt, *, mask=None, spacing=None) -> dict:
    """Endpoint error statistics of ``u`` against ``gt`` (plain floats, on the host).

    Returns ``mean``, ``p95``, ``max`` in voxels, ``mean_mm`` and ``p95_mm`` (voxel size
    ``spacing``, 1 mm when not given) and ``voxels`` (how many were compared).
    """
    u = asnumpy(u).astype(np.float32)
    gt = asnumpy(gt).astype(np.float32)
    check_field(u)
    check_field(gt, u.shape[1:], name="ground-truth field")
    d = u - gt
    e = np.sqrt((d ** 2).sum(axis=0))
    sp = np.asarray((1.0, 1.0, 1.0) if spacing is None else spacing, dtype=np.float32).reshape(3, 1, 1, 1)
    emm = np.sqrt(((d * sp) ** 2).sum(axis=0))
    if mask is not None:
        m = asnumpy(mask).astype(bool)
        if m.shape != e.shape:
            raise EchoInputError(f"the mask is {m.shape} voxels but the field is {e.shape}")
        e, emm = e[m], emm[m]
    if e.size == 0:
        raise EchoInputError("the mask selects no voxels")
    return {
        "mean": float(e.mean()),
        "p95": float(np.percentile(e, 95)),
        "max": float(e.max()),
        "mean_mm": float(emm.mean()),
        "p95_mm": float(np.percentile(emm, 95)),
        "voxels": int(e.size),
    }


def ncc(a, b, mask=None) -> float:
    """Normalised cross-correlation of two volumes (inside ``mask``)."""
    a = asnumpy(a).astype(np.float64)
    b = asnumpy(b).astype(np.float64)
    if mask is not None:
        m = asnumpy(mask).astype(bool)
        a, b = a[m], b[m]
    a = a - a.mean()
    b = b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den > 0 else 0.0


def mean_squared_difference(a, b, mask=None) -> float:
    """Mean squared difference of two volumes (inside ``mask``)."""
    a = asnumpy(a).astype(np.float64)
    b = asnumpy(b).astype(np.float64)
    d = (a - b) ** 2
    if mask is not None:
        d = d[asnumpy(mask).astype(bool)]
    return float(d.mean())
