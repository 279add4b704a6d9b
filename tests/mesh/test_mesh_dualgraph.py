"""Dual-graph weights on hand-built meshes, and mesh cleaning of degenerate input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpu_kernels.mesh import dualgraph as dg
from gpu_kernels.mesh.dualgraph import GEOD_FLOOR, MeshInputError, clean_mesh, dual_graph, ref_scale


@pytest.fixture
def cosine(monkeypatch):
    """Katz & Tal's own angular term, 1 - cos(dihedral) per arc, averaged over the arcs."""
    monkeypatch.setattr(dg, "ANGLE_MODE", "cosine")


def orient_outward(v, f):
    """Flip faces whose normal points towards the centroid of the (convex) solid."""
    c = v.mean(axis=0)
    f = f.copy()
    for i, (a, b, d) in enumerate(f):
        n = np.cross(v[b] - v[a], v[d] - v[a])
        if np.dot(n, (v[a] + v[b] + v[d]) / 3 - c) < 0:
            f[i] = (a, d, b)
    return f


def tetrahedron():
    v = np.array([(1, 1, 1), (1, -1, -1), (-1, 1, -1), (-1, -1, 1)], float)
    f = orient_outward(v, np.array([(0, 1, 2), (0, 1, 3), (0, 2, 3), (1, 2, 3)]))
    return v, f


def folded_strip(alpha=math.radians(60)):
    """Three unit panels along x: flat, rising by ``alpha`` (a concave, valley fold), then flat
    again (a convex, ridge fold). Normals point up."""
    c, s = math.cos(alpha), math.sin(alpha)
    v = np.array([
        (0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0),          # 0 p00, 1 p10, 2 p01, 3 p11
        (1 + c, 0, s), (1 + c, 1, s),                          # 4 r0, 5 r1
        (2 + c, 0, s), (2 + c, 1, s),                          # 6 t0, 7 t1
    ], float)
    f = np.array([
        (0, 1, 3), (0, 3, 2),        # panel 1
        (1, 4, 5), (1, 5, 3),        # panel 2
        (4, 6, 7), (4, 7, 5),        # panel 3
    ])
    return v, f


def arc(g, a, b):
    for i in range(g.n_edges):
        if {int(g.src[i]), int(g.dst[i])} == {a, b}:
            return i
    raise AssertionError(f"no arc between faces {a} and {b}")


def test_tetrahedron_weights(cosine):
    v, f = tetrahedron()
    eta = 0.2
    g = dual_graph(v, f, delta=0.5, eta_convex=eta)
    assert g.n_edges == 6 and g.n_components == 1
    assert not g.concave.any()
    # angle between outward normals of a regular tetrahedron: cos = -1/3
    np.testing.assert_allclose(g.ang, eta * (1 + 1 / 3), rtol=1e-12)
    # unfolded: each centroid lies at the inradius a/(2 sqrt 3) from the shared edge,
    # opposite the edge midpoint, so Geod = a / sqrt(3) with a = 2 sqrt 2
    np.testing.assert_allclose(g.geod, 2 * math.sqrt(2) / math.sqrt(3), rtol=1e-12)
    # all arcs equal: w = delta * 1 + (1 - delta) * 1 (+ the geodesic floor)
    np.testing.assert_allclose(g.weight, 1.0 + GEOD_FLOOR, rtol=1e-12)
    assert g.n_boundary_edges == 0 and g.n_nonmanifold_edges == 0


def test_folded_strip_concave_convex_and_unfolding(cosine):
    alpha = math.radians(60)
    v, f = folded_strip(alpha)
    eta = 0.3
    g = dual_graph(v, f, delta=0.4, eta_convex=eta)
    assert g.n_edges == 5
    valley = arc(g, 0, 3)   # panel 1 (0,1,3) and panel 2 (1,5,3) share edge 1-3
    ridge = arc(g, 2, 5)    # panel 2 (1,4,5) and panel 3 (4,7,5) share edge 4-5
    flat = arc(g, 0, 1)
    assert g.concave[valley] and not g.concave[ridge]
    np.testing.assert_allclose(g.ang[valley], 1.0 * (1 - math.cos(alpha)), rtol=1e-12)
    np.testing.assert_allclose(g.ang[ridge], eta * (1 - math.cos(alpha)), rtol=1e-12)
    assert g.ang[flat] == pytest.approx(0.0, abs=1e-12)
    # unfolded distance: centroids at (along edge 1/3, 1/3 off) and (2/3, 1/3 off) -> sqrt(5)/3
    np.testing.assert_allclose(g.geod[valley], math.sqrt(5) / 3, rtol=1e-12)
    # straight 3D distance is shorter than the unfolded one across a fold
    c0, c3 = g.centroids[0], g.centroids[3]
    assert np.linalg.norm(c0 - c3) < g.geod[valley]
    # weights follow the formula with the averages
    w = 0.4 * g.geod / g.geod.mean() + 0.6 * g.ang / g.ang.mean() + GEOD_FLOOR * g.geod / g.geod.mean()
    np.testing.assert_allclose(g.weight, w, rtol=1e-12)
    assert g.avg_ang == pytest.approx(g.ang.mean())


def test_scale_bending_on_the_tetrahedron():
    """The default term: theta * min(1, theta r0 / g), lengths in units of r0."""
    v, f = tetrahedron()
    eta = 0.2
    g = dual_graph(v, f, delta=0.5, eta_convex=eta)
    theta = math.acos(-1 / 3)                      # between outward normals
    geod = 2 * math.sqrt(2) / math.sqrt(3)
    area = 4 * (math.sqrt(3) / 4) * 8              # four equilateral faces of side 2 sqrt 2
    r0 = math.sqrt(area / dg.REF_FACES * 4 / math.sqrt(3)) / math.sqrt(3)
    assert g.ref_scale == pytest.approx(r0, rel=1e-12) == pytest.approx(ref_scale(area), rel=1e-12)
    np.testing.assert_allclose(g.ang, eta * theta * min(1.0, theta * r0 / geod), rtol=1e-12)
    # equal arcs: the angular cost per unit length is ang / geod, so the angular term is
    # geod / r0 like the geodesic one, and every weight is (1 + floor) * geod / r0
    np.testing.assert_allclose(g.weight, (1 + GEOD_FLOOR) * geod / r0, rtol=1e-12)


def test_crease_costs_the_same_at_any_resolution():
    """A 60-degree valley crossed by a straight path costs the same whatever the spacing:
    the bend is the crease's angle once the spacing is finer than the reference scale."""
    alpha = math.radians(60)

    def strip(n):
        # two planes meeting in a valley along y, each n x n squares of side 1/n, split in two
        xs = np.linspace(0, 1, n + 1)
        pts, faces = [], []
        c, s_ = math.cos(alpha), math.sin(alpha)
        for side in (0, 1):
            base = len(pts)
            for j in range(n + 1):
                for i in range(n + 1):
                    x = xs[i]
                    pts.append((-x, xs[j], 0.0) if side == 0 else (x * c, xs[j], x * s_))
            for j in range(n):
                for i in range(n):
                    a = base + j * (n + 1) + i
                    q = (a, a + 1, a + n + 2, a + n + 1)
                    tri = [(q[0], q[1], q[2]), (q[0], q[2], q[3])]
                    faces += tri if side == 1 else [t[::-1] for t in tri]
        v = np.array(pts)
        f = np.array(faces)
        # merge the shared crease vertices
        v, inv = np.unique(np.round(v, 12), axis=0, return_inverse=True)
        return v, inv.reshape(-1)[f]

    totals = []
    for n in (60, 90):  # spacing finer than the reference scale (about 1/50 here)
        v, f = strip(n)
        g = dual_graph(v, f, delta=0.5, eta_convex=0.2)
        crease = g.concave & (g.ang > 1e-6)
        # the crease arcs carry the angle itself (theta r0 / g >= 1 here), nothing else bends
        np.testing.assert_allclose(g.ang[crease], alpha, rtol=1e-9)
        # cost of crossing: angular term of one crease arc, in units of r0 per unit of length
        totals.append(float(g.ang[crease][0] / g.avg_ang) * g.ref_scale)
    assert totals[0] == pytest.approx(totals[1], rel=0.02)


def test_flat_mesh_has_finite_positive_weights():
    v = np.array([(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)], float)
    f = np.array([(0, 1, 3), (0, 3, 2)])
    g = dual_graph(v, f, delta=0.0, eta_convex=0.2)
    assert np.all(np.isfinite(g.weight)) and np.all(g.weight > 0)
    assert any("flat" in w for w in g.warnings)


def test_duplicate_and_zero_area_faces_are_dropped():
    v, f = tetrahedron()
    v = np.vstack([v, [(0.5, 0.5, 0.5)]])
    f2 = np.vstack([f, f[1][::-1][None], [(0, 0, 1)], [(0, 1, 4)]])
    # (0, 1, 4) with vertex 4 on the line through 0 and ... make it exactly collinear
    v[4] = (v[0] + v[1]) / 2
    vc, fc, kept, rep = clean_mesh(v, f2)
    assert rep["n_duplicate_faces"] == 1
    assert rep["n_degenerate_faces"] == 2
    assert list(kept) == [0, 1, 2, 3]
    assert set(rep["dropped_faces"]) == {4, 5, 6}
    assert fc.shape == (4, 3)


def test_duplicate_vertices_are_merged():
    v, f = tetrahedron()
    v2 = np.vstack([v, v[0]])
    f2 = f.copy()
    f2[f2 == 0] = 4
    f2[0] = f[0]  # one face still uses the original vertex 0
    vc, fc, _, rep = clean_mesh(v2, f2)
    assert rep["n_merged_vertices"] == 1
    g = dual_graph(vc, fc, delta=0.5, eta_convex=0.2)
    assert g.n_components == 1 and g.n_edges == 6


def test_nonmanifold_edge_joins_every_pair():
    v = np.array([(0, 0, 0), (1, 0, 0), (0.5, 1, 0), (0.5, -1, 0.2), (0.5, 0.3, 1)], float)
    f = np.array([(0, 1, 2), (1, 0, 3), (0, 1, 4)])  # three faces on edge 0-1
    g = dual_graph(v, f, delta=0.5, eta_convex=0.2)
    assert g.n_nonmanifold_edges == 1
    assert g.n_edges == 3
    assert any("non-manifold" in w for w in g.warnings)
    assert np.all(np.isfinite(g.weight)) and np.all(g.weight > 0)


def test_two_components():
    v, f = tetrahedron()
    v2 = np.vstack([v, v + 10])
    f2 = np.vstack([f, f + 4])
    g = dual_graph(v2, f2, delta=0.5, eta_convex=0.2)
    assert g.n_components == 2
    assert np.bincount(g.component).tolist() == [4, 4]


@pytest.mark.parametrize("bad, msg", [
    (lambda v, f: (np.where(np.arange(12).reshape(4, 3) == 5, np.nan, v), f), "NaN"),
    (lambda v, f: (v, np.zeros((0, 3), int)), "no faces"),
    (lambda v, f: (np.zeros((0, 3)), f), "empty"),
    (lambda v, f: (v, f + 10), "out of range"),
    (lambda v, f: (v, np.array([(0, 0, 1), (2, 2, 2)])), "degenerate"),
])
def test_bad_input_raises_mesh_input_error(bad, msg):
    v, f = tetrahedron()
    vb, fb = bad(v, f)
    with pytest.raises(MeshInputError, match=msg):
        clean_mesh(vb, fb)
