"""File ▸ Sample data folder…: where the shared sample data is (PSB meshes, Middlebury,
BSDS500, the cardiac MRI study), and a way to pick another folder (issue 18, case 18).

The folder is looked up by :func:`app.io.sample_data.data_dir`: the ``GPULAB_DATA_DIR``
environment variable, then the setting ``paths/data_dir`` (what this dialog writes), then
``../shared/data`` beside a source checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QLabel,
    QPushButton,
    QVBoxLayout,
)

from ..io import sample_data

__all__ = ["DataDirDialog", "data_dir_source"]


def data_dir_source(setting: str | None) -> tuple[Path | None, str]:
    """The folder in use and a phrase saying where it comes from."""
    current = sample_data.data_dir()
    env = os.environ.get(sample_data.DATA_DIR_ENV) or os.environ.get("GPULAB_SHARED_DATA")
    if env:
        why = f"set by the {sample_data.DATA_DIR_ENV} environment variable, which wins over the setting"
    elif setting and current is not None and Path(setting).expanduser() == current:
        why = "chosen here (the setting paths/data_dir)"
    elif setting:
        why = f"the chosen folder {setting} does not exist; using the default"
    elif current is not None:
        why = "the default: shared/data beside gpulab's source checkout"
    else:
        why = "none found: choose the folder that holds psb/, middlebury/, bsds500/, cardiac-mri/ …"
    return current, why


class DataDirDialog(QDialog):
    """Shows the folder in use and where it comes from; Choose… and Use default change it
    through ``window.set_data_dir``."""

    def __init__(self, window):
        super().__init__(window)
        self.window_ = window
        self.setWindowTitle("Sample data folder")
        self.setObjectName("data-dir-dialog")
        v = QVBoxLayout(self)
        intro = QLabel("gpulab lists the samples of the shared data (the cardiac MRI study, …) "
                       "beside its bundled ones, from this folder:")
        intro.setWordWrap(True)
        v.addWidget(intro)
        self.path_label = QLabel()
        self.path_label.setObjectName("data-dir-path")
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path_label.setStyleSheet("font-weight: bold; padding: 4px 0;")
        v.addWidget(self.path_label)
        self.source_label = QLabel()
        self.source_label.setObjectName("data-dir-source")
        self.source_label.setWordWrap(True)
        v.addWidget(self.source_label)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.clicked.connect(self.choose)
        self.default_button = QPushButton("Use default")
        self.default_button.setToolTip("Forget the chosen folder: the environment variable or shared/data "
                                       "beside the checkout")
        self.default_button.clicked.connect(lambda: self._set(None))
        box.addButton(self.choose_button, QDialogButtonBox.ButtonRole.ActionRole)
        box.addButton(self.default_button, QDialogButtonBox.ButtonRole.ResetRole)
        box.rejected.connect(self.reject)
        v.addWidget(box)
        self.refresh()

    def refresh(self) -> None:
        current, why = data_dir_source(self.window_.data_dir_setting())
        self.path_label.setText(str(current) if current is not None else "(none)")
        self.source_label.setText(why[0].upper() + why[1:] + ".")
        self.default_button.setEnabled(bool(self.window_.data_dir_setting()))

    def choose(self) -> None:
        current = sample_data.data_dir()
        path = QFileDialog.getExistingDirectory(self, "Sample data folder",
                                                str(current) if current is not None else str(Path.home()))
        if path:
            self._set(path)

    def _set(self, path: str | None) -> None:
        self.window_.set_data_dir(path)
        self.refresh()
