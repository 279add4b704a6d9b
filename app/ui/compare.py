"""A swipe view for comparing two pictures of the same size: the pinned result left of a divider,
the live one right of it; drag the divider (or click) to move it, as in an image viewer's
before/after compare."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QSizePolicy, QWidget

__all__ = ["SwipeView"]


class SwipeView(QWidget):
    """Two pixmaps, split at :attr:`split` (0..1 of the width); ``split_changed`` on a drag."""

    split_changed = Signal(float)

    def __init__(self, parent: QWidget | None = None, *, labels: tuple[str, str] = ("Pinned", "Live")):
        super().__init__(parent)
        self.left = QPixmap()
        self.right = QPixmap()
        self.labels = labels
        self.split = 0.5
        self.setMinimumSize(160, 120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setCursor(Qt.CursorShape.SplitHCursor)
        self.setToolTip("Drag to move the divider between the pinned result (left) and the live one (right)")

    def set_pixmaps(self, left: QPixmap, right: QPixmap) -> None:
        self.left, self.right = left, right
        self.update()

    def set_split(self, x: float) -> None:
        self.split = min(1.0, max(0.0, float(x)))
        self.split_changed.emit(self.split)
        self.update()

    #: height of the strip above the pictures that holds the "Pinned" / "Live" badges (on the
    #: pictures they covered the views' titles)
    BADGE_H = 22

    def _target(self) -> QRect:
        pm = self.right if not self.right.isNull() else self.left
        room = self.rect().adjusted(0, self.BADGE_H, 0, 0)
        if pm.isNull():
            return room
        size = pm.size().scaled(room.size(), Qt.AspectRatioMode.KeepAspectRatio)
        x = (self.width() - size.width()) // 2
        y = self.BADGE_H + (room.height() - size.height()) // 2
        return QRect(QPoint(x, y), size)

    def badge_rects(self) -> tuple[QRect, QRect]:
        """Where the "Pinned" and "Live" badges are drawn: above the pictures' corners."""
        r = self._target()
        top = r.top() - self.BADGE_H + 2
        return QRect(r.left(), top, 70, 18), QRect(r.right() - 69, top, 70, 18)

    def paintEvent(self, _event) -> None:  # noqa: N802
        p = QPainter(self)
        p.fillRect(self.rect(), self.palette().window())
        r = self._target()
        cut = r.left() + int(round(self.split * r.width()))
        for pm, clip in ((self.left, QRect(r.left(), r.top(), cut - r.left(), r.height())),
                         (self.right, QRect(cut, r.top(), r.right() - cut + 1, r.height()))):
            if pm.isNull() or clip.width() <= 0:
                continue
            p.save()
            p.setClipRect(clip)
            p.drawPixmap(r, pm)
            p.restore()
        p.setPen(QPen(QColor(255, 200, 0), 2))
        p.drawLine(cut, r.top(), cut, r.bottom())
        p.setPen(QColor(0, 0, 0))
        for box, colour, text in zip(self.badge_rects(), (QColor(255, 243, 196), QColor(220, 240, 255)),
                                     self.labels, strict=True):
            p.fillRect(box, colour)
            p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)
        p.end()

    def _drag(self, x: int) -> None:
        r = self._target()
        if r.width() > 0:
            self.set_split((x - r.left()) / r.width())

    def mousePressEvent(self, event) -> None:  # noqa: N802
        self._drag(int(event.position().x()))

    def mouseMoveEvent(self, event) -> None:  # noqa: N802
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._drag(int(event.position().x()))
