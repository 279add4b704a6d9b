"""The choices of the tools' display-only parameters (standard library only).

The tool declarations (``Param(..., display=True)`` in :mod:`app.tools`), the renderers and
the tabs' widgets all take these tuples from here, so a choice is spelt once.
"""

from __future__ import annotations

__all__ = ["ECHO_MAP_KINDS", "ECHO_MOTIONS", "FLOW_STYLES", "FLOW_RIGHT_VIEWS", "MVS_SHOW", "MVS_CLOUD"]

#: the echo colour map over the slices
ECHO_MAP_KINDS: tuple[str, ...] = ("Magnitude", "Jacobian determinant", "Divergence", "None")
#: which displacement the echo views show
ECHO_MOTIONS: tuple[str, ...] = ("From the reference frame", "To the next frame")
#: how the flow is drawn on frame 1
FLOW_STYLES: tuple[str, ...] = ("Colour wheel", "Arrows", "None")
#: what the flow tab's right view shows
FLOW_RIGHT_VIEWS: tuple[str, ...] = ("Second frame", "Second frame warped by the flow",
                                     "Difference |frame 1 - warped frame 2|", "Flow (colour wheel)", "Quality map",
                                     "Ground truth (colour wheel)", "Endpoint error")
#: the MVS map shown, and the 3-D view's content
MVS_SHOW: tuple[str, ...] = ("Depth", "Normal", "Confidence", "Iterations", "Image")
MVS_CLOUD: tuple[str, ...] = ("This view's points", "Fused cloud", "Seeds", "Cameras only")
