"""The 3-D echo motion tab, driven as a user would (CPU, offscreen or Xvfb)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.io.image_io import read_image  # noqa: E402
from app.io.volume_io import write_volume  # noqa: E402
from app.tabs.echo_tab import EchoTab  # noqa: E402
from app.tools import echo  # noqa: E402
from gpu_kernels.echo.synthetic import make_pair  # noqa: E402

pytestmark = pytest.mark.gui


#: the runs' solver effort: the sample's 2-level pyramid with one warp of two sweeps. These tests check what
#: the tab shows of a result (frames, crosshair, overlays, colour bars, pinning), not the estimate's accuracy
#: (tests/echo/test_echo_solver.py and test_echo_cli.py do): the result is still a real run of the sample,
#: whose largest motion (frame 2, p99 2.5 mm) and reference behaviour are those of levels=2, iters=5
#: (frame 2, p99 2.8 mm), at about a seventh of the time (the numpy sweeps are 90 % of a CPU run)
QUICK = dict(levels=2, iters=2, warps=1)


@pytest.fixture
def tab(open_tab):
    return open_tab(EchoTab, (1400, 800))


def test_sample_runs_and_the_views_follow_time_crosshair_and_overlays(qtbot, tab, tab_runner, tmp_path):
    data = tab_runner.load(tab, echo.samples()[0])
    assert data.n_frames == 4 and "truth" in tab.input_info.text()
    assert tab.time_slider.maximum() == 3 and tab.play_button.isEnabled()
    res = tab_runner.run(tab, device="cpu", **QUICK)
    assert res is not None and res.metrics is not None
    assert "against the truth" in tab.result_label.text()
    # time: the slider and the views follow the frame
    tab.time_slider.setValue(2)
    assert tab.frame == 2 and "(frame 2)" in tab.view.planes[0].title.text
    shown = tab.view.planes[0].grey.image
    np.testing.assert_array_equal(shown, data.frames[2][tab.view.pos[0]].astype(np.float32))
    # play advances the frame and pause stops it
    tab.play_button.setChecked(True)
    qtbot.waitUntil(lambda: tab.frame != 2, timeout=3000)
    tab.play_button.setChecked(False)
    assert not tab.play_timer.isActive()
    # the crosshair: a click in the axial view moves y and x, the coronal view then shows that y
    tab.view.click_plane(0, col=10, row=30)
    assert tab.view.pos[1:] == [30, 10]
    np.testing.assert_array_equal(tab.view.planes[1].grey.image, data.frames[tab.frame][:, 30, :].astype(np.float32))
    assert "y = 30" in tab.view.planes[1].title.text
    # overlays: every map draws with a colour bar; arrows on a grid
    for kind in echo.MAP_KINDS:
        tab.overlay_combo.setCurrentText(kind)
        has = tab.view.planes[0].overlay.image is not None
        assert has == (kind != "None"), kind
    tab.overlay_combo.setCurrentText("Jacobian determinant")
    assert "det(I" in tab.colorbar_label.text()
    x, _ = tab.view.planes[0].arrows.getData()
    assert x is not None and len(x) > 0
    tab.arrows_check.setChecked(False)
    x, _ = tab.view.planes[0].arrows.getData()
    assert x is None or len(x) == 0
    # window / level reach the grey images
    tab.window_spin.setValue(100)
    tab.level_spin.setValue(120)
    assert tab.view.planes[2].grey.levels is not None and abs(float(tab.view.planes[2].grey.levels[0]) - 70) < 1e-3
    # hover readout
    tab._on_hover(20, 20, 20)
    assert "voxels" in tab.readout.text() and "mm" in tab.readout.text()
    # exports: a slice picture of what is shown, the fields
    exp = next(e for e in tab.tool.exports if e.key == "slices")
    tab.save_result(tmp_path / "s.png", exp)
    assert read_image(tmp_path / "s.png").shape[2] == 3
    tab.save_result(tmp_path / "f.npy")
    assert np.load(tmp_path / "f.npy").shape == (3, 3, 48, 48, 48)


def test_single_volume_asks_for_the_moving_one(qtbot, tab, tab_runner, tmp_path, errors_of):
    f, m, _ = make_pair(20, shift=(0.0, 0.5, 0.5), seed=1)
    (tmp_path / "a").mkdir()
    write_volume(tmp_path / "a" / "fixed.nii.gz", f)
    write_volume(tmp_path / "moving.nii.gz", m)
    tab_runner.load(tab, tmp_path / "a" / "fixed.nii.gz")
    assert tab.data.n_frames == 1 and tab.moving_button.isEnabled()
    assert tab_runner.run(tab, device="cpu") is None
    assert errors_of and "single volume" in errors_of[-1][1]
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        assert tab.choose_moving(tmp_path / "moving.nii.gz")
    assert tab.data.n_frames == 2 and not tab.moving_button.isEnabled()
    res = tab_runner.run(tab, device="cpu", levels=1)
    assert res is not None and res.is_pair and tab.motion_combo.currentIndex() == 1
    # a second volume of another size is refused with one line, the input is kept
    (tmp_path / "b").mkdir()
    write_volume(tmp_path / "b" / "fixed.nii.gz", f)
    tab_runner.load(tab, tmp_path / "b" / "fixed.nii.gz")
    write_volume(tmp_path / "small.nii.gz", m[:, :, :10])
    tab.choose_moving(tmp_path / "small.nii.gz")
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=30000)
    assert "share a grid" in errors_of[-1][1] and tab.data.n_frames == 1


def test_result_shows_the_frame_of_largest_motion_with_a_sensible_colour_bar(qtbot, tab, tab_runner):
    """Issue 18, case 10: after a run the view left the reference frame (zero motion) on
    screen with a colour bar of 0 ... 0.001 mm."""
    tab_runner.load(tab, echo.samples()[0])
    assert tab.frame == 0
    res = tab_runner.run(tab, device="cpu", **QUICK)
    assert res is not None and res.reference == 0
    assert tab.frame != res.reference
    assert tab.frame == res.stats["traj_frame"]
    assert tab.time_slider.value() == tab.frame and f"{tab.frame} of 0–3" == tab.frame_label.text()
    tab.overlay_combo.setCurrentText("Magnitude")
    lo, hi = tab.magnitude_range()
    assert lo == 0 and hi == pytest.approx(res.stats["traj_p99_mm"]) and hi > 0.5
    assert f"{hi:.3g} mm" in tab.colorbar_label.text()
    # the same scale on every frame, the reference frame included (and it says why it is still)
    tab.set_frame(0)
    assert tab.magnitude_range() == (lo, hi) and "reference frame" in tab.colorbar_label.text()


def test_auto_levels_show_the_levels_used(qtbot, tab, tab_runner):
    """Issue 18, case 15: the greyed levels box showed 3 where runs used 2 and 4."""
    tab_runner.load(tab, echo.samples()[0])
    tab.form.set_values({"levels": "auto"})
    assert tab.form.editor("levels").text() == "auto"
    res = tab_runner.run(tab, device="cpu", iters=2, warps=1)
    assert res is not None
    used = tab.levels_used(res)
    assert tab.form.editor("levels").text() == f"auto ({used})"


def test_pinned_side_follows_the_frame_and_the_crosshair(qtbot, tab, tab_runner):
    """Seen in a screenshot: pinned, the live side moved to frame 1 after a run while the pinned
    side stayed at frame 3, so the two halves showed different frames."""
    tab_runner.load(tab, echo.samples()[0])
    first = tab_runner.run(tab, device="cpu", **QUICK)
    assert first is not None and tab.pin()
    pinned = tab._pinned_slot["view"]
    assert tab_runner.run(tab, device="cpu", **QUICK, alpha=0.05) is not None
    for t in (2, 0, 3):
        tab.time_slider.setValue(t)
        qtbot.wait(20)                                  # the pinned side draws right after
        assert f"(frame {t})" in pinned.planes[0].title.text and f"(frame {t})" in tab.view.planes[0].title.text
        np.testing.assert_array_equal(pinned.planes[0].grey.image, tab.view.planes[0].grey.image)
    tab.view.click_plane(0, col=12, row=20)            # the live crosshair moves the pinned one
    qtbot.wait(20)
    assert pinned.pos == tab.view.pos and pinned.pos[1:] == [20, 12]
    pinned.click_plane(0, col=30, row=8)                # and the other way round
    qtbot.wait(20)
    assert tab.view.pos == pinned.pos and tab.view.pos[1:] == [8, 30]
    # each side still shows its own result: the overlays differ (alpha 0.02 against 0.05)
    tab.time_slider.setValue(1)
    qtbot.wait(20)
    a, b = pinned.planes[0].overlay.image, tab.view.planes[0].overlay.image
    assert a is not None and b is not None and not np.array_equal(a, b)
    assert tab.result is not first and tab.colorbar_label.text()   # the side panel: the live result
    # display parameters stay each side's own (the compare table lists them): no overlay on
    # the live side leaves the pinned side's magnitude map, and the widget keeps the live value
    tab.overlay_combo.setCurrentText("None")
    tab.time_slider.setValue(2)
    qtbot.wait(20)
    assert tab.view.planes[0].overlay.image is None and pinned.planes[0].overlay.image is not None
    assert tab.overlay_combo.currentText() == "None" and tab.params()["overlay"] == "None"
    assert any(r[1:] == ("Magnitude", "None") for r in tab.differing_params()), tab.differing_params()
    assert "None (Colour: None)" in tab.colorbar_label.text()   # the live side has no colour map now


def test_frames_are_counted_from_zero_in_the_tab_as_in_the_reference_box(tab, tab_runner):
    """The Reference box, the CLI and the summary count frames from 0; the frame label, the view
    titles and the colour bar used to count from 1, so "Reference 2" showed "from frame 3"."""
    tab_runner.load(tab, echo.samples()[0])
    res = tab_runner.run(tab, device="cpu", **QUICK, reference=2)
    assert res is not None and res.reference == 2
    tab.overlay_combo.setCurrentText("Magnitude")
    tab.set_frame(1)
    assert tab.frame_label.text() == "1 of 0–3"
    assert "(frame 1)" in tab.view.planes[0].title.text
    assert tab.motion_kind() == "trajectory" and "from frame 2 " in tab.colorbar_label.text()
    tab.set_frame(2)
    assert "this is the reference frame" in tab.colorbar_label.text()


def test_side_panel_says_what_comes_before_a_run(tab, tab_runner):
    """Before a run the Colour map and Result sections were bare headings (Xvfb first state)."""
    assert "after a run" in tab.colorbar_label.text() and "after a run" in tab.result_label.text()
    assert tab.colorbar.isHidden()                      # no empty ramp's gap under the heading
    tab_runner.load(tab, echo.samples()[0])
    assert "after a run" in tab.colorbar_label.text() and tab.colorbar.isHidden()
    tab_runner.run(tab, device="cpu", **QUICK)
    assert "after a run" not in tab.colorbar_label.text() and "after a run" not in tab.result_label.text()
    assert not tab.colorbar.isHidden() and not tab.colorbar.pixmap().isNull()
    tab.overlay_combo.setCurrentText("None")
    assert tab.colorbar.isHidden() and "None (Colour: None)" in tab.colorbar_label.text()
    tab.overlay_combo.setCurrentText("Divergence")
    assert not tab.colorbar.isHidden() and "div u" in tab.colorbar_label.text()


def test_a_new_result_sets_the_motion_again_but_not_the_unchanged_grey_slices(tab, tab_runner):
    """A live edit redraws the motion over the same frame and crosshair: the grey slices, the
    titles and an unchanged colour ramp are not set again; a new frame or crosshair sets them."""
    tab_runner.load(tab, echo.samples()[0])
    tab.overlay_combo.setCurrentText("Jacobian determinant")   # a fixed range: the same ramp
    first = tab_runner.run(tab, device="cpu", **QUICK)
    grey = [p.grey.image for p in tab.view.planes]
    overlay = [p.overlay.image for p in tab.view.planes]
    ramp = tab.colorbar.pixmap().cacheKey()
    second = tab_runner.run(tab, device="cpu", **QUICK, alpha=0.05)
    assert second is not first
    assert all(p.grey.image is g for p, g in zip(tab.view.planes, grey, strict=True))
    assert any(not np.array_equal(p.overlay.image, o) for p, o in zip(tab.view.planes, overlay, strict=True))
    assert tab.colorbar.pixmap().cacheKey() == ramp
    tab.view.click_plane(0, col=3, row=4)               # the crosshair moved: the slices are set again
    assert any(p.grey.image is not g for p, g in zip(tab.view.planes, grey, strict=True))
    g2 = [p.grey.image.copy() for p in tab.view.planes]
    tab.time_slider.setValue((tab.frame + 1) % 4)       # another frame: another grey volume
    assert any(not np.array_equal(p.grey.image, g) for p, g in zip(tab.view.planes, g2, strict=True))
