"""Issue 20: the echo, flow and MVS display controls are display-only Params of their tools.

The tab's widget and the declared Param stay one value (a widget edit is a form edit, and a
preset, an undo or a restored setting moves the widget); a display edit redraws the shown
result without a job, never changes the result's arrays, and is kept by presets and the
history; no stage reads a display parameter and no CLI flag is made for one."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from test_live_tabs import _arrays, _input  # noqa: E402

from app.tools import tool_by_name  # noqa: E402
from app.tools.stages import StageCache  # noqa: E402
from app.ui.settings import widget_value  # noqa: E402

pytestmark = pytest.mark.gui

#: a display Param of each tool, a value other than its default, and what the widget then shows
EDITS = {
    "echo": [("overlay", "Divergence", "Divergence"), ("opacity", 0.8, 80), ("arrow_step", 9, 9),
             ("arrows", False, False)],
    "flow": [("flow_style", "Arrows", "Arrows"), ("flow_opacity", 0.25, 25), ("hide_below", 0.5, 0.5),
             ("right_view", "Quality map", "Quality map"), ("arrow_spacing", 24, 24)],
    "mvs": [("show", "Confidence", "Confidence"), ("min_confidence", 0.3, 30), ("frusta", False, False)],
}


@pytest.mark.parametrize("name", ["echo", "flow", "mvs"])
def test_display_params_are_declared_once_and_compute_nothing(name):
    tool = tool_by_name(name)
    names = [n for n, _, _ in EDITS[name]]
    for n in names:
        p = tool.params[n]
        assert p.display and not p.cli, n
    used = tool.pipeline().used_params()
    assert not used & set(tool.params.display_names())
    flags = tool.params.to_cli({**tool.params.defaults(), **{n: v for n, v, _ in EDITS[name]}})
    assert flags == []                       # view-only: no CLI flag, Copy command unchanged
    doc = tool.params.to_json({n: v for n, v, _ in EDITS[name]}, tool=name)
    assert tool.params.from_json(doc, tool=name)[names[0]] == EDITS[name][0][1]   # presets keep them


@pytest.mark.parametrize("name", ["echo", "flow", "mvs"])
def test_the_tab_binds_its_widgets_to_the_params(name, open_tab, qtbot, tmp_path):
    tool = tool_by_name(name)
    tab = open_tab(tool.tab_class())
    for n in tool.params.display_names():
        w = tab.bound_display_widget(n)
        assert w is not None, n                          # shown by the tab's own widget ...
        assert not tab.form.is_shown(n)                  # ... not twice
        if hasattr(w, "count"):                          # the widget offers exactly the declared choices
            assert tuple(w.itemText(i) for i in range(w.count())) == tuple(tool.params[n].choices), n
    assert tab.form.values() == tool.params.validate({})  # the widgets start at the declared defaults
    for n, v, shown in EDITS[name]:
        tab.form.set_value(n, v)                         # a preset, an undo or a restored setting ...
        assert widget_value(tab.bound_display_widget(n)) == shown, n   # ... moves the widget
    tab.form.reset()
    for n, v, shown in EDITS[name]:
        w = tab.bound_display_widget(n)
        if hasattr(w, "findText"):
            w.setCurrentIndex(w.findText(shown))
        elif hasattr(w, "setChecked"):
            w.setChecked(shown)
        else:
            w.setValue(shown)
        assert tab.form.values()[n] == (pytest.approx(v) if isinstance(v, float) else v), n


@pytest.mark.parametrize("name", ["echo", "flow", "mvs"])
def test_a_display_edit_redraws_without_a_job_and_keeps_the_result(name, open_tab, qtbot, tmp_path):
    tool = tool_by_name(name)
    data, base, _ = _input(name)
    tab = open_tab(tool.tab_class())
    tab.host.device = "cpu"
    tab.cache = StageCache(cap_bytes=256 << 20)
    tab.set_input(data, getattr(data, "path", None) or tmp_path / f"{name}.in")
    tab.form.set_values(base)
    with qtbot.waitSignal(tab.result_shown, timeout=120000):
        assert tab.run(device="cpu")
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=60000)
    before = {k: v.copy() for k, v in _arrays(tab.result).items()}
    starts, said = [], []
    tab.runner.running_changed.connect(lambda on: starts.append(on) if on else None)
    tab.status_message.connect(said.append)
    tab.live_check.setChecked(True)
    qtbot.waitUntil(lambda: not tab.runner.is_running() and not tab._live_timer.isActive(), timeout=60000)
    starts.clear()
    said.clear()
    n, v, shown = EDITS[name][0]
    w = tab.bound_display_widget(n)
    w.setCurrentIndex(w.findText(shown))               # the user picks another view
    qtbot.wait(400)                                      # past the Live debounce
    assert not tab.runner.is_running() and not starts    # no job
    assert tab.shown_params()[n] == v                    # what is shown is described (presets, Copy command)
    assert any("display only, no job" in m for m in said), said
    after = _arrays(tab.result)
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
    qtbot.wait(300)                                      # the history step is recorded after its debounce
    assert tab.undo()
    assert tab.form.values()[n] == tool.params[n].default and widget_value(w) == tool.params[n].default


@pytest.mark.parametrize("name", ["mvs", "echo"])
def test_a_pin_never_widens_the_tab(name, open_tab, qtbot, tmp_path):
    """The pinned copy of a wide view (MVS: map and 3-D view) may shrink: pinning in a
    1280 x 800 window once made it 1883 px wide, past the screen."""
    tool = tool_by_name(name)
    data, base, _ = _input(name)
    tab = open_tab(tool.tab_class(), size=(1000, 700))
    tab.host.device = "cpu"
    tab.set_input(data, getattr(data, "path", None) or tmp_path / f"{name}.in")
    tab.form.set_values(base)
    with qtbot.waitSignal(tab.result_shown, timeout=120000):
        assert tab.run(device="cpu")
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=60000)
    w0 = tab.width()
    assert tab.pin()
    qtbot.wait(300)
    assert tab.width() <= w0 + 8        # a splitter handle at most (it grew by ~650 px before)
