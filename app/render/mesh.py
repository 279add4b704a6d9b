"""Pictures of coloured triangle meshes, without Qt: an off-screen pyvista render, or a
NumPy/Pillow rasteriser where OpenGL is missing; the default 3/4 view shared with the
mesh tab's 3-D view.
"""

from __future__ import annotations

import functools
import logging
import os
import pathlib

import numpy as np

from ..io.atomic import atomic_write
from .gl import gl_unavailable_reason

__all__ = ["render_png", "render_image", "rasterize", "FaceRaster", "to_polydata", "view_direction", "set_default_view",
           "layout_labels", "fit_distance", "fit_points_distance", "draw_markers"]

#: marker boxes (part numbers) in pixels
LABEL_BOX = (24, 20)

log = logging.getLogger(__name__)


def render_png(path, vertices, faces, face_colors, *, size: tuple[int, int] = (900, 700),
               title: str | None = None, edges: bool = False, markers=None) -> pathlib.Path:
    """Draw the mesh with its face colours into a PNG, off-screen.

    Uses pyvista's off-screen plotter (VTK picks EGL/OSMesa without a display); if that is
    not available, falls back to :func:`rasterize`, a NumPy/Pillow painter's-algorithm
    renderer, so a picture is always written.
    """
    path = pathlib.Path(path)
    img = render_image(vertices, faces, face_colors, size=size, title=title, edges=edges, markers=markers)
    from PIL import Image

    with atomic_write(path, "wb") as fh:
        Image.fromarray(img).save(fh, format="PNG")
    return path


def render_image(vertices, faces, face_colors, *, size: tuple[int, int] = (900, 700),
                 title: str | None = None, edges: bool = False, markers=None) -> np.ndarray:
    """An (H, W, 3) uint8 picture of the mesh: pyvista off-screen, else :func:`rasterize`.

    ``markers``: optional ``(points (M, 3), texts, colours (M, 3))``, drawn as numbered
    boxes that never overlap one another (:func:`layout_labels`)."""
    try:
        return _render_pyvista(vertices, faces, face_colors, size, title, edges, markers)
    except Exception as exc:  # no OpenGL at all: draw it ourselves
        log.info("off-screen OpenGL rendering failed (%s); using the software rasteriser", exc)
        return rasterize(vertices, faces, face_colors, size=size, markers=markers, title=title)


def _render_pyvista(vertices, faces, face_colors, size, title, edges, markers=None) -> np.ndarray:
    why = gl_unavailable_reason()
    if why:
        raise RuntimeError(why)
    import pyvista as pv

    if not os.environ.get("DISPLAY"):
        # VTK tries X11 first and warns before it falls back to EGL/OSMesa: not news
        import vtkmodules.vtkCommonCore as vtk  # not `import vtk`: that loads all of VTK

        vtk.vtkLogger.SetStderrVerbosity(vtk.vtkLogger.VERBOSITY_ERROR)
    mesh = to_polydata(vertices, faces, face_colors)
    pl = pv.Plotter(off_screen=True, window_size=list(size))
    try:
        pl.set_background("white")
        pl.add_mesh(mesh, scalars="colors", rgb=True, show_edges=edges, edge_color="#404040",
                    smooth_shading=False, lighting=True)
        if title:
            pl.add_text(title, font_size=10, color="black")
        set_default_view(pl, vertices, aspect=size[0] / max(size[1], 1))
        img = pl.screenshot(return_img=True)
        anchors = None
        if markers is not None and len(markers[0]):
            ren = pl.renderer
            anchors = []
            for p in np.asarray(markers[0], dtype=np.float64):
                ren.SetWorldPoint(float(p[0]), float(p[1]), float(p[2]), 1.0)
                ren.WorldToDisplay()
                x, y, _ = ren.GetDisplayPoint()
                anchors.append((x, size[1] - y))
    finally:
        pl.close()
    img = np.asarray(img)
    if img.ndim != 3 or img.size == 0 or float(img.std()) == 0.0:
        raise RuntimeError("the off-screen render came back blank")
    img = img[..., :3].astype(np.uint8)
    if anchors is not None:
        img = draw_markers(img, np.asarray(anchors, dtype=np.float64), markers[1], markers[2])
    return img


def layout_labels(anchors, size, box=LABEL_BOX, iterations: int = 200) -> np.ndarray:
    """(M, 2) centres for label boxes near ``anchors`` (M, 2 pixels) such that no two boxes
    overlap and every box stays inside ``size`` (width, height): overlapping boxes are pushed
    apart along the axis of least overlap until none is left."""
    a = np.asarray(anchors, dtype=np.float64).reshape(-1, 2)
    pos = a.copy()
    w, h = float(box[0]) + 2.0, float(box[1]) + 2.0
    W, H = float(size[0]), float(size[1])
    rng = np.random.default_rng(0)
    for _ in range(iterations):
        moved = False
        for i in range(len(pos)):
            for j in range(i + 1, len(pos)):
                dx = pos[j, 0] - pos[i, 0]
                dy = pos[j, 1] - pos[i, 1]
                ox, oy = w - abs(dx), h - abs(dy)
                if ox <= 0 or oy <= 0:
                    continue
                moved = True
                if ox / w < oy / h:
                    sgn = np.sign(dx) or rng.choice((-1.0, 1.0))
                    pos[i, 0] -= sgn * ox / 2
                    pos[j, 0] += sgn * ox / 2
                else:
                    sgn = np.sign(dy) or rng.choice((-1.0, 1.0))
                    pos[i, 1] -= sgn * oy / 2
                    pos[j, 1] += sgn * oy / 2
        pos[:, 0] = np.clip(pos[:, 0], w / 2, max(w / 2, W - w / 2))
        pos[:, 1] = np.clip(pos[:, 1], h / 2, max(h / 2, H - h / 2))
        if not moved:
            break
    return pos


@functools.cache
def _label_font():
    """The part numbers' font, loaded once (loading it took most of a redraw's markers)."""
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=13)
    except TypeError:  # Pillow < 10.1
        return ImageFont.load_default()


def draw_markers(img, anchors, texts, colors, box=LABEL_BOX) -> np.ndarray:
    """Numbered boxes in the part colours, laid out by :func:`layout_labels`, with a thin
    leader line where a box had to move away from its point."""
    from PIL import Image, ImageDraw

    im = Image.fromarray(np.ascontiguousarray(img))
    draw = ImageDraw.Draw(im)
    pos = layout_labels(anchors, im.size, box)
    font = _label_font()
    cols = np.asarray(colors, dtype=np.int64).reshape(-1, 3)
    for (ax, ay), (px, py), text, c in zip(anchors, pos, texts, cols, strict=False):
        if abs(px - ax) + abs(py - ay) > 3:
            draw.line([(ax, ay), (px, py)], fill=(40, 40, 40), width=1)
        draw.ellipse([ax - 3, ay - 3, ax + 3, ay + 3], fill=tuple(int(x) for x in c), outline=(20, 20, 20))
        x0, y0 = px - box[0] / 2, py - box[1] / 2
        draw.rounded_rectangle([x0, y0, x0 + box[0], y0 + box[1]], radius=4,
                               fill=tuple(int(x) for x in c), outline=(20, 20, 20))
        light = float(np.dot(c, [0.299, 0.587, 0.114])) > 150
        draw.text((px, py), str(text), fill=(0, 0, 0) if light else (255, 255, 255), font=font, anchor="mm")
    return np.asarray(im)


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


def fit_distance(radius: float, view_angle_deg: float, aspect: float, margin: float = 1.08) -> float:
    """Camera distance at which a sphere of ``radius`` fits the view both ways: ``view_angle``
    is the vertical field of view, ``aspect`` width / height (a tall view narrows the horizontal
    field, which VTK's own reset ignores)."""
    v = np.radians(float(view_angle_deg)) / 2
    hh = np.arctan(np.tan(v) * max(float(aspect), 1e-3))
    half = min(v, hh)
    return margin * float(radius) / max(np.sin(half), 1e-6)


def set_default_view(plotter, vertices, aspect: float | None = None) -> None:
    """The 3/4 view of the whole mesh, framed for the plotter's current shape."""
    v = np.asarray(vertices, dtype=np.float64)
    c = (v.min(0) + v.max(0)) / 2
    r = float(np.linalg.norm(v.max(0) - v.min(0))) / 2 or 1.0
    d, up = view_direction(v)
    if aspect is None:
        try:
            w, h = plotter.window_size
            aspect = w / max(h, 1)
        except Exception:  # noqa: BLE001 - no window yet
            aspect = 1.0
    cam = plotter.camera
    dist = min(fit_distance(r, cam.view_angle, aspect), fit_points_distance(v, c, d, up, cam.view_angle, aspect))
    plotter.camera_position = [tuple(c + d * dist), tuple(c), tuple(up)]
    plotter.reset_camera_clipping_range()


def fit_points_distance(vertices, centre, direction, up, view_angle_deg: float, aspect: float,
                        margin: float = 1.06) -> float:
    """The smallest camera distance (looking at ``centre`` from ``centre + direction * D``) at
    which every vertex is inside the perspective view, with a margin: tighter than the
    bounding sphere for long or flat meshes."""
    v = np.asarray(vertices, dtype=np.float64)
    if len(v) > 20000:
        v = v[np.linspace(0, len(v) - 1, 20000).astype(np.int64)]
    d = np.asarray(direction, dtype=np.float64)
    right = np.cross(np.asarray(up, dtype=np.float64), d)
    right /= np.linalg.norm(right) or 1.0
    up2 = np.cross(d, right)
    p = v - np.asarray(centre, dtype=np.float64)
    x, y, z = np.abs(p @ right), np.abs(p @ up2), p @ d
    tv = np.tan(np.radians(float(view_angle_deg)) / 2) / margin
    th = tv * max(float(aspect), 1e-3)
    return float(max(np.max(z + x / th), np.max(z + y / tv), 1e-9))


def rasterize(vertices, faces, face_colors, *, size=(900, 700), background=(255, 255, 255),
              markers=None, title: str | None = None) -> np.ndarray:
    """Software render: orthographic projection, flat Lambert shading, painter's algorithm;
    the whole mesh fits the picture (with a margin), markers as in :func:`render_image`.

    Needs only NumPy and Pillow; used where OpenGL is unavailable. The same picture is
    :meth:`FaceRaster.picture` of a :class:`FaceRaster` of the mesh, which a view keeps to
    recolour without drawing the triangles again.
    """
    return FaceRaster(vertices, faces, size=size, title=title).picture(face_colors, background=background,
                                                                       markers=markers)


class FaceRaster:
    """Which face the software picture (:func:`rasterize`) shows at each pixel, for one mesh,
    picture size and title, and each face's flat shading.

    Drawing the triangles (Pillow, far to near) is most of the picture's cost: 130 ms for a
    17k-face mesh on the H100 host, paid at every live edit of the number of parts, which only
    changes the face colours. This draws them once, as face numbers; :meth:`picture` then
    colours the pixels by a lookup (a few ms), with the very pixels of a fresh :func:`rasterize`
    (Pillow fills a polygon the same way whatever the ink).

    Attributes
    ----------
    ids : (H, W) int32
        The face drawn at each pixel, -1 for the background (a property).
    shade : (F,) float64
        The Lambert factor of each face (0.35..1).
    """

    def __init__(self, vertices, faces, *, size=(900, 700), title: str | None = None):
        from PIL import Image, ImageDraw

        v = np.asarray(vertices, dtype=np.float64)
        f = np.asarray(faces, dtype=np.int64)
        w, h = (int(size[0]), int(size[1]))
        self.size, self.title, self.n_faces = (w, h), title, len(f)
        d, up = view_direction(v)
        right = np.cross(up, d)
        right /= np.linalg.norm(right)
        up2 = np.cross(d, right)
        c = (v.min(0) + v.max(0)) / 2
        p = v - c
        x, y, z = p @ right, p @ up2, p @ d
        # fit both ways, centred on the projected extent
        sx, sy = max(np.ptp(x), 1e-12), max(np.ptp(y), 1e-12)
        top = 22 if title else 0
        scale = 0.9 * min(w / sx, (h - top) / sy)
        cx, cy = (x.max() + x.min()) / 2, (y.max() + y.min()) / 2
        self._proj = (c, right, up2, cx, cy, scale, top)
        px = w / 2 + (x - cx) * scale
        py = top + (h - top) / 2 - (y - cy) * scale
        tri = v[f]
        n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        ln = np.linalg.norm(n, axis=1, keepdims=True)
        n = np.divide(n, ln, out=np.zeros_like(n), where=ln > 0)
        light = d * 0.8 + up2 * 0.45 + right * 0.2
        light /= np.linalg.norm(light)
        lam = np.abs(n @ light)  # two-sided
        self.shade = 0.35 + 0.65 * lam
        depth = z[f].mean(axis=1)
        img = Image.new("I", (w, h), 0)
        draw = ImageDraw.Draw(img)
        for i in np.argsort(depth):  # far to near
            a, b, cc = f[i]
            draw.polygon([(px[a], py[a]), (px[b], py[b]), (px[cc], py[cc])], fill=int(i) + 1)
        self._idx = np.asarray(img, dtype=np.int32)   # face + 1, 0 for the background: the lookup's rows

    @property
    def ids(self) -> np.ndarray:
        return self._idx - 1

    def project(self, points) -> np.ndarray:
        """(M, 2) pixel positions of 3-D points in this picture."""
        c, right, up2, cx, cy, scale, top = self._proj
        w, h = self.size
        mp = np.asarray(points, dtype=np.float64).reshape(-1, 3) - c
        return np.c_[w / 2 + (mp @ right - cx) * scale, top + (h - top) / 2 - (mp @ up2 - cy) * scale]

    def picture(self, face_colors, *, background=(255, 255, 255), markers=None) -> np.ndarray:
        """The ``(H, W, 3)`` uint8 picture with these face colours (and markers, as in
        :func:`render_image`): the pixels of :func:`rasterize` with the same arguments."""
        col = np.asarray(face_colors, dtype=np.float64)[:, :3]
        if len(col) != self.n_faces:
            raise ValueError(f"{len(col)} face colours for a picture of {self.n_faces} faces")
        lut = np.empty((self.n_faces + 1, 3), np.uint8)
        lut[0] = np.asarray(background, dtype=np.uint8)[:3]
        lut[1:] = np.clip(col * self.shade[:, None], 0, 255).astype(np.uint8)
        out = np.take(lut, self._idx, axis=0)   # 10x a fancy index of the same rows
        if self.title:
            from PIL import Image, ImageDraw

            im = Image.fromarray(out)
            ImageDraw.Draw(im).text((6, 4), self.title, fill=(0, 0, 0))
            out = np.asarray(im)
        if markers is not None and len(markers[0]):
            out = draw_markers(out, self.project(markers[0]), markers[1], markers[2])
        return out
