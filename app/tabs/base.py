"""The base class of every tool tab: all the common work, so a tab is only widgets and views.

:class:`ToolTab` owns, for the tool named by its ``tool`` attribute:

* the left panel: the input (Open…, the bundled-sample picker, a line about what is
  loaded), the parameter form generated from the tool's parameters (with Load/Save
  preset, Reset and Copy command line), the Run/Cancel row and its stage line, the tab's own
  controls, and one Export button per export the tool declares;
* loading files on the worker thread (a 4-D study or a 300-view scene never freezes the
  window), then running the tool on it, on the device the window's Compute menu names;
* the stale-result guard (a result for an input that is no longer shown is dropped);
* errors: a dialog through the window, one "input too large" flow for every tool (a
  :class:`~gpu_kernels.errors.TooLargeError` offers to re-run with its remedy), and a
  status line;
* settings: the parameters and the tab's own widgets are remembered;
* live tuning (:mod:`app.tools.stages`): runs go through the shared stage cache, so a change
  re-runs only the stages it affects. **Live** (beside Run, remembered) re-runs ~150 ms after
  each edit, cancelling and superseding a run in flight (an older result is never shown over a
  newer one); display-only parameters redraw at once without a job; the status bar says which
  stage re-ran and how long it took. **Pin** keeps the shown result and its parameters and shows
  it beside the live one (a second copy of the tab's view) with a table of the parameters that
  differ. Each parameter change is a step of the tab's history (Ctrl+Z / Ctrl+Shift+Z), and
  going back shows the cached result without recomputing. Copy command and Save preset
  describe the result on screen.

A tab implements three methods — :meth:`build_view`, :meth:`show_input` and
:meth:`show_result` — and may add :meth:`build_controls`, :meth:`build_side_panel`,
:meth:`clear_result`, :meth:`describe_input` and export options. ``tests/framework``
holds a complete tab of a dozen lines.

The window reaches a tab through this class's public methods only, and a tab reaches the
window through :class:`TabHost`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QEvent, QKeyCombination, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gpu_kernels.backend import get_backend
from gpu_kernels.errors import TooLargeError

from ..errors import classify
from ..tools.base import Export, Job, Tool, fmt_seconds, resources_dir, run_staged_job
from ..tools.params import ParameterError
from ..tools.stages import shared_cache
from ..ui.forms import ParamForm
from ..ui.settings import make_settings, restore_widgets, save_widgets, set_widget_value, widget_value
from ..ui.view3d import View3D
from ..ui.widgets import ElidedLabel, NameLabel, balance_splitter, fit_scroll_width
from ..ui.worker import JobRunner

__all__ = ["ToolTab", "TabHost", "StandaloneHost", "PendingJob", "LIVE_DEBOUNCE_MS", "SLOW_RUN_S"]

log = logging.getLogger(__name__)

#: Live waits this long after the last edit before it runs (a drag or typing is one run)
LIVE_DEBOUNCE_MS = 150
#: above this many seconds for a full run, Live says what each change costs
SLOW_RUN_S = 2.0


class TabHost(Protocol):
    """What a tab may ask of the window that holds it."""

    settings: QSettings

    def show_error(self, title: str, summary: str, details: str = "") -> None: ...

    def device_spec(self) -> str | None:
        """The device for new jobs (``None`` = auto)."""

    def file_opened(self, path: Path) -> None:
        """A file was opened (for the recent-files list)."""


class StandaloneHost:
    """The host of a tab shown on its own (tests, embedding): message boxes, auto device."""

    def __init__(self, tab: QWidget):
        self._tab = tab
        self.settings = make_settings()
        self.device: str | None = None

    def show_error(self, title: str, summary: str, details: str = "") -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, summary, QMessageBox.StandardButton.Ok, self._tab)
        if details:
            box.setDetailedText(details)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def device_spec(self) -> str | None:
        return self.device

    def file_opened(self, path: Path) -> None:
        pass


@dataclass
class PendingJob:
    """What the tab's runner is doing: loading ``path`` (``how``: a file opened, or an ``extra``
    input such as a second frame), or running request number ``request`` with ``params`` on
    ``device`` for the input of ``token``."""

    kind: str                       # "load" | "run"
    path: Path | None = None
    how: str = "open"
    token: int = 0
    params: dict = field(default_factory=dict)
    device: str | None = None
    request: int = 0


class _HistoryKeysPassThrough(QObject):
    """Lets the undo/redo keys reach the tab's history shortcuts from a parameter editor."""

    _KEYS = (QKeySequence.StandardKey.Undo, QKeySequence.StandardKey.Redo)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.ShortcutOverride and (
                any(event.matches(k) for k in self._KEYS)
                or event.keyCombination() == QKeyCombination(Qt.KeyboardModifier.ControlModifier, Qt.Key.Key_Y)):
            event.ignore()   # not the editor's: the shortcut map gives it to the tab
            return True
        return False


def _views3d(root: QWidget) -> list[View3D]:
    """The 3-D views in ``root`` (itself included), in widget-tree order."""
    return ([root] if isinstance(root, View3D) else []) + root.findChildren(View3D)


def _deliver_resizes(root: QWidget) -> None:
    """Hidden widgets keep their resize events until shown: deliver them now, so that views
    that fit their content on resize (pictures, plots) are laid out at their new size before
    they are rendered off screen (the swipe view's pictures)."""
    from PySide6.QtCore import QCoreApplication, QSize
    from PySide6.QtGui import QResizeEvent

    for w in reversed([root, *root.findChildren(QWidget)]):   # the innermost first: a parent fits to them
        if w.testAttribute(Qt.WidgetAttribute.WA_PendingResizeEvent):
            w.setAttribute(Qt.WidgetAttribute.WA_PendingResizeEvent, False)
            QCoreApplication.sendEvent(w, QResizeEvent(w.size(), QSize(-1, -1)))


class ToolTab(QWidget):
    """One tool of the window (see the module docstring).

    Class attributes
    ----------------
    tool : app.tools.base.Tool
    run_label : str
        The Run button's text ("Segment").
    """

    tool: Tool
    run_label: str = "Run"
    #: below this width for the view(s) the side panel folds away (None: the window's 240 px; a tab
    #: whose view is two panes side by side asks for more)
    MIN_VIEW_WIDTH: int | None = None

    #: a line for the status bar
    status_message = Signal(str)
    #: :meth:`can_save` may have changed
    result_changed = Signal()
    #: an input finished loading (its path)
    input_loaded = Signal(object)
    #: a result was shown
    result_shown = Signal()

    def __init__(self, parent: QWidget | None = None, *, host: TabHost | None = None):
        super().__init__(parent)
        self.host: TabHost = host if host is not None else StandaloneHost(self)
        self.setObjectName(f"tab-{self.settings_key}")
        self.runner = JobRunner(self, name=self.tool.title)
        self.data: Any = None
        self.input_path: Path | None = None
        self.result: Any = None
        self.setting_widgets: dict[str, QWidget] = {}  # the tab's own widgets to remember
        self._token = 0
        self._drawing_pinned = False      # the pinned side is being drawn (draw_pinned_later)
        self._pinned_draw = None
        self._pinned_timer: QTimer | None = None
        self._pending_job: PendingJob | None = None
        self._last_error: BaseException | None = None
        self._run_after_load = False
        # live tuning: the stage cache, the newest request, what is shown, history, pin
        self.cache = shared_cache()
        self.slow_run_s = SLOW_RUN_S
        self._read_live_settings()
        self._input_key: tuple = (None, 0)
        self._request = 0
        self._pending_live = False
        self._shown_params: dict | None = None
        self._form_params: dict | None = None
        self.last_report = None
        self.stage_seconds: dict[str, float] = {}
        self.full_seconds: float | None = None
        self.history: list[dict] = []
        self.history_index = -1
        self._restoring = False
        self.pinned: tuple | None = None  # (result, params)
        self._pinned_slot: dict | None = None
        self.swipe_view = None

        self.view = self.build_view()
        left = self._build_left()
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(self.view)
        side = self.build_side_panel()
        if side is not None:
            split.addWidget(side)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        split.setSizes([340, 680, 280] if side is not None else [340, 880])
        # panels as wide as their controls need, the view the rest (the side panel folds below MIN_VIEW_WIDTH)
        balance_splitter(split, min_views=self.MIN_VIEW_WIDTH)
        self.splitter = split
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)

        self.runner.finished.connect(self._on_finished)
        self.runner.error.connect(self._on_error)
        self.runner.failed.connect(self._on_failed)
        self.runner.cancelled.connect(self._on_cancelled)
        self.runner.running_changed.connect(self._on_running_changed)
        self.runner.progress.connect(self._on_progress)
        self._live_timer = QTimer(self)
        self._live_timer.setSingleShot(True)
        self._live_timer.setInterval(LIVE_DEBOUNCE_MS)
        self._live_timer.timeout.connect(self._live_fire)
        self._history_timer = QTimer(self)
        self._history_timer.setSingleShot(True)
        self._history_timer.setInterval(LIVE_DEBOUNCE_MS)
        self._history_timer.timeout.connect(self._record_history)
        self._form_params = self._try_params()
        self.history, self.history_index = ([dict(self._form_params)], 0) if self._form_params else ([], -1)
        self.form.changed.connect(self._on_params_changed)
        for seq, fn in (("Ctrl+Z", self.undo), ("Ctrl+Shift+Z", self.redo), ("Ctrl+Y", self.redo)):
            sc = QShortcut(QKeySequence(seq), self)
            sc.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            sc.activated.connect(fn)
        # a parameter box keeps its own text undo; Ctrl+Z there is the tab's history, as the
        # user expects right after typing a value (the box would otherwise take the key)
        self._undo_pass = _HistoryKeysPassThrough(self)
        for w in self.form.findChildren(QWidget):
            w.installEventFilter(self._undo_pass)
        self._update_enabled()

    @property
    def _job(self) -> PendingJob | None:
        """The job the runner is doing (:class:`PendingJob`), or None."""
        return self._pending_job

    @_job.setter
    def _job(self, job: PendingJob | None) -> None:
        if job is not None and not isinstance(job, PendingJob):
            raise TypeError(f"a tab's job is a PendingJob or None, not {type(job).__name__}")
        self._pending_job = job

    # ------------------------------------------------------------------ what a tab implements
    def build_view(self) -> QWidget:
        """The central view (called once, before the panels are built)."""
        raise NotImplementedError

    def show_input(self, data) -> None:
        """Show a freshly loaded input (the old result is already cleared)."""
        raise NotImplementedError

    def show_result(self, result) -> None:
        """Show a result of the tool for the current input."""
        raise NotImplementedError

    def build_controls(self) -> list[QWidget]:
        """Extra groups for the left panel, below Run (display options, ...)."""
        return []

    def build_side_panel(self) -> QWidget | None:
        """An optional panel right of the view (legend, details)."""
        return None

    def clear_result(self) -> None:
        """Forget the shown result (a new input was loaded)."""

    def describe_input(self, data) -> str:
        """One or two lines (rich text) about the loaded input."""
        return f"<b>{self.input_path.name if self.input_path else 'input'}</b>"

    def export_widget(self, export: Export) -> QWidget | None:
        """Options shown beside an export's button (e.g. a format box)."""
        return None

    def export_options(self, export: Export) -> dict:
        """Keyword options for ``export.write`` (read from :meth:`export_widget`)."""
        return {}

    # ------------------------------------------------------------------ identity
    title: str = "Tool"
    settings_key: str = "tool"
    file_extensions: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        tool = cls.__dict__.get("tool")
        if tool is not None:  # the tab's identity is its tool's
            cls.title, cls.settings_key, cls.file_extensions = tool.title, tool.key, tool.input_extensions

    def handles(self, path: str | Path) -> bool:
        """Whether this tab opens ``path`` (a file or a folder): the reader registry decides."""
        return self.tool.handles(path)

    def open_filter(self) -> str:
        """The Open dialog's filter, from the reader registry's kind of the tool's input."""
        return self.tool.input.filter

    def samples(self) -> list[Path]:
        return list(self.tool.samples())

    def refresh_samples(self) -> None:
        """List the samples again (the window calls it when the shared data folder changes)."""
        self.sample_combo.clear()
        self.sample_combo.addItem("Bundled sample…")
        for s in self.samples():
            self.sample_combo.addItem(Path(s).stem, str(s))

    # ------------------------------------------------------------------ building
    def _build_left(self) -> QWidget:
        panel = QWidget()
        v = QVBoxLayout(panel)
        v.setContentsMargins(8, 8, 8, 8)

        g = QGroupBox(self.tool.input_noun)
        gl = QVBoxLayout(g)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip(f"Open {self.tool.input_kind.lower()}: "
                                    + " ".join(f"*{e}" for e in self.file_extensions))
        self.open_button.clicked.connect(self.open_dialog)
        self.sample_combo = QComboBox()
        self.sample_combo.setObjectName(f"{self.settings_key}-samples")
        self.refresh_samples()
        self.sample_combo.setToolTip("Open one of the samples that ship with gpulab (and those of the "
                                     "shared data folder: File ▸ Sample data folder…)")
        self.sample_combo.activated.connect(self._on_sample)
        row.addWidget(self.open_button)
        row.addWidget(self.sample_combo, 1)
        gl.addLayout(row)
        self.input_info = NameLabel(f"No {self.tool.input_noun.lower()} loaded.")  # "No mesh loaded." (was "meshe")
        self.input_info.setObjectName(f"{self.settings_key}-input-info")
        self.input_info.setWordWrap(True)
        self.input_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gl.addWidget(self.input_info)
        v.addWidget(g)

        g = QGroupBox("Parameters")
        gl = QVBoxLayout(g)
        self.form = ParamForm(self.tool.params)
        gl.addWidget(self.form)
        row = QHBoxLayout()
        self.preset_button = QToolButton()
        self.preset_button.setText("Presets")
        self.preset_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.preset_button)
        self.act_load_preset = menu.addAction("Load preset…", self.load_preset_dialog)
        self.act_save_preset = menu.addAction("Save preset…", self.save_preset_dialog)
        menu.addSeparator()
        self.act_reset = menu.addAction("Reset to defaults", self.form.reset)
        self.preset_button.setMenu(menu)
        self.copy_cli_button = QToolButton()
        self.copy_cli_button.setText("Copy command")
        self.copy_cli_button.setToolTip("Copy the gpulab command line that repeats this run headless")
        self.copy_cli_button.clicked.connect(self.copy_command_line)
        row.addWidget(self.preset_button)
        row.addWidget(self.copy_cli_button)
        row.addStretch(1)
        gl.addLayout(row)
        v.addWidget(g)

        row = QHBoxLayout()
        self.run_button = QPushButton(self.run_label)
        self.run_button.setObjectName(f"{self.settings_key}-run")
        self.run_button.setDefault(True)
        self.run_button.setToolTip(f"{self.run_label} with these parameters (Ctrl+R)")
        self.run_button.setShortcut("Ctrl+R")
        self.run_button.clicked.connect(lambda: self.run())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName(f"{self.settings_key}-cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        row.addWidget(self.run_button, 1)
        row.addWidget(self.cancel_button)
        v.addLayout(row)
        row = QHBoxLayout()
        self.live_check = QCheckBox("Live")
        self.live_check.setObjectName(f"{self.settings_key}-live")
        self.live_check.setToolTip("Re-run after each parameter change (only the stages the change affects); "
                                   "display options redraw at once")
        self.live_check.toggled.connect(self._on_live_toggled)
        self.setting_widgets["live"] = self.live_check
        self.pin_button = QPushButton("Pin")
        self.pin_button.setObjectName(f"{self.settings_key}-pin")
        self.pin_button.setCheckable(True)
        self.pin_button.setToolTip("Keep the result shown and compare it with the live one")
        self.pin_button.toggled.connect(self._on_pin_toggled)
        self.swipe_button = QPushButton("Swipe")
        self.swipe_button.setObjectName(f"{self.settings_key}-swipe")
        self.swipe_button.setCheckable(True)
        self.swipe_button.setToolTip("Compare the pinned and the live result in one view, split by a divider "
                                     "you drag (for images and slices; 3-D views stay side by side)")
        self.swipe_button.setVisible(False)
        self.swipe_button.toggled.connect(self.set_swipe)
        self.undo_button = QToolButton()
        self.undo_button.setText("↶")
        self.undo_button.setToolTip("Undo the last parameter change (Ctrl+Z)")
        self.undo_button.clicked.connect(self.undo)
        self.redo_button = QToolButton()
        self.redo_button.setText("↷")
        self.redo_button.setToolTip("Redo (Ctrl+Shift+Z)")
        self.redo_button.clicked.connect(self.redo)
        row.addWidget(self.live_check)
        row.addWidget(self.pin_button)
        row.addWidget(self.swipe_button)
        row.addStretch(1)
        self.history_button = QToolButton()        # the steps, the current one ticked: click one to go back to it
        self.history_button.setText("History")
        self.history_button.setObjectName(f"{self.settings_key}-history")
        self.history_button.setToolTip("The parameter changes of this tab: pick a step to go back (or forward) "
                                       "to it; its result comes back from the cache when it is still there")
        self.history_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.history_menu = QMenu(self.history_button)
        self.history_menu.aboutToShow.connect(self._fill_history_menu)
        self.history_button.setMenu(self.history_menu)
        row.addWidget(self.undo_button)
        row.addWidget(self.redo_button)
        row.addWidget(self.history_button)
        v.addLayout(row)
        self.compare_table = QTableWidget(0, 3)
        self.compare_table.setObjectName(f"{self.settings_key}-compare")
        self.compare_table.setHorizontalHeaderLabels(["Parameter", "Pinned", "Live"])
        self.compare_table.verticalHeader().setVisible(False)
        self.compare_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.compare_table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.compare_table.setWordWrap(True)
        self.compare_table.setVisible(False)
        v.addWidget(self.compare_table)
        self.stage_label = QLabel("")
        self.stage_label.setObjectName(f"{self.settings_key}-stage")
        self.stage_label.setWordWrap(True)
        self.stage_label.setStyleSheet("color: #555;")
        # two lines' height, always: the panel below does not jump when a job starts, reports or ends
        # (each jump re-laid out the whole side panel; benchmarks/results/echo_gap_session11.md)
        self.stage_label.setFixedHeight(2 * self.stage_label.fontMetrics().lineSpacing() + 2)
        self.stage_label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        v.addWidget(self.stage_label)

        controls = self.build_controls()
        self._bind_display_widgets()
        export_opts = {p for e in self.tool.exports for p in e.options.values()}
        if self.form.display_widget is not None and any(  # the tool's display-only parameters, in the Display group
                p.display and p.name not in export_opts and p.name not in self._bound for p in self.tool.params):
            g = next((w for w in controls if isinstance(w, QGroupBox) and w.title().replace("&", "") == "Display"
                      and w.layout() is not None), None)
            if g is None:
                g = QGroupBox("Display")
                g.setObjectName(f"{self.settings_key}-display")
                QVBoxLayout(g)
                controls.insert(0, g)
            g.layout().insertWidget(0, self.form.display_widget)
        for w in controls:
            v.addWidget(w)

        self.export_buttons: dict[str, QPushButton] = {}
        if self.tool.exports:
            g = QGroupBox("Export")
            gl = QVBoxLayout(g)
            for e in self.tool.exports:
                b = QPushButton(f"{e.label} ({', '.join(e.extensions)})…" if not e.folder else f"{e.label}…")
                b.setObjectName(f"{self.settings_key}-export-{e.key}")
                b.clicked.connect(lambda _c=False, e=e: self.export_dialog(e))
                self.export_buttons[e.key] = b
                extra = self.export_widget(e)
                if extra is None and e.options:
                    extra = self._export_option_widgets(e)
                if extra is None:
                    gl.addWidget(b)
                else:
                    r = QHBoxLayout()
                    r.addWidget(b, 1)
                    r.addWidget(extra)
                    gl.addLayout(r)
            v.addWidget(g)
        v.addStretch(1)

        scroll = QScrollArea()
        scroll.setWidget(panel)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        fit_scroll_width(scroll)  # never cuts a control at the right (app.ui.widgets)
        return scroll

    def _export_option_widgets(self, export: Export) -> QWidget:
        """The form's widgets of ``export``'s option Params, moved beside its button."""
        box = QWidget()
        h = QHBoxLayout(box)
        h.setContentsMargins(0, 0, 0, 0)
        for name in export.options.values():
            f = self.form.fields[name]
            lay = self.form._rows.pop(name, None)
            if lay is not None:
                taken = lay.takeRow(f.widget)
                label = taken.labelItem.widget() if taken.labelItem is not None else None
                if label is not None:  # out of the layout but still a child: hide it at once
                    label.hide()
                    label.deleteLater()
            h.addWidget(f.widget)
        return box

    # ------------------------------------------------------------------ opening
    def _last_dir(self, key: str = "last_dir") -> Path:
        s = self.host.settings
        d = s.value(key, s.value("last_dir", ""))
        if d and Path(str(d)).is_dir():
            return Path(str(d))
        if self.input_path is not None and self.input_path.parent.is_dir() and not self._is_bundled(self.input_path):
            return self.input_path.parent
        return Path.home()

    @staticmethod
    def _is_bundled(path: Path) -> bool:
        try:
            Path(path).resolve().relative_to(resources_dir().resolve())
            return True
        except ValueError:
            return False

    def _remember_dir(self, d: Path, key: str = "last_dir") -> None:
        self.host.settings.setValue(key, str(d))

    def pick_file(self, title: str, file_filter: str, key: str = "last_dir") -> Path | None:
        """Ask for one file (starting in the folder remembered under ``key``); None if cancelled."""
        path, _ = QFileDialog.getOpenFileName(self, title, str(self._last_dir(key)), file_filter + ";;All files (*)")
        if not path:
            return None
        self._remember_dir(Path(path).parent, key)
        return Path(path)

    def load_extra(self, fn, what: str, *, run_after: bool = False) -> bool:
        """Change the input on the worker thread: ``fn(progress=None)`` returns the new data, shown
        as if it had been opened (a second frame, a mask, a ground truth); with ``run_after`` the
        tool runs again once it is shown. False (and says why) when the tab is busy."""
        if self.runner.is_running():
            self.host.show_error("Busy", f"{self.title} is busy; cancel the job or wait for it first.")
            return False
        self._job = PendingJob("load", self.input_path or Path(self.tool.key), "extra")
        self._run_after_load = run_after
        self.runner.start(Job(fn, (), what=what, uses_device=False))
        return True

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, f"Open {self.tool.input_kind.lower()}", str(self._last_dir()),
                                              ";;".join(f for f in (self.open_filter(), "All files (*)") if f))
        if path:
            self._remember_dir(Path(path).parent)
            self.open_file(Path(path))

    def _on_sample(self, index: int) -> None:
        path = self.sample_combo.itemData(index)
        self.sample_combo.setCurrentIndex(0)
        if path:
            self.open_file(Path(path))

    def open_file(self, path: str | Path) -> bool:
        """Load ``path`` on the worker thread; it is shown when it has loaded. Returns False
        (and says why) when it cannot start."""
        path = Path(path)
        if self.runner.is_running():
            self.host.show_error("Cannot open file", f"{self.title} is busy; cancel the job or wait for it "
                                 f"before opening {path.name}.")
            return False
        if not path.exists():
            self.host.show_error("Cannot open file", f"No such file: {path}")
            return False
        self._job = PendingJob("load", path, "open")
        self.runner.start(Job(self.load_input, (path,), what=f"Opening {path.name}", uses_device=False))
        return True

    def load_input(self, path: Path, *, progress=None):
        """Read ``path`` on the worker thread (no widgets here): the tool's loader; a tab may
        accept more (the flow tab opens a lone image and asks for the second frame)."""
        return self.tool.load(path, progress=progress)

    def is_loading(self) -> bool:
        return self.runner.is_running() and self._job is not None and self._job.kind == "load"

    def _loaded(self, path: Path, data, how: str = "open") -> None:
        self.data = data
        self.input_path = path
        self._token += 1
        if how != "extra":  # a new input: its stage outputs start afresh (an extra keeps those it does not touch)
            self._input_key = (str(path), self._input_key[1] + 1)
            self.cache.clear(self.settings_key)
        self.result = None
        self._shown_params = None
        self.unpin()
        self.clear_result()
        self.show_input(data)
        self.input_info.setText(self.describe_input(data))
        self._set_status(f"Loaded {path.name}. Press {self.run_label} to run.")
        self.host.file_opened(path)
        self.input_loaded.emit(path)
        self.result_changed.emit()
        self._update_enabled()   # no result yet: nothing to pin or export
        if self._run_after_load:
            self._run_after_load = False
            QTimer.singleShot(0, self, self.run)  # after the runner has settled
        elif self.live_enabled():  # Live: a new input is shown with its result
            self._live_timer.start()

    def set_input(self, data, path: Path | None = None) -> None:
        """Show ``data`` as if it had been loaded from ``path`` (synchronously)."""
        self._loaded(Path(path) if path else Path(getattr(data, "name", "input")), data)

    # ------------------------------------------------------------------ running
    def params(self) -> dict:
        """The validated parameters in the form (raises ParameterError)."""
        return self.form.values()

    def _try_params(self) -> dict | None:
        try:
            return self.form.values()
        except ParameterError:
            return None

    def shown_params(self) -> dict:
        """The parameters of the result on screen (the form's when none is shown)."""
        return dict(self._shown_params) if self._shown_params is not None and self.result is not None \
            else self.params()

    def run(self, *, device: str | None = None, overrides: dict | None = None) -> bool:
        """Run the tool on the loaded input with the form's parameters (plus ``overrides``),
        on ``device`` (default: the window's Compute choice). Returns False when it cannot start."""
        if self.runner.is_running():
            return False
        if self.data is None:
            self.host.show_error("Nothing to run", f"Open a file or pick a bundled sample first "
                                 f"({self.tool.input_kind.lower()}: {' '.join(self.file_extensions)}).")
            return False
        try:
            params = self.params()
            params.update(overrides or {})
            params = self.tool.params.validate(params)
            spec = device if device is not None else self.host.device_spec()
            be = get_backend(spec)
            if self.tool.check is not None:
                self.tool.check(params, be)
            advice = self.tool.advise(self.data, params, be) if (self.tool.advise and not overrides) else None
        except Exception as exc:  # noqa: BLE001
            kind, msg = classify(exc, self.title)
            self.host.show_error(f"Cannot run {self.title.lower()}", msg)
            return False
        note = ""
        if advice is not None and advice.parameter not in self.tool.params:
            note = f"; {advice.user_message}"   # no parameter fixes it (imseg's image size): say it, run
        elif advice is not None:
            choice = self.ask_advice(advice)
            if choice == "cancel":
                self._set_status("Not run.")
                return False
            if choice == "apply":
                params[advice.parameter] = advice.max_size
        self._request += 1
        self._job = PendingJob("run", token=self._token, params=params, device=spec, request=self._request)
        self.runner.start(run_staged_job(self.tool, self.data, params, cache=self.cache, scope=self.settings_key,
                                         input_key=self._input_key, token=self._token), device=spec)
        if not self._last_status.startswith("Live:"):   # a live change's cost stays while it runs
            name = Path(self.input_path).name if self.input_path is not None else "the input"
            self._set_status(f"{self.run_label}: running on {name} ({be.label})…{note}")
        elif note:
            self._set_status(f"{self._last_status}{note}")
        return True

    def run_default(self) -> bool:
        """Start the main computation as the Run button would (for ``gpulab --run``);
        if the input is still loading, run once it has loaded."""
        if self.is_loading():
            self._run_after_load = True
            return True
        return self.data is not None and self.run()

    def ask_advice(self, advice: TooLargeError) -> str:
        """A soft size rule fired: ``"apply"`` its remedy, ``"run"`` as it is, or ``"cancel"``."""
        p = self.tool.params[advice.parameter]
        box = QMessageBox(QMessageBox.Icon.Question, f"Large input on {advice.where.split(' in ')[0]}",
                          f"{advice.user_message}.\n\nSet {p.label} to {advice.max_size:,} for this run?",
                          QMessageBox.StandardButton.NoButton, self)
        apply = box.addButton(f"{p.label} {advice.max_size:,}", QMessageBox.ButtonRole.AcceptRole)
        run = box.addButton("Run as it is", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(apply)
        box.exec()
        return "apply" if box.clickedButton() is apply else "run" if box.clickedButton() is run else "cancel"

    def ask_too_large(self, exc: TooLargeError) -> bool:
        """The input does not fit: re-run with ``exc.parameter = exc.suggested_size``?"""
        p = self.tool.params[exc.parameter]
        ans = QMessageBox.question(
            self, "Input too large",
            f"{exc.user_message}\n\nRun again with {p.label} = {exc.suggested_size:,}{' ' + p.unit if p.unit else ''}? "
            "(for this run only; the form keeps its value)",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
        return ans == QMessageBox.StandardButton.Yes

    # ------------------------------------------------------------------ runner signals
    def _on_finished(self, res) -> None:
        job, self._job = self._job, None
        if job is None:
            return
        if job.kind == "load":
            self._loaded(job.path, res, job.how)
            return
        if job.token != self._token:
            log.info("%s: dropped a result for an input that is no longer shown", self.title)
            self._after_job()
            return
        res, report = res if isinstance(res, tuple) and len(res) == 2 else (res, None)
        if self._pending_live or (job.request and job.request != self._request):
            log.info("%s: dropped a result superseded by a newer request", self.title)
            self._after_job()
            return
        self._show_new_result(res, job.params, report)
        self._after_job()

    def _show_new_result(self, res, params: dict, report=None) -> None:
        current = self._try_params()
        if current is not None and any(current[n] != params.get(n) for n in self.tool.params.display_names()):
            res = self.tool.apply_display(res, current)  # display options changed while it ran
            params = {**params, **{n: current[n] for n in self.tool.params.display_names()}}
        self.result = res
        self._shown_params = dict(params)
        self.last_report = report
        if report is not None:
            self.stage_seconds.update(report.seconds)
            if report.full:
                self.full_seconds = report.total
        try:
            self.show_result(res)
        except Exception as exc:  # noqa: BLE001 - a bug in a view must not leave the tab half-updated
            import traceback

            tb = traceback.format_exc()
            log.error("%s: showing the result failed:\n%s", self.title, tb.rstrip())
            self.host.show_error(f"{self.title}: cannot show the result",
                                 f"Showing the result failed: {classify(exc)[1]}\n\nThis is a bug in gpulab; "
                                 "the result can still be exported.", tb)
        self._refresh_swipe()
        line = self.tool.headline_of(res)
        if report is not None:
            line += f" — {report.describe()}"
        self._set_status(line)
        self._update_compare()
        self.result_changed.emit()
        self.result_shown.emit()
        self._update_enabled()

    def _after_job(self) -> None:
        """A job ended: start the live run that waited for it."""
        if self._pending_live:
            self._pending_live = False
            QTimer.singleShot(0, self, self._live_fire)

    def _on_error(self, exc: BaseException) -> None:
        self._last_error = exc

    def _on_failed(self, summary: str, details: str) -> None:
        job, self._job = self._job, None
        exc, self._last_error = self._last_error, None
        if self._pending_live:  # a newer request is waiting: this failure is stale
            self._after_job()
            return
        if (job is not None and job.kind == "run" and isinstance(exc, TooLargeError) and exc.max_size > 0
                and exc.parameter in self.tool.params):
            if self.ask_too_large(exc):
                overrides = {exc.parameter: exc.suggested_size}
                QTimer.singleShot(0, self, lambda: self.run(device=job.device, overrides=overrides))
            else:
                self._set_status(f"Not run: {exc.user_message}")
            return
        if job is not None and job.kind == "load":
            title = "Cannot open file"
            self._set_status(f"Could not open {job.path.name}; {'the previous input is kept' if self.data is not None else 'nothing is loaded'}.")
        else:
            title = f"{self.title} failed"
            self._set_status(f"{self.title} failed: {summary.splitlines()[0]}")
        self.host.show_error(title, summary, details)

    def _on_cancelled(self) -> None:
        job, self._job = self._job, None
        self._run_after_load = False
        if self._pending_live:  # superseded by a newer edit, not cancelled by the user
            self._after_job()
            return
        if not (job and job.kind == "run"):
            self._set_status("Cancelled.")
            return
        form, shown = self._try_params(), self._shown_params
        diff = [] if form is None or shown is None or self.result is None else \
            [p for p in self.tool.params if not p.display and form.get(p.name) != shown.get(p.name)]
        if diff:   # the form and the picture now disagree: say so, and what Run would do
            what = ", ".join(f"{p.label} {p.to_text(shown.get(p.name))}, not {p.to_text(form.get(p.name))}"
                             for p in diff[:3]) + (", …" if len(diff) > 3 else "")
            self._set_status(f"Cancelled: the result shown is for the previous parameters ({what}); "
                             f"press {self.run_label} to run the form's")
        elif self.result is None:
            self._set_status("Cancelled; nothing was computed.")
        else:
            self._set_status("Cancelled; the previous result is kept.")

    # ------------------------------------------------------------------ live tuning
    def _read_live_settings(self) -> None:
        """The window-wide settings ``live/cache_mb`` (the stage cache's cap, host and device,
        in MiB) and ``live/slow_run_s`` (past this a full run, Live says what a change costs)."""
        s = getattr(self.host, "settings", None)
        if s is None:
            return
        try:
            mb = s.value("live/cache_mb")
            if mb not in (None, ""):
                self.cache.set_caps(int(float(mb) * (1 << 20)), int(float(mb) * (1 << 20)))
            slow = s.value("live/slow_run_s")
            if slow not in (None, ""):
                self.slow_run_s = float(slow)
        except (TypeError, ValueError) as exc:
            log.info("ignored a live setting: %s", exc)

    def live_enabled(self) -> bool:
        return self.live_check.isChecked()

    def _on_live_toggled(self, on: bool) -> None:
        if on and self.data is not None and self.result is None and not self.runner.is_running():
            self._live_timer.start()
        if on and self.full_seconds is not None and self.full_seconds > self.slow_run_s:
            self._set_status(f"Live: a full run took {fmt_seconds(self.full_seconds)} here; each change re-runs "
                             "only the stages it affects")

    def _on_params_changed(self) -> None:
        new = self._try_params()
        if new is None:
            return
        old, self._form_params = self._form_params, new
        changed = [n for n in new if old is None or new[n] != old.get(n)]
        if not changed:
            return
        if not self._restoring:
            self._history_timer.start()
        display = set(self.tool.params.display_names())
        if self.result is not None and self._shown_params is not None and any(n in display for n in changed):
            self._redisplay(new, changed)
        shown = self._shown_params or {}
        needs_run = any(new[n] != shown.get(n) for n in self.tool.params.compute_names())
        if needs_run and self.live_enabled() and self.data is not None:
            self._live_timer.start()
            self._say_cost([n for n in changed if n not in display])

    # ------------------------------------------------------------------ display Params bound to widgets
    #: the tool's display-only Params a widget of the tab shows, ``{param: "attribute"}`` or
    #: ``{param: ("attribute", scale)}`` (a 0..100 slider for a 0..1 opacity has scale 100). The
    #: Param is the one declaration (presets, history, Copy command, settings); the widget
    #: stays the tab's, and the generated field of the form is hidden.
    display_bindings: dict = {}
    _bound: dict = {}

    def _bind_display_widgets(self) -> None:
        self._bound: dict[str, tuple[QWidget, float]] = {}
        for name, spec in self.display_bindings.items():
            attr, scale = (spec, 1.0) if isinstance(spec, str) else spec
            w = getattr(self, attr, None)
            if w is None or name not in self.tool.params or not self.tool.params[name].display:
                log.warning("%s: cannot bind the display parameter %r to %r", self.title, name, attr)
                continue
            self._bound[name] = (w, float(scale))
            self.form.hide(name)
            self._widget_to_form(name)       # the tab's widget holds the declared default already
            for sig in ("currentTextChanged", "toggled", "valueChanged"):
                if hasattr(w, sig):
                    getattr(w, sig).connect(lambda *_a, n=name: self._widget_to_form(n))
                    break
        if self._bound:
            self.form.changed.connect(self._form_to_widgets)

    def _widget_to_form(self, name: str) -> None:
        w, scale = self._bound[name]
        v = widget_value(w)
        p = self.tool.params[name]
        v = v / scale if scale != 1.0 else v
        v = round(v, 6) if p.type is float else p.type(v)
        if self.form.raw_values().get(name) != v:
            self.form.set_value(name, v)

    @staticmethod
    def _as_widget_value(cur, v, scale: float):
        """The display Param value ``v`` as its widget holds it (``cur`` gives the type)."""
        if isinstance(cur, bool):
            return bool(v)
        if isinstance(cur, int):
            return int(round(v * scale))
        if isinstance(cur, float):
            return float(v) * scale
        return str(v)

    def _form_to_widgets(self) -> None:
        vals = self.form.raw_values()
        for name, (w, scale) in self._bound.items():
            v = vals.get(name)
            if v is None:
                continue
            cur = widget_value(w)
            want = self._as_widget_value(cur, v, scale)
            if cur != want:
                set_widget_value(w, want)       # the widget's own signal redraws the view

    @contextlib.contextmanager
    def pinned_display_widgets(self):
        """While the pinned side is drawn by the tab's own drawing code: the bound display
        widgets hold the *pinned* result's display values (signals blocked), then are put back.
        The pinned result keeps its own display parameters, as the compare table says."""
        vals = self.pinned[1] if self.pinned is not None else {}
        saved = []
        try:
            for name, (w, scale) in self._bound.items():
                if vals.get(name) is None:
                    continue
                cur = widget_value(w)
                want = self._as_widget_value(cur, vals[name], scale)
                if want != cur:
                    blocked = w.blockSignals(True)
                    set_widget_value(w, want)
                    saved.append((w, cur, blocked))
            yield
        finally:
            for w, cur, blocked in reversed(saved):
                set_widget_value(w, cur)
                w.blockSignals(blocked)

    def bound_display_widget(self, name: str) -> QWidget | None:
        """The tab's widget bound to the display Param ``name`` (None if the form shows it)."""
        return self._bound.get(name, (None, 0))[0]

    def _redisplay(self, params: dict, changed: list[str] | None = None) -> None:
        """Apply the display-only parameters to the shown result (no job). Parameters bound to
        the tab's own widgets (:attr:`display_bindings`) were redrawn by those widgets already."""
        import time

        t0 = time.perf_counter()
        self.result = self.tool.apply_display(self.result, params)
        self._shown_params = {**self._shown_params, **{n: params[n] for n in self.tool.params.display_names()}}
        display = set(self.tool.params.display_names())
        bound_only = changed is not None and self.tool.display is None and \
            all(n in self._bound for n in changed if n in display)
        try:
            if not bound_only:
                self.show_result(self.result)
        except Exception as exc:  # noqa: BLE001
            log.error("%s: redrawing failed: %s", self.title, exc)
            return
        self._update_compare()
        self._refresh_swipe()
        self.result_changed.emit()
        self.result_shown.emit()
        took = "" if bound_only else f" in {fmt_seconds(time.perf_counter() - t0)}"   # bound: the widget drew it
        self._set_status(f"Redrawn{took} (display only, no job)")

    def _say_cost(self, names: list[str]) -> None:
        """On a slow device, say what a change costs: the stage it re-runs from and its last time."""
        if not names or self.full_seconds is None or self.full_seconds <= self.slow_run_s:
            return
        pl = self.tool.pipeline()
        now = self._form_params
        stages = sorted({s for n in names for s in pl.affected(n, now)}, key=pl.names().index)
        if not stages:
            if now is not None and all(n in self.tool.params.unused(now) for n in names):
                self._set_status("Live: this parameter is not used with the current settings; "
                                 "the change re-runs nothing")
            return
        applicable = pl.names(now)
        i = applicable.index(stages[0])
        cost = sum(self.stage_seconds.get(s, 0.0) for s in stages)
        self._set_status(f"Live: this change re-runs from stage {i + 1} of {len(applicable)} "
                         f"({pl.stage(stages[0]).title}); last time {fmt_seconds(cost)}")

    def _live_fire(self) -> None:
        if self.data is None or not self.live_enabled() and not self._restoring_run:
            return
        if self.runner.is_running():
            if self._job is not None and self._job.kind == "load":
                return
            now = self._try_params()
            if (self._job is not None and self._job.kind == "run" and now is not None
                    and all(self._job.params.get(n) == now[n] for n in self.tool.params.compute_names())):
                return  # the run in flight is already for these parameters
            self._pending_live = True
            self.runner.cancel()
            return
        params = self._try_params()
        if params is None:
            return
        if self.result is not None and self._shown_params == params:
            return
        self.run()

    _restoring_run = False

    # ------------------------------------------------------------------ history
    def _record_history(self) -> None:
        p = self._try_params()
        if p is None or self._restoring:
            return
        if self.history and self.history[self.history_index] == p:
            return
        del self.history[self.history_index + 1:]
        self.history.append(dict(p))
        self.history_index = len(self.history) - 1
        self._update_enabled()

    def can_undo(self) -> bool:
        return self.history_index > 0

    def can_redo(self) -> bool:
        return 0 <= self.history_index < len(self.history) - 1

    def undo(self) -> bool:
        """Back one parameter change: the parameters, and the result if it is still cached."""
        self._history_timer.stop()
        self._record_history()  # a change still waiting to be recorded is a step
        if not self.can_undo():
            return False
        self.history_index -= 1
        self._restore_step(self.history[self.history_index])
        return True

    def redo(self) -> bool:
        self._history_timer.stop()
        if not self.can_redo():
            return False
        self.history_index += 1
        self._restore_step(self.history[self.history_index])
        return True

    def history_steps(self) -> list[str]:
        """One line per history step: what it changed from the step before ("Parts: 4 → 6")."""
        out = []
        for i, step in enumerate(self.history):
            prev = self.history[i - 1] if i else None
            if prev is None:
                out.append("Start")
                continue
            diffs = [f"{p.label}: {p.to_text(prev.get(p.name))} → {p.to_text(step[p.name])}"
                     for p in self.tool.params if p.name in step and prev.get(p.name) != step[p.name]]
            out.append("; ".join(diffs) or "(no change)")
        return out

    def go_to_step(self, index: int) -> bool:
        """Go to history step ``index`` (as repeated undo or redo would)."""
        self._history_timer.stop()
        self._record_history()
        if not 0 <= index < len(self.history) or index == self.history_index:
            return False
        self.history_index = index
        self._restore_step(self.history[index])
        return True

    def _fill_history_menu(self) -> None:
        self.history_menu.clear()
        self._history_timer.stop()
        self._record_history()
        steps = self.history_steps()
        for i, text in reversed(list(enumerate(steps))):   # the newest first, as editors list them
            cached = self.data is not None and self.is_cached(self.history[i])
            act = self.history_menu.addAction(f"{i}. {text}" + ("" if cached or i == self.history_index
                                                                 else "  (re-runs)"))
            act.setCheckable(True)
            act.setChecked(i == self.history_index)
            act.triggered.connect(lambda _=False, k=i: self.go_to_step(k))
        if not steps:
            self.history_menu.addAction("No parameter change yet").setEnabled(False)

    def _restore_step(self, params: dict) -> None:
        self._restoring = True
        try:
            self.form.set_values(params)
        finally:
            self._restoring = False
        self._live_timer.stop()
        self._update_enabled()
        if self.data is None or (self.result is not None and self._shown_params == params):
            return
        if self.live_enabled() or (self.result is not None and self.is_cached(params)):
            self._restoring_run = True
            try:
                self._live_fire()
            finally:
                self._restoring_run = False

    def is_cached(self, params: dict) -> bool:
        """Whether every stage's output for ``params`` on the current input is in the cache."""
        try:
            be = get_backend(self.host.device_spec())
            p = self.tool.params.validate(params)
        except Exception:  # noqa: BLE001
            return False
        keys = self.tool.pipeline().keys(self.data, p, device=be, scope=self.settings_key)
        return all(k in self.cache for k in keys.values())

    # ------------------------------------------------------------------ pin and compare
    def pin(self) -> bool:
        """Keep the shown result and show it beside the live one."""
        if self.result is None:
            return False
        if not self.pin_button.isChecked():
            self.pin_button.setChecked(True)  # calls back here
            return True
        self.pinned = (self.result, dict(self.shown_params()))
        if self._pinned_slot is None:
            before = dict(vars(self))
            view = self.build_view()
            after = vars(self)
            # build_view may keep its parts on the tab (self.canvas = ...): those are the pinned
            # view's; the live view's are put back
            slot = {k: after[k] for k in after if k in before and after[k] is not before[k]}
            slot.update({k: after[k] for k in after if k not in before})
            for k in slot:
                if k in before:
                    setattr(self, k, before[k])
            slot["view"] = view
            view.setObjectName(f"{self.settings_key}-pinned-view")
            self._pinned_slot = slot
            box = QWidget()
            box.setObjectName(f"{self.settings_key}-pinned")
            box.setMinimumSize(1, 1)   # the pinned copy may shrink below its views' minimum: a pin never widens the window
            for w in (view, *view.findChildren(QWidget)):
                if w.minimumWidth() > 1 or w.minimumHeight() > 1:
                    w.setMinimumSize(1, 1)   # a pinned 3-D view or map kept its 160-200 px minimum and was clipped
            lay = QVBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.setSpacing(0)   # the live half leaves exactly the caption's height free (below)
            lay.setSizeConstraint(QVBoxLayout.SizeConstraint.SetNoConstraint)
            self.pinned_caption = ElidedLabel("")   # cut with "…" to the half (whole text in its tooltip)
            self.pinned_caption.setStyleSheet("background: #fff3c4; padding: 2px 6px;")
            lay.addWidget(self.pinned_caption)
            lay.addWidget(view, 1)
            self._pinned_box = box
            self._view_min = self.view.minimumSize()   # both halves may shrink while pinned (unpin restores)
            self.view.setMinimumSize(1, 1)
            # the live half leaves the caption's height free at its top, so both halves lay out
            # their pictures in the same room (same zoom; the pinned maps were drawn smaller)
            m = self.view.contentsMargins()
            self._view_margins = (m.left(), m.top(), m.right(), m.bottom())
            self._caption_room(True)
            sizes = self.splitter.sizes()
            self.splitter.insertWidget(1, box)
            half = max(200, sizes[1] // 2)
            self.splitter.setSizes([sizes[0], half, half, *sizes[2:]])
            for live3d, pinned3d in zip(_views3d(self.view), _views3d(view), strict=False):
                live3d.link_camera(pinned3d)     # one camera: both results seen from the same side
        self.pinned_caption.set_full_text("Pinned — " + (self._pin_text(self.pinned[1]) or "defaults"))
        self._render_pinned()
        self._update_compare()
        self.swipe_button.setVisible(not self._pinned_slot["view"].findChildren(View3D)
                                     and not isinstance(self._pinned_slot["view"], View3D))
        self._refresh_swipe()
        QTimer.singleShot(0, self, self._share_halves)   # once the compare table has widened the left panel (dropped with the tab)
        self._set_status("Pinned: the pinned result is on the left, the live one on the right; "
                         "the table lists the parameters that differ")
        return True

    def _caption_room(self, on: bool) -> None:
        """Leave the pinned caption's height free at the live view's top (side by side), or not
        (unpinned, or one swipe view showing both pictures)."""
        m = getattr(self, "_view_margins", None)
        if m is None:
            return
        cap_h = self.pinned_caption.sizeHint().height() if on else 0
        self.view.setContentsMargins(m[0], m[1] + cap_h, m[2], m[3])

    def _share_halves(self) -> None:
        """The pinned and the live halves side by side get the same width (the same zoom on
        the same picture): the window's share if the user has not dragged a handle, else the
        two halves' width split evenly."""
        if self._pinned_slot is None or self.swipe_view is not None:
            return
        bal = getattr(self.splitter, "_balance", None)
        if bal is not None and not bal.user_moved:
            bal.balance()
        else:
            sizes = self.splitter.sizes()
            i_p, i_v = self.splitter.indexOf(self._pinned_box), self.splitter.indexOf(self.view)
            both = sizes[i_p] + sizes[i_v]
            sizes[i_p], sizes[i_v] = both // 2, both - both // 2
            self.splitter.setSizes(sizes)

    def set_swipe(self, on: bool) -> None:
        """Show the pinned and the live result in one swipe view (on) or side by side (off)."""
        from ..ui.compare import SwipeView

        if on and self.pinned is not None and self._pinned_slot is not None:
            if self.swipe_view is None:
                before = self.splitter.sizes()
                self.swipe_view = SwipeView()
                self.swipe_view.setObjectName(f"{self.settings_key}-swipe-view")
                i_p, i_v = self.splitter.indexOf(self._pinned_box), self.splitter.indexOf(self.view)
                self.splitter.insertWidget(i_v + 1, self.swipe_view)
                self._sizes_before_swipe = before
                room = before[i_p] + before[i_v]
                self._pinned_box.setVisible(False)
                self.view.setVisible(False)
                self._caption_room(False)   # the swipe draws both pictures in one room
                sizes = before[:i_v + 1] + [room] + before[i_v + 1:]
                sizes[i_p] = sizes[i_v] = 0
                self.splitter.setSizes(sizes)
                self.swipe_view.resize(room, self.view.height())
            self._refresh_swipe(force=True)
            return
        if self.swipe_view is not None:
            self.swipe_view.setParent(None)
            self.swipe_view.deleteLater()
            self.swipe_view = None
            self.view.setVisible(True)
            if self._pinned_slot is not None:
                self._pinned_box.setVisible(True)
                self._caption_room(True)
            before = getattr(self, "_sizes_before_swipe", None)
            if before is not None and len(before) == self.splitter.count():
                self.splitter.setSizes(before)
        if self.swipe_button.isChecked():
            self.swipe_button.blockSignals(True)
            self.swipe_button.setChecked(False)
            self.swipe_button.blockSignals(False)

    def _refresh_swipe(self, force: bool = False) -> None:
        """New pictures for the swipe view (the views are rendered even while hidden)."""
        if self.swipe_view is None or self._pinned_slot is None:
            return
        size = self.swipe_view.size()
        if size.width() < 50 or size.height() < 50:
            size = self.view.size()
        if not self.view.isVisible():  # hidden behind the swipe view: laid out at its size, rendered off screen
            self.view.resize(size)
            _deliver_resizes(self.view)
        if not self._pinned_box.isVisible():  # the pinned view gets the live view's size (below its caption)
            lay = self._pinned_box.layout()
            self._pinned_box.resize(size.width(), size.height() + self.pinned_caption.sizeHint().height()
                                    + max(0, lay.spacing()))
            lay.activate()
            _deliver_resizes(self._pinned_box)
        live = self.view.grab()
        pinned = self._pinned_slot["view"].grab()
        if not live.isNull() and not pinned.isNull() and pinned.size() != live.size():
            pinned = pinned.scaled(live.size(), Qt.AspectRatioMode.IgnoreAspectRatio,
                                   Qt.TransformationMode.SmoothTransformation)
        self.swipe_view.set_pixmaps(pinned, live)

    def unpin(self) -> None:
        self.set_swipe(False)
        self.swipe_button.setVisible(False)
        self.pinned = None
        if self._pinned_slot is not None:
            v = self._pinned_box
            self._pinned_slot = None
            if isinstance(v, View3D):
                v.close_view()
            for child in v.findChildren(View3D):
                child.close_view()
            v.setParent(None)
            v.deleteLater()
            if getattr(self, "_view_min", None) is not None:
                self.view.setMinimumSize(self._view_min)
                self._view_min = None
            if getattr(self, "_view_margins", None) is not None:
                self.view.setContentsMargins(*self._view_margins)
                self._view_margins = None
        if self.pin_button.isChecked():
            self.pin_button.blockSignals(True)
            self.pin_button.setChecked(False)
            self.pin_button.blockSignals(False)
        self.compare_table.setVisible(False)

    def _pin_text(self, params: dict) -> str:
        """The pinned parameters that differ from the defaults, by their labels (as the compare
        table and the history name them), those the others make unused left out."""
        unused = set(self.tool.params.unused(params))
        return ", ".join(f"{p.label} {p.to_text(params.get(p.name))}" for p in self.tool.params
                         if p.name not in unused and not p.display and params.get(p.name) != p.default)

    def _on_pin_toggled(self, on: bool) -> None:
        if on:
            if not self.pin():
                self.pin_button.blockSignals(True)
                self.pin_button.setChecked(False)
                self.pin_button.blockSignals(False)
        else:
            self.unpin()

    def _swap_slot(self) -> None:
        slot = self._pinned_slot
        for k in list(slot):
            mine = getattr(self, k, None)
            setattr(self, k, slot[k])
            slot[k] = mine

    def draw_pinned_later(self, draw: Callable[[], None], keep: tuple = ()) -> None:
        """Call it after ``draw()`` drew the live side from the tab's shared controls (a frame,
        a view, a crosshair): right after, from the event loop (never inside a widget's own
        signal), ``draw()`` runs again for the pinned side, with the pinned views swapped in,
        ``self.result`` the pinned result and the bound display widgets holding the pinned
        result's display values (:meth:`pinned_display_widgets`). The texts and pictures of the
        side-panel labels in ``keep`` are put back afterwards: they describe the live result.
        Nothing happens when nothing is pinned."""
        if self.pinned is None or self._pinned_slot is None or self._drawing_pinned:
            return
        self._pinned_draw = (draw, tuple(keep))
        if self._pinned_timer is None:
            self._pinned_timer = QTimer(self)
            self._pinned_timer.setSingleShot(True)
            self._pinned_timer.timeout.connect(self._draw_pinned_now)
        self._pinned_timer.start(0)

    def _draw_pinned_now(self) -> None:
        if self.pinned is None or self._pinned_slot is None or self._pinned_draw is None:
            return
        draw, keep = self._pinned_draw
        saved = [(w, w.text(), w.pixmap()) for w in keep]
        live = self.result
        self._drawing_pinned = True
        self._swap_slot()
        try:
            self.result = self.pinned[0]
            with self.pinned_display_widgets():
                draw()
        except Exception as exc:  # noqa: BLE001 - the live side stays drawn
            log.error("%s: drawing the pinned result failed: %s", self.title, exc)
        finally:
            self.result = live
            self._swap_slot()
            self._drawing_pinned = False
            for w, text, pix in saved:
                if pix is not None and not pix.isNull():
                    w.setPixmap(pix)
                else:
                    w.setText(text)

    def _render_pinned(self) -> None:
        if self.pinned is None or self._pinned_slot is None:
            return
        self._drawing_pinned = True
        self._swap_slot()
        try:
            self.show_input(self.data)
            self.show_result(self.pinned[0])
        except Exception as exc:  # noqa: BLE001
            log.error("%s: showing the pinned result failed: %s", self.title, exc)
        finally:
            self._swap_slot()
            self._drawing_pinned = False
        if self.result is not None:
            try:
                self.show_result(self.result)  # the side panels describe the live result
            except Exception as exc:  # noqa: BLE001
                log.error("%s: showing the result failed: %s", self.title, exc)

    def differing_params(self) -> list[tuple[str, str, str]]:
        """``(label, pinned, live)`` of every parameter that differs between the two results."""
        if self.pinned is None:
            return []
        a, b = self.pinned[1], self.shown_params()
        return [(p.label, p.to_text(a.get(p.name)), p.to_text(b.get(p.name)))
                for p in self.tool.params if a.get(p.name) != b.get(p.name)]

    def _update_compare(self) -> None:
        rows = self.differing_params()
        t = self.compare_table
        t.setVisible(self.pinned is not None)
        t.clearSpans()
        t.setRowCount(max(1, len(rows)))
        if not rows:   # one line that says so, not a header over an empty row
            t.setItem(0, 0, QTableWidgetItem("same parameters as the pinned result"))
            t.setSpan(0, 0, 1, t.columnCount())
        for i, row in enumerate(rows):
            for j, text in enumerate(row):
                t.setItem(i, j, QTableWidgetItem(text))
        t.resizeRowsToContents()
        h = t.horizontalHeader().height() + sum(t.rowHeight(i) for i in range(t.rowCount())) + 2 * t.frameWidth()
        t.setFixedHeight(min(160, max(h, t.horizontalHeader().height() + 24)))

    def _on_progress(self, fraction: float, stage: str) -> None:
        self._progress_now = (fraction, stage)
        self._show_stage()

    def _show_stage(self) -> None:
        """The stage, the percentage, the elapsed time and an estimate of the time left
        (refreshed every second, also between reports)."""
        fraction, stage = getattr(self, "_progress_now", (0.0, ""))
        clock = getattr(self, "_clock", None)
        tail = f" · {clock.text(fraction)}" if clock is not None else ""
        self.stage_label.setText(f"{stage} — {100 * fraction:.0f}%{tail}")

    def _on_running_changed(self, running: bool) -> None:
        from gpu_kernels.jobs import ProgressClock

        if not hasattr(self, "_clock_timer"):
            self._clock_timer = QTimer(self)
            self._clock_timer.setInterval(1000)
            self._clock_timer.timeout.connect(self._show_stage)
        if running:
            self._clock, self._progress_now = ProgressClock(), (0.0, "starting")
            self._clock_timer.start()
        else:
            self._clock_timer.stop()
            self._clock = None
            self.stage_label.setText("")
        self._update_enabled()

    # ------------------------------------------------------------------ presets and command line
    def load_preset(self, path: Path) -> None:
        self.form.set_values(self.tool.params.load_json(path, tool=self.tool.name))
        self._set_status(f"Loaded preset {Path(path).name}")

    def save_preset(self, path: Path) -> Path:
        out = self.tool.params.save_json(path, self.shown_params(), tool=self.tool.name)
        self._set_status(f"Saved preset {out}")
        return out

    def load_preset_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Load preset", str(self._last_dir("last_preset_dir")),
                                              "gpulab presets (*.json);;All files (*)")
        if path:
            self._remember_dir(Path(path).parent, "last_preset_dir")
            self._guarded("Cannot load preset", self.load_preset, Path(path))

    def save_preset_dialog(self) -> None:
        default = self._last_dir("last_preset_dir") / f"{self.tool.name}-preset.json"
        path, _ = QFileDialog.getSaveFileName(self, "Save preset", str(default), "gpulab presets (*.json)")
        if path:
            if not path.lower().endswith(".json"):
                path += ".json"
            self._remember_dir(Path(path).parent, "last_preset_dir")
            self._guarded("Cannot save preset", self.save_preset, Path(path))

    def command_line(self) -> str:
        """The ``gpulab`` command that repeats the current run headless."""
        inputs = [str(Path(self.input_path).absolute())] if self.input_path is not None else ["INPUT"]
        spec = self.host.device_spec()
        return self.tool.command_line(inputs, self.shown_params(), device=spec)

    def copy_command_line(self) -> str:
        try:
            cmd = self.command_line()
        except Exception as exc:  # noqa: BLE001
            self.host.show_error("Cannot copy the command line", classify(exc)[1])
            return ""
        QGuiApplication.clipboard().setText(cmd)
        self._set_status(f"Copied: {cmd}")
        return cmd

    # ------------------------------------------------------------------ saving
    def can_save(self) -> bool:
        return self.result is not None

    def result_filters(self) -> str:
        return ";;".join(e.filter for e in self.tool.exports if not e.folder)

    def save_result(self, path: Path, export: Export | None = None) -> list[Path]:
        """Write the result to ``path`` with ``export`` (default: by the file's extension)."""
        from ..errors import UserError

        if not self.can_save():
            raise UserError(f"there is no result to save yet; press {self.run_label} first")
        path = Path(path)
        self.check_output(path)
        export = export or self.tool.export_for(path)
        if export is None:
            exts = ", ".join(x for e in self.tool.exports if not e.folder for x in e.extensions)
            raise UserError(f"cannot save {path.suffix or 'extension-less'} files here: use {exts}")
        opts = {**export.writer_options(self.shown_params()), **self.export_options(export)}
        files = export.write(self.result, path, **opts)
        self._set_status(f"Saved {path}" if len(files) <= 1 else f"Wrote {len(files)} files to {path}")
        return files

    def export_dialog(self, export: Export) -> None:
        if not self.can_save():
            return
        stem = self.input_path.stem if self.input_path else self.tool.key
        start = self._last_dir("last_save_dir")
        if export.folder:
            parent = QFileDialog.getExistingDirectory(self, f"Export {export.label.lower()} into folder", str(start))
            if not parent:
                return
            target = Path(parent) / f"{stem}-{export.key}"
            n = 2
            while target.exists() and any(target.iterdir()):
                target = Path(parent) / f"{stem}-{export.key}-{n}"
                n += 1
            self._remember_dir(Path(parent), "last_save_dir")
        else:
            default = start / f"{stem}-{export.key}{export.extensions[0]}"
            path, _ = QFileDialog.getSaveFileName(self, f"Export {export.label.lower()}", str(default), export.filter)
            if not path:
                return
            if not any(path.lower().endswith(e) for e in export.extensions):
                path += export.extensions[0]
            target = Path(path)
            self._remember_dir(target.parent, "last_save_dir")
        self._guarded("Cannot export", self.save_result, target, export)

    def _guarded(self, title: str, fn, *args) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001
            kind, msg = classify(exc, title)
            details = ""
            if kind == "bug":
                import traceback

                details = traceback.format_exc()
                log.error("%s:\n%s", title, details)
            self.host.show_error(title, msg, details)
            return None

    # ------------------------------------------------------------------ settings
    def save_settings(self, settings: QSettings) -> None:
        """Store the parameters and the tab's own widgets (``settings`` is in this tab's group)."""
        settings.beginGroup("params")
        self.form.save(settings)
        settings.endGroup()
        save_widgets(settings, self.setting_widgets)

    def restore_settings(self, settings: QSettings) -> None:
        settings.beginGroup("params")
        self.form.restore(settings)
        settings.endGroup()
        restore_widgets(settings, self.setting_widgets)
        self._history_timer.stop()
        self._form_params = self._try_params()
        self.history, self.history_index = ([dict(self._form_params)], 0) if self._form_params else ([], -1)
        self._update_enabled()

    # ------------------------------------------------------------------ screenshots
    def screenshot_widget(self) -> QWidget:
        return self.view

    def export_screenshot(self, path: Path) -> None:
        from ..ui.capture import save_widget_png

        self.check_output(path)
        save_widget_png(self.screenshot_widget(), Path(path))

    def input_files(self) -> list[Path]:
        """The files the shown input (and so the result) came from; a tab with more inputs
        (a second frame, a ground truth, a moving volume, a scene's images) adds them."""
        return [self.input_path] if self.input_path is not None else []

    def check_output(self, path: Path) -> None:
        """Refuse an output that would overwrite an input (README: never an input), before any
        work, with one line (:class:`~app.io.atomic.OutputPathError`)."""
        from ..io.atomic import check_not_an_input

        check_not_an_input(path, self.input_files())

    # ------------------------------------------------------------------ helpers
    def _update_enabled(self) -> None:
        running = self.runner.is_running()
        self.run_button.setEnabled(self.data is not None and not running)
        self.cancel_button.setEnabled(running)
        self.open_button.setEnabled(not running)
        self.sample_combo.setEnabled(not running)
        for e in self.tool.exports:
            b = self.export_buttons.get(e.key)
            if b is None:
                continue
            why = e.unavailable(self.result) if (e.unavailable is not None and self.result is not None) else None
            b.setEnabled(self.result is not None and not running and why is None)
            b.setToolTip(f"Not for this result: {why}" if why else "")
        self.undo_button.setEnabled(self.can_undo())
        self.redo_button.setEnabled(self.can_redo())
        self.pin_button.setEnabled(self.result is not None or self.pinned is not None)   # nothing to pin yet

    def _set_status(self, msg: str) -> None:
        log.info("%s", msg)
        self._last_status = msg
        self.status_message.emit(msg)

    _last_status = ""

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Stop the tab's job and cancel its background prefetches (window closing: the exit
        waits for their threads)."""
        if getattr(self, "tool", None) is not None:
            self.tool.pipeline().cancel_prefetches(self.settings_key)
        return self.runner.shutdown(timeout_ms)

    def closeEvent(self, event) -> None:  # noqa: N802
        """Release the render windows of the tab's 3-D views."""
        for view in self.findChildren(View3D):
            view.close_view()
        super().closeEvent(event)

