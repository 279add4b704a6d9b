"""Param.validate's fast path gives what the full path gives: the same value of the same type, or
the same error, for every parameter of every tool and many values (session 8)."""

from __future__ import annotations

import math

import pytest

from app.tools import echo, flow, imseg, mesh_seg, mvs
from app.tools.params import ParameterError

PARAMSETS = {"mesh": mesh_seg.PARAMS, "flow": flow.PARAMS, "echo": echo.PARAMS, "mvs": mvs.PARAMS,
             "imseg": imseg.PARAMS}


def _values(p):
    vals = [0, 1, -1, 2, 3, 4, 5, 7, 8, 100, 10**9, 0.0, 0.5, 1.0, -0.5, 2.5, 1e9, math.inf, -math.inf, math.nan,
            True, False, "auto", "1", "x", "", None]
    for b in (p.minimum, p.maximum, p.default):
        if isinstance(b, int | float) and not isinstance(b, bool):
            vals += [b, type(b)(b), b + 1, b - 1, float(b), float(b) + 0.25, float(b) - 0.25]
            if isinstance(b, float):
                vals += [math.nextafter(b, math.inf), math.nextafter(b, -math.inf)]
    vals += list(p.choices or ())
    vals += [str(c).upper() for c in (p.choices or ()) if isinstance(c, str)]
    if p.auto:
        vals.append(p.auto_value)
    return vals


def _outcome(fn, v):
    try:
        r = fn(v)
    except ParameterError as exc:
        return ("error", str(exc))
    return ("ok", type(r), r if not (isinstance(r, float) and math.isnan(r)) else "nan")


@pytest.mark.parametrize("tool", sorted(PARAMSETS))
def test_the_fast_path_equals_the_full_path(tool):
    checked = fast = 0
    for p in PARAMSETS[tool].params:
        for v in _values(p):
            a, b = _outcome(p.validate, v), _outcome(p._validate, v)
            assert a == b, (tool, p.name, v, a, b)
            checked += 1
            fast += a[0] == "ok"
    assert checked > 100 and fast > 10


def test_the_fast_path_is_taken_for_a_number_in_range(monkeypatch):
    p = next(q for q in imseg.PARAMS.params if q.name == "coarseness")
    monkeypatch.setattr(type(p), "_validate", lambda self, v: pytest.fail("the full path ran"))
    assert p.validate(float(p.default)) == p.default
