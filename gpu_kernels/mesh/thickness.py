"""Local thickness of a mesh per face: a shape-diameter (SDF) feature without ray casting.

The shape-diameter function (Shapira et al. 2008) is the typical length of rays cast
inwards from a face; parts of a shape differ in it (a fin is thin, a body thick) even
where they meet over smooth surface, with no concave crease for the angular distance to
find. Here the same quantity comes from the *shrinking ball* (Ma, Bae & Sidorov 2012): the
largest ball inside the surface that touches the face's centroid, centred on the inward
normal. Its diameter equals the SDF of a tube and is at most the distance to the opposite
wall anywhere. One k-d tree query per face and step (up to ``MAX_STEPS``; the first steps,
from centres far outside the mesh, cost the most), NumPy and SciPy on every core: 0.05-0.1 s
for the 4,000-face working resolution on one core of the development machine. On a CUDA
device the whole loop is one kernel (``LOOP_ON_DEVICE``, ``gpu_kernels/cuda/mesh_thickness.cu``:
a brute-force search per face and step, rounded as the host loop's, so the same radii bit for
bit): ~3.4 ms at 4,000 faces on the H100, against ~21 ms for the per-step searches.

:func:`face_thickness` returns the diameter per face, smoothed in the log domain over
``SMOOTH_RINGS`` rings of dual-graph neighbours (a single noisy ball, at a crease or a
spike, does not make a wall).

Example
-------
>>> import numpy as np
>>> from scipy.spatial import ConvexHull
>>> from gpu_kernels.mesh.thickness import face_thickness
>>> from gpu_kernels.mesh.dualgraph import dual_graph
>>> g1 = np.linspace(-1, 1, 21)          # a 4 x 2 x 0.4 box, its sides bulged a little
>>> q = np.array([(x, y, z) for x in g1 for y in g1 for z in g1 if max(abs(x), abs(y), abs(z)) == 1])
>>> w = 1 - q ** 2
>>> q = q + 0.03 * np.sign(q) * (np.abs(q) == 1) * np.c_[w[:, 1] * w[:, 2], w[:, 0] * w[:, 2], w[:, 0] * w[:, 1]]
>>> v = q * [2.0, 1.0, 0.2]
>>> f = ConvexHull(v).simplices
>>> out = np.einsum("ij,ij->i", np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), v[f].mean(axis=1)) > 0
>>> f = np.where(out[:, None], f, f[:, ::-1])
>>> g = dual_graph(v, f, delta=0.5, eta_convex=0.5)
>>> th = face_thickness(v, f, g.centroids, g.normals)
>>> bool(0.38 < np.median(th[np.abs(g.normals[:, 2]) > 0.99]) < 0.45)   # the large sides: 0.4 apart
True
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from gpu_kernels.mesh.nearest import kd_nearest

__all__ = ["face_thickness", "SMOOTH_RINGS"]

#: rings of dual-graph neighbours over which log thickness is averaged (area-weighted)
SMOOTH_RINGS = 2
#: the pipeline (:func:`gpu_kernels.mesh.segment.prepare_mesh`) runs the nearest-sample
#: searches on the GPU on a CUDA device (brute force, :func:`_nearest_on_device`). On since
#: session 4: measured on the H100 inside the pipeline, the working-resolution stage (simplify
#: + thickness) took 34 ms against 44 ms with the k-d tree (17k faces) and 86 against 100 ms
#: (50k), with the same k (benchmarks/results/mesh_session4.md); the CPU/GPU agreement test
#: (tests/mesh/test_mesh_thickness.py) then runs it
ON_GPU = True
#: shrinking-ball steps (the radius decreases monotonically; most balls settle in 3-6)
MAX_STEPS = 16


def _orient_outward(v, f, normals) -> np.ndarray:
    """Flip every normal when the mesh is wound inwards (negative signed volume)."""
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    vol = float(np.einsum("ij,ij->i", p0, np.cross(p1, p2)).sum())
    return -normals if vol < 0 else normals


#: the order of the on-device search's 3-term dot product (``DOT_MODE`` of mesh_thickness.cu):
#: 0 fma(a2, b2, fma(a1, b1, a0 * b0)), 1 the reverse chain, 2 no fused multiply-add. Not probed at run
#: time (unlike the sums of ``LOOP_ON_DEVICE``): mode 0 is what cuBLAS's DGEMM did for the
#: ``(rows x samples)`` product the search replaced (H100, session 9's CUDA); every mode is an exact
#: search of the same formula, the ties aside
THICK_DOT_MODE = 0
_CHUNK = 2048


def _nearest_on_device(xp, samples, *, device=None, dot_mode=None):
    """A nearest-sample search on the GPU (brute force in float64): one ``mesh_thick_nearest``
    launch (``gpu_kernels/cuda/mesh_thickness.cu``) per chunk of 2,048 rows, ``(|q|² + |s|²) - (2q)·s``
    with the first of equal distances (the k-d tree's answer, the ties aside). Returns
    ``query(c) -> (dist, index)`` on the host. Where the ball loop is not on the device
    (``LOOP_ON_DEVICE``, or a sum order the probe did not find).

    ``device``: the kernel's device (default: CuPy's current device,
    :func:`gpu_kernels.backend.current_device`; the test suite passes its emulator). ``dot_mode``: the
    dot product's order (default ``THICK_DOT_MODE``; the others for checks)."""
    from gpu_kernels.backend import current_device, kernel

    s = xp.asarray(samples, dtype=xp.float64)
    s2 = (s * s).sum(axis=1)
    fn = kernel(current_device() if device is None else device, "mesh_thickness.cu", "mesh_thick_nearest",
                defines={"DOT_MODE": int(THICK_DOT_MODE if dot_mode is None else dot_mode)}, options=("--fmad=false",))
    sc = xp.ascontiguousarray(s)
    S = int(s.shape[0])

    def query_fused(c):
        cd = xp.ascontiguousarray(xp.asarray(c, dtype=xp.float64))
        m = int(cd.shape[0])
        d_out = xp.empty(m, dtype=xp.float64)
        j_out = xp.empty(m, dtype=xp.int64)
        for a in range(0, m, _CHUNK):
            blk = cd[a:a + _CHUNK]
            n = int(blk.shape[0])
            qq = xp.ascontiguousarray((blk * blk).sum(axis=1))  # per chunk, as the product path did
            fn((n,), (256,), (blk, qq, sc, s2, np.int64(n), np.int64(S), j_out[a:a + n], d_out[a:a + n]))
        return xp.asnumpy(d_out), xp.asnumpy(j_out)

    return query_fused


#: the whole shrinking-ball loop on the GPU in one kernel (``mesh_thick_balls``, one block per
#: face, its steps one after the other) instead of a search per step with the steps' arithmetic on
#: the host: each face's balls depend only on its own centroid and normal, and the kernel rounds
#: every operation as the host loop does (the three-term sums in the orders this host's NumPy
#: ``einsum`` and this device's CuPy ``sum`` use, probed once: :func:`_sum3_orders`), so the same
#: radii bit for bit. Where a probe finds no single order, the host loop runs. Issue 22, session 9
LOOP_ON_DEVICE = True
#: faces a launch of the ball-loop kernel (one launch does faces x steps x samples: without a working
#: resolution a 50k-face mesh would be ~3e10 fp64 distances in one launch, near a display GPU's watchdog;
#: the working meshes, ~4,000 faces, stay one launch)
BALL_FACES = 4096
_PROBED: dict = {}


def _sum3(x: np.ndarray, mode: int) -> np.ndarray:
    """Row sums of an (m, 3) array in one order: 0 (x0 + x1) + x2, 1 x0 + (x1 + x2), 2 (x0 + x2) + x1."""
    x0, x1, x2 = x[:, 0], x[:, 1], x[:, 2]
    return (x0 + x1) + x2 if mode == 0 else x0 + (x1 + x2) if mode == 1 else (x0 + x2) + x1


def _only_order(pairs) -> int | None:
    """The one order of :func:`_sum3` that gives every ``(sums, terms)`` pair's sums, or None."""
    modes = {0, 1, 2}
    for got, terms in pairs:
        modes &= {k for k in range(3) if np.array_equal(got, _sum3(terms, k))}
    return modes.pop() if len(modes) == 1 else None


def _probe_terms(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(m, 3)) * [1.0, 1e3, 1e-3] + [0.5, -2.0, 7.0],
            rng.normal(size=(m, 3)) * [1e-3, 1.0, 1e3] + [3.0, 0.25, -1.0])


def _sum3_orders(xp) -> tuple[int | None, int | None]:
    """(CuPy's order for ``(c * c).sum(axis=1)`` on this device, NumPy's for ``einsum("ij,ij->i")``
    here), each None where no single order reproduces it on the probes (cached per device)."""
    from gpu_kernels.backend import current_device

    key = current_device().device_id
    if key not in _PROBED:
        host = []
        for m, seed in ((4096, 1), (2048, 2), (37, 3)):
            a, b = _probe_terms(m, seed)
            host += [(np.einsum("ij,ij->i", a, b), a * b), (np.einsum("ij,ij->i", a, a), a * a)]
        dev = []
        for m, seed in ((4096, 4), (2048, 5), (1000, 6), (37, 7)):
            a, _ = _probe_terms(m, seed)
            ad = xp.asarray(a)
            dev.append((xp.asnumpy((ad * ad).sum(axis=1)), a * a))
        _PROBED[key] = (_only_order(dev), _only_order(host))
    return _PROBED[key]


def _balls_on_device(xp, p, n, samples, diag: float, *, orders=None, device=None):
    """The radii of :func:`face_thickness`'s loop from ``mesh_thick_balls`` (a launch per
    :data:`BALL_FACES` faces), or None
    where the sums' orders are unknown. ``orders``: (device, host) order of :func:`_sum3` (default:
    :func:`_sum3_orders`); ``device``: the kernel's device (default: CuPy's current one)."""
    dev_order, host_order = _sum3_orders(xp) if orders is None else orders
    if dev_order is None or host_order is None:
        return None
    from gpu_kernels.backend import current_device, kernel

    fn = kernel(current_device() if device is None else device, "mesh_thickness.cu", "mesh_thick_balls",
                defines={"DOT_MODE": int(THICK_DOT_MODE), "SUM3_DEV": int(dev_order), "SUM3_HOST": int(host_order)},
                options=("--fmad=false",))
    F = int(p.shape[0])
    s = xp.ascontiguousarray(xp.asarray(samples, dtype=xp.float64))
    s2 = (s * s).sum(axis=1)
    pd = xp.ascontiguousarray(xp.asarray(p, dtype=xp.float64))
    nd = xp.ascontiguousarray(xp.asarray(n, dtype=xp.float64))
    r = xp.empty(F, dtype=xp.float64)
    for a in range(0, F, BALL_FACES):   # faces are independent: chunks give the same radii
        m = min(F - a, BALL_FACES)
        fn((m,), (256,), (pd[a:a + m], nd[a:a + m], s, s2, np.int64(m), np.int64(s.shape[0]),
                          np.float64(0.5 * diag), np.float64(1e-6 * diag), np.float64(1e-12 * diag),
                          np.int32(MAX_STEPS), r[a:a + m]))
    return xp.asnumpy(r)


def face_thickness(vertices, faces, centroids, normals, *, src=None, dst=None, areas=None,
                   xp=None) -> np.ndarray:
    """(F,) local thickness (shrinking-ball diameter) of each face of a triangle mesh.

    Parameters
    ----------
    vertices, faces : the mesh (its dual graph's ``centroids`` and unit ``normals``).
    src, dst, areas : optional dual-graph arcs and face areas: log thickness is then
        averaged over ``SMOOTH_RINGS`` rings of neighbours.
    xp : array module, optional
        CuPy: the nearest-sample searches run on the GPU (brute force); else a k-d tree on
        every CPU core (:func:`~gpu_kernels.mesh.nearest.kd_nearest`: safe to interrupt).

    The balls touch the surface samples (vertices and centroids); a ball that never meets
    the far side (an open or a flat mesh) stops at the mesh's bounding-box diagonal.
    """
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    p = np.asarray(centroids, dtype=np.float64)
    n = _orient_outward(v, f, np.asarray(normals, dtype=np.float64))
    F = p.shape[0]
    if F == 0:
        return np.zeros(0)
    samples = np.concatenate([v[np.unique(f)], p])
    diag = float(np.linalg.norm(samples.max(axis=0) - samples.min(axis=0))) or 1.0
    on_device = xp is not None and xp is not np
    r = None
    if on_device and LOOP_ON_DEVICE and getattr(xp, "__name__", "") == "cupy":
        r = _balls_on_device(xp, p, n, samples, diag)
    if r is not None:
        active = np.zeros(F, dtype=bool)   # the loop below has nothing left to do
    else:
        r = np.full(F, 0.5 * diag)
        active = np.ones(F, dtype=bool)
    if on_device:
        query = _nearest_on_device(xp, samples) if active.any() else None
    else:
        tree = cKDTree(samples)

        def query(c):
            return kd_nearest(tree, c)
    tol = 1e-6 * diag
    for _ in range(MAX_STEPS):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        c = p[idx] - r[idx, None] * n[idx]
        dist, j = query(c)
        q = samples[j]
        inside = dist < r[idx] - tol
        pq = p[idx] - q
        den = 2.0 * np.einsum("ij,ij->i", pq, n[idx])
        num = np.einsum("ij,ij->i", pq, pq)
        ok = inside & (den > 1e-12 * diag)
        new = np.where(ok, num / np.where(ok, den, 1.0), r[idx])
        shrink = ok & (new < r[idx] - tol)
        r[idx[shrink]] = np.maximum(new[shrink], tol)
        active[idx[~shrink]] = False
    th = 2.0 * r
    if src is not None and dst is not None and SMOOTH_RINGS > 0 and len(src):
        import scipy.sparse as sp

        a = np.ones(F) if areas is None else np.maximum(np.asarray(areas, dtype=np.float64), 1e-300)
        A = sp.coo_matrix((np.ones(2 * len(src)), (np.r_[src, dst], np.r_[dst, src])), shape=(F, F)).tocsr()
        lg = np.log(th)
        for _ in range(SMOOTH_RINGS):
            lg = (A @ (lg * a) + lg * a) / (A @ a + a)
        th = np.exp(lg)
    return th
