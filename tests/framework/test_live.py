"""Live tuning in a tab (ToolTab, offscreen, CPU): an edit re-runs only the stages it affects
and shows what a full run gives; edits are debounced; a stale run never overwrites a newer
result; a new input clears the tab's cache; a tiny cap still gives correct results; undo and
redo restore parameters and results; Pin shows both results and what differs."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QLabel  # noqa: E402

from app.tabs.base import LIVE_DEBOUNCE_MS, ToolTab  # noqa: E402
from app.tools import Param, ParamSet, Tool  # noqa: E402
from app.tools.stages import Pipeline, Stage, StageCache  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402

pytestmark = pytest.mark.gui

CALLS: list[tuple[str, dict]] = []
GATE = threading.Event()  # a stage waits on it when level == 0.99 (a slow, stale run)


@dataclass
class Res:
    value: np.ndarray
    text: str
    params: dict
    device: str


def _blur(ctx):
    CALLS.append(("blur", dict(ctx.p)))
    return ctx.data * (1.0 / (1.0 + ctx.p["blur"]))


def _level(ctx):
    CALLS.append(("level", dict(ctx.p)))
    if ctx.p["level"] == 0.99:
        GATE.wait(5)  # ignores Cancel, like one long library call
    return ctx["blur"] * ctx.p["gain"] > ctx.p["level"]


def _finish(data, out, p, *, device, elapsed):
    return Res(out["level"], "", p, device.label)


def _display(r, p):
    return replace(r, text=f"{int(r.value.sum())} {p['style']}", params={**r.params, "style": p["style"]})


PARAMS = ParamSet([
    Param("blur", float, 0.0, "Blur", "first stage", minimum=0, maximum=10, step=0.5),
    Param("level", float, 0.5, "Level", "second stage", minimum=0, maximum=1, step=0.01),
    Param("gain", float, 1.0, "Gain", "second stage, only with a blur", minimum=0.5, maximum=2, step=0.25,
          used_when=lambda v: v["blur"] > 0),
    Param("style", str, "plain", "Style", "display only", choices=("plain", "fancy"), display=True),
])
PIPELINE = Pipeline([Stage("blur", _blur, params=("blur",)), Stage("level", _level, params=("level", "gain"))],
                    finish=_finish, params=PARAMS)


def run(data, params, *, device, progress=None):
    p = PARAMS.validate(params)
    return _display(PIPELINE.run(data, p, device=device, progress=progress), p)


TOOL = Tool(name="live-test", title="Live test", key="live-test", description="A test tool.", params=PARAMS,
            stages=PIPELINE, display=_display, load=lambda path, *, progress=None: np.load(path), run=run,
            summary=lambda r: [r.text])


class LiveTab(ToolTab):
    tool = TOOL

    def build_view(self):
        self.label = QLabel("nothing")
        return self.label

    def show_input(self, data):
        self.label.setText("input")

    def show_result(self, result):
        self.shown.append(result)
        self.label.setText(result.text)

    shown: list


CPU = get_backend("cpu")
IMG = np.linspace(0, 1, 400).reshape(20, 20)


@pytest.fixture
def tab(open_tab, tmp_path):
    CALLS.clear()
    GATE.clear()
    t = open_tab(LiveTab)
    t.shown = []
    t.cache = StageCache(cap_bytes=64 << 20)
    t.host.device = "cpu"
    t.set_input(IMG, tmp_path / "img.npy")
    yield t
    GATE.set()


def full(values):
    return run(IMG, values, device=CPU)


def wait_idle(qtbot, tab, timeout=10000):
    qtbot.waitUntil(lambda: not tab.runner.is_running() and not tab._live_timer.isActive()
                    and not tab._pending_live, timeout=timeout)
    qtbot.wait(20)


def test_an_edit_with_live_on_reruns_only_the_stage_it_affects(tab, qtbot):
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    assert tab.result is not None and [c[0] for c in CALLS] == ["blur", "level"]
    CALLS.clear()
    tab.form.editor("level").setValue(0.3)
    wait_idle(qtbot, tab)
    assert [c[0] for c in CALLS] == ["level"]  # the blur stage came from the cache
    np.testing.assert_array_equal(tab.result.value, full({"level": 0.3}).value)
    assert tab.result.params["level"] == 0.3
    assert tab.last_report.ran == ["level"] and "stage 2 of 2" in tab.last_report.describe()


def test_ten_quick_edits_give_at_most_two_runs_and_end_on_the_last_value(tab, qtbot):
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    CALLS.clear()
    n_shown = len(tab.shown)
    for i in range(10):
        tab.form.editor("level").setValue(0.1 + 0.05 * i)
        qtbot.wait(5)
    wait_idle(qtbot, tab)
    assert len([c for c in CALLS if c[0] == "level"]) <= 2
    assert len(tab.shown) - n_shown <= 2
    assert tab.result.params["level"] == pytest.approx(0.55)
    np.testing.assert_array_equal(tab.result.value, full({"level": 0.55}).value)


def test_a_slow_stale_run_never_overwrites_a_newer_result(tab, qtbot):
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    tab.form.editor("level").setValue(0.99)  # this run blocks in its stage
    qtbot.waitUntil(lambda: tab.runner.is_running(), timeout=5000)
    tab.form.editor("level").setValue(0.2)  # a newer request supersedes it
    qtbot.wait(LIVE_DEBOUNCE_MS + 100)
    assert tab._pending_live
    GATE.set()  # the stale run now finishes
    wait_idle(qtbot, tab)
    assert all(r.params["level"] != 0.99 for r in tab.shown)
    assert tab.result.params["level"] == 0.2
    np.testing.assert_array_equal(tab.result.value, full({"level": 0.2}).value)


def test_display_only_parameters_redraw_without_a_job(tab, qtbot):
    assert tab.run()
    wait_idle(qtbot, tab)
    CALLS.clear()
    starts = []
    tab.runner.running_changed.connect(lambda on: starts.append(on))
    tab.form.set_value("style", "fancy")
    assert tab.label.text().endswith("fancy") and tab.result.params["style"] == "fancy"
    qtbot.wait(LIVE_DEBOUNCE_MS + 50)
    assert CALLS == [] and starts == []
    assert "--style fancy" in tab.command_line()


def test_a_new_input_clears_the_tabs_cache(tab, qtbot, tmp_path):
    assert tab.run()
    wait_idle(qtbot, tab)
    assert tab.cache.keys(tab.settings_key)
    tab.set_input(IMG * 0.5, tmp_path / "other.npy")
    assert tab.cache.keys(tab.settings_key) == []
    CALLS.clear()
    assert tab.run()
    wait_idle(qtbot, tab)
    assert [c[0] for c in CALLS] == ["blur", "level"]
    np.testing.assert_array_equal(tab.result.value, run(IMG * 0.5, {}, device=CPU).value)
    # another device clears it too (the binding is per input and device)
    assert tab.cache.bind(tab.settings_key, tab._input_key, "cuda:0")
    assert tab.cache.keys(tab.settings_key) == []


def test_a_tiny_cap_still_gives_correct_results(tab, qtbot):
    tab.cache = StageCache(cap_bytes=IMG.nbytes + 10)  # room for one stage output
    tab.live_check.setChecked(True)
    for v in (0.3, 0.6, 0.2):
        tab.form.editor("level").setValue(v)
        wait_idle(qtbot, tab)
        np.testing.assert_array_equal(tab.result.value, full({"level": v}).value)
    tab.form.editor("blur").setValue(1.0)
    wait_idle(qtbot, tab)
    np.testing.assert_array_equal(tab.result.value, full({"level": 0.2, "blur": 1.0}).value)
    assert tab.cache.host_bytes <= tab.cache.cap_bytes


def _live_then_two_level_edits(tab, qtbot):
    """Live on, then level 0.5 -> 0.3 -> 0.7, each shown and recorded as a history step."""
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    for v in (0.3, 0.7):
        tab.form.editor("level").setValue(v)
        wait_idle(qtbot, tab)
    qtbot.wait(LIVE_DEBOUNCE_MS + 50)


def test_undo_and_redo_restore_parameters_and_cached_results(tab, qtbot):
    _live_then_two_level_edits(tab, qtbot)
    CALLS.clear()
    qtbot.keyClick(tab.form.editor("blur"), "z", modifier=qtbot_ctrl())  # Ctrl+Z from inside the tab
    wait_idle(qtbot, tab)
    if tab.form.values()["level"] != 0.3:  # the spin box took the key for its own undo
        assert tab.undo()
        wait_idle(qtbot, tab)
    assert tab.form.values()["level"] == 0.3 and tab.result.params["level"] == 0.3
    assert CALLS == []  # from the cache, not recomputed
    np.testing.assert_array_equal(tab.result.value, full({"level": 0.3}).value)
    CALLS.clear()
    assert tab.redo()
    wait_idle(qtbot, tab)
    assert tab.form.values()["level"] == 0.7 and tab.result.params["level"] == 0.7 and CALLS == []
    assert tab.undo() and tab.undo()
    wait_idle(qtbot, tab)
    assert tab.form.values()["level"] == 0.5 and not tab.can_undo()


def qtbot_ctrl():
    from PySide6.QtCore import Qt

    return Qt.KeyboardModifier.ControlModifier


def test_without_live_undo_shows_a_cached_result_and_edits_wait_for_run(tab, qtbot):
    assert tab.run()
    wait_idle(qtbot, tab)
    tab.form.editor("level").setValue(0.3)
    qtbot.wait(LIVE_DEBOUNCE_MS + 80)
    assert tab.result.params["level"] == 0.5  # Live is off: nothing ran
    assert tab.command_line().count("--level") == 0  # the command describes what is shown
    assert tab.run()
    wait_idle(qtbot, tab)
    assert "--level 0.3" in tab.command_line()
    CALLS.clear()
    assert tab.undo()
    wait_idle(qtbot, tab)
    assert tab.result.params["level"] == 0.5 and CALLS == []


def test_pin_shows_both_results_and_the_parameters_that_differ(tab, qtbot):
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    assert tab.pin()
    pinned_view = tab._pinned_slot["view"]
    assert tab.splitter.indexOf(tab._pinned_box) == 1 and tab.splitter.indexOf(tab.view) == 2
    assert tab.pinned_caption.full_text() == "Pinned — defaults"
    tab.form.editor("level").setValue(0.2)
    tab.form.set_value("style", "fancy")
    wait_idle(qtbot, tab)
    assert tab.label is not pinned_view and tab.label.text() == full({"level": 0.2, "style": "fancy"}).text
    assert pinned_view.text() == full({}).text
    rows = tab.differing_params()
    assert rows == [("Level", "0.5", "0.2"), ("Style", "plain", "fancy")]
    assert tab.compare_table.isVisible() and tab.compare_table.rowCount() == 2
    assert tab.compare_table.item(0, 1).text() == "0.5"
    tab.pin_button.setChecked(False)
    assert tab.pinned is None and not tab.compare_table.isVisible()
    assert tab._pinned_slot is None and tab.splitter.count() == 2


def test_live_is_remembered(tab, qtbot):
    from app.ui.settings import make_settings

    tab.live_check.setChecked(True)
    s = make_settings()
    s.beginGroup("live-test-remember")
    tab.save_settings(s)
    tab.live_check.setChecked(False)
    tab.restore_settings(s)
    s.endGroup()
    assert tab.live_check.isChecked()
    wait_idle(qtbot, tab)
    time.sleep(0.01)


def test_the_saved_preset_reproduces_the_result_shown(tab, qtbot, tmp_path):
    """Save preset describes what is on screen: a run with it gives the shown result."""
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    tab.form.editor("level").setValue(0.35)
    tab.form.set_value("style", "fancy")
    wait_idle(qtbot, tab)
    tab.live_check.setChecked(False)
    tab.form.editor("blur").setValue(2.0)  # edited, not run: not what is shown
    preset = tab.save_preset(tmp_path / "p.json")
    p = TOOL.params.load_json(preset, tool=TOOL.name)
    assert p["blur"] == 0.0 and p["level"] == 0.35 and p["style"] == "fancy"
    again = run(IMG, p, device=CPU)
    np.testing.assert_array_equal(again.value, tab.result.value)
    assert again.text == tab.result.text


def test_on_a_slow_device_live_says_what_a_change_costs(tab, qtbot):
    msgs: list[str] = []
    tab.status_message.connect(msgs.append)
    tab.slow_run_s = 0.0  # every run counts as slow (the setting live/slow_run_s; 2 s by default)
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    tab.form.editor("level").setValue(0.4)
    assert any("re-runs from stage 2 of 2 (level); last time" in m for m in msgs), msgs
    wait_idle(qtbot, tab)
    assert "re-ran from stage 2 of 2 (level)" in msgs[-1]
    msgs.clear()
    tab.form.editor("blur").setValue(1.5)
    assert any("re-runs from stage 1 of 2 (blur)" in m for m in msgs), msgs
    wait_idle(qtbot, tab)
    tab.form.editor("gain").setValue(1.5)              # used, with a blur: stage 2
    assert any("re-runs from stage 2 of 2 (level)" in m for m in msgs[-3:]), msgs
    wait_idle(qtbot, tab)
    tab.form.editor("blur").setValue(0.0)
    wait_idle(qtbot, tab)
    msgs.clear()
    tab.form.editor("gain").setValue(0.75)             # unused without a blur: names no stage
    assert not any("re-runs from stage" in m for m in msgs), msgs
    assert any("not used with the current settings" in m for m in msgs), msgs
    wait_idle(qtbot, tab)


def test_swipe_compares_the_pinned_and_the_live_picture(tab, qtbot):
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    assert not tab.swipe_button.isVisible() or tab.pinned is not None
    assert tab.pin() and tab.swipe_button.isVisibleTo(tab)
    tab.swipe_button.setChecked(True)
    sw = tab.swipe_view
    assert sw is not None and sw.isVisible() and not tab.view.isVisible() and not tab._pinned_box.isVisible()
    assert not sw.left.isNull() and not sw.right.isNull()
    assert sw.right.toImage() == sw.left.toImage()  # the same result, pinned and live
    tab.form.editor("level").setValue(0.2)  # the live picture follows the live result
    wait_idle(qtbot, tab)
    assert sw.left.size() == sw.right.size() and sw.right.toImage() != sw.left.toImage()
    sw.set_split(0.25)
    assert sw.split == 0.25
    pic = sw._target()   # the badges sit above the pictures, not over their titles
    assert all(not b.intersects(pic) and sw.rect().contains(b) for b in sw.badge_rects())
    tab.swipe_button.setChecked(False)
    assert tab.swipe_view is None and tab.view.isVisible() and tab._pinned_box.isVisible()
    tab.swipe_button.setChecked(True)
    tab.unpin()
    assert tab.swipe_view is None and tab.view.isVisible() and not tab.swipe_button.isVisibleTo(tab)


def test_with_live_on_a_new_input_shows_its_result(tab, qtbot, tmp_path):
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    with qtbot.waitSignal(tab.result_shown, timeout=5000):
        tab.set_input(IMG * 0.25, tmp_path / "quarter.npy")
    wait_idle(qtbot, tab)
    np.testing.assert_array_equal(tab.result.value, run(IMG * 0.25, {}, device=CPU).value)


def test_the_history_menu_lists_each_change_and_jumps_to_a_step(tab, qtbot):
    _live_then_two_level_edits(tab, qtbot)
    steps = tab.history_steps()
    assert steps[0] == "Start" and steps[1].endswith("0.5 → 0.3") and steps[2].endswith("0.3 → 0.7"), steps
    tab._fill_history_menu()
    acts = tab.history_menu.actions()
    assert [a.text().split(".")[0] for a in acts] == ["2", "1", "0"]    # the newest first
    assert acts[0].isChecked() and not acts[2].isChecked()
    CALLS.clear()
    acts[2].trigger()                                                   # back to the start, from the cache
    wait_idle(qtbot, tab)
    assert tab.form.values()["level"] == 0.5 and tab.result.params["level"] == 0.5 and CALLS == []
    assert tab.history_index == 0 and tab.can_redo()
    assert tab.go_to_step(2)
    wait_idle(qtbot, tab)
    assert tab.form.values()["level"] == 0.7 and not tab.can_redo()


def test_pin_caption_names_labels_and_an_equal_pair_says_so(tab, qtbot, tmp_path, monkeypatch):
    """The pinned caption speaks like the table and the history (labels, not CLI flags); when
    the live parameters come back to the pinned ones the table says so instead of showing a
    header over an empty row; the copied command names the input by an absolute path."""
    tab.live_check.setChecked(True)
    tab.form.editor("level").setValue(0.3)
    wait_idle(qtbot, tab)
    assert tab.pin()
    assert tab.pinned_caption.full_text() == "Pinned — Level 0.3"
    tab.form.editor("level").setValue(0.6)
    wait_idle(qtbot, tab)
    assert tab.compare_table.rowCount() == 1 and tab.compare_table.item(0, 0).text() == "Level"
    tab.form.editor("level").setValue(0.3)
    wait_idle(qtbot, tab)
    t = tab.compare_table
    assert t.rowCount() == 1 and t.item(0, 0).text() == "same parameters as the pinned result"
    assert t.columnSpan(0, 0) == t.columnCount()
    tab.form.editor("level").setValue(0.6)
    wait_idle(qtbot, tab)
    assert t.item(0, 0).text() == "Level" and t.columnSpan(0, 0) == 1
    monkeypatch.chdir(tmp_path)
    tab.input_path = Path("img.npy")
    assert str(tmp_path / "img.npy") in tab.command_line()


def test_the_status_bar_says_a_run_is_running(tab, qtbot):
    """While a job runs, the status bar does not keep saying "Loaded ... Press Run to run"."""
    msgs: list[str] = []
    tab.status_message.connect(msgs.append)
    assert tab.run()
    assert msgs and msgs[-1] == "Run: running on img.npy (cpu)…", msgs
    wait_idle(qtbot, tab)
    assert not msgs[-1].endswith("…")


def test_ctrl_z_in_a_parameter_box_steps_back_the_history(tab, qtbot):
    """Right after typing a value, the cursor is still in the box: Ctrl+Z there undoes the
    parameter step (the spin box used to take the key for its own text undo)."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    tab.activateWindow()
    qtbot.waitUntil(tab.isActiveWindow, timeout=3000)
    box = tab.form.editor("level")
    box.setFocus()
    qtbot.waitUntil(box.hasFocus, timeout=3000)
    box.setValue(0.3)
    qtbot.wait(250)                    # recorded as a history step after the debounce
    box.setValue(0.4)
    QTest.keyClick(box, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert tab.form.values()["level"] == 0.3 and box.hasFocus()
    QTest.keyClick(box, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert tab.form.values()["level"] == 0.4


def test_pin_is_off_until_there_is_a_result(open_tab, qtbot, tmp_path):
    t = open_tab(LiveTab)
    t.shown = []
    assert not t.pin_button.isEnabled()
    t.cache = StageCache(cap_bytes=1 << 20)
    t.host.device = "cpu"
    t.set_input(IMG, tmp_path / "img.npy")
    assert not t.pin_button.isEnabled()
    assert t.run()
    wait_idle(qtbot, t)
    assert t.pin_button.isEnabled()
    t.set_input(IMG * 2, tmp_path / "img2.npy")     # a new input: its result is gone
    assert not t.pin_button.isEnabled()


def test_a_cancelled_live_run_says_the_result_is_for_the_previous_parameters(tab, qtbot):
    """Live on, an edit, Cancel while it runs: the form and the picture now disagree, and the
    status bar says so (it said only "cancelled")."""
    msgs: list[str] = []
    tab.status_message.connect(msgs.append)
    tab.live_check.setChecked(True)
    wait_idle(qtbot, tab)
    tab.form.editor("level").setValue(0.99)            # its stage waits on GATE
    qtbot.waitUntil(lambda: tab.runner.is_running(), timeout=3000)
    tab.runner.cancel()
    GATE.set()
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=10000)
    assert tab.result.params["level"] == 0.5
    assert "the result shown is for the previous parameters (Level 0.5, not 0.99)" in msgs[-1], msgs
    assert "press Run to run the form's" in msgs[-1]


def test_pinned_caption_is_cut_to_its_half_and_the_pinned_view_may_shrink(tab, qtbot, monkeypatch):
    """U1: a long pinned caption was cut at the half's edge ("Pinned — Pyramid levels 2, S");
    it is now cut with "…" and the whole text is in its tooltip. U2: a pinned view with a
    minimum size (3-D views, maps: 160-200 px) kept it inside a narrower half and was clipped."""
    built = LiveTab.build_view

    def with_minimum(self):
        v = built(self)
        v.setMinimumSize(400, 200)
        return v

    monkeypatch.setattr(LiveTab, "build_view", with_minimum)
    tab.live_check.setChecked(True)
    tab.form.editor("blur").setValue(2.0)
    tab.form.editor("gain").setValue(1.5)
    tab.form.editor("level").setValue(0.3)
    wait_idle(qtbot, tab)
    assert tab.pin()
    tab.resize(700, 500)
    tab.show()
    qtbot.waitUntil(lambda: tab._pinned_box.width() > 1, timeout=3000)
    qtbot.wait(50)
    cap, box = tab.pinned_caption, tab._pinned_box
    full_text = "Pinned — Blur 2, Level 0.3, Gain 1.5"
    assert cap.full_text() == full_text
    assert cap.width() <= box.width()
    if cap.fontMetrics().horizontalAdvance(full_text) > cap.width():
        assert cap.text().endswith("…") and cap.toolTip() == full_text
    tab.splitter.setSizes([tab.splitter.sizes()[0], 60, 300, *tab.splitter.sizes()[3:]])
    qtbot.wait(50)
    assert cap.text().endswith("…") and cap.toolTip() == full_text and cap.width() <= box.width()
    pinned_view = tab._pinned_slot["view"]
    assert pinned_view.minimumWidth() <= 1 and pinned_view.width() <= box.width()
