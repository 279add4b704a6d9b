"""Tabs for tools whose issue has not landed yet: each says what it will hold.

A placeholder is not a :class:`~app.tabs.base.ToolTab` (it has no tool), but it offers the
same interface to the window: nothing to open, run or save.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from ..ui.worker import JobRunner

__all__ = [
    "EmptyHint",
    "PlaceholderTab",
    "PLANNED",
    "OpticalFlowTab",
    "EchoMotionTab",
    "MultiViewStereoTab",
    "ImageSegmentationTab",
]


class EmptyHint(QLabel):
    """What a view says while it has nothing to show, over the whole view ("No frames loaded:
    open ... or pick a bundled sample"), worded and styled like the mesh view's. The view
    calls ``hide()`` when its first picture comes and ``show()`` when it is cleared."""

    def __init__(self, view: QWidget, title: str, text: str, *, background: str = "#ffffff"):
        super().__init__(view)
        self.setObjectName("empty-hint")
        self.setText(f"<div style='color:#666'><h3>{title}</h3><p>{text}</p></div>")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setWordWrap(True)
        self.setStyleSheet(f"background: {background};")
        view.installEventFilter(self)
        self.setGeometry(view.rect())
        self.raise_()

    def eventFilter(self, obj: QObject, ev: QEvent) -> bool:  # noqa: N802
        # the view is the label's parent: a Python attribute is lost where PySide hands Qt's
        # call to a new wrapper of this label (seen in a long test process: AttributeError)
        if ev.type() == QEvent.Type.Resize and obj is self.parentWidget():
            self.setGeometry(obj.rect())
        return False


class PlaceholderTab(QWidget):
    """Shows the tool's name and a short list of what the tab will hold."""

    title: str = "Tool"
    settings_key: str = "tool"
    planned_tool: str = ""
    file_extensions: tuple[str, ...] = ()
    summary: str = ""
    planned: tuple[str, ...] = ()

    status_message = Signal(str)
    result_changed = Signal()
    input_loaded = Signal(object)

    def __init__(self, parent: QWidget | None = None, *, host=None):
        super().__init__(parent)
        self.host = host
        self.runner = JobRunner(self, name=self.title)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(32, 48, 32, 32)
        card = QFrame()
        card.setObjectName("placeholder-card")
        card.setMaximumWidth(720)
        card.setStyleSheet(
            "#placeholder-card { background: palette(base); border: 1px solid palette(mid);"
            " border-radius: 10px; }"
        )
        lay = QVBoxLayout(card)
        lay.setContentsMargins(28, 24, 28, 24)
        head = QLabel(f"<h2>{self.title}</h2>")
        head.setObjectName("placeholder-title")
        lay.addWidget(head)
        badge = QLabel("Not available yet")
        badge.setStyleSheet("color: palette(dark); font-style: italic;")
        lay.addWidget(badge)
        items = "".join(f"<li>{p}</li>" for p in self.planned)
        body = QLabel(
            f"<p>{self.summary}</p>"
            f"<p><b>Coming in this tab:</b></p><ul>{items}</ul>"
        )
        body.setObjectName("placeholder-body")
        body.setWordWrap(True)
        body.setTextFormat(Qt.TextFormat.RichText)
        body.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        lay.addWidget(body)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(card, 4)
        row.addStretch(1)
        outer.addLayout(row)
        outer.addStretch(1)
        self.description_label = body

    # the window's tab interface: nothing to open, run or save
    def handles(self, path) -> bool:
        return False

    def open_filter(self) -> str:
        return ""

    def open_file(self, path) -> bool:
        return False

    def samples(self) -> list:
        return []

    def can_save(self) -> bool:
        return False

    def result_filters(self) -> str:
        return ""

    def save_result(self, path, export=None):
        from ..errors import UserError

        raise UserError(f"the {self.title} tab has no result to save")

    def run_default(self) -> bool:
        return False

    def save_settings(self, settings) -> None:
        pass

    def restore_settings(self, settings) -> None:
        pass

    def screenshot_widget(self) -> QWidget:
        return self

    def export_screenshot(self, path) -> None:
        from ..ui.capture import save_widget_png

        save_widget_png(self, path)

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        return True


class OpticalFlowTab(PlaceholderTab):
    planned_tool = "flow"
    title = "Optical flow"
    settings_key = "flow"
    summary = "Dense motion between two frames or along a video, computed on the GPU."
    planned = (
        "Open an image pair or a video",
        "Dense flow field shown as colour-coded motion and as arrows",
        "Per-pixel error against ground truth when it is available",
        "Export of the flow (.flo) and its pictures",
    )


class EchoMotionTab(PlaceholderTab):
    planned_tool = "echo"
    title = "Echo motion"
    settings_key = "echo"
    summary = "Tracks tissue motion in echocardiography sequences."
    planned = (
        "Open an ultrasound cine loop",
        "Speckle tracking of the myocardium frame to frame",
        "Motion and strain curves over the cardiac cycle",
        "Export of the tracked points and curves",
    )


class MultiViewStereoTab(PlaceholderTab):
    planned_tool = "mvs"
    title = "Multi-view stereo"
    settings_key = "mvs"
    summary = "Reconstructs depth maps and a point cloud from calibrated photographs."
    planned = (
        "Open a set of images with their camera parameters",
        "Plane-sweep depth estimation per view on the GPU",
        "Fused, coloured point cloud in a 3-D view",
        "Export of depth maps and the point cloud (PLY)",
    )


class ImageSegmentationTab(PlaceholderTab):
    planned_tool = "imseg"
    title = "Image segmentation"
    settings_key = "imgseg"
    summary = "Splits an image into regions, interactively or automatically."
    planned = (
        "Open an image (PNG, JPEG, TIFF)",
        "Region labelling on the GPU, with seeds the user paints",
        "Label overlay with adjustable opacity",
        "Export of the label image",
    )


PLANNED: tuple[type[PlaceholderTab], ...] = (OpticalFlowTab, EchoMotionTab, MultiViewStereoTab, ImageSegmentationTab)
