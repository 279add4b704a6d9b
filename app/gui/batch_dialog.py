"""File ▸ Batch…: run a tool over many inputs on Dask, as ``gpulab batch`` does, with the same
progress (items done and failed, items per second, time left, the dashboard address)."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from gpu_kernels.backend import cuda_device_count

from .. import batch as _batch
from ..tools import TOOLS
from ..tools.base import Job
from ..ui.worker import JobRunner

__all__ = ["BatchDialog"]

log = logging.getLogger(__name__)


class BatchDialog(QDialog):
    """Choose a task, inputs, an output folder and the cluster; start; watch the progress.

    The parameters are those of the tool's tab (its form, as the tab shows them), or a
    preset file.
    """

    def __init__(self, parent: QWidget | None = None, *, params_of=None, tool_name: str | None = None):
        super().__init__(parent)
        self.setWindowTitle("Batch")
        self._params_of = params_of or (lambda name: {})
        self.runner = JobRunner(self, name="Batch")
        self.summary: _batch.BatchSummary | None = None
        lay = QVBoxLayout(self)
        form = QFormLayout()
        self.task = QComboBox()
        for t in TOOLS:
            self.task.addItem(t.title, t.name)
        if tool_name:
            self.task.setCurrentIndex(max(0, self.task.findData(tool_name)))
        form.addRow("Task:", self.task)

        self.inputs = QListWidget()
        self.inputs.setMinimumHeight(90)
        row = QHBoxLayout()
        add_files = QPushButton("Add files…")
        add_files.clicked.connect(self._add_files)
        add_dir = QPushButton("Add folder…")
        add_dir.clicked.connect(self._add_folder)
        remove = QPushButton("Remove")
        remove.clicked.connect(lambda: [self.inputs.takeItem(self.inputs.row(i)) for i in self.inputs.selectedItems()])
        for b in (add_files, add_dir, remove):
            row.addWidget(b)
        box = QWidget()
        bl = QVBoxLayout(box)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.addWidget(self.inputs)
        bl.addLayout(row)
        form.addRow("Inputs:", box)

        self.out = QLineEdit()
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._choose_out)
        r = QHBoxLayout()
        r.addWidget(self.out, 1)
        r.addWidget(browse)
        form.addRow("Output folder:", r)

        self.params_source = QComboBox()
        self.params_source.addItem("The tab's parameters", "tab")
        self.params_source.addItem("A preset file…", "preset")
        self.preset = QLineEdit()
        self.preset.setPlaceholderText("preset.json")
        self.preset.setEnabled(False)
        self.params_source.currentIndexChanged.connect(
            lambda _i: self.preset.setEnabled(self.params_source.currentData() == "preset"))
        r = QHBoxLayout()
        r.addWidget(self.params_source)
        r.addWidget(self.preset, 1)
        form.addRow("Parameters:", r)

        self.gpus = QComboBox()
        n = cuda_device_count()
        if n:
            self.gpus.addItem(f"all {n} GPU(s)", "all")
            for k in range(1, n):
                self.gpus.addItem(f"{k} GPU(s)", str(k))
        self.gpus.addItem("none (CPU workers)", "none")
        form.addRow("GPUs:", self.gpus)
        self.workers = QSpinBox()
        self.workers.setRange(1, 512)
        import os

        self.workers.setValue(os.cpu_count() or 2)
        self.workers.setToolTip("CPU worker processes (when no GPU is used)")
        form.addRow("CPU workers:", self.workers)
        self.scheduler = QLineEdit()
        self.scheduler.setPlaceholderText("local cluster (or tcp://host:8786)")
        form.addRow("Scheduler:", self.scheduler)
        self.retries = QSpinBox()
        self.retries.setRange(0, 10)
        self.retries.setValue(2)
        form.addRow("Retries:", self.retries)
        lay.addLayout(form)

        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setFormat("")
        lay.addWidget(self.bar)
        self.status = QLabel("")
        self.status.setObjectName("batch-status")
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.status.setOpenExternalLinks(True)
        lay.addWidget(self.status)
        self.failures = QPlainTextEdit()
        self.failures.setReadOnly(True)
        self.failures.setMaximumHeight(100)
        self.failures.setPlaceholderText("Failed items appear here.")
        lay.addWidget(self.failures)

        buttons = QDialogButtonBox()
        self.start_button = buttons.addButton("Start", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = buttons.addButton("Cancel", QDialogButtonBox.ButtonRole.ActionRole)
        self.close_button = buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self.start_button.clicked.connect(self.start)
        self.cancel_button.clicked.connect(self.runner.cancel)
        self.close_button.clicked.connect(self.close)
        lay.addWidget(buttons)
        self.runner.progress.connect(self._on_progress)
        self.runner.finished.connect(self._on_finished)
        self.runner.failed.connect(lambda summary, _d: self.status.setText(f"<span style='color:#b00020'>"
                                                                           f"{summary}</span>"))
        self.runner.cancelled.connect(lambda: self.status.setText(
            "Cancelled; finished items are recorded, run again to do the rest."))
        self.runner.running_changed.connect(self._update)
        self._update(False)
        self.resize(620, 560)

    # ------------------------------------------------------------------ inputs
    def _add_files(self) -> None:
        files, _ = QFileDialog.getOpenFileNames(self, "Add inputs")
        for f in files:
            self.inputs.addItem(f)

    def _add_folder(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Add a folder of inputs")
        if d:
            self.inputs.addItem(d)

    def _choose_out(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Output folder")
        if d:
            self.out.setText(d)

    def add_inputs(self, paths) -> None:
        for p in paths:
            self.inputs.addItem(str(p))

    # ------------------------------------------------------------------ running
    def _params(self, tool) -> dict:
        if self.params_source.currentData() == "preset":
            return tool.params.load_json(self.preset.text().strip(), tool=tool.name)
        return self._params_of(tool.name)

    def start(self) -> bool:
        from ..errors import UserError, classify
        from ..tools import tool_by_name

        if self.runner.is_running():
            return False
        tool = tool_by_name(self.task.currentData())
        try:
            inputs = [self.inputs.item(i).text() for i in range(self.inputs.count())]
            if not inputs:
                raise UserError("add the inputs first (files or folders)")
            if not self.out.text().strip():
                raise UserError("choose an output folder")
            params = self._params(tool)
        except Exception as exc:  # noqa: BLE001
            self.status.setText(f"<span style='color:#b00020'>{classify(exc)[1]}</span>")
            return False
        kw = {"params": params, "scheduler": self.scheduler.text().strip() or None,
              "workers": self.workers.value(), "gpus": self.gpus.currentData(), "retries": self.retries.value()}
        self.failures.clear()
        self.status.setText("Starting the workers…")
        self.bar.setFormat("%p%")
        self.runner.start(Job(_batch_job, (tool.name, inputs, self.out.text().strip(), kw),
                              what="Batch", uses_device=False))
        return True

    def _on_progress(self, fraction: float, text: str) -> None:
        self.bar.setValue(int(1000 * fraction))
        if text.startswith("failed "):
            self.failures.appendPlainText(text)
        else:
            self.status.setText(text)

    def _on_finished(self, summary) -> None:
        self.summary = summary
        self.bar.setValue(1000)
        self.status.setText(f"{summary.done} done, {summary.failed} failed, {summary.skipped} skipped in "
                            f"{summary.seconds:.1f} s ({summary.items_per_second:.2f} items/s); manifest: "
                            f"{Path(self.out.text()) / _batch.MANIFEST}")

    def _update(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def closeEvent(self, event) -> None:  # noqa: N802
        self.runner.shutdown(30000)
        super().closeEvent(event)


def _batch_job(tool_name, inputs, out, kw, *, progress):
    """On the worker thread: run the batch, reporting each item (Cancel stops it)."""

    def on_start(s, _client=None):
        progress.update(0.0, f"{s.workers} worker(s) up" + (f"; dashboard <a href='{s.dashboard}'>"
                                                             f"{s.dashboard}</a>" if s.dashboard else ""))

    def on_record(s, rec):
        n = s.done + s.failed + s.skipped
        if rec.get("status") == "failed":
            progress.update(n / max(s.total, 1), f"failed {rec['key']}: {rec.get('error', '')}")
        rate = s.items_per_second
        left = (s.total - n) / rate if rate > 0 else float("nan")
        progress.update(n / max(s.total, 1), f"{n}/{s.total}: {s.done} done, {s.failed} failed, {s.skipped} "
                        f"skipped; {rate:.2f} items/s" + (f", {left:.0f} s left" if left == left else "")
                        + (f"; dashboard <a href='{s.dashboard}'>{s.dashboard}</a>" if s.dashboard else ""))

    return _batch.run_batch(tool_name, inputs, out, on_start=on_start, on_record=on_record, **kw)
