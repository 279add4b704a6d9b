"""The 3-D echo motion tab: three linked orthogonal slice views with a shared crosshair, a time
slider with play/pause, window/level, and overlays of the motion (in-plane arrows on a grid,
a colour map of the magnitude, the Jacobian determinant or the divergence, with a colour bar
and an opacity), a hover readout and the result's numbers.

Everything generic (input, parameters, Run/Cancel, errors, exports) is
:class:`~app.tabs.base.ToolTab`'s; the computation is :mod:`app.tools.echo`.
"""

from __future__ import annotations

import html
import logging
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..io import volume_io
from ..tools import echo
from ..ui.widgets import name_html
from .base import ToolTab
from .echo_views import SliceViews

__all__ = ["EchoTab"]

log = logging.getLogger(__name__)

MOTIONS = ("From the reference frame", "To the next frame")
#: the side panel's Colour map and Result sections before a run (not bare headings)
_NO_MAP = "<span style='color:#666'>None yet: the motion's colours show after a run.</span>"
_NO_RESULT = "<span style='color:#666'>No result yet: the motion's numbers show after a run.</span>"
#: the Colour map section with a result drawn without colours (Colour: None)
_MAP_OFF = "<span style='color:#666'>None (Colour: None).</span>"


class EchoTab(ToolTab):
    tool = echo.TOOL
    #: the tool's display Params shown by this tab's widgets (ToolTab.display_bindings)
    display_bindings = {"motion": "motion_combo", "overlay": "overlay_combo", "opacity": ("opacity_slider", 100),
                        "arrows": "arrows_check", "arrow_step": "step_spin", "arrow_scale": "scale_spin"}
    run_label = "Estimate motion"

    def __init__(self, parent: QWidget | None = None, *, host=None):
        self.frame = 0
        self._auto_levels = True
        super().__init__(parent, host=host)
        self.play_timer = QTimer(self)
        self.play_timer.timeout.connect(self._tick)
        self.setting_widgets.update({"overlay": self.overlay_combo, "motion": self.motion_combo,
                                     "opacity": self.opacity_slider, "arrows": self.arrows_check,
                                     "arrow_step": self.step_spin, "fps": self.fps_spin})

    # ------------------------------------------------------------------ building
    def build_view(self) -> QWidget:
        v = SliceViews()
        v.position_changed.connect(lambda *pos, src=v: self._position_changed(src, pos))
        v.hovered.connect(self._on_hover)
        return v

    def _position_changed(self, source: SliceViews, pos) -> None:
        """The crosshair moved in the live or in the pinned views: both show that voxel."""
        for other in (self.view, (self._pinned_slot or {}).get("view")):
            if isinstance(other, SliceViews) and other is not source:
                other.set_position(*pos, emit=False)
        self.redraw()

    def _draw_pinned_side(self) -> None:
        """The pinned side (views swapped in by ToolTab.draw_pinned_later) at the live frame
        and crosshair, so that the two sides compare like with like."""
        live_view = (self._pinned_slot or {}).get("view")
        if isinstance(live_view, SliceViews):
            self.view.set_position(*live_view.pos, emit=False)
        self._draw()

    def build_controls(self) -> list[QWidget]:
        g = QGroupBox("Volumes and time")
        lay = QVBoxLayout(g)
        row = QHBoxLayout()
        self.folder_button = QPushButton("Open folder…")
        self.folder_button.setToolTip("A folder of 3-D frames, a DICOM series, or a folder written by "
                                      "'gpulab echo-synth' (with its ground truth)")
        self.folder_button.clicked.connect(self.open_folder_dialog)
        self.moving_button = QPushButton("Moving volume…")
        self.moving_button.setToolTip("Choose the second volume when a single 3-D volume is open")
        self.moving_button.clicked.connect(lambda: self.choose_moving())
        row.addWidget(self.folder_button)
        row.addWidget(self.moving_button)
        self.folder_button.setText("Folder…")
        self.moving_button.setText("Moving…")
        lay.addLayout(row)
        row = QHBoxLayout()
        self.play_button = QPushButton("▶")
        self.play_button.setObjectName("echo-play")
        self.play_button.setFixedWidth(36)
        self.play_button.setCheckable(True)
        self.play_button.setToolTip("Play / pause the sequence")
        self.play_button.toggled.connect(self.set_playing)
        self.time_slider = QSlider(Qt.Orientation.Horizontal)
        self.time_slider.setObjectName("echo-time")
        self.time_slider.setRange(0, 0)
        self.time_slider.valueChanged.connect(self.set_frame)
        self.frame_label = QLabel("0 of 0–0")
        self.frame_label.setObjectName("echo-frame")
        row.addWidget(self.play_button)
        row.addWidget(self.time_slider, 1)
        row.addWidget(self.frame_label)
        lay.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Speed"))
        self.fps_spin = QSpinBox()
        self.fps_spin.setRange(1, 60)
        self.fps_spin.setValue(8)
        self.fps_spin.setSuffix(" fps")
        self.fps_spin.valueChanged.connect(lambda v: self.play_timer.setInterval(int(1000 / v)))
        row.addWidget(self.fps_spin)
        lay.addLayout(row)

        d = QGroupBox("Display")
        dl = QVBoxLayout(d)
        row = QHBoxLayout()
        row.addWidget(QLabel("Window"))
        self.window_spin = QDoubleSpinBox()
        self.window_spin.setToolTip("Width of the intensity range shown from black to white")
        self.window_spin.setObjectName("echo-window")
        self.window_spin.setRange(1e-3, 1e6)
        self.window_spin.setDecimals(1)
        self.window_spin.setValue(255)
        self.window_spin.valueChanged.connect(self._levels_changed)
        row.addWidget(self.window_spin, 1)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Level"))
        self.level_spin = QDoubleSpinBox()
        self.level_spin.setToolTip("Intensity shown as mid grey")
        self.level_spin.setObjectName("echo-level")
        self.level_spin.setRange(-1e6, 1e6)
        self.level_spin.setDecimals(1)
        self.level_spin.setValue(127.5)
        self.level_spin.valueChanged.connect(self._levels_changed)
        row.addWidget(self.level_spin, 1)
        self.auto_wl = QPushButton("Auto")
        self.auto_wl.setToolTip("Window/level from the frame's 1st to 99.5th percentile")
        self.auto_wl.clicked.connect(self.auto_levels)
        row.addWidget(self.auto_wl)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Motion"))
        self.motion_combo = QComboBox()
        self.motion_combo.setObjectName("echo-motion")
        self.motion_combo.addItems(MOTIONS)
        self.motion_combo.setToolTip("Show the displacement from the reference frame (trajectories) or to the next frame")
        self.motion_combo.currentIndexChanged.connect(lambda *_: self.redraw())
        row.addWidget(self.motion_combo, 1)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Colour"))
        self.overlay_combo = QComboBox()
        self.overlay_combo.setObjectName("echo-overlay")
        self.overlay_combo.addItems(echo.MAP_KINDS)
        self.overlay_combo.setToolTip("Colour map over the slices: motion magnitude (mm), volume change "
                                      "det(I + grad u) or divergence")
        self.overlay_combo.currentIndexChanged.connect(lambda *_: self.redraw())
        row.addWidget(self.overlay_combo, 1)
        dl.addLayout(row)
        self.opacity_slider = QSlider(Qt.Orientation.Horizontal)
        self.opacity_slider.setObjectName("echo-opacity")
        self.opacity_slider.setRange(0, 100)
        self.opacity_slider.setValue(45)
        self.opacity_slider.setToolTip("Opacity of the colour map")
        self.opacity_slider.valueChanged.connect(lambda *_: self.redraw())
        dl.addWidget(QLabel("Opacity"))
        dl.addWidget(self.opacity_slider)
        row = QHBoxLayout()
        self.arrows_check = QCheckBox("Arrows, every")
        self.arrows_check.setChecked(True)
        self.arrows_check.toggled.connect(lambda *_: self.redraw())
        self.step_spin = QSpinBox()
        self.step_spin.setRange(2, 64)
        self.step_spin.setValue(6)
        self.step_spin.setSuffix(" vx")
        self.step_spin.valueChanged.connect(lambda *_: self.redraw())
        row.addWidget(self.arrows_check)
        row.addWidget(self.step_spin)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Scale"))
        self.scale_spin = QDoubleSpinBox()
        self.scale_spin.setRange(0.1, 20.0)
        self.scale_spin.setValue(1.0)
        self.scale_spin.setSingleStep(0.5)
        self.scale_spin.setSuffix(" x")
        self.scale_spin.valueChanged.connect(lambda *_: self.redraw())
        row.addWidget(self.scale_spin)
        self.reset_button = QPushButton("Reset views")
        self.reset_button.clicked.connect(lambda: self.view.reset_views())
        row.addWidget(self.reset_button)
        dl.addLayout(row)
        self._update_time_controls()
        return [g, d]

    def build_side_panel(self) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        self.readout = QLabel("Hover over a view for the voxel, its intensity and its motion; click to move "
                              "the crosshair.")
        self.readout.setObjectName("echo-readout")
        self.readout.setWordWrap(True)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.colorbar = QLabel()
        self.colorbar.setObjectName("echo-colorbar")
        self.colorbar.setVisible(False)   # shown with a colour ramp (no empty gap before a run)
        self.colorbar_label = QLabel(_NO_MAP)
        self.colorbar_label.setObjectName("echo-colorbar-label")
        self.colorbar_label.setWordWrap(True)
        self.result_label = QLabel(_NO_RESULT)
        self.result_label.setObjectName("echo-result")
        self.result_label.setWordWrap(True)
        self.result_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(QLabel("<b>Under the cursor</b>"))
        lay.addWidget(self.readout)
        self.colorbar_title = QLabel("<b>Colour map</b>")
        lay.addWidget(self.colorbar_title)
        lay.addWidget(self.colorbar)
        lay.addWidget(self.colorbar_label)
        # the pinned side keeps its own colour map (or range): its legend, shown only when it
        # differs from the live one (before: the pinned side's colours had no legend)
        self.pinned_colorbar_title = QLabel("<b>Colour map, pinned side</b>")
        self.pinned_colorbar = QLabel()
        self.pinned_colorbar.setObjectName("echo-pinned-colorbar")
        self.pinned_colorbar_label = QLabel("")
        self.pinned_colorbar_label.setObjectName("echo-pinned-colorbar-label")
        self.pinned_colorbar_label.setWordWrap(True)
        for w_ in (self.pinned_colorbar_title, self.pinned_colorbar, self.pinned_colorbar_label):
            w_.setVisible(False)
            lay.addWidget(w_)
        lay.addWidget(QLabel("<b>Result</b>"))
        lay.addWidget(self.result_label)
        lay.addStretch(1)
        w.setMinimumWidth(250)
        return w

    # ------------------------------------------------------------------ input and result
    def describe_input(self, data) -> str:
        Z, Y, X = data.shape
        sp = data.spacing
        lines = [f"<b>{name_html(data.name)}</b>",
                 f"{data.n_frames} frame(s) of {Z} × {Y} × {X} [z, y, x]",
                 f"voxel {sp[0]:.3g} × {sp[1]:.3g} × {sp[2]:.3g} mm, {data.frames.dtype}"]
        if data.n_frames == 2:
            lines.append(f"fixed {name_html(data.names[0])}<br>moving {name_html(data.names[1])}")
        if data.n_frames == 1:
            lines.append("<span style='color:#a15c00'>a single volume: choose the moving volume</span>")
        if data.truth:
            lines.append(f"truth: {len(data.truth)} field(s) ({html.escape(str(data.truth_source))})")
        lines += [f"<span style='color:#a15c00'>⚠ {html.escape(str(w))}</span>" for w in data.warnings]
        return "<br>".join(lines)

    def show_input(self, data) -> None:
        self.set_playing(False)
        self.view.set_volume_geometry(data.shape, data.spacing)
        self.frame = 0
        self._update_time_controls()
        self.auto_levels()
        self.result_label.setText(f"<span style='color:#666'>Press <b>{self.run_label}</b>.</span>")
        self.redraw()

    def clear_result(self) -> None:
        self.view.clear_overlays()
        self.result_label.setText(_NO_RESULT)
        self.form.clear_chosen()
        self.colorbar.clear()
        self.colorbar.setVisible(False)
        self._live_ramp = None
        self.colorbar_label.setText(_NO_MAP)
        self._live_legend = None
        self._show_pinned_legend("", None, None, None)

    def show_result(self, result) -> None:
        self._magnitude_max = None
        if result.is_pair:
            self.motion_combo.setCurrentIndex(1 if self.frame == 0 else 0)
        elif self.motion_kind() == "trajectory" and self.frame == result.reference:
            # the reference frame has no motion from itself: show the frame of largest motion
            self.set_playing(False)
            self.frame = self.largest_motion_frame(result)
            self._update_time_controls()
        lines = echo.summary(result)
        self.form.show_chosen({"levels": self.levels_used(result)})  # "auto (2)"
        self.result_label.setText("<br>".join(ln.strip().replace("->", "→") for ln in lines))
        self.redraw()

    @staticmethod
    def levels_used(result) -> int:
        """The pyramid levels the run used (what 'auto' chose)."""
        from gpu_kernels.echo import motion as _motion

        d, p = result.data, result.params
        return len(_motion.pyramid_shapes(d.shape, p["levels"] or _motion.auto_levels(d.shape, d.spacing), d.spacing))

    @staticmethod
    def largest_motion_frame(result) -> int:
        """The frame whose motion from the reference is largest (99th percentile), else the
        frame after the reference."""
        st = result.stats or {}
        if "traj_frame" in st and st["traj_frame"] != result.reference:
            return int(st["traj_frame"])
        T = result.data.n_frames
        return (result.reference + 1) % T if T > 1 else 0

    def magnitude_range(self) -> tuple[float, float]:
        """The magnitude colour bar's range (mm): the same for every frame and slice of a result,
        the 99th percentile of the largest motion shown (from the reference, or frame to frame)."""
        res = self.result
        key = self.motion_kind()
        cache = getattr(self, "_magnitude_max", None)
        if cache is None or cache[0] is not res or cache[1] != key:
            st = res.stats or {}
            hi = st.get("traj_p99_mm") if key == "trajectory" else st.get("p99_mm")
            if not hi:  # two frames, or no statistics: from the field itself, every second voxel
                sp = np.asarray(res.data.spacing, np.float32).reshape(3, 1, 1, 1)
                fields = [res.field(t, key)[:, ::2, ::2, ::2].astype(np.float32) for t in range(res.data.n_frames)]
                hi = max(float(np.percentile(np.sqrt(((f * sp) ** 2).sum(axis=0)), 99)) for f in fields)
            self._magnitude_max = cache = (res, key, max(float(hi), 1e-3))
        return 0.0, cache[2]

    # ------------------------------------------------------------------ time
    def _update_time_controls(self) -> None:
        T = self.data.n_frames if self.data is not None else 1
        self.time_slider.blockSignals(True)
        self.time_slider.setRange(0, max(T - 1, 0))
        self.time_slider.setValue(min(self.frame, T - 1))
        self.time_slider.blockSignals(False)
        self.play_button.setEnabled(T > 1)
        self.frame_label.setText(self.frame_text(self.frame, T))
        self.moving_button.setEnabled(self.data is not None and T == 1)

    @staticmethod
    def frame_text(t: int, T: int) -> str:
        """Frames are counted from 0 everywhere (the Reference box, the CLI, titles and summary)."""
        return f"{t} of 0–{max(T - 1, 0)}"

    def set_frame(self, t: int) -> None:
        if self.data is None:
            return
        self.frame = int(np.clip(t, 0, self.data.n_frames - 1))
        if self.time_slider.value() != self.frame:
            self.time_slider.blockSignals(True)
            self.time_slider.setValue(self.frame)
            self.time_slider.blockSignals(False)
        self.frame_label.setText(self.frame_text(self.frame, self.data.n_frames))
        self.redraw()

    def set_playing(self, on: bool) -> None:
        if self.play_button.isChecked() != bool(on):
            self.play_button.blockSignals(True)
            self.play_button.setChecked(bool(on))
            self.play_button.blockSignals(False)
        if on and self.data is not None and self.data.n_frames > 1:
            self.play_timer.start(int(1000 / self.fps_spin.value()))
            self.play_button.setText("⏸")
        else:
            self.play_timer.stop()
            self.play_button.setText("▶")

    def _tick(self) -> None:
        if self.data is None:
            self.set_playing(False)
            return
        self.set_frame((self.frame + 1) % self.data.n_frames)

    # ------------------------------------------------------------------ window / level
    def auto_levels(self) -> None:
        if self.data is None:
            return
        v = self.data.frames[self.frame][::2, ::2, ::2]
        lo, hi = np.percentile(v, (1, 99.5)) if v.size else (0.0, 1.0)
        hi = hi if hi > lo else lo + 1
        self.window_spin.blockSignals(True)
        self.level_spin.blockSignals(True)
        self.window_spin.setValue(float(hi - lo))
        self.level_spin.setValue(float((hi + lo) / 2))
        self.window_spin.blockSignals(False)
        self.level_spin.blockSignals(False)
        self._levels_changed()

    def _levels_changed(self, *_):
        w, c = self.window_spin.value(), self.level_spin.value()
        self.view.set_levels(c - w / 2, c + w / 2)

    def levels(self) -> tuple[float, float]:
        w, c = self.window_spin.value(), self.level_spin.value()
        return c - w / 2, c + w / 2

    # ------------------------------------------------------------------ drawing
    def motion_kind(self) -> str:
        return "pairwise" if self.motion_combo.currentIndex() == 1 else "trajectory"

    def current_field(self):
        res = self.result
        if res is None:
            return None
        return res.field(self.frame, self.motion_kind())

    def redraw(self) -> None:
        """Draw the live side now, and the pinned side (at the same frame and crosshair) right
        after, from the event loop: never inside a widget's own signal, whose value the pinned
        drawing borrows for a moment."""
        if self.data is None:
            return
        self._draw()
        self.draw_pinned_later(self._draw_pinned_side, keep=(self.colorbar, self.colorbar_label))

    def _draw(self) -> None:
        d = self.data
        if d is None:
            return
        v = self.view
        # the grey slices and the titles only where they changed: a live edit redraws the motion
        # of the same frame through the same crosshair (each slice set again is converted and
        # painted again; the titles are laid out again)
        grey = (d.frames, self.frame, tuple(v.pos), self.levels(), v.shape, v.spacing)
        last = getattr(v, "_echo_grey", None)
        if last is None or last[0] is not d.frames or last[1:] != grey[1:]:
            v.show_volume(d.frames[self.frame], levels=grey[3])
            v._echo_grey = grey
        titles = []
        for p, name in zip(v.planes, ("Axial", "Coronal", "Sagittal"), strict=True):
            at = f"{'zyx'[p.normal]} = {v.pos[p.normal]}"
            titles.append((f"{name}, {at} (frame {self.frame})", f"{name}, {at}", at))
        if getattr(v, "_echo_titles", None) != titles:
            v.set_titles(titles)   # the longest that fits its column (a pinned half at 800 px)
            v._echo_titles = titles
        u = self.current_field()
        if u is None:
            self.view.clear_overlays()
            return
        kind = self.overlay_combo.currentText()
        opacity = self.opacity_slider.value() / 100
        vmin = vmax = None
        for i, p in enumerate(self.view.planes):
            if kind in echo.COLORMAPS:
                m = echo.slice_maps(u, p.normal, self.view.pos[p.normal], kind, d.spacing)
                if vmin is None:
                    vmin, vmax = self.magnitude_range() if kind == "Magnitude" else echo.map_range(kind, m)
                self.view.show_overlay(i, echo.colorize(m, kind, vmin, vmax), opacity)
            else:
                self.view.show_overlay(i, None, 0)
            if self.arrows_check.isChecked():
                sl = [slice(None)] * 4
                sl[1 + p.normal] = self.view.pos[p.normal]
                w = u[tuple(sl)].astype(np.float32)
                self.view.show_arrows(i, w[p.col_ax], w[p.row_ax], self.step_spin.value(), self.scale_spin.value())
            else:
                self.view.show_arrows(i, None, None, 1)
        self._show_colorbar(kind, vmin, vmax)

    def _show_colorbar(self, kind: str, vmin, vmax) -> None:
        """The legend of the colours drawn: the live side's in the side panel; drawing the
        pinned side, its own legend below it when its colour map or range differs."""
        text = self._legend_text(kind, vmin, vmax) if kind in echo.COLORMAPS and vmin is not None else None
        if self._drawing_pinned:
            self._show_pinned_legend(kind, vmin, vmax, text)
            return
        self._live_legend = text
        if self.pinned is None:
            self._show_pinned_legend(kind, vmin, vmax, None)
        if text is None:
            self.colorbar.clear()
            self.colorbar.setVisible(False)
            self._live_ramp = None
            self.colorbar_label.setText(_MAP_OFF if kind not in echo.COLORMAPS else _NO_MAP)
            return
        ramp = self._ramp_rgb(kind, vmin, vmax)
        if getattr(self, "_live_ramp", None) is None or not np.array_equal(self._live_ramp, ramp):
            self.colorbar.setPixmap(self._pixmap(ramp))   # a new pixmap lays the side panel out again
            self.colorbar.setVisible(True)
            self._live_ramp = ramp
        self.colorbar_label.setText(text)

    def _show_pinned_legend(self, kind: str, vmin, vmax, text: str | None) -> None:
        show = text is not None and text != getattr(self, "_live_legend", None)
        if show:
            self.pinned_colorbar.setPixmap(self._ramp(kind, vmin, vmax))
            self.pinned_colorbar_label.setText(text)
        for w in (self.pinned_colorbar_title, self.pinned_colorbar, self.pinned_colorbar_label):
            w.setVisible(show)
        live = "<b>Colour map, live side</b>" + ("" if getattr(self, "_live_legend", None) else ": none")
        self.colorbar_title.setText(live if show else "<b>Colour map</b>")

    @classmethod
    def _ramp(cls, kind: str, vmin: float, vmax: float) -> QPixmap:
        return cls._pixmap(cls._ramp_rgb(kind, vmin, vmax))

    @staticmethod
    def _ramp_rgb(kind: str, vmin: float, vmax: float) -> np.ndarray:
        ramp = np.linspace(vmin, vmax, 200, dtype=np.float32)[None, :].repeat(14, axis=0)
        return np.ascontiguousarray(echo.colorize(ramp, kind, vmin, vmax))

    @staticmethod
    def _pixmap(rgb: np.ndarray) -> QPixmap:
        img = QImage(rgb.data, rgb.shape[1], rgb.shape[0], 3 * rgb.shape[1], QImage.Format.Format_RGB888).copy()
        return QPixmap.fromImage(img)

    def _legend_text(self, kind: str, vmin: float, vmax: float) -> str:
        unit = " mm" if kind == "Magnitude" else ""
        what = {"Magnitude": "motion magnitude", "Jacobian determinant": "det(I + ∇u): <1 shrinks, >1 grows",
                "Divergence": "div u"}[kind]
        if kind == "Magnitude":
            what += (f" from frame {self.result.reference}" if self.motion_kind() == "trajectory"
                     else " to the next frame") + " (99th percentile of the sequence at full colour)"
            if self.motion_kind() == "trajectory" and self.frame == self.result.reference:
                what += "; this is the reference frame: no motion from itself"
        return f"{vmin:.3g}{unit} … {vmax:.3g}{unit}: {what}"

    def _on_hover(self, z: int, y: int, x: int) -> None:
        d = self.data
        if d is None or z < 0:
            return
        v = d.frames[self.frame][z, y, x]
        text = f"z {z}, y {y}, x {x}: intensity {float(v):.4g}"
        u = self.current_field()
        if u is not None:
            w = u[:, z, y, x].astype(np.float64)
            mm = w * np.asarray(d.spacing)
            text += (f"<br>motion ({'from frame ' + str(self.result.reference) if self.motion_kind() == 'trajectory' else 'to the next frame'}):"
                     f"<br>u = ({w[0]:+.2f}, {w[1]:+.2f}, {w[2]:+.2f}) voxels [z, y, x]"
                     f"<br>|u| = {np.linalg.norm(mm):.2f} mm")
            if (0, 1) in d.truth and self.result.is_pair:
                g = d.truth[(0, 1)][:, z, y, x]
                text += f"<br>truth ({g[0]:+.2f}, {g[1]:+.2f}, {g[2]:+.2f}), error {np.linalg.norm(w - g):.3f} voxels"
        self.readout.setText(text)

    # ------------------------------------------------------------------ extra inputs
    def open_folder_dialog(self) -> None:
        d = QFileDialog.getExistingDirectory(self, "Open a folder of volumes", str(self._last_dir()))
        if d:
            self._remember_dir(Path(d).parent)
            self.open_file(Path(d))

    def choose_moving(self, path: Path | None = None) -> bool:
        if self.data is None or self.data.n_frames != 1:
            self.host.show_error("No single volume", "Open the fixed volume first (a single 3-D volume).")
            return False
        if path is None:
            exts = " ".join(f"*{e}" for e in volume_io.VOLUME_EXTENSIONS)
            path = self.pick_file("Moving volume", f"Volumes ({exts})")
            if path is None:
                return False
        fixed = self.data.path
        self._moving_path = Path(path)
        return self.load_extra(lambda progress=None: echo.load_pair(fixed, path, progress=progress),
                               f"Opening {path.name}")

    def open_file(self, path) -> bool:
        self._moving_path = None
        return super().open_file(path)

    def input_files(self) -> list[Path]:
        """The fixed volume, the moving one (chosen, or found beside it) and every named frame
        of a folder: Save result / Export never writes over one of them."""
        files = super().input_files()
        moving = getattr(self, "_moving_path", None)
        if moving is not None:
            files.append(moving)
        d = self.data
        if d is not None and self.input_path is not None:
            folder = Path(self.input_path) if Path(self.input_path).is_dir() else Path(self.input_path).parent
            files += [folder / n for n in getattr(d, "names", ()) if n]
        return files

    def command_line(self) -> str:
        """The ``gpulab echo`` command of what is on screen: with a moving volume chosen with
        Moving volume…, that volume as MOVING (the command named the fixed one alone, and the CLI
        refused it as a single 3-D volume)."""
        d, moving = self.data, getattr(self, "_moving_path", None)
        if d is None or self.input_path is None or moving is None or d.n_frames != 2 \
                or d.names[1] != moving.name:
            return super().command_line()
        inputs = [str(Path(self.input_path).absolute()), str(moving.absolute())]
        return self.tool.command_line(inputs, self.shown_params(), device=self.host.device_spec())

    def export_options(self, export) -> dict:
        if export.key == "slices":
            return {"frame": self.frame, "center": tuple(self.view.pos), "kind": self.overlay_combo.currentText(),
                    "motion": self.motion_kind(), "opacity": self.opacity_slider.value() / 100,
                    "arrows": self.arrows_check.isChecked(), "step": self.step_spin.value()}
        return {}

    def unpin(self) -> None:
        super().unpin()
        self._show_pinned_legend("", None, None, None)

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        self.play_timer.stop()
        return super().shutdown(timeout_ms)


