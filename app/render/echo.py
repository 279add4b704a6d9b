"""Pictures of 3-D motion fields: derived maps on a slice (magnitude, Jacobian determinant,
divergence), their colour ramps, motion arrows and the three-slice picture. The echo tab and
the PNG export (``gpulab echo --slices``) both draw through these functions.

They take the tool's result by its attributes (``data.frames``, ``data.shape``,
``data.spacing``, ``field(t, kind)``), so this layer does not import the tool layer.
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.echo import maps as _maps

from ..io import image_io
from .choices import ECHO_MAP_KINDS

__all__ = ["MAP_KINDS", "COLORMAPS", "MAP_RANGES", "slice_maps", "colorize", "map_range", "arrow_grid",
           "render_slices"]

MAP_KINDS = ECHO_MAP_KINDS   # the display Param "overlay" of the echo tool takes them from app.render.choices
#: colour maps as control points (value in 0..1, RGB): shared by the tab and the PNG export
COLORMAPS = {
    "Magnitude": [(0.0, (68, 1, 84)), (0.25, (59, 82, 139)), (0.5, (33, 145, 140)), (0.75, (94, 201, 98)),
                  (1.0, (253, 231, 37))],
    "Jacobian determinant": [(0.0, (33, 102, 172)), (0.25, (103, 169, 207)), (0.5, (247, 247, 247)),
                             (0.75, (239, 138, 98)), (1.0, (178, 24, 43))],
    "Divergence": [(0.0, (33, 102, 172)), (0.25, (103, 169, 207)), (0.5, (247, 247, 247)),
                   (0.75, (239, 138, 98)), (1.0, (178, 24, 43))],
}
#: default value range of each map (magnitude: 0..its 99th percentile, in the unit shown)
MAP_RANGES = {"Jacobian determinant": (0.5, 1.5), "Divergence": (-0.5, 0.5)}


def slice_maps(u: np.ndarray, axis: int, index: int, kind: str, spacing=None) -> np.ndarray:
    """A derived map on one slice (``axis``, ``index``) of the field ``u`` (3, Z, Y, X): the
    magnitude (mm with ``spacing``), the Jacobian determinant or the divergence, computed from
    a three-slice slab (cheap enough to redraw while scrubbing through a 256^3 sequence)."""
    n = u.shape[1 + axis]
    index = int(np.clip(index, 0, n - 1))
    if kind == "Magnitude":
        sl = [slice(None)] * 4
        sl[1 + axis] = index
        w = u[tuple(sl)].astype(np.float32)
        sp = np.ones(3, np.float32) if spacing is None else np.asarray(spacing, np.float32)
        return np.sqrt(sum((w[i] * sp[i]) ** 2 for i in range(3)))
    lo, hi = max(index - 1, 0), min(index + 2, n)
    sl = [slice(None)] * 4
    sl[1 + axis] = slice(lo, hi)
    slab = u[tuple(sl)].astype(np.float32)
    if slab.shape[1 + axis] < 2:         # a single slice along this axis: no derivative across it
        pad = [(0, 0)] * 4
        pad[1 + axis] = (0, 1)
        slab = np.pad(slab, pad, mode="edge")
    m = _maps.jacobian_determinant(slab) if kind == "Jacobian determinant" else _maps.divergence(slab)
    take = [slice(None)] * 3
    take[axis] = index - lo
    return m[tuple(take)]


def colorize(values: np.ndarray, kind: str, vmin: float, vmax: float) -> np.ndarray:
    """RGB uint8 of ``values`` through the map's colour ramp over [vmin, vmax]."""
    pts = COLORMAPS.get(kind, COLORMAPS["Magnitude"])
    x = np.clip((np.asarray(values, np.float32) - vmin) / max(vmax - vmin, 1e-12), 0.0, 1.0)
    xs = np.array([p[0] for p in pts])
    out = np.empty(x.shape + (3,), np.float32)
    for c in range(3):
        out[..., c] = np.interp(x, xs, [p[1][c] for p in pts])
    return out.astype(np.uint8)


def map_range(kind: str, values: np.ndarray | None = None) -> tuple[float, float]:
    if kind in MAP_RANGES:
        return MAP_RANGES[kind]
    hi = float(np.percentile(values, 99)) if values is not None and values.size else 1.0
    return 0.0, max(hi, 1e-3)


def _grey(img: np.ndarray, lo: float, hi: float) -> np.ndarray:
    g = np.clip((img.astype(np.float32) - lo) / max(hi - lo, 1e-12), 0, 1)
    return np.repeat((g * 255)[..., None], 3, axis=-1)


def _draw_segments(rgb: np.ndarray, x0, y0, x1, y1, color=(255, 255, 0)) -> None:
    H, W = rgb.shape[:2]
    for a, b, c, d in zip(x0, y0, x1, y1, strict=True):
        n = int(max(abs(c - a), abs(d - b)) * 2) + 2
        xs = np.rint(np.linspace(a, c, n)).astype(int)
        ys = np.rint(np.linspace(b, d, n)).astype(int)
        ok = (xs >= 0) & (xs < W) & (ys >= 0) & (ys < H)
        rgb[ys[ok], xs[ok]] = color


def arrow_grid(u2: np.ndarray, v2: np.ndarray, step: int, scale: float = 1.0):
    """Arrow segments (x0, y0, x1, y1) of an in-plane field sampled every ``step`` pixels:
    ``u2`` along the image columns, ``v2`` along its rows."""
    H, W = u2.shape
    ys, xs = np.mgrid[step // 2:H:step, step // 2:W:step]
    du = u2[ys, xs] * scale
    dv = v2[ys, xs] * scale
    return xs.ravel().astype(float), ys.ravel().astype(float), (xs + du).ravel(), (ys + dv).ravel()


def render_slices(result, path=None, *, frame: int | None = None, center=None, kind: str = "Magnitude",
                  motion: str = "trajectory", opacity: float = 0.5, arrows: bool = True, step: int = 8,
                  zoom: int | None = None) -> np.ndarray:
    """The three orthogonal slices through ``center`` at ``frame`` side by side (axial z,
    coronal y, sagittal x), with the map as colour and the in-plane motion as arrows; written
    as a PNG when ``path`` is given. Returns the RGB picture."""
    d = result.data
    T = d.n_frames
    t = (T - 1 if not result.is_pair else 0) if frame is None else int(np.clip(frame, 0, T - 1))
    if result.is_pair and frame is None:
        t, motion = 0, "pairwise"
    Z, Y, X = d.shape
    if zoom is None:  # about 256 pixels per panel: a 48^3 sample stays legible, 256^3 stays 1:1
        zoom = max(1, int(round(256 / max(Z, Y, X))))
    c = (Z // 2, Y // 2, X // 2) if center is None else tuple(int(np.clip(v, 0, n - 1)) for v, n in zip(center, d.shape, strict=True))
    vol = d.frames[t]
    lo, hi = np.percentile(vol[::2, ::2, ::2], (1, 99.5))
    u = result.field(t, motion)
    panels = []
    # axial: plane (y, x) at z; coronal: (z, x) at y; sagittal: (z, y) at x
    for axis, (ra, ca) in ((0, (1, 2)), (1, (0, 2)), (2, (0, 1))):
        sl = [slice(None)] * 3
        sl[axis] = c[axis]
        img = _grey(vol[tuple(sl)], lo, hi)
        if kind in COLORMAPS:
            m = slice_maps(u, axis, c[axis], kind, d.spacing)
            vmin, vmax = map_range(kind, m)
            img = (1 - opacity) * img + opacity * colorize(m, kind, vmin, vmax)
        img = np.repeat(np.repeat(img, zoom, axis=0), zoom, axis=1).astype(np.uint8)
        if arrows:
            fs = [slice(None)] * 4
            fs[1 + axis] = c[axis]
            w = u[tuple(fs)].astype(np.float32)
            x0, y0, x1, y1 = arrow_grid(w[ca], w[ra], max(1, step))
            _draw_segments(img, x0 * zoom, y0 * zoom, x1 * zoom, y1 * zoom)
        panels.append(img)
    h = max(p.shape[0] for p in panels)
    gap = np.full((h, 6, 3), 255, np.uint8)
    row = []
    for p in panels:
        pad = np.full((h - p.shape[0], p.shape[1], 3), 255, np.uint8)
        row += [np.concatenate([p, pad], axis=0), gap]
    pic = np.concatenate(row[:-1], axis=1)
    if path is not None:
        image_io.write_image(path, pic)
    return pic
