"""Fuzzy clustering on meshes whose parts are known by construction."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from gpu_kernels.mesh.cluster import (
    choose_k,
    farthest_representatives,
    fuzzy_cluster,
    memberships,
    update_representatives,
)
from gpu_kernels.mesh.colors import blend_face_colors, palette
from gpu_kernels.mesh.dualgraph import dual_graph
from gpu_kernels.mesh.metrics import rand_index_error

_DIRS = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]


def voxel_surface(occ: np.ndarray, scale: float = 1.0):
    """Closed, outward-oriented triangle surface of a boolean voxel grid.

    Returns ``(vertices, faces, voxel_of_face)``."""
    occ = np.pad(np.asarray(occ, bool), 1)
    verts: dict = {}
    faces, owner = [], []

    def vid(p):
        return verts.setdefault(p, len(verts))

    for i, j, k in zip(*np.nonzero(occ), strict=True):
        for dx, dy, dz in _DIRS:
            if occ[i + dx, j + dy, k + dz]:
                continue
            ax = [a for a in range(3) if (dx, dy, dz)[a] == 0]
            base = np.array([i, j, k]) + np.maximum(np.array([dx, dy, dz]), 0)
            u = np.eye(3, dtype=int)[ax[0]]
            w = np.eye(3, dtype=int)[ax[1]]
            q = [tuple(base), tuple(base + u), tuple(base + u + w), tuple(base + w)]
            n = np.cross(u, w)
            if np.dot(n, (dx, dy, dz)) < 0:
                q = q[::-1]
            ids = [vid(p) for p in q]
            faces += [(ids[0], ids[1], ids[2]), (ids[0], ids[2], ids[3])]
            owner += [(i - 1, j - 1, k - 1)] * 2
    v = np.zeros((len(verts), 3))
    for p, idx in verts.items():
        v[idx] = p
    return v * scale, np.array(faces, dtype=np.int64), np.array(owner)


def box_bar_box(box: int = 6, bar: int = 2, length: int = 8):
    """Two cubes joined by a thin bar along x. Labels by construction: 0 box, 1 bar, 2 box."""
    nx = 2 * box + length
    occ = np.zeros((nx, box, box), bool)
    occ[:box] = True
    occ[box + length:] = True
    lo = (box - bar) // 2
    occ[box:box + length, lo:lo + bar, lo:lo + bar] = True
    v, f, owner = voxel_surface(occ)
    x = owner[:, 0]
    labels = np.where(x < box, 0, np.where(x >= box + length, 2, 1))
    return v, f, labels


def distances(v, f, delta=0.3, eta_convex=0.1):
    g = dual_graph(v, f, delta=delta, eta_convex=eta_convex)
    import scipy.sparse as sp

    A = sp.coo_matrix((np.r_[g.weight, g.weight], (np.r_[g.src, g.dst], np.r_[g.dst, g.src])),
                      shape=(g.n, g.n)).tocsr()
    return g, shortest_path(A, method="D", directed=False).astype(np.float32)


def test_voxel_surface_is_closed_and_oriented():
    v, f, _ = box_bar_box()
    g = dual_graph(v, f, delta=0.5, eta_convex=0.2)
    assert g.n_boundary_edges == 0 and g.n_nonmanifold_edges == 0 and g.n_flipped_pairs == 0
    assert g.n_components == 1
    # the bar meets each box along a concave square
    assert g.concave.sum() == 2 * 4 * 2  # 2 junctions x 4 sides x 2 unit edges


def test_recovers_box_bar_box():
    v, f, truth = box_bar_box()
    g, D = distances(v, f)
    fc = fuzzy_cluster(D, 3, max_iter=20)
    labels = np.argmax(fc.P, axis=1)
    assert 1 - rand_index_error(labels, truth) > 0.9
    assert fc.P.shape == (g.n, 3)
    np.testing.assert_allclose(fc.P.sum(axis=1), 1.0, rtol=1e-5)
    assert fc.n_iter <= 20


def test_first_representative_and_farthest_order():
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(40, 2))
    D = np.linalg.norm(pts[:, None] - pts[None], axis=2).astype(np.float32)
    reps, G = farthest_representatives(D, 5)
    assert reps[0] == np.argmin(D.sum(1))
    mind = D[reps[0]].copy()
    for i in range(1, 5):
        assert reps[i] == np.argmax(mind)
        assert G[i] == pytest.approx(mind[reps[i]])
        mind = np.minimum(mind, D[reps[i]])


def test_choose_k_takes_largest_gap():
    # G(1)=inf, G(2)=10, G(3)=9, G(4)=2, G(5)=1.5 ... -> biggest drop after k=3
    G = np.array([np.inf, 10, 9, 2, 1.5, 1.4, 1.3])
    assert choose_k(G) == 3


def test_memberships_rows_sum_to_one_and_rep_is_certain():
    rng = np.random.default_rng(2)
    pts = rng.normal(size=(30, 3))
    D = np.linalg.norm(pts[:, None] - pts[None], axis=2).astype(np.float32)
    reps = np.array([3, 17, 25])
    P = memberships(D, reps)
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-6)
    for j, r in enumerate(reps):
        assert P[r, j] == pytest.approx(1.0)
    f = 0
    inv = 1 / D[f, reps]
    np.testing.assert_allclose(P[f], inv / inv.sum(), rtol=1e-5)


def test_update_is_argmin_of_weighted_distance_sum():
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(25, 2))
    D = np.linalg.norm(pts[:, None] - pts[None], axis=2).astype(np.float32)
    P = memberships(D, [0, 5])
    new = update_representatives(D, P)
    for j in range(2):
        cost = [(P[:, j] * D[f]).sum() for f in range(25)]
        assert new[j] == int(np.argmin(cost))


def test_auto_k_on_box_bar_box():
    v, f, truth = box_bar_box()
    _, D = distances(v, f)
    fc = fuzzy_cluster(D, "auto")
    assert 2 <= fc.k <= 20 and fc.k_auto


def test_colours_keep_the_part_recognisable():
    """Mild shading: a face on a boundary keeps (1 - shading) of its part colour; a certain
    face has the part colour; shading 1 is the full white blend, 0 flat colours."""
    from gpu_kernels.mesh.colors import DEFAULT_SHADING, certainty

    pal = palette(3)
    P = np.array([[0.5, 0.5, 0.0], [0, 1, 0], [0.6, 0.2, 0.2]], np.float32)
    np.testing.assert_allclose(certainty(P), [0.0, 1.0, 0.5], atol=1e-6)
    c = blend_face_colors(P, np.array([0, 1, 0]), pal)
    assert tuple(c[1]) == tuple(pal[1])
    for row, cert in ((0, 0.0), (2, 0.5)):
        t = 1 - DEFAULT_SHADING * (1 - cert)
        np.testing.assert_array_equal(c[row], np.rint(255 + (pal[0].astype(float) - 255) * t))
    assert 0 < DEFAULT_SHADING <= 0.5  # the part colour always dominates by default
    full = blend_face_colors(P, np.array([0, 1, 0]), pal, shading=1.0)
    assert tuple(full[0]) == (255, 255, 255)
    flat = blend_face_colors(P, np.array([0, 1, 0]), pal, shading=0.0)
    np.testing.assert_array_equal(flat, pal[[0, 1, 0]])


def test_palette_is_distinct_and_deterministic():
    p = palette(40)
    assert p.shape == (40, 3) and p.dtype == np.uint8
    assert len({tuple(x) for x in p}) == 40
    np.testing.assert_array_equal(p, palette(40))
    assert not np.any(np.all(p > 235, axis=1))  # nothing near white


def test_merge_weakest_boundaries_keeps_the_crease():
    """Over-segment box-bar-box into 6 and merge back to 3: the merges go across flat
    boundaries, and the concave junctions between boxes and bar survive."""
    from gpu_kernels.mesh.boundary import merge_weakest_boundaries

    v, f, truth = box_bar_box()
    g, D = distances(v, f, delta=0.05, eta_convex=0.02)
    fc = fuzzy_cluster(D, 6, max_iter=20, power=2.0)
    lab6 = np.argmax(fc.P, axis=1)
    lab3, merges = merge_weakest_boundaries(g, lab6, {0: 3}, np.zeros(6, dtype=int))
    assert len(merges) == 3 and np.unique(lab3).size == 3
    assert 1 - rand_index_error(lab3, truth) > 0.95
