"""The views of the Multi-view stereo tab.

* :class:`MapView`: one reference view's depth, normal or confidence map (or its image) with
  pyqtgraph, a colour bar for depth and confidence, and a hover readout.
* :class:`CloudView`: a pyvistaqt 3-D view of points (a view's depth samples or the fused
  cloud) with the cameras drawn as frusta. Without OpenGL (offscreen, ``GPULAB_NO_OPENGL``)
  it says so and shows a static software picture of the points instead.
"""

from __future__ import annotations

import logging

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ..ui.view3d import View3D
from ..ui.widgets import set_fitted_title, set_picture
from .placeholder import EmptyHint

__all__ = ["MapView", "CloudView", "frustum_lines", "render_points_png"]

log = logging.getLogger(__name__)


#: the room (px) under a map's box for its one-line title
TITLE_ROOM = 24


class MapView(QWidget):
    """An image of one view's map, with a colour bar for scalar maps.

    Signals
    -------
    hovered(int, int)
        The pixel under the cursor (-1, -1 outside the image).
    """

    hovered = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.shape: tuple[int, int] | None = None
        self.setMinimumSize(320, 240)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("#f4f5f7")
        self._margins = self.glw.ci.layout.getContentsMargins()
        # the title is placed right under the map by _fit_title, not in a layout row of its own:
        # pinned to the pane's bottom it sat ~90 px below a map narrower than the pane's shape
        self.title = pg.LabelItem("", justify="left", parent=self.glw.ci)
        left, top, right, bottom = self._margins
        self.glw.ci.layout.setContentsMargins(left, top, right, bottom + TITLE_ROOM)
        self.plot = self.glw.addPlot()
        self.plot.setAspectLocked(True)
        self.plot.invertY(True)
        self.plot.hideAxis("left")
        self.plot.hideAxis("bottom")
        # scalar maps: a float image whose colour map and levels the colour bar controls (NaN is
        # transparent over the dark background); pictures: a second, RGB image item
        self.image = pg.ImageItem(axisOrder="row-major")
        self.rgb_image = pg.ImageItem(axisOrder="row-major")
        self.backdrop = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.backdrop)
        self.plot.addItem(self.image)
        self.plot.addItem(self.rgb_image)
        try:
            self.cmap = pg.colormap.get("turbo")
        except Exception:  # noqa: BLE001 - older pyqtgraph without turbo
            self.cmap = pg.colormap.get("viridis")
        self.bar = pg.ColorBarItem(values=(0, 1), colorMap=self.cmap, interactive=False, width=14)
        self.bar.setImageItem(self.image, insert_in=self.plot)
        # the colour bar is as tall as the map on screen, not as the pane (a small depth map
        # in a tall pane had a bar four times its height)
        self.plot.layout.setAlignment(self.bar, pg.QtCore.Qt.AlignmentFlag.AlignVCenter)
        # empty, the pane was a full-height 0..1 colour bar and nothing else
        self.bar.hide()
        self.plot.vb.sigResized.connect(self._fit_bar)
        self.plot.vb.sigRangeChanged.connect(self._fit_bar)
        self._title_text = ""
        lay.addWidget(self.glw)
        self.empty_hint = EmptyHint(     # after the picture's widget, so that it lies on top
            self, "No scene loaded",
            # three short lines: the map pane is ~360 px wide beside the 3-D view, where the
            # first line wrapped after "folder" and left "(File ▸ Open)," alone
            "Open a Middlebury *_par.txt<br>or a COLMAP model folder (File ▸ Open),<br>"
            "or pick a bundled sample on the left.", background="#f4f5f7")
        self.shape: tuple[int, int] | None = None
        self.plot.scene().sigMouseMoved.connect(self._moved)
        self.kind = "scalar"

    def set_title(self, text: str) -> None:
        """The line under the map, cut to the pane's width (:func:`app.ui.widgets.set_fitted_title`):
        the growing preview's long title widened the layout past the pane for good, and after a
        run the map was drawn 12 % wider than the pinned one beside it, its colour bar cut off."""
        self._title_text = text
        set_fitted_title(self.title, self.glw, text)
        self._fit_title()

    def resizeEvent(self, ev) -> None:  # noqa: N802
        super().resizeEvent(ev)
        if self._title_text:   # cut again at the new width
            self.set_title(self._title_text)

    def _fit_bar(self, *_a) -> None:
        self._fit_title()
        if self.shape is None:
            return
        h = self.map_height_on_screen()
        if h > 0:
            self.bar.setMaximumHeight(max(h, 80))

    def _fit_title(self) -> None:
        """Put the title right under the map as drawn (centred in its box by the locked aspect),
        or at the pane's bottom while nothing is shown; the box leaves TITLE_ROOM px for it."""
        ci = self.glw.ci
        left, _, right, bottom = self._margins
        width = max(1.0, self.glw.width() - left - right)
        y = self.glw.height() - bottom - TITLE_ROOM
        if self.shape is not None:
            H, W = self.shape
            vb = self.plot.vb
            pic = vb.mapViewToScene(pg.QtCore.QRectF(0, 0, W, H)).boundingRect()
            box = vb.sceneBoundingRect()
            y = min(y, ci.mapFromScene(pg.QtCore.QPointF(0, min(pic.bottom(), box.bottom()))).y() + 2)
        self.title.setGeometry(pg.QtCore.QRectF(left, y, width, TITLE_ROOM))

    def map_height_on_screen(self) -> float:
        """The height in pixels the map is drawn at (clipped to the pane)."""
        if self.shape is None:
            return 0.0
        H, W = self.shape
        r = self.plot.vb.mapViewToScene(pg.QtCore.QRectF(0, 0, W, H)).boundingRect()
        vr = self.plot.vb.sceneBoundingRect()
        return float(min(r.bottom(), vr.bottom()) - max(r.top(), vr.top()))

    def _moved(self, pos) -> None:
        if self.shape is None:
            return
        p = self.plot.vb.mapSceneToView(pos)
        x, y = int(np.floor(p.x() + 0.5)), int(np.floor(p.y() + 0.5))
        h, w = self.shape
        self.hovered.emit(x, y) if 0 <= x < w and 0 <= y < h else self.hovered.emit(-1, -1)

    def show_scalar(self, values: np.ndarray, *, levels: tuple[float, float] | None = None, title: str = "",
                    mask: np.ndarray | None = None) -> None:
        """A float map (NaN = nothing) colour-mapped, with the colour bar."""
        v = np.array(values, dtype=np.float32, copy=True)
        if mask is not None:
            v[~mask] = np.nan
        ok = np.isfinite(v)
        if levels is None:
            levels = (float(np.percentile(v[ok], 1)), float(np.percentile(v[ok], 99))) if ok.any() else (0.0, 1.0)
        if levels[1] <= levels[0]:
            levels = (levels[0], levels[0] + 1e-6)
        self.empty_hint.hide()
        set_picture(self.backdrop, np.full(v.shape + (3,), 34, np.uint8))
        self.image.setImage(v, autoLevels=False)
        self.bar.setLevels(levels)
        self.image.setLevels(levels)
        self.image.show()
        self.rgb_image.hide()
        self.bar.show()
        self.shape = v.shape
        self._fit_bar()
        self.set_title(title)
        self.kind = "scalar"

    def show_rgb(self, rgb: np.ndarray, *, title: str = "") -> None:
        """An RGB picture (image or normal map); no colour bar."""
        self.empty_hint.hide()
        set_picture(self.rgb_image, rgb)
        self.rgb_image.show()
        self.image.hide()
        self.bar.hide()
        self.shape = rgb.shape[:2]
        self.set_title(title)
        self.kind = "rgb"

    def clear(self) -> None:
        self.image.clear()
        self.rgb_image.clear()
        self.backdrop.clear()
        self.shape = None
        self.set_title("")
        self.bar.hide()
        self.empty_hint.show()


def frustum_lines(camera, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and line segments (pairs of indices) of a camera's frustum of depth ``scale``."""
    w, h = camera.width, camera.height
    corners = np.array([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]], float)
    far = camera.backproject(corners, np.full(4, scale))
    pts = np.vstack([camera.center[None], far])
    seg = np.array([[0, 1], [0, 2], [0, 3], [0, 4], [1, 2], [2, 3], [3, 4], [4, 1]])
    return pts, seg


def frustum_scale(cameras, points_extent: float = 1.0) -> float:
    """The depth the frusta are drawn at: 8 % of the spread of the camera centres, so that it is
    the same for every result of a scene (pinned and live sides alike; from the extent of the
    points shown, a smaller live cloud drew smaller frusta); 15 % of ``points_extent`` for one camera."""
    if len(cameras) >= 2:
        spread = float(np.ptp(np.array([c.center for c in cameras]), axis=0).max())
        if spread > 0:
            return 0.08 * spread
    return 0.15 * points_extent if points_extent > 0 else 0.1


def render_points_png(points: np.ndarray, colors: np.ndarray, size=(640, 480), cameras=None) -> QImage:
    """A software picture of a point cloud (orthographic, looking along the cloud's least
    principal axis), for machines without OpenGL."""
    W, H = size
    img = np.full((H, W, 3), 245, np.uint8)
    if len(points):
        c = points.mean(0)
        _, _, vt = np.linalg.svd(points[:: max(1, len(points) // 20000)] - c, full_matrices=False)
        P = (points - c) @ vt[:2].T
        lo, hi = P.min(0), P.max(0)
        s = 0.9 * min(W / max(hi[0] - lo[0], 1e-9), H / max(hi[1] - lo[1], 1e-9))
        uv = ((P - (lo + hi) / 2) * s + [W / 2, H / 2]).astype(int)
        depth = (points - c) @ vt[2]
        order = np.argsort(depth)
        ok = (uv[:, 0] >= 0) & (uv[:, 0] < W) & (uv[:, 1] >= 0) & (uv[:, 1] < H)
        o = order[ok[order]]
        img[uv[o, 1], uv[o, 0]] = colors[o]
    q = QImage(img.data, W, H, 3 * W, QImage.Format.Format_RGB888)
    return q.copy()


class CloudView(View3D):
    """Points with per-point colours and camera frusta, in 3-D when OpenGL works."""

    def __init__(self, parent: QWidget | None = None, *, allow_3d: bool = True):
        super().__init__(parent)
        self.n_points = 0
        #: what the camera was last framed for: a new result of the same view and content keeps
        #: the user's camera (a Live edit re-framed the view at every result)
        self._framed: object = None
        self.init_view("<div style='color:#666'><h3>No points yet</h3>"
                       "<p>Run to see the reconstructed points<br>and the cameras.</p></div>",
                       name="cloud-view", allow_3d=allow_3d)
        self.placeholder.setWordWrap(True)   # its text (and the no-OpenGL note) wraps, never cut at the edge

    def frame(self, points) -> None:
        """Point the camera at ``points`` (the cloud, or the frusta before a run) so that all of them
        are in view both ways, for the view's current shape, keeping the direction and up of VTK's
        reset. VTK's ``reset_camera`` fits the vertical view angle only: in a tall, narrow pane the
        frusta were cut at the left and right edges. The framing follows the pane's resizes until
        the user moves the camera."""
        from app.render.mesh import fit_points_distance

        pl = self.plotter
        pts = np.asarray(points, np.float64)
        pl.reset_camera()                       # VTK's direction, up and focal point for what is shown
        self._frame_points = pts
        if not len(pts) or not np.ptp(pts, axis=0).max() > 0:  # one point: no extent to fit, VTK's distance
            self._auto_camera = self._camera_now()
            return
        pos, foc, up = (np.asarray(x, np.float64) for x in pl.camera_position)
        d = pos - foc
        d = d / (np.linalg.norm(d) or 1.0)
        c = (pts.min(0) + pts.max(0)) / 2
        aspect = max(self.width(), 1) / max(self.height(), 1)
        dist = fit_points_distance(pts, c, d, up, pl.camera.view_angle, aspect)
        pl.camera_position = [tuple(c + d * dist), tuple(c), tuple(up)]
        pl.reset_camera_clipping_range()
        self._auto_camera = self._camera_now()

    def _camera_now(self):
        """Where the camera is and how it sees (a zoom changes the view angle, not the position)."""
        cam = self.plotter.camera
        return np.concatenate([np.ravel([tuple(x) for x in self.plotter.camera_position]),
                               [cam.view_angle, cam.parallel_scale]]).astype(np.float64)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        pts = getattr(self, "_frame_points", None)
        if pts is None or self._plotter is None:
            return
        auto = getattr(self, "_auto_camera", None)
        if auto is not None and np.allclose(self._camera_now(), auto):  # not moved by the user since
            self.frame(pts)
            self.plotter.render()

    def clear(self) -> None:
        self.n_points = 0
        self._framed = None
        self._frame_points = None
        if self.plotter is not None:
            self.plotter.clear_actors()
        self._stack.setCurrentWidget(self.placeholder)


    def set_points(self, points: np.ndarray, colors: np.ndarray, cameras=(), *, highlight: int | None = None,
                   max_points: int = 1_500_000, frame_key=None) -> None:
        """Show ``points`` (N, 3) coloured ``colors`` (N, 3) uint8 and the ``cameras`` as frusta
        (the ``highlight`` one in red). The camera is framed on the points when ``frame_key``
        (default: ``highlight``) differs from the last call's, else the user's camera stays."""
        key = highlight if frame_key is None else frame_key
        pts = np.asarray(points, np.float32)
        cols = np.asarray(colors, np.uint8)
        if len(pts) > max_points:
            sel = np.random.default_rng(0).choice(len(pts), max_points, replace=False)
            pts, cols = pts[sel], cols[sel]
        self.n_points = len(pts)
        if self.plotter is None:
            pm = QPixmap.fromImage(render_points_png(pts, cols, (640, 480)))
            self.static.setPixmap(pm)
            self._stack.setCurrentWidget(self._static_box)
            return
        import pyvista as pv

        self.plotter.clear_actors()
        ext = float(np.ptp(pts, axis=0).max()) if len(pts) else 1.0
        frame = None
        if len(pts):
            cloud = pv.PolyData(pts)
            cloud["rgb"] = cols
            self.plotter.add_mesh(cloud, scalars="rgb", rgb=True, point_size=2, render_points_as_spheres=False,
                                  name="points")
            if self._framed != key:
                frame = pts  # framed on the points; the cameras may lie outside
                self._framed = key
        if len(cameras):
            scale = frustum_scale(cameras, ext)
            allp, segs, hp, hseg = [], [], [], []
            for i, cam in enumerate(cameras):
                p, s = frustum_lines(cam, scale)
                if i == highlight:
                    hp.append(p)
                    hseg.append(s)
                else:
                    segs.append(s + 5 * len(allp))
                    allp.append(p)
            for name, P, S, color in (("frusta", allp, segs, "#33415c"), ("current", hp, hseg, "#e0112b")):
                if not P:
                    continue
                P = np.vstack(P)
                S = np.vstack(S)
                lines = np.hstack([np.full((len(S), 1), 2), S]).ravel()
                self.plotter.add_mesh(pv.PolyData(P, lines=lines), color=color, line_width=2, name=name,
                                      reset_camera=False)
            if not len(pts):
                frame = np.vstack(allp + hp)  # before a run: the cameras
        if frame is not None:
            self.frame(frame)
        elif not len(pts):
            self.plotter.reset_camera()
        self._stack.setCurrentWidget(self.plotter.interactor if hasattr(self.plotter, "interactor") else self.plotter)
        self.plotter.render()
