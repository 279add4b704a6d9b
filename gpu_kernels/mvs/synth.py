"""A synthetic multi-view stereo scene with exact ground truth: textured spheres, boxes and a
ground plane, seen by a ring of cameras, ray-cast analytically.

The texture is a *solid* texture (a sum of random 3-D sinusoids per colour channel), so a
surface point has the same albedo in every view; shading is Lambertian under one distant
light plus ambient, which is view-independent too. Images are rendered with ``supersample``
x ``supersample`` rays per pixel (box filter); the depth and normal maps are exact at pixel
centres (depth = camera-frame z, NaN where a ray hits nothing).

Example
-------
>>> from gpu_kernels.mvs.synth import render_synthetic_scene
>>> syn = render_synthetic_scene(n_views=3, width=64, height=48, supersample=1)
>>> syn.scene.n_views, syn.depths[0].shape, bool((syn.depths[0] > 0).all())
(3, (48, 64), True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs.camera import Camera, MVSInputError, MVSScene, look_at

__all__ = ["DEFAULT_SYNTH_VIEWS", "DEFAULT_SYNTH_SIZE", "SyntheticScene", "default_objects",
           "render_synthetic_scene", "ray_cast"]

DEFAULT_SYNTH_VIEWS = 12
DEFAULT_SYNTH_SIZE = (320, 240)


@dataclass
class SyntheticScene:
    """A rendered scene: ``scene`` (uint8 images, cameras, no seeds) and ground truth per view:
    ``depths`` (z-depth, NaN = background), ``normals`` (camera frame, facing the camera) and
    ``labels`` (object index, -1 = background)."""

    scene: MVSScene
    depths: list
    normals: list
    labels: list
    objects: list = field(default_factory=list)
    bbox: np.ndarray | None = None


def default_objects() -> list[dict]:
    """The default scene: a ground plane, two spheres and two boxes (one rotated)."""
    return [
        {"kind": "plane", "z": 0.0, "tint": (0.85, 0.8, 0.7)},
        {"kind": "sphere", "center": (0.0, 0.0, 0.5), "radius": 0.5, "tint": (0.9, 0.6, 0.5)},
        {"kind": "sphere", "center": (0.75, -0.55, 0.25), "radius": 0.25, "tint": (0.5, 0.8, 0.6)},
        {"kind": "box", "center": (-0.7, 0.45, 0.3), "size": (0.5, 0.6, 0.6), "angle": 0.5,
         "tint": (0.6, 0.7, 0.95)},
        {"kind": "box", "center": (0.55, 0.75, 0.15), "size": (0.4, 0.3, 0.3), "angle": -0.3,
         "tint": (0.95, 0.9, 0.5)},
    ]


def _intersect(objects, C, D):
    """Nearest hit along rays ``C + s D`` (D unit): ``(s, normal, label)``."""
    n = D.shape[0]
    best = np.full(n, np.inf)
    nrm = np.zeros((n, 3))
    lab = np.full(n, -1, np.int32)
    for k, ob in enumerate(objects):
        kind = ob["kind"]
        if kind == "plane":
            z0 = float(ob.get("z", 0.0))
            with np.errstate(divide="ignore", invalid="ignore"):
                s = (z0 - C[2]) / D[:, 2]
            s = np.where((s > 1e-9) & np.isfinite(s), s, np.inf)
            hn = np.tile([0.0, 0.0, 1.0 if C[2] > z0 else -1.0], (n, 1))
        elif kind == "sphere":
            c = np.asarray(ob["center"], float)
            r = float(ob["radius"])
            oc = C - c
            b = D @ oc
            cc = oc @ oc - r * r
            disc = b * b - cc
            sq = np.sqrt(np.maximum(disc, 0))
            s1 = -b - sq
            s2 = -b + sq
            s = np.where(s1 > 1e-9, s1, np.where(s2 > 1e-9, s2, np.inf))
            s = np.where(disc >= 0, s, np.inf)
            X = C + s[:, None] * D
            hn = (X - c) / r
        elif kind == "box":
            c = np.asarray(ob["center"], float)
            half = 0.5 * np.asarray(ob["size"], float)
            a = float(ob.get("angle", 0.0))
            Rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
            Cl = Rz.T @ (C - c)
            Dl = D @ Rz
            with np.errstate(divide="ignore", invalid="ignore"):
                inv = 1.0 / Dl
                t1 = (-half - Cl) * inv
                t2 = (half - Cl) * inv
            tmin = np.nanmax(np.minimum(t1, t2), axis=1)
            tmax = np.nanmin(np.maximum(t1, t2), axis=1)
            hit = (tmax >= tmin) & (tmax > 1e-9)
            s = np.where(hit, np.where(tmin > 1e-9, tmin, tmax), np.inf)
            axis = np.argmax(np.minimum(t1, t2), axis=1)
            Xl = Cl + np.where(np.isfinite(s), s, 0)[:, None] * Dl
            hl = np.zeros((n, 3))
            hl[np.arange(n), axis] = np.sign(Xl[np.arange(n), axis])
            hn = hl @ Rz.T
        else:
            raise MVSInputError(f"unknown synthetic object kind {kind!r}: use plane, sphere or box")
        closer = s < best
        best = np.where(closer, s, best)
        nrm[closer] = hn[closer]
        lab[closer] = k
    return best, nrm, lab


def _texture(X, lab, objects, rng_seed: int, freq_range=(2.5, 14.0)):
    rng = np.random.default_rng(rng_seed)
    m = 20
    freqs = np.exp(rng.uniform(np.log(freq_range[0]), np.log(freq_range[1]), size=(3, m)))
    dirs = rng.normal(size=(3, m, 3))
    dirs /= np.linalg.norm(dirs, axis=2, keepdims=True)
    phase = rng.uniform(0, 2 * np.pi, size=(3, m))
    amp = 1.0 / np.sqrt(freqs)
    out = np.empty((X.shape[0], 3))
    for c in range(3):
        arg = 2 * np.pi * (X @ (dirs[c] * freqs[c][:, None]).T) + phase[c]
        f = (np.sin(arg) * amp[c]).sum(1) / np.sqrt((amp[c] ** 2).sum() / 2)
        out[:, c] = 0.5 + 0.45 * np.tanh(0.9 * f)
    # mix the channels a little so the colours are not independent noise
    mix = np.array([[0.7, 0.2, 0.1], [0.15, 0.7, 0.15], [0.1, 0.25, 0.65]])
    out = out @ mix.T
    tint = np.array([objects[k].get("tint", (1, 1, 1)) if k >= 0 else (0, 0, 0) for k in range(len(objects))]
                    + [(0, 0, 0)])
    return out * tint[np.where(lab >= 0, lab, len(objects))]


def ray_cast(camera: Camera, objects, *, offsets=((0.0, 0.0),), light=(0.4, -0.3, 0.85), seed: int = 7,
             freq_range=(2.5, 14.0)):
    """Render ``camera``: returns ``(image (H, W, 3) float in [0, 1], depth, normals_cam, labels)``;
    the image averages the rays at the sub-pixel ``offsets``, the rest is at the centres."""
    W, H = camera.width, camera.height
    vv, uu = np.mgrid[0:H, 0:W].astype(np.float64)
    L = np.asarray(light, float)
    L /= np.linalg.norm(L)
    img = np.zeros((H * W, 3))
    depth = normals = labels = None
    C = camera.center
    for k, (du, dv) in enumerate(((0.0, 0.0),) + tuple(offsets)):
        uv = np.stack([uu.ravel() + du, vv.ravel() + dv], 1)
        Dz = camera.rays(uv)                       # camera-z = 1 scaling
        Dn = np.linalg.norm(Dz, axis=1)
        D = Dz / Dn[:, None]
        s, nrm, lab = _intersect(objects, C, D)
        hit = np.isfinite(s)
        if k == 0:
            z = np.where(hit, s / Dn, np.nan)
            depth = z.reshape(H, W).astype(np.float32)
            ncam = nrm @ camera.R.T
            ncam[~hit] = np.nan
            normals = ncam.reshape(H, W, 3).astype(np.float32)
            labels = lab.reshape(H, W)
            continue
        X = C + s[hit, None] * D[hit]
        alb = _texture(X, lab[hit], objects, seed, freq_range)
        shade = 0.35 + 0.65 * np.clip(nrm[hit] @ L, 0, 1)
        img[hit] += alb * shade[:, None]
    img /= max(len(offsets), 1)
    return img.reshape(H, W, 3), depth, normals, labels


def render_synthetic_scene(*, n_views: int = DEFAULT_SYNTH_VIEWS, width: int = DEFAULT_SYNTH_SIZE[0],
                           height: int = DEFAULT_SYNTH_SIZE[1], radius: float = 3.2, elevation_deg: float = 35.0,
                           fov_deg: float = 48.0, objects=None, supersample: int = 2, seed: int = 7,
                           noise: float = 0.0, progress=None) -> SyntheticScene:
    """Render a ring of ``n_views`` cameras around the default objects (or ``objects``).

    The cameras sit on a circle of ``radius`` at ``elevation_deg`` above the ground plane,
    look at the point (0, 0, 0.3) and have a horizontal field of view of ``fov_deg``. The
    texture's wavelengths span 3 to 16 pixels at the target's distance, whatever the image
    size, so that a 5 x 5 window sees the same amount of texture at every resolution.
    ``noise`` adds Gaussian noise (standard deviation in [0, 1] units) before 8-bit rounding.
    """
    progress = as_progress(progress)
    if n_views < 2:
        raise MVSInputError(f"a synthetic scene needs at least 2 views, got {n_views}")
    if width < 16 or height < 16 or width * height > 4096 * 4096:
        raise MVSInputError(f"synthetic image size {width} x {height} is out of range (16 .. 4096)")
    objects = default_objects() if objects is None else objects
    ss = max(int(supersample), 1)
    offs = tuple(((i + 0.5) / ss - 0.5, (j + 0.5) / ss - 0.5) for j in range(ss) for i in range(ss))
    focal = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
    el = np.radians(elevation_deg)
    target = np.array([0.0, 0.0, 0.3])
    rng = np.random.default_rng(seed + 1)
    cams, imgs, depths, normals, labels, names = [], [], [], [], [], []
    for i in range(n_views):
        progress.update(i / n_views, f"rendering view {i + 1}/{n_views}")
        az = 2 * np.pi * i / n_views
        C = target + radius * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
        cam = look_at(C, target, [0, 0, 1], focal=focal, width=width, height=height)
        ppu = focal / radius  # pixels per scene unit at the target
        img, d, n, lab = ray_cast(cam, objects, offsets=offs, seed=seed, freq_range=(ppu / 16, ppu / 3.0))
        if noise > 0:
            img = img + rng.normal(scale=noise, size=img.shape)
        cams.append(cam)
        imgs.append(np.clip(np.rint(img * 255), 0, 255).astype(np.uint8))
        depths.append(d)
        normals.append(n)
        labels.append(lab)
        names.append(f"view{i:03d}")
    progress.update(1.0, "rendered")
    bbox = np.array([[-1.1, -1.0, 0.0], [1.1, 1.05, 1.0]])
    scene = MVSScene(names=names, cameras=cams, images=imgs, meta={"format": "synthetic"})
    return SyntheticScene(scene, depths, normals, labels, objects, bbox)
