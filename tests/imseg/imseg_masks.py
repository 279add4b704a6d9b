"""Test images for the labelling: random masks and adversarial ones (spirals, combs,
checkerboards, snakes, diagonal staircases), plus piecewise-colour images with known regions."""

from __future__ import annotations

import numpy as np


def spiral(n: int, m: int | None = None, width: int = 1) -> np.ndarray:
    """One square spiral path (``width`` pixels wide, gaps as wide) filling an n x m box:
    a single component whose two ends are as far apart as possible, which defeats any
    merging that only looks near by."""
    m = m or n
    gn, gm = max(1, n // width), max(1, m // width)
    g = np.zeros((gn, gm), np.uint8)
    dirs = ((0, 1), (1, 0), (0, -1), (-1, 0))
    y = x = d = stuck = 0
    g[0, 0] = 1
    while stuck < 2:
        dy, dx = dirs[d]
        ny, nx, ay, ax = y + dy, x + dx, y + 2 * dy, x + 2 * dx
        ok = 0 <= ny < gn and 0 <= nx < gm and not g[ny, nx] and not (0 <= ay < gn and 0 <= ax < gm and g[ay, ax])
        if ok:
            y, x = ny, nx
            g[y, x] = 1
            stuck = 0
        else:
            d = (d + 1) % 4
            stuck += 1
    out = np.zeros((n, m), np.uint8)
    big = np.kron(g, np.ones((width, width), np.uint8))
    out[:big.shape[0], :big.shape[1]] = big
    return out


def comb(n: int, m: int | None = None, teeth_every: int = 2, vertical: bool = True) -> np.ndarray:
    """A comb: one spine along the top (or left) edge and thin teeth, one component; the
    gaps are background."""
    m = m or n
    out = np.zeros((n, m), np.uint8)
    if vertical:
        out[0, :] = 1
        out[:, ::teeth_every] = 1
    else:
        out[:, 0] = 1
        out[::teeth_every, :] = 1
    return out


def double_comb(n: int, m: int | None = None) -> np.ndarray:
    """Two interleaved combs (teeth from the top and from the bottom): two components whose
    teeth alternate, every column a different component from its neighbours."""
    m = m or n
    out = np.zeros((n, m), np.uint8)
    out[0, :] = 1
    out[n - 1, :] = 2
    out[:n - 1, 0::4] = 1
    out[1:, 2::4] = 2
    return out


def checkerboard(n: int, m: int | None = None, cell: int = 1) -> np.ndarray:
    m = m or n
    y, x = np.mgrid[:n, :m]
    return (((y // cell) + (x // cell)) % 2).astype(np.uint8)


def staircase(n: int, m: int | None = None) -> np.ndarray:
    """Diagonal one-pixel staircases: connected only with 8-connectivity."""
    m = m or n
    y, x = np.mgrid[:n, :m]
    return (((x - y) % 5) == 0).astype(np.uint8)


def snake(n: int, m: int | None = None) -> np.ndarray:
    """A boustrophedon path: rows of foreground joined alternately at the right and the left."""
    m = m or n
    out = np.zeros((n, m), np.uint8)
    out[::2, :] = 1
    for i, r in enumerate(range(1, n, 2)):
        out[r, m - 1 if i % 2 == 0 else 0] = 1
    return out


def random_mask(rng, n: int, m: int | None = None, p: float = 0.5) -> np.ndarray:
    m = m or n
    return (rng.random((n, m)) < p).astype(np.uint8)


def random_values(rng, n: int, m: int | None = None, k: int = 4) -> np.ndarray:
    m = m or n
    return rng.integers(0, k, size=(n, m)).astype(np.int32)


def adversarial(n: int) -> dict:
    """Named masks of about n x n (uint8)."""
    return {
        "spiral": spiral(n),
        "spiral3": spiral(n, n + 7, width=3),
        "comb_v": comb(n, n + 3, 2, True),
        "comb_h": comb(n + 5, n, 3, False),
        "double_comb": double_comb(n, n + 1),
        "checker1": checkerboard(n, n + 2, 1),
        "checker3": checkerboard(n + 1, n, 3),
        "staircase": staircase(n, n + 4),
        "snake": snake(n + 1, n),
    }


def piecewise_image(rng, h: int = 60, w: int = 80, noise: float = 0.0, shading: bool = False):
    """An RGB image of known regions: a vertical split, a disc and a square, in four
    well-separated colours. Returns ``(image uint8, truth int32 1..4)``."""
    colours = np.array([[200, 40, 40], [30, 160, 60], [40, 60, 200], [230, 220, 60]], np.float64)
    truth = np.ones((h, w), np.int32)
    truth[:, w // 2:] = 2
    yy, xx = np.mgrid[:h, :w]
    truth[(yy - h // 3) ** 2 + (xx - w // 4) ** 2 < (min(h, w) // 6) ** 2] = 3
    truth[2 * h // 3:2 * h // 3 + h // 5, 3 * w // 5:3 * w // 5 + w // 5] = 4
    img = colours[truth - 1]
    if shading:
        img = img * (0.85 + 0.15 * (xx / max(w - 1, 1)))[..., None]
    if noise:
        img = img + rng.normal(0.0, noise, img.shape)
    return np.clip(np.round(img), 0, 255).astype(np.uint8), truth
