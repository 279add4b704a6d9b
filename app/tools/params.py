"""Typed tool parameters, declared once.

Each tool declares its parameters as a :class:`ParamSet` of :class:`Param`. From that one
list come the command-line flags (:meth:`ParamSet.add_arguments`), the tab's form
(``app.ui.forms.ParamForm``), the settings keys, JSON presets (:meth:`ParamSet.to_json`,
:meth:`ParamSet.load_json`) and validation with a one-line message
(:meth:`ParamSet.validate`). Defaults are taken from the compute library's constants, so
the library, the CLI and the window cannot disagree.

Values
------
A parameter's value is an ``int``, ``float``, ``str`` or ``bool``. A parameter that
accepts ``auto`` stores :attr:`Param.auto_value` for it (``"auto"`` unless the library
takes ``None``); an ``optional`` parameter accepts ``None``, shown and typed as
:attr:`Param.none_text` (``"off"``). In JSON both are written as those words.

Example
-------
>>> from app.tools.params import Param, ParamSet
>>> ps = ParamSet([
...     Param("k", int, "auto", "Parts", "number of parts", minimum=1, maximum=1000, auto=True),
...     Param("epsilon", float, 0.04, "Fuzzy band", "width of the fuzzy band", minimum=0, maximum=1),
... ])
>>> ps.validate({"k": "7"})
{'k': 7, 'epsilon': 0.04}
>>> ps.validate({"epsilon": 2})
Traceback (most recent call last):
...
app.tools.params.ParameterError: epsilon must lie in [0, 1], not 2
>>> ps.to_cli({"k": 7, "epsilon": 0.04})
['--k', '7']
"""

from __future__ import annotations

import argparse
import math
import os
import pathlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpu_kernels.errors import InputError

from . import presets as _presets

__all__ = ["Param", "ParamSet", "ParameterError", "AUTO", "PRESET_VERSION"]

AUTO = "auto"
PRESET_VERSION = _presets.PRESET_VERSION
_NONE_WORDS = ("off", "none", "null", "no")


class ParameterError(InputError):
    """A parameter value is out of range or of the wrong type (one clear line)."""


def _fmt_num(x) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Param:
    """One parameter of a tool.

    Parameters
    ----------
    name : str
        The library's keyword (``eta_convex``); the CLI flag is ``--eta-convex`` unless
        ``flag`` says otherwise, the settings key and the JSON key are ``name``.
    type : {int, float, str, bool}
    default
        Take it from the library's constant.
    label : str
        The form's label ("Convex η").
    help : str
        One or two sentences: what it does, and its effect when raised.
    minimum, maximum : float, optional
        The valid range; ``min_open``/``max_open`` exclude the ends.
    choices : tuple, optional
        The allowed values of a ``str`` parameter; ``choice_help`` describes each.
    auto : bool
        ``auto`` is accepted; it becomes ``auto_value``.
    optional : bool
        ``None`` is accepted (shown as ``none_text``).
    typical
        The number the form shows while ``auto``/``off`` is ticked, and offers when it is
        unticked (defaults to the default, or the range's lower end).
    unit : str
        Shown after the value ("px", "faces").
    step, decimals : optional
        Hints for the form's spin box.
    advanced : bool
        Shown under "Advanced" in the form.
    cli : bool
        Whether the CLI has a flag for it.
    library_name : str, optional
        The keyword of the tool's library function that takes this value (default: ``name``;
        ``""`` when no library keyword matches, e.g. an app-level option). The agreement
        test checks the library's default against :attr:`default`.
    used_when : callable, optional
        ``used_when(values) -> bool`` on the validated values of the whole set: whether this
        parameter is used with the others as they are (flow's block size only by block matching
        or a block-matching seed). The form hides it while it is not used; the CLI, presets
        and validation are unchanged.
    display : bool
        Display-only: it changes how a result is shown or exported (a colour map, an
        opacity, a picture style), never what is computed. No stage reads it
        (:mod:`app.tools.stages`); the window redraws without a job when it changes.
    """

    name: str
    type: type
    default: Any
    label: str
    help: str
    minimum: float | None = None
    maximum: float | None = None
    min_open: bool = False
    max_open: bool = False
    choices: tuple = ()
    choice_help: Mapping[str, str] = field(default_factory=dict)
    auto: bool = False
    auto_value: Any = AUTO
    optional: bool = False
    none_text: str = "off"
    typical: Any = None
    unit: str = ""
    step: float | None = None
    decimals: int | None = None
    advanced: bool = False
    cli: bool = True
    flag: str | None = None
    metavar: str | None = None
    library_name: str | None = None
    display: bool = False
    used_when: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.type not in (int, float, str, bool):
            raise TypeError(f"parameter {self.name}: type must be int, float, str or bool")
        # the default must itself be valid: a declaration error, not a user error
        try:
            self.validate(self.default)
        except ParameterError as exc:
            raise TypeError(f"parameter {self.name}: invalid default {self.default!r} ({exc})") from None

    @property
    def shown_value(self):
        """What the form's spin box shows while ``auto``/``off`` is ticked."""
        if self.typical is not None:
            return self.typical
        if self.default is not None and not self.is_auto(self.default):
            return self.default
        if self.minimum is not None:
            return self.type(self.minimum) if self.type in (int, float) else self.minimum
        return self.type() if self.type in (int, float) else ""

    # -- names ------------------------------------------------------------------
    @property
    def option(self) -> str:
        """The CLI flag (``--eta-convex``)."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def display_name(self) -> str:
        return self.name.replace("_", "-")

    def range_text(self) -> str:
        if self.choices:
            return ", ".join(str(c) for c in self.choices)
        lo = "-inf" if self.minimum is None else _fmt_num(self.minimum)
        hi = "inf" if self.maximum is None else _fmt_num(self.maximum)
        return f"{'(' if self.min_open or self.minimum is None else '['}{lo}, {hi}{')' if self.max_open or self.maximum is None else ']'}"

    # -- values -----------------------------------------------------------------
    def is_auto(self, value) -> bool:
        return self.auto and (value is self.auto_value or value == self.auto_value
                              or (isinstance(value, str) and value.strip().lower() == AUTO))

    def validate(self, value):
        """The canonical value for ``value`` (also parses text), or :class:`ParameterError`."""
        # fast path (a run validates every parameter, ~1 us each on a slow host): a number of the
        # parameter's own type inside its range, or one of a text parameter's choices, is already
        # canonical; anything else (and every error) goes the full way, :meth:`_validate`
        t = type(value)
        if (t is int and self.type is int) or (t is float and self.type is float):
            lo, hi = self.minimum, self.maximum
            if not ((self.auto and (value is self.auto_value or value == self.auto_value))
                    or (t is float and not math.isfinite(value))
                    or (lo is not None and (value < lo or (self.min_open and value == lo)))
                    or (hi is not None and (value > hi or (self.max_open and value == hi)))
                    or (self.choices and value not in self.choices)):
                return value
        elif t is str and self.type is str and not self.auto and self.choices and value in self.choices:
            return value
        return self._validate(value)

    def _validate(self, value):
        name = self.display_name
        if self.auto and self.is_auto(value):
            return self.auto_value
        if value is None or (isinstance(value, str) and value.strip().lower() in _NONE_WORDS
                             and self.type is not str):
            if self.optional:
                return None
            if value is None:
                raise ParameterError(f"{name} needs a value" + (" or 'auto'" if self.auto else ""))
        if self.type is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, int | float) and value in (0, 1):
                return bool(value)
            t = str(value).strip().lower()
            if t in ("1", "true", "yes", "on"):
                return True
            if t in ("0", "false", "no", "off"):
                return False
            raise ParameterError(f"{name} must be true or false, not {value!r}")
        if self.type is str:
            v = str(value)
            if self.choices and v not in self.choices:
                low = {str(c).lower(): c for c in self.choices}
                if v.lower() in low:
                    return low[v.lower()]
                raise ParameterError(f"{name} must be one of {', '.join(map(str, self.choices))}, not {v!r}")
            return v
        # numbers
        if isinstance(value, bool):
            raise ParameterError(f"{name} must be a number, not {value!r}")
        try:
            if self.type is int:
                if isinstance(value, float):
                    if not value.is_integer():
                        raise ValueError
                    v = int(value)
                else:
                    v = int(str(value).strip())
            else:
                v = float(value)
        except (TypeError, ValueError):
            kind = "a whole number" if self.type is int else "a number"
            extra = " or 'auto'" if self.auto else (f" or '{self.none_text}'" if self.optional else "")
            raise ParameterError(f"{name} must be {kind}{extra}, not {value!r}") from None
        if self.type is float and not math.isfinite(v):
            raise ParameterError(f"{name} must be a finite number, not {value!r}")
        lo, hi = self.minimum, self.maximum
        bad = ((lo is not None and (v < lo or (self.min_open and v == lo)))
               or (hi is not None and (v > hi or (self.max_open and v == hi))))
        if bad:
            raise ParameterError(f"{name} must lie in {self.range_text()}, not {_fmt_num(v)}")
        if self.choices and v not in self.choices:
            raise ParameterError(f"{name} must be one of {', '.join(map(str, self.choices))}, not {v}")
        return v

    def to_text(self, value) -> str:
        """The value as typed on the command line (``auto``, ``off``, ``0.05``)."""
        if self.auto and self.is_auto(value):
            return AUTO
        if value is None:
            return self.none_text
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, float):
            return repr(value) if not value.is_integer() else _fmt_num(value)
        return str(value)

    def to_json(self, value):
        if self.auto and self.is_auto(value):
            return AUTO
        return value

    # -- CLI ----------------------------------------------------------------------
    def add_argument(self, parser: argparse.ArgumentParser) -> None:
        extra = []
        if self.auto:
            extra.append("'auto'")
        if self.optional:
            extra.append(f"'{self.none_text}'")
        if self.choices:
            metavar = self.metavar or "{" + ",".join(map(str, self.choices)) + "}"
        else:
            base = self.metavar or {int: "N", float: "X", str: "TEXT", bool: "BOOL"}[self.type]
            metavar = "|".join([base] + [e.strip("'") for e in extra])
        default = self.to_text(self.default)
        rng = "" if self.type in (str, bool) or (self.minimum is None and self.maximum is None) \
            else f" in {self.range_text()}"
        unit = f" {self.unit}" if self.unit else ""
        help_text = f"{self.help}{rng and ' Range' + rng}{unit} (default: {default})."
        help_text = help_text.replace("%", "%%")

        def parse(text, p=self):
            try:
                return p.validate(text)
            except ParameterError as exc:
                raise argparse.ArgumentTypeError(str(exc)) from None

        parse.__name__ = self.name  # argparse names the type in its messages
        parser.add_argument(self.option, dest=self.name, metavar=metavar, type=parse,
                            default=argparse.SUPPRESS, help=help_text)


class ParamSet:
    """An ordered list of :class:`Param` with validation, presets and CLI mapping."""

    def __init__(self, params: Iterable[Param]):
        self.params: tuple[Param, ...] = tuple(params)
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise TypeError(f"duplicate parameter names in {names}")
        self._by_name = {p.name: p for p in self.params}

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params)

    def __len__(self) -> int:
        return len(self.params)

    def __getitem__(self, name: str) -> Param:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def names(self) -> list[str]:
        return [p.name for p in self.params]

    def defaults(self) -> dict:
        return {p.name: p.default for p in self.params}

    def display_names(self) -> list[str]:
        """The display-only parameters (:attr:`Param.display`)."""
        return [p.name for p in self.params if p.display]

    def unused(self, values: Mapping[str, Any]) -> list[str]:
        """The parameters that ``values`` make unused (:attr:`Param.used_when`)."""
        out = []
        for p in self.params:
            if p.used_when is None:
                continue
            try:
                used = bool(p.used_when(values))
            except (KeyError, TypeError, ValueError):
                used = True
            if not used:
                out.append(p.name)
        return out

    def compute_names(self) -> list[str]:
        """The parameters that change what is computed."""
        return [p.name for p in self.params if not p.display]

    def validate(self, values: Mapping[str, Any] | None = None) -> dict:
        """Every parameter's canonical value: ``values`` over the defaults.

        Unknown names raise :class:`ParameterError` (a typo in a preset must not pass
        silently).
        """
        values = dict(values or {})
        unknown = [k for k in values if k not in self._by_name]
        if unknown:
            raise ParameterError(f"unknown parameter {unknown[0]!r}; known: {', '.join(self.names())}")
        return {p.name: p.validate(values[p.name]) if p.name in values else p.default for p in self.params}

    # -- presets ---------------------------------------------------------------------
    # -- presets (app.tools.presets) ------------------------------------------------------
    def to_json(self, values: Mapping[str, Any], *, tool: str = "") -> str:
        return _presets.to_json(self, values, tool=tool)

    def from_json(self, text: str, *, tool: str = "", source: str = "preset") -> dict:
        """Parameter values from a preset's text (validated; missing ones take defaults)."""
        return _presets.from_json(self, text, tool=tool, source=source)

    def load_json(self, path: str | os.PathLike, *, tool: str = "") -> dict:
        return _presets.load_json(self, path, tool=tool)

    def save_json(self, path: str | os.PathLike, values: Mapping[str, Any], *, tool: str = "") -> pathlib.Path:
        return _presets.save_json(self, path, values, tool=tool)

    # -- CLI -----------------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser, *, title: str = "parameters",
                      preset: bool = True) -> None:
        """A flag per parameter (values parsed and validated by argparse), and ``--params FILE``
        (unless ``preset`` is False)."""
        group = parser.add_argument_group(title)
        for p in self.params:
            if p.cli:
                p.add_argument(group)
        if preset:
            group.add_argument("--params", metavar="FILE", type=pathlib.Path, default=None, dest="params_file",
                               help="a JSON preset (from the window's Save preset, or --save-params); "
                                    "flags given as well override its values")

    def from_args(self, args: argparse.Namespace, *, tool: str = "") -> dict:
        """The validated values: defaults, then the preset (``--params``), then the flags."""
        values = {}
        preset = getattr(args, "params_file", None)
        if preset is not None:
            values.update(self.load_json(preset, tool=tool))
        for p in self.params:
            if p.cli and hasattr(args, p.name):
                values[p.name] = getattr(args, p.name)
        return self.validate(values)

    def to_cli(self, values: Mapping[str, Any], *, all_values: bool = False) -> list[str]:
        """The flags that reproduce ``values`` (those that differ from the defaults)."""
        vals = self.validate(values)
        out: list[str] = []
        for p in self.params:
            if not p.cli:
                continue
            v = vals[p.name]
            if not all_values and p.to_text(v) == p.to_text(p.default):
                continue
            out += [p.option, p.to_text(v)]
        return out
