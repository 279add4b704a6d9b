"""Mesh cleaning and the weighted dual graph of Katz & Tal (2003).

One node per triangle; two triangles that share a mesh edge are joined by a dual arc of
weight::

    w = delta * Geod / avg(Geod) + (1 - delta) * Ang / avg(Ang)

* ``Geod`` is the centroid-to-centroid distance after unfolding the two faces about their
  shared edge into one plane (the shortest path through the edge line);
* ``Ang = eta * (1 - cos(dihedral))`` with ``eta = 1`` on concave edges and ``eta_convex``
  on convex ones (the dihedral angle here is the angle between the two face normals, so a
  flat edge has ``Ang = 0``).

Robustness policies (all reported, never silent):

* duplicate vertices (same coordinates) are merged, so that STL-like soups connect;
* duplicate faces (same vertex set) and degenerate faces (repeated vertex, or area below
  ``1e-12`` times the mean) are dropped by :func:`clean_mesh`; the caller gives them the label
  of a neighbour at the end;
* a non-manifold edge (more than two faces on it) joins every pair of its faces;
* inconsistently oriented neighbours (both traverse the shared edge the same way) get the
  second normal flipped before the dihedral is measured;
* when every edge is flat (``avg(Ang) == 0``) the angular term is dropped, and a small
  geodesic floor (``1e-3 * Geod / avg(Geod)``) keeps every weight strictly positive, so
  shortest paths never tie at zero and ``1/d`` memberships stay finite.

This module is NumPy only (it is linear in the face count and cheap next to the APSP).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from gpu_kernels.errors import InputError

__all__ = ["MeshInputError", "DualGraph", "clean_mesh", "dual_graph", "face_areas", "GEOD_FLOOR"]

GEOD_FLOOR = 1e-3
#: "scale": resolution-independent bending cost (:func:`scale_bending`); "cosine": Katz & Tal's
#: ``1 - cos(dihedral)`` per arc
ANGLE_MODE = "scale"
#: the reference scale of :func:`ref_scale`: the centroid spacing of a mesh of this many
#: equal faces with the same area
REF_FACES = 4000


#: weight of the thickness term (shape diameter, :mod:`gpu_kernels.mesh.thickness`): each arc
#: costs ``SDF_WEIGHT * |log(t_a / t_b)|`` more, in the units of the normalised angular
#: term, so a path from a thin part into a thick one pays for the change of thickness even
#: over smooth surface (0: off; 0.25 and 0.5 screened worse than 0 at k = auto)
SDF_WEIGHT = 0.0
#: merges (:func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries`) count a boundary
#: between clusters of different thickness as stronger: ``x (1 + SDF_MERGE * |log(tA / tB)|)``
#: with each cluster's area-weighted mean log thickness (0: off). 0.5 was chosen in all 19
#: leave-one-category-out folds (issue 22): held out 0.161 against 0.178 with the protocol's
#: k, 0.177 against 0.195 with k = auto (benchmarks/results/mesh_cv.md)
SDF_MERGE = 0.5

#: average the face normals over the reference spacing before measuring bends (only where
#: the mesh is finer than the reference spacing)
NORMAL_SMOOTHING = False


def _smoothing_rings(geod, total_area) -> float:
    """How many rings of neighbours span the reference spacing beyond the first: 0 for a
    mesh at or below the reference resolution, fractional in between."""
    g = float(np.mean(geod)) if len(geod) else 0.0
    r0 = ref_scale(total_area)
    return max(0.0, r0 / g - 1.0) if g > 0 else 0.0


def _smooth_normals(normals, areas, fa, fb, same_dir, rings: float) -> np.ndarray:
    """Area-weighted normal averaging over ``rings`` rings of dual-graph neighbours (the
    last ring partially), respecting inconsistent orientations."""
    sign = np.where(same_dir, -1.0, 1.0)
    w = normals * areas[:, None]
    n = normals.copy()
    done = 0.0
    while done < rings:
        step = min(1.0, rings - done)
        acc = w.copy()
        np.add.at(acc, fa, sign[:, None] * w[fb])
        np.add.at(acc, fb, sign[:, None] * w[fa])
        ln = np.linalg.norm(acc, axis=1, keepdims=True)
        avg = np.where(ln > 0, acc / np.where(ln > 0, ln, 1.0), n)
        n = n + step * (avg - n)
        ln = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.where(ln > 0, n / np.where(ln > 0, ln, 1.0), normals)
        w = n * areas[:, None]
        done += step
    return n


def ref_scale(total_area: float) -> float:
    """Centroid-to-centroid distance of equilateral triangles tiling ``total_area`` with
    ``REF_FACES`` faces (``0.877 sqrt(area per face)``): the length at which bends are measured."""
    a = max(float(total_area), 0.0) / max(REF_FACES, 1)
    return float(np.sqrt(a * 4.0 / np.sqrt(3.0)) / np.sqrt(3.0))


def scale_bending(cosd, geod, r0):
    """Bending cost of one dual arc, measured at the physical scale ``r0``.

    With ``theta`` the dihedral angle and ``g`` the arc's length, the cost is
    ``theta * min(1, theta * r0 / g)``: ``theta^2 r0 / g`` for a gentle bend (the normal
    turns by ``kappa g`` over the arc, so a path over a smooth bend sums to ``r0 * integral
    of kappa^2``), the angle itself for a crease (its turning angle, whatever the spacing).
    Either way a path's cost does not depend on how finely the surface is triangulated; at
    the spacing ``r0`` it is about ``2 (1 - cos theta)``, Katz & Tal's term.
    """
    theta = np.arccos(np.clip(np.asarray(cosd, dtype=np.float64), -1.0, 1.0))
    if ANGLE_MODE == "turning":
        return theta
    g = np.maximum(np.asarray(geod, dtype=np.float64), 1e-300)
    return theta * np.minimum(1.0, theta * float(r0) / g)


class MeshInputError(InputError):
    """The mesh cannot be segmented as given (no faces, NaN coordinates, bad indices ...)."""


# --------------------------------------------------------------------------- validation
def _validate(vertices, faces) -> tuple[np.ndarray, np.ndarray]:
    try:
        v = np.asarray(vertices, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MeshInputError(f"vertex coordinates are not numbers: {exc}") from None
    if v.ndim != 2 or v.shape[1] != 3:
        raise MeshInputError(f"vertices must be an (V, 3) array, got shape {v.shape}")
    if v.shape[0] == 0:
        raise MeshInputError("the mesh is empty: it has no vertices")
    if not np.all(np.isfinite(v)):
        bad = int(np.count_nonzero(~np.all(np.isfinite(v), axis=1)))
        raise MeshInputError(f"{bad} vertices have NaN or infinite coordinates")
    f = np.asarray(faces)
    if f.size == 0:
        raise MeshInputError(
            "the mesh has no faces (a point cloud?): segmentation needs a triangle mesh")
    if f.ndim != 2 or f.shape[1] != 3:
        raise MeshInputError(f"faces must be an (F, 3) array of triangles, got shape {f.shape}")
    if not np.issubdtype(f.dtype, np.integer):
        if not np.all(np.isfinite(f)) or np.any(f != np.round(f)):
            raise MeshInputError("face vertex indices must be integers")
    f = f.astype(np.int64)
    if f.min() < 0 or f.max() >= v.shape[0]:
        raise MeshInputError(
            f"face vertex indices out of range: they span {f.min()}..{f.max()} "
            f"but there are {v.shape[0]} vertices")
    _check_span(v, f)
    return v, f


#: largest extent of the vertices the faces use: squared lengths and cross products of edges
#: must stay finite in float64 (1.8e308); a vertex at 1e308 crashed the segmentation
MAX_COORDINATE_SPAN = 1e150


def _used_vertices(v: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``np.unique(f)`` (the vertices some face uses, sorted) by one bincount."""
    return np.flatnonzero(np.bincount(np.asarray(f).reshape(-1), minlength=len(v)) > 0)


def _check_span(v: np.ndarray, f: np.ndarray) -> None:
    """No used vertex may lie more than half :data:`MAX_COORDINATE_SPAN` from the used vertices' median."""
    if float(np.abs(v).max()) <= MAX_COORDINATE_SPAN / 4:
        # every coordinate within a quarter of the limit: the median cannot overflow and no vertex lies more than
        # half the limit from it, so the check below passes (issue 22, session 12: its partition skipped)
        return
    used = v[_used_vertices(v, f)]
    centre = np.median(used, axis=0)
    with np.errstate(over="ignore", invalid="ignore"):
        dev = np.abs(used - centre).max(axis=1)
    far = int(np.argmax(dev))
    if not np.isfinite(dev[far]) or dev[far] > MAX_COORDINATE_SPAN / 2:
        idx = int(_used_vertices(v, f)[far])
        xyz = ", ".join(f"{c:.3g}" for c in v[idx])
        raise MeshInputError(
            f"vertex {idx:,} lies at ({xyz}), too far out to compute with (coordinates must stay within "
            f"{MAX_COORDINATE_SPAN / 2:.0e} of the mesh's centre): fix or remove it, or rescale the mesh")


def _cross_norm(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(np.cross(u, w), np.linalg.norm(np.cross(u, w), axis=1))`` of (n, 3) float64 rows, bit for bit (the
    same products and differences as ``np.cross``, the norm as ``sqrt((x² + y²) + z²)``), without their
    temporaries and axis moves (issue 22, session 12)."""
    cr = np.empty_like(u)
    np.multiply(u[:, 1], w[:, 2], out=cr[:, 0])
    cr[:, 0] -= u[:, 2] * w[:, 1]
    np.multiply(u[:, 2], w[:, 0], out=cr[:, 1])
    cr[:, 1] -= u[:, 0] * w[:, 2]
    np.multiply(u[:, 0], w[:, 1], out=cr[:, 2])
    cr[:, 2] -= u[:, 1] * w[:, 0]
    sq = cr * cr
    return cr, np.sqrt((sq[:, 0] + sq[:, 1]) + sq[:, 2])


def face_areas(vertices, faces) -> np.ndarray:
    """Area of each triangle (float64)."""
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    return 0.5 * _cross_norm(b - a, c - a)[1]


#: (:func:`clean_mesh` looks for duplicate vertices by a hash of the rows first: the sort of :func:`_unique_rows`
#: only where two rows share a hash, which no PSB mesh nor its working meshes do; :func:`_check_span` passes a
#: mesh whose whole box is within the limit without the median, and :func:`_first_of_unique_rows` returns every
#: row where no face repeats after one plain sort: the same results as the full checks, issue 22, session 12)
_ROW_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9], dtype=np.uint64)


def _may_repeat_rows(a: np.ndarray) -> bool:
    """False only if no two rows of the finite (n, 3) float array ``a`` are equal (-0.0 equals 0.0): equal rows
    have the same bits after adding 0.0, so the same hash. True where two rows share a hash (equal, or a
    collision)."""
    if a.shape[0] < 2:
        return False
    b = (np.asarray(a, dtype=np.float64) + 0.0).view(np.uint64)   # (+0.0: -0.0 becomes 0.0)
    h = (b[:, 0] * _ROW_MULT[0]) ^ (b[:, 1] * _ROW_MULT[1]) ^ (b[:, 2] * _ROW_MULT[2])
    h.sort()
    return bool((h[1:] == h[:-1]).any())


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, axis=0, return_inverse=True)`` for an (n, 3) float array, by one
    lexsort (np.unique's row sort is several times slower); the same rows, order and inverse."""
    order = np.lexsort((a[:, 2], a[:, 1], a[:, 0]))
    s = a[order]
    new = np.ones(len(s), dtype=bool)
    new[1:] = np.any(s[1:] != s[:-1], axis=1)
    grp = np.cumsum(new) - 1
    inv = np.empty(len(a), dtype=np.int64)
    inv[order] = grp
    return s[new], inv


def _first_of_unique_rows(key: np.ndarray, n_values: int) -> np.ndarray:
    """Index of the first occurrence of each distinct row of an (n, 3) int array with entries
    below ``n_values`` (``np.unique(key, axis=0, return_index=True)[1]``, as a set)."""
    if key.size == 0:
        return np.zeros(0, dtype=np.int64)
    n = int(n_values) + 1
    if n ** 3 < 2 ** 62:
        code = (key[:, 0] * n + key[:, 1]) * n + key[:, 2]
        # no code twice (one unstable sort): every row is its own first occurrence (the same set)
        srt = np.sort(code)
        if not bool((srt[1:] == srt[:-1]).any()):
            return np.arange(code.size, dtype=np.int64)
        return np.unique(code, return_index=True)[1]
    return np.unique(key, axis=0, return_index=True)[1]


def clean_mesh(vertices, faces):
    """Validate a triangle mesh and remove what the dual graph cannot use.

    Returns
    -------
    vertices : (V', 3) float64
        Vertices with exact duplicates merged.
    faces : (F', 3) int64
        The kept faces, re-indexed into ``vertices``.
    kept_face_index : (F',) int64
        For each kept face, its index among the input faces.
    report : dict
        ``n_input_faces``, ``n_merged_vertices``, ``n_duplicate_faces``,
        ``n_degenerate_faces`` (repeated vertex or zero area), ``dropped_faces`` (indices
        of input faces that were removed).

    Raises
    ------
    MeshInputError
        No vertices, no faces, NaN/inf coordinates, indices out of range, or no face left.
    """
    v, f = _validate(vertices, faces)
    n_in = f.shape[0]
    # merge duplicate vertices (exact coordinates); where no two rows share a hash, none is a duplicate and
    # the sort is skipped (the same result: nothing merged, nothing renumbered)
    n_merged = 0
    if _may_repeat_rows(v):
        uv, inv = _unique_rows(v)
        n_merged = v.shape[0] - uv.shape[0]
        if n_merged:
            f = inv[f]
            v = uv
    keep = np.ones(n_in, dtype=bool)
    # repeated vertex index inside a face
    rep = (f[:, 0] == f[:, 1]) | (f[:, 1] == f[:, 2]) | (f[:, 0] == f[:, 2])
    # zero area is judged on the mesh centred and scaled to unit size (no overflow, no loss
    # for far-out coordinates) against the median face: one far vertex made the mean area so
    # large that 9,403 of 9,408 faces were counted as zero-area
    centre = np.median(v, axis=0)
    scale = float(np.abs(v - centre).max()) or 1.0
    area = face_areas((v - centre) / scale, f)
    pos = area[area > 0]
    tol = 1e-12 * (float(np.median(pos)) if pos.size else 1.0)
    degenerate = rep | (area <= tol)
    keep &= ~degenerate
    # duplicate faces: same vertex set (first occurrence kept)
    key = np.sort(f, axis=1)
    idx = np.flatnonzero(keep)
    first = _first_of_unique_rows(key[idx], v.shape[0])
    dup_mask = np.ones(idx.size, dtype=bool)
    dup_mask[first] = False
    n_dup = int(dup_mask.sum())
    keep[idx[dup_mask]] = False
    kept = np.flatnonzero(keep)
    if kept.size == 0:
        raise MeshInputError(
            f"all {n_in} faces are degenerate (zero area or repeated vertices): nothing to segment")
    report = {
        "n_input_faces": int(n_in),
        "n_merged_vertices": int(n_merged),
        "n_duplicate_faces": n_dup,
        "n_degenerate_faces": int(degenerate.sum()),
        "dropped_faces": np.flatnonzero(~keep),
    }
    return v, f[kept], kept.astype(np.int64), report


# --------------------------------------------------------------------------- dual graph
@dataclass
class DualGraph:
    """The weighted dual graph of a triangle mesh (one undirected arc per face pair).

    Arrays over arcs have length E; ``src < dst`` is not guaranteed but each face pair
    appears once.
    """

    n: int
    src: np.ndarray            # (E,) int64
    dst: np.ndarray            # (E,) int64
    weight: np.ndarray         # (E,) float64, > 0
    ang: np.ndarray            # (E,) eta * (1 - cos dihedral)
    geod: np.ndarray           # (E,) unfolded centroid distance through the edge
    avg_ang: float
    avg_geod: float
    centroids: np.ndarray      # (F, 3)
    normals: np.ndarray        # (F, 3) unit
    areas: np.ndarray          # (F,)
    component: np.ndarray      # (F,) int
    n_components: int
    edge_vertices: np.ndarray  # (E, 2) the shared mesh edge of each arc
    concave: np.ndarray        # (E,) bool
    edge_length: np.ndarray = None  # (E,) length of the shared mesh edge
    ref_scale: float = 0.0     # the reference spacing (see ref_scale()), 0 in "cosine" mode
    n_nonmanifold_edges: int = 0
    n_boundary_edges: int = 0
    n_flipped_pairs: int = 0
    delta: float = 0.0
    eta_convex: float = 0.0
    warnings: list = field(default_factory=list)
    thickness: np.ndarray = None  # (F,) shape diameter per face (SDF_WEIGHT > 0), else None

    @property
    def concavity(self) -> np.ndarray:
        """(E,) ``1 - cos(dihedral)`` on concave arcs, 0 on convex ones (independent of eta)."""
        one_minus_cos = np.where(self.concave, self.ang, 0.0)
        return one_minus_cos

    def smooth_concavity(self) -> np.ndarray:
        """(E,) concavity measured over a disk of radius ``ref_scale`` around each arc, so
        that it does not depend on the triangulation.

        Per face, the concave bend times the edge length of its arcs over twice its area (a
        density, bend per unit length) is averaged (area-weighted) over as many rings of
        neighbours as the reference spacing spans, times the reference spacing; an arc
        gets the mean of its two faces. A crease of angle ``theta`` scores about
        ``theta / 2`` whatever the spacing, a gentle bend its curvature times the spacing,
        and noise at the triangle scale averages out. Cached.
        """
        cached = getattr(self, "_smooth_conc", None)
        if cached is not None:
            return cached
        F = self.n
        L = self.edge_length if self.edge_length is not None else np.ones(self.n_edges)
        w = self.concavity * L
        area = np.maximum(self.areas, 1e-300)
        dens = (np.bincount(self.src, weights=w, minlength=F)
                + np.bincount(self.dst, weights=w, minlength=F)) / (2.0 * area)
        r0 = self.ref_scale if self.ref_scale > 0 else float(self.geod.mean() if self.n_edges else 1.0)
        mean_geod = float(self.geod.mean()) if self.n_edges else r0
        rings = int(np.clip(np.ceil(r0 / max(mean_geod, 1e-300) - 0.5), 0, 64))
        if rings and self.n_edges:
            A = self.csr(np.ones(self.n_edges))
            m = dens * area
            for _ in range(rings):
                m_new = A @ m + m
                a_new = A @ area + area
                dens = m_new / a_new
                m = dens * area
        out = r0 * 0.5 * (dens[self.src] + dens[self.dst])
        self._smooth_conc = out
        return out

    @property
    def n_edges(self) -> int:
        return int(self.src.size)

    def csr(self, values=None) -> sp.csr_matrix:
        """Symmetric (F, F) sparse matrix of ``values`` (default: the weights). The weights' matrix is
        built once and cached on the graph (issue 22, session 12): callers read it and must not change it in
        place."""
        if values is None:
            cached = getattr(self, "_csr_weight", None)
            if cached is not None:
                return cached
        vals = self.weight if values is None else np.asarray(values)
        m = sp.coo_matrix(
            (np.concatenate([vals, vals]),
             (np.concatenate([self.src, self.dst]), np.concatenate([self.dst, self.src]))),
            shape=(self.n, self.n)).tocsr()
        if values is None:
            self._csr_weight = m
        return m

    def neighbours_csr(self) -> sp.csr_matrix:
        """Symmetric adjacency (arc index + 1 as data, so arc 0 is not an implicit zero)."""
        return self.csr(np.arange(1, self.n_edges + 1, dtype=np.int64))


def _face_pairs(faces: np.ndarray):
    """Face pairs sharing an edge.

    Returns ``(fa, fb, ea, eb, same_dir, n_nonmanifold, n_boundary)``: the two faces, the
    shared edge's vertices, and whether both faces traverse the edge in the same direction.
    """
    F = faces.shape[0]
    a = faces[:, [0, 1, 2]].reshape(-1)
    b = faces[:, [1, 2, 0]].reshape(-1)
    fid = np.repeat(np.arange(F), 3)
    lo = np.minimum(a, b)
    hi = np.maximum(a, b)
    fwd = a < b  # direction in which the face traverses the edge
    nv = int(faces.max()) + 1
    key = lo * nv + hi
    order = np.argsort(key, kind="stable")
    key_s = key[order]
    starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]])
    counts = np.diff(np.r_[starts, key_s.size])
    n_boundary = int(np.count_nonzero(counts == 1))
    n_nonmanifold = int(np.count_nonzero(counts > 2))
    # half-edge pairs: manifold edges give one pair, non-manifold edges every pair
    m2 = starts[counts == 2]
    ha, hb = [order[m2]], [order[m2 + 1]]
    for c in np.unique(counts[counts > 2]):
        st = starts[counts == c]
        ii, jj = np.triu_indices(int(c), 1)
        ha.append(order[st[:, None] + ii[None, :]].reshape(-1))
        hb.append(order[st[:, None] + jj[None, :]].reshape(-1))
    he_a = np.concatenate(ha)
    he_b = np.concatenate(hb)
    fa, fb = fid[he_a], fid[he_b]
    ok = fa != fb
    he_a, he_b, fa, fb = he_a[ok], he_b[ok], fa[ok], fb[ok]
    same_dir = fwd[he_a] == fwd[he_b]
    return fa, fb, lo[he_a], hi[he_a], same_dir, n_nonmanifold, n_boundary


def _far_vertices(v: np.ndarray, f: np.ndarray) -> str:
    """A warning when a few vertices lie absurdly far (1e6 times the mesh's typical radius)
    from the rest: their faces then hold nearly all the area and decide the parts."""
    used = _used_vertices(v, f)
    if used.size < 8:
        return ""
    centre = np.median(v[used], axis=0)
    r = np.linalg.norm(v[used] - centre, axis=1)
    typical = float(np.percentile(r, 90))
    if typical <= 0:
        return ""
    out = used[r > 1e6 * typical]
    if out.size == 0 or out.size > 0.01 * used.size:
        return ""
    i = int(out[0])
    xyz = ", ".join(f"{c:.3g}" for c in v[i])
    return (f"{out.size} vertex{'' if out.size == 1 else 'es'} lie{'s' if out.size == 1 else ''} far outside "
            f"the mesh (vertex {i:,} at ({xyz}), the rest within {typical:.3g} of the centre): their "
            "faces dominate the parts; fix or remove them")


def dual_graph(vertices, faces, *, delta: float, eta_convex: float, thickness: bool | None = None) -> DualGraph:
    """Build the weighted dual graph of a (cleaned) triangle mesh.

    Parameters
    ----------
    vertices : (V, 3) float
    faces : (F, 3) int
        Use :func:`clean_mesh` first: zero-area faces have no normal.
    delta : float in [0, 1]
        Weight of the geodesic term (``1 - delta`` goes to the angular term).
    eta_convex : float > 0
        Factor on the angular distance of convex edges (concave edges use 1).
    thickness : bool, optional
        Measure each face's thickness (:func:`with_thickness`); default: :func:`uses_thickness`.
    """
    if not (0.0 <= float(delta) <= 1.0):
        raise MeshInputError(f"delta must lie in [0, 1], got {delta}")
    if not (float(eta_convex) >= 0.0):
        raise MeshInputError(f"eta_convex must be >= 0, got {eta_convex}")
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    F = f.shape[0]
    p0, p1, p2 = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    cen = (p0 + p1 + p2) / 3.0
    cr, nrm_len = _cross_norm(p1 - p0, p2 - p0)
    areas = 0.5 * nrm_len
    normals = cr / np.where(nrm_len > 0, nrm_len, 1.0)[:, None]
    warnings: list[str] = []
    far = _far_vertices(v, f)
    if far:
        warnings.append(far)

    fa, fb, ea, eb, same_dir, n_nm, n_bd = _face_pairs(f)
    E = fa.size
    # --- unfolded geodesic: rotate c2 into c1's plane about the shared edge
    P = v[ea]
    axis = v[eb] - P
    alen = np.linalg.norm(axis, axis=1)
    u = axis / np.where(alen > 0, alen, 1.0)[:, None]
    d1 = cen[fa] - P
    d2 = cen[fb] - P
    t1 = np.einsum("ij,ij->i", d1, u)
    t2 = np.einsum("ij,ij->i", d2, u)
    r1 = np.linalg.norm(d1 - t1[:, None] * u, axis=1)
    r2 = np.linalg.norm(d2 - t2[:, None] * u, axis=1)
    geod = np.sqrt((t1 - t2) ** 2 + (r1 + r2) ** 2)
    # --- angular distance
    n1 = normals[fa]
    n2 = np.where(same_dir[:, None], -normals[fb], normals[fb])
    scale = np.sqrt(areas.mean()) if F else 1.0
    rings = _smoothing_rings(geod, areas.sum()) if (E and ANGLE_MODE != "cosine" and NORMAL_SMOOTHING) else 0.0
    if rings > 0:
        # normals averaged over the reference spacing: the bends and their sign are those of
        # the surface at that scale, not of triangle-scale noise
        ns = _smooth_normals(normals, areas, fa, fb, same_dir, rings)
        n1 = ns[fa]
        n2 = np.where(same_dir[:, None], -ns[fb], ns[fb])
        side = np.einsum("ij,ij->i", cen[fb] - cen[fa], n1 - n2)
    else:
        # concave when face b's centroid lies above face a's plane (outward normals)
        side = np.einsum("ij,ij->i", cen[fb] - cen[fa], n1)
    cosd = np.clip(np.einsum("ij,ij->i", n1, n2), -1.0, 1.0)
    concave = side > 1e-9 * scale
    eta = np.where(concave, 1.0, float(eta_convex))
    avg_geod = float(geod.mean()) if E else 1.0
    if not avg_geod > 0:
        avg_geod = 1.0
    if ANGLE_MODE == "cosine":
        bend = np.maximum(1.0 - cosd, 0.0)
        ang = eta * bend
        avg_ang = float(ang.mean()) if E else 0.0
    else:
        r0 = ref_scale(areas.sum())
        bend = scale_bending(cosd, geod, r0)
        ang = eta * bend
        # lengths in units of r0 and the angular cost per r0 of path (edge-length weighted
        # over the surface): neither depends on how finely the mesh is triangulated, so
        # distances at any resolution are comparable
        num = float((alen * geod).sum()) if E else 0.0
        avg_ang = float((alen * ang).sum()) / num * r0 if num > 0 else 0.0
        if r0 > 0:
            avg_geod = r0
    g_term = geod / avg_geod
    if avg_ang > 1e-12:
        a_term = ang / avg_ang
        w = delta * g_term + (1.0 - delta) * a_term
    else:
        if E and delta < 1.0:
            warnings.append("the mesh is flat everywhere (no dihedral angle): "
                            "using the geodesic term only")
        w = g_term.copy()
        avg_ang = 0.0
        ang = np.zeros_like(ang)
    w = w + GEOD_FLOOR * g_term
    w = np.where(np.isfinite(w) & (w > 0), w, GEOD_FLOOR)

    adj = sp.coo_matrix((np.ones(E), (fa, fb)), shape=(F, F))
    ncomp, comp = connected_components(adj, directed=False)
    if n_nm:
        warnings.append(f"{n_nm} non-manifold edges (more than two faces): every pair of "
                        "their faces is joined in the dual graph")
    n_flip = int(same_dir.sum())
    if n_flip:
        warnings.append(f"{n_flip} neighbouring face pairs are inconsistently oriented; "
                        "their concave/convex classification may be wrong")
    g = DualGraph(
        n=F, src=fa, dst=fb, weight=w, ang=ang, geod=geod, avg_ang=avg_ang, avg_geod=avg_geod,
        centroids=cen, normals=normals, areas=areas, component=comp.astype(np.int64),
        edge_length=alen, ref_scale=0.0 if ANGLE_MODE == "cosine" else ref_scale(areas.sum()),
        n_components=int(ncomp), edge_vertices=np.stack([ea, eb], axis=1), concave=concave,
        n_nonmanifold_edges=n_nm, n_boundary_edges=n_bd, n_flipped_pairs=n_flip,
        delta=float(delta), eta_convex=float(eta_convex), warnings=warnings,
    )
    if thickness is None:
        thickness = uses_thickness()
    return with_thickness(g, v, f) if thickness and E else g


def uses_thickness() -> bool:
    """Whether the thickness feature is on (``SDF_WEIGHT`` or ``SDF_MERGE``)."""
    return SDF_WEIGHT > 0 or SDF_MERGE > 0


def with_thickness(graph: DualGraph, vertices, faces, xp=None) -> DualGraph:
    """``graph`` with its faces' thickness (:func:`gpu_kernels.mesh.thickness.face_thickness`,
    on the GPU when ``xp`` is CuPy) and, with ``SDF_WEIGHT``, the thickness term added to its
    arc weights."""
    from dataclasses import replace

    from gpu_kernels.mesh.thickness import face_thickness

    th = face_thickness(vertices, faces, graph.centroids, graph.normals, src=graph.src, dst=graph.dst,
                        areas=graph.areas, xp=xp)
    w = graph.weight
    if SDF_WEIGHT > 0:
        w = w + SDF_WEIGHT * np.abs(np.log(th[graph.src]) - np.log(th[graph.dst]))
    return replace(graph, weight=w, thickness=th)
