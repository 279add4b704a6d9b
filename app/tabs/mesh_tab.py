"""The Mesh segmentation tab: open a mesh, segment it on the worker thread, look at the
parts in 3-D, inspect a face's memberships, and export the result.

Layout: a parameter panel on the left (mesh, parameters, Run/Cancel, display toggles,
export), the 3-D view in the middle, and on the right the legend (colour, faces, area per
part) and the memberships of the face last clicked.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..commands import mesh_seg
from ..errors import UserError
from ..io import mesh_io
from .base import ToolTab
from .mesh_view import MeshView

__all__ = ["MeshTab", "MembershipBars", "TooLarge", "segmentation_job"]

log = logging.getLogger(__name__)

#: above this many faces, a CPU run first offers to simplify (APSP grows with N^3)
CPU_COMFORT_FACES = mesh_seg.CPU_COMFORT_FACES

APSP_LABELS = {
    "auto": "auto (GPU when present)",
    "gpu-sym": "GPU, symmetric (half memory)",
    "gpu": "GPU, tiled Floyd-Warshall",
    "cpu": "CPU, Dijkstra",
    "cpu-mt": "CPU, Dijkstra on all cores",
}


# ----------------------------------------------------------------------------- the job
@dataclass
class TooLarge:
    """Returned (not raised) by the job when the distance matrix would not fit."""

    n_faces: int
    max_faces: int
    message: str


@dataclass
class MeshResult:
    seg: object  # gpu_kernels.mesh.segment.MeshSegmentation
    mesh_id: int
    params: dict
    elapsed: float


def segmentation_job(vertices, faces, params: dict, mesh_id: int, *, progress=None):
    """Run on the worker thread: segment and return a :class:`MeshResult` or :class:`TooLarge`."""
    from gpu_kernels.mesh.segment import MeshTooLargeError

    t0 = time.perf_counter()
    try:
        seg = mesh_seg.segment(vertices, faces, progress=progress, **params)
    except MeshTooLargeError as exc:
        return TooLarge(exc.n_faces, exc.max_faces, mesh_seg.too_large_message(exc, option="a target of"))
    return MeshResult(seg, mesh_id, dict(params), time.perf_counter() - t0)


# ----------------------------------------------------------------------------- widgets
class MembershipBars(QWidget):
    """Horizontal bars: the memberships of one face in every part, largest first."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.values: np.ndarray | None = None
        self.colors: np.ndarray | None = None
        self.label: int | None = None
        self.row_h = 18
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)

    def set_values(self, values, colors, label: int | None = None) -> None:
        self.values = None if values is None else np.asarray(values, dtype=np.float64)
        self.colors = None if colors is None else np.asarray(colors)
        self.label = label
        self.updateGeometry()
        self.update()

    def order(self) -> list[int]:
        if self.values is None:
            return []
        return [int(i) for i in np.argsort(-self.values, kind="stable")]

    def sizeHint(self) -> QSize:  # noqa: N802
        n = 0 if self.values is None else len(self.values)
        return QSize(220, max(1, n) * self.row_h + 4)

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        return self.sizeHint()

    def paintEvent(self, _event) -> None:  # noqa: N802
        if self.values is None:
            return
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        w = self.width()
        name_w, val_w = 56, 48
        bar_w = max(20, w - name_w - val_w - 8)
        font = QFont(self.font())
        for row, j in enumerate(self.order()):
            y = 2 + row * self.row_h
            c = self.colors[j] if self.colors is not None and j < len(self.colors) else (128, 128, 128)
            col = QColor(int(c[0]), int(c[1]), int(c[2]))
            font.setBold(j == self.label)
            p.setFont(font)
            p.setPen(self.palette().text().color())
            p.drawText(QRectF(0, y, name_w, self.row_h), Qt.AlignmentFlag.AlignVCenter, f"part {j}")
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(225, 225, 225))
            p.drawRoundedRect(QRectF(name_w, y + 3, bar_w, self.row_h - 6), 3, 3)
            p.setBrush(col)
            p.drawRoundedRect(QRectF(name_w, y + 3, max(1.0, bar_w * float(self.values[j])), self.row_h - 6), 3, 3)
            p.setPen(self.palette().text().color())
            p.drawText(QRectF(name_w + bar_w + 6, y, val_w, self.row_h),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, f"{self.values[j]:.3f}")
        p.end()


def _swatch(color, size: int = 14) -> QIcon:
    pm = QPixmap(size, size)
    pm.fill(QColor(int(color[0]), int(color[1]), int(color[2])))
    p = QPainter(pm)
    p.setPen(QColor(60, 60, 60))
    p.drawRect(0, 0, size - 1, size - 1)
    p.end()
    return QIcon(pm)


def _auto_row(spin: QDoubleSpinBox, auto: QCheckBox) -> QWidget:
    w = QWidget()
    lay = QHBoxLayout(w)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(spin, 1)
    lay.addWidget(auto)
    auto.toggled.connect(lambda on: spin.setEnabled(not on))
    spin.setEnabled(not auto.isChecked())
    return w


# ----------------------------------------------------------------------------- the tab
class MeshTab(ToolTab):
    title = "Mesh segmentation"
    settings_key = "mesh"
    file_extensions = mesh_io.MESH_EXTENSIONS
    file_kind = "Meshes"

    #: emitted after a segmentation result is shown (tests wait on it)
    result_shown = Signal()

    def __init__(self, parent: QWidget | None = None, *, allow_3d: bool = True):
        super().__init__(parent)
        self.vertices: np.ndarray | None = None
        self.faces: np.ndarray | None = None
        self.areas: np.ndarray | None = None
        self.mesh_path: Path | None = None
        self.mesh_id = 0
        self.result: MeshResult | None = None
        self.read_warnings: list[str] = []
        self._last_device = None

        self.view = MeshView(self, allow_3d=allow_3d)
        self.view.face_picked.connect(self.show_face)

        left = self._build_controls()
        right = self._build_side_panel()
        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(left)
        split.addWidget(self.view)
        split.addWidget(right)
        split.setStretchFactor(0, 0)
        split.setStretchFactor(1, 1)
        split.setStretchFactor(2, 0)
        split.setSizes([300, 700, 280])
        split.setChildrenCollapsible(False)
        self.splitter = split
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(split)

        self.runner.finished.connect(self._on_finished)
        self.runner.running_changed.connect(self._on_running_changed)
        self.runner.cancelled.connect(lambda: self._set_status("Segmentation cancelled; the previous result is kept."))
        self.runner.failed.connect(lambda summary, _d: self._set_status("Segmentation failed: "
                                                                        + summary.splitlines()[0]))
        self.runner.progress.connect(self._on_progress)
        self._update_enabled()

    # ------------------------------------------------------------------ building
    def _build_controls(self) -> QWidget:
        panel = QWidget()
        v = QVBoxLayout(panel)
        v.setContentsMargins(8, 8, 8, 8)

        # mesh
        g = QGroupBox("Mesh")
        gl = QVBoxLayout(g)
        row = QHBoxLayout()
        self.open_button = QPushButton("Open…")
        self.open_button.setToolTip("Open a mesh: " + " ".join(f"*{e}" for e in mesh_io.MESH_EXTENSIONS))
        self.open_button.clicked.connect(self.open_dialog)
        self.sample_combo = QComboBox()
        self.sample_combo.setObjectName("mesh-samples")
        self.sample_combo.addItem("Bundled sample…")
        for s in self.samples():
            self.sample_combo.addItem(s.stem, str(s))
        self.sample_combo.setToolTip("Open one of the meshes that ship with gpulab")
        self.sample_combo.activated.connect(self._on_sample)
        row.addWidget(self.open_button)
        row.addWidget(self.sample_combo, 1)
        gl.addLayout(row)
        self.mesh_info = QLabel("No mesh loaded.")
        self.mesh_info.setObjectName("mesh-info")
        self.mesh_info.setWordWrap(True)
        self.mesh_info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gl.addWidget(self.mesh_info)
        v.addWidget(g)

        # parameters
        g = QGroupBox("Parameters")
        f = QFormLayout(g)
        f.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.k_spin = QSpinBox()
        self.k_spin.setRange(1, 64)
        self.k_spin.setSpecialValueText("auto")
        self.k_spin.setValue(1)
        self.k_spin.setToolTip("Number of parts; 'auto' picks it from the largest gap in the "
                               "representatives' distances")
        f.addRow("Parts (k):", self.k_spin)

        self.delta_spin = QDoubleSpinBox()
        self.delta_spin.setRange(0.0, 1.0)
        self.delta_spin.setSingleStep(0.05)
        self.delta_spin.setDecimals(2)
        self.delta_spin.setValue(self._default("DEFAULT_DELTA", 0.2))
        self.delta_auto = QCheckBox("auto")
        self.delta_auto.setChecked(True)
        tip = "Weight of geodesic against angular distance (0 = angles only, 1 = geodesic only)"
        self.delta_spin.setToolTip(tip)
        self.delta_auto.setToolTip("Let the library choose delta")
        f.addRow("Delta:", _auto_row(self.delta_spin, self.delta_auto))

        self.eta_spin = QDoubleSpinBox()
        self.eta_spin.setRange(0.01, 1.0)
        self.eta_spin.setSingleStep(0.05)
        self.eta_spin.setDecimals(2)
        self.eta_spin.setValue(self._default("DEFAULT_ETA_CONVEX", 0.1))
        self.eta_auto = QCheckBox("auto")
        self.eta_auto.setChecked(True)
        self.eta_spin.setToolTip("Angular weight of convex edges relative to concave ones (concave = 1)")
        self.eta_auto.setToolTip("Let the library choose eta_convex")
        f.addRow("Convex η:", _auto_row(self.eta_spin, self.eta_auto))

        self.eps_spin = QDoubleSpinBox()
        self.eps_spin.setRange(0.0, 0.5)
        self.eps_spin.setSingleStep(0.01)
        self.eps_spin.setDecimals(3)
        self.eps_spin.setValue(0.04)
        self.eps_spin.setToolTip("A face is fuzzy when its two best memberships p1 >= p2 satisfy "
                                 "(p1 - p2) / (p1 + p2) <= epsilon; fuzzy regions are split by a "
                                 "minimum cut")
        f.addRow("Fuzzy band ε:", self.eps_spin)

        self.apsp_combo = QComboBox()
        for key, label in APSP_LABELS.items():
            self.apsp_combo.addItem(key, key)
            self.apsp_combo.setItemData(self.apsp_combo.count() - 1, label, Qt.ItemDataRole.ToolTipRole)
        self.apsp_combo.setToolTip("All-pairs shortest paths: " + "; ".join(f"{k}: {v}" for k, v in APSP_LABELS.items()))
        f.addRow("APSP method:", self.apsp_combo)

        self.iter_spin = QSpinBox()
        self.iter_spin.setRange(1, 500)
        self.iter_spin.setValue(20)
        self.iter_spin.setToolTip("Maximum number of representative updates")
        f.addRow("Iteration cap:", self.iter_spin)

        self.maxfaces_spin = QSpinBox()
        self.maxfaces_spin.setRange(0, 10_000_000)
        self.maxfaces_spin.setSingleStep(1000)
        self.maxfaces_spin.setSpecialValueText("off")
        self.maxfaces_spin.setValue(0)
        self.maxfaces_spin.setGroupSeparatorShown(True)
        self.maxfaces_spin.setToolTip("Simplify meshes with more faces than this before clustering "
                                      "(labels are carried back to every face); 'off' = never")
        f.addRow("Simplify to:", self.maxfaces_spin)
        v.addWidget(g)

        row = QHBoxLayout()
        self.run_button = QPushButton("Segment")
        self.run_button.setObjectName("mesh-run")
        self.run_button.setDefault(True)
        self.run_button.setToolTip("Segment the mesh with these parameters (Ctrl+R)")
        self.run_button.setShortcut("Ctrl+R")
        self.run_button.clicked.connect(self.run_segmentation)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("mesh-cancel")
        self.cancel_button.clicked.connect(self.runner.cancel)
        row.addWidget(self.run_button, 1)
        row.addWidget(self.cancel_button)
        v.addLayout(row)
        self.stage_label = QLabel("")
        self.stage_label.setObjectName("mesh-stage")
        self.stage_label.setWordWrap(True)
        self.stage_label.setStyleSheet("color: #555;")
        v.addWidget(self.stage_label)

        # display
        g = QGroupBox("Display")
        dl = QVBoxLayout(g)
        self.edges_check = QCheckBox("Show edges")
        self.edges_check.toggled.connect(self.view.set_show_edges)
        self.reps_check = QCheckBox("Show representatives")
        self.reps_check.setToolTip("Spheres at the centroids of each part's representative face")
        self.reps_check.setChecked(True)
        self.reps_check.toggled.connect(self.view.set_show_representatives)
        self.fuzzy_check = QCheckBox("Highlight fuzzy faces")
        self.fuzzy_check.setToolTip("Faces whose two best memberships were within ε (decided by the cut), in black")
        self.fuzzy_check.toggled.connect(self.view.set_show_fuzzy)
        for w in (self.edges_check, self.reps_check, self.fuzzy_check):
            dl.addWidget(w)
        self.reset_view_button = QPushButton("Reset view")
        self.reset_view_button.setToolTip("Back to the default view of the whole mesh (drag to rotate, "
                                          "wheel to zoom, Shift+drag to pan, click a face to inspect it)")
        self.reset_view_button.clicked.connect(self.view.reset_camera)
        self.reset_view_button.setEnabled(self.view.available)
        dl.addWidget(self.reset_view_button)
        self.view.set_show_representatives(True)
        v.addWidget(g)

        # export
        g = QGroupBox("Export")
        el = QVBoxLayout(g)
        self.export_ply_button = QPushButton("Coloured mesh (PLY)…")
        self.export_ply_button.clicked.connect(lambda: self._export_dialog(".ply"))
        self.export_seg_button = QPushButton("Labels (.seg)…")
        self.export_seg_button.clicked.connect(lambda: self._export_dialog(".seg"))
        self.export_segments_button = QPushButton("Export segments…")
        self.export_segments_button.setObjectName("mesh-export-segments")
        self.export_segments_button.setToolTip("Write each part as its own mesh into a folder")
        self.export_segments_button.clicked.connect(self.export_segments_dialog)
        self.segments_format = QComboBox()
        self.segments_format.addItems(list(mesh_io.SEGMENT_FORMATS))
        self.segments_format.setToolTip("File format of the per-part meshes")
        for w in (self.export_ply_button, self.export_seg_button):
            el.addWidget(w)
        row = QHBoxLayout()
        row.addWidget(self.export_segments_button, 1)
        row.addWidget(self.segments_format)
        el.addLayout(row)
        v.addWidget(g)
        v.addStretch(1)

        self.param_widgets = {
            "k": self.k_spin, "delta": self.delta_spin, "delta_auto": self.delta_auto,
            "eta_convex": self.eta_spin, "eta_convex_auto": self.eta_auto, "epsilon": self.eps_spin,
            "apsp": self.apsp_combo, "max_iter": self.iter_spin, "max_faces": self.maxfaces_spin,
            "show_edges": self.edges_check, "show_representatives": self.reps_check,
            "highlight_fuzzy": self.fuzzy_check, "segments_format": self.segments_format,
        }

        scroll = QScrollArea()
        scroll.setWidget(panel)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setMinimumWidth(280)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        return scroll

    def _build_side_panel(self) -> QWidget:
        panel = QWidget()
        v = QVBoxLayout(panel)
        v.setContentsMargins(8, 8, 8, 8)
        g = QGroupBox("Parts")
        gl = QVBoxLayout(g)
        self.legend = QTableWidget(0, 4)
        self.legend.setObjectName("mesh-legend")
        self.legend.setHorizontalHeaderLabels(["Part", "Faces", "Area", "Area %"])
        self.legend.verticalHeader().setVisible(False)
        self.legend.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.legend.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.legend.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        hh = self.legend.horizontalHeader()
        hh.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for c in (1, 2, 3):
            hh.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.legend.itemSelectionChanged.connect(self._on_legend_selection)
        gl.addWidget(self.legend)
        self.summary_label = QLabel("")
        self.summary_label.setObjectName("mesh-summary")
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gl.addWidget(self.summary_label)
        gl.addStretch(1)
        v.addWidget(g, 3)

        g = QGroupBox("Picked face")
        gl = QVBoxLayout(g)
        self.face_label = QLabel("Click a face in the view to see its memberships.")
        self.face_label.setObjectName("mesh-face-info")
        self.face_label.setWordWrap(True)
        self.face_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gl.addWidget(self.face_label)
        self.bars = MembershipBars()
        self.bars.setObjectName("mesh-memberships")
        gl.addWidget(self.bars)
        gl.addStretch(1)
        v.addWidget(g, 2)
        panel.setMinimumWidth(240)
        return panel

    @staticmethod
    def _default(name: str, fallback: float) -> float:
        try:
            from gpu_kernels.mesh import segment as _s

            return float(getattr(_s, name, fallback))
        except Exception:  # pragma: no cover
            return fallback

    # ------------------------------------------------------------------ ToolTab API
    def samples(self) -> list[Path]:
        return mesh_seg.sample_meshes()

    def open_dialog(self) -> None:
        win = self.window()
        if hasattr(win, "open_dialog"):
            win.open_dialog()  # the window's dialog also records recent files
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open mesh", "", self.open_filter())
        if path:
            self.open_file(Path(path))

    def _on_sample(self, index: int) -> None:
        path = self.sample_combo.itemData(index)
        self.sample_combo.setCurrentIndex(0)
        if not path:
            return
        win = self.window()
        if hasattr(win, "open_path"):
            win.open_path(path)
        else:
            try:
                self.open_file(Path(path))
            except UserError as exc:
                self._error("Cannot open file", str(exc))

    def open_file(self, path: Path) -> None:
        path = Path(path)
        if self.runner.is_running():
            raise UserError("a segmentation is running; cancel it or wait for it before opening another mesh")
        warnings: list[str] = []
        vertices, faces = mesh_io.read_mesh(path, warnings=warnings)
        self.vertices, self.faces = vertices, faces
        self.areas = mesh_io.face_areas(vertices, faces)
        self.mesh_path = path
        self.mesh_id += 1
        self.read_warnings = warnings
        self.result = None
        self._clear_result_widgets()
        self.summary_label.setText("<span style='color:#666'>Press <b>Segment</b> to find the parts.</span>")
        self.view.set_mesh(vertices, faces)
        ext = np.ptp(vertices, axis=0)
        text = (f"<b>{path.name}</b><br>{len(vertices):,} vertices, {len(faces):,} faces<br>"
                f"size {ext[0]:.3g} × {ext[1]:.3g} × {ext[2]:.3g}")
        if warnings:
            text += "".join(f"<br><span style='color:#a15c00'>⚠ {w}</span>" for w in warnings)
        self.mesh_info.setText(text)
        self._set_status(f"Loaded {path.name}: {len(faces):,} faces. Press Segment to find its parts.")
        self._update_enabled()
        self.result_changed.emit()

    def can_save(self) -> bool:
        return self.result is not None and self.vertices is not None

    def result_filters(self) -> str:
        return "Coloured mesh (*.ply);;Segment labels, PSB format (*.seg)"

    def save_result(self, path: Path) -> None:
        """Save by extension: ``.ply`` coloured mesh, ``.seg`` labels, ``.obj/.off/.stl`` mesh."""
        if not self.can_save():
            raise UserError("there is no segmentation to save yet; press Segment first")
        path = Path(path)
        ext = path.suffix.lower()
        seg = self.result.seg
        if ext == ".ply":
            mesh_io.write_colored_ply(path, self.vertices, self.faces, seg.face_colors)
        elif ext == ".seg":
            mesh_io.write_seg(path, seg.labels, n_faces=len(self.faces))
        elif ext in (".obj", ".off", ".stl"):
            mesh_io.write_mesh(path, self.vertices, self.faces)
        else:
            raise UserError(f"cannot save {ext or 'extension-less'} files here: use .ply (coloured mesh) "
                            "or .seg (labels), or Export segments… for one mesh per part")
        self._set_status(f"Saved {path}")

    def export_segments(self, directory: Path, fmt: str | None = None) -> list[Path]:
        """Write one mesh per part into ``directory`` (created; must be new or empty)."""
        if not self.can_save():
            raise UserError("there is no segmentation to export yet; press Segment first")
        fmt = fmt or self.segments_format.currentText()
        seg = self.result.seg
        files = mesh_io.write_segments(directory, self.vertices, self.faces, seg.labels, fmt=fmt,
                                       colors=seg.cluster_colors)
        self._set_status(f"Wrote {len(files)} part meshes to {directory}")
        return files

    def screenshot_widget(self) -> QWidget:
        return self.view

    def export_screenshot(self, path: Path) -> None:
        img = self.view.render_image()
        if img is None:
            return super().export_screenshot(path)
        from PIL import Image

        from ..io.atomic import atomic_write

        with atomic_write(Path(path), "wb") as fh:
            Image.fromarray(np.ascontiguousarray(img)).save(fh, format="PNG")

    def closeEvent(self, event) -> None:  # noqa: N802
        self.view.close_view()
        super().closeEvent(event)

    # ------------------------------------------------------------------ running
    def params(self) -> dict:
        """The segmentation parameters the widgets hold, as ``segment_mesh`` keywords."""
        k = self.k_spin.value()
        mf = self.maxfaces_spin.value()
        return {
            "k": "auto" if k <= 1 else int(k),
            "delta": None if self.delta_auto.isChecked() else float(self.delta_spin.value()),
            "eta_convex": None if self.eta_auto.isChecked() else float(self.eta_spin.value()),
            "epsilon": float(self.eps_spin.value()),
            "apsp": self.apsp_combo.currentData() or self.apsp_combo.currentText(),
            "max_iter": int(self.iter_spin.value()),
            "max_faces": int(mf) if mf > 0 else None,
        }

    def run_default(self) -> bool:
        """``gpulab --run``: segment the loaded mesh with the current parameters."""
        return self.vertices is not None and self.run_segmentation()

    def run_segmentation(self, *, device=None) -> bool:
        """Start the segmentation on the worker thread. Returns False if it cannot start."""
        if self.runner.is_running():
            return False
        if self.vertices is None:
            self._error("Nothing to segment", "Open a mesh or pick a bundled sample first.")
            return False
        params = self.params()
        from gpu_kernels.backend import get_backend

        try:
            be = get_backend(device)
            mesh_seg._check_apsp(params["apsp"], be)
        except Exception as exc:
            from ..errors import user_message

            self._error("Cannot segment", user_message(exc))
            return False
        if not be.is_gpu and params["max_faces"] is None and len(self.faces) > CPU_COMFORT_FACES:
            choice = self.ask_slow_cpu_run(len(self.faces))
            if choice == "cancel":
                return False
            if choice == "simplify":
                self.maxfaces_spin.setValue(CPU_COMFORT_FACES)
                params = self.params()
        self._last_device = device
        self.view.highlight_face(None)
        self.runner.start(segmentation_job, self.vertices, self.faces, params, self.mesh_id, device=device)
        return True

    def ask_slow_cpu_run(self, n_faces: int) -> str:
        """Large mesh, no GPU: ``"simplify"``, ``"run"`` (as it is) or ``"cancel"`` (tests replace this)."""
        box = QMessageBox(QMessageBox.Icon.Question, "Large mesh on the CPU",
                          f"This mesh has {n_faces:,} faces and no GPU is in use. All-pairs shortest paths "
                          f"grow with the cube of the face count, so on the CPU this can take many minutes.\n\n"
                          f"Simplify it to {CPU_COMFORT_FACES:,} faces first (labels are carried back to every "
                          "face)?", QMessageBox.StandardButton.NoButton, self)
        simplify = box.addButton(f"Simplify to {CPU_COMFORT_FACES:,}", QMessageBox.ButtonRole.AcceptRole)
        run = box.addButton("Run on all faces", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(simplify)
        box.exec()
        return "simplify" if box.clickedButton() is simplify else "run" if box.clickedButton() is run else "cancel"

    def _on_progress(self, fraction: float, stage: str) -> None:
        self.stage_label.setText(f"{stage} — {100 * fraction:.0f}%")

    def _on_running_changed(self, running: bool) -> None:
        if not running:
            self.stage_label.setText("")
        self._update_enabled()

    def _on_finished(self, res) -> None:
        if isinstance(res, TooLarge):
            self._propose_simplification(res)
            return
        if not isinstance(res, MeshResult) or res.mesh_id != self.mesh_id:
            return  # a result for a mesh that is no longer shown
        self.result = res
        self._show_result()
        self.result_changed.emit()
        self.result_shown.emit()

    def _propose_simplification(self, res: TooLarge) -> None:
        target = mesh_seg._round_down(max(4, int(res.max_faces * 0.95)))
        try:
            from gpu_kernels.backend import get_backend

            if not get_backend(self._last_device).is_gpu:
                target = min(target, CPU_COMFORT_FACES)  # what fits in RAM may still take hours
        except Exception:  # pragma: no cover - the device vanished meanwhile
            pass
        msg = (f"This mesh has {res.n_faces:,} faces; their distance matrix does not fit in memory "
               f"(at most about {res.max_faces:,} faces fit on this device).\n\n"
               f"Simplify it to {target:,} faces (quadric edge collapse), segment that, and carry the "
               "labels back to every original face?")
        if self.ask_simplify(msg):
            self.maxfaces_spin.setValue(target)
            self.run_segmentation(device=self._last_device)
        else:
            self._set_status("Not segmented: the mesh is too large. Set 'Simplify to' or use the GPU.")

    def ask_simplify(self, message: str) -> bool:
        """Ask whether to simplify (tests replace this)."""
        ans = QMessageBox.question(self, "Mesh too large", message,
                                   QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                   QMessageBox.StandardButton.Yes)
        return ans == QMessageBox.StandardButton.Yes

    # ------------------------------------------------------------------ results
    def _clear_result_widgets(self) -> None:
        self.legend.setRowCount(0)
        self._fit_legend()
        self.summary_label.setText("")
        self.face_label.setText("Click a face in the view to see its memberships.")
        self.bars.set_values(None, None)

    def _show_result(self) -> None:
        seg = self.result.seg
        v = self.vertices
        f = self.faces
        reps = np.asarray(seg.representatives, dtype=np.int64)
        rep_pts = v[f[reps]].mean(axis=1) if len(reps) else None
        self.view.set_segmentation(seg.face_colors, fuzzy=seg.fuzzy, reps_points=rep_pts,
                                   reps_colors=seg.cluster_colors)
        table = seg.cluster_table(self.areas)
        self.legend.setRowCount(len(table))
        for r, row in enumerate(table):
            j = int(row["label"])
            it = QTableWidgetItem(_swatch(row["color"]), f"part {j}")
            it.setData(Qt.ItemDataRole.UserRole, j)
            it.setToolTip("#" + "".join(f"{int(c):02x}" for c in row["color"]))
            self.legend.setItem(r, 0, it)
            for c, text in ((1, f"{row['faces']:,}"), (2, f"{row['area']:.4g}"),
                            (3, f"{100 * row['area_fraction']:.1f}")):
                cell = QTableWidgetItem(text)
                cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.legend.setItem(r, c, cell)
        self._fit_legend()
        info = getattr(seg, "info", {}) or {}
        p = info.get("params", {})
        bits = [f"<b>{seg.k} parts</b> in {self.result.elapsed:.2f} s on {info.get('device', '?')} "
                f"(APSP: {info.get('method', p.get('apsp_method', '?'))})"]
        if p:
            bits.append(f"δ = {p.get('delta', 0):.2f}{' (auto)' if p.get('delta_auto') else ''}, "
                        f"η = {p.get('eta_convex', 0):.2f}{' (auto)' if p.get('eta_convex_auto') else ''}, "
                        f"ε = {p.get('epsilon', 0):.3g}")
        n_fuzzy = int(np.count_nonzero(seg.fuzzy))
        bits.append(f"{n_fuzzy:,} fuzzy faces settled by the minimum cut")
        timings = {k: t for k, t in (info.get("timings") or {}).items() if k != "total" and t}
        if timings:
            bits.append("time: " + ", ".join(f"{mesh_seg._STAGE_NAMES.get(k, k)} {mesh_seg._fmt_s(t)}"
                                             for k, t in timings.items()))
        for w in info.get("warnings", []) or []:
            bits.append(f"<span style='color:#a15c00'>⚠ {w}</span>")
        self.summary_label.setText("<br>".join(bits))
        for w in info.get("warnings", []) or []:
            log.warning("%s: %s", self.mesh_path.name if self.mesh_path else "mesh", w)
        self._set_status(f"Segmented {self.mesh_path.name if self.mesh_path else 'the mesh'} into "
                         f"{seg.k} parts in {self.result.elapsed:.2f} s")
        if self.view.picked_face is not None:
            self.show_face(self.view.picked_face)
        self._update_enabled()

    def _fit_legend(self) -> None:
        """Make the legend as tall as its rows (up to a limit), so the summary sits below it."""
        rows = self.legend.rowCount()
        self.legend.resizeRowsToContents()
        h = self.legend.horizontalHeader().sizeHint().height() + 2 * self.legend.frameWidth() + 6
        h += sum(self.legend.rowHeight(r) for r in range(min(rows, 12)))
        if rows > 12:
            h += self.legend.rowHeight(0) // 2  # hint that it scrolls
        self.legend.setFixedHeight(max(h, self.legend.horizontalHeader().height() + 40))

    def show_face(self, face: int) -> None:
        """Show the memberships of ``face`` (called when a face is clicked)."""
        if self.faces is None or face is None or face < 0 or face >= len(self.faces):
            self.view.highlight_face(None)
            self.face_label.setText("Click a face in the view to see its memberships.")
            self.bars.set_values(None, None)
            return
        self.view.highlight_face(face)
        if self.result is None:
            self.face_label.setText(f"Face {face:,} (segment the mesh to see its memberships)")
            self.bars.set_values(None, None)
            return
        seg = self.result.seg
        lab = int(seg.labels[face])
        m = np.asarray(seg.memberships[face], dtype=np.float64)
        fuzzy = bool(seg.fuzzy[face])
        top = np.sort(m)[::-1]
        gap = float(top[0] - top[1]) if len(top) > 1 else 1.0
        c = seg.cluster_colors[lab]
        self.face_label.setText(
            f"<b>Face {face:,}</b> → <span style='background:#{int(c[0]):02x}{int(c[1]):02x}{int(c[2]):02x}'>"
            f"&nbsp;&nbsp;&nbsp;</span> <b>part {lab}</b><br>"
            f"area {self.areas[face]:.3g}; best minus second membership {gap:.3f}"
            + ("<br><i>fuzzy: settled by the minimum cut</i>" if fuzzy else "")
        )
        self.bars.set_values(m, seg.cluster_colors, lab)

    def _on_legend_selection(self) -> None:
        rows = self.legend.selectionModel().selectedRows() if self.legend.selectionModel() else []
        if not rows or self.result is None:
            return
        j = self.legend.item(rows[0].row(), 0).data(Qt.ItemDataRole.UserRole)
        rep = int(self.result.seg.representatives[int(j)])
        self.show_face(rep)

    # ------------------------------------------------------------------ export dialogs
    def _export_dialog(self, ext: str) -> None:
        if not self.can_save():
            return
        stem = self.mesh_path.stem if self.mesh_path else "mesh"
        filt = "Coloured mesh (*.ply)" if ext == ".ply" else "Segment labels, PSB format (*.seg)"
        default = str(self._last_dir() / (f"{stem}-parts.ply" if ext == ".ply" else f"{stem}.seg"))
        path, _ = QFileDialog.getSaveFileName(self, "Export", default, filt)
        if not path:
            return
        if not path.lower().endswith(ext):
            path += ext
        self._remember_dir(Path(path).parent)
        self._save_via_window(Path(path))

    def _save_via_window(self, path: Path) -> None:
        win = self.window()
        if hasattr(win, "save_result"):
            win.save_result(self, path)
            return
        try:
            self.save_result(path)
        except UserError as exc:
            self._error("Cannot save", str(exc))

    def export_segments_dialog(self) -> None:
        if not self.can_save():
            return
        parent = QFileDialog.getExistingDirectory(self, "Export segments into folder", str(self._last_dir()))
        if not parent:
            return
        stem = self.mesh_path.stem if self.mesh_path else "mesh"
        target = Path(parent) / f"{stem}-segments"
        n = 2
        while target.exists() and any(target.iterdir()):
            target = Path(parent) / f"{stem}-segments-{n}"
            n += 1
        self._remember_dir(Path(parent))
        try:
            files = self.export_segments(target)
        except Exception as exc:
            from ..errors import user_message

            self._error("Cannot export segments", user_message(exc))
            return
        self._set_status(f"Wrote {len(files)} part meshes to {target}")

    def _last_dir(self) -> Path:
        win = self.window()
        s = getattr(win, "settings", None)
        if s is not None:
            d = s.value("last_save_dir", s.value("last_dir", ""))
            if d and Path(str(d)).is_dir():
                return Path(str(d))
        if self.mesh_path is not None and self.mesh_path.parent.is_dir():
            return self.mesh_path.parent
        return Path.home()

    def _remember_dir(self, d: Path) -> None:
        s = getattr(self.window(), "settings", None)
        if s is not None:
            s.setValue("last_save_dir", str(d))

    # ------------------------------------------------------------------ helpers
    def _update_enabled(self) -> None:
        running = self.runner.is_running()
        has_mesh = self.vertices is not None
        has_res = self.result is not None
        self.run_button.setEnabled(has_mesh and not running)
        self.cancel_button.setEnabled(running)
        self.open_button.setEnabled(not running)
        self.sample_combo.setEnabled(not running)
        for b in (self.export_ply_button, self.export_seg_button, self.export_segments_button):
            b.setEnabled(has_res and not running)

    def _set_status(self, msg: str) -> None:
        log.info("%s", msg)
        self.status_message.emit(msg)

    def _error(self, title: str, message: str) -> None:
        win = self.window()
        if hasattr(win, "show_error"):
            win.show_error(title, message)
        else:
            box = QMessageBox(QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self)
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.open()

