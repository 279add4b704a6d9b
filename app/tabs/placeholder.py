"""Tabs for tools whose issue has not landed yet: each says what it will hold."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from .base import ToolTab

__all__ = [
    "PlaceholderTab",
    "MeshSegmentationPlaceholder",
    "OpticalFlowTab",
    "EchoMotionTab",
    "MultiViewStereoTab",
    "ImageSegmentationTab",
]


class PlaceholderTab(ToolTab):
    """Shows the tool's name and a short list of what the tab will hold."""

    summary: str = ""
    planned: tuple[str, ...] = ()
    #: set when the real tab exists but failed to import (shown to the user)
    load_error: str = ""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
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
            + (f"<p style='color:#b00020'><b>This tab failed to load:</b> {self.load_error}</p>"
               if self.load_error else "")
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


class MeshSegmentationPlaceholder(PlaceholderTab):
    title = "Mesh segmentation"
    settings_key = "mesh"
    summary = "Segments a triangle mesh into meaningful parts (Katz-Tal fuzzy clustering on the GPU)."
    planned = (
        "Open a mesh (PLY, OBJ, OFF, STL, ...) or a bundled sample",
        "Parameters: number of parts (or auto), delta, convex weight, fuzzy band, APSP method",
        "All-pairs shortest paths on the face graph with tiled Floyd-Warshall on the GPU",
        "A 3-D view of the coloured parts, a legend, and per-face memberships on click",
        "Export of the coloured PLY, .seg labels and one mesh per part",
    )


class OpticalFlowTab(PlaceholderTab):
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
    title = "Image segmentation"
    settings_key = "imgseg"
    summary = "Splits an image into regions, interactively or automatically."
    planned = (
        "Open an image (PNG, JPEG, TIFF)",
        "Region labelling on the GPU, with seeds the user paints",
        "Label overlay with adjustable opacity",
        "Export of the label image",
    )
