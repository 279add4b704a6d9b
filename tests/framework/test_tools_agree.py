"""For every tool: the library, the CLI and the form agree on every parameter's default and
range, because all three come from the one declaration (and this checks that they do)."""

from __future__ import annotations

import argparse
import inspect

import pytest

from app.commands import command_modules
from app.commands.common import ArgumentParser
from app.tools import TOOLS
from app.tools.params import AUTO, ParameterError


def _cases():
    return [(t, p) for t in TOOLS for p in t.params]


def _id(case):
    t, p = case
    return f"{t.name}:{p.name}"


@pytest.fixture(scope="module")
def subparsers():
    parser = ArgumentParser(prog="gpulab")
    sub = parser.add_subparsers(dest="command")
    for mod in command_modules():
        mod.register(sub)
    return sub.choices


def test_every_tool_has_a_library_entry_point_and_a_command(subparsers):
    for t in TOOLS:
        assert t.library is not None, t.name
        assert t.name in subparsers, t.name


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_library_default_equals_the_declared_default(case):
    tool, p = case
    if p.library_name == "":
        pytest.skip(f"{p.name} is an app-level option of {tool.name}, not a library keyword")
    sig = inspect.signature(tool.library)
    name = p.library_name or p.name
    assert name in sig.parameters, f"{tool.library.__name__} has no keyword {name!r}"
    lib = sig.parameters[name].default
    assert lib is not inspect.Parameter.empty, f"{name} has no default in the library"
    mine = p.default
    if p.auto and p.is_auto(mine):
        assert lib == p.auto_value or lib is p.auto_value, (name, lib, mine)
    else:
        assert lib == mine, (name, lib, mine)


@pytest.mark.parametrize("case", _cases(), ids=_id)
def test_cli_flag_parses_like_the_declaration(case, subparsers):
    tool, p = case
    if not p.cli:
        pytest.skip("not on the command line")
    parser = subparsers[tool.name]
    action = next((a for a in parser._actions if a.dest == p.name), None)
    assert action is not None and p.option in action.option_strings
    assert action.default is argparse.SUPPRESS  # so a preset is not overridden by unset flags
    parse = action.type
    assert parse(p.to_text(p.default)) == p.default or (p.auto and parse(AUTO) == p.auto_value)
    if p.type in (int, float):
        for edge, open_ in ((p.minimum, p.min_open), (p.maximum, p.max_open)):
            if edge is None:
                continue
            text = str(p.type(edge))
            if open_:
                with pytest.raises(argparse.ArgumentTypeError):
                    parse(text)
            else:
                assert parse(text) == p.type(edge)
        if p.minimum is not None:
            with pytest.raises(argparse.ArgumentTypeError):
                parse(str(p.minimum - 1))
        if p.maximum is not None:
            with pytest.raises(argparse.ArgumentTypeError):
                parse(str(p.maximum + 1))
    if p.choices:
        for c in p.choices:
            assert parse(str(c)) == c
        with pytest.raises(argparse.ArgumentTypeError):
            parse("no-such-choice")


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_presets_round_trip_and_typos_are_refused(tool, tmp_path):
    vals = tool.params.defaults()
    path = tool.params.save_json(tmp_path / "p.json", vals, tool=tool.name)
    assert tool.params.load_json(path, tool=tool.name) == vals
    with pytest.raises(ParameterError, match="unknown parameter"):
        tool.params.from_json('{"params": {"no_such_param": 1}}')
    with pytest.raises(ParameterError, match="is for"):
        tool.params.from_json('{"tool": "not-this-tool", "params": {}}', tool=tool.name)


@pytest.mark.gui
@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_the_form_shows_the_defaults_and_the_ranges(qtbot, tool):
    pytest.importorskip("PySide6")
    from PySide6.QtWidgets import QComboBox, QDoubleSpinBox, QSpinBox

    from app.ui.forms import ParamForm

    form = ParamForm(tool.params)
    qtbot.addWidget(form)
    assert form.values() == tool.params.defaults()
    for p in tool.params:
        ed = form.editor(p.name)
        if isinstance(ed, QSpinBox | QDoubleSpinBox):
            if p.minimum is not None:
                assert ed.minimum() == pytest.approx(p.minimum, abs=10.0 ** -ed.decimals() * 1.01
                                                     if isinstance(ed, QDoubleSpinBox) else 1), p.name
            if p.maximum is not None:
                assert ed.maximum() == pytest.approx(p.maximum, abs=10.0 ** -ed.decimals() * 1.01
                                                     if isinstance(ed, QDoubleSpinBox) else 1), p.name
            assert (form.flag(p.name) is not None) == (p.auto or p.optional), p.name
        if isinstance(ed, QComboBox):
            assert [ed.itemData(i) for i in range(ed.count())] == list(p.choices)
