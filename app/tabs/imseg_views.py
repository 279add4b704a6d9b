"""The image segmentation tab's widgets: the image view (one pyqtgraph pane, hover and click
report the pixel) and the region table (a model over the feature arrays, sorted with NumPy,
so tens of thousands of regions stay quick)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableView, QVBoxLayout, QWidget

from ..ui.widgets import set_fitted_title, set_picture
from .placeholder import EmptyHint

__all__ = ["ImsegView", "RegionTableModel", "RegionTable", "COLUMNS"]


class ImsegView(QWidget):
    """One image pane (zoom and pan with the mouse); ``hovered(x, y)`` and ``clicked(x, y)``
    give the pixel under the cursor."""

    hovered = Signal(int, int)
    clicked = Signal(int, int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.title = self.glw.addLabel("", row=0, col=0, color="k")
        self.vb = self.glw.addViewBox(row=1, col=0, lockAspect=True, invertY=True, enableMenu=False)
        self.img = pg.ImageItem(axisOrder="row-major")
        self.vb.addItem(self.img)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.glw)
        self.glw.scene().sigMouseMoved.connect(self._moved)
        self.glw.scene().sigMouseClicked.connect(self._clicked)
        self.shape: tuple[int, int] | None = None
        # worded like the other tabs' empty views (was a title line "Open an image or pick a bundled sample")
        self.empty_hint = EmptyHint(
            self, "No image loaded",
            "Open an image or a folder of images (File ▸ Open, or drop an image on the window),<br>"
            "or pick a bundled sample on the left.")

    def set_picture(self, rgb: np.ndarray, title: str = "") -> None:
        self.empty_hint.hide()
        set_picture(self.img, rgb)
        shape = tuple(rgb.shape[:2])
        if title:
            self._title_text = title
            # cut to the pane: a long title widened the layout past a pinned half for good, and the
            # picture was drawn larger than its half and cut (at a 1024 px window)
            set_fitted_title(self.title, self.glw, title)
        if shape != self.shape:
            self.shape = shape
            self.vb.autoRange(padding=0.02)

    def resizeEvent(self, ev) -> None:  # noqa: N802
        super().resizeEvent(ev)
        if getattr(self, "_title_text", ""):
            set_fitted_title(self.title, self.glw, self._title_text)

    def _pixel(self, pos) -> tuple[int, int] | None:
        if self.shape is None or not self.vb.sceneBoundingRect().contains(pos):
            return None
        p = self.vb.mapSceneToView(pos)
        x, y = int(np.floor(p.x())), int(np.floor(p.y()))
        if 0 <= x < self.shape[1] and 0 <= y < self.shape[0]:
            return x, y
        return None

    def _moved(self, pos) -> None:
        px = self._pixel(pos)
        if px is not None:
            self.hovered.emit(*px)

    def _clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton:
            return
        px = self._pixel(ev.scenePos())
        if px is not None:
            self.clicked.emit(*px)


#: (header, feature, index or None, format)
COLUMNS = (
    ("label", "label", None, "{:d}"),
    ("area px", "area", None, "{:,d}"),
    ("row", "centroid", 0, "{:.1f}"),
    ("col", "centroid", 1, "{:.1f}"),
    ("bbox", "bbox", None, None),
    ("mean colour", "intensity_mean", None, None),
    ("L*", "intensity_mean_lab", 0, "{:.1f}"),
    ("a*", "intensity_mean_lab", 1, "{:.1f}"),
    ("b*", "intensity_mean_lab", 2, "{:.1f}"),
)


_ROLES = frozenset((Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.TextAlignmentRole,
                    Qt.ItemDataRole.UserRole))
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


class RegionTableModel(QAbstractTableModel):
    """Rows = regions, columns = :data:`COLUMNS`; :meth:`sort` reorders with NumPy."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.f: dict = {}
        self.order = np.zeros(0, np.int64)
        self.swatches: np.ndarray | None = None

    #: a new result's rows replace the old ones in place (rows removed or added at the end, every
    #: cell changed) instead of a model reset: a reset made the table view rebuild its headers (the
    #: columns' widths and hidden state set again, the side panel laid out again) at every live
    #: edit. RegionTable clears the selection and current cell as the reset did.
    INCREMENTAL = True

    def set_features(self, features: dict | None, swatches: np.ndarray | None = None) -> None:
        f = dict(features or {})
        n = len(f.get("label", []))
        old = len(self.order)
        if not (self.INCREMENTAL and self.f and f):   # from or to no table: a reset
            self.beginResetModel()
            self.f, self.order, self.swatches = f, np.arange(n), swatches
            self.endResetModel()
            return
        if n < old:
            self.beginRemoveRows(QModelIndex(), n, old - 1)
        elif n > old:
            self.beginInsertRows(QModelIndex(), old, n - 1)
        self.f, self.order, self.swatches = f, np.arange(n), swatches
        if n < old:
            self.endRemoveRows()
        elif n > old:
            self.endInsertRows()
        if n:
            self.dataChanged.emit(self.index(0, 0), self.index(n - 1, len(COLUMNS) - 1))

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section][0]
        return None

    def _value(self, i: int, col: int):
        _, key, idx, _ = COLUMNS[col]
        v = self.f[key][i]
        return v if idx is None else v[idx]

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        # the roles a cell answers; every other role (font, colours, check state, size, ...: the
        # delegate asks each of them for every cell it paints) returns at once
        if role not in _ROLES or not index.isValid() or not self.f:
            return None
        i = int(self.order[index.row()])
        col = index.column()
        name, key, idx, fmt = COLUMNS[col]
        if key not in self.f:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            v = self._value(i, col)
            if key == "bbox":
                r0, c0, r1, c1 = (int(x) for x in v)
                return f"{r0}:{r1}, {c0}:{c1}"
            if key == "intensity_mean":
                return " ".join(f"{x:.0f}" for x in np.asarray(v).ravel())
            return fmt.format(int(v) if fmt.endswith("d}") else float(v))
        if role == Qt.ItemDataRole.DecorationRole and key == "intensity_mean" and self.swatches is not None:
            c = self.swatches[i]
            return QColor(int(c[0]), int(c[1]), int(c[2]))
        if role == Qt.ItemDataRole.TextAlignmentRole and key not in ("bbox", "intensity_mean"):
            return _RIGHT
        if role == Qt.ItemDataRole.UserRole:
            return int(self.f["label"][i])
        return None

    def sort_key(self, col: int) -> np.ndarray:
        _, key, idx, _ = COLUMNS[col]
        v = np.asarray(self.f[key])
        if key == "bbox":
            return v[:, 0] * 1e7 + v[:, 1]
        if key == "intensity_mean":
            return v.reshape(len(v), -1).mean(axis=1)
        return v if idx is None else v[:, idx]

    def sort(self, column: int, order=Qt.SortOrder.AscendingOrder) -> None:
        if not self.f or column < 0:
            return
        self.layoutAboutToBeChanged.emit()
        o = np.argsort(self.sort_key(column), kind="stable")
        self.order = o[::-1] if order == Qt.SortOrder.DescendingOrder else o
        self.layoutChanged.emit()

    def row_of_label(self, label: int) -> int:
        hits = np.flatnonzero(np.asarray(self.f.get("label", []))[self.order] == label)
        return int(hits[0]) if len(hits) else -1

    def label_at(self, row: int) -> int | None:
        if 0 <= row < len(self.order):
            return int(self.f["label"][int(self.order[row])])
        return None


#: the columns' widths; the first CORE_COLUMNS always show, the others in OPTIONAL_ORDER while they fit
COLUMN_WIDTHS = (56, 72, 56, 56, 104, 96, 44, 44, 44)
CORE_COLUMNS = 4
OPTIONAL_ORDER = (5, 6, 7, 8, 4)


class RegionTable(QTableView):
    """The sortable region table; ``region_selected(label)`` when the user picks a row."""

    region_selected = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.model_ = RegionTableModel(self)
        self.setModel(self.model_)
        self.setObjectName("imseg-regions")
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.verticalHeader().setDefaultSectionSize(20)
        hh = self.horizontalHeader()
        hh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        hh.setStretchLastSection(True)
        self.setSortingEnabled(True)
        hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.selectionModel().selectionChanged.connect(self._on_selection)
        self.model_.layoutChanged.connect(self._keep_selection)  # sorting moves the selected row
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        sb = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        self.setMinimumWidth(sum(COLUMN_WIDTHS[:CORE_COLUMNS]) + sb + 2 * self.frameWidth() + 2)
        hh.setToolTip("Widen the panel (drag its left edge) to see more columns: mean colour, L*a*b*, bounding box")
        self._set_widths()   # before a result too: the empty table's headers at their widths, not Qt's 100 px
        self._silent = False
        self.selected_label: int | None = None

    def set_features(self, features: dict | None, swatches=None) -> None:
        self._silent = True
        self.selected_label = None
        self.model_.set_features(features, swatches)
        self.selectionModel().clear()   # as a model reset does: no selected row, no current cell
        hh = self.horizontalHeader()
        if hh.sortIndicatorSection() >= 0:
            self.model_.sort(hh.sortIndicatorSection(), hh.sortIndicatorOrder())
        self._set_widths()
        self._silent = False

    def _set_widths(self) -> None:
        for c, w in enumerate(COLUMN_WIDTHS):
            self.setColumnWidth(c, w)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The first four columns always; the others while they fit the table's width (a
        wider side panel shows more), so the table never scrolls sideways."""
        avail = self.viewport().width()
        used = sum(COLUMN_WIDTHS[:CORE_COLUMNS])
        for c in OPTIONAL_ORDER:
            show = used + COLUMN_WIDTHS[c] <= avail
            self.setColumnHidden(c, not show)
            if show:
                used += COLUMN_WIDTHS[c]

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_columns()

    def _keep_selection(self, *_args) -> None:
        self.select_label(self.selected_label)

    def select_label(self, label: int | None) -> None:
        self._silent = True
        self.selected_label = None if label is None else int(label)
        try:
            if label is None:
                self.clearSelection()
                return
            row = self.model_.row_of_label(int(label))
            if row >= 0:
                self.selectRow(row)
                self.scrollTo(self.model_.index(row, 0), QAbstractItemView.ScrollHint.PositionAtCenter)
        finally:
            self._silent = False

    def _on_selection(self, *_args) -> None:
        if self._silent:
            return
        rows = self.selectionModel().selectedRows()
        if rows:
            lab = self.model_.label_at(rows[0].row())
            if lab is not None:
                self.selected_label = lab
                self.region_selected.emit(lab)
