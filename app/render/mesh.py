"""Pictures of coloured triangle meshes, without Qt: an off-screen pyvista render, or a
NumPy/Pillow rasteriser where OpenGL is missing; the default 3/4 view shared with the
mesh tab's 3-D view.
"""

from __future__ import annotations

import logging
import os
import pathlib

import numpy as np

from ..io.atomic import atomic_write
from .gl import gl_unavailable_reason

__all__ = ["render_png", "render_image", "rasterize", "to_polydata", "view_direction", "set_default_view"]

log = logging.getLogger(__name__)


def render_png(path, vertices, faces, face_colors, *, size: tuple[int, int] = (900, 700),
               title: str | None = None, edges: bool = False) -> pathlib.Path:
    """Draw the mesh with its face colours into a PNG, off-screen.

    Uses pyvista's off-screen plotter (VTK picks EGL/OSMesa without a display); if that is
    not available, falls back to :func:`rasterize`, a NumPy/Pillow painter's-algorithm
    renderer, so a picture is always written.
    """
    path = pathlib.Path(path)
    img = render_image(vertices, faces, face_colors, size=size, title=title, edges=edges)
    from PIL import Image

    with atomic_write(path, "wb") as fh:
        Image.fromarray(img).save(fh, format="PNG")
    return path


def render_image(vertices, faces, face_colors, *, size: tuple[int, int] = (900, 700),
                 title: str | None = None, edges: bool = False) -> np.ndarray:
    """An (H, W, 3) uint8 picture of the mesh: pyvista off-screen, else :func:`rasterize`."""
    try:
        return _render_pyvista(vertices, faces, face_colors, size, title, edges)
    except Exception as exc:  # no OpenGL at all: draw it ourselves
        log.info("off-screen OpenGL rendering failed (%s); using the software rasteriser", exc)
        return rasterize(vertices, faces, face_colors, size=size)


def _render_pyvista(vertices, faces, face_colors, size, title, edges) -> np.ndarray:
    why = gl_unavailable_reason()
    if why:
        raise RuntimeError(why)
    import pyvista as pv

    if not os.environ.get("DISPLAY"):
        # VTK tries X11 first and warns before it falls back to EGL/OSMesa: not news
        import vtk

        vtk.vtkLogger.SetStderrVerbosity(vtk.vtkLogger.VERBOSITY_ERROR)
    mesh = to_polydata(vertices, faces, face_colors)
    pl = pv.Plotter(off_screen=True, window_size=list(size))
    try:
        pl.set_background("white")
        pl.add_mesh(mesh, scalars="colors", rgb=True, show_edges=edges, edge_color="#404040",
                    smooth_shading=False, lighting=True)
        if title:
            pl.add_text(title, font_size=10, color="black")
        set_default_view(pl, vertices)
        img = pl.screenshot(return_img=True)
    finally:
        pl.close()
    img = np.asarray(img)
    if img.ndim != 3 or img.size == 0 or float(img.std()) == 0.0:
        raise RuntimeError("the off-screen render came back blank")
    return img[..., :3].astype(np.uint8)


def to_polydata(vertices, faces, face_colors=None):
    """A pyvista PolyData of a triangle mesh, face colours in cell array ``colors``."""
    import pyvista as pv

    f = np.asarray(faces, dtype=np.int64)
    cells = np.hstack([np.full((len(f), 1), 3, np.int64), f]).ravel()
    mesh = pv.PolyData(np.asarray(vertices, dtype=np.float64), cells)
    if face_colors is not None:
        mesh.cell_data["colors"] = np.ascontiguousarray(np.asarray(face_colors)[:, :3], dtype=np.uint8)
    return mesh


def view_direction(vertices) -> tuple[np.ndarray, np.ndarray]:
    """A pleasant 3/4 view: y is up (MeshLab's convention), looking from +x+y+z."""
    d = np.array([1.0, 0.8, 1.6])
    return d / np.linalg.norm(d), np.array([0.0, 1.0, 0.0])


def set_default_view(plotter, vertices) -> None:
    v = np.asarray(vertices, dtype=np.float64)
    c = (v.min(0) + v.max(0)) / 2
    r = float(np.linalg.norm(v.max(0) - v.min(0))) / 2 or 1.0
    d, up = view_direction(v)
    plotter.camera_position = [tuple(c + d * r * 3.2), tuple(c), tuple(up)]
    plotter.reset_camera()


def rasterize(vertices, faces, face_colors, *, size=(900, 700), background=(255, 255, 255)) -> np.ndarray:
    """Software render: orthographic projection, flat Lambert shading, painter's algorithm.

    Needs only NumPy and Pillow; used where OpenGL is unavailable.
    """
    from PIL import Image, ImageDraw

    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    col = np.asarray(face_colors, dtype=np.float64)[:, :3]
    w, h = size
    d, up = view_direction(v)
    right = np.cross(up, d)
    right /= np.linalg.norm(right)
    up2 = np.cross(d, right)
    c = (v.min(0) + v.max(0)) / 2
    p = v - c
    x, y, z = p @ right, p @ up2, p @ d
    span = max(np.ptp(x), np.ptp(y), 1e-12)
    scale = 0.85 * min(w, h) / span
    px = w / 2 + x * scale
    py = h / 2 - y * scale
    tri = v[f]
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    ln = np.linalg.norm(n, axis=1, keepdims=True)
    n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
    light = d * 0.8 + up2 * 0.45 + right * 0.2
    light /= np.linalg.norm(light)
    lam = np.abs(n @ light)  # two-sided
    shade = 0.35 + 0.65 * lam
    rgb = np.clip(col * shade[:, None], 0, 255).astype(np.uint8)
    depth = z[f].mean(axis=1)
    img = Image.new("RGB", (w, h), tuple(background))
    draw = ImageDraw.Draw(img)
    for i in np.argsort(depth):  # far to near
        a, b, cc = f[i]
        draw.polygon([(px[a], py[a]), (px[b], py[b]), (px[cc], py[cc])], fill=tuple(int(t) for t in rgb[i]))
    return np.asarray(img)
