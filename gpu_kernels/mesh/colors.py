"""Part colours and the mild uncertainty shading of the faces.

:func:`palette` gives deterministic, well-separated colours: 24 hand-picked ones (after
Kelly's and Glasbey's lists, without white, black or greys, so that white stays the colour
of uncertainty; the first seven are red, green, blue, orange, purple, cyan and yellow, so a
creature's seven parts never get two purples), then golden-ratio hue steps with alternating saturation and value.

:func:`certainty` is ``(p1 - p2) / (p1 + p2)`` for the two highest memberships of a face: 0 on
a boundary between two parts, 1 deep inside one. :func:`blend_face_colors` moves a face's
part colour towards white by ``shading * (1 - certainty)``: with the default
``DEFAULT_SHADING = 0.35`` a face on a boundary keeps 65% of its part's colour, so every part
stays recognisable (1 is the full white-to-colour blend, 0 flat part colours).

Example
-------
>>> import numpy as np
>>> P = np.array([[1.0, 0.0], [0.5, 0.5]])
>>> certainty(P).tolist()
[1.0, 0.0]
>>> blend_face_colors(P, np.array([0, 0]), np.array([[200, 0, 0], [0, 0, 200]]), shading=0.5).tolist()
[[200, 0, 0], [228, 128, 128]]
"""

from __future__ import annotations

import colorsys

import numpy as np

__all__ = ["palette", "blend_face_colors", "certainty", "DEFAULT_SHADING"]

#: how far the least certain faces move towards white (0: flat part colours, 1: white);
#: declared in gpu_kernels.mesh.defaults (no NumPy there)
from gpu_kernels.mesh.defaults import DEFAULT_SHADING  # noqa: E402

_BASE = np.array([
    (230, 25, 75), (60, 180, 75), (0, 130, 200), (245, 130, 48), (145, 30, 180),
    (70, 200, 220), (255, 200, 20), (170, 210, 40), (0, 128, 128), (154, 99, 36),
    (128, 0, 0), (0, 0, 128), (128, 128, 0), (240, 50, 230), (220, 120, 190),
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
    """(F,) in [0, 1]: ``(p1 - p2) / (p1 + p2)`` of the two highest memberships (1 with one part)."""
    P = np.asarray(P)
    if P.dtype not in (np.float32, np.float64):
        P = P.astype(np.float64)
    if P.ndim != 2 or P.shape[1] <= 1:
        return np.ones(P.shape[0])
    # the two highest values (``-np.partition(-P, 1, axis=1)[:, :2]``'s, a repeated maximum both),
    # compiled, on float32 memberships without a float64 copy of them (the values are exact in
    # float64): the same certainty bit for bit (issue 22, session 10: 8.9 -> ~1 ms at 50k faces)
    from gpu_kernels.mesh.boundary import _top_two

    p1, p2, _, _ = _top_two(P)
    p1 = p1.astype(np.float64)
    p2 = p2.astype(np.float64)
    s = p1 + p2
    return np.clip((p1 - p2) / np.where(s > 0, s, 1.0), 0.0, 1.0)


def blend_face_colors(P: np.ndarray, labels: np.ndarray, cluster_colors: np.ndarray, *,
                      shading: float = DEFAULT_SHADING) -> np.ndarray:
    """(F, 3) uint8 face colours: the part colour, moved towards white by
    ``shading * (1 - certainty)``."""
    shading = float(np.clip(shading, 0.0, 1.0))
    t = 1.0 - shading * (1.0 - certainty(P))[:, None]
    c = np.asarray(cluster_colors, dtype=np.float64)[np.asarray(labels)]
    out = 255.0 + (c - 255.0) * t
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)
