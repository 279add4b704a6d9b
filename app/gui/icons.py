"""The application icon and other bundled pictures."""

from __future__ import annotations

import functools
from pathlib import Path

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap

__all__ = ["resources_dir", "app_icon"]


def resources_dir() -> Path:
    """gpulab's samples and icons (:func:`app.tools.base.resources_dir`: the checkout's, or the
    installed package's)."""
    from ..tools.base import resources_dir as _resources_dir

    return _resources_dir()


@functools.cache
def app_icon() -> QIcon:
    """gpulab's icon, drawn from ``resources/icons/gpulab.svg`` at several sizes."""
    svg = resources_dir() / "icons" / "gpulab.svg"
    icon = QIcon()
    if svg.is_file():
        try:
            from PySide6.QtSvg import QSvgRenderer
        except ImportError:  # pragma: no cover - QtSvg ships with PySide6-Essentials
            QSvgRenderer = None
        if QSvgRenderer is not None:
            renderer = QSvgRenderer(str(svg))
            if renderer.isValid():
                for size in (16, 24, 32, 48, 64, 128, 256):
                    pm = QPixmap(QSize(size, size))
                    pm.fill(Qt.GlobalColor.transparent)
                    p = QPainter(pm)
                    renderer.render(p)
                    p.end()
                    icon.addPixmap(pm)
    if icon.isNull():  # no SVG support: a plain coloured square
        pm = QPixmap(32, 32)
        pm.fill(QColor("#243b6b"))
        icon.addPixmap(pm)
    return icon
