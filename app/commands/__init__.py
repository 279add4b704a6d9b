"""Headless ``gpulab`` subcommands.

Each module named in :data:`COMMAND_MODULES` provides::

    def register(subparsers) -> None:
        parser = subparsers.add_parser("name", help="...")
        ...                                # add its options, e.g. common.add_device_arg(parser)
        parser.set_defaults(func=run)

    def run(args) -> int: ...             # exit status; raise UserError & co for clear errors

Modules are imported lazily; a module that does not exist yet is skipped, so the
command line keeps working while a tab's issue is being built.
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType

__all__ = ["COMMAND_MODULES", "load_command_modules", "import_optional"]

log = logging.getLogger(__name__)

COMMAND_MODULES: list[str] = [
    "app.commands.info",
    "app.commands.demo",
    "app.commands.mesh_seg",
]


def import_optional(name: str) -> ModuleType | None:
    """Import module ``name``; ``None`` if that very module does not exist.

    An ImportError raised *inside* the module (a missing dependency, a typo) is not
    hidden: it propagates.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            log.debug("command module %s is not available yet", name)
            return None
        raise


def load_command_modules(names: list[str] | None = None) -> list[ModuleType]:
    """The available command modules, in order."""
    mods = []
    for name in COMMAND_MODULES if names is None else names:
        mod = import_optional(name)
        if mod is not None:
            mods.append(mod)
    return mods
