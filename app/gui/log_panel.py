"""A dockable panel that shows Python ``logging`` records, from any thread."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import QDockWidget, QPlainTextEdit, QWidget

__all__ = ["LogPanel", "QtLogHandler"]

_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class _Bridge(QObject):
    record = Signal(str, int)


class QtLogHandler(logging.Handler):
    """A logging handler that forwards formatted records through a Qt signal, so
    records from worker threads reach the GUI thread safely."""

    def __init__(self, level: int = logging.INFO):
        super().__init__(level)
        self.bridge = _Bridge()
        self.setFormatter(logging.Formatter(_FORMAT, "%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = self.format(record)
            self.bridge.record.emit(msg, record.levelno)
        except RuntimeError:  # the bridge was deleted with the window
            pass
        except Exception:
            self.handleError(record)


class LogPanel(QDockWidget):
    """The "Log" dock. :meth:`install` routes the root logger into it."""

    MAX_LINES = 5000

    def __init__(self, parent: QWidget | None = None):
        super().__init__("Log", parent)
        self.setObjectName("log-panel")
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.setMaximumBlockCount(self.MAX_LINES)
        font: QFont = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.view.setFont(font)
        self.setWidget(self.view)
        self.setAllowedAreas(Qt.DockWidgetArea.BottomDockWidgetArea | Qt.DockWidgetArea.RightDockWidgetArea)
        self.handler = QtLogHandler()
        self.handler.bridge.record.connect(self.append)
        self._installed = False

    def install(self, level: int = logging.INFO) -> None:
        """Route ``logging`` into the panel: gpulab's own loggers at ``level``,
        everything else at WARNING and above."""
        root = logging.getLogger()
        if not self._installed:
            root.addHandler(self.handler)
            self._installed = True
        self.handler.setLevel(level)
        for name in ("app", "gpu_kernels"):
            lg = logging.getLogger(name)
            if lg.level == logging.NOTSET or lg.level > level:
                lg.setLevel(level)
        if root.level == logging.NOTSET or root.level > logging.WARNING:
            root.setLevel(logging.WARNING)

    def uninstall(self) -> None:
        if self._installed:
            logging.getLogger().removeHandler(self.handler)
            self._installed = False

    def append(self, text: str, level: int = logging.INFO) -> None:
        if level >= logging.ERROR:
            text = f"<span style='color:#c62828'>{_esc(text)}</span>"
            self.view.appendHtml(text)
        elif level >= logging.WARNING:
            self.view.appendHtml(f"<span style='color:#a66300'>{_esc(text)}</span>")
        else:
            self.view.appendPlainText(text)

    def text(self) -> str:
        return self.view.toPlainText()


def _esc(s: str) -> str:
    import html

    return html.escape(s).replace("\n", "<br>").replace("  ", "&nbsp; ")
