"""The Optical flow tab, driven as a user would (CPU, offscreen or Xvfb)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.io.flow_io import read_flow  # noqa: E402
from app.io.image_io import read_image, write_image  # noqa: E402
from app.tabs.flow_tab import RIGHT_VIEWS, FlowTab  # noqa: E402
from app.tabs.flow_view import arrow_segments  # noqa: E402
from app.tools import flow  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "flow"


@pytest.fixture
def tab(open_tab):
    return open_tab(FlowTab, (1300, 800))


def _wait_idle(qtbot, tab):
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=60000)
    qtbot.wait(20)


def test_sample_runs_and_every_view_draws(qtbot, tab, tab_runner, tmp_path):
    assert "No result yet" in tab.stats_label.text()  # not a bare "Result" heading (session 10)
    data = tab_runner.load(tab, flow.samples()[0])
    assert data.gt is not None
    assert "frame2.png" in tab.input_info.text() and "flow_gt.png" in tab.input_info.text()
    assert "No result yet" in tab.stats_label.text()
    res = tab_runner.run(tab, method="bm", device="cpu")
    assert res is not None and res.metrics is not None
    assert "bm on cpu" in tab.stats_label.text() and "No result yet" not in tab.stats_label.text()
    assert "AEE" in tab.metrics_label.text()
    for which in RIGHT_VIEWS:
        tab.right_combo.setCurrentText(which)
        img = tab.right_image(which)
        assert img.shape[:2] == (240, 320)
    diff = tab.right_image("Difference |frame 1 - warped frame 2|")
    assert 0 <= diff.min() and diff.mean() < 0.2
    for style in ("Arrows", "None", "Colour wheel"):
        tab.style_combo.setCurrentText(style)
    tab.quality_overlay.setChecked(True)
    tab.threshold.setValue(0.5)
    tab._on_hover(100, 80)
    assert "u " in tab.readout.text() and "endpoint error" in tab.readout.text()
    written = tab.save_result(tmp_path / "out.flo")
    f, _ = read_flow(written[0])
    assert np.allclose(f[..., 0], res.u)
    exp = next(e for e in tab.tool.exports if e.key == "color")
    tab.max_flow.setValue(3.0)
    tab.save_result(tmp_path / "c.png", exp)
    assert read_image(tmp_path / "c.png").shape == (240, 320, 3)


def test_frame_folder_steps_pair_by_pair(qtbot, tab, tab_runner, tmp_path):
    a = read_image(SAMPLE / "frame1.png")
    b = read_image(SAMPLE / "frame2.png")
    folder = tmp_path / "frames"
    folder.mkdir()
    for i, img in enumerate((a, b, a)):
        write_image(folder / f"f{i}.png", img)
    tab_runner.load(tab, folder)
    assert tab.pair_spin.maximum() == 2 and tab.next_button.isEnabled() and not tab.prev_button.isEnabled()
    first = tab_runner.run(tab, method="lk", device="cpu")
    assert first is not None
    with qtbot.waitSignal(tab.result_shown, timeout=60000):
        assert tab.step_pair(+1)                  # loads pair 2 and computes its flow
    _wait_idle(qtbot, tab)
    assert tab.data.index == 1 and tab.pair_spin.value() == 2
    # pair 2 (b -> a) moves opposite to pair 1 (a -> b)
    assert np.median(tab.result.u * first.u + tab.result.v * first.v) < 0
    assert not tab.next_button.isEnabled()


def test_second_frame_ground_truth_and_mask(qtbot, tab, tab_runner, tmp_path, errors_of):
    tab_runner.load(tab, flow.samples()[0])
    small = write_image(tmp_path / "small.png", np.zeros((10, 12), np.uint8))
    tab.choose_mask(small)
    _wait_idle(qtbot, tab)
    assert errors_of and "12 x 10" in errors_of[-1][1]
    assert tab.data.mask is None                  # the input is kept
    m = np.zeros((240, 320), np.uint8)
    m[40:200, 60:260] = 255
    mpath = write_image(tmp_path / "roi.png", m)
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        tab.choose_mask(mpath)
    assert tab.data.mask is not None and "roi.png" in tab.input_info.text()
    res = tab_runner.run(tab, method="lk", device="cpu")
    assert (res.u[m == 0] == 0).all() and (res.quality[m == 0] == 0).all()
    gt_copy = tmp_path / "gt.flo"
    from app.io.flow_io import write_flo

    write_flo(gt_copy, *read_flow(SAMPLE / "flow_gt.png"))
    with qtbot.waitSignal(tab.result_shown, timeout=60000):   # a result was shown: it runs again
        tab.choose_ground_truth(gt_copy)
    _wait_idle(qtbot, tab)
    assert tab.data.gt_path == gt_copy and tab.result.metrics is not None
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        tab.choose_second(SAMPLE / "frame1.png")      # the same frame twice: zero motion
    assert tab.data.name2 == "frame1.png" and tab.data.mask is not None


def test_arrow_segments_geometry():
    u = np.zeros((32, 32), np.float32)
    v = np.zeros((32, 32), np.float32)
    u[:] = 2.0
    q = np.ones((32, 32), np.float32)
    q[:16] = 0.1
    X, Y = arrow_segments(u, v, q, spacing=16, threshold=0.5)
    assert X.size == 2 * 6                          # 2 arrows (the lower half), 3 segments each
    assert X[1] - X[0] == pytest.approx(0.9 * 16)   # the longest arrow spans 0.9 spacing
    assert Y[0] == Y[1] == 24


# ----------------------------------------------------------------------------- issue 18 (12), issue 25: legends
def test_legends_follow_what_is_shown(qtbot, tab, tab_runner):
    tab_runner.load(tab, flow.samples()[0])
    tab.style_combo.setCurrentText("None")
    tab.right_combo.setCurrentText("Second frame")
    assert not tab.wheel.isVisibleTo(tab)              # no colour wheel before a run
    res = tab_runner.run(tab, device="cpu")
    assert res is not None
    assert not tab.wheel.isVisibleTo(tab)              # nothing colour-coded on screen
    tab.style_combo.setCurrentText("Colour wheel")
    assert tab.wheel.isVisibleTo(tab)
    largest = float(np.hypot(res.u, res.v).max())
    assert tab.wheel.radius_px == pytest.approx(largest, rel=1e-4) and tab.wheel.note == "largest"
    tab.right_combo.setCurrentText("Quality map")
    assert tab.right_bar.isVisibleTo(tab) and (tab.right_bar.lo, tab.right_bar.hi) == (0.0, 1.0)
    tab.right_combo.setCurrentText("Endpoint error")
    assert tab.right_bar.isVisibleTo(tab) and tab.right_bar.hi == 3.0 and tab.right_bar.unit == "px"
    tab.right_combo.setCurrentText("Second frame")
    assert not tab.right_bar.isVisibleTo(tab)
    tab.quality_overlay.setChecked(True)
    assert tab.quality_legend.isVisibleTo(tab) and "occluded" in tab.quality_legend.text()


def test_large_motion_wheel_gives_the_pixel_scale(tab):
    tab.wheel.set_radius(190.0, "largest")
    assert tab.wheel.ring_values() == [50.0, 100.0, 150.0]
    tab.wheel.set_radius(2.0)
    assert tab.wheel.ring_values()[-1] <= 2.0 and len(tab.wheel.ring_values()) >= 2


def test_no_ground_truth_is_said_not_black(qtbot, tab, tab_runner, tmp_path):
    a = read_image(SAMPLE / "frame1.png")
    b = read_image(SAMPLE / "frame2.png")
    write_image(tmp_path / "a.png", a)
    write_image(tmp_path / "b.png", b)
    tab_runner.load(tab, tmp_path / "a.png")
    assert tab.data.gt is None
    assert tab_runner.run(tab, device="cpu") is not None
    tab.right_combo.setCurrentText("Endpoint error")
    assert "no ground truth" in tab.view.right_title.text and tab.view.message.isVisible()
    assert tab.right_image("Endpoint error").mean() > 0.5          # not a black pane
    assert not tab.right_bar.isVisibleTo(tab)
    tab.right_combo.setCurrentText("Second frame")
    assert not tab.view.message.isVisible()


def test_failure_masks_mark_occlusions_and_failed_matches():
    from types import SimpleNamespace

    from app.tabs.flow_view import failure_masks, quality_overlay_rgba

    H, W = 40, 60
    u = np.zeros((H, W), np.float32)
    v = np.zeros((H, W), np.float32)
    u[:, -5:] = 10.0                                   # leaves the frame
    q = np.ones((H, W), np.float32)
    q[10:15, 10:15] = 0.05                             # a failed match
    res = SimpleNamespace(u=u, v=v, quality=q, valid=np.ones((H, W), bool), flow=SimpleNamespace(extras={}))
    occ, failed = failure_masks(res)
    assert occ[:, -5:].all() and not occ[:, :-5].any()
    assert failed[10:15, 10:15].all() and failed.sum() == 25
    rgba = quality_overlay_rgba(res, 0.6)
    assert tuple(rgba[12, 12, :3]) == (255, 30, 30) and rgba[0, 0, 3] == 0
    # the method's own masks win where it gives them
    own = np.zeros((H, W), bool)
    own[0, 0] = True
    res.flow.extras = {"occlusion": own, "failed": own}
    occ, failed = failure_masks(res)
    assert occ.sum() == 1 and failed.sum() == 1


def test_frames_fill_the_view_at_1280x800(qtbot, tab, tab_runner):
    tab.resize(1280, 760)
    tab_runner.load(tab, flow.samples()[0])
    qtbot.wait(100)
    w, h = tab.view.image_rect_on_screen()
    vw, vh = tab.view.width(), tab.view.height()
    # the 320 x 240 frames take the larger arrangement: at least 75 % of the view's width
    assert w >= 0.75 * vw or h >= 0.4 * vh, (w, h, vw, vh, tab.view.vertical)


# ----------------------------------------------------------------------------- issue 18 (14): two arbitrary images
def test_a_lone_image_opens_and_asks_for_the_second(qtbot, tab, tab_runner, tmp_path, monkeypatch, errors_of):
    a = read_image(SAMPLE / "frame1.png")
    b = read_image(SAMPLE / "frame2.png")
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    write_image(tmp_path / "one" / "first.png", a)          # alone in its folder: nothing to pair it with
    write_image(tmp_path / "two" / "other.png", b)
    tab_runner.load(tab, tmp_path / "one" / "first.png")
    assert not errors_of, errors_of
    assert tab.awaiting_second() and "choose the" in tab.input_info.text()
    assert tab.second_button.isEnabled()
    assert "no ground truth" not in tab.view.right_title.text
    # Compute asks for the second frame instead of running on one image
    monkeypatch.setattr(tab, "pick_file", lambda *a, **k: tmp_path / "two" / "other.png")
    with qtbot.waitSignal(tab.input_loaded, timeout=20000):
        assert tab.run(device="cpu") is False
    assert not tab.awaiting_second() and tab.data.name2 == "other.png"
    assert tab_runner.run(tab, device="cpu") is not None
    assert np.abs(tab.result.u).mean() > 0.5               # the real pair's motion


def test_second_frame_with_nothing_open_asks_for_both(qtbot, tab, tmp_path):
    a = read_image(SAMPLE / "frame1.png")
    b = read_image(SAMPLE / "frame2.png")
    write_image(tmp_path / "x.png", a)
    write_image(tmp_path / "y.png", b)
    assert tab.data is None and tab.second_button.isEnabled()
    with qtbot.waitSignal(tab.input_loaded, timeout=20000):
        assert tab.choose_second(tmp_path / "y.png", first=tmp_path / "x.png")
    assert (tab.data.name1, tab.data.name2) == ("x.png", "y.png")


# ----------------------------------------------------------------------------- issue 18 (16): settings a method ignores
def test_parameters_the_method_ignores_are_hidden(tab):
    form = tab.form
    assert form.values()["method"] == "search"
    for name in ("block", "radius", "window"):
        assert not form.is_shown(name), name              # the default (search) ignores them
    assert form.is_shown("levels") and form.is_shown("iters")
    form.set_value("method", "bm")
    assert form.is_shown("block") and form.is_shown("radius") and not form.is_shown("window")
    assert not form.is_shown("iters")
    form.set_value("method", "lk")
    assert form.is_shown("window") and form.is_shown("iters") and not form.is_shown("block")
    # the refinement seeded by block matching uses the block size and radius again
    form.set_values({"method": "refine", "seed": "bm"})
    assert form.is_shown("block") and form.is_shown("radius") and not form.is_shown("window")
    # the values still reach the command line and presets unchanged
    assert form.values()["block"] == 8


def test_frames_follow_a_resize_until_the_user_zooms(qtbot, tab, tab_runner):
    tab.resize(700, 500)
    tab_runner.load(tab, flow.samples()[0])
    qtbot.wait(50)
    small = tab.view.image_rect_on_screen()
    tab.resize(1500, 950)
    qtbot.wait(100)
    large = tab.view.image_rect_on_screen()
    assert large[0] > 1.3 * small[0], (small, large)      # re-framed, not left at the old scale
    tab.view.left.sigRangeChangedManually.emit([True, True])
    assert tab.view.user_zoomed
    tab.view.reset_zoom()
    assert not tab.view.user_zoomed
