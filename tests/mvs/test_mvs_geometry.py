"""Cameras: projection / back-projection round trips, decomposition, the optimiser's pair
geometry and the normal encoding, view selection and seeds."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.mvs.camera import Camera, MVSInputError, camera_from_projection, depth_to_points, look_at
from gpu_kernels.mvs.optimize import normals_from_offsets, pair_geometry
from gpu_kernels.mvs.views import select_views


def _random_camera(rng, w=320, h=240):
    C = rng.normal(size=3) * 2 + np.array([0, 0, 3])
    cam = look_at(C, rng.normal(size=3) * 0.1, [0, 0, 1], focal=rng.uniform(200, 400), width=w, height=h)
    K = cam.K.copy()
    K[0, 1] = 0.5
    K[1, 1] *= 1.02
    return Camera(K, cam.R, cam.t, w, h)


def test_project_backproject_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(5):
        cam = _random_camera(rng)
        X = rng.normal(size=(100, 3)) * 0.5
        uv, z = cam.project(X)
        assert (z > 0).all()
        np.testing.assert_allclose(cam.backproject(uv, z), X, atol=1e-9)
        # a pixel ray at depth z projects back to the pixel
        uv2 = rng.uniform([0, 0], [320, 240], size=(50, 2))
        zz = rng.uniform(1, 5, 50)
        uv3, z3 = cam.project(cam.backproject(uv2, zz))
        np.testing.assert_allclose(uv3, uv2, atol=1e-9)
        np.testing.assert_allclose(z3, zz, atol=1e-9)
        # the P matrix agrees with project
        Xh = np.c_[X, np.ones(len(X))] @ cam.P.T
        np.testing.assert_allclose(Xh[:, :2] / Xh[:, 2:], uv, atol=1e-9)


def test_camera_from_projection_recovers_krt():
    rng = np.random.default_rng(1)
    cam = _random_camera(rng)
    back = camera_from_projection(3.7 * cam.P, cam.width, cam.height)
    np.testing.assert_allclose(back.K, cam.K, atol=1e-8)
    np.testing.assert_allclose(back.R, cam.R, atol=1e-10)
    np.testing.assert_allclose(back.t, cam.t, atol=1e-10)


def test_bad_camera():
    with pytest.raises(MVSInputError, match="singular"):
        Camera(np.zeros((3, 3)), np.eye(3), np.zeros(3), 10, 10)
    with pytest.raises(MVSInputError, match="not a rotation"):
        Camera(np.eye(3), 2 * np.eye(3), np.zeros(3), 10, 10)


def test_depth_to_points_and_pair_geometry():
    rng = np.random.default_rng(2)
    a, b = _random_camera(rng), _random_camera(rng)
    d = rng.uniform(2, 4, (240, 320))
    d[0, 0] = np.nan
    P, idx = depth_to_points(a, d)
    assert len(idx) == 240 * 320 - 1
    uv_b, _ = b.project(P)
    Hm, e = pair_geometry(a, b)
    v, u = np.divmod(idx, 320)
    p = e[None] + d.reshape(-1)[idx][:, None] * (np.stack([u, v, np.ones_like(u)], 1) @ Hm.T)
    np.testing.assert_allclose(p[:, :2] / p[:, 2:], uv_b, atol=1e-6)


def test_normals_from_offsets_match_a_plane():
    """hs, ht of a plane's z-depth map give that plane's normal."""
    cam = look_at([0.3, -0.2, -3], [0, 0, 0], [0, -1, 0], focal=300, width=200, height=150)
    n_world = np.array([0.2, -0.3, -1.0])
    n_world /= np.linalg.norm(n_world)
    # depth of the plane n . X = 0 along each pixel ray
    v, u = np.mgrid[0:150, 0:200].astype(float)
    rays = cam.rays(np.stack([u.ravel(), v.ravel()], 1))
    z = -(cam.center @ n_world) / (rays @ n_world)
    z = z.reshape(150, 200)
    hs = np.gradient(z, axis=1)
    ht = np.gradient(z, axis=0)
    n = normals_from_offsets(cam.K, u[75, 100], v[75, 100], z[75, 100], hs[75, 100], ht[75, 100])
    n_cam = cam.R @ n_world
    n_cam *= -np.sign(n_cam[2])
    assert np.degrees(np.arccos(np.clip(n @ n_cam, -1, 1))) < 0.5


def test_view_selection_prefers_parallax_and_shared_points():
    angs = [0, 2, 15, 30, 45, 60, 180]
    cams = [look_at([3 * np.cos(np.radians(a)), 3 * np.sin(np.radians(a)), 1], [0, 0, 0], [0, 0, 1],
                    focal=200, width=64, height=48) for a in angs]
    rng = np.random.default_rng(0)
    pts = rng.normal(scale=0.2, size=(300, 3))
    vis = [np.array([0, 1, 2, 3, 4, 5])] * 300   # view 6 (opposite side) sees nothing shared
    sel = select_views(cams, pts, vis, 0, max_neighbors=4)
    assert 6 not in sel
    assert sel[0] in (2, 3, 4, 5) and 1 not in sel[:2]   # the 2-degree near-duplicate is not first
    assert len(sel) == 4


def _scores_by_point(cams, pts, vis, ref, chosen, alpha_max_deg=10.0):
    """Goesele's score written point by point (the definition, no vectorisation)."""
    am = np.radians(alpha_max_deg)
    out = np.zeros(len(cams))
    for v in range(len(cams)):
        if v in chosen or v == ref:
            continue
        for X, tr in zip(pts, vis, strict=True):
            tr = list(np.asarray(tr).reshape(-1))
            if ref not in tr or v not in tr:
                continue
            w = 1.0
            dv = (X - cams[v].center) / np.linalg.norm(X - cams[v].center)
            for c in chosen:
                dc = (X - cams[c].center) / np.linalg.norm(X - cams[c].center)
                w *= min((np.arccos(np.clip(dv @ dc, -1, 1)) / am) ** 2, 1.0)
            s_ref = abs((X - cams[ref].center) @ cams[ref].R[2]) / cams[ref].focal
            s_v = abs((X - cams[v].center) @ cams[v].R[2]) / cams[v].focal
            r = s_ref / max(s_v, 1e-30)
            out[v] += w * (2.0 / r if r >= 2 else (1.0 if r >= 1 else r))
    return out


def test_view_scores_kept_over_the_greedy_steps_equal_the_definition():
    """Issue 20: view selection keeps each reference view's rays, footprints and tracks over
    its greedy steps (8x faster on templeSparseRing); the scores and the choice are those of
    the definition, with tracks of any length (empty ones too) and indices out of range."""
    from gpu_kernels.mvs.views import view_scores

    rng = np.random.default_rng(3)
    cams = [look_at([3 * np.cos(a), 3 * np.sin(a), 1 + 0.3 * np.sin(3 * a)], [0, 0, 0], [0, 0, 1],
                    focal=150 + 40 * (k % 3), width=64, height=48)
            for k, a in enumerate(np.radians([0, 5, 20, 40, 65, 90, 150, 200]))]
    pts = rng.normal(scale=0.3, size=(120, 3))
    vis = [rng.choice(8, size=rng.integers(0, 6), replace=False) for _ in range(120)]
    vis[0] = np.array([0, 1, 99, -1])      # out-of-range indices are ignored
    for ref, chosen in ((0, [0]), (0, [0, 3]), (2, [2, 5, 6]), (7, [7])):
        np.testing.assert_allclose(view_scores(cams, pts, vis, ref, chosen),
                                   _scores_by_point(cams, pts, vis, ref, chosen), rtol=1e-9, atol=1e-12)
    for ref in range(8):
        sel = select_views(cams, pts, vis, ref, max_neighbors=4)
        chosen = [ref]
        for v in sel:      # every greedy step took the best score of the definition
            sc = _scores_by_point(cams, pts, vis, ref, chosen)
            if sc.max() <= 0:
                break
            assert v == int(np.argmax(sc)), (ref, sel)
            chosen.append(v)
    assert not view_scores(cams, pts, [np.array([], int)] * 120, 0, [0]).any()
