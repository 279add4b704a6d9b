"""The Mesh segmentation tab: the 3-D view of the parts, display toggles, the legend and the
memberships of a clicked face. Everything else (input, parameters, Run/Cancel, errors,
exports) is :class:`~app.tabs.base.ToolTab`'s; the computation is :mod:`app.tools.mesh_seg`.
"""

from __future__ import annotations

import copy
import html
import logging
import threading

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt, QTimer
from PySide6.QtGui import QColor, QFont, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGroupBox,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ..tools import mesh_seg
from ..tools.base import fmt_seconds
from ..tools.stages import reused_note, took_text
from ..ui.widgets import ColorBar, LegendTable, hex_color, name_html
from .base import ToolTab
from .mesh_view import MeshView

__all__ = ["MeshTab", "MembershipBars"]

log = logging.getLogger(__name__)

# pymeshlab (simplification) runs on the worker thread, but its FIRST import must happen on the
# main thread: imported first from a worker, it corrupts the heap (glibc aborts the process at
# exit, "malloc_consolidate(): unaligned fastbin chunk"). It costs 0.2 s, so it is not imported
# with this module (start-up, issue 18 case 19) but by the tab on the main thread: right after
# the window is painted, and in any case before the tab's first job starts (running_changed is
# emitted on the main thread before the worker thread starts).
def import_pymeshlab_here() -> None:
    """Import pymeshlab in the calling (main) thread, once."""
    try:
        import pymeshlab  # noqa: F401
    except ImportError:  # pragma: no cover - an install without pymeshlab cannot simplify anyway
        pass


_COLOUR_IMPORT: threading.Thread | None = None


def warm_colour_import() -> threading.Thread:
    """Import what the stable part colours need (scipy.optimize) on a daemon thread, once: the
    first recolouring comes after a second result, so the tab's first job hides the import; it
    used to run on the GUI thread 0.4 s after the tab was built, at every start-up."""
    global _COLOUR_IMPORT
    if _COLOUR_IMPORT is None:
        _COLOUR_IMPORT = threading.Thread(target=lambda: __import__("scipy.optimize"),
                                          name="gpulab-colour-import", daemon=True)
        _COLOUR_IMPORT.start()
    return _COLOUR_IMPORT


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
            font.setBold(j == self.label)
            p.setFont(font)
            p.setPen(self.palette().text().color())
            p.drawText(QRectF(0, y, name_w, self.row_h), Qt.AlignmentFlag.AlignVCenter, f"part {j}")
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(225, 225, 225))
            p.drawRoundedRect(QRectF(name_w, y + 3, bar_w, self.row_h - 6), 3, 3)
            p.setBrush(QColor(int(c[0]), int(c[1]), int(c[2])))
            p.drawRoundedRect(QRectF(name_w, y + 3, max(1.0, bar_w * float(self.values[j])), self.row_h - 6), 3, 3)
            p.setPen(self.palette().text().color())
            p.drawText(QRectF(name_w + bar_w + 6, y, val_w, self.row_h),
                       Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, f"{self.values[j]:.3f}")
        p.end()


class _PanelScroll(QScrollArea):
    """The side panel in a scroll area that keeps the panel at least as tall as its wrapped texts
    need at the current width (a scroll bar instead of texts squeezed into one another)."""

    def fit(self) -> None:
        w = self.widget()
        lay = w.layout() if w is not None else None
        if lay is None:
            return
        for g in w.findChildren(QGroupBox):   # a child's new minimum (the parts table's) taken in now
            if g.layout() is not None:
                g.layout().activate()
        lay.activate()
        for g in w.findChildren(QGroupBox):      # the stretch factors alone gave a box less than its text needs
            if g.hasHeightForWidth():
                g.setMinimumHeight(0)
                g.setMinimumHeight(g.heightForWidth(max(g.width(), 1)))
        w.setMinimumHeight(lay.totalHeightForWidth(self.viewport().width()))
        # as wide as the panel needs (the parts table's columns): the splitter sees this minimum
        self.setMinimumWidth(w.minimumSizeHint().width() + self.verticalScrollBar().sizeHint().width())

    def resizeEvent(self, ev) -> None:  # noqa: N802
        super().resizeEvent(ev)
        self.fit()


class MeshTab(ToolTab):
    tool = mesh_seg.TOOL
    run_label = "Segment"

    def __init__(self, parent: QWidget | None = None, *, allow_3d: bool = True, host=None):
        self._allow_3d = allow_3d
        self._color_ref = None   # the last live result shown (stable part colours)
        super().__init__(parent, host=host)
        self.runner.running_changed.connect(lambda running: running and import_pymeshlab_here())
        QTimer.singleShot(300, self, import_pymeshlab_here)
        # the stable colours' assignment (scipy.optimize, ~80 ms to import): not at start-up, not
        # in the first k edit: on a thread while the tab's first job computes
        self.runner.running_changed.connect(lambda running: running and warm_colour_import())
        self.setting_widgets.update({"show_edges": self.edges_check, "show_representatives": self.reps_check,
                                     "highlight_fuzzy": self.fuzzy_check})
        self.segments_format = self.form.editor("segments_format")  # a Param, beside its export button

    # ------------------------------------------------------------------ widgets
    def build_view(self) -> QWidget:
        view = MeshView(self, allow_3d=self._allow_3d)
        view.face_picked.connect(self.show_face)
        if hasattr(self, "reps_check"):
            # the pinned copy (built after the controls): the same edges / part numbers / fuzzy
            # faces as the live view, now and when toggled (it showed no part numbers at all)
            for check, show in ((self.edges_check, view.set_show_edges),
                                (self.reps_check, view.set_show_representatives),
                                (self.fuzzy_check, view.set_show_fuzzy)):
                show(check.isChecked())
                check.toggled.connect(show)
        return view

    def build_controls(self) -> list[QWidget]:
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
        return [g]

    def build_side_panel(self) -> QWidget:
        panel = QWidget()
        v = QVBoxLayout(panel)
        v.setContentsMargins(8, 8, 8, 8)
        g = QGroupBox("Parts")
        gl = QVBoxLayout(g)
        self.legend = LegendTable(["Part", "Faces", "Area", "Area %"])
        self.legend.setObjectName("mesh-legend")
        self.legend.row_selected.connect(self._on_legend_selection)
        gl.addWidget(self.legend)
        self.summary_label = QLabel("")
        self.summary_label.setObjectName("mesh-summary")
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        gl.addWidget(self.summary_label)
        self.shading_legend = ColorBar()
        self.shading_legend.setObjectName("mesh-shading-legend")
        self.shading_legend.hide()
        gl.addWidget(self.shading_legend)
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
        # in a scroll area: in a short window the parts table and the summary below it were
        # squeezed into one another (the summary drawn over the table's last rows)
        scroll = self._side_scroll = _PanelScroll()
        scroll.setObjectName("mesh-side-scroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(panel)
        scroll.fit()
        return scroll

    # ------------------------------------------------------------------ input and result
    def describe_input(self, data) -> str:
        ext = np.ptp(data.vertices, axis=0)
        text = (f"<b>{name_html(data.name)}</b><br>{len(data.vertices):,} vertices, {len(data.faces):,} faces<br>"
                f"size {ext[0]:.3g} × {ext[1]:.3g} × {ext[2]:.3g}")
        return text + "".join(f"<br><span style='color:#a15c00'>⚠ {html.escape(str(w))}</span>" for w in data.warnings)

    def show_input(self, data) -> None:
        self.view.set_mesh(data.vertices, data.faces)
        self.legend.reserve_width(self._widest_rows(data))
        self._side_scroll.fit()   # the panel takes the reserved width now, not at the first result
        self.summary_label.setText(f"<span style='color:#666'>Press <b>{self.run_label}</b> to find the parts.</span>")

    @staticmethod
    def _widest_rows(data) -> list:
        """The parts table's widest texts for ``data``: part 99, all of its faces,
        a part's area down to 0.1 % of the mesh's, 100.0 %. The table is this wide from the start,
        so a result's digits do not widen it, and the 3-D view beside it keeps its size (a k edit
        that widened the table resized the view, which drew its triangles again)."""
        total = float(np.sum(data.areas)) if getattr(data, "areas", None) is not None else 1.0
        areas = [f"{total * 10.0 ** -j:.4g}" for j in range(4)]
        area = max(areas, key=len)
        return [(None, f"part {min(mesh_seg.PARAMS['k'].maximum - 1, 99)}", (0, 0, 0),
                 [(f"{len(data.faces):,}", 0), (area, 0.0), ("100.0", 0.0)])]

    def clear_result(self) -> None:
        self._color_ref = None   # a new input: its first result keeps the kernels' colours
        self.legend.set_rows([])
        self.shading_legend.hide()
        self.form.clear_chosen()
        self.summary_label.setText("")
        self.face_label.setText("Click a face in the view to see its memberships.")
        self.bars.set_values(None, None)
        self.view.highlight_face(None)

    def stable_colors(self, result) -> None:
        """Give ``result``'s parts the colours of the parts they overlap in the pinned result and
        in the previous live one (:func:`app.tools.mesh_colors.stable_colors`), once per result: a
        k edit, the pinned and the live view and the exports keep a part's colour (the kernels'
        colours follow the part number). The part numbers stay the kernels'."""
        seg = result.seg
        if getattr(seg, "stable_colors", False):
            return
        from ..tools.mesh_colors import stable_colors

        refs = []
        for other in (self.pinned[0] if self.pinned is not None else None, self._color_ref):
            if other is not None and other is not result and other.data is result.data:
                refs.append((other.seg.labels, other.seg.cluster_colors))
        seg = copy.copy(seg)   # the stage cache keeps the kernels' colours
        if refs:
            from gpu_kernels.mesh.colors import DEFAULT_SHADING, blend_face_colors

            seg.cluster_colors = stable_colors(seg.labels, refs, result.data.areas, k=len(seg.cluster_colors))
            seg.face_colors = blend_face_colors(seg.memberships, seg.labels, seg.cluster_colors,
                                                shading=result.params.get("shading", DEFAULT_SHADING))
        seg.stable_colors = True   # kept by the display edits' copies (apply_display)
        result.seg = seg

    def show_result(self, result) -> None:
        self.stable_colors(result)
        if not self._drawing_pinned:
            self._color_ref = result
        seg, data = result.seg, result.data
        reps = np.asarray(seg.representatives, dtype=np.int64)
        rep_pts = data.vertices[data.faces[reps]].mean(axis=1) if len(reps) else None
        self.view.set_segmentation(seg.face_colors, fuzzy=seg.fuzzy, reps_points=rep_pts,
                                   reps_colors=seg.cluster_colors)
        self.legend.set_rows([
            (row["label"], f"part {row['label']}", row["color"],
             [(f"{row['faces']:,}", row["faces"]), (f"{row['area']:.4g}", row["area"]),
              (f"{100 * row['area_fraction']:.1f}", row["area_fraction"])])
            for row in result.table()])
        info = getattr(seg, "info", {}) or {}
        p = info.get("params", {})
        report = self.last_report if result is self.result else None
        took = took_text(report, result.elapsed)   # not "in 0.00 s" for a result from the cache
        bits = [f"<b>{seg.k} parts</b> {took} on {info.get('device', result.device)} "
                f"(APSP: {info.get('method', p.get('apsp_method', '?'))})"]
        if p:
            bits.append(f"δ = {p.get('delta', 0):.2f}{' (auto)' if p.get('delta_auto') else ''}, "
                        f"η = {p.get('eta_convex', 0):.2f}{' (auto)' if p.get('eta_convex_auto') else ''}, "
                        f"ε = {p.get('epsilon', 0):.3g}")
        layout = mesh_seg.layout_line(seg)   # Auto-k layout = concave: which layout was kept, and why
        if layout:
            bits.append(html.escape(layout.strip()))
        bits.append(f"{int(np.count_nonzero(seg.fuzzy)):,} fuzzy faces settled by the minimum cut")
        st = mesh_seg.stage_times(result)
        if st:
            bits.append("time: " + ", ".join(f"{k} {fmt_seconds(t)}" for k, t in st))
            if reused_note(report):   # a live re-run: the re-used stages keep their own times
                bits.append(f"<span style='color:#666'>{reused_note(report)}</span>")
        bits += [f"<span style='color:#a15c00'>⚠ {w}</span>" for w in result.warnings]
        self.summary_label.setText("<br>".join(bits))
        self._side_scroll.fit()
        self.show_shading_legend(result)
        # what auto chose, in the greyed boxes ("auto (7)")
        self.form.show_chosen({"k": int(seg.k), "delta": p.get("delta"), "eta_convex": p.get("eta_convex"),
                               "max_faces": info.get("n_faces_segmented")})
        if self.view.picked_face is not None:
            self.show_face(self.view.picked_face)

    def show_shading_legend(self, result) -> None:
        """The legend of the uncertainty shading: a part's colour from a certain face (best
        membership far above the second) to an uncertain one, faded towards white."""
        shading = float(result.params.get("shading", 0.0) or 0.0)
        if shading <= 0 or not len(result.seg.cluster_colors):
            self.shading_legend.hide()
            return
        from gpu_kernels.mesh.colors import blend_face_colors

        n = 64
        cert = np.linspace(1.0, 0.0, n)
        P = np.stack([(1 + cert) / 2, (1 - cert) / 2], axis=1)  # two memberships with that certainty
        lut = blend_face_colors(P, np.zeros(n, np.int64), np.asarray(result.seg.cluster_colors)[:1], shading=shading)
        self.shading_legend.set_map(lut, 0.0, 1.0, labels=("certain", "uncertain"),
                                    caption=f"shading {shading:g}: up to {100 * shading:.0f} % towards white")

    def show_face(self, face: int) -> None:
        """Show the memberships of ``face`` (called when a face is clicked)."""
        faces = None if self.data is None else self.data.faces
        if faces is None or face is None or face < 0 or face >= len(faces):
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
        top = np.sort(m)[::-1]
        gap = float(top[0] - top[1]) if len(top) > 1 else 1.0
        self.face_label.setText(
            f"<b>Face {face:,}</b> → <span style='background:{hex_color(seg.cluster_colors[lab])}'>"
            f"&nbsp;&nbsp;&nbsp;</span> <b>part {lab}</b><br>"
            f"area {self.data.areas[face]:.3g}; best minus second membership {gap:.3f}"
            + ("<br><i>fuzzy: settled by the minimum cut</i>" if bool(seg.fuzzy[face]) else "")
        )
        self.bars.set_values(m, seg.cluster_colors, lab)

    def _on_legend_selection(self, key) -> None:
        if key is None or self.result is None:
            return
        self.show_face(int(self.result.seg.representatives[int(key)]))

    # ------------------------------------------------------------------ pictures
    def export_screenshot(self, path) -> None:
        img = self.view.render_image()
        if img is None:
            return super().export_screenshot(path)
        from pathlib import Path

        from PIL import Image

        from ..io.atomic import atomic_write

        with atomic_write(Path(path), "wb") as fh:
            Image.fromarray(np.ascontiguousarray(img)).save(fh, format="PNG")
