"""The tool layer: one module per tool, Qt-free (see :mod:`app.tools.base`).

:data:`TOOLS` is the one registry, and a :class:`Tool` is the only registration: the window
builds a tab per tool from it (the tool names its tab class, ``tab="app.tabs.echo_tab:EchoTab"``),
the CLI a subcommand (generated from the tool's inputs, parameters and exports, or the tool's
own ``command`` module where it has real extras), ``gpulab demo`` runs each tool's demo, and
``gpulab batch`` takes its TASK names from it, all in this order.

A tool outside this package is added with :func:`register`, or by naming it in the
``GPULAB_TOOLS`` environment variable (``package.module:TOOL``, several separated by
commas), which batch's worker processes inherit.
"""

from __future__ import annotations

import logging
import os

from . import echo, flow, imseg, mesh_seg, mvs
from .base import Export, Job, Tool, execute, resolve
from .params import Param, ParameterError, ParamSet

__all__ = ["TOOLS", "tool_by_name", "register", "unregister", "Tool", "Export", "Job", "execute", "Param",
           "ParamSet", "ParameterError", "TOOLS_ENV"]

log = logging.getLogger(__name__)

TOOLS_ENV = "GPULAB_TOOLS"

#: every tool, in the window's tab order
TOOLS: list[Tool] = [
    mesh_seg.TOOL,
    flow.TOOL,
    echo.TOOL,
    mvs.TOOL,
    imseg.TOOL,
]


def register(tool: Tool) -> Tool:
    """Add ``tool`` (after the others; one of the same name is replaced)."""
    if not isinstance(tool, Tool):
        raise TypeError(f"register() takes a Tool, not {type(tool).__name__}")
    for i, t in enumerate(TOOLS):
        if t.name == tool.name:
            TOOLS[i] = tool
            return tool
    TOOLS.append(tool)
    return tool


def unregister(name: str) -> None:
    """Remove the tool named ``name`` (no error if there is none)."""
    TOOLS[:] = [t for t in TOOLS if t.name != name]


def tool_by_name(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise KeyError(name)


def _register_from_env() -> None:
    for ref in filter(None, (r.strip() for r in os.environ.get(TOOLS_ENV, "").split(","))):
        try:
            register(resolve(ref))
        except Exception as exc:  # noqa: BLE001 - a broken plug-in must not stop gpulab
            log.warning("%s: cannot load the tool %s: %s", TOOLS_ENV, ref, exc)


_register_from_env()
