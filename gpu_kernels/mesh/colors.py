"""Cluster colours and the white-to-colour blend of fuzzy memberships.

:func:`palette` gives deterministic, well-separated colours: 24 hand-picked ones (after
Kelly's and Glasbey's lists, without white, black or greys, so that white stays the colour
of uncertainty), then golden-ratio hue steps with alternating saturation and value.

:func:`blend_face_colors` colours a face ``white + (cluster - white) * t`` with
``t = (max membership - 1/K) / (1 - 1/K)``: white where the face is equally likely in every
cluster, the full cluster colour at membership 1.
"""

from __future__ import annotations

import colorsys

import numpy as np

__all__ = ["palette", "blend_face_colors", "certainty"]

_BASE = np.array([
    (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 200, 220), (240, 50, 230), (170, 210, 40), (0, 128, 128), (154, 99, 36),
    (128, 0, 0), (0, 0, 128), (128, 128, 0), (255, 200, 20), (220, 120, 190),
    (60, 90, 40), (100, 60, 220), (255, 110, 90), (40, 160, 140), (180, 140, 60),
    (90, 20, 90), (30, 60, 160), (200, 70, 20), (120, 200, 120),
], dtype=np.uint8)


def palette(n: int) -> np.ndarray:
    """(n, 3) uint8 distinct colours; the same n always gives the same colours."""
    n = int(n)
    if n <= _BASE.shape[0]:
        return _BASE[:n].copy()
    extra = []
    phi = 0.618033988749895
    for i in range(n - _BASE.shape[0]):
        h = (0.11 + i * phi) % 1.0
        s = (0.95, 0.65, 0.8)[i % 3]
        v = (0.85, 0.6, 0.95, 0.7)[i % 4]
        r, g, b = colorsys.hsv_to_rgb(h, s, v)
        extra.append((round(r * 255), round(g * 255), round(b * 255)))
    return np.concatenate([_BASE, np.asarray(extra, dtype=np.uint8)], axis=0)


def certainty(P: np.ndarray) -> np.ndarray:
    """(F,) in [0, 1]: 0 at max membership 1/K (uncertain), 1 at membership 1."""
    P = np.asarray(P, dtype=np.float64)
    K = P.shape[1]
    if K <= 1:
        return np.ones(P.shape[0])
    pmax = P.max(axis=1)
    return np.clip((pmax - 1.0 / K) / (1.0 - 1.0 / K), 0.0, 1.0)


def blend_face_colors(P: np.ndarray, labels: np.ndarray, cluster_colors: np.ndarray) -> np.ndarray:
    """(F, 3) uint8 face colours: white blended towards the face's cluster colour."""
    t = certainty(P)[:, None]
    c = np.asarray(cluster_colors, dtype=np.float64)[np.asarray(labels)]
    out = 255.0 + (c - 255.0) * t
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
