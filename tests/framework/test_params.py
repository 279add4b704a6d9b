"""Typed parameters: validation messages, auto/off values, CLI text, presets."""

from __future__ import annotations

import argparse

import pytest

from app.tools.params import Param, ParameterError, ParamSet

PS = ParamSet([
    Param("k", int, "auto", "Parts", "parts", minimum=1, maximum=100, auto=True),
    Param("delta", float, None, "Delta", "delta", minimum=0, maximum=1, auto=True, auto_value=None, typical=0.05),
    Param("eta", float, 0.5, "Eta", "eta", minimum=0, maximum=1, min_open=True),
    Param("method", str, "a", "Method", "m", choices=("a", "b")),
    Param("limit", int, None, "Limit", "l", minimum=4, maximum=10, optional=True),
    Param("flag", bool, False, "Flag", "f"),
])


@pytest.mark.parametrize("name, value, expected", [
    ("k", "7", 7), ("k", "AUTO", "auto"), ("k", 3.0, 3), ("delta", "auto", None), ("delta", "0.25", 0.25),
    ("eta", 1, 1.0), ("method", "B", "b"), ("limit", "off", None), ("limit", None, None), ("limit", "5", 5),
    ("flag", "yes", True), ("flag", 0, False),
])
def test_values_are_parsed(name, value, expected):
    assert PS[name].validate(value) == expected


@pytest.mark.parametrize("name, value, message", [
    ("k", "0", "k must lie in [1, 100], not 0"),
    ("k", "2.5", "k must be a whole number or 'auto', not '2.5'"),
    ("delta", "nan", "delta must be a finite number"),
    ("eta", 0, "eta must lie in (0, 1], not 0"),
    ("method", "c", "method must be one of a, b, not 'c'"),
    ("limit", 3, "limit must lie in [4, 10], not 3"),
    ("limit", "x", "limit must be a whole number or 'off', not 'x'"),
    ("flag", "maybe", "flag must be true or false"),
    ("eta", None, "eta needs a value"),
])
def test_bad_values_get_one_line(name, value, message):
    with pytest.raises(ParameterError) as e:
        PS[name].validate(value)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_a_bad_default_is_a_declaration_error():
    with pytest.raises(TypeError, match="invalid default"):
        Param("x", int, 0, "X", "x", minimum=1)


def test_cli_text_round_trips_and_only_changes_are_listed():
    vals = PS.validate({"k": 5, "limit": 6, "flag": True})
    flags = PS.to_cli(vals)
    assert flags == ["--k", "5", "--limit", "6", "--flag", "true"]
    parser = argparse.ArgumentParser()
    PS.add_arguments(parser)
    args = parser.parse_args(flags)
    assert PS.from_args(args) == vals


def test_preset_then_flags(tmp_path):
    preset = PS.save_json(tmp_path / "p.json", {"k": 9, "method": "b"}, tool="t")
    parser = argparse.ArgumentParser()
    PS.add_arguments(parser)
    args = parser.parse_args(["--params", str(preset), "--k", "3"])
    assert PS.from_args(args, tool="t") == {**PS.defaults(), "k": 3, "method": "b"}
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ParameterError, match="bad.json: not a JSON preset"):
        PS.load_json(bad)
