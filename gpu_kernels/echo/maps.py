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
    "invert",
    "endpoint_error",
    "pair_metrics",
    "motion_stats",
    "SUMMARY_GRID",
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


#: the most fixed-point steps of :func:`invert`, and the largest change (voxels) of a step
#: that ends it earlier (the error shrinks like |grad u|^n: a cardiac pair field is inverted
#: to that tolerance in 5-10 steps)
INVERT_ITERS = 30
INVERT_TOL = 1e-4
#: on the GPU the host reads the convergence flag of invert only every this many steps
_INVERT_SYNC = 8


def _read_flag(done) -> bool:
    """The host's read of a device flag (one synchronisation)."""
    return bool(done)


def invert(u, *, iters: int = INVERT_ITERS, tol: float = INVERT_TOL, device=None):
    """The inverse field of ``u``: ``v(y) = -u(y + v(y))``, so that ``compose(u, v)`` and
    ``compose(v, u)`` are (nearly) zero.

    With ``u`` from frame a to b (``b(x + u(x)) = a(x)``), ``v`` goes from b to a, on b's
    grid. Fixed-point iteration from ``v = -u`` (trilinear, coordinates clamped to the volume
    as in :func:`warp_volume`) until no voxel moves by more than ``tol`` or after ``iters``
    steps; it converges where ``|grad u| < 1``, which any invertible small-deformation field
    meets.

    Example
    -------
    >>> u = np.zeros((3, 16, 16, 16), np.float32)
    >>> u[2] = 0.5                                   # half a voxel along x
    >>> v = invert(u)
    >>> round(float(v[2, 8, 8, 8]), 3)
    -0.5
    """
    from gpu_kernels.echo.motion import _ops_for

    be = get_backend(device) if device is not None else get_backend("cuda" if _xp(u) is not np else "cpu")
    xp = be.xp
    if int(iters) < 1:
        raise EchoInputError(f"iters must be at least 1, got {iters}")
    with be.activate():
        a = xp.ascontiguousarray(xp.asarray(u, dtype=xp.float32))
        check_field(a)
        if be.is_gpu:
            ops = _ops_for(be, "cache")
            chans = [xp.ascontiguousarray(a[i]) for i in range(3)]

            def step(v):
                out = xp.empty_like(v)
                for i in range(3):
                    out[i] = ops.warp(chans[i], v)
                return out
        else:  # the coordinates once for the three channels (what _cpu.warp does per channel)
            from scipy import ndimage as ndi

            from gpu_kernels.echo._cpu import _grid

            g = _grid(a.shape[1:])

            def step(v):
                coords = [np.clip(g[i] + v[i], 0, a.shape[1 + i] - 1) for i in range(3)]
                out = np.empty_like(v)
                for i in range(3):
                    ndi.map_coordinates(a[i], coords, order=1, mode="nearest", prefilter=False, output=out[i])
                return out
        v = -a
        if be.is_gpu:
            # no host round trip per step: the test is made on the device, and a step after
            # convergence leaves v as it is (the same result as stopping there); the host
            # looks at the flag every _INVERT_SYNC steps
            done = xp.zeros((), dtype=xp.bool_)
            for it in range(int(iters)):
                nxt = step(v)
                xp.negative(nxt, out=nxt)
                change = xp.abs(nxt - v).max()
                v = xp.where(done, v, nxt)
                done |= change <= tol
                if (it + 1) % _INVERT_SYNC == 0 and it + 1 < int(iters) and _read_flag(done):
                    break
            return v
        for _ in range(int(iters)):
            nxt = step(v)
            xp.negative(nxt, out=nxt)
            change = float(xp.abs(nxt - v).max())
            v = nxt
            if change <= tol:
                break
        return v


def endpoint_error(u, gt, *, mask=None, spacing=None) -> dict:
    """Endpoint error statistics of ``u`` against ``gt`` (plain floats), computed where ``u``
    lives (NumPy on the host, CuPy on its GPU).

    Returns ``mean``, ``p95``, ``max`` in voxels, ``mean_mm`` and ``p95_mm`` (voxel size
    ``spacing``, 1 mm when not given) and ``voxels`` (how many were compared).
    """
    xp = _xp(u)
    u = xp.asarray(u).astype(xp.float32)
    gt = xp.asarray(gt).astype(xp.float32)
    check_field(u)
    check_field(gt, u.shape[1:], name="ground-truth field")
    d = u - gt
    e = xp.sqrt((d ** 2).sum(axis=0))
    sp = xp.asarray((1.0, 1.0, 1.0) if spacing is None else spacing, dtype=xp.float32).reshape(3, 1, 1, 1)
    emm = xp.sqrt(((d * sp) ** 2).sum(axis=0))
    if mask is not None:
        m = xp.asarray(mask).astype(bool)
        if m.shape != e.shape:
            raise EchoInputError(f"the mask is {m.shape} voxels but the field is {e.shape}")
        e, emm = e[m], emm[m]
    if e.size == 0:
        raise EchoInputError("the mask selects no voxels")
    return {
        "mean": float(e.mean()),
        "p95": float(xp.percentile(e, 95)),
        "max": float(e.max()),
        "mean_mm": float(emm.mean()),
        "p95_mm": float(xp.percentile(emm, 95)),
        "voxels": int(e.size),
    }


def pair_metrics(u, gt, mask=None, spacing=None, *, device=None) -> dict:
    """EPE (mean, 95th percentile; voxels and mm) and, inside ``mask``, the mean absolute
    error of the Jacobian determinant, computed on ``device`` (the host by default)."""
    be = get_backend(device) if device is not None else get_backend("cpu")
    xp = be.xp
    with be.activate():
        u, gt = xp.asarray(u, dtype=xp.float32), xp.asarray(gt, dtype=xp.float32)
        e = endpoint_error(u, gt, spacing=spacing)
        out = {"epe_mean": e["mean"], "epe_p95": e["p95"], "epe_mean_mm": e["mean_mm"], "epe_p95_mm": e["p95_mm"]}
        if mask is not None:
            m = xp.asarray(mask, dtype=bool)
            if m.shape != tuple(u.shape[1:]):
                raise EchoInputError(f"the mask is {tuple(m.shape)} voxels but the field is {tuple(u.shape[1:])}")
            d = xp.abs(jacobian_determinant(u) - jacobian_determinant(gt))[m]
            out["jacobian_error_mask"] = float(d.mean())
            out["epe_mean_mask"] = endpoint_error(u, gt, mask=m, spacing=spacing)["mean"]
            out["mask_voxels"] = int(m.sum())
    return {k: round(v, 5) if isinstance(v, float) else v for k, v in out.items()}


#: the voxels :func:`motion_stats` looks at, of a (T, 3, Z, Y, X) stack of fields: every second one
SUMMARY_GRID = (slice(None), slice(None), slice(None, None, 2), slice(None, None, 2), slice(None, None, 2))


def motion_stats(pair, traj, spacing, *, device=None, pair_grid=None) -> dict:
    """The numbers of a run's summary, on every second voxel (cheap on a 256^3 x 20 sequence),
    computed on ``device`` (the host by default): the mean and 99th percentile of the pairwise
    motion (voxels, mm), the frame of the largest trajectory, and the 1st/99th percentiles of
    the first pair's Jacobian determinant. ``pair_grid``: ``pair[SUMMARY_GRID]`` already on
    ``device`` (float32, contiguous), so the fields are neither gathered nor uploaded again."""
    be = get_backend(device) if device is not None else get_backend("cpu")
    xp = be.xp
    sub = SUMMARY_GRID
    with be.activate():
        spv = xp.asarray(np.asarray(spacing, np.float32).reshape(1, 3, 1, 1, 1))
        if pair_grid is not None:
            pw = xp.asarray(pair_grid, dtype=xp.float32)
        else:
            pw = xp.asarray(np.ascontiguousarray(pair[sub]), dtype=xp.float32)
        mag = xp.sqrt((pw ** 2).sum(axis=1))
        mag_mm = xp.sqrt(((pw * spv) ** 2).sum(axis=1))
        q = xp.percentile(xp.stack([mag.ravel(), mag_mm.ravel()]), 99, axis=1)
        # on every second voxel: the field in units of that coarser grid has the same gradient
        det = jacobian_determinant(pw[0] / 2.0)
        dq = xp.percentile(det, xp.asarray([1.0, 99.0]))
        # the six numbers in one read (one synchronisation; float64 holds each exactly)
        v = be.asnumpy(xp.concatenate([a.ravel().astype(xp.float64) for a in (mag.mean(), q, mag_mm.mean(), dq)]))
        out = {"mean_vox": float(v[0]), "p99_vox": float(v[1]), "mean_mm": float(v[3]), "p99_mm": float(v[2]),
               "det_p1": float(v[4]), "det_p99": float(v[5])}
        if len(traj) > 2:
            tr = xp.asarray(np.ascontiguousarray(traj[sub]), dtype=xp.float32)
            tmag = xp.sqrt(((tr * spv) ** 2).sum(axis=1)).reshape(len(tr), -1)
            p99 = be.asnumpy(xp.percentile(tmag, 99, axis=1))
            k = int(np.argmax(p99))
            out.update(traj_frame=k, traj_p99_mm=float(p99[k]))
    return {k: out[k] for k in ("mean_vox", "p99_vox", "mean_mm", "p99_mm", "traj_frame", "traj_p99_mm", "det_p1",
                                "det_p99") if k in out}


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
