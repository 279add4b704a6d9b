"""Synthetic image pairs with known flow: a natural image warped by a smooth analytic field.

The flow ``f`` is defined on the first image's grid; the second image is made so that
``IMG2(x + f(x)) = IMG1(x)`` (Middlebury's convention): ``IMG2(y) = IMG1(g(y))`` where
``g`` inverts ``x -> x + f(x)`` (fixed-point iteration), sampled with cubic splines. Pixels
whose target ``x + f(x)`` leaves the frame are marked invalid in the ground truth.

Kinds: ``translation``, ``rotation`` (about the centre), ``zoom`` (about the centre),
``vortex`` (a Gaussian swirl); ``magnitude`` is the largest displacement in pixels over the
image.

Example
-------
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> p = synthetic_pair("rotation", size=(64, 80), magnitude=5.0)
>>> p.img1.shape, p.flow.shape, round(float(abs(p.flow).max()), 1) <= 5.0
((64, 80), (64, 80, 2), True)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._common import FlowInputError

__all__ = ["KINDS", "IMAGES", "SyntheticPair", "synthetic_flow", "synthetic_pair", "warp_image_by_flow",
           "natural_image"]

KINDS = ("translation", "rotation", "zoom", "vortex")
#: scikit-image sample images used as the textures (shipped with scikit-image, no download)
IMAGES = ("astronaut", "coffee", "chelsea", "rocket", "camera", "motorcycle_left")


class SyntheticPair(NamedTuple):
    img1: np.ndarray      # float32 (H, W) or (H, W, 3), 0..1
    img2: np.ndarray
    flow: np.ndarray      # float32 (H, W, 2): (u, v)
    valid: np.ndarray     # bool (H, W)


def natural_image(name: str = "astronaut", size=(240, 320), *, gray: bool = True) -> np.ndarray:
    """A scikit-image sample picture resized to ``size`` (float32 0..1)."""
    from skimage import data, transform
    from skimage.color import rgb2gray

    if name not in IMAGES:
        raise FlowInputError(f"unknown sample image {name!r}: use one of {', '.join(IMAGES)}")
    img = getattr(data, name)()
    img = img.astype(np.float32) / (255.0 if img.dtype == np.uint8 else 1.0)
    if img.ndim == 3:
        img = img[..., :3]
        if gray:
            img = rgb2gray(img).astype(np.float32)
    h, w = size
    H, W = img.shape[:2]
    # crop to the target aspect ratio, then resize
    if W * h > H * w:
        cw = int(round(H * w / h))
        x0 = (W - cw) // 2
        img = img[:, x0:x0 + cw]
    else:
        ch = int(round(W * h / w))
        y0 = (H - ch) // 2
        img = img[y0:y0 + ch]
    out = transform.resize(img, (h, w) + img.shape[2:], order=3, anti_aliasing=True, mode="reflect")
    return np.clip(out, 0, 1).astype(np.float32)


def synthetic_flow(kind: str, size, magnitude: float) -> np.ndarray:
    """The analytic flow ``(H, W, 2)`` of ``kind`` with largest displacement ``magnitude``."""
    H, W = size
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    cx, cy = (W - 1) / 2.0, (H - 1) / 2.0
    dx, dy = x - cx, y - cy
    r_max = np.hypot(cx, cy)
    m = float(magnitude)
    if kind == "translation":
        ang = np.deg2rad(30.0)
        u = np.full_like(x, m * np.cos(ang))
        v = np.full_like(x, m * np.sin(ang))
    elif kind == "rotation":
        alpha = 2 * np.arcsin(min(m / (2 * r_max), 1.0))
        c, s = np.cos(alpha), np.sin(alpha)
        u = c * dx - s * dy - dx
        v = s * dx + c * dy - dy
    elif kind == "zoom":
        k = m / r_max
        u, v = k * dx, k * dy
    elif kind == "vortex":
        sigma = 0.3 * min(H, W)
        r2 = dx * dx + dy * dy
        # tangential speed m * (r / sigma) * exp(0.5 - r^2 / (2 sigma^2)) peaks at r = sigma with m
        g = m * np.exp(0.5 - r2 / (2 * sigma * sigma)) / sigma
        u, v = -g * dy, g * dx
    else:
        raise FlowInputError(f"unknown synthetic flow {kind!r}: use one of {', '.join(KINDS)}")
    return np.stack([u, v], axis=-1).astype(np.float32)


def warp_image_by_flow(img1: np.ndarray, flow: np.ndarray, *, iters: int = 40):
    """``IMG2`` with ``IMG2(x + f(x)) = IMG1(x)``, and the mask of pixels whose target is inside."""
    from scipy import ndimage

    H, W = flow.shape[:2]
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    u = flow[..., 0].astype(np.float64)
    v = flow[..., 1].astype(np.float64)
    # g(y) solves g + f(g) = y: fixed point g <- y - f(g), f sampled bilinearly
    gx, gy = xx.copy(), yy.copy()
    for _ in range(iters):
        fu = ndimage.map_coordinates(u, [gy, gx], order=1, mode="nearest")
        fv = ndimage.map_coordinates(v, [gy, gx], order=1, mode="nearest")
        gx, gy = xx - fu, yy - fv
    chans = img1[..., None] if img1.ndim == 2 else img1
    out = np.stack([ndimage.map_coordinates(chans[..., c].astype(np.float64), [gy, gx], order=3, mode="reflect")
                    for c in range(chans.shape[-1])], axis=-1)
    out = np.clip(out, 0, 1).astype(np.float32)
    if img1.ndim == 2:
        out = out[..., 0]
    tx, ty = xx + u, yy + v
    valid = (tx >= 0) & (tx <= W - 1) & (ty >= 0) & (ty <= H - 1)
    return out, valid


def synthetic_pair(kind: str = "vortex", *, size=(240, 320), magnitude: float = 10.0, image: str = "astronaut",
                   gray: bool = True, noise: float = 0.0, seed: int = 0) -> SyntheticPair:
    """A pair of images related by a known smooth flow (see the module docstring).

    Parameters
    ----------
    kind : {"translation", "rotation", "zoom", "vortex"}
    size : (int, int)
        ``(H, W)``.
    magnitude : float
        Largest displacement, pixels.
    image : str
        A scikit-image sample picture (:data:`IMAGES`).
    gray : bool
        Greyscale (H, W) or RGB (H, W, 3) images.
    noise : float
        Standard deviation of Gaussian noise added to both images (0..1 scale).
    seed : int
    """
    size = (int(size[0]), int(size[1]))
    img1 = natural_image(image, size, gray=gray)
    flow = synthetic_flow(kind, size, magnitude)
    img2, valid = warp_image_by_flow(img1, flow)
    if noise > 0:
        rng = np.random.default_rng(seed)
        img1 = np.clip(img1 + rng.normal(0, noise, img1.shape), 0, 1).astype(np.float32)
        img2 = np.clip(img2 + rng.normal(0, noise, img2.shape), 0, 1).astype(np.float32)
    return SyntheticPair(img1, img2, flow, valid)
