"""The Multi-view stereo tab: pick a reference view, watch its depth map fill in batch by batch
while the region grows, switch between image, depth, normal, confidence and iterations with a
confidence threshold, and look at the view's points or the fused cloud in 3-D with the
cameras drawn as frusta.

Everything generic (input, parameters, Run/Cancel, errors, exports) is
:class:`~app.tabs.base.ToolTab`'s; the computation is :mod:`app.tools.mvs`.
"""

from __future__ import annotations

import html
import logging
import shlex
import time
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ..tools import mvs
from ..tools.stages import took_text
from ..ui.widgets import name_html
from .base import ToolTab
from .mvs_views import CloudView, MapView

__all__ = ["MvsTab", "SHOW_CHOICES", "CLOUD_CHOICES"]

log = logging.getLogger(__name__)

SHOW_CHOICES = ("Depth", "Normal", "Confidence", "Iterations", "Image")
CLOUD_CHOICES = ("This view's points", "Fused cloud", "Seeds", "Cameras only")
PREVIEW_INTERVAL_S = 0.15
#: the side panel's "This view" section while the chosen view has no result (before a run, after a
#: new scene, a view the run left out), not a bare heading (reviewer B, session 10)
NO_VIEW_RESULT = ("<span style='color:#666'>Not reconstructed yet: this view's samples, depth range and "
                  "confidence show after a run that includes it.</span>")


class MvsTab(ToolTab):
    tool = mvs.TOOL
    #: the tool's display Params shown by this tab's widgets (ToolTab.display_bindings)
    display_bindings = {"show": "show_combo", "min_confidence": ("threshold", 100), "cloud": "cloud_combo",
                        "frusta": "frusta_check"}
    run_label = "Reconstruct"
    #: the map and the 3-D view side by side: each keeps ~240 px before the side panel folds (review B #8)
    MIN_VIEW_WIDTH = 480

    #: (view index, depth copy, info) from the worker thread, for the live preview
    preview_ready = Signal(int, object, object)

    # ------------------------------------------------------------------ building
    def build_view(self) -> QWidget:
        split = QSplitter(Qt.Orientation.Horizontal)
        self.map_view = MapView()
        self.map_view.hovered.connect(self._on_hover)
        self.cloud_view = CloudView()
        # side by side, two 320 px minimums kept the window 1235 px wide once this tab was shown
        self.map_view.setMinimumSize(160, 120)
        self.cloud_view.setMinimumSize(160, 120)
        split.addWidget(self.map_view)
        split.addWidget(self.cloud_view)
        split.setSizes([600, 500])
        self.preview_ready.connect(self._on_preview)
        self._last_preview = 0.0
        self._live = None  # (view, depth) of the running job's preview
        return split

    def pin(self) -> bool:
        """Pinned, the map and the 3-D view of each result stack vertically: side by side in
        half the width, the 3-D views were squeezed to slivers."""
        ok = super().pin()
        if ok:
            self._stack_views(Qt.Orientation.Vertical)
        return ok

    def unpin(self) -> None:
        super().unpin()
        self._stack_views(Qt.Orientation.Horizontal)

    def _stack_views(self, orientation) -> None:
        views = [self.view] + ([self._pinned_slot["view"]] if self._pinned_slot is not None else [])
        for v in views:
            if isinstance(v, QSplitter) and v.orientation() != orientation:
                v.setOrientation(orientation)
                n = max(1, v.count())
                extent = v.height() if orientation == Qt.Orientation.Vertical else v.width()
                v.setSizes([max(1, extent // n)] * n)

    def build_controls(self) -> list[QWidget]:
        g = QGroupBox("Reference view")
        lay = QVBoxLayout(g)
        row = QHBoxLayout()
        self.view_combo = QComboBox()
        self.view_combo.setObjectName("mvs-view")
        self.view_combo.setToolTip("The view shown (and reconstructed by 'Only this view')")
        self.view_combo.currentIndexChanged.connect(self._redraw)
        row.addWidget(self.view_combo, 1)
        lay.addLayout(row)
        self.only_button = QPushButton("Reconstruct only this view")
        self.only_button.setToolTip("Set Views to the chosen view, so that Reconstruct computes it alone")
        self.only_button.clicked.connect(self.only_this_view)
        self.only_button.setEnabled(False)  # until a scene is open (it did nothing, silently)
        lay.addWidget(self.only_button)
        row = QHBoxLayout()
        self.masks_button = QPushButton("Masks…")
        self.masks_button.setToolTip("A folder with one mask image per view (non-zero: reconstruct); "
                                     "COLMAP's NAME.png or NAME.<ext> naming")
        self.masks_button.clicked.connect(lambda: self.choose_masks())
        self.masks_button.setEnabled(False)  # until a scene is open
        self.no_masks_button = QPushButton("No masks")
        self.no_masks_button.setEnabled(False)
        self.no_masks_button.clicked.connect(self.clear_masks)
        row.addWidget(self.masks_button)
        row.addWidget(self.no_masks_button)
        lay.addLayout(row)

        d = QGroupBox("Display")
        dl = QVBoxLayout(d)
        row = QHBoxLayout()
        row.addWidget(QLabel("Show:"))
        self.show_combo = QComboBox()
        self.show_combo.setObjectName("mvs-show")
        self.show_combo.addItems(SHOW_CHOICES)
        self.show_combo.currentIndexChanged.connect(self._redraw)
        row.addWidget(self.show_combo, 1)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Confidence ≥"))
        self.threshold = QSlider(Qt.Orientation.Horizontal)
        self.threshold.setObjectName("mvs-threshold")
        self.threshold.setRange(0, 100)
        self.threshold.setValue(0)
        self.threshold.setToolTip("Hide samples whose confidence (mean NCC of the active views) is lower, "
                                  "in the map and in the 3-D view")
        self.threshold.valueChanged.connect(self._redraw)
        self.threshold_label = QLabel("0.00")
        row.addWidget(self.threshold, 1)
        row.addWidget(self.threshold_label)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("3-D:"))
        self.cloud_combo = QComboBox()
        self.cloud_combo.setObjectName("mvs-cloud")
        self.cloud_combo.addItems(CLOUD_CHOICES)
        self.cloud_combo.currentIndexChanged.connect(self._redraw_cloud)
        row.addWidget(self.cloud_combo, 1)
        dl.addLayout(row)
        self.frusta_check = QCheckBox("Cameras as frusta")
        self.frusta_check.setChecked(True)
        self.frusta_check.toggled.connect(self._redraw_cloud)
        dl.addWidget(self.frusta_check)
        for w, key in ((self.show_combo, "show"), (self.cloud_combo, "cloud"), (self.frusta_check, "frusta")):
            self.setting_widgets[key] = w
        return [g, d]

    def build_side_panel(self) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        self.readout = QLabel("Hover over the map for depth, normal and confidence.")
        self.readout.setObjectName("mvs-readout")
        self.readout.setWordWrap(True)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stats_label = QLabel(NO_VIEW_RESULT)
        self.stats_label.setObjectName("mvs-stats")
        self.stats_label.setWordWrap(True)
        self.stats_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(QLabel("<b>Under the cursor</b>"))
        lay.addWidget(self.readout)
        lay.addWidget(QLabel("<b>This view</b>"))
        lay.addWidget(self.stats_label)
        lay.addStretch(1)
        w.setMinimumWidth(220)
        return w

    # ------------------------------------------------------------------ input
    def describe_input(self, data: mvs.MVSData) -> str:
        sc = data.scene
        c = sc.cameras[0]
        parts = [f"<b>{name_html(data.name)}</b>: {sc.n_views} views, {c.width} x {c.height}"]
        if sc.points is not None:
            parts.append(f"{len(sc.points):,} sparse points")
        if any(m is not None for m in sc.masks):
            parts.append(f"{sum(m is not None for m in sc.masks)} masks")
        if sc.bbox is not None:
            parts.append("bounding box known")
        # as HTML, the name escaped: a "<" in a name made Qt guess rich text and drop the line breaks
        return ", ".join(parts) + "".join(f"<br><span style='color:#a15c00'>⚠ {html.escape(str(w))}</span>"
                                          for w in data.warnings)

    def show_input(self, data: mvs.MVSData) -> None:
        self.no_masks_button.setEnabled(data.mask_dir is not None)
        self.only_button.setEnabled(True)
        self.masks_button.setEnabled(True)
        self.view_combo.blockSignals(True)
        self.view_combo.clear()
        self.view_combo.addItems([f"{i}: {n}" for i, n in enumerate(data.scene.names)])
        self.view_combo.setCurrentIndex(0)
        self.view_combo.blockSignals(False)
        self._live = None
        self._check_views_param(data)
        self._redraw()

    def _check_views_param(self, data) -> None:
        """Views naming images or indices the new scene does not have go back to 'all' (a
        scene opened after "Reconstruct only this view" kept that view's name)."""
        from gpu_kernels.mvs.stereo import parse_views

        try:
            spec = self.form.values().get("views", "all")
        except Exception:  # noqa: BLE001 - an invalid form is reported when Run is pressed
            return
        if str(spec).strip().lower() == "all":
            return
        try:
            parse_views(spec, data.scene)
        except Exception:  # noqa: BLE001 - any view the scene lacks
            self.form.set_value("views", "all")
            self._set_status(f"Views reset to 'all': {data.name} has no view {spec!r}.")

    def clear_result(self) -> None:
        self._live = None
        self.form.clear_chosen()
        self.stats_label.setText(NO_VIEW_RESULT)
        self.cloud_view.clear()

    def show_result(self, result: mvs.MVSRun) -> None:
        from gpu_kernels.mvs import grow as _gr

        st = result.result.stats or {}
        gpu = str(st.get("device", result.device)).startswith("cuda")
        self.form.show_chosen({"batch_size": _gr.DEFAULT_BATCH_GPU if gpu else _gr.DEFAULT_BATCH_CPU,
                               "views_together": st.get("views_together")})  # "auto (2,048)"
        self._live = None
        if result.view_map(self.current_view()) is None and result.maps:
            self.view_combo.setCurrentIndex(result.maps[0].view)
        if self.cloud_combo.currentIndex() == 0 and result.fused is not None and len(result.maps) > 1:
            self.cloud_combo.setCurrentIndex(1)
        self._redraw()

    # ------------------------------------------------------------------ running
    def run(self, *, device: str | None = None, overrides: dict | None = None) -> bool:
        if self.data is not None:
            self.data.preview = self._preview_sink
            self._live = None
        return super().run(device=device, overrides=overrides)

    def _preview_sink(self, maps, info) -> None:
        """Called on the worker thread after every batch: throttled copies of the shown view's depth."""
        now = time.monotonic()
        if now - self._last_preview < PREVIEW_INTERVAL_S:
            return
        self._last_preview = now
        v = self._view_for_preview
        for m in maps:
            if m.view == v:
                self.preview_ready.emit(v, np.array(m.depth, dtype=np.float32, copy=True), dict(info))
                return

    @property
    def _view_for_preview(self) -> int:
        return getattr(self, "_preview_view", 0)

    def _on_preview(self, view: int, depth, info) -> None:
        if not self.runner.is_running():
            return
        self._live = (view, depth)
        if self.current_view() == view and self.show_combo.currentText() in ("Depth", "Confidence", "Normal",
                                                                               "Iterations"):
            n = int(np.isfinite(depth).sum())
            self.map_view.show_scalar(depth, title=f"{self.data.scene.names[view]}: growing, {n:,} samples "
                                      f"(batch {info.get('batch', 0)}, {info.get('queued', 0):,} queued)")

    def choose_masks(self, folder: Path | None = None) -> bool:
        """Re-read the scene with the masks in ``folder`` (asked for when None), on the worker."""
        if self.data is None:
            self.host.show_error("No scene", "Open a scene first.")
            return False
        if folder is None:
            d = QFileDialog.getExistingDirectory(self, "Folder of masks (one image per view)",
                                                 str(self._last_dir("last_mask_dir")))
            if not d:
                return False
            folder = Path(d)
            self._remember_dir(folder, "last_mask_dir")
        data = self.data
        return self.load_extra(lambda progress=None: mvs.with_masks(data, folder, progress=progress),
                               f"Reading the masks in {folder.name}")

    def input_files(self) -> list[Path]:
        """The camera file and the scene's images (and masks) beside it: Save result / Export
        never write over one of them (a depth picture saved as view000.png in the scene folder)."""
        from ..io.formats import IMAGE_EXTENSIONS

        files = super().input_files()
        d = self.data
        if d is None or self.input_path is None:
            return files
        names = set(d.scene.names)
        for folder in (Path(self.input_path) if Path(self.input_path).is_dir() else Path(self.input_path).parent,
                       d.mask_dir):
            if folder is not None and Path(folder).is_dir():
                files += [f for f in Path(folder).iterdir()
                          if f.suffix.lower() in IMAGE_EXTENSIONS and (f.stem in names or folder == d.mask_dir)]
        return files

    def command_line(self) -> str:
        """The copied command with the masks chosen with Masks… (--mask-dir): without them the
        CLI reconstructed the whole images, not what is on screen."""
        cmd = super().command_line()
        d = self.data
        if d is not None and d.mask_dir is not None:
            cmd += " " + shlex.join(["--mask-dir", str(Path(d.mask_dir).absolute())])
        return cmd

    def clear_masks(self) -> bool:
        if self.data is None or self.data.mask_dir is None:
            return False
        data = self.data
        return self.load_extra(lambda progress=None: mvs.with_masks(data, None, progress=progress),
                               "Removing the masks")

    def only_this_view(self) -> None:
        if self.data is None:
            return
        self.form.set_value("views", self.data.scene.names[self.current_view()])

    # ------------------------------------------------------------------ drawing
    def current_view(self) -> int:
        return max(self.view_combo.currentIndex(), 0)

    def _threshold(self) -> float:
        return self.threshold.value() / 100.0

    def _redraw(self) -> None:
        """Draw the live side, then (pinned) the pinned side at the same view."""
        self._draw()
        self.draw_pinned_later(self._draw, keep=(self.stats_label, self.threshold_label))

    def _shared_levels(self, v: int, what: str):
        """While a result is pinned, both maps of view ``v`` on one colour scale (equal colours,
        equal depth): the widest of the two ranges; else None (each map its own range)."""
        live = getattr(self, "_live_drawn", None) if self._drawing_pinned else self.result
        pinned = self.pinned[0] if self.pinned is not None else None
        if live is None or pinned is None:
            return None
        maps = [r.view_map(v) for r in (live, pinned)]
        if any(m is None for m in maps):
            return None
        if what == "Confidence":
            return (max(min(r.params["ncc_accept"] for r in (live, pinned)), 0.0), 1.0)
        lo, hi = [], []
        for m in maps:
            d = m.depth[np.isfinite(m.depth)]
            if d.size:
                lo.append(float(np.percentile(d, 1)))
                hi.append(float(np.percentile(d, 99)))
        return (min(lo), max(hi)) if lo else None

    def _draw(self) -> None:
        if not self._drawing_pinned:
            self._live_drawn = self.result
        self._preview_view = self.current_view()
        self.threshold_label.setText(f"{self._threshold():.2f}")
        if self.data is None:
            self.map_view.clear()
            return
        v = self.current_view()
        sc = self.data.scene
        name = sc.names[v]
        what = self.show_combo.currentText()
        m = self.result.view_map(v) if self.result is not None else None
        if m is None or what == "Image":
            img = np.asarray(sc.images[v])
            if img.dtype != np.uint8:
                img = np.clip(img.astype(np.float32) / (img.max() or 1) * 255, 0, 255).astype(np.uint8)
            if img.ndim == 2:
                img = np.repeat(img[..., None], 3, axis=2)
            note = "" if m is not None or what == "Image" else " (not reconstructed yet)"
            self.map_view.show_rgb(img[..., :3], title=f"{name}{note}")
            self.stats_label.setText(NO_VIEW_RESULT if m is None else self._stats_text(m))
            self._redraw_cloud()
            return
        keep = m.conf >= self._threshold()
        if what == "Depth":
            self.map_view.show_scalar(m.depth, mask=keep, levels=self._shared_levels(v, what),
                                      title=f"{name}: depth (z, scene units)")
        elif what == "Confidence":
            c = np.where(np.isfinite(m.depth), m.conf, np.nan)
            self.map_view.show_scalar(c, mask=keep, levels=self._shared_levels(v, what) or
                                      (max(self.result.params["ncc_accept"], 0.0), 1.0),
                                      title=f"{name}: confidence (mean NCC)")
        elif what == "Iterations":
            it = np.where(m.iters > 0, m.iters.astype(np.float32), np.nan)
            self.map_view.show_scalar(it, levels=(0, float(self.result.params["max_iter"])),
                                      title=f"{name}: iterations (tried pixels)")
        else:
            rgb = mvs.normals_rgb(m.normal)
            rgb[~(keep & np.isfinite(m.depth))] = (30, 30, 34)
            self.map_view.show_rgb(rgb, title=f"{name}: normal (camera frame, x y z as R G B)")
        self.stats_label.setText(self._stats_text(m))
        self._redraw_cloud()

    def _stats_text(self, m) -> str:
        sc = self.data.scene
        ok = np.isfinite(m.depth)
        lines = [f"{m.n_samples:,} samples ({100 * ok.mean():.1f} % of the pixels)"]
        if ok.any():
            lines.append(f"depth {np.nanmin(m.depth):.4g} .. {np.nanmax(m.depth):.4g}")
            lines.append(f"mean confidence {m.conf[ok].mean():.3f}")
            lines.append(f"mean iterations {m.iters[ok].mean():.1f}")
        lines.append("neighbours: " + ", ".join(sc.names[n] for n in m.neighbors))
        if self.result is not None:
            st = self.result.result.stats
            rep = self.last_report if self.result is getattr(self, "_live_drawn", None) else None
            took = took_text(rep, self.result.elapsed, prefix="")
            lines.append(f"run: {st['samples']:,} samples in {len(self.result.maps)} view(s), "
                         f"{took} on {self.result.device}")
        return "\n".join(lines)

    def _redraw_cloud(self) -> None:
        if self.data is None:
            self.cloud_view.clear()
            return
        sc = self.data.scene
        v = self.current_view()
        what = self.cloud_combo.currentText()
        cams = sc.cameras if self.frusta_check.isChecked() else []
        pts = np.zeros((0, 3), np.float32)
        cols = np.zeros((0, 3), np.uint8)
        thr = self._threshold()
        if what == "This view's points" and self.result is not None:
            m = self.result.view_map(v)
            if m is not None:
                keep = np.isfinite(m.depth) & (m.conf >= thr)
                ys, xs = np.nonzero(keep)
                pts = sc.cameras[v].backproject(np.stack([xs, ys], 1).astype(float), m.depth[keep]).astype(np.float32)
                img = np.asarray(sc.images[v])
                cols = (img[ys, xs][:, :3] if img.dtype == np.uint8 else
                        np.clip(img[ys, xs][:, :3] * 255, 0, 255)).astype(np.uint8)
        elif what == "Fused cloud" and self.result is not None and self.result.fused is not None:
            f = self.result.fused
            keep = f.confidence >= thr
            pts, cols = f.points[keep], f.colors[keep]
        elif what == "Seeds":
            if self.result is not None:
                pts = np.asarray(self.result.result.seeds, np.float32)
            elif sc.points is not None:
                pts = np.asarray(sc.points, np.float32)
            cols = np.tile(np.array([[220, 60, 40]], np.uint8), (len(pts), 1))
        if not len(pts) and not len(cams):
            self.cloud_view.clear()
            return
        self.cloud_view.set_points(pts, cols, cams, highlight=v, frame_key=(what, v))

    def _on_hover(self, x: int, y: int) -> None:
        if x < 0 or self.data is None:
            self.readout.setText("")
            return
        v = self.current_view()
        m = self.result.view_map(v) if self.result is not None else None
        text = f"pixel ({x}, {y})"
        if m is not None and np.isfinite(m.depth[y, x]):
            n = m.normal[y, x]
            text += (f"\ndepth {m.depth[y, x]:.5g}\nnormal ({n[0]:+.2f}, {n[1]:+.2f}, {n[2]:+.2f})\n"
                     f"confidence {m.conf[y, x]:.3f}\niterations {int(m.iters[y, x])}")
        elif m is not None:
            text += "\nnot reconstructed" + (f" (tried, {int(m.iters[y, x])} iterations)" if m.iters[y, x] else "")
        self.readout.setText(text)

    # ------------------------------------------------------------------ exports
    def export_options(self, export) -> dict:
        if export.key == "depth":
            return {"view": self.current_view()}
        return {}
