"""The Optical flow tab: the two frames side by side, the flow as the colour wheel or as arrows
over the first frame, the quality map as a grey overlay, the warped second frame and the
difference image, a hover readout of u, v and quality, pair stepping through a video or a frame
folder, a second-frame / ground-truth / mask picker, and the metrics against a ground truth.

Everything generic (input, parameters, Run/Cancel, errors, exports) is
:class:`~app.tabs.base.ToolTab`'s; the computation is :mod:`app.tools.flow`.
"""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ..io import image_io
from ..tools import flow
from ..tools.stages import took_text
from ..ui.widgets import ColorBar, grey_lut, hex_color, name_html
from .base import PendingJob, ToolTab
from .flow_view import FAILED_RGB, OCCLUDED_RGB, FlowView, FlowWheel


def _hex(rgb) -> str:
    return hex_color(rgb)

__all__ = ["FlowTab"]

log = logging.getLogger(__name__)

#: the side panel's Result section before a run (and after the input changes)
_NO_RESULT = "<span style='color:#666'>No result yet: the method, its time and the flow's figures show after a run.</span>"

#: the warning that marks a lone first frame waiting for its second (FlowData.warnings)
AWAITING_SECOND = "no second frame yet: choose it with Second frame…"

RIGHT_VIEWS = ("Second frame", "Second frame warped by the flow", "Difference |frame 1 - warped frame 2|",
               "Flow (colour wheel)", "Quality map", "Ground truth (colour wheel)", "Endpoint error")
FLOW_STYLES = ("Colour wheel", "Arrows", "None")


def _slider(value: int, tip: str) -> QSlider:
    s = QSlider(Qt.Orientation.Horizontal)
    s.setRange(0, 100)
    s.setValue(value)
    s.setToolTip(tip)
    return s


class FlowTab(ToolTab):
    tool = flow.TOOL
    #: the tool's display Params shown by this tab's widgets (ToolTab.display_bindings)
    display_bindings = {"flow_style": "style_combo", "flow_opacity": ("flow_opacity", 100),
                        "quality_overlay": "quality_overlay", "quality_opacity": ("quality_opacity", 100),
                        "hide_below": "threshold", "arrow_spacing": "spacing", "max_flow": "max_flow",
                        "right_view": "right_combo"}
    run_label = "Compute flow"

    # ------------------------------------------------------------------ building
    def build_view(self) -> QWidget:
        v = FlowView()
        v.hovered.connect(self._on_hover)
        return v

    def build_controls(self) -> list[QWidget]:
        # frames: second frame, ground truth, mask, pair stepping
        g = QGroupBox("Frames and extras")
        lay = QVBoxLayout(g)
        row = QHBoxLayout()
        self.second_button = QPushButton("Second frame…")
        self.second_button.setToolTip("Choose the second image of the pair (default: the next image in the folder)")
        self.second_button.clicked.connect(self.choose_second)
        self.gt_button = QPushButton("Ground truth…")
        self.gt_button.setToolTip("Load a ground-truth flow (.flo or KITTI .png): the metrics show after a run")
        self.gt_button.clicked.connect(self.choose_ground_truth)
        row.addWidget(self.second_button)
        row.addWidget(self.gt_button)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.mask_button = QPushButton("Mask…")
        self.mask_button.setToolTip("A region-of-interest image: pixels where it is 0 (or transparent) neither "
                                    "contribute nor receive flow")
        self.mask_button.clicked.connect(self.choose_mask)
        self.clear_mask_button = QPushButton("No mask")
        self.clear_mask_button.clicked.connect(self.clear_mask)
        row.addWidget(self.mask_button)
        row.addWidget(self.clear_mask_button)
        lay.addLayout(row)
        row = QHBoxLayout()
        self.prev_button = QPushButton("◀")
        self.prev_button.setFixedWidth(36)
        self.prev_button.setToolTip("Previous pair of the video / folder (then computes its flow if a result was shown)")
        self.prev_button.clicked.connect(lambda: self.step_pair(-1))
        self.pair_spin = QSpinBox()
        self.pair_spin.setObjectName("flow-pair")
        self.pair_spin.setPrefix("pair ")
        self.pair_spin.setRange(1, 1)
        self.pair_spin.setKeyboardTracking(False)
        self.pair_spin.valueChanged.connect(lambda v: self.go_to_pair(v - 1))
        self.next_button = QPushButton("▶")
        self.next_button.setFixedWidth(36)
        self.next_button.setToolTip("Next pair of the video / folder")
        self.next_button.clicked.connect(lambda: self.step_pair(+1))
        row.addWidget(self.prev_button)
        row.addWidget(self.pair_spin, 1)
        row.addWidget(self.next_button)
        lay.addLayout(row)

        # display
        d = QGroupBox("Display")
        dl = QVBoxLayout(d)
        row = QHBoxLayout()
        row.addWidget(QLabel("Flow on frame 1:"))
        self.style_combo = QComboBox()
        self.style_combo.setObjectName("flow-style")
        self.style_combo.addItems(FLOW_STYLES)
        self.style_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.style_combo.setMinimumContentsLength(8)
        self.style_combo.currentIndexChanged.connect(self._redraw)
        row.addWidget(self.style_combo, 1)
        dl.addLayout(row)
        self.flow_opacity = _slider(70, "Opacity of the colour-coded flow over the first frame")
        self.flow_opacity.valueChanged.connect(self._redraw)
        dl.addWidget(QLabel("Flow opacity"))
        dl.addWidget(self.flow_opacity)
        self.quality_overlay = QCheckBox("Quality as a grey overlay")
        self.quality_overlay.toggled.connect(self._redraw)
        dl.addWidget(self.quality_overlay)
        self.quality_opacity = _slider(60, "Opacity of the quality overlay (dark = low quality)")
        self.quality_opacity.valueChanged.connect(self._redraw)
        self.quality_opacity_label = QLabel("Quality overlay opacity")   # the flow slider has its label too
        dl.addWidget(self.quality_opacity_label)
        dl.addWidget(self.quality_opacity)
        row = QHBoxLayout()
        row.addWidget(QLabel("Hide below quality"))
        self.threshold = QDoubleSpinBox()
        self.threshold.setObjectName("flow-threshold")
        self.threshold.setRange(0.0, 1.0)
        self.threshold.setSingleStep(0.05)
        self.threshold.setDecimals(2)
        self.threshold.setToolTip("Vectors (colour and arrows) with a lower quality are hidden")
        self.threshold.valueChanged.connect(self._redraw)
        row.addWidget(self.threshold)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Arrow spacing"))
        self.spacing = QSpinBox()
        self.spacing.setRange(4, 128)
        self.spacing.setValue(16)
        self.spacing.setSuffix(" px")
        self.spacing.valueChanged.connect(self._redraw)
        row.addWidget(self.spacing)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Colour radius"))
        self.max_flow = QDoubleSpinBox()
        self.max_flow.setObjectName("flow-max")
        self.max_flow.setRange(0.0, 10000.0)
        self.max_flow.setSpecialValueText("largest")
        self.max_flow.setSuffix(" px")
        self.max_flow.setToolTip("The magnitude shown at full colour ('largest': the largest in the flow)")
        self.max_flow.valueChanged.connect(self._redraw)
        row.addWidget(self.max_flow)
        dl.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Right view:"))
        self.right_combo = QComboBox()
        self.right_combo.setObjectName("flow-right-view")
        self.right_combo.addItems(RIGHT_VIEWS)
        self.right_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.right_combo.setMinimumContentsLength(10)
        self.right_combo.currentIndexChanged.connect(self._redraw)
        row.addWidget(self.right_combo, 1)
        dl.addLayout(row)
        for w, key in ((self.style_combo, "style"), (self.flow_opacity, "flow_opacity"),
                       (self.quality_opacity, "quality_opacity"), (self.spacing, "spacing"),
                       (self.right_combo, "right_view")):
            self.setting_widgets[key] = w
        self._update_pair_controls()
        return [g, d]

    def build_side_panel(self) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        self.readout = QLabel("Hover over an image for u, v and the quality.")
        self.readout.setObjectName("flow-readout")
        self.readout.setWordWrap(True)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.metrics_label = QLabel("")
        self.metrics_label.setObjectName("flow-metrics")
        self.metrics_label.setWordWrap(True)
        self.metrics_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stats_label = QLabel(_NO_RESULT)  # not a bare "Result" heading before the first run
        self.stats_label.setWordWrap(True)
        lay.addWidget(QLabel("<b>Under the cursor</b>"))
        lay.addWidget(self.readout)
        lay.addWidget(QLabel("<b>Result</b>"))
        lay.addWidget(self.stats_label)
        lay.addWidget(self.metrics_label)
        self.legend_title = QLabel("<b>Legend</b>")
        lay.addWidget(self.legend_title)
        self.wheel = FlowWheel()
        lay.addWidget(self.wheel)
        self.quality_legend = QLabel(
            "<span style='background:#777'>&nbsp;&nbsp;&nbsp;</span> darker: lower quality<br>"
            f"<span style='background:{_hex(OCCLUDED_RGB)}'>&nbsp;&nbsp;&nbsp;</span> occluded / leaves the frame<br>"
            f"<span style='background:{_hex(FAILED_RGB)}'>&nbsp;&nbsp;&nbsp;</span> matching failed (quality &lt; 0.25)")
        self.quality_legend.setObjectName("flow-quality-legend")
        lay.addWidget(self.quality_legend)
        self.right_bar = ColorBar()
        self.right_bar.setObjectName("flow-right-colorbar")
        lay.addWidget(self.right_bar)
        lay.addStretch(1)
        self._update_legends()
        return w

    def _update_legends(self) -> None:
        """Show the legend of what is on screen: the wheel (with its pixel scale) only while a
        colour-wheel picture is shown, the colour bar of the right pane's map, the overlay's key."""
        res = self.result
        which = self.right_combo.currentText()
        has_gt = self.data is not None and self.data.gt is not None
        wheel_left = res is not None and self.style_combo.currentText() == "Colour wheel"
        wheel_right = (which.startswith("Flow") and res is not None) or (which.startswith("Ground truth") and has_gt)
        # the pinned side keeps its own display: its colour-wheel picture needs the legend too (with
        # the live side in arrows the legend was gone while the pinned side was still in colours)
        shown = self.pinned[1] if self.pinned is not None else {}
        wheel_pinned = self.pinned is not None and (
            shown.get("flow_style") == "Colour wheel"
            or str(shown.get("right_view", "")).startswith("Flow")
            or (str(shown.get("right_view", "")).startswith("Ground truth") and has_gt))
        if wheel_left or wheel_right or wheel_pinned:
            r = self._max_flow()
            note = ""
            if r is not None and self.max_flow.value() <= 0:
                note = "largest of pinned and live"
            if r is None:
                mags = []
                if res is not None:
                    mags.append(self.view.picture(res).radius())   # the radius the colours use
                if which.startswith("Ground truth") and has_gt:
                    gt, valid = self.data.gt
                    mags.append(float(np.hypot(gt[..., 0], gt[..., 1])[valid].max(initial=0.0)))
                r, note = max(mags + [1e-3]), "largest"
            self.wheel.set_radius(r, note)
        self.wheel.setVisible(wheel_left or wheel_right or wheel_pinned)
        self.quality_legend.setVisible(res is not None and self.quality_overlay.isChecked())
        bar = None
        if res is not None:
            if which == "Quality map":
                bar = (grey_lut(), 0.0, 1.0, "", "quality (black: unreliable)")
            elif which == "Endpoint error" and has_gt:
                bar = (grey_lut(), 0.0, 3.0, "px", "endpoint error (white: 3 px or more)")
            elif which.startswith("Difference"):
                bar = (grey_lut(), 0.0, 1.0, "", "|frame 1 - warped frame 2| (intensity)")
        if bar is None:
            self.right_bar.clear_map()
            self.right_bar.hide()
        else:
            lut, lo, hi, unit, cap = bar
            self.right_bar.set_map(lut, lo, hi, unit=unit, caption=cap)
        self.legend_title.setVisible(self.wheel.isVisibleTo(self) or self.right_bar.isVisibleTo(self)
                                     or self.quality_legend.isVisibleTo(self))

    # ------------------------------------------------------------------ a lone image
    def load_input(self, path: Path, *, progress=None):
        """A pair, a video or a frame folder; or a lone image (nothing to pair it with in its
        folder, or a partner of another size): opened as the first frame, and the tab asks for
        the second (worker thread)."""
        from gpu_kernels.errors import InputError

        try:
            return flow.load(path, progress=progress)
        except InputError:
            path = Path(path)
            if path.is_dir() or path.suffix.lower() not in image_io.IMAGE_EXTENSIONS:
                raise
            img = image_io.read_image(path)  # an unreadable image raises its own clear error
            return flow.FlowData(img, img, path.name, "?", path, warnings=[AWAITING_SECOND])

    def awaiting_second(self) -> bool:
        return self.data is not None and AWAITING_SECOND in self.data.warnings

    def run(self, *, device: str | None = None, overrides: dict | None = None) -> bool:
        if self.awaiting_second():
            self._set_status("Choose the second frame first (Second frame…).")
            self.choose_second()
            return False
        return super().run(device=device, overrides=overrides)

    # ------------------------------------------------------------------ input and result
    def describe_input(self, data) -> str:
        H, W = data.shape
        esc = name_html    # a file name is text ("a<b>.png" is no markup) that may wrap
        if AWAITING_SECOND in data.warnings:
            return (f"<b>{esc(data.name1)}</b>, {W} x {H}<br><span style='color:#a15c00'>the first frame: choose the "
                    "second with <b>Second frame…</b></span>")
        lines = [f"<b>{esc(data.name1)}</b> → <b>{esc(data.name2)}</b>, {W} x {H}"]
        if data.sequence is not None:
            lines.append(f"pair {data.index + 1} of {data.n_pairs} of {esc(data.path.name)}")
        if data.gt is not None:
            lines.append(f"ground truth: {esc(data.gt_path.name) if data.gt_path else 'yes'}")
        if data.mask is not None:
            lines.append(f"mask: {esc(data.mask_path.name) if data.mask_path else 'yes'} "
                         f"({100 * data.mask.mean():.0f} % of the pixels)")
        return "<br>".join(lines)

    def show_input(self, data) -> None:
        self.view.set_frames(data.img1, data.img2)
        self._update_pair_controls()
        if AWAITING_SECOND in data.warnings:
            self.second_button.setFocus()
            QTimer.singleShot(0, self, lambda: self._set_status(
                f"Opened {data.name1} as the first frame: choose the second with Second frame…"))
        self.metrics_label.setText("Ground truth loaded: the metrics show after a run." if data.gt is not None else "")
        self.stats_label.setText(_NO_RESULT)
        self._redraw()

    def clear_result(self) -> None:
        self.view.clear_result()
        self.form.clear_chosen()
        self.metrics_label.setText("")
        self.stats_label.setText(_NO_RESULT)

    def show_result(self, result) -> None:
        st = self.view.picture(result).stats()   # once per result, on the device that computed it
        report = self.last_report if result is self.result else None
        took = took_text(report, result.elapsed)   # not "in 0 ms" for a result from the cache
        self.stats_label.setText(
            f"{result.params['method']} on {result.device} {took}<br>"
            f"flow: mean {st['mean_mag']:.2f} px, largest {st['max_mag']:.2f} px<br>"
            f"quality: mean {st['mean_quality']:.2f}")
        fp = dict(getattr(result.flow, "params", {}) or {})
        if result.params["method"] == "search":     # the form's iters / warps are the TV-L1's there
            fp["iters"], w = fp.get("tv_iters"), fp.get("warps")
            fp["warps"] = w[0] if isinstance(w, tuple) and len(w) == 1 else None
        self.form.show_chosen({k: fp[k] for k in ("levels", "iters", "warps") if isinstance(fp.get(k), int)})
        m = result.metrics
        if m is not None:
            self.metrics_label.setText(
                "<b>Against the ground truth</b><br>"
                f"AEE {m['aee']:.3f} px<br>AAE {m['aae']:.2f}°<br>EPE &gt; 1 px: {m['r1']:.1f} %<br>"
                f"EPE &gt; 3 px: {m['r3']:.1f} %")
        else:
            self.metrics_label.setText("No ground truth (load one to see the errors).")
        self._redraw()

    # ------------------------------------------------------------------ drawing
    def _max_flow(self) -> float | None:
        """The colour radius: the box's value; 'largest' is None (each result its own largest),
        except while a result is pinned: then both sides are coloured on one scale, the larger of
        their largest magnitudes, so that equal colours mean equal motion (one legend for both)."""
        v = self.max_flow.value()
        if v > 0:
            return v
        live = getattr(self, "_live_shown", None) if self._drawing_pinned else self.result
        pair = (live, self.pinned[0] if self.pinned is not None else None)
        if pair[0] is None or pair[1] is None:
            return None
        return max(self._radius_of(r) for r in pair)

    def unpin(self) -> None:
        was_pinned = self.pinned is not None
        super().unpin()
        self._pinned_radius = None
        if was_pinned and self.result is not None:
            self._redraw()      # the live side back on its own 'largest' scale

    def _radius_of(self, res) -> float:
        """The largest magnitude of ``res`` (its automatic colour radius), once per result."""
        radii = getattr(self, "_radii", [])
        for r, rad in radii:
            if r is res:
                return rad
        rad = float(self.view.picture(res).radius())
        self._radii = [(res, rad)] + radii[:2]
        return rad

    def _redraw(self, *_):
        if self.data is None:
            return
        if not self._drawing_pinned:
            self._live_shown = self.result
        res = self.result
        self.view.show_left(
            self.data.img1, res, style=self.style_combo.currentText(), flow_opacity=self.flow_opacity.value() / 100,
            quality_overlay=self.quality_overlay.isChecked(), quality_opacity=self.quality_opacity.value() / 100,
            threshold=self.threshold.value(), spacing=self.spacing.value(), max_flow=self._max_flow())
        which = self.right_combo.currentText()
        message = self.right_message(which)
        title = which if res is not None or "Ground" in which else "Second frame"
        if message:
            self.view.show_right(None, title=f"{which}: {message}", message=message)
        else:
            self.view.show_right(self.right_image(which), title=title)
        if self._drawing_pinned:          # the side panel's legends describe the live result
            self._pinned_radius = self._max_flow()
            QTimer.singleShot(0, self, self._refresh_swipe)
            return
        self._update_legends()
        if self.pinned is not None and getattr(self, "_pinned_radius", None) != self._max_flow():
            self.draw_pinned_later(self._redraw)   # the shared colour scale changed: recolour the pinned side

    def right_message(self, which: str) -> str:
        """What the right pane says instead of a picture it cannot show ("no ground truth")."""
        if self.awaiting_second() and which in ("Second frame", RIGHT_VIEWS[0]):
            return "choose the second frame (Second frame…)"
        if self.data is None or self.data.gt is not None:
            return ""
        if which == "Ground truth (colour wheel)" or (which == "Endpoint error" and self.result is not None):
            return "no ground truth (load one with Ground truth…)"
        return ""

    def right_image(self, which: str):
        """The picture the right view shows (RGB uint8 or grey float in 0..1)."""
        from gpu_kernels.flow import flow_to_color

        d, res = self.data, self.result
        if which == "Second frame" or (res is None and which != "Ground truth (colour wheel)"):
            return d.img2
        if which == "Ground truth (colour wheel)":
            if d.gt is None:  # the pane says so (right_message)
                return np.full(d.shape, 0.92, np.float32)
            gt, valid = d.gt
            return flow_to_color(gt[..., 0], gt[..., 1], max_flow=self._max_flow(), valid=valid)
        if which.startswith("Second frame warped"):
            return flow.warped_second(res)
        if which.startswith("Difference"):
            w = flow.warped_second(res)
            a = np.asarray(d.img1, np.float32)
            a = a / (255.0 if d.img1.dtype == np.uint8 else 65535.0 if d.img1.dtype == np.uint16 else 1.0)
            diff = np.abs(a - w)
            return diff.mean(axis=2) if diff.ndim == 3 else diff
        if which.startswith("Flow"):
            return self.view.picture(res).rgb(max_flow=self._max_flow())
        if which == "Quality map":
            return res.quality
        if which == "Endpoint error":
            if d.gt is None:  # the pane says so (right_message); a blank grey picture
                return np.full(d.shape, 0.92, np.float32)
            gt, valid = d.gt
            e = np.hypot(res.u - gt[..., 0], res.v - gt[..., 1])
            return np.where(valid, np.clip(e / 3.0, 0, 1), 0).astype(np.float32)   # 3 px = white
        return d.img2

    def _on_hover(self, x: int, y: int) -> None:
        d = self.data
        if d is None or not (0 <= y < d.shape[0] and 0 <= x < d.shape[1]):
            return
        text = f"x {x}, y {y}"
        res = self.result
        if res is not None:
            text += f"<br>u {res.u[y, x]:+.3f}, v {res.v[y, x]:+.3f} px<br>quality {res.quality[y, x]:.2f}"
        if d.gt is not None and d.gt[1][y, x]:
            g = d.gt[0][y, x]
            text += f"<br>truth u {g[0]:+.3f}, v {g[1]:+.3f}"
            if res is not None:
                text += f"<br>endpoint error {np.hypot(res.u[y, x] - g[0], res.v[y, x] - g[1]):.3f} px"
        self.readout.setText(text)

    # ------------------------------------------------------------------ extra inputs
    def choose_second(self, path: Path | None = None, *, first: Path | None = None) -> bool:
        """Pick the second frame of a pair; with no first frame open, the first one too."""
        img_filter = "Images (" + " ".join(f"*{e}" for e in image_io.IMAGE_EXTENSIONS) + ")"
        if self.data is None and first is None:
            first = self.pick_file("First frame", img_filter, "last_dir")
            if first is None:
                return False
        if first is not None:  # two files, as a pair
            second = path or self.pick_file("Second frame", img_filter, "last_dir")
            if second is None:
                return False
            f1, f2 = Path(first), Path(second)
            return self.open_pair(f1, f2)
        path = path or self.pick_file(
            "Second frame", "Images (" + " ".join(f"*{e}" for e in image_io.IMAGE_EXTENSIONS) + ")", "last_dir")
        if path is None:
            return False
        first = self.data.path if self.data.sequence is None else None
        if first is None:
            self.host.show_error("Not a pair of images", "A video or frame folder sets its own frames; open an image "
                                 "as the first frame to choose the second.")
            return False
        gt, gt_path, mask, mask_path = self.data.gt, self.data.gt_path, self.data.mask, self.data.mask_path

        self._second_path = Path(path)

        def load_second(progress=None):
            d = flow.load_pair(first, path, progress=progress)
            if mask is not None and mask.shape == d.shape:
                d.mask, d.mask_path = mask, mask_path
            if d.gt is None and gt is not None and gt[0].shape[:2] == d.shape:
                d.gt, d.gt_path = gt, gt_path
            return d

        return self.load_extra(load_second, f"Opening {path.name}")

    def open_file(self, path) -> bool:
        self._second_path = None          # the next frame of the folder, as the CLI takes it
        return super().open_file(path)

    def input_files(self) -> list[Path]:
        """The first and second frames (a frame folder's pair too), the ground truth and the mask:
        Save result / Export never writes over one of them."""
        files = super().input_files()
        d = self.data
        if d is None:
            return files
        second = getattr(self, "_second_path", None)
        if second is not None and second.name == d.name2:
            files.append(second)
        elif self.input_path is not None:
            folder = Path(self.input_path) if Path(self.input_path).is_dir() else Path(self.input_path).parent
            files += [folder / d.name1, folder / d.name2]
        files += [Path(p) for p in (d.gt_path, d.mask_path) if p is not None]
        return files

    def command_line(self) -> str:
        """The ``gpulab flow`` command of what is on screen: besides the first frame and the
        parameters, the second frame when it was chosen (not the next one in the folder), the
        pair of a video or frame folder, the mask and the ground truth. Without them the copied
        command computed another pair, or without the mask."""
        d = self.data
        if d is None or self.input_path is None:
            return super().command_line()
        inputs = [str(Path(self.input_path).absolute())]
        second = getattr(self, "_second_path", None)
        if d.sequence is None and second is not None and second.name == d.name2:
            inputs.append(str(second.absolute()))
        cmd = self.tool.command_line(inputs, self.shown_params(), device=self.host.device_spec())
        extra = []
        if d.sequence is not None and d.index:
            extra += ["--pair", str(d.index)]
        if d.mask_path is not None:
            extra += ["--mask", str(Path(d.mask_path).absolute())]
        if d.gt_path is not None:
            extra += ["--gt", str(Path(d.gt_path).absolute())]
        return cmd + (" " + shlex.join(extra) if extra else "")

    def open_pair(self, first: Path, second: Path) -> bool:
        """Open two image files as a pair (as if the first had been opened)."""
        if self.runner.is_running():
            self.host.show_error("Busy", f"{self.title} is busy; cancel the job or wait for it first.")
            return False
        self._job = PendingJob("load", Path(first), "open")
        self._run_after_load = False
        self._second_path = Path(second)
        from ..tools.base import Job

        self.runner.start(Job(flow.load_pair, (Path(first), Path(second)), what=f"Opening {Path(second).name}",
                              uses_device=False))
        return True

    def choose_ground_truth(self, path: Path | None = None) -> bool:
        if self.data is None:
            self.host.show_error("No frames", "Open the frames first.")
            return False
        path = path or self.pick_file("Ground-truth flow", "Flow files (*.flo *.png)", "last_gt_dir")
        if path is None:
            return False
        data = self.data
        return self.load_extra(lambda progress=None: flow.with_ground_truth(data, path), f"Reading {path.name}",
                               run_after=self.result is not None)

    def choose_mask(self, path: Path | None = None) -> bool:
        if self.data is None:
            self.host.show_error("No frames", "Open the frames first.")
            return False
        path = path or self.pick_file("Mask (region of interest)", "Images (" + " ".join(
            f"*{e}" for e in image_io.IMAGE_EXTENSIONS) + ")", "last_mask_dir")
        if path is None:
            return False
        data = self.data
        return self.load_extra(lambda progress=None: flow.with_mask(data, path), f"Reading {path.name}",
                               run_after=self.result is not None)

    def clear_mask(self) -> None:
        if self.data is not None and self.data.mask is not None:
            data = self.data
            self.load_extra(lambda progress=None: flow.with_mask(data, None), "Removing the mask",
                            run_after=self.result is not None)

    def go_to_pair(self, index: int) -> bool:
        d = self.data
        if d is None or d.sequence is None or index == d.index or not 0 <= index < d.n_pairs:
            return False
        return self.load_extra(lambda progress=None: flow.with_pair(d, index), f"Reading pair {index + 1}",
                               run_after=self.result is not None)

    def step_pair(self, delta: int) -> bool:
        d = self.data
        if d is None or d.sequence is None:
            return False
        return self.go_to_pair(d.index + delta)

    def _update_pair_controls(self) -> None:
        d = self.data
        seq = d is not None and d.sequence is not None
        self.pair_spin.blockSignals(True)
        self.pair_spin.setRange(1, d.n_pairs if seq else 1)
        self.pair_spin.setValue(d.index + 1 if seq else 1)
        self.pair_spin.blockSignals(False)
        for w in (self.pair_spin, self.prev_button, self.next_button):
            w.setEnabled(seq)
        if seq:
            self.prev_button.setEnabled(d.index > 0)
            self.next_button.setEnabled(d.index + 1 < d.n_pairs)
        self.second_button.setEnabled(not seq)  # with nothing open it asks for both frames

    def export_options(self, export) -> dict:
        if export.key == "color":
            return {"max_flow": self._max_flow()}
        return {}
