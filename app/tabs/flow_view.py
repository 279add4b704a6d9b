"""The flow tab's view: two linked pyqtgraph image panes (the first frame with the flow drawn
over it, and a chosen second picture), with the pixel under the cursor reported by a signal."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from gpu_kernels.flow import flow_to_color

__all__ = ["FlowView", "arrow_segments"]


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


class FlowView(QWidget):
    """Two image panes side by side, zoom and pan linked."""

    #: (x, y) pixel of the first frame under the cursor
    hovered = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.left_title = self.glw.addLabel("First frame", row=0, col=0, color="k")
        self.right_title = self.glw.addLabel("Second frame", row=0, col=1, color="k")
        self.left = self.glw.addViewBox(row=1, col=0, lockAspect=True, invertY=True, enableMenu=False)
        self.right = self.glw.addViewBox(row=1, col=1, lockAspect=True, invertY=True, enableMenu=False)
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
        self.img_flow.setZValue(1)
        self.img_quality.setZValue(2)
        self.arrows.setZValue(3)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.glw)
        self.glw.scene().sigMouseMoved.connect(self._moved)
        self.shape: tuple[int, int] | None = None

    # ------------------------------------------------------------------ content
    def set_frames(self, img1, img2) -> None:
        self.img_left.setImage(_as_display(img1), autoLevels=False, levels=(0, 255))
        self.img_right.setImage(_as_display(img2), autoLevels=False, levels=(0, 255))
        new_shape = tuple(np.asarray(img1).shape[:2])
        if new_shape != self.shape:
            self.shape = new_shape
            self.left.autoRange(padding=0.02)
        self.clear_result()

    def clear_result(self) -> None:
        self.img_flow.clear()
        self.img_quality.clear()
        self.arrows.setData([], [])

    def show_left(self, img1, res, *, style: str, flow_opacity: float, quality_overlay: bool, quality_opacity: float,
                  threshold: float, spacing: int, max_flow: float | None) -> None:
        self.img_left.setImage(_as_display(img1), autoLevels=False, levels=(0, 255))
        self.clear_result()
        if res is None:
            self.left_title.setText("First frame")
            return
        valid = res.valid & (res.quality >= threshold)
        if style == "Colour wheel":
            rgb = flow_to_color(res.u, res.v, max_flow=max_flow, valid=res.valid)
            alpha = np.where(valid, int(round(255 * flow_opacity)), 0).astype(np.uint8)
            self.img_flow.setImage(np.dstack([rgb, alpha]), autoLevels=False, levels=(0, 255))
        elif style == "Arrows":
            X, Y = arrow_segments(res.u, res.v, res.quality, spacing=spacing, threshold=threshold, valid=res.valid)
            self.arrows.setData(X, Y)
        if quality_overlay:
            dark = np.clip(1.0 - res.quality, 0, 1) * quality_opacity
            rgba = np.zeros(res.quality.shape + (4,), np.uint8)
            rgba[..., 3] = np.rint(255 * dark).astype(np.uint8)
            self.img_quality.setImage(rgba, autoLevels=False, levels=(0, 255))
        self.left_title.setText(f"First frame, flow as {style.lower()}" if style != "None" else "First frame")

    def show_right(self, img, title: str | None = None) -> None:
        self.img_right.setImage(_as_display(img), autoLevels=False, levels=(0, 255))
        if title:
            self.right_title.setText(title)

    # ------------------------------------------------------------------ hover
    def _moved(self, pos) -> None:
        for vb in (self.left, self.right):
            if vb.sceneBoundingRect().contains(pos):
                p = vb.mapSceneToView(pos)
                self.hovered.emit(int(np.floor(p.x())), int(np.floor(p.y())))
                return
