"""Three linked orthogonal slice views of a volume (axial, coronal, sagittal) for the 3-D echo
motion tab: a shared crosshair, window/level, a colour overlay and in-plane motion arrows.

Coordinates: the volume is indexed [z, y, x]. The axial view shows the plane (y, x) at the
crosshair's z (rows y, columns x), the coronal view (z, x) at its y, the sagittal view (z, y)
at its x. Pixels are drawn at their physical size (voxel spacing), so thick slices look thick.
Clicking or dragging in a view moves the crosshair there; the other two views follow.
"""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ..ui.widgets import set_picture
from .placeholder import EmptyHint

__all__ = ["SliceViews", "PLANES", "arrow_segments"]

#: (title, normal axis, row axis, column axis)
PLANES = (("Axial (z)", 0, 1, 2), ("Coronal (y)", 1, 0, 2), ("Sagittal (x)", 2, 0, 1))
CROSS_PEN = (0, 200, 255)
#: below this width (px) the three views stack top to bottom: side by side, each title
#: ("Sagittal, x = 24 (frame 2)", about 170 px) made its column wider than a third of the
#: widget, and the sagittal view was cut off at the right edge (a pinned half, a narrow window)
STACK_BELOW_PX = 560


def arrow_segments(du, dv, step: int, *, sx: float = 1.0, sy: float = 1.0, scale: float = 1.0):
    """Line segments (with small heads) of an in-plane field sampled every ``step`` pixels, in
    physical units: ``du`` along the columns (pixel size ``sx``), ``dv`` along the rows (``sy``).
    Returns X, Y for a ``connect="pairs"`` curve."""
    H, W = du.shape
    ys, xs = np.mgrid[step // 2:H:step, step // 2:W:step]
    if xs.size == 0:
        return np.zeros(0), np.zeros(0)
    x0 = (xs + 0.5) * sx
    y0 = (ys + 0.5) * sy
    ex = du[ys, xs] * sx * scale
    ey = dv[ys, xs] * sy * scale
    x1, y1 = x0 + ex, y0 + ey
    length = np.hypot(ex, ey)
    ang = np.arctan2(ey, ex)
    hl = np.minimum(0.35 * length, 3.0 * max(sx, sy))
    hx1, hy1 = x1 - hl * np.cos(ang - 0.5), y1 - hl * np.sin(ang - 0.5)
    hx2, hy2 = x1 - hl * np.cos(ang + 0.5), y1 - hl * np.sin(ang + 0.5)
    X = np.stack([x0, x1, x1, hx1, x1, hx2], axis=-1).astype(np.float64).ravel()
    Y = np.stack([y0, y1, y1, hy1, y1, hy2], axis=-1).astype(np.float64).ravel()
    return X, Y


class CrossLine(pg.InfiniteLine):
    """A crosshair line drawn only across the slice picture (``extent``: its start and end
    along the line, in view units), not across the whole pane: pyqtgraph's line runs the
    view's full range, past the picture's edges into the margins of a tall or wide pane."""

    extent: tuple[float, float] | None = None

    def set_extent(self, lo: float, hi: float) -> None:
        self.extent = (float(lo), float(hi))
        self._boundingRect = None
        self.prepareGeometryChange()
        self.update()

    def _computeBoundingRect(self):  # noqa: N802 - pyqtgraph's name
        br = super()._computeBoundingRect()
        if self.extent is None or br.isNull():
            return br
        # local x runs along the line: view x for a horizontal line, view y for a vertical one
        # (the item is rotated by 90 degrees about its position (value, 0))
        left, right = self._endPoints
        lo, hi = self.extent
        left, right = max(left, lo), min(right, hi)
        right = max(right, left)
        br = QRectF(br)
        br.setLeft(left)
        br.setRight(right)
        self._endPoints = (left, right)
        if self._bounds != br:
            self._bounds = br
            self.prepareGeometryChange()
        return br


class _Plane:
    def __init__(self, glw, col: int, title: str, normal: int, row_ax: int, col_ax: int):
        self.normal, self.row_ax, self.col_ax = normal, row_ax, col_ax
        self.title = glw.addLabel(title, row=0, col=col, color="k")
        self.vb = glw.addViewBox(row=1, col=col, lockAspect=True, invertY=True, enableMenu=False)
        self.grey = pg.ImageItem(axisOrder="row-major")
        self.overlay = pg.ImageItem(axisOrder="row-major")
        self.arrows = pg.PlotCurveItem(connect="pairs", pen=pg.mkPen((255, 235, 0), width=1.2))
        self.vline = CrossLine(angle=90, movable=True, pen=pg.mkPen(CROSS_PEN, width=1))
        self.hline = CrossLine(angle=0, movable=True, pen=pg.mkPen(CROSS_PEN, width=1))
        for z, it in enumerate((self.grey, self.overlay, self.arrows, self.vline, self.hline)):
            it.setZValue(z)
            self.vb.addItem(it)


class SliceViews(QWidget):
    """The three views (see the module docstring)."""

    #: the crosshair moved: (z, y, x) voxel indices
    position_changed = Signal(int, int, int)
    #: the cursor is over voxel (z, y, x), or (-1, -1, -1) when it left the views
    hovered = Signal(int, int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.planes = [_Plane(self.glw, i, *PLANES[i]) for i in range(3)]
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.glw)
        self.shape: tuple[int, int, int] | None = None
        self.spacing = (1.0, 1.0, 1.0)
        self.pos = [0, 0, 0]
        self.volume: np.ndarray | None = None
        self.levels = (0.0, 255.0)
        self._updating = False
        for p in self.planes:
            p.vline.sigPositionChanged.connect(lambda _l, p=p: self._line_moved(p, "v"))
            p.hline.sigPositionChanged.connect(lambda _l, p=p: self._line_moved(p, "h"))
        self.glw.scene().sigMouseClicked.connect(self._clicked)
        self.glw.scene().sigMouseMoved.connect(self._moved)
        self.stacked = False
        # empty, the three views were blank squares crossed by the crosshair's lines
        self.empty_hint = EmptyHint(
            self, "No volumes loaded",
            "Open a volume or a sequence: NIfTI, MHA/MHD, NRRD, a DICOM folder, .npy or .npz<br>"
            "(File ▸ Open), or pick a bundled sample on the left.")

    # ------------------------------------------------------------------ layout
    def set_stacked(self, on: bool) -> None:
        """The three views top to bottom (``on``) or side by side (the default)."""
        if bool(on) == self.stacked:
            return
        self.stacked = bool(on)
        ci = self.glw.ci
        for p in self.planes:
            ci.removeItem(p.title)
            ci.removeItem(p.vb)
        for i, p in enumerate(self.planes):
            ci.addItem(p.title, row=2 * i if on else 0, col=0 if on else i)
            ci.addItem(p.vb, row=2 * i + 1 if on else 1, col=0 if on else i)

    def resizeEvent(self, ev) -> None:  # noqa: N802
        self.set_stacked(ev.size().width() < STACK_BELOW_PX)
        self._fit_titles(ev.size().width())
        super().resizeEvent(ev)

    # ------------------------------------------------------------------ titles
    def set_titles(self, forms) -> None:
        """Each plane's title, given as its forms from the longest to the shortest (``forms[i]``, a
        tuple of strings: "Axial, z = 24 (frame 0)", "Axial, z = 24", "z = 24"): the longest that
        fits the plane's column is shown, else the shortest cut with "…", and the whole first form
        is the tooltip. Fitted again on resize: a pinned half at 800 px cut "Axial, z =" at the
        pane's edge, and a pyqtgraph label that demands its text's width widens its column."""
        self._title_forms = [tuple(f) for f in forms]
        self._fit_titles(self.width())

    def title_room(self, width: float | None = None) -> float:
        """The width (px) a plane's title may take: its column, less the layout's margins."""
        width = self.width() if width is None else width
        left, _, right, _ = self.glw.ci.layout.getContentsMargins()
        cols = 1 if self.stacked else len(self.planes)
        gaps = (cols - 1) * max(self.glw.ci.layout.horizontalSpacing(), 0)
        return max(24.0, (width - left - right - gaps) / cols - 6)

    def _fit_titles(self, width: float) -> None:
        forms = getattr(self, "_title_forms", None)
        if not forms:
            return
        from PySide6.QtGui import QFontMetricsF

        room = self.title_room(width)
        for p, f in zip(self.planes, forms, strict=True):
            label = p.title
            margin = 2 * label.item.document().documentMargin()
            shown = None
            for text in f:
                label.setText(html.escape(text, quote=False))
                if label.item.boundingRect().width() <= room:
                    shown = text
                    break
            if shown is None:
                fm = QFontMetricsF(label.item.font())
                shown = fm.elidedText(f[-1], Qt.TextElideMode.ElideRight, room - margin)
                label.setText(html.escape(shown, quote=False))
                while label.item.boundingRect().width() > room and len(shown) > 1:  # the label's own font
                    shown = shown[:-2] + "…"
                    label.setText(html.escape(shown, quote=False))
            label.text = shown
            label.setToolTip(f[0] if shown != f[0] else "")
            label.setMinimumWidth(0)   # never wider than its column

    # ------------------------------------------------------------------ geometry
    def _to_index(self, axis: int, value: float) -> int:
        n = self.shape[axis]
        return int(np.clip(np.floor(value / self.spacing[axis]), 0, n - 1))

    def _to_coord(self, axis: int, index: int) -> float:
        return (index + 0.5) * self.spacing[axis]

    def set_volume_geometry(self, shape, spacing) -> None:
        shape = tuple(int(s) for s in shape)
        spacing = tuple(float(s) for s in spacing)
        changed = shape != self.shape or spacing != self.spacing
        self.shape, self.spacing = shape, spacing
        self.empty_hint.hide()
        if changed:
            self.pos = [s // 2 for s in shape]
            for p in self.planes:
                w, h = shape[p.col_ax] * spacing[p.col_ax], shape[p.row_ax] * spacing[p.row_ax]
                p.vb.setRange(QRectF(0, 0, w, h), padding=0.02)
                p.vline.set_extent(0, h)       # the crosshair ends at the picture's edges
                p.hline.set_extent(0, w)
                p.vline.setBounds((0, w))      # and is dragged within it
                p.hline.setBounds((0, h))
            self._place_lines()

    def set_position(self, z: int, y: int, x: int, *, emit: bool = True) -> None:
        if self.shape is None:
            return
        new = [int(np.clip(v, 0, n - 1)) for v, n in zip((z, y, x), self.shape, strict=True)]
        if new == self.pos:
            return
        self.pos = new
        self._place_lines()
        if emit:
            self.position_changed.emit(*self.pos)

    def _place_lines(self) -> None:
        self._updating = True
        try:
            for p in self.planes:
                p.vline.setValue(self._to_coord(p.col_ax, self.pos[p.col_ax]))
                p.hline.setValue(self._to_coord(p.row_ax, self.pos[p.row_ax]))
        finally:
            self._updating = False

    def _line_moved(self, plane: _Plane, which: str) -> None:
        if self._updating or self.shape is None:
            return
        ax = plane.col_ax if which == "v" else plane.row_ax
        val = plane.vline.value() if which == "v" else plane.hline.value()
        pos = list(self.pos)
        pos[ax] = self._to_index(ax, val)
        if pos != self.pos:
            self.pos = pos
            self._place_lines()
            self.position_changed.emit(*self.pos)

    def _plane_at(self, scene_pos):
        for p in self.planes:
            if p.vb.sceneBoundingRect().contains(scene_pos):
                return p, p.vb.mapSceneToView(scene_pos)
        return None, None

    def _clicked(self, ev) -> None:
        if self.shape is None or ev.button() != Qt.MouseButton.LeftButton:
            return
        p, pt = self._plane_at(ev.scenePos())
        if p is None:
            return
        pos = list(self.pos)
        pos[p.col_ax] = self._to_index(p.col_ax, pt.x())
        pos[p.row_ax] = self._to_index(p.row_ax, pt.y())
        self.set_position(*pos)

    def click_plane(self, index: int, col: int, row: int) -> None:
        """Act as a click on voxel (row, col) of plane ``index`` (0 axial, 1 coronal, 2 sagittal)."""
        p = self.planes[index]
        pos = list(self.pos)
        pos[p.col_ax], pos[p.row_ax] = int(col), int(row)
        self.set_position(*pos)

    def _moved(self, scene_pos) -> None:
        if self.shape is None:
            return
        p, pt = self._plane_at(QPointF(scene_pos))
        if p is None:
            self.hovered.emit(-1, -1, -1)
            return
        pos = list(self.pos)
        pos[p.col_ax] = self._to_index(p.col_ax, pt.x())
        pos[p.row_ax] = self._to_index(p.row_ax, pt.y())
        self.hovered.emit(*pos)

    # ------------------------------------------------------------------ content
    def slice_of(self, vol: np.ndarray, plane: _Plane) -> np.ndarray:
        sl = [slice(None)] * 3
        sl[plane.normal] = self.pos[plane.normal]
        return vol[tuple(sl)]

    def show_volume(self, vol: np.ndarray, levels=None) -> None:
        """Draw the three slices of ``vol`` (Z, Y, X) through the crosshair."""
        self.volume = vol
        if levels is not None:
            self.levels = (float(levels[0]), float(levels[1]))
        for p in self.planes:
            img = self.slice_of(vol, p)
            p.grey.setImage(np.asarray(img, dtype=np.float32), autoLevels=False, levels=self.levels)
            p.grey.setRect(QRectF(0, 0, img.shape[1] * self.spacing[p.col_ax], img.shape[0] * self.spacing[p.row_ax]))

    def set_levels(self, lo: float, hi: float) -> None:
        self.levels = (float(lo), float(max(hi, lo + 1e-6)))
        for p in self.planes:
            p.grey.setLevels(self.levels)

    def show_overlay(self, index: int, rgb: np.ndarray | None, opacity: float) -> None:
        p = self.planes[index]
        if rgb is None or opacity <= 0:
            p.overlay.clear()
            return
        alpha = np.full(rgb.shape[:2] + (1,), int(round(255 * opacity)), np.uint8)
        set_picture(p.overlay, np.concatenate([np.asarray(rgb, np.uint8), alpha], axis=-1))
        p.overlay.setRect(QRectF(0, 0, rgb.shape[1] * self.spacing[p.col_ax], rgb.shape[0] * self.spacing[p.row_ax]))

    def show_arrows(self, index: int, du, dv, step: int, scale: float = 1.0) -> None:
        p = self.planes[index]
        if du is None:
            p.arrows.setData([], [])
            return
        X, Y = arrow_segments(du, dv, step, sx=self.spacing[p.col_ax], sy=self.spacing[p.row_ax], scale=scale)
        p.arrows.setData(X, Y)

    def clear_overlays(self) -> None:
        for i in range(3):
            self.show_overlay(i, None, 0)
            self.show_arrows(i, None, None, 1)

    def reset_views(self) -> None:
        if self.shape is None:
            return
        for p in self.planes:
            p.vb.setRange(QRectF(0, 0, self.shape[p.col_ax] * self.spacing[p.col_ax],
                                 self.shape[p.row_ax] * self.spacing[p.row_ax]), padding=0.02)
