"""The main window: tabs, File/Compute/View/Help menus, status bar, log panel."""

from __future__ import annotations

import contextlib
import logging
import os
import time
import traceback
from pathlib import Path

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Slot
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QWidget,
)

from gpu_kernels import backend
from gpu_kernels.backend import BackendError

from .. import tabs as _tabs
from ..errors import classify
from ..io import sample_data
from ..tabs.base import ToolTab
from ..tools import TOOLS
from ..ui.capture import save_widget_png
from ..ui.settings import make_settings
from ..ui.worker import JobRunner
from .about import AboutDialog, device_description
from .icons import app_icon
from .log_panel import LogPanel

__all__ = ["MainWindow", "MAX_RECENT"]

log = logging.getLogger(__name__)

MAX_RECENT = 10


class _PendingTab:
    """A tool's tab not built yet: an empty page in its place, and what the window needs to
    know of it without building it (title, key, the files it opens, its samples)."""

    def __init__(self, tool):
        self.tool = tool
        self.title = tool.title
        self.settings_key = tool.key
        self.file_extensions = tuple(tool.input_extensions)
        self.page = QWidget()
        self.page.setObjectName(f"tab-{tool.key}-pending")

    def handles(self, path) -> bool:
        return self.tool.handles(path)

    def samples(self) -> list:
        return list(self.tool.samples())


class MainWindow(QMainWindow):
    """gpulab's window.

    Parameters
    ----------
    tab_classes : list of ToolTab subclasses, optional
        Defaults to :func:`app.tabs.tab_classes` (one per tool of :data:`app.tools.TOOLS`).
    settings : QSettings, optional
        Defaults to :func:`app.ui.settings.make_settings`.
    device : str, optional
        The compute device for new jobs (``cpu``, ``cuda:N``; None = auto). The Compute menu
        changes it; every job gets it explicitly (the process default is never changed).

    The window is each tab's :class:`~app.tabs.base.TabHost`: tabs call
    :meth:`show_error`, :meth:`device_spec` and :meth:`file_opened`.
    """

    def __init__(self, tab_classes: list[type[ToolTab]] | None = None,
                 settings: QSettings | None = None, parent: QWidget | None = None, *,
                 device: str | None = None):
        super().__init__(parent)
        self.settings = settings if settings is not None else make_settings()
        self._device_spec: str | None = None if device in (None, "", "auto") else device
        self.setWindowTitle("gpulab")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self._about: AboutDialog | None = None
        self._error_box: QMessageBox | None = None
        self._active_runner: JobRunner | None = None
        self._closing = False

        # tabs
        self.tab_widget = QTabWidget()
        self.tab_widget.setDocumentMode(True)
        self.tab_widget.setObjectName("tools")
        # Start-up (issue 18, case 19): with the default tabs, only the tab in view is built (and
        # its module imported: pyqtgraph, pymeshlab, VTK); another is built when first shown or
        # used (:attr:`tabs` builds them all). ``_slots`` holds a ToolTab or a _PendingTab.
        self._slots: list = []
        self._settings_restored = False
        self._tabs_connected = False
        # the shared data folder chosen in File ▸ Sample data folder… (the tabs list its samples)
        sample_data.set_data_dir(self.data_dir_setting() or None)
        if tab_classes is None:
            have = {t.name for t in TOOLS}
            entries = [_PendingTab(t) for t in TOOLS] + [p for p in _tabs.PLANNED if p.planned_tool not in have]
        else:
            entries = list(tab_classes)
        for entry in entries:
            if isinstance(entry, _PendingTab):
                self._slots.append(entry)
                self.tab_widget.addTab(entry.page, entry.tool.title)
            else:
                tab = entry(self.tab_widget, host=self)
                self._slots.append(tab)
                self.tab_widget.addTab(tab, tab.title)
        self.tab_widget.currentChanged.connect(self._build_tab)
        self.setCentralWidget(self.tab_widget)

        # log panel
        self.log_panel = LogPanel(self)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.log_panel)
        self.log_panel.install()
        self.log_panel.hide()

        self._build_status_bar()
        self._build_menus()
        for tab in self.built_tabs():
            self._connect_tab(tab)
        self._tabs_connected = True
        self.tab_widget.currentChanged.connect(lambda _i: self._update_actions())
        # a tab's status line belongs to that tab: switching tabs clears it (it showed over the next tab)
        self.tab_widget.currentChanged.connect(lambda _i: self.statusBar().clearMessage())
        self._default_size()
        self._restore_settings()
        self._update_actions()
        self.refresh_device()
        log.info("gpulab window ready; compute device %s", self._backend_label())

    # ------------------------------------------------------------------ building
    def _connect_tab(self, tab: ToolTab) -> None:
        r = tab.runner
        r.running_changed.connect(lambda running, r=r: self._on_running_changed(r, running))
        r.progress.connect(lambda f, s, r=r: self._on_progress(r, f, s))
        # the tab says what failed ("Could not open x.ply; ..."); the window only for a tab out of view
        r.failed.connect(lambda _s, _d, t=tab: None if t is self.current_tab()
                         else self.show_status(f"{t.title}: failed", 8000))
        r.cancelled.connect(lambda t=tab: None if t is self.current_tab()      # the tab says what is shown
                            else self.show_status(f"{t.title}: cancelled", 5000))
        tab.status_message.connect(lambda msg, t=tab: self._tab_status(t, msg))
        tab.result_changed.connect(self._update_actions)

    def _tab_status(self, tab, msg: str) -> None:
        """A tab's status line shows while that tab is the one in view (all go to the log)."""
        if tab is self.current_tab():
            self.show_status(msg, 8000)

    def show_status(self, msg: str, timeout_ms: int = 8000) -> None:
        """Show ``msg`` in the status bar, elided with "…" where it meets the permanent widgets.

        QStatusBar cuts a long message off mid-word with no sign that text is missing; the
        whole message stays in the status bar's tool tip (and in the log). Elided again when
        the status bar is resized (a narrower window), for the rest of its time.
        """
        self._status_last = (msg, time.monotonic() + timeout_ms / 1000 if timeout_ms > 0 else None)
        self._show_elided(msg, timeout_ms)

    def _show_elided(self, msg: str, timeout_ms: int) -> None:
        sb = self.statusBar()
        if not sb.isVisible():  # no laid-out width to elide to yet
            sb.setToolTip("")
            sb.showMessage(msg, timeout_ms)
            return
        used = sum(w.width() for w in (self.stage_label, self.progress_bar,
                                       self.cancel_button, self.device_label) if w.isVisible())
        room = max(80, sb.width() - used - 48)  # 48: the size grip and the layout's spacing
        shown = sb.fontMetrics().elidedText(msg, Qt.TextElideMode.ElideRight, room)
        sb.setToolTip(msg if shown != msg else "")
        sb.showMessage(shown, timeout_ms)

    def _refit_status(self) -> None:
        """The last :meth:`show_status` message elided to the status bar's width now, if it is
        still the one shown (not timed out, not replaced by a menu's status tip)."""
        last = getattr(self, "_status_last", None)
        sb = self.statusBar()
        if last is None or not sb.isVisible():
            return
        msg, until = last
        shown = sb.currentMessage()
        if not shown or not (shown == msg or (shown.endswith("…") and msg.startswith(shown[:-1]))):
            return
        left = 0 if until is None else int((until - time.monotonic()) * 1000)
        if until is None or left > 0:
            self._show_elided(msg, left)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if event.type() == QEvent.Type.Resize and obj is self.statusBar():
            QTimer.singleShot(0, self, self._refit_status)   # once its permanent widgets are laid out
        return super().eventFilter(obj, event)

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.device_label = QLabel()
        self.device_label.setObjectName("device-label")
        self.stage_label = QLabel("Ready")
        self.stage_label.setObjectName("stage-label")
        self.stage_label.setMinimumWidth(120)  # leaves the tab's status line room at 1280 px
        self.progress_bar = QProgressBar()
        self.progress_bar.setObjectName("job-progress")
        self.progress_bar.setRange(0, 1000)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat("")  # no "0%" while idle
        self.progress_bar.setTextVisible(True)
        self.progress_bar.setFixedWidth(220)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancel-job")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stop the running job (Esc)")
        self.cancel_button.clicked.connect(self.cancel_job)
        sb.addPermanentWidget(self.stage_label)
        sb.addPermanentWidget(self.progress_bar)
        sb.addPermanentWidget(self.cancel_button)
        sb.addPermanentWidget(self.device_label)
        sb.installEventFilter(self)   # a resize elides the message again (_refit_status)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        # File
        m = mb.addMenu("&File")
        self.act_open = QAction("&Open…", self, shortcut=QKeySequence.StandardKey.Open, triggered=self.open_dialog)
        m.addAction(self.act_open)
        self.recent_menu = m.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.samples_menu = m.addMenu("Open &sample")
        self._fill_samples_menu()
        self.samples_menu.aboutToShow.connect(self._fill_samples_menu)
        self.act_data_dir = QAction("Sample &data folder…", self, triggered=self.show_data_dir)
        self.act_data_dir.setToolTip("Where the shared sample data is (PSB, Middlebury, BSDS500, cardiac MRI); "
                                     "pick another folder")
        m.addAction(self.act_data_dir)
        m.addSeparator()
        self.act_save = QAction("&Save result as…", self, shortcut=QKeySequence.StandardKey.SaveAs,
                                triggered=self.save_result_dialog)
        self.act_save.setShortcuts([QKeySequence("Ctrl+S"), QKeySequence.StandardKey.SaveAs])
        m.addAction(self.act_save)
        self.act_screenshot = QAction("&Export screenshot…", self, shortcut=QKeySequence("Ctrl+Shift+P"),
                                      triggered=self.export_screenshot_dialog)
        m.addAction(self.act_screenshot)
        m.addSeparator()
        self.act_batch = QAction("&Batch…", self, shortcut=QKeySequence("Ctrl+B"), triggered=self.show_batch)
        self.act_batch.setToolTip("Run a tool over many files on every GPU or CPU core (Dask)")
        m.addAction(self.act_batch)
        m.addSeparator()
        self.act_quit = QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit, triggered=self.close)
        self.act_quit.setMenuRole(QAction.MenuRole.QuitRole)
        m.addAction(self.act_quit)

        # Compute
        m = mb.addMenu("&Compute")
        self.device_group = QActionGroup(self)
        self.device_actions: dict[str, QAction] = {}
        choices = [("auto", "&Auto (CUDA if available)"), ("cpu", "&CPU (NumPy)")]
        n = backend.cuda_device_count()
        for i in range(n):
            choices.append((f"cuda:{i}", f"CUDA device &{i}"))
        for spec, text in choices:
            a = QAction(text, self, checkable=True)
            a.triggered.connect(lambda _c=False, s=spec: self.set_device(s))
            self.device_group.addAction(a)
            m.addAction(a)
            self.device_actions[spec] = a
        if n == 0:
            a = QAction("CUDA: not available", self, enabled=False)
            a.setToolTip(backend._no_cuda_reason())
            m.addAction(a)
        m.addSeparator()
        self.act_cancel = QAction("Cancel &job", self, shortcut=QKeySequence("Esc"), triggered=self.cancel_job)
        m.addAction(self.act_cancel)

        # View
        m = mb.addMenu("&View")
        self.act_log = self.log_panel.toggleViewAction()
        self.act_log.setText("&Log panel")
        self.act_log.setShortcut(QKeySequence("Ctrl+L"))
        m.addAction(self.act_log)

        # Help
        m = mb.addMenu("&Help")
        self.act_about = QAction("&About gpulab", self, triggered=self.show_about)
        self.act_about.setMenuRole(QAction.MenuRole.AboutRole)
        m.addAction(self.act_about)

    def _default_size(self) -> None:
        screen = self.screen() or QApplication.primaryScreen()
        w, h = 1280, 820
        if screen is not None:
            avail = screen.availableGeometry()
            w, h = min(w, int(avail.width() * 0.92)), min(h, int(avail.height() * 0.92))
        self.resize(w, h)

    # ------------------------------------------------------------------ tabs & files
    @property
    def tabs(self) -> list[ToolTab]:
        """Every tab, in window order (tabs not built yet are built now)."""
        return [self._tab_at(i) for i in range(len(self._slots))]

    def built_tabs(self) -> list[ToolTab]:
        """The tabs built so far (the one in view, and those shown or used since the start)."""
        return [s for s in self._slots if not isinstance(s, _PendingTab)]

    def _tab_at(self, index: int) -> ToolTab:
        slot = self._slots[index]
        return self._build_tab(index) if isinstance(slot, _PendingTab) else slot

    def _build_tab(self, index: int) -> ToolTab | None:
        """Build the tab at ``index`` if it is still pending (its page is swapped for it)."""
        if not 0 <= index < len(self._slots):
            return None
        slot = self._slots[index]
        if not isinstance(slot, _PendingTab):
            return slot
        cls = _tabs.tab_class(slot.tool)
        tab = cls(self.tab_widget, host=self)
        self._slots[index] = tab
        tw = self.tab_widget
        current = tw.currentIndex()
        blocked = tw.blockSignals(True)
        try:
            tw.removeTab(index)
            tw.insertTab(index, tab, tab.title)
            tw.setCurrentIndex(current)
        finally:
            tw.blockSignals(blocked)
        slot.page.deleteLater()
        if self._tabs_connected:              # built after the window: connect it now
            self._connect_tab(tab)
        if self._settings_restored:
            self._restore_tab_settings(tab)
        log.debug("built the %s tab", tab.title)
        return tab

    def tab_index(self, name: str) -> int:
        """The index of the tab whose tool is ``name`` (or whose key is), else -1; builds nothing."""
        for i, s in enumerate(self._slots):
            tool = getattr(s, "tool", None)
            if s.settings_key == name or (tool is not None and getattr(tool, "name", None) == name):
                return i
        return -1

    def current_tab(self) -> ToolTab:
        return self._build_tab(self.tab_widget.currentIndex())  # type: ignore[return-value]

    def tab_by_title(self, title: str) -> ToolTab | None:
        return next((self._tab_at(i) for i, s in enumerate(self._slots) if s.title == title), None)

    def tab_for_path(self, path: str | Path) -> ToolTab | None:
        """The tab that opens files like ``path``; the current tab wins ties."""
        cur = self.current_tab()
        if cur is not None and cur.handles(path):
            return cur
        return next((self._tab_at(i) for i, s in enumerate(self._slots) if s.handles(path)), None)

    def open_path(self, path: str | Path) -> bool:
        """Open ``path`` in the tab that handles it; the tab loads it on its worker thread and
        reports errors through :meth:`show_error`. Returns whether loading started."""
        path = Path(path)
        tab = self.tab_for_path(path)
        if tab is None:
            exts = sorted({e for t in self._slots for e in t.file_extensions})
            known = ", ".join(exts) if exts else "none yet"
            what = f"the folder {path.name}" if path.is_dir() else f"{path.suffix or 'extension-less'} files ({path.name})"
            self.show_error("Cannot open file",
                            f"No tab opens {what}. "
                            f"Files gpulab opens: {known}.")
            return False
        if not (path.is_file() or path.is_dir()):  # a folder the registry accepts is an input too
            self.show_error("Cannot open file", f"No such file: {path}")
            self._remove_recent(path)
            return False
        self.tab_widget.setCurrentWidget(tab)
        return bool(tab.open_file(path))

    # -- TabHost ---------------------------------------------------------------------------
    def device_spec(self) -> str | None:
        """The device for new jobs (None: auto)."""
        return self._device_spec

    def file_opened(self, path: Path) -> None:
        self.add_recent(path)
        log.info("opened %s", path)
        self._update_actions()

    def open_filters(self) -> str:
        parts, exts = [], []
        for t in self.tabs:
            f = t.open_filter()
            if f:
                parts.append(f"{t.title}: {f}")
                exts += [f"*{e}" for e in t.file_extensions]
        if exts:
            parts.insert(0, "All supported files (" + " ".join(sorted(set(exts))) + ")")
        parts.append("All files (*)")
        return ";;".join(parts)

    def open_dialog(self) -> None:
        start = self.settings.value("last_dir", str(Path.home()))
        path, _ = QFileDialog.getOpenFileName(self, "Open", str(start), self.open_filters())
        if path:
            self.settings.setValue("last_dir", str(Path(path).parent))
            self.open_path(path)

    def save_result_dialog(self) -> None:
        tab = self.current_tab()
        if not tab.can_save():
            self.show_error("Nothing to save", f"The {tab.title} tab has no result yet.")
            return
        start = self.settings.value("last_save_dir", self.settings.value("last_dir", str(Path.home())))
        path, _ = QFileDialog.getSaveFileName(self, f"Save {tab.title} result", str(start),
                                              tab.result_filters() or "All files (*)")
        if path:
            self.settings.setValue("last_save_dir", str(Path(path).parent))
            self.save_result(tab, Path(path))

    def save_result(self, tab: ToolTab, path: Path) -> bool:
        try:
            tab.save_result(path)
        except Exception as exc:
            kind, msg = classify(exc, "Saving")
            self.show_error("Cannot save", f"{Path(path).name}: {msg}",
                            traceback.format_exc() if kind == "bug" else "")
            return False
        self.show_status(f"Saved {path}", 8000)
        log.info("saved %s", path)
        return True

    def export_screenshot_dialog(self) -> None:
        tab = self.current_tab()
        start = self.settings.value("last_save_dir", str(Path.home()))
        default = str(Path(str(start)) / f"{tab.settings_key}.png")
        path, _ = QFileDialog.getSaveFileName(self, "Export screenshot", default, "PNG image (*.png)")
        if path:
            if not path.lower().endswith(".png"):
                path += ".png"
            self.settings.setValue("last_save_dir", str(Path(path).parent))
            self.export_screenshot(Path(path))

    def export_screenshot(self, path: Path, *, whole_window: bool = False) -> bool:
        """Save a PNG of the current tab's view (or of the whole window)."""
        try:
            if whole_window:
                self.current_tab().check_output(path)
                save_widget_png(self, path)
            else:
                self.current_tab().export_screenshot(path)
        except Exception as exc:
            kind, msg = classify(exc, "The screenshot")
            self.show_error("Cannot export screenshot", f"{Path(path).name}: {msg}",
                            traceback.format_exc() if kind == "bug" else "")
            return False
        self.show_status(f"Screenshot saved to {path}", 8000)
        return True

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        md = event.mimeData()
        if md.hasUrls() and any(u.isLocalFile() and self.tab_for_path(u.toLocalFile()) for u in md.urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        for p in paths:
            self.open_path(p)

    # ------------------------------------------------------------------ recent files
    def recent_files(self) -> list[str]:
        v = self.settings.value("recent_files", [])
        if isinstance(v, str):
            v = [v] if v else []
        return [str(x) for x in (v or [])]

    def add_recent(self, path: Path) -> None:
        p = str(Path(path).resolve())
        files = [p] + [f for f in self.recent_files() if f != p]
        self.settings.setValue("recent_files", files[:MAX_RECENT])

    def _remove_recent(self, path: Path) -> None:
        p = str(Path(path).resolve())
        self.settings.setValue("recent_files", [f for f in self.recent_files() if f != p])

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self.recent_files()
        for i, f in enumerate(files):
            a = self.recent_menu.addAction(f"&{(i + 1) % 10} {Path(f).name}")
            a.setToolTip(f)
            a.setStatusTip(f)
            a.triggered.connect(lambda _c=False, f=f: self.open_path(f))
        if not files:
            self.recent_menu.addAction("(none)").setEnabled(False)
        self.recent_menu.addSeparator()
        clear = self.recent_menu.addAction("Clear menu")
        clear.setEnabled(bool(files))
        clear.triggered.connect(lambda: self.settings.setValue("recent_files", []))

    def _fill_samples_menu(self) -> None:
        self.samples_menu.clear()
        n = 0
        for t in self._slots:
            try:
                samples = t.samples()
            except Exception:
                log.exception("listing samples of %s failed", t.title)
                samples = []
            for s in samples:
                a = self.samples_menu.addAction(f"{t.title}: {Path(s).name}")
                a.triggered.connect(lambda _c=False, s=s: self.open_path(s))
                n += 1
        if n == 0:
            self.samples_menu.addAction("(no samples yet)").setEnabled(False)

    def open_samples(self) -> int:
        """Open each tab's first bundled sample. Returns how many opened."""
        n = 0
        current = self.tab_widget.currentIndex()
        for t in self.tabs:
            s = t.samples()
            if s and t.open_file(s[0]):
                n += 1
        self.tab_widget.setCurrentIndex(current)
        return n

    # ------------------------------------------------------------------ device
    def set_device(self, spec: str) -> None:
        """Use ``spec`` (``auto``, ``cpu``, ``cuda:N``) for the jobs started from now on."""
        if any(t.runner.is_running() for t in self.built_tabs()):
            self.show_error("Device not changed", "Wait for the running job to finish or cancel it first.")
            self.refresh_device()
            return
        new = None if spec in (None, "", "auto") else spec
        try:
            backend.get_backend(new)
        except BackendError as exc:
            self.show_error("Cannot use that device", str(exc))
        else:
            self._device_spec = new
            log.info("compute device for new jobs: %s", self._backend_label())
        self.refresh_device()

    def _backend_label(self) -> str:
        try:
            return backend.get_backend(self._device_spec).label
        except BackendError as exc:
            return f"device error: {exc}"

    def refresh_device(self) -> None:
        spec = self._device_spec
        try:
            be = backend.get_backend(spec)
            info = backend.device_info(be)
            text = device_description(info) if info["backend"] == "cuda" else "CPU (NumPy)"
            short = info["label"]
        except BackendError as exc:
            text = short = f"device error: {exc}"
        self.device_label.setText(short)
        self.device_label.setToolTip(f"Compute device for new jobs: {text}")
        kind, idx = backend.parse_device(spec)
        key = f"cuda:{idx}" if kind == "cuda" else kind
        if key in self.device_actions:
            self.device_actions[key].setChecked(True)

    # ------------------------------------------------------------------ jobs & status
    def _on_running_changed(self, runner: JobRunner, running: bool) -> None:
        if running:
            self._active_runner = runner
            self._show_progress(runner, 0.0, "starting")
        elif runner is self._active_runner:
            others = [t.runner for t in self.built_tabs() if t.runner.is_running()]
            self._active_runner = others[0] if others else None
            if self._active_runner is not None:
                self._show_progress(self._active_runner, *self._active_runner.last_progress)
            else:
                self.progress_bar.setValue(0)
                self.progress_bar.setFormat("")
                self.stage_label.setText("Ready")
                self.refresh_device()  # free GPU memory changes after a job
        self.cancel_button.setEnabled(self._active_runner is not None)
        self.act_cancel.setEnabled(self._active_runner is not None)
        self._update_actions()

    def _on_progress(self, runner: JobRunner, fraction: float, stage: str) -> None:
        cur = self.current_tab()
        if cur is not None and cur.runner is runner and runner.is_running():
            self._active_runner = runner  # the visible tab's job wins the status bar
        if runner is self._active_runner:
            self._show_progress(runner, fraction, stage)

    def _show_progress(self, runner: JobRunner, fraction: float, stage: str) -> None:
        self.progress_bar.setFormat("%p%")
        self.progress_bar.setValue(int(round(1000 * fraction)))
        self.stage_label.setText(f"{runner.name}: {stage}" if stage else runner.name)

    @Slot()
    def cancel_job(self) -> None:
        """Cancel the current tab's job, or else the job shown in the status bar."""
        cur = self.current_tab()
        runner = cur.runner if cur is not None and cur.runner.is_running() else self._active_runner
        if runner is not None and runner.is_running():
            runner.cancel()
            self.stage_label.setText(f"{runner.name}: cancelling…")

    def show_error(self, title: str, summary: str, details: str = "") -> None:
        """Show an error without blocking the event loop (window-modal message box).

        Tests replace this method to record the calls.
        """
        log.warning("%s: %s", title, summary.splitlines()[0] if summary else "")
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle(title)
        box.setText(summary)
        if details:
            box.setDetailedText(details)
        box.setStandardButtons(QMessageBox.StandardButton.Ok)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._error_box = box
        box.open()

    def show_batch(self):
        """File ▸ Batch…: the current tab's tool, with that tab's parameters."""
        from .batch_dialog import BatchDialog

        def params_of(name):
            tab = next((t for t in self.tabs if getattr(getattr(t, "tool", None), "name", None) == name), None)
            return tab.params() if tab is not None else {}

        cur = getattr(self.current_tab(), "tool", None)
        self._batch = BatchDialog(self, params_of=params_of, tool_name=cur.name if cur else None)
        self._batch.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._batch.open()
        return self._batch

    # ------------------------------------------------------------------ shared data folder
    def data_dir_setting(self) -> str:
        """The folder chosen in File ▸ Sample data folder… ('' when none)."""
        v = self.settings.value(sample_data.SETTING_KEY, "")
        return str(v).strip() if v else ""

    def set_data_dir(self, path: str | Path | None) -> bool:
        """Use ``path`` as the shared data folder from now on (kept in the setting
        ``paths/data_dir``); None forgets the choice. The sample lists follow."""
        if path:
            p = Path(path).expanduser()
            if not p.is_dir():
                self.show_error("Sample data folder", f"No such folder: {p}")
                return False
            self.settings.setValue(sample_data.SETTING_KEY, str(p.resolve()))
        else:
            self.settings.remove(sample_data.SETTING_KEY)
        self.settings.sync()
        sample_data.set_data_dir(self.data_dir_setting() or None)
        self._fill_samples_menu()
        for t in self.built_tabs():
            refresh = getattr(t, "refresh_samples", None)
            if refresh is not None:
                refresh()
        now = sample_data.data_dir()
        msg = f"Sample data folder: {now}" if now is not None else "No sample data folder"
        if os.environ.get(sample_data.DATA_DIR_ENV):  # first, so that eliding a long path keeps it
            msg = f"{sample_data.DATA_DIR_ENV} is set and wins over the setting. {msg}"
        self.show_status(msg, 8000)
        log.info("%s", msg)
        return True

    def show_data_dir(self):
        """File ▸ Sample data folder…: the folder in use, where it comes from, Choose…"""
        from .data_dir_dialog import DataDirDialog

        self._data_dir_dialog = DataDirDialog(self)
        self._data_dir_dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._data_dir_dialog.open()
        return self._data_dir_dialog

    def show_about(self) -> AboutDialog:
        self._about = AboutDialog(self, device=self._device_spec)
        self._about.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._about.open()
        return self._about

    def _update_actions(self) -> None:
        tab = self.current_tab()
        self.act_save.setEnabled(tab is not None and bool(tab.can_save()))
        # the title names what the shown tab works on, as MeshLab and napari do
        path = getattr(tab, "input_path", None)
        self.setWindowTitle(f"{Path(path).name} — {tab.title} — gpulab" if tab is not None and path else "gpulab")

    # ------------------------------------------------------------------ settings
    def _restore_settings(self) -> None:
        s = self.settings
        geom = s.value("window/geometry")
        if geom is not None:
            self.restoreGeometry(geom)
        state = s.value("window/state")
        if state is not None:
            self.restoreState(state)
        idx = s.value("window/tab")
        if idx is not None:
            try:
                self.tab_widget.setCurrentIndex(int(idx))
            except (TypeError, ValueError):
                pass
        for t in self.built_tabs():
            self._restore_tab_settings(t)
        self._settings_restored = True      # a tab built from now on restores its own

    @contextlib.contextmanager
    def _tab_settings(self, t: ToolTab, doing: str):
        """``settings`` inside the tab's group; a failure is logged, never raised."""
        s = self.settings
        s.beginGroup(f"tabs/{t.settings_key}")
        try:
            yield s
        except Exception:
            log.exception("%s the settings of %s failed", doing, t.title)
        finally:
            s.endGroup()

    def _restore_tab_settings(self, t: ToolTab) -> None:
        with self._tab_settings(t, "restoring") as s:
            t.restore_settings(s)

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/tab", self.tab_widget.currentIndex())
        for t in self.built_tabs():             # a tab never built keeps its saved settings
            with self._tab_settings(t, "saving") as ts:
                t.save_settings(ts)
        s.sync()

    # ------------------------------------------------------------------ closing
    def shutdown_jobs(self, timeout_ms: int = 3000) -> None:
        """Cancel every job and wait for the threads to end (no timeout in the end:
        a QThread must never be destroyed while it runs)."""
        running = [t for t in self.built_tabs() if t.runner.is_running()]
        for t in running:
            t.runner.cancel()
        for t in running:
            if not t.shutdown(timeout_ms):
                log.warning("%s does not respond to Cancel; waiting for it to finish", t.title)
                self.stage_label.setText(f"Waiting for {t.title} to stop…")
                QApplication.processEvents()
                t.runner.wait()
                t.shutdown(0)

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self._closing:
            event.accept()
            return
        self._closing = True
        self.save_settings()
        self.shutdown_jobs()
        for t in self.built_tabs():
            try:
                t.close()
            except Exception:
                log.exception("closing %s failed", t.title)
        self.log_panel.uninstall()
        super().closeEvent(event)

    def schedule(self, ms: int, fn) -> None:
        """QTimer.singleShot bound to this window (for scripted start-up steps)."""
        QTimer.singleShot(ms, self, fn)
