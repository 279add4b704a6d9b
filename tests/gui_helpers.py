"""Fake tabs and jobs for the GUI tests (no GPU, no real tool needed)."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QLineEdit, QSpinBox

from app.errors import UserError
from app.io.atomic import atomic_write
from app.tabs.base import ToolTab


def slow_write(out: Path, steps: int = 20, delay: float = 0.01, *, progress):
    """Writes ``steps`` lines to ``out`` (atomically), reporting after each."""
    with atomic_write(out, "w") as f:
        for i in range(steps):
            f.write(f"line {i}\n")
            f.flush()
            time.sleep(delay)
            progress.update((i + 1) / steps, f"step {i + 1} of {steps}")
    return out


def failing_job(message: str = "kaboom", *, progress):
    progress.update(0.1, "about to fail")
    raise RuntimeError(message)


def user_error_job(*, progress):
    raise UserError("the file has no faces; give a mesh, not a point cloud")


class OutOfMemoryError(Exception):
    """Named like cupy.cuda.memory.OutOfMemoryError."""


def oom_job(*, progress):
    raise OutOfMemoryError("Out of memory allocating 12,884,901,888 bytes")


def stubborn_job(seconds: float, *, progress):
    """Ignores Cancel for ``seconds`` (like one long library call)."""
    time.sleep(seconds)
    return "done"


class SlowTab(ToolTab):
    title = "Slow tool"
    settings_key = "slow"
    file_extensions = (".slow", ".slw.gz")
    file_kind = "Slow files"

    def __init__(self, parent=None):
        super().__init__(parent)
        form = QFormLayout(self)
        self.steps = QSpinBox()
        self.steps.setRange(1, 100000)
        self.steps.setValue(20)
        self.scale = QDoubleSpinBox()
        self.scale.setRange(0, 10)
        self.scale.setValue(0.5)
        self.method = QComboBox()
        self.method.addItems(["gpu-sym", "gpu", "cpu"])
        self.edges = QCheckBox("Edges")
        self.name = QLineEdit("abc")
        for label, w in [("Steps", self.steps), ("Scale", self.scale), ("Method", self.method),
                         ("", self.edges), ("Name", self.name)]:
            form.addRow(label, w)
        self.param_widgets = {"steps": self.steps, "scale": self.scale, "method": self.method,
                              "edges": self.edges, "name": self.name}
        self.opened: list[Path] = []
        self.result = None
        self.runner.finished.connect(self._on_result)

    def open_file(self, path):
        if Path(path).read_text() == "bad":
            raise UserError("not a slow file")
        self.opened.append(Path(path))

    def _on_result(self, result):
        self.result = result
        self.result_changed.emit()

    def can_save(self):
        return self.result is not None

    def save_result(self, path):
        with atomic_write(path, "w") as f:
            f.write(f"result: {self.result}\n")

    def result_filters(self):
        return "Text (*.txt)"


class OtherTab(ToolTab):
    title = "Other tool"
    settings_key = "other"
    file_extensions = (".oth",)
