"""The display-only parameters of the echo, flow and MVS tools (issue 20), declared once.

Each list goes into its tool's :class:`~app.tools.params.ParamSet` (``PARAMS = ParamSet([...,
*display_params.ECHO])``): the tab shows them (through its own widgets, bound by
``ToolTab.display_bindings``), presets, the history and settings keep them, and a change
redraws the shown result without a job (no stage reads a display parameter). They have no
CLI flag: they change only the view.
"""

from __future__ import annotations

from ..render import choices as _choices
from .params import Param

__all__ = ["ECHO", "FLOW", "MVS"]


def _view(*args, **kwargs) -> Param:
    """A display-only Param: no CLI flag and no library keyword."""
    return Param(*args, display=True, cli=False, library_name="", **kwargs)


#: echo's display controls
ECHO = [
    _view("motion", str, _choices.ECHO_MOTIONS[0], "Motion",
          "Show the displacement from the reference frame (trajectories) or to the next frame.",
          choices=_choices.ECHO_MOTIONS),
    _view("overlay", str, _choices.ECHO_MAP_KINDS[0], "Colour",
          "Colour map over the slices: motion magnitude (mm), volume change det(I + grad u) or divergence.",
          choices=_choices.ECHO_MAP_KINDS),
    _view("opacity", float, 0.45, "Opacity", "Opacity of the colour map.", minimum=0.0, maximum=1.0, step=0.05,
          decimals=2),
    _view("arrows", bool, True, "Arrows", "Draw the in-plane motion as arrows."),
    _view("arrow_step", int, 6, "Arrow spacing", "One arrow every this many voxels.", minimum=2, maximum=64,
          unit="vx"),
    _view("arrow_scale", float, 1.0, "Arrow scale", "Length of the arrows relative to the motion.", minimum=0.1,
          maximum=20.0, step=0.5, decimals=1),
]

#: flow's display controls
FLOW = [
    _view("flow_style", str, _choices.FLOW_STYLES[0], "Flow on frame 1", "How the flow is drawn over the first frame.",
          choices=_choices.FLOW_STYLES),
    _view("flow_opacity", float, 0.7, "Flow opacity", "Opacity of the colour-coded flow over the first frame.",
          minimum=0.0, maximum=1.0, step=0.05, decimals=2),
    _view("quality_overlay", bool, False, "Quality overlay", "The quality map as a grey overlay."),
    _view("quality_opacity", float, 0.6, "Quality opacity", "Opacity of the quality overlay (dark = low quality).",
          minimum=0.0, maximum=1.0, step=0.05, decimals=2),
    _view("hide_below", float, 0.0, "Hide below quality", "Vectors (colour and arrows) with a lower quality are hidden.",
          minimum=0.0, maximum=1.0, step=0.05, decimals=2),
    _view("arrow_spacing", int, 16, "Arrow spacing", "One arrow every this many pixels.", minimum=4, maximum=128,
          unit="px"),
    _view("max_flow", float, 0.0, "Colour radius", "The magnitude shown at full colour (0: the largest in the flow).",
          minimum=0.0, maximum=10000.0, unit="px"),
    _view("right_view", str, _choices.FLOW_RIGHT_VIEWS[0], "Right view", "What the right view shows.",
          choices=_choices.FLOW_RIGHT_VIEWS),
]

#: mvs's display controls
MVS = [
    _view("show", str, _choices.MVS_SHOW[0], "Show", "The map shown for the current view.",
          choices=_choices.MVS_SHOW),
    _view("min_confidence", float, 0.0, "Confidence at least",
          "Hide samples whose confidence (mean NCC of the active views) is lower, in the map and the 3-D view.",
          minimum=0.0, maximum=1.0, step=0.01, decimals=2),
    _view("cloud", str, _choices.MVS_CLOUD[0], "3-D view", "What the 3-D view shows.", choices=_choices.MVS_CLOUD),
    _view("frusta", bool, True, "Cameras as frusta", "Draw the cameras as frusta in the 3-D view."),
]
