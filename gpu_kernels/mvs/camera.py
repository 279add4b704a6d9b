"""Pinhole cameras ``P = K [R | t]``, projection, back-projection and the scene container.

Conventions (those of the Middlebury MVS files and of COLMAP): a world point ``X`` maps to
the camera frame as ``R X + t`` and to the pixel ``(u, v)`` by ``K``; pixel ``(0, 0)`` is the
centre of the top-left pixel, ``u`` grows to the right and ``v`` downwards. The *depth* of
a point is its camera-frame ``z`` (the "z-depth" of COLMAP's depth maps), and the ray of a
pixel is scaled so that its camera-frame ``z`` is 1: walking ``h`` along the ray reaches the
point of depth ``h``.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.mvs.camera import Camera
>>> cam = Camera(K=np.array([[500., 0, 320], [0, 500, 240], [0, 0, 1]]), R=np.eye(3),
...              t=np.zeros(3), width=640, height=480)
>>> uv, z = cam.project(np.array([[0.1, -0.2, 2.0]]))
>>> uv.round(3).tolist(), z.tolist()
([[345.0, 190.0]], [2.0])
>>> cam.backproject(uv, z).round(6).tolist()
[[0.1, -0.2, 2.0]]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpu_kernels.errors import InputError

__all__ = [
    "MVSInputError",
    "Camera",
    "MVSScene",
    "camera_from_projection",
    "look_at",
    "depth_to_points",
    "pixel_normals_to_world",
]


class MVSInputError(InputError):
    """A multi-view stereo input (scene, camera, parameter) is wrong. One clear line."""


@dataclass
class Camera:
    """A pinhole camera ``P = K [R | t]`` of an image ``width`` x ``height`` pixels."""

    K: np.ndarray
    R: np.ndarray
    t: np.ndarray
    width: int
    height: int

    def __post_init__(self):
        self.K = np.asarray(self.K, dtype=np.float64).reshape(3, 3)
        self.R = np.asarray(self.R, dtype=np.float64).reshape(3, 3)
        self.t = np.asarray(self.t, dtype=np.float64).reshape(3)
        self.width = int(self.width)
        self.height = int(self.height)
        if not (np.isfinite(self.K).all() and np.isfinite(self.R).all() and np.isfinite(self.t).all()):
            raise MVSInputError("camera parameters contain NaN or infinity")
        if abs(self.K[2, 2]) < 1e-12 or abs(np.linalg.det(self.K)) < 1e-12:
            raise MVSInputError("camera matrix K is singular (focal length 0?)")
        if self.width < 1 or self.height < 1:
            raise MVSInputError(f"camera image size {self.width} x {self.height} is empty")
        # a K with K[2, 2] != 1 (some files scale it) is normalised
        self.K = self.K / self.K[2, 2]
        d = np.linalg.det(self.R)
        if abs(d - 1.0) > 1e-3 or np.abs(self.R @ self.R.T - np.eye(3)).max() > 1e-3:
            raise MVSInputError(f"camera rotation is not a rotation matrix (det {d:.4f})")

    # ---------------------------------------------------------------- derived
    @property
    def P(self) -> np.ndarray:
        """The 3 x 4 projection matrix ``K [R | t]``."""
        return self.K @ np.hstack([self.R, self.t[:, None]])

    @property
    def center(self) -> np.ndarray:
        """The camera centre in world coordinates, ``-R^T t``."""
        return -self.R.T @ self.t

    @property
    def axis(self) -> np.ndarray:
        """The viewing direction (camera +z) in world coordinates."""
        return self.R[2].copy()

    @property
    def focal(self) -> float:
        """The mean focal length in pixels."""
        return float(0.5 * (self.K[0, 0] + self.K[1, 1]))

    # ---------------------------------------------------------------- mapping
    def to_camera(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return X @ self.R.T + self.t

    def project(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Project world points ``(N, 3)``: returns pixels ``(N, 2)`` and depths ``(N,)``."""
        Xc = self.to_camera(X)
        z = Xc[..., 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            p = Xc @ self.K.T
            uv = p[..., :2] / p[..., 2:3]
        return uv, z

    def rays(self, uv: np.ndarray) -> np.ndarray:
        """World directions of the pixels ``(N, 2)``, scaled to camera-frame ``z = 1``."""
        uv = np.asarray(uv, dtype=np.float64)
        ones = np.ones(uv.shape[:-1] + (1,))
        d_cam = np.concatenate([uv, ones], axis=-1) @ np.linalg.inv(self.K).T
        return d_cam @ self.R

    def backproject(self, uv: np.ndarray, depth: np.ndarray) -> np.ndarray:
        """World points of pixels ``(N, 2)`` at z-depths ``(N,)``."""
        depth = np.asarray(depth, dtype=np.float64)
        return self.center + self.rays(uv) * depth[..., None]

    def scaled(self, factor: float) -> Camera:
        """The camera of the image resized by ``factor`` (pixel centres kept consistent)."""
        S = np.array([[factor, 0, 0.5 * factor - 0.5], [0, factor, 0.5 * factor - 0.5], [0, 0, 1]])
        return Camera(S @ self.K, self.R, self.t, round(self.width * factor), round(self.height * factor))


def camera_from_projection(P: np.ndarray, width: int, height: int) -> Camera:
    """Decompose a 3 x 4 projection matrix into ``K``, ``R``, ``t`` (RQ, positive focal)."""
    P = np.asarray(P, dtype=np.float64)
    M = P[:, :3]
    # RQ decomposition through QR of the flipped transpose
    Pf = np.flipud(M).T
    Q, U = np.linalg.qr(Pf)
    K = np.flipud(np.fliplr(U.T))
    R = np.flipud(Q.T)
    S = np.diag(np.sign(np.diag(K)))
    K, R = K @ S, S @ R
    if np.linalg.det(R) < 0:
        R, K = -R, -K
    t = np.linalg.solve(K, P[:, 3])
    s = K[2, 2]
    return Camera(K / s, R, t, width, height)


def look_at(center, target, up, *, focal: float, width: int, height: int) -> Camera:
    """A camera at ``center`` looking at ``target`` (``up`` points to the image's top)."""
    center, target, up = (np.asarray(a, dtype=np.float64) for a in (center, target, up))
    z = target - center
    z /= np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:
        raise MVSInputError("look_at: the up vector is parallel to the viewing direction")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R = np.stack([x, y, z])
    K = np.array([[focal, 0, (width - 1) / 2], [0, focal, (height - 1) / 2], [0, 0, 1]])
    return Camera(K, R, -R @ center, width, height)


def depth_to_points(camera: Camera, depth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World points of every finite, positive pixel of a z-depth map.

    Returns ``(points (N, 3), flat pixel indices (N,))``.
    """
    depth = np.asarray(depth)
    idx = np.flatnonzero(np.isfinite(depth) & (depth > 0))
    v, u = np.divmod(idx, depth.shape[1])
    pts = camera.backproject(np.stack([u, v], axis=1).astype(np.float64), depth.reshape(-1)[idx])
    return pts, idx


def pixel_normals_to_world(camera: Camera, normals: np.ndarray) -> np.ndarray:
    """Camera-frame normals ``(..., 3)`` to world frame."""
    return np.asarray(normals, dtype=np.float64) @ camera.R


@dataclass
class MVSScene:
    """Calibrated images and (optionally) sparse points: what :func:`reconstruct` needs.

    Attributes
    ----------
    names : list of str
        One name per view (the image file name without its extension).
    cameras : list of Camera
    images : list of ndarray
        ``(H, W, 3)`` RGB (uint8, uint16 or float in [0, 1]) or ``(H, W)`` grey, one per view,
        the size of its camera.
    masks : list of ndarray or None
        Optional boolean ``(H, W)`` per view (True: reconstruct this pixel); None entries
        mean "the whole image".
    points : ndarray, optional
        ``(N, 3)`` sparse scene points (COLMAP's points3D, or triangulated features).
    point_views : list of ndarray, optional
        For each point the indices of the views that see it.
    point_colors : ndarray, optional
        ``(N, 3)`` uint8.
    bbox : ndarray, optional
        ``(2, 3)`` known bounding box of the scene (min, max).
    """

    names: list
    cameras: list
    images: list
    masks: list | None = None
    points: np.ndarray | None = None
    point_views: list | None = None
    point_colors: np.ndarray | None = None
    bbox: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.cameras)
        if n == 0:
            raise MVSInputError("the scene has no views")
        if len(self.names) != n or len(self.images) != n:
            raise MVSInputError(f"the scene has {n} cameras but {len(self.names)} names and "
                                f"{len(self.images)} images")
        if self.masks is None:
            self.masks = [None] * n
        for i, (cam, img) in enumerate(zip(self.cameras, self.images, strict=True)):
            if img is None:
                continue
            if img.shape[0] != cam.height or img.shape[1] != cam.width:
                raise MVSInputError(
                    f"image {self.names[i]} is {img.shape[1]} x {img.shape[0]} but its camera says "
                    f"{cam.width} x {cam.height}")
            m = self.masks[i]
            if m is not None and m.shape[:2] != img.shape[:2]:
                raise MVSInputError(f"the mask of {self.names[i]} is {m.shape[1]} x {m.shape[0]}, "
                                    f"its image {img.shape[1]} x {img.shape[0]}")
        if self.points is not None:
            self.points = np.asarray(self.points, dtype=np.float64).reshape(-1, 3)
            if self.point_views is not None and len(self.point_views) != len(self.points):
                raise MVSInputError("point_views must have one entry per point")

    @property
    def n_views(self) -> int:
        return len(self.cameras)

    def view_index(self, name_or_index) -> int:
        """The 0-based index of a view given by index or by name (with or without extension)."""
        if isinstance(name_or_index, int | np.integer):
            i = int(name_or_index)
            if not 0 <= i < self.n_views:
                raise MVSInputError(f"view index {i} is out of range: the scene has views 0..{self.n_views - 1}")
            return i
        s = str(name_or_index).strip()
        if s.lstrip("-").isdigit():
            return self.view_index(int(s))
        stem = s.rsplit("/", 1)[-1]
        for cand in (stem, stem.rsplit(".", 1)[0]):
            if cand in self.names:
                return self.names.index(cand)
        raise MVSInputError(f"no view named {s!r} in the scene (views: {', '.join(self.names[:6])}"
                            f"{', ...' if self.n_views > 6 else ''})")
