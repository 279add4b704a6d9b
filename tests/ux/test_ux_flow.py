"""The flow tab as the session-6 walkthrough used it: pin, compare, undo (CPU, offscreen)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.render.flow import FlowPicture  # noqa: E402
from app.tabs.flow_tab import FlowTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "flow" / "frame1.png"


@pytest.fixture
def tab(open_tab, tab_runner):
    t = open_tab(FlowTab, (1300, 800))
    t.live_check.setChecked(False)
    tab_runner.load(t, SAMPLE)
    return t


def _radius(res):
    return FlowPicture(res).radius()


def test_pinned_and_live_flow_are_coloured_on_one_scale(qtbot, tab, tab_runner):
    # before: each side was coded at its own 'largest' radius, so equal colours meant different
    # motions and the one legend described the live side only
    pinned = tab_runner.run(tab, method="lk", window=5)
    assert tab.pin()
    live = tab_runner.run(tab, method="lk", window=31)
    qtbot.wait(50)
    r_p, r_l = _radius(pinned), _radius(live)
    assert abs(r_p - r_l) > 0.05 * max(r_p, r_l), "the two runs must differ in their largest motion"
    common = max(r_p, r_l)
    assert tab._max_flow() == pytest.approx(common)
    pv = tab._pinned_slot["view"]
    alpha = int(round(255 * tab.flow_opacity.value() / 100))
    thr = tab.threshold.value()
    want_p = FlowPicture(pinned).rgba(max_flow=common, alpha=alpha, threshold=thr)
    want_l = FlowPicture(live).rgba(max_flow=common, alpha=alpha, threshold=thr)
    assert np.array_equal(pv.img_flow.image, want_p)
    assert np.array_equal(tab.view.img_flow.image, want_l)
    assert tab.wheel.radius_px == pytest.approx(common) and "pinned and live" in tab.wheel.note
    # unpinned: the live side is back on its own largest
    tab.unpin()
    qtbot.wait(20)
    assert tab._max_flow() is None and tab.wheel.note == "largest"
    assert tab.wheel.radius_px == pytest.approx(r_l)


def test_a_result_shown_from_the_cache_does_not_claim_0_ms(qtbot, tab, tab_runner):
    # before: Undo to a cached result said "lk on cpu in 0 ms"
    tab_runner.run(tab, method="lk", window=5)
    first = tab.stats_label.text()
    assert "in " in first and "from the cache" not in first
    tab_runner.run(tab, method="lk", window=31)
    tab_runner.run(tab, method="lk", window=5)       # every stage comes from the cache
    assert tab.last_report is not None and not tab.last_report.ran
    text = tab.stats_label.text()
    assert "shown from the cache" in text and " in 0 ms" not in text


def test_the_quality_overlay_slider_has_a_label(tab):
    lay = tab.quality_opacity.parentWidget().layout()
    i = lay.indexOf(tab.quality_opacity)
    assert lay.itemAt(i - 1).widget() is tab.quality_opacity_label
    assert "opacity" in tab.quality_opacity_label.text().lower()


def _cli(cmd: str, cwd: Path):
    import shlex
    import subprocess
    import sys

    argv = shlex.split(cmd)
    assert argv[:2] == ["gpulab", "flow"]
    r = subprocess.run([sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main(sys.argv[1:]))",
                        *argv[1:]], cwd=cwd, capture_output=True, text=True,
                       env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert r.returncode == 0, r.stderr[-2000:]
    return r


def test_copy_command_repeats_a_chosen_second_frame_and_mask(qtbot, open_tab, tab_runner, tmp_path):
    # before: the command named the first frame only, so the CLI took the next image of the
    # folder (b.png) instead of the chosen second frame (c.png), and ran without the mask
    import shutil

    from app.io.flow_io import read_flo
    from app.io.image_io import read_image, write_image

    src = SAMPLE.parent
    shutil.copy(src / "frame1.png", tmp_path / "a.png")
    shutil.copy(src / "frame1.png", tmp_path / "b.png")            # no motion: what the CLI took
    shutil.copy(src / "frame2.png", tmp_path / "c.png")
    img = read_image(tmp_path / "a.png")
    mask = np.zeros(img.shape[:2], np.uint8)
    mask[20:-20, 30:-30] = 255
    write_image(tmp_path / "roi.png", mask)
    t = open_tab(FlowTab, (1300, 800))
    t.live_check.setChecked(False)
    tab_runner.load(t, tmp_path / "a.png")
    with qtbot.waitSignal(t.input_loaded, timeout=30000):
        assert t.choose_second(tmp_path / "c.png")
    with qtbot.waitSignal(t.input_loaded, timeout=30000):
        assert t.choose_mask(tmp_path / "roi.png")
    res = tab_runner.run(t, method="lk")
    assert res is not None and t.data.name2 == "c.png"
    cmd = t.command_line()
    assert "c.png" in cmd and "--mask" in cmd
    out = tmp_path / "cli"
    out.mkdir()
    _cli(cmd, out)
    gui = tmp_path / "gui.flo"
    t.save_result(gui, t.tool.export("flow"))
    f_cli, _ = read_flo(out / "a.flo")
    f_gui, _ = read_flo(gui)
    assert np.array_equal(f_cli, f_gui)
    assert np.abs(f_gui).max() > 0.5        # c.png moved (b.png would give ~0)


def test_save_never_writes_over_a_frame_the_truth_or_the_mask(qtbot, tab):
    # the window's Save result / Export check (ToolTab.check_output) refuses input_files(); before,
    # only the first frame counted: saving the flow picture onto frame2.png or flow_gt.png replaced it
    from app.io.atomic import OutputPathError, check_not_an_input

    files = {Path(p).resolve() for p in tab.input_files()}
    for name in ("frame1.png", "frame2.png", "flow_gt.png"):
        assert (SAMPLE.parent / name).resolve() in files, name
        with pytest.raises(OutputPathError):
            check_not_an_input(SAMPLE.parent / name, tab.input_files())
    check_not_an_input(SAMPLE.parent / "elsewhere.png", tab.input_files())


def test_the_wheel_caption_fits_the_panel_while_pinned(qtbot, tab, tab_runner):
    # before: "radius 6.25 px (largest of pinned and live)" in one centred line, wider than the
    # panel: cut at both ends ("adius 6.25 px (largest of pinned and live")
    assert tab_runner.run(tab, lam=100.0) is not None
    assert tab.pin()
    assert tab_runner.run(tab, lam=8.0) is not None
    qtbot.wait(100)
    wheel = tab.wheel
    assert wheel.isVisible() and "pinned" in wheel.note
    fm = wheel.fontMetrics()
    one_line = f"radius {wheel.radius_px:.3g} px ({wheel.note})"
    assert fm.horizontalAdvance(one_line) > wheel.width()      # the case that was cut
    lines = wheel.caption_lines()
    assert any(wheel.note in line for line in lines)
    assert all(fm.horizontalAdvance(line) <= wheel.width() for line in lines), (lines, wheel.width())
    assert wheel.height() >= wheel.sizeHint().height()


def test_the_swipe_shows_the_live_frames_as_large_as_the_pinned(qtbot, tab, tab_runner):
    # before: the live view, hidden behind the swipe view, was framed before its panes had their
    # new size: its frames were drawn at half the pinned frames' size (195 vs 415 px wide)
    assert tab_runner.run(tab, lam=100.0) is not None
    assert tab.pin()
    assert tab_runner.run(tab, lam=8.0) is not None
    tab.swipe_button.setChecked(True)
    qtbot.wait(300)
    live, pinned = tab.view.image_rect_on_screen(), tab._pinned_slot["view"].image_rect_on_screen()
    assert live[0] > 100 and abs(live[0] - pinned[0]) <= 2 and abs(live[1] - pinned[1]) <= 2, (live, pinned)


def test_the_wheel_legend_stays_while_the_pinned_side_is_in_colours(qtbot, tab, tab_runner):
    # before: the live side switched to arrows hid the wheel, though the pinned side (its own
    # display) was still drawn in colour-wheel colours
    assert tab_runner.run(tab) is not None
    assert tab.pin()
    tab.style_combo.setCurrentText("Arrows")
    qtbot.wait(200)
    assert tab.wheel.isVisibleTo(tab) and tab.legend_title.isVisibleTo(tab)
    assert "pinned" in tab.wheel.note
    tab.unpin()
    qtbot.wait(100)
    tab._update_legends()
    assert not tab.wheel.isVisibleTo(tab)     # nothing in colours any more (the right pane shows the second frame)
