"""Parameter presets as JSON files: what Save preset, ``--save-params`` and ``--params FILE``
write and read (the :class:`~app.tools.params.ParamSet` methods of the same names call these).

A preset is ``{"gpulab_preset": 1, "tool": NAME, "params": {...}}``; a bare object of
parameter values is read too. Values are validated on reading; missing ones take defaults.

Example
-------
>>> from app.tools.params import Param, ParamSet
>>> ps = ParamSet([Param("k", int, 3, "K", "parts", minimum=1, maximum=9)])
>>> from_json(ps, to_json(ps, {"k": 5}, tool="t"), tool="t")
{'k': 5}
"""

from __future__ import annotations

import json
import os
import pathlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..io.atomic import atomic_write
from ..io.inputs import check_input_file

if TYPE_CHECKING:
    from .params import ParamSet

__all__ = ["to_json", "from_json", "load_json", "save_json", "PRESET_VERSION"]

PRESET_VERSION = 1


def _pe():
    from .params import ParameterError  # params imports this module

    return ParameterError


def to_json(ps: ParamSet, values: Mapping[str, Any], *, tool: str = "") -> str:
    vals = ps.validate(values)
    doc = {"gpulab_preset": PRESET_VERSION, "tool": tool,
           "params": {p.name: p.to_json(vals[p.name]) for p in ps.params}}
    return json.dumps(doc, indent=2) + "\n"


def from_json(ps: ParamSet, text: str, *, tool: str = "", source: str = "preset") -> dict:
    """Parameter values from a preset's text (validated; missing ones take defaults)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _pe()(f"{source}: not a JSON preset ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise _pe()(f"{source}: a preset is a JSON object with a 'params' object")
    if "params" in doc:
        if tool and doc.get("tool") and doc["tool"] != tool:
            raise _pe()(f"{source}: this preset is for '{doc['tool']}', not '{tool}'")
        params = doc["params"]
    else:
        params = doc
    if not isinstance(params, dict):
        raise _pe()(f"{source}: 'params' must be a JSON object")
    try:
        return ps.validate(params)
    except _pe() as exc:
        raise _pe()(f"{source}: {exc}") from None


def load_json(ps: ParamSet, path: str | os.PathLike, *, tool: str = "") -> dict:
    path = pathlib.Path(path)
    if path.exists() or path.is_symlink():   # a FIFO, a folder or an empty file: one line, no hang
        check_input_file(path, error=_pe(), what="a preset file", label=str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _pe()(f"no such preset file: {path}") from None
    except UnicodeDecodeError:
        raise _pe()(f"{path}: not a text file (a JSON parameter preset is expected)") from None
    except OSError as exc:
        raise _pe()(f"cannot read the preset {path}: {exc.strerror or exc}") from None
    return from_json(ps, text, tool=tool, source=path.name)


def save_json(ps: ParamSet, path: str | os.PathLike, values: Mapping[str, Any], *, tool: str = "") -> pathlib.Path:
    path = pathlib.Path(path)
    with atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write(to_json(ps, values, tool=tool))
    return path
