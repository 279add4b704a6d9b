"""The tool layer: one module per tool, Qt-free (see :mod:`app.tools.base`).

:data:`TOOLS` is the one registry: the window builds a tab per tool from it, the CLI a
subcommand, ``gpulab demo`` runs each tool's demo, and ``gpulab batch`` takes its TASK names
from it, all in this order.
"""

from __future__ import annotations

from . import echo, flow, imseg, mesh_seg, mvs
from .base import Export, Job, Tool, execute
from .params import Param, ParameterError, ParamSet

__all__ = ["TOOLS", "tool_by_name", "Tool", "Export", "Job", "execute", "Param", "ParamSet", "ParameterError"]

#: every tool, in the window's tab order
TOOLS: tuple[Tool, ...] = (
    mesh_seg.TOOL,
    flow.TOOL,
    echo.TOOL,
    mvs.TOOL,
    imseg.TOOL,
)


def tool_by_name(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise KeyError(name)
