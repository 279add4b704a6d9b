"""Help ▸ About: the compute device and library versions."""

from __future__ import annotations

import html
import logging

import PySide6
from PySide6.QtCore import Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from gpu_kernels.backend import BackendError, device_info, versions

from .. import __version__
from .icons import app_icon

__all__ = ["about_text", "device_description", "install_kind", "AboutDialog"]

log = logging.getLogger(__name__)


def device_description(info: dict) -> str:
    """One line: "NVIDIA H100 80GB HBM3, compute capability 9.0, 78.6 of 79.1 GiB free",
    or "CPU (NumPy)"."""
    if info.get("backend") != "cuda":
        return "CPU (NumPy)"
    gib = 1024**3
    return (
        f"{info['name']} (cuda:{info.get('device_id', 0)}), compute capability "
        f"{info['compute_capability']}, {info['free_bytes'] / gib:.1f} of "
        f"{info['total_bytes'] / gib:.1f} GiB free"
    )


def install_kind() -> str:
    """How this gpulab was installed: "stand-alone bundle", "Python package" or "source checkout"."""
    import sys

    from ..tools.base import resources_dir

    if getattr(sys, "frozen", False):
        return "stand-alone bundle"
    return "Python package" if resources_dir().parent.name == "app" else "source checkout"


def about_text(device=None) -> str:
    """Plain text of the About box (also what the tests read)."""
    try:
        info = device_info(device)
        dev = device_description(info)
        extra = "" if info["backend"] == "cuda" else f"\nCUDA: {info.get('cupy_status', '')}"
    except BackendError as exc:
        dev, extra = "unavailable", f"\n{exc}"
    v = versions()
    lines = [
        f"gpulab {__version__}",
        "GPU tools for geometry and vision in one window.",
        "",
        f"Compute device: {dev}{extra}",
        f"Installed as: {install_kind()}, "
        + (f"with CuPy {v['cupy']} (GPU when the driver supports it)" if v.get("cupy") else "CPU only (no CuPy)"),
        "",
        f"gpulab {v.get('gpulab') or __version__}",
        f"CuPy {v.get('cupy') or 'not installed'}",
        f"NumPy {v.get('numpy')}",
        f"SciPy {v.get('scipy')}",
        f"Qt {qVersion()} (PySide6 {PySide6.__version__})",
        f"VTK {v.get('vtk') or 'not installed'}",
        f"PyVista {v.get('pyvista') or 'not installed'}",
        f"PyMeshLab {v.get('pymeshlab') or 'not installed'}",
    ]
    return "\n".join(lines)


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None, device=None):
        super().__init__(parent)
        self.setWindowTitle("About gpulab")
        self.setWindowIcon(app_icon())
        lay = QVBoxLayout(self)
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(64, 64))
        icon.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        lay.addWidget(icon)
        self._text = about_text(device)
        # `gpulab -v` logs what the box shows: packaging/package_check.sh reads the frozen bundle's
        # About box through this line (the box itself is only a picture to a script)
        log.info("About gpulab:\n%s", self._text)
        first, _, rest = self._text.partition("\n")
        label = QLabel(f"<h3>{html.escape(first)}</h3>" + html.escape(rest).replace("\n", "<br>"))
        label.setObjectName("about-text")
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        label.setWordWrap(True)
        lay.addWidget(label)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        lay.addWidget(buttons)
        self.setMinimumWidth(440)

    def text(self) -> str:
        return self._text
