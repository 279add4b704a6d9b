"""Widgets that several tabs use: colour swatches, a legend table of coloured rows, a colour
bar with its scale, and the helpers that keep a tab's panels as wide as their controls need
(:func:`fit_scroll_width`, :func:`balance_splitter`)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import numpy as np
from PySide6 import QtGui
from PySide6.QtCore import QEvent, QObject, QPoint, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QClipboard,
    QColor,
    QFont,
    QGuiApplication,
    QIcon,
    QImage,
    QKeySequence,
    QPainter,
    QPen,
    QPixmap,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QMenu,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QWidget,
)

__all__ = ["swatch", "ElidedLabel", "NameLabel", "name_html", "plain_tooltip", "set_fitted_title", "LegendTable", "hex_color", "ColorBar", "fit_scroll_width", "balance_splitter", "nice_ticks"]


def hex_color(color) -> str:
    return "#" + "".join(f"{int(c):02x}" for c in tuple(color)[:3])


class ElidedLabel(QLabel):
    """A one-line label that cuts its text with "…" to its width (the whole text in its
    tooltip) instead of being cut at the edge or demanding the text's width: it never widens its
    parent, and re-cuts on every resize.

    Examples
    --------
    >>> lab = ElidedLabel()                                   # doctest: +SKIP
    >>> lab.set_full_text("Pinned — Pyramid levels 2, Sweeps/warp 20")  # doctest: +SKIP
    """

    def __init__(self, text: str = "", parent=None):
        super().__init__(parent)
        self._full = ""
        self.setTextFormat(Qt.TextFormat.PlainText)   # a "<" in a file name is text, not a tag
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.set_full_text(text)

    def full_text(self) -> str:
        return self._full

    def set_full_text(self, text: str) -> None:
        self._full = text
        self._elide()

    def minimumSizeHint(self) -> QSize:
        return QSize(1, super().minimumSizeHint().height())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        m = self.contentsMargins()
        room = max(0, self.width() - m.left() - m.right() - 2 * self.margin() - self.indent() - 12)
        shown = self.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, room)
        super().setText(shown)
        self.setToolTip(plain_tooltip(self._full) if shown != self._full else "")
        self.setAccessibleName(self._full)   # a screen reader reads the whole text, not the cut one


#: a break opportunity that shows nothing (zero-width space)
_ZWSP = "\u200b"


def name_html(name: str, run: int = 24) -> str:
    """A file name for a rich-text label: escaped (a "<" or "&" in the name is text, not markup),
    and a name longer than ``run`` with places to wrap after "_", "-", ".", "/" and in any longer run
    of letters (zero-width spaces): a word-wrapped
    label cannot break a long name ("experiment_2026-11-26_session_04_camera_left_…_000123.jpg"),
    which made the left panel 686 px wide and the window at least 1042 px.

    Examples
    --------
    >>> name_html("a<b>_c.png")
    'a&lt;b&gt;_c.png'
    >>> name_html("run_2026-11-26_camera_left_frame_0001.png").replace("\u200b", "|")
    'run_|2026-|11-|26_|camera_|left_|frame_|0001.|png'
    """
    import re

    if len(name) <= run:        # a short name wraps as it is (and reads as it is in tests)
        return html.escape(name, quote=False)
    out = re.sub(r"([_\-./])", lambda m: m.group(1) + _ZWSP, name)
    out = re.sub(rf"[^\s{_ZWSP}]{{{run}}}(?=[^\s{_ZWSP}])", lambda m: m.group(0) + _ZWSP, out)
    # never inside a letter: not before a combining mark (a macOS name's "u" + U+0308), a Hangul
    # vowel or final consonant (a decomposed Korean name) or after a zero-width joiner
    out = "".join(c for i, c in enumerate(out)
                  if c != _ZWSP or not (i + 1 < len(out) and _continues(out[i + 1])
                                        or i > 0 and out[i - 1] == "\u200d"))
    return html.escape(out, quote=False)


def _continues(c: str) -> bool:
    """Whether ``c`` continues the letter before it (no place to wrap before it)."""
    import unicodedata

    return (unicodedata.category(c) in ("Mn", "Mc", "Me") or "\u1160" <= c <= "\u11ff"
            or "\ud7b0" <= c <= "\ud7ff" or c == "\u200d" or "\ufe00" <= c <= "\ufe0f"
            or "\U0001f3fb" <= c <= "\U0001f3ff")


def without_breaks(text: str) -> str:
    """``text`` without :func:`name_html`'s zero-width places to wrap: what a copied or read-out
    file name must be (a pasted ``frame_\u200b0001.png`` names no file)."""
    return text.replace(_ZWSP, "")


class NameLabel(QLabel):
    """A selectable rich-text label that may show :func:`name_html` names (a tab's input line).
    The zero-width places to wrap stay on screen only: Copy (its keys or its menu), the X11
    selection and the name a screen reader reads give the text without them, so a copied file
    name is the file's name.

    Examples
    --------
    >>> lab = NameLabel()                                              # doctest: +SKIP
    >>> lab.setText(f"<b>{name_html('experiment_2026-11-26_camera_left.png')}</b>")  # doctest: +SKIP
    >>> lab.plain_text()                                               # doctest: +SKIP
    'experiment_2026-11-26_camera_left.png'
    """

    def setText(self, text: str) -> None:  # noqa: N802 (Qt)
        super().setText(text)
        self.setAccessibleName(self.plain_text())

    def plain_text(self) -> str:
        """The text shown, as plain text, without the zero-width places to wrap."""
        return without_breaks(self._shown_text())

    def _shown_text(self) -> str:
        """The text shown, as plain text (the places to wrap kept: the selection counts them)."""
        text = self.text()
        if self.textFormat() == Qt.TextFormat.RichText or (
                self.textFormat() == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text)):
            doc = QTextDocument()
            doc.setHtml(text)
            text = doc.toPlainText()
        return text

    def copy_selection(self, mode=None) -> None:
        """The selected text, without the places to wrap, to the clipboard (or the X11 selection)."""
        if self.hasSelectedText():
            # selectedText() ends lines with U+2028/U+2029; Qt's own Copy gives "\n"
            text = self.selectedText().replace("\u2028", "\n").replace("\u2029", "\n")
            QGuiApplication.clipboard().setText(without_breaks(text),
                                                QClipboard.Mode.Clipboard if mode is None else mode)

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt)
        if event.matches(QKeySequence.StandardKey.Copy) and self.hasSelectedText():
            self.copy_selection()
            event.accept()
            return
        super().keyPressEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt)
        super().mouseReleaseEvent(event)      # Qt puts the raw selection into the X11 selection
        if QGuiApplication.clipboard().supportsSelection():
            self.copy_selection(QClipboard.Mode.Selection)

    def context_menu(self):
        """The label's menu: Copy and Select All, both without the places to wrap."""
        menu = QMenu(self)
        copy = menu.addAction("&Copy", lambda: self.copy_selection())
        copy.setEnabled(self.hasSelectedText())
        menu.addAction("Select All", lambda: self.setSelection(0, len(self._shown_text())))
        return menu

    def contextMenuEvent(self, event) -> None:  # noqa: N802 (Qt)
        if not self.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse:
            super().contextMenuEvent(event)
            return
        menu = self.context_menu()
        menu.exec(event.globalPos())
        menu.deleteLater()


def plain_tooltip(text: str) -> str:
    """``text`` as a tooltip that Qt shows as written: a tooltip that looks like HTML ("a<b>.png")
    is rendered as rich text, so such a text is escaped and marked as rich text (others as they are)."""
    from PySide6 import QtGui

    if text and QtGui.Qt.mightBeRichText(text):
        return QtGui.Qt.convertFromPlainText(text, Qt.WhiteSpaceMode.WhiteSpaceNormal)
    return text


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
        # the name column takes what is left; the table is never narrower than its columns (fit_width)
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.itemSelectionChanged.connect(self._on_selection)
        hh.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # rows in the given order until clicked
        self.setSortingEnabled(True)
        self.fit_width()

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
        self.fit_width()

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
        self.setFixedHeight(max(h, self.horizontalHeader().height() + 40))

    def columns_width(self) -> int:
        """The width every column needs (its contents or its header, whichever is wider)."""
        hh = self.horizontalHeader()
        res = getattr(self, "_reserved", None) or [0] * self.columnCount()
        return sum(max(self.sizeHintForColumn(c), hh.sectionSizeHint(c), res[c] if c < len(res) else 0)
                   for c in range(self.columnCount()))

    def reserve_width(self, rows) -> None:
        """Keep each column at least as wide as ``rows`` (``set_rows``' tuples: the widest texts
        a result may bring) need, from now on: the table's width, and so its panel's and the view's
        beside it, stays put across results instead of following each result's digits (a mesh k
        edit that widened the parts table by a pixel resized the 3-D view beside it, which drew its
        triangles again: a one-off 50-120 ms in the first k edits). Until the next call, the table
        also never narrows again: a wider result widens it once, not back and forth. ``[]`` drops
        the reserve."""
        self._reserved = []
        self._widest = 0
        if rows:
            sorting = self.isSortingEnabled()
            self.setSortingEnabled(False)
            kept = [[self.takeItem(r, c) for c in range(self.columnCount())] for r in range(self.rowCount())]
            n = self.rowCount()
            self.setRowCount(len(rows))
            for r, (_key, name, color, cells) in enumerate(rows):
                self.setItem(r, 0, QTableWidgetItem(swatch(color), str(name)) if color is not None
                             else QTableWidgetItem(str(name)))
                for c, (text, value) in enumerate(cells, start=1):
                    self.setItem(r, c, _NumItem(text, value))
            self._reserved = [self.sizeHintForColumn(c) for c in range(self.columnCount())]
            self.clearContents()
            self.setRowCount(n)
            for r, items in enumerate(kept):
                for c, it in enumerate(items):
                    if it is not None:
                        self.setItem(r, c, it)
            self.setSortingEnabled(sorting)
        self.fit_width()

    def fit_width(self) -> None:
        """At least as wide as its columns (plus a vertical scroll bar), so that no row needs
        sideways scrolling: the panel that holds the table grows instead."""
        sb = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        want = self.columns_width() + sb + 2 * self.frameWidth() + 8
        if getattr(self, "_reserved", None):      # reserve_width: never narrower than before
            want = self._widest = max(want, self._widest)
        self.setMinimumWidth(want)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def _on_selection(self) -> None:
        rows = self.selectionModel().selectedRows() if self.selectionModel() else []
        if rows:
            self.row_selected.emit(self.key_at(rows[0].row()))


# ----------------------------------------------------------------------------- colour bars
def nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About ``n`` round numbers (1, 2 or 5 times a power of ten) between ``lo`` and ``hi``.

    >>> nice_ticks(0, 190)
    [0.0, 50.0, 100.0, 150.0]
    >>> nice_ticks(0.8, 1.2, 3)
    [0.8, 1.0, 1.2]
    """
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    out = []
    x = first
    while x <= hi + 1e-9 * step:
        out.append(round(x, 12))
        x += step
    return out


def _fmt_tick(x: float) -> str:
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1000 or a < 0.01:
        return f"{x:.3g}"
    return f"{x:.3f}".rstrip("0").rstrip(".")


class ColorBar(QWidget):
    """A horizontal colour ramp with its scale: ticks at round values, a unit and a caption.

    ``set_map(lut, lo, hi, unit="px", caption="...")`` shows the ``(N, 3)`` uint8 ``lut``
    spread over ``[lo, hi]``; ``clear_map()`` hides the content. ``above``/``below``
    name what lies outside the range ("clipped"), shown at the ends.
    """

    def __init__(self, parent: QWidget | None = None, *, bar_height: int = 12):
        super().__init__(parent)
        self.bar_height = bar_height
        self.lut: np.ndarray | None = None
        self.lo, self.hi = 0.0, 1.0
        self.unit = ""
        self.caption = ""
        self.labels: tuple[str, str] | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_map(self, lut, lo: float, hi: float, *, unit: str = "", caption: str = "",
                labels: tuple[str, str] | None = None) -> None:
        """``labels`` replaces the numeric ticks by words at both ends (e.g. "certain", "uncertain")."""
        self.lut = np.ascontiguousarray(np.asarray(lut, np.uint8).reshape(-1, 3))
        self.lo, self.hi = float(lo), float(hi)
        self.unit, self.caption, self.labels = unit, caption, labels
        self.setToolTip(f"{caption}: {_fmt_tick(self.lo)} … {_fmt_tick(self.hi)}{' ' + unit if unit else ''}"
                        if labels is None else f"{caption}: {labels[0]} … {labels[1]}")
        self.show()
        self.updateGeometry()
        self.update()

    def clear_map(self) -> None:
        self.lut = None
        self.update()

    def ticks(self) -> list[float]:
        return nice_ticks(self.lo, self.hi, 4)

    def sizeHint(self) -> QSize:  # noqa: N802
        fm = self.fontMetrics()
        return QSize(200, self.bar_height + 2 * fm.height() + 10)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return QSize(120, self.sizeHint().height())

    def paintEvent(self, _event) -> None:  # noqa: N802
        if self.lut is None:
            return
        p = QPainter(self)
        fm = self.fontMetrics()
        pad = 4
        w = max(self.width() - 2 * pad, 10)
        ramp = np.ascontiguousarray(np.repeat(self.lut[None], 2, axis=0))
        img = QImage(ramp.data, ramp.shape[1], 2, 3 * ramp.shape[1], QImage.Format.Format_RGB888).copy()
        top = 2
        bar = QRectF(pad, top, w, self.bar_height)
        p.drawImage(bar, img)
        p.setPen(QPen(QColor(90, 90, 90)))
        p.drawRect(bar)
        y_text = top + self.bar_height + fm.ascent() + 3
        if self.labels is not None:
            p.drawText(int(pad), int(y_text), self.labels[0])
            p.drawText(int(pad + w - fm.horizontalAdvance(self.labels[1])), int(y_text), self.labels[1])
        else:
            span = self.hi - self.lo or 1.0
            last_right = -1e9
            ticks = self.ticks()
            for i, t in enumerate(ticks):
                x = pad + w * (t - self.lo) / span
                p.drawLine(int(x), int(top + self.bar_height), int(x), int(top + self.bar_height + 3))
                text = _fmt_tick(t) + (f" {self.unit}" if self.unit and i == len(ticks) - 1 else "")
                tw = fm.horizontalAdvance(text)
                left = min(max(x - tw / 2, 0), self.width() - tw)
                if left > last_right + 4:
                    p.drawText(int(left), int(y_text), text)
                    last_right = left + tw
        if self.caption:
            f = QFont(self.font())
            p.setFont(f)
            p.setPen(QPen(QColor(70, 70, 70)))
            p.drawText(QRectF(pad, y_text + 2, w, fm.height() + 2),
                       Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                       fm.elidedText(self.caption, Qt.TextElideMode.ElideRight, int(w)))
        p.end()


def set_picture(item, rgb) -> None:
    """Show an RGB(A) picture in a pyqtgraph ``ImageItem``: 8-bit as it is, without levels (with
    levels pyqtgraph maps every pixel again at each paint, ~10 ms at 1080p), other types on 0-255."""
    rgb = np.ascontiguousarray(rgb)
    item.setImage(rgb, autoLevels=False, levels=None if rgb.dtype == np.uint8 else (0, 255))


def set_fitted_title(label, glw, text: str, *, columns: int = 1) -> None:
    """Set a pyqtgraph ``LabelItem`` under or over a picture to ``text`` cut with "…" to the width
    of its ``GraphicsLayoutWidget`` (the whole text in its tooltip), and keep the picture's layout in
    that widget. A pyqtgraph label demands its text's width, and a layout widened by a long title
    never shrinks back: the picture was drawn larger than its pane and cut (MVS map, imseg pane).
    Call it again on resize. With ``columns`` > 1 the label sits over one of that many equal
    columns (the flow view's two panes side by side) and gets that share of the width."""
    import shiboken6
    from PySide6.QtGui import QFontMetricsF

    if not (shiboken6.isValid(label) and shiboken6.isValid(glw)):
        return   # a resize or a queued refit during teardown: the label's text item may be gone
    left, _, right, _ = glw.ci.layout.getContentsMargins()
    # the text's room: the pane less the layout's margins, the text item's own margins and 4 px
    room = max(40.0, (glw.width() - left - right) / max(columns, 1) - 2 * label.item.document().documentMargin() - 4)
    shown = QFontMetricsF(label.item.font()).elidedText(text, Qt.TextElideMode.ElideRight, room) if text else text
    # pyqtgraph sets the label as HTML: a "<" or "&" in a file name was read as markup (a name cut at
    # the "<", "&amp;" shown as "&"); the text is escaped, and ``label.text`` keeps the plain text
    label.setText(html.escape(shown, quote=False))
    label.text = shown
    label.setToolTip(plain_tooltip(text) if shown != text else "")
    label.setMinimumWidth(0)     # never wider than the pane
    want = QRectF(0, 0, glw.width(), glw.height())
    if glw.ci.geometry() != want:
        glw.ci.setGeometry(want)


def grey_lut(n: int = 256, *, invert: bool = False) -> np.ndarray:
    g = np.linspace(0, 255, n)
    if invert:
        g = g[::-1]
    return np.repeat(np.rint(g).astype(np.uint8)[:, None], 3, axis=1)


# ----------------------------------------------------------------------------- panel sizes
class _ScrollFit(QObject):
    """Keeps a vertically scrolling panel's minimum width at its content's (see fit_scroll_width)."""

    def __init__(self, scroll: QScrollArea):
        super().__init__(scroll)
        self.scroll = scroll
        self.update_width()

    def update_width(self) -> None:
        sc = self.scroll
        content = sc.widget()
        if content is None:
            return
        sb = sc.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        want = content.minimumSizeHint().width() + sb + 2 * sc.frameWidth()
        if want != sc.minimumWidth():
            sc.setMinimumWidth(want)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() in (QEvent.Type.LayoutRequest, QEvent.Type.Show, QEvent.Type.FontChange):
            QTimer.singleShot(0, self, self.update_width)
        return False


def fit_scroll_width(scroll: QScrollArea) -> None:
    """A panel that scrolls vertically never cuts its controls at the right: its minimum width
    follows its content's minimum (with room for the vertical scroll bar), also when the
    content changes (an "Advanced" section opened, a longer label)."""
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    fit = _ScrollFit(scroll)
    scroll.widget().installEventFilter(fit)
    scroll._width_fit = fit  # keep it alive with the scroll area


class _SplitterBalance(QObject):
    #: below this many pixels for the view(s), the side panel folds away (session 8's L5: at 800 px
    #: the mesh view got 95 px beside a 340 px side panel, two pinned halves ~40 px each)
    MIN_VIEWS = 240

    def __init__(self, split: QSplitter, view_index: int, side_share: float, side_max: int,
                 min_views: int | None = None):
        super().__init__(split)
        self.split, self.view_index, self.side_share, self.side_max = split, view_index, side_share, side_max
        #: a tab's own floor for its view(s) (MVS: two panes side by side); None: MIN_VIEWS
        self.min_views = min_views
        self.has_side = split.count() > view_index + 1  # a panel right of the view(s)
        self.user_moved = False
        self.folded = False
        #: the visible cue of a folded side panel, at the window's right edge: a click shows it again
        self.unfold_button = None
        split.splitterMoved.connect(self._moved)

    def _min_views(self) -> int:
        return self.MIN_VIEWS if self.min_views is None else self.min_views

    def _moved(self, *_a) -> None:
        if not getattr(self, "_balancing", False):
            self.user_moved = True
            if self.folded and self.split.sizes()[-1] > 0:  # the user dragged the panel back out
                self._set_folded(False)

    def _button(self) -> QToolButton:
        if self.unfold_button is None:
            # a child of the splitter's parent: the splitter would take a child widget of its own as a pane
            b = QToolButton(self.split.parentWidget() or self.split.window())
            b.setObjectName("unfold-side-panel")
            b.setText("◂")
            b.setAutoRaise(False)
            b.setFixedSize(16, 64)
            b.setToolTip("The side panel (legends, read-outs) is folded away in this narrow window: click to "
                         "show it (or widen the window)")
            b.setAccessibleName("Show the side panel")
            b.clicked.connect(self.unfold)
            b.hide()
            self.unfold_button = b
        return self.unfold_button

    def _set_folded(self, on: bool) -> None:
        self.folded = bool(on)
        side = self.split.count() - 1
        self.split.setCollapsible(side, self.folded)
        b = self._button()
        if self.folded:
            sp = self.split
            at = sp.mapTo(b.parentWidget(), QPoint(sp.width() - b.width(), max(0, (sp.height() - b.height()) // 2)))
            b.move(at)
            b.show()
            b.raise_()
        else:
            b.hide()

    def _side_room(self) -> tuple[list[int], int, list[int]]:
        """The splitter's sizes now, the side panel's minimum width and the visible views' indices."""
        sp = self.split
        n = sp.count()
        w = sp.widget(n - 1)
        want = w.minimumWidth() or w.minimumSizeHint().width()
        views = [i for i in range(self.view_index, n - 1) if not sp.widget(i).isHidden()] or [self.view_index]
        return sp.sizes(), want, views

    def unfold(self) -> None:
        """Show the folded side panel at its minimum width (the view gives up the room): the user's
        choice, kept as a dragged handle is (no more sharing on resize)."""
        sp = self.split
        n = sp.count()
        sizes, want, give = self._side_room()
        for i in give:
            sizes[i] = max(0, sizes[i] - want // len(give))
        sizes[n - 1] = want
        self._set_folded(False)
        self.user_moved = True
        self._balancing = True
        try:
            sp.setSizes(sizes)
        finally:
            self._balancing = False

    def balance(self) -> None:
        sp = self.split
        total = sp.width() - sp.handleWidth() * (sp.count() - 1)
        if total <= 0 or sp.count() < 2:
            return
        n = sp.count()
        hidden = [sp.widget(i).isHidden() for i in range(n)]
        # as QSplitter itself: a minimum width set on the widget wins over its size hint's
        mins = [0 if hidden[i] else (sp.widget(i).minimumWidth() or sp.widget(i).minimumSizeHint().width())
                for i in range(n)]
        sizes = list(mins)
        if self.has_side:  # a side panel: a share of the width, at least its minimum
            sizes[n - 1] = max(mins[n - 1], min(int(self.side_share * total), self.side_max))
        sizes[0] = max(mins[0], 340) if total >= 1500 else mins[0]
        # the view (or the views side by side, a pinned copy beside the live one) share the rest
        views = [i for i in range(self.view_index, n - 1 if self.has_side else n) if not hidden[i]] or [self.view_index]
        rest = total - sum(s for i, s in enumerate(sizes) if i not in views)
        if self.has_side and not hidden[n - 1]:
            # a narrow window: the side panel folds away before the view is squeezed to a strip; a
            # button at the right edge (and the handle, dragged) brings it back, so does a wider window
            fold = rest < self._min_views()
            if fold:
                rest += sizes[n - 1]
                sizes[n - 1] = 0
            if fold or self.folded:
                self._set_folded(fold)
        for i in views:
            sizes[i] = max(rest // len(views), mins[i])
        if sp.sizes() == sizes:   # every result of a live edit asks again: no re-layout when nothing moves
            return
        self._balancing = True
        try:
            sp.setSizes(sizes)
        finally:
            self._balancing = False

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if self.user_moved:
            if self.folded and event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
                # a handle dragged (the left panel's, say) while the side panel was folded: once the
                # splitter has shared the new width, the cue goes to the right edge again, or the panel
                # comes back where the window is wide enough again
                QTimer.singleShot(0, self, self._refold)
            return False
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Show):
            self.balance()
        elif event.type() == QEvent.Type.LayoutRequest and not getattr(self, "_queued", False):
            # a child's minimum changed (a panel grew a table, a pinned half came or went):
            # re-share once the splitter has taken it in
            self._queued = True
            QTimer.singleShot(0, self, self._rebalance)
        return False

    def _refold(self) -> None:
        if not self.folded:
            return
        sizes, want, views = self._side_room()
        if sum(sizes[i] for i in views) - want >= self._min_views():
            self.unfold()
        else:
            self._set_folded(True)

    def _rebalance(self) -> None:
        self._queued = False
        if not self.user_moved:
            self.balance()


def balance_splitter(split: QSplitter, *, view_index: int = 1, side_share: float = 0.2, side_max: int = 420,
                     min_views: int | None = None) -> None:
    """Share a tab's splitter (left panel, view, optional side panel) by the window's width:
    the panels get what their controls need (the side panel up to ``side_share`` of the width,
    at most ``side_max`` px), the view the rest. Re-shared when the window is resized, until the
    user drags a handle."""
    b = _SplitterBalance(split, view_index, side_share, side_max, min_views)
    split.installEventFilter(b)
    split._balance = b
