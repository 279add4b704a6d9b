"""Checks of scalar arguments shared by the compute library: each returns the value converted
(``int`` or ``float``) or raises ``error`` (an :class:`~gpu_kernels.errors.InputError` by
default; a tool passes its own subclass) with one line that names the argument.

Example
-------
>>> from gpu_kernels.checks import check_int
>>> check_int("window", 7.0, 3, 31)
7
>>> check_int("window", 2, 3, 31)
Traceback (most recent call last):
...
gpu_kernels.errors.InputError: window must be between 3 and 31, got 2
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.errors import InputError

__all__ = ["check_int", "check_float"]


def check_int(name: str, value, lo: int, hi: int | None = None, choices=None, *,
              error: type[InputError] = InputError) -> int:
    """``value`` as an int in ``lo..hi`` (or one of ``choices``); 7.0 counts as 7, 2.5 does not."""
    try:
        iv = int(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{name} must be an integer, got {value!r}") from None
    if iv != value and not (isinstance(value, float) and value.is_integer()):
        raise error(f"{name} must be an integer, got {value!r}")
    if choices is not None and iv not in choices:
        raise error(f"{name} must be one of {', '.join(map(str, choices))}, got {iv}")
    if iv < lo or (hi is not None and iv > hi):
        rng = f"between {lo} and {hi}" if hi is not None else f">= {lo}"
        raise error(f"{name} must be {rng}, got {iv}")
    return iv


def check_float(name: str, value, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False,
                error: type[InputError] = InputError) -> float:
    """``value`` as a finite float, ``>= lo`` (``> lo`` with ``lo_open``) and ``<= hi``."""
    try:
        fv = float(value)
    except (TypeError, ValueError):
        raise error(f"{name} must be a number, got {value!r}") from None
    if not np.isfinite(fv):
        raise error(f"{name} must be a finite number, got {value!r}")
    if lo is not None and (fv < lo or (lo_open and fv == lo)):
        raise error(f"{name} must be {'>' if lo_open else '>='} {lo}, got {fv}")
    if hi is not None and fv > hi:
        raise error(f"{name} must be <= {hi}, got {fv}")
    return fv
