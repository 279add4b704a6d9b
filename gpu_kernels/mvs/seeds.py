"""Seeds without a sparse model: OpenCV SIFT features matched between neighbouring views,
filtered by the known epipolar geometry, chained into tracks and triangulated with the known
cameras (linear DLT over every view of a track, then reprojection and parallax checks).

Example
-------
>>> from gpu_kernels.mvs.synth import render_synthetic_scene
>>> from gpu_kernels.mvs.seeds import sift_seeds
>>> syn = render_synthetic_scene(n_views=8, width=128, height=96)
>>> pts, vis, cols = sift_seeds(syn.scene.images, syn.scene.cameras)
>>> len(pts) > 40, min(len(v) for v in vis) >= 2, cols.shape == (len(pts), 3)
(True, True, True)

Four views of that scene, 90 degrees apart, share too little for SIFT: no seed at all.
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs.camera import MVSInputError

__all__ = ["DEFAULT_MAX_FEATURES", "DEFAULT_SEED_PAIRS", "sift_seeds", "triangulate", "view_pairs",
           "scene_center"]

#: SIFT features per image
DEFAULT_MAX_FEATURES = 6000
#: each view is matched with this many views closest in viewing direction
DEFAULT_SEED_PAIRS = 4


def scene_center(cameras) -> np.ndarray:
    """The point closest (least squares) to all optical axes."""
    A = np.zeros((3, 3))
    b = np.zeros(3)
    for c in cameras:
        M = np.eye(3) - np.outer(c.axis, c.axis)
        A += M
        b += M @ c.center
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        return np.mean([c.center + c.axis for c in cameras], axis=0)


def view_pairs(cameras, k: int = DEFAULT_SEED_PAIRS, *, min_deg: float = 2.0, max_deg: float = 70.0):
    """Pairs ``(i, j)``, ``i < j``: each view with its ``k`` nearest views by the angle their
    rays make at the scene centre."""
    c = scene_center(cameras)
    d = np.array([c - cam.center for cam in cameras])
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    ang = np.degrees(np.arccos(np.clip(d @ d.T, -1, 1)))
    pairs = set()
    for i in range(len(cameras)):
        order = [j for j in np.argsort(ang[i]) if j != i and min_deg <= ang[i, j] <= max_deg]
        for j in order[:k]:
            pairs.add((min(i, j), max(i, j)))
    return sorted(pairs)


def _fundamental(ca, cb) -> np.ndarray:
    R = cb.R @ ca.R.T
    t = cb.t - R @ ca.t
    tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
    return np.linalg.inv(cb.K).T @ tx @ R @ np.linalg.inv(ca.K)


def _sampson(F, xa, xb):
    ha = np.c_[xa, np.ones(len(xa))]
    hb = np.c_[xb, np.ones(len(xb))]
    Fx = ha @ F.T
    Ftx = hb @ F
    num = np.sum(hb * Fx, axis=1) ** 2
    den = Fx[:, 0] ** 2 + Fx[:, 1] ** 2 + Ftx[:, 0] ** 2 + Ftx[:, 1] ** 2
    return np.sqrt(num / np.maximum(den, 1e-30))


def triangulate(Ps: np.ndarray, uvs: np.ndarray) -> np.ndarray:
    """Linear (DLT) triangulation of tracks of equal length: ``Ps (T, m, 3, 4)``,
    ``uvs (T, m, 2)`` -> ``(T, 3)``."""
    A1 = uvs[..., 0, None] * Ps[..., 2, :] - Ps[..., 0, :]
    A2 = uvs[..., 1, None] * Ps[..., 2, :] - Ps[..., 1, :]
    A = np.concatenate([A1, A2], axis=1)
    A = A / np.maximum(np.linalg.norm(A, axis=2, keepdims=True), 1e-30)
    _, _, vt = np.linalg.svd(A)
    X = vt[:, -1]
    return X[:, :3] / X[:, 3:4]


def _find(parent, x):
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


def sift_seeds(images, cameras, *, masks=None, pairs=None, max_features: int = DEFAULT_MAX_FEATURES,
               neighbors_per_view: int = DEFAULT_SEED_PAIRS, ratio: float = 0.8, max_epipolar_px: float = 1.5,
               max_reproj_px: float = 2.0, min_angle_deg: float = 1.5, progress=None):
    """Sparse seed points from SIFT matches between neighbouring views.

    Returns ``(points (N, 3), point_views (list of view-index arrays), colors (N, 3) uint8)``.
    """
    import cv2

    progress = as_progress(progress)
    n = len(images)
    if n < 2:
        raise MVSInputError("SIFT seeds need at least 2 views")
    if pairs is None:
        pairs = view_pairs(cameras, neighbors_per_view)
    sift = cv2.SIFT_create(nfeatures=int(max_features))
    kps, descs = [], []
    for i, img in enumerate(images):
        progress.update(0.4 * i / n, f"SIFT features {i + 1}/{n}")
        a = np.asarray(img)
        if a.dtype != np.uint8:
            a = np.clip(a.astype(np.float32) * (255.0 if a.dtype.kind == "f" else 255.0 / np.iinfo(a.dtype).max),
                        0, 255).astype(np.uint8)
        g = cv2.cvtColor(a[..., :3], cv2.COLOR_RGB2GRAY) if a.ndim == 3 else a
        m = None
        if masks is not None and masks[i] is not None:
            m = np.asarray(masks[i]).astype(np.uint8) * 255
        kp, de = sift.detectAndCompute(g, m)
        kps.append(np.array([k.pt for k in kp], np.float64).reshape(-1, 2))
        descs.append(de if de is not None else np.zeros((0, 128), np.float32))
    offs = np.concatenate([[0], np.cumsum([len(k) for k in kps])]).astype(np.int64)
    parent = np.arange(offs[-1])
    matcher = cv2.BFMatcher(cv2.NORM_L2)
    for pi, (a, b) in enumerate(pairs):
        progress.update(0.4 + 0.4 * pi / max(len(pairs), 1), f"matching pair {pi + 1}/{len(pairs)}")
        if len(descs[a]) < 2 or len(descs[b]) < 2:
            continue
        mm = matcher.knnMatch(descs[a], descs[b], k=2)
        qa, qb = [], []
        for m2 in mm:
            if len(m2) == 2 and m2[0].distance < ratio * m2[1].distance:
                qa.append(m2[0].queryIdx)
                qb.append(m2[0].trainIdx)
        if not qa:
            continue
        qa, qb = np.array(qa), np.array(qb)
        F = _fundamental(cameras[a], cameras[b])
        ok = _sampson(F, kps[a][qa], kps[b][qb]) < max_epipolar_px
        for x, y in zip(qa[ok] + offs[a], qb[ok] + offs[b], strict=True):
            rx, ry = _find(parent, x), _find(parent, y)
            if rx != ry:
                parent[max(rx, ry)] = min(rx, ry)
    progress.update(0.85, "triangulating")
    roots = np.array([_find(parent, x) for x in range(offs[-1])], np.int64)
    view_of = np.repeat(np.arange(n), np.diff(offs))
    order = np.argsort(roots, kind="stable")
    r_sorted = roots[order]
    starts = np.flatnonzero(np.r_[True, r_sorted[1:] != r_sorted[:-1]])
    ends = np.r_[starts[1:], len(order)]
    tracks = []
    for s, e in zip(starts, ends, strict=True):
        if e - s < 2:
            continue
        mem = order[s:e]
        vv = view_of[mem]
        if len(np.unique(vv)) != len(vv):
            continue  # two features of one image in one track: ambiguous
        tracks.append(mem)
    Pm = np.array([c.P for c in cameras])
    centers = np.array([c.center for c in cameras])
    pts, vis = [], []
    by_len: dict[int, list] = {}
    for tr in tracks:
        by_len.setdefault(len(tr), []).append(tr)
    for _m, group in by_len.items():
        g = np.array(group)
        vv = view_of[g]
        uv = np.concatenate(kps)[g] if len(kps) else np.zeros((0, 2))
        X = triangulate(Pm[vv], uv)
        # checks in every view of the track
        Xh = np.c_[X, np.ones(len(X))]
        proj = np.einsum("tmij,tj->tmi", Pm[vv], Xh)
        with np.errstate(divide="ignore", invalid="ignore"):
            err = np.linalg.norm(proj[..., :2] / proj[..., 2:3] - uv, axis=2)
        front = proj[..., 2] > 0
        d = X[:, None, :] - centers[vv]
        d /= np.linalg.norm(d, axis=2, keepdims=True)
        cosm = np.einsum("tai,tbi->tab", d, d).min(axis=(1, 2))
        angle = np.degrees(np.arccos(np.clip(cosm, -1, 1)))
        good = np.all(front, 1) & np.all(err < max_reproj_px, 1) & (angle >= min_angle_deg) & np.isfinite(X).all(1)
        for k in np.flatnonzero(good):
            pts.append(X[k])
            vis.append(np.sort(vv[k]).astype(np.int32))
    pts = np.array(pts, np.float64).reshape(-1, 3)
    cols = np.zeros((len(pts), 3), np.uint8)
    for k, (X, v) in enumerate(zip(pts, vis, strict=True)):
        uv, _ = cameras[v[0]].project(X[None])
        u, w = np.clip(np.round(uv[0]).astype(int), 0, [cameras[v[0]].width - 1, cameras[v[0]].height - 1])
        img = np.asarray(images[v[0]])
        px = img[w, u]
        cols[k] = (np.broadcast_to(px, (3,)) if img.dtype == np.uint8 else
                   np.clip(np.broadcast_to(px, (3,)) * 255, 0, 255)).astype(np.uint8)
    progress.update(1.0, f"{len(pts)} seed points")
    return pts, vis, cols
