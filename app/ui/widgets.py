"""Widgets that several tabs use: colour swatches and a legend table of coloured rows."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableWidget, QTableWidgetItem, QWidget

__all__ = ["swatch", "LegendTable", "hex_color"]


def hex_color(color) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in tuple(color)[:3])


def swatch(color, size: int = 14) -> QIcon:
    """A small square icon of ``color`` (r, g, b) with a dark outline."""
    pm = QPixmap(size, size)
    pm.fill(QColor(int(color[0]), int(color[1]), int(color[2])))
    p = QPainter(pm)
    p.setPen(QColor(60, 60, 60))
    p.drawRect(0, 0, size - 1, size - 1)
    p.end()
    return QIcon(pm)


class _NumItem(QTableWidgetItem):
    """Sorts by the number it shows, not by its text."""

    def __init__(self, text: str, value: float):
        super().__init__(text)
        self.setData(Qt.ItemDataRole.UserRole + 1, float(value))
        self.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

    def __lt__(self, other):  # noqa: D105
        a = self.data(Qt.ItemDataRole.UserRole + 1)
        b = other.data(Qt.ItemDataRole.UserRole + 1)
        if a is None or b is None:
            return super().__lt__(other)
        return a < b


class LegendTable(QTableWidget):
    """Rows of (colour swatch + name, numbers...), sortable, one selectable row.

    ``set_rows(rows)`` takes ``(key, name, color, [(text, value), ...])`` tuples;
    ``row_selected(key)`` is emitted when the user selects a row.
    """

    row_selected = Signal(object)

    def __init__(self, headers: Sequence[str], parent: QWidget | None = None, *, max_rows_shown: int = 12):
        super().__init__(0, len(headers), parent)
        self.max_rows_shown = max_rows_shown
        self.setHorizontalHeaderLabels(list(headers))
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setWordWrap(False)
        hh = self.horizontalHeader()
        for c in range(len(headers)):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        hh.setStretchLastSection(True)
        self.itemSelectionChanged.connect(self._on_selection)
        hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # rows in the given order until clicked
        self.setSortingEnabled(True)

    def set_rows(self, rows) -> None:
        self.setSortingEnabled(False)
        self.clearContents()
        self.setRowCount(len(rows))
        for r, (key, name, color, cells) in enumerate(rows):
            it = QTableWidgetItem(swatch(color), str(name)) if color is not None else QTableWidgetItem(str(name))
            it.setData(Qt.ItemDataRole.UserRole, key)
            if color is not None:
                it.setToolTip(hex_color(color))
            self.setItem(r, 0, it)
            for c, (text, value) in enumerate(cells, start=1):
                self.setItem(r, c, _NumItem(text, value))
        self.setSortingEnabled(True)  # re-applies the column the user chose, if any
        self.fit_height()

    def row_of(self, key) -> int:
        """The row showing ``key`` (-1 if none)."""
        for r in range(self.rowCount()):
            if self.key_at(r) == key:
                return r
        return -1

    def key_at(self, row: int):
        it = self.item(row, 0)
        return None if it is None else it.data(Qt.ItemDataRole.UserRole)

    def fit_height(self) -> None:
        """As tall as its rows, up to ``max_rows_shown``, so what follows sits below it."""
        rows = self.rowCount()
        self.resizeRowsToContents()
        h = self.horizontalHeader().sizeHint().height() + 2 * self.frameWidth() + 6
        h += sum(self.rowHeight(r) for r in range(min(rows, self.max_rows_shown)))
        if rows > self.max_rows_shown:
            h += self.rowHeight(0) // 2  # a hint that it scrolls
        # room for the horizontal scroll bar, which a narrow panel shows (it would hide a row)
        h += self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        self.setFixedHeight(max(h, self.horizontalHeader().height() + 40))

    def _on_selection(self) -> None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if rows:
            self.row_selected.emit(self.key_at(rows[0].row()))
