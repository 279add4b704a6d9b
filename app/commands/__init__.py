"""Headless ``gpulab`` subcommands.

Each command module provides::

    def register(subparsers) -> None:     # adds its parser; parser.set_defaults(func=run)
    def run(args) -> int: ...             # exit status; raise UserError & co for clear errors

A tool's subcommand is generated from the tool (:class:`app.commands.common.ToolCommand`: its
input, its parameters and one flag per export) unless the tool names a command module of its
own (``Tool(command="app.commands.echo")``) for real extras; such a module has ``TOOL`` and
maps only its inputs and outputs. The subcommands follow :data:`app.tools.TOOLS`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..tools import TOOLS
from . import batch, demo, info
from .common import ToolCommand

__all__ = ["command_modules", "command_for", "GENERAL_COMMANDS"]

#: commands that belong to no single tool, listed first
GENERAL_COMMANDS: tuple[ModuleType, ...] = (info, demo, batch)


def command_for(tool):
    """The command of ``tool``: its own module, or one generated from the tool."""
    if tool.command:
        return importlib.import_module(tool.command)
    return ToolCommand(tool)


def command_modules() -> list:
    """Every command: the general ones, then one per tool in :data:`app.tools.TOOLS` order."""
    return [*GENERAL_COMMANDS, *(command_for(t) for t in TOOLS)]
