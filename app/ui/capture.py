"""Pictures of widgets, including OpenGL/VTK views."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import QWidget

from ..errors import UserError
from ..io.atomic import atomic_write

__all__ = ["grab_widget", "save_widget_png"]


def grab_widget(w: QWidget) -> QPixmap:
    """A picture of ``w`` as it is on screen.

    On X11 it is read back from the window system, which also captures OpenGL views
    (VTK renders them outside Qt's backing store); elsewhere, or if that fails,
    Qt renders the widget itself.
    """
    pm = QPixmap()
    if QGuiApplication.platformName() == "xcb" and w.isVisible():
        top = w.window()
        screen = top.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            pos = w.mapTo(top, QPoint(0, 0)) if w is not top else QPoint(0, 0)
            pm = screen.grabWindow(top.winId(), pos.x(), pos.y(), w.width(), w.height())
    if pm.isNull():
        pm = w.grab()
    return pm


def save_widget_png(w: QWidget, path: Path) -> Path:
    """Save :func:`grab_widget` of ``w`` as a PNG at ``path`` (atomically)."""
    pm = grab_widget(w)
    if pm.isNull():
        raise UserError("could not capture the view (it has no size yet)")
    path = Path(path)
    with atomic_write(path, "wb") as f:
        f.close()
        if not pm.save(f.name, "PNG"):
            raise UserError(f"could not write the PNG {path}")
    return path
