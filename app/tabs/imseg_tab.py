"""The Image segmentation tab: the image with the segmentation as the original, the clusters in
false colour, the regions in random or mean colour, or the boundaries over the image; the
features of the region under the cursor; a sortable table of every region (click a row or a
region to highlight it); the time of each stage; stepping through the images of a folder.

Everything generic (input, parameters, Run/Cancel, errors, exports) is
:class:`~app.tabs.base.ToolTab`'s; the computation is :mod:`app.tools.imseg`.
"""

from __future__ import annotations

import html

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from gpu_kernels.imseg import vis

from ..tools import imseg
from ..tools.base import fmt_seconds
from ..ui.widgets import name_html
from .base import ToolTab
from .imseg_paint import BoundaryPainter
from .imseg_views import ImsegView, RegionTable

__all__ = ["ImsegTab", "VIEWS"]

#: the view box's entries: (text, picture style or None for the original)
VIEWS = (("Original", None), ("Boundaries over the image", "boundaries"), ("Regions, mean colour", "mean"),
         ("Regions, random colours", "random"), ("Clusters, false colour", "clusters"))


class ImsegTab(ToolTab):
    tool = imseg.TOOL
    run_label = "Segment"
    #: device label -> the report of the tab's first run there (it pays the libraries' first use,
    #: on a GPU CuPy's start and the kernels' compiling too); showing that run again (a display
    #: change, a pin) is still that run, not a later one
    _first_reports: dict | None = None

    # ------------------------------------------------------------------ building
    def build_view(self) -> QWidget:
        v = ImsegView()
        v.hovered.connect(self._on_hover)
        v.clicked.connect(self._on_click)
        self._pictures: dict = {}
        self._painter = BoundaryPainter()   # the input's 8-bit picture, kept across live edits
        self.selected: int | None = None
        return v

    def build_controls(self) -> list[QWidget]:
        g = QGroupBox("View")
        lay = QVBoxLayout(g)
        self.view_combo = QComboBox()
        self.view_combo.setObjectName("imseg-view")
        self.view_combo.addItems([t for t, _ in VIEWS])
        self.view_combo.setCurrentIndex(1)
        self.view_combo.setToolTip("What the image pane shows (the result's views need a run)")
        self.view_combo.currentIndexChanged.connect(self._redraw)
        lay.addWidget(self.view_combo)
        self.highlight_box = QCheckBox("Highlight the selected region")
        self.highlight_box.setChecked(True)
        self.highlight_box.setToolTip("Dim the rest of the image around the region picked in the table or the view")
        self.highlight_box.toggled.connect(self._redraw)
        lay.addWidget(self.highlight_box)
        self.clear_sel = QPushButton("Clear selection")
        self.clear_sel.clicked.connect(lambda: self.select_region(None))
        lay.addWidget(self.clear_sel)

        f = QGroupBox("Folder")
        fl = QHBoxLayout(f)
        self.prev_button = QPushButton("◀")
        self.prev_button.setFixedWidth(36)
        self.prev_button.setToolTip("Previous image of the folder (segmented at once if a result is shown)")
        self.prev_button.clicked.connect(lambda: self.step_image(-1))
        self.folder_label = QLabel("-")
        self.folder_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.next_button = QPushButton("▶")
        self.next_button.setFixedWidth(36)
        self.next_button.setToolTip("Next image of the folder")
        self.next_button.clicked.connect(lambda: self.step_image(+1))
        fl.addWidget(self.prev_button)
        fl.addWidget(self.folder_label, 1)
        fl.addWidget(self.next_button)
        self.setting_widgets["view"] = self.view_combo
        self.setting_widgets["highlight"] = self.highlight_box
        self._update_folder()
        return [g, f]

    def build_side_panel(self) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        lay.addWidget(QLabel("<b>Under the cursor</b>"))
        self.readout = QLabel("Hover over the image for a region's features.")
        self.readout.setObjectName("imseg-readout")
        self.readout.setWordWrap(True)
        self.readout.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readout.setMinimumHeight(110)
        self.readout.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        lay.addWidget(self.readout)
        self.table_title = QLabel("<b>Regions</b>")
        lay.addWidget(self.table_title)
        self.table = RegionTable()
        self.table.region_selected.connect(self.select_region)
        lay.addWidget(self.table, 1)
        lay.addWidget(QLabel("<b>Stages</b>"))
        self.timings = QLabel("-")
        self.timings.setObjectName("imseg-timings")
        self.timings.setWordWrap(True)
        self.timings.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.timings)
        return w

    # ------------------------------------------------------------------ input and result
    def describe_input(self, data) -> str:
        return f"<b>{name_html(data.name)}</b><br>{html.escape(data.describe())}"

    def show_input(self, data) -> None:
        self._pictures = {}
        self.selected = None
        self.view.set_picture(self._painter.base(data.image), f"{data.name}: {data.describe()}")
        self._update_folder()

    def clear_result(self) -> None:
        self._pictures = {}
        self.selected = None
        self.table.set_features(None)
        self.table_title.setText("<b>Regions</b>")
        self.timings.setText("-")
        self.readout.setText("Hover over the image for a region's features.")

    def show_result(self, result) -> None:
        self._pictures = {}
        self.selected = None
        seg = result.seg
        f = seg.features
        swatches = vis.mean_colors(np.arange(len(f.get("label", [])) + 1), f, result.data.image)[1:] if f else None
        self.table.set_features(f, swatches)
        self.table_title.setText(f"<b>Regions</b> ({seg.n_regions:,}; click a row or a region)")
        report = self.last_report if result is self.result else None
        if self._first_reports is None:
            self._first_reports = {}
        if report is not None and report.ran:
            self._first_reports.setdefault(result.device, report)
        first = report is not None and report is self._first_reports.get(result.device)
        self.timings.setText(self._timings_text(result, report, first_run=first))
        self._redraw()

    @staticmethod
    def _timings_text(result, report=None, first_run: bool = False) -> str:
        """The Stages panel. With the run's report (a run of the window), its rows are the
        window's stages with the times the status line gives them (one number per step; a stage
        re-used from the cache is marked "cached", so the rows add up to this run's total), and
        the segmentation's own steps (the library's timing) of the stages that ran follow as what
        those stages spent computing; on a full run the rest of their time is named: on the
        tab's first run on the device it is the first use (loading the libraries, compiling), else the host's
        own work around the steps. Without a report (a result shown again) the library's steps
        alone, as before."""
        st = imseg.stage_times(result)
        s = result.seg
        sync = f"; {s.syncs} host synchronisation(s)" if result.device != "cpu" else ""
        tail = (f"on {result.device}{sync}; {s.n_clusters} clusters, "
                f"{s.info.get('merge_rounds', 0)} merging round(s)")
        if report is None or not (report.ran or report.reused):
            rows = "".join(f"<tr><td>{k}</td><td align='right'>{fmt_seconds(v)}</td></tr>" for k, v in st)
            return (f"<table>{rows}<tr><td><b>total</b></td><td align='right'><b>{fmt_seconds(result.elapsed)}"
                    f"</b></td></tr></table>{tail}")
        order = imseg.PIPELINE.names(result.params)
        rows = []
        for name in sorted(set(report.ran) | set(report.reused), key=lambda n: order.index(n) if n in order else 99):
            label = report.labels.get(name, name)
            if name in report.ran:
                rows.append(f"<tr><td>{label}</td><td align='right'>{fmt_seconds(report.seconds.get(name, 0.0))}"
                            "</td></tr>")
            else:   # re-used from the cache: nothing of this run's time
                rows.append(f"<tr><td style='color:#666'>{label}</td><td align='right' style='color:#666'>"
                            "cached</td></tr>")
        total = "total, this run" if report.reused else "total"
        if report.reused:   # the library's steps of the stages that ran (a cached stage's are not this run's)
            st = imseg.stage_times(result, except_stages=report.reused)
        steps = ", ".join(f"{k} {fmt_seconds(v)}" for k, v in st)
        inside = f"of which the steps: {steps}" if steps else ""
        if report.full and st:
            rest = sum(report.seconds.get(n, 0.0) for n in report.ran) - sum(v for _, v in st)
            if first_run and rest >= 0.05:
                what = "loading the libraries" + (", compiling the kernels" if result.device != "cpu" else "")
                inside += f"; first use ({what}) {fmt_seconds(rest)}"
            elif rest >= 0.0005:
                inside += f"; around the steps {fmt_seconds(rest)}"
        reused = ", ".join(report.labels.get(n, n) for n in report.reused)
        cached = f"<br>re-used from the cache: {reused}" if reused else ""
        return (f"<table>{''.join(rows)}<tr><td><b>{total}</b></td><td align='right'>"
                f"<b>{fmt_seconds(result.elapsed)}</b></td></tr></table>"
                f"<span style='color:#555'>{inside}</span><br>{tail}{cached}")

    # ------------------------------------------------------------------ drawing
    def current_style(self) -> str | None:
        return VIEWS[self.view_combo.currentIndex()][1]

    def picture(self, style: str | None) -> np.ndarray:
        if style is None or self.result is None:
            return self._painter.base(self.data.image)
        if style not in self._pictures:
            if style == "boundaries":   # the default view, drawn at every live edit: see imseg_paint
                self._pictures[style] = self._painter.boundaries(self.result.data.image, self.result.seg.labels)
            else:
                self._pictures[style] = imseg.picture(self.result, style)
        return self._pictures[style]

    def _redraw(self, *_args) -> None:
        if self.data is None:
            return
        style = self.current_style()
        if self.result is None:
            style = None
        rgb = self.picture(style)
        if self.result is not None and self.selected is not None and self.highlight_box.isChecked():
            rgb = vis.highlight(rgb, self.result.seg.labels, self.selected)
        text = VIEWS[self.view_combo.currentIndex()][0] if style is not None else "Original"
        if self.result is not None:
            text += f": {self.result.seg.n_regions:,} regions"
            if self.selected is not None:
                text += f", region {self.selected} selected"
        self.view.set_picture(rgb, f"{self.data.name} — {text}")

    # ------------------------------------------------------------------ regions
    def region_at(self, x: int, y: int) -> int | None:
        if self.result is None:
            return None
        lab = self.result.seg.labels
        if 0 <= y < lab.shape[0] and 0 <= x < lab.shape[1]:
            return int(lab[y, x])
        return None

    def region_text(self, label: int, x: int | None = None, y: int | None = None) -> str:
        s = self.result.seg
        f = s.features
        i = label - 1
        head = f"pixel ({x}, {y}): " if x is not None else ""
        if not f or not 0 <= i < len(f.get("label", [])):
            return f"{head}region {label}"
        r0, c0, r1, c1 = (int(v) for v in f["bbox"][i])
        cy, cx = f["centroid"][i]
        mean = " ".join(f"{v:.1f}" for v in np.asarray(f["intensity_mean"][i]).ravel())
        L, a, b = f["intensity_mean_lab"][i]
        mu = f.get("moments_central")
        extra = ""
        if mu is not None:
            m = mu[i]
            extra = f"<br>μ20 {m[2, 0]:.4g}, μ11 {m[1, 1]:.4g}, μ02 {m[0, 2]:.4g}"
        cl = ""
        if x is not None and s.clusters is not None:
            cl = f" (cluster {int(s.clusters[y, x])})"
        return (f"{head}<b>region {label}</b>{cl}<br>area {int(f['area'][i]):,} px<br>"
                f"box rows {r0}:{r1}, cols {c0}:{c1}<br>centroid ({cy:.1f}, {cx:.1f})<br>"
                f"mean colour {mean}<br>mean L*a*b* {L:.1f}, {a:.1f}, {b:.1f}{extra}")

    def _on_hover(self, x: int, y: int) -> None:
        lab = self.region_at(x, y)
        if lab is None:
            if self.data is not None:
                self.readout.setText(f"pixel ({x}, {y}); press {self.run_label} for regions")
            return
        self.readout.setText(self.region_text(lab, x, y))

    def _on_click(self, x: int, y: int) -> None:
        lab = self.region_at(x, y)
        if lab is not None:
            self.select_region(lab)

    def select_region(self, label: int | None) -> None:
        """Highlight region ``label`` (None: no selection) and show its row."""
        self.selected = None if label is None or label <= 0 else int(label)
        self.table.select_label(self.selected)
        if self.selected is not None and self.result is not None:
            self.readout.setText(self.region_text(self.selected))
        self._redraw()

    # ------------------------------------------------------------------ folder
    def _update_folder(self) -> None:
        files = list(getattr(self.data, "folder_images", ()) or ())
        path = getattr(self.data, "path", None)
        i = files.index(path) if path in files else -1
        self.folder_label.setText(f"{i + 1} of {len(files)}" if i >= 0 and len(files) > 1 else "-")
        self.prev_button.setEnabled(i > 0)
        self.next_button.setEnabled(0 <= i < len(files) - 1)

    def step_image(self, step: int) -> bool:
        """Open the previous/next image of the folder; segment it too when a result was shown."""
        files = list(getattr(self.data, "folder_images", ()) or ())
        path = getattr(self.data, "path", None)
        if path not in files:
            return False
        j = files.index(path) + step
        if not 0 <= j < len(files):
            return False
        had_result = self.result is not None
        if not self.open_file(files[j]):
            return False
        if had_result:
            self.run_default()
        return True

    # ------------------------------------------------------------------ exports
    @property
    def picture_style(self) -> QWidget:
        """The Picture export's style box (the tool's picture_style Param, beside the button)."""
        return self.form.editor("picture_style")
