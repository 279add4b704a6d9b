"""The flow tab's view: two linked pyqtgraph image panes (the first frame with the flow drawn
over it, and a chosen second picture), with the pixel under the cursor reported by a signal."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gpu_kernels.flow import flow_to_color

from ..render.flow import FlowPicture
from ..ui.widgets import set_fitted_title
from .placeholder import EmptyHint

__all__ = ["FlowView", "arrow_segments", "failure_masks", "quality_overlay_rgba", "FlowWheel"]


def _as_display(img) -> np.ndarray:
    """uint8 RGB/grey, or float 0..1 grey, as an 8-bit array pyqtgraph shows without levels."""
    a = np.asarray(img)
    if a.dtype == np.uint16:
        a = (a >> 8).astype(np.uint8)
    elif a.dtype.kind == "f":
        a = np.clip(np.rint(a * 255), 0, 255).astype(np.uint8)
    elif a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 3 and a.shape[2] == 2:
        a = a[..., 0]
    if a.ndim == 3 and a.shape[2] == 4:
        a = a[..., :3]
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[..., 0]
    return np.ascontiguousarray(a)


def arrow_segments(u, v, quality, *, spacing: int = 16, threshold: float = 0.0, scale: float | None = None,
                   valid=None):
    """Line segments (x, y arrays with pairs of points) of arrows on a grid: shaft and two head strokes.

    The arrows are scaled so the longest spans ``0.9 * spacing`` unless ``scale`` is given
    (pixels of arrow per pixel of flow); vectors below ``threshold`` quality are left out.
    """
    H, W = u.shape
    s = max(2, int(spacing))
    ys, xs = np.mgrid[s // 2:H:s, s // 2:W:s]
    uu, vv, qq = u[ys, xs], v[ys, xs], quality[ys, xs]
    keep = qq >= threshold
    if valid is not None:
        keep &= valid[ys, xs]
    xs, ys, uu, vv = xs[keep], ys[keep], uu[keep], vv[keep]
    if xs.size == 0:
        return np.zeros(0), np.zeros(0)
    mag = np.hypot(uu, vv)
    if scale is None:
        m = float(mag.max()) if mag.size else 0.0
        scale = 0.9 * s / m if m > 1e-6 else 1.0
    x1, y1 = xs + scale * uu, ys + scale * vv
    # heads: two strokes at +-150 degrees from the shaft, a third of its length
    ang = np.arctan2(vv, uu)
    hl = np.minimum(0.35 * scale * mag, 0.4 * s)
    hx1, hy1 = x1 + hl * np.cos(ang + 2.6), y1 + hl * np.sin(ang + 2.6)
    hx2, hy2 = x1 + hl * np.cos(ang - 2.6), y1 + hl * np.sin(ang - 2.6)
    X = np.stack([xs, x1, x1, hx1, x1, hx2], axis=1).astype(np.float64).ravel()
    Y = np.stack([ys, y1, y1, hy1, y1, hy2], axis=1).astype(np.float64).ravel()
    return X, Y


def failure_masks(res) -> tuple[np.ndarray, np.ndarray]:
    """``(occluded, failed)`` bool maps of a flow result, for the quality overlay.

    ``occluded``: the flow result's own occlusion mask when the method gives one
    (``extras["occlusion"]``); otherwise pixels whose flow leaves the second frame, and
    pixels that collide with another pixel in the second frame where theirs is the weaker
    match (a forward-splat check: two points of frame 1 cannot both be seen at one point of
    frame 2). ``failed``: the result's ``extras["failed"]`` when given; otherwise pixels
    whose quality is below 0.25, outside the occluded ones.
    """
    u, v, q = (np.asarray(a, np.float32) for a in (res.u, res.v, res.quality))
    H, W = u.shape
    extras = getattr(getattr(res, "flow", res), "extras", {}) or {}
    valid = np.asarray(res.valid, bool) if getattr(res, "valid", None) is not None else np.ones((H, W), bool)
    if extras.get("occlusion") is not None:
        occ = np.asarray(extras["occlusion"], bool)
    else:
        ys, xs = np.mgrid[0:H, 0:W]
        tx, ty = xs + u, ys + v
        outside = (tx < -0.5) | (tx > W - 0.5) | (ty < -0.5) | (ty > H - 0.5)
        ix = np.clip(np.rint(tx), 0, W - 1).astype(np.int64)
        iy = np.clip(np.rint(ty), 0, H - 1).astype(np.int64)
        cell = (iy * W + ix).ravel()
        ok = (~outside & valid).ravel()
        best = np.full(H * W, -1.0, np.float32)
        np.maximum.at(best, cell[ok], q.ravel()[ok])
        count = np.bincount(cell[ok], minlength=H * W)
        collide = ok & (count[cell] > 1) & (q.ravel() < best[cell] - 0.1)
        occ = outside | collide.reshape(H, W)
    if extras.get("failed") is not None:
        failed = np.asarray(extras["failed"], bool)
    else:
        failed = (q < 0.25) & ~occ
    return occ & valid, failed & valid


#: the quality overlay's colours (RGB) for occluded pixels and failed matches
OCCLUDED_RGB = (40, 110, 255)
FAILED_RGB = (255, 30, 30)


class FlowView(QWidget):
    """Two image panes, zoom and pan linked: side by side, or one above the other when that
    shows the frames larger (a landscape pair in a tall view)."""

    #: (x, y) pixel of the first frame under the cursor
    hovered = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.left_title = pg.LabelItem("First frame", color="k")
        self.right_title = pg.LabelItem("Second frame", color="k")
        self.left = pg.ViewBox(lockAspect=True, invertY=True, enableMenu=False)
        self.right = pg.ViewBox(lockAspect=True, invertY=True, enableMenu=False)
        for t in (self.left_title, self.right_title):
            # a long title must not widen its column: both panes get the same width
            t.setSizePolicy(pg.QtWidgets.QSizePolicy.Policy.Ignored, pg.QtWidgets.QSizePolicy.Policy.Preferred)
        self.vertical: bool | None = None
        self._arrange(False)
        self.right.setXLink(self.left)
        self.right.setYLink(self.left)
        self.img_left = pg.ImageItem(axisOrder="row-major")
        self.img_flow = pg.ImageItem(axisOrder="row-major")
        self.img_quality = pg.ImageItem(axisOrder="row-major")
        self.arrows = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen((255, 255, 0), width=1.5))
        self.img_right = pg.ImageItem(axisOrder="row-major")
        for it in (self.img_left, self.img_flow, self.img_quality, self.arrows):
            self.left.addItem(it)
        self.right.addItem(self.img_right)
        self.message = pg.TextItem("", color=(80, 80, 80), anchor=(0.5, 0.5))
        self.message.setZValue(10)
        self.right.addItem(self.message)
        self.message.hide()
        self.img_flow.setZValue(1)
        self.img_quality.setZValue(2)
        self.arrows.setZValue(3)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.glw)
        self.glw.scene().sigMouseMoved.connect(self._moved)
        self.shape: tuple[int, int] | None = None
        self._pictures: list[tuple[object, FlowPicture]] = []   # (result, its pictures): the live and the pinned
        self._sources: dict[str, object] = {}   # the array each pane's image was made from
        self._masks: tuple | None = None          # (result, its failure masks)
        self.user_zoomed = False  # until the user zooms or pans, a resize re-frames the frames
        for vb in (self.left, self.right):
            vb.sigRangeChangedManually.connect(self._zoomed)
        # the panes re-fit whenever they change size: off screen (the swipe view's picture of a
        # hidden view) the panes got their size after the view's resize, and the live frames were
        # drawn at half the pinned frames' size
        self.left.sigResized.connect(self._pane_resized)
        self.empty_hint = EmptyHint(
            self, "No frames loaded",
            "Open the first frame of a pair, a video or a frame folder (File ▸ Open),<br>"
            "or pick a bundled sample on the left.")

    def _zoomed(self, *_a) -> None:
        self.user_zoomed = True

    def _pane_resized(self, *_a) -> None:
        if self.shape is not None and not self.user_zoomed:
            self._frame()

    def reset_zoom(self) -> None:
        """Frame the whole frames again (and follow resizes until the next zoom)."""
        self.user_zoomed = False
        self._frame()

    def _frame(self) -> None:
        """Fit the frames, now and on every resize (pyqtgraph's auto-range, which a zoom or a
        pan by the user turns off)."""
        if self.shape is None:
            return
        self.right.disableAutoRange()  # linked to the left pane
        self.left.enableAutoRange()
        self.left.autoRange(padding=0.02)

    # ------------------------------------------------------------------ layout
    def _arrange(self, vertical: bool) -> None:
        if vertical == self.vertical:
            return
        ci = self.glw.ci
        for it in (self.left_title, self.right_title, self.left, self.right):
            if it in ci.items:
                ci.removeItem(it)
        lay = ci.layout
        if vertical:
            ci.addItem(self.left_title, row=0, col=0)
            ci.addItem(self.left, row=1, col=0)
            ci.addItem(self.right_title, row=2, col=0)
            ci.addItem(self.right, row=3, col=0)
            lay.setRowStretchFactor(1, 1)
            lay.setRowStretchFactor(3, 1)
            lay.setColumnStretchFactor(0, 1)
        else:
            ci.addItem(self.left_title, row=0, col=0)
            ci.addItem(self.right_title, row=0, col=1)
            ci.addItem(self.left, row=1, col=0)
            ci.addItem(self.right, row=1, col=1)
            lay.setRowStretchFactor(1, 1)
            lay.setColumnStretchFactor(0, 1)
            lay.setColumnStretchFactor(1, 1)
        self.vertical = vertical

    def best_arrangement(self, width: int, height: int) -> bool:
        """True when the frames show larger one above the other than side by side."""
        if self.shape is None:
            return False
        h, w = self.shape
        title = 28
        side = min((width / 2) / w, (height - title) / h)
        stacked = min(width / w, (height - 2 * title) / 2 / h)
        return stacked > side * 1.05

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._relayout()

    def showEvent(self, event) -> None:  # noqa: N802
        """A tab shown for the first time was laid out while hidden: fit once it has its size."""
        super().showEvent(event)
        from PySide6.QtCore import QTimer

        QTimer.singleShot(0, self, self._refit)

    def _refit(self) -> None:
        # queued at a show: the window may be torn down by the time it runs. The titles' text items are
        # not QObjects, so a deleted one is not caught by PySide (a use-after-free corrupted a CI run,
        # session 10): only go on while the layout and both titles are alive
        if not all(shiboken6.isValid(o) for o in (self.glw, self.left_title, self.right_title)):
            return
        self._relayout()
        if not self.user_zoomed:
            self._frame()

    def set_title(self, label, text: str) -> None:
        """A pane's title cut with "…" to its pane (the whole text in its tooltip): a pyqtgraph label
        demands its text's width, and in a pinned half (800-1024 px windows) or with the quality
        overlay's long title the frames were drawn wider than their pane and cut at the right."""
        label._full_title = text
        set_fitted_title(label, self.glw, text, columns=1 if self.vertical else 2)

    def _fit_titles(self) -> None:
        for t in (self.left_title, self.right_title):
            self.set_title(t, getattr(t, "_full_title", t.text))

    def _relayout(self) -> None:
        vertical = self.best_arrangement(self.width(), self.height())
        changed = vertical != self.vertical
        if changed:
            self._arrange(vertical)
        self._fit_titles()
        lay = self.glw.ci.layout
        half = 1e6 if vertical else max((self.width() - 40) / 2, 50)
        for c in (0, 1):  # two equal columns side by side
            lay.setColumnMaximumWidth(c, half)
        if self.shape is not None and (changed or not self.user_zoomed):
            self._frame()

    def image_rect_on_screen(self) -> tuple[int, int]:
        """The size in pixels the first frame is drawn at (for tests and screenshots)."""
        if self.shape is None:
            return (0, 0)
        h, w = self.shape
        r = self.left.mapViewToDevice(pg.QtCore.QRectF(0, 0, w, h)).boundingRect()
        return int(r.width()), int(r.height())

    # ------------------------------------------------------------------ content
    def set_frames(self, img1, img2) -> None:
        self.empty_hint.hide()
        self._set_image(self.img_left, img1, "left")
        self._set_image(self.img_right, img2, "right")
        self._pictures = []
        new_shape = tuple(np.asarray(img1).shape[:2])
        if new_shape != self.shape:
            self.shape = new_shape
            self.user_zoomed = False
            self._relayout()
            self._frame()
        self.clear_result()

    def clear_result(self) -> None:
        self.img_flow.clear()
        self.img_quality.clear()
        self.arrows.setData([], [])

    def picture(self, res) -> FlowPicture:
        """The :class:`~app.render.flow.FlowPicture` of ``res``: made once per result (the live
        one and the pinned one are kept), on the device that computed it."""
        for r, pic in self._pictures:
            if r is res:
                return pic
        pic = FlowPicture(res)
        self._pictures = [(res, pic)] + self._pictures[:1]
        return pic

    def failure_masks(self, res) -> tuple[np.ndarray, np.ndarray]:
        """:func:`failure_masks` of ``res``, once per result (0.2-0.7 s at 1080p on a CPU: an opacity
        drag or a threshold edit with the quality overlay on re-used to pay it at every redraw)."""
        if self._masks is None or self._masks[0] is not res:
            self._masks = (res, failure_masks(res))
        return self._masks[1]

    def _set_image(self, item, src, key: str) -> None:
        """Give ``item`` the picture of ``src`` unless it already shows that very array (a
        1080p frame set again costs its conversion and pyqtgraph's re-render at every redraw)."""
        if self._sources.get(key) is src and src is not None:
            return
        item.setImage(_as_display(src), autoLevels=False, levels=None)
        self._sources[key] = src

    def show_left(self, img1, res, *, style: str, flow_opacity: float, quality_overlay: bool, quality_opacity: float,
                  threshold: float, spacing: int, max_flow: float | None) -> None:
        self._set_image(self.img_left, img1, "left")
        self.clear_result()
        if res is None:
            self.set_title(self.left_title, "First frame")
            return
        if style == "Colour wheel":
            # on the GPU where the flow was computed there: only this RGBA picture comes back
            rgba = self.picture(res).rgba(max_flow=max_flow, alpha=int(round(255 * flow_opacity)),
                                          threshold=threshold)
            self.img_flow.setImage(rgba, autoLevels=False, levels=None)
        elif style == "Arrows":
            X, Y = arrow_segments(res.u, res.v, res.quality, spacing=spacing, threshold=threshold, valid=res.valid)
            self.arrows.setData(X, Y)
        if quality_overlay:
            self.img_quality.setImage(quality_overlay_rgba(res, quality_opacity, masks=self.failure_masks(res)),
                                      autoLevels=False, levels=None)
        title = f"First frame, flow as {style.lower()}" if style != "None" else "First frame"
        if quality_overlay:
            title += " + quality (grey), occlusions (blue), failures (red)"
        self.set_title(self.left_title, title)

    def show_right(self, img, title: str | None = None, *, message: str = "") -> None:
        """The right pane's picture; with ``message`` a blank pane that says it instead."""
        if message:
            h, w = self.shape if self.shape is not None else np.asarray(img).shape[:2]
            self.img_right.setImage(np.full((h, w), 235, np.uint8), autoLevels=False, levels=None)
            self._sources["right"] = None
            self.message.setText(message)
            self.message.setPos(w / 2, h / 2)
            self.message.show()
        else:
            self.message.hide()
            self._set_image(self.img_right, img, "right")
        if title:
            self.set_title(self.right_title, title)

    # ------------------------------------------------------------------ hover
    def _moved(self, pos) -> None:
        for vb in (self.left, self.right):
            if vb.sceneBoundingRect().contains(pos):
                p = vb.mapSceneToView(pos)
                self.hovered.emit(int(np.floor(p.x())), int(np.floor(p.y())))
                return


def quality_overlay_rgba(res, opacity: float, masks=None) -> np.ndarray:
    """RGBA over frame 1: grey darkening by 1 - quality, occluded pixels blue, failed matches red
    (``masks``: the result's :func:`failure_masks`, where already known)."""
    q = np.asarray(res.quality, np.float32)
    rgba = np.zeros(q.shape + (4,), np.uint8)
    rgba[..., 3] = np.rint(255 * np.clip(1.0 - q, 0, 1) * opacity).astype(np.uint8)
    occ, failed = failure_masks(res) if masks is None else masks
    a = int(round(255 * min(1.0, 0.35 + 0.65 * opacity)))
    for m, rgb in ((occ, OCCLUDED_RGB), (failed, FAILED_RGB)):
        rgba[m, :3] = rgb
        rgba[m, 3] = a
    return rgba


class FlowWheel(QWidget):
    """The colour wheel as a legend with its pixel scale: the hue is the direction, the
    saturation the magnitude, full at the colour radius; rings at round magnitudes are
    labelled in pixels, so a 190 px motion reads as such."""

    def __init__(self, parent: QWidget | None = None, *, diameter: int = 120):
        super().__init__(parent)
        self.diameter = diameter
        self.radius_px = 1.0
        self.note = ""
        self._pix = None
        self.setObjectName("flow-wheel")
        from PySide6.QtWidgets import QSizePolicy

        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setToolTip("Middlebury's colour wheel: the hue is the direction of the motion, the saturation its "
                        "magnitude (full at the colour radius); the rings give the magnitude in pixels")
        self._render()

    def set_radius(self, radius_px: float, note: str = "") -> None:
        self.radius_px = float(radius_px) if radius_px and radius_px > 0 else 1.0
        if note != self.note:
            self.note = note
            self.updateGeometry()   # one more caption line with a note
        self.update()

    def caption_lines(self) -> list[str]:
        """The lines under the wheel: the radius, the note on a line of its own (in one line with
        the radius, "radius 6.25 px (largest of pinned and live)" was cut at both ends of the
        panel), what hue and rings mean."""
        return ([f"radius {self.radius_px:.3g} px"] + ([f"({self.note})"] if self.note else [])
                + ["hue: direction; rings: px"])

    def ring_values(self) -> list[float]:
        from ..ui.widgets import nice_ticks

        return [t for t in nice_ticks(0, self.radius_px, 4) if 0 < t <= self.radius_px]

    def _render(self) -> None:
        from PySide6.QtGui import QImage

        n = self.diameter
        y, x = np.mgrid[-1:1:n * 1j, -1:1:n * 1j]
        img = flow_to_color(x, y, max_flow=1.0)
        alpha = np.where(np.hypot(x, y) <= 1.0, 255, 0).astype(np.uint8)
        rgba = np.ascontiguousarray(np.dstack([img, alpha]))
        self._rgba = rgba
        self._pix = QImage(rgba.data, n, n, 4 * n, QImage.Format.Format_RGBA8888).copy()

    def sizeHint(self):  # noqa: N802
        from PySide6.QtCore import QSize

        fm = self.fontMetrics()
        lines = self.caption_lines()
        return QSize(max(self.diameter + 16, fm.horizontalAdvance("hue: direction; rings: px") + 8),
                     self.diameter + len(lines) * fm.height() + 10)

    def minimumSizeHint(self):  # noqa: N802
        return self.sizeHint()

    def paintEvent(self, _event) -> None:  # noqa: N802
        from PySide6.QtCore import QPointF, QRectF
        from PySide6.QtGui import QColor, QPainter, QPen

        from ..ui.widgets import _fmt_tick

        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        fm = self.fontMetrics()
        n = self.diameter
        x0 = (self.width() - n) / 2
        y0 = 2
        p.drawImage(QRectF(x0, y0, n, n), self._pix)
        c = QPointF(x0 + n / 2, y0 + n / 2)
        p.setPen(QPen(QColor(255, 255, 255, 200), 1))
        p.drawLine(QPointF(x0, c.y()), QPointF(x0 + n, c.y()))
        p.drawLine(QPointF(c.x(), y0), QPointF(c.x(), y0 + n))
        for r in self.ring_values():
            rr = n / 2 * r / self.radius_px
            p.setPen(QPen(QColor(40, 40, 40, 170), 1))
            p.drawEllipse(c, rr, rr)
            text = _fmt_tick(r)
            p.setPen(QPen(QColor(20, 20, 20)))
            p.drawText(QPointF(c.x() + rr * 0.71 + 2, c.y() - rr * 0.71 - 2), text)
        p.setPen(QPen(QColor(60, 60, 60)))
        for i, line in enumerate(self.caption_lines()):   # each line cut with "…" rather than at both ends
            text = fm.elidedText(line, Qt.TextElideMode.ElideRight, self.width())
            p.drawText(QRectF(0, y0 + n + 2 + i * fm.height(), self.width(), fm.height() + 2), 0x0084, text)
        p.end()
