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
* settings: the parameters and the tab's own widgets are remembered.

A tab implements three methods — :meth:`build_view`, :meth:`show_input` and
:meth:`show_result` — and may add :meth:`build_controls`, :meth:`build_side_panel`,
:meth:`clear_result`, :meth:`describe_input` and export options. ``tests/framework``
holds a complete tab of a dozen lines.

The window reaches a tab through this class's public methods only, and a tab reaches the
window through :class:`TabHost`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from gpu_kernels.backend import get_backend
from gpu_kernels.errors import TooLargeError

from ..errors import classify
from ..tools.base import Export, Job, Tool, resources_dir, run_job
from ..ui.forms import ParamForm
from ..ui.settings import make_settings, restore_widgets, save_widgets
from ..ui.view3d import View3D
from ..ui.widgets import balance_splitter, fit_scroll_width
from ..ui.worker import JobRunner

__all__ = ["ToolTab", "TabHost", "StandaloneHost"]

log = logging.getLogger(__name__)


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
        self._job: tuple | None = None  # ("load", path) or ("run", token, params, device)
        self._last_error: BaseException | None = None
        self._run_after_load = False

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
        balance_splitter(split)  # panels as wide as their controls need, the view the rest
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
        self._update_enabled()

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
        return self.tool.handles(path)

    def open_filter(self) -> str:
        if not self.file_extensions:
            return ""
        return f"{self.tool.input_kind} (" + " ".join(f"*{e}" for e in self.file_extensions) + ")"

    def samples(self) -> list[Path]:
        return list(self.tool.samples())

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
        self.sample_combo.addItem("Bundled sample…")
        for s in self.samples():
            self.sample_combo.addItem(s.stem, str(s))
        self.sample_combo.setToolTip("Open one of the samples that ship with gpulab")
        self.sample_combo.activated.connect(self._on_sample)
        row.addWidget(self.open_button)
        row.addWidget(self.sample_combo, 1)
        gl.addLayout(row)
        self.input_info = QLabel(f"No {self.tool.input_kind.lower().rstrip('s')} loaded.")
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
        self.stage_label = QLabel("")
        self.stage_label.setObjectName(f"{self.settings_key}-stage")
        self.stage_label.setWordWrap(True)
        self.stage_label.setStyleSheet("color: #555;")
        v.addWidget(self.stage_label)

        for w in self.build_controls():
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
        self._job = ("load", self.input_path or Path(self.tool.key))
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
        self._job = ("load", path)
        self.runner.start(Job(self.tool.load, (path,), what=f"Opening {path.name}", uses_device=False))
        return True

    def is_loading(self) -> bool:
        return self.runner.is_running() and self._job is not None and self._job[0] == "load"

    def _loaded(self, path: Path, data) -> None:
        self.data = data
        self.input_path = path
        self._token += 1
        self.result = None
        self.clear_result()
        self.show_input(data)
        self.input_info.setText(self.describe_input(data))
        self._set_status(f"Loaded {path.name}. Press {self.run_label} to run.")
        self.host.file_opened(path)
        self.input_loaded.emit(path)
        self.result_changed.emit()
        if self._run_after_load:
            self._run_after_load = False
            QTimer.singleShot(0, self, self.run)  # after the runner has settled

    def set_input(self, data, path: Path | None = None) -> None:
        """Show ``data`` as if it had been loaded from ``path`` (synchronously)."""
        self._loaded(Path(path) if path else Path(getattr(data, "name", "input")), data)

    # ------------------------------------------------------------------ running
    def params(self) -> dict:
        """The validated parameters in the form (raises ParameterError)."""
        return self.form.values()

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
        if advice is not None and advice.parameter in self.tool.params:
            choice = self.ask_advice(advice)
            if choice == "cancel":
                self._set_status("Not run.")
                return False
            if choice == "apply":
                params[advice.parameter] = advice.max_size
        self._job = ("run", self._token, params, spec)
        self.runner.start(run_job(self.tool, self.data, params, token=self._token), device=spec)
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
        if job[0] == "load":
            self._loaded(job[1], res)
            return
        if job[1] != self._token:
            log.info("%s: dropped a result for an input that is no longer shown", self.title)
            return
        self.result = res
        try:
            self.show_result(res)
        except Exception as exc:  # noqa: BLE001 - a bug in a view must not leave the tab half-updated
            import traceback

            tb = traceback.format_exc()
            log.error("%s: showing the result failed:\n%s", self.title, tb.rstrip())
            self.host.show_error(f"{self.title}: cannot show the result",
                                 f"Showing the result failed: {classify(exc)[1]}\n\nThis is a bug in gpulab; "
                                 "the result can still be exported.", tb)
        self._set_status(self.tool.headline(res) if self.tool.headline else f"{self.title}: done")
        self.result_changed.emit()
        self.result_shown.emit()
        self._update_enabled()

    def _on_error(self, exc: BaseException) -> None:
        self._last_error = exc

    def _on_failed(self, summary: str, details: str) -> None:
        job, self._job = self._job, None
        exc, self._last_error = self._last_error, None
        if (job is not None and job[0] == "run" and isinstance(exc, TooLargeError) and exc.max_size > 0
                and exc.parameter in self.tool.params):
            if self.ask_too_large(exc):
                overrides = {exc.parameter: exc.suggested_size}
                QTimer.singleShot(0, self, lambda: self.run(device=job[3], overrides=overrides))
            else:
                self._set_status(f"Not run: {exc.user_message}")
            return
        if job is not None and job[0] == "load":
            title = "Cannot open file"
            self._set_status(f"Could not open {job[1].name}; {'the previous input is kept' if self.data is not None else 'nothing is loaded'}.")
        else:
            title = f"{self.title} failed"
            self._set_status(f"{self.title} failed: {summary.splitlines()[0]}")
        self.host.show_error(title, summary, details)

    def _on_cancelled(self) -> None:
        job, self._job = self._job, None
        self._run_after_load = False
        self._set_status("Cancelled; the previous result is kept." if job and job[0] == "run" else "Cancelled.")

    def _on_progress(self, fraction: float, stage: str) -> None:
        self.stage_label.setText(f"{stage} — {100 * fraction:.0f}%")

    def _on_running_changed(self, running: bool) -> None:
        if not running:
            self.stage_label.setText("")
        self._update_enabled()

    # ------------------------------------------------------------------ presets and command line
    def load_preset(self, path: Path) -> None:
        self.form.set_values(self.tool.params.load_json(path, tool=self.tool.name))
        self._set_status(f"Loaded preset {Path(path).name}")

    def save_preset(self, path: Path) -> Path:
        out = self.tool.params.save_json(path, self.params(), tool=self.tool.name)
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
        inputs = [str(self.input_path)] if self.input_path is not None else ["INPUT"]
        spec = self.host.device_spec()
        return self.tool.command_line(inputs, self.params(), device=spec)

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
        export = export or self.tool.export_for(path)
        if export is None:
            exts = ", ".join(x for e in self.tool.exports if not e.folder for x in e.extensions)
            raise UserError(f"cannot save {path.suffix or 'extension-less'} files here: use {exts}")
        files = export.write(self.result, path, **self.export_options(export))
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

    # ------------------------------------------------------------------ screenshots
    def screenshot_widget(self) -> QWidget:
        return self.view

    def export_screenshot(self, path: Path) -> None:
        from ..ui.capture import save_widget_png

        save_widget_png(self.screenshot_widget(), Path(path))

    # ------------------------------------------------------------------ helpers
    def _update_enabled(self) -> None:
        running = self.runner.is_running()
        self.run_button.setEnabled(self.data is not None and not running)
        self.cancel_button.setEnabled(running)
        self.open_button.setEnabled(not running)
        self.sample_combo.setEnabled(not running)
        for b in self.export_buttons.values():
            b.setEnabled(self.result is not None and not running)

    def _set_status(self, msg: str) -> None:
        log.info("%s", msg)
        self.status_message.emit(msg)

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Stop the tab's job (window closing)."""
        return self.runner.shutdown(timeout_ms)

    def closeEvent(self, event) -> None:  # noqa: N802
        """Release the render windows of the tab's 3-D views."""
        for view in self.findChildren(View3D):
            view.close_view()
        super().closeEvent(event)

