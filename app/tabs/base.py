"""The base class of every tool tab.

A tab subclasses :class:`ToolTab`, sets the class attributes, builds its widgets and
runs its work through ``self.runner`` (a :class:`app.worker.JobRunner`), which the
main window connects to the status bar (progress, stage, Cancel) and to the error
dialog. A tab only has to handle ``self.runner.finished`` itself.

Parameters put in ``self.param_widgets`` (key -> spin box, combo box, check box,
line edit or slider) are saved and restored with the window's settings.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QSettings, Signal
from PySide6.QtWidgets import QWidget

from ..errors import UserError
from ..gui.settings import restore_widgets, save_widgets
from ..worker import JobRunner

__all__ = ["ToolTab"]

log = logging.getLogger(__name__)


class ToolTab(QWidget):
    """One tool of the window.

    Class attributes
    ----------------
    title : str
        Tab label, also used in messages ("Mesh segmentation failed: ...").
    settings_key : str
        QSettings group of this tab's parameters (e.g. ``"mesh"``).
    file_extensions : tuple of str
        Lower-case suffixes with the dot (``(".ply", ".off")``) that :meth:`open_file`
        accepts; used for File ▸ Open filters and drag-and-drop routing.
    file_kind : str
        Name of those files in the Open dialog ("Meshes").
    """

    title: str = "Tool"
    settings_key: str = "tool"
    file_extensions: tuple[str, ...] = ()
    file_kind: str = "Files"

    #: a line for the status bar (e.g. "Loaded bunny.ply: 69,451 faces")
    status_message = Signal(str)
    #: emitted when :meth:`can_save` may have changed, so the window updates its menu
    result_changed = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(f"tab-{self.settings_key}")
        self.runner = JobRunner(self, name=self.title)
        self.param_widgets: dict[str, QWidget] = {}

    # -- files ---------------------------------------------------------------
    def handles(self, path: str | Path) -> bool:
        """True when this tab opens files like ``path`` (by extension)."""
        name = Path(path).name.lower()
        return any(name.endswith(ext) for ext in self.file_extensions)

    def open_file(self, path: Path) -> None:
        """Load ``path``. Raise :class:`app.errors.UserError` (or an ``app.io``
        error) with a clear message when it cannot be read."""
        raise UserError(f"the {self.title} tab cannot open files yet")

    def open_filter(self) -> str:
        """The Qt filter string for File ▸ Open, e.g. ``"Meshes (*.ply *.off)"``."""
        if not self.file_extensions:
            return ""
        return f"{self.file_kind} (" + " ".join(f"*{e}" for e in self.file_extensions) + ")"

    def can_save(self) -> bool:
        """True when there is a result for File ▸ Save result as."""
        return False

    def save_result(self, path: Path) -> None:
        """Write the current result to ``path`` (use :func:`app.io.atomic.atomic_write`)."""
        raise UserError(f"the {self.title} tab has no result to save")

    def result_filters(self) -> str:
        """Qt filter string for the save dialog, e.g. ``"PLY mesh (*.ply);;Labels (*.seg)"``."""
        return ""

    def samples(self) -> list[Path]:
        """Bundled sample files this tab can open (first one is the default)."""
        return []

    # -- settings --------------------------------------------------------------
    def save_settings(self, settings: QSettings) -> None:
        """Store the tab's parameters. ``settings`` is already in this tab's group."""
        save_widgets(settings, self.param_widgets)

    def restore_settings(self, settings: QSettings) -> None:
        """Restore what :meth:`save_settings` stored (same group)."""
        restore_widgets(settings, self.param_widgets)

    # -- screenshots -------------------------------------------------------------
    def screenshot_widget(self) -> QWidget:
        """The widget File ▸ Export screenshot captures (the tab's main view)."""
        return self

    def export_screenshot(self, path: Path) -> None:
        """Save a PNG of :meth:`screenshot_widget`. Tabs with an OpenGL view may
        override this to render it themselves."""
        from ..gui.capture import save_widget_png

        save_widget_png(self.screenshot_widget(), Path(path))

    # -- jobs -----------------------------------------------------------------
    def run_default(self) -> bool:
        """Start the tab's main computation with the current input and parameters, as
        its Run button would. Returns False when there is nothing to run. Used by
        ``gpulab --run`` (scripted start-up, e.g. for screenshots)."""
        return False

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Stop the tab's job (window closing). Override to release views as well."""
        return self.runner.shutdown(timeout_ms)
