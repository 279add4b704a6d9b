"""Headless ``gpulab`` subcommands.

Each command module provides::

    def register(subparsers) -> None:     # adds its parser; parser.set_defaults(func=run)
    def run(args) -> int: ...             # exit status; raise UserError & co for clear errors

A tool's command module also has ``TOOL`` (its :class:`app.tools.base.Tool`) and maps only
its inputs and outputs: parameters, device, progress, checks and writing are in
:mod:`app.commands.common`. The subcommands follow :data:`app.tools.TOOLS`.
"""

from __future__ import annotations

from types import ModuleType

from ..tools import TOOLS
from . import batch, demo, echo, flow, imseg, info, mesh_seg, mvs

__all__ = ["command_modules", "TOOL_COMMANDS", "GENERAL_COMMANDS"]

#: the command module of each tool, by tool name (each module's ``TOOL`` says which)
TOOL_COMMANDS: dict[str, ModuleType] = {m.TOOL.name: m for m in (mesh_seg, flow, echo, mvs, imseg)}
#: commands that belong to no single tool, listed first
GENERAL_COMMANDS: tuple[ModuleType, ...] = (info, demo, batch)


def command_modules() -> list[ModuleType]:
    """Every command module: the general ones, then one per tool in :data:`app.tools.TOOLS` order."""
    missing = [t.name for t in TOOLS if t.name not in TOOL_COMMANDS]
    if missing:
        raise RuntimeError(f"tools without a command module: {', '.join(missing)}")
    return [*GENERAL_COMMANDS, *(TOOL_COMMANDS[t.name] for t in TOOLS)]
