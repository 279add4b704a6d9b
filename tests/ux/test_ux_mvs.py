"""The MVS tab as the session-6 walkthrough used it: pin and compare, undo, a narrow window (CPU, offscreen)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tabs.mvs_tab import MvsTab  # noqa: E402

pytestmark = [pytest.mark.gui, pytest.mark.slow]

FAST = dict(views="0", neighbors=5, min_views=3, batch_size=4096, max_iter=3)


@pytest.fixture(scope="module")
def scene_file(tmp_path_factory) -> Path:
    """A synthetic scene as the bundled sample's (``gpulab mvs-synth``: 12 views, a Middlebury
    ``*_par.txt``) at 80 x 60 instead of 160 x 120: the tests here look at the window, not the
    growing, and a CPU run of one view is ~4x cheaper (session 10: the suite's time)."""
    from app.cli import main

    d = tmp_path_factory.mktemp("mvs-ux") / "scene"
    assert main(["mvs-synth", "-o", str(d), "--views", "12", "--size", "80x60", "-q"]) == 0
    return d / "synth_par.txt"


@pytest.fixture
def loaded(open_tab, tab_runner, scene_file):
    """``loaded(size)``: an MVS tab of that size, Live off, with the synthetic scene loaded: ``(tab, data)``."""

    def make(size=(1300, 800)):
        tab = open_tab(MvsTab, size)
        tab.live_check.setChecked(False)
        return tab, tab_runner.load(tab, scene_file)

    return make


def _run_and_pin(tab, tab_runner, ncc_accept=0.5):
    """A run of the sample's first view (``FAST``), pinned: its result."""
    res = tab_runner.run(tab, **FAST, ncc_accept=ncc_accept)
    assert res is not None and tab.pin()
    return res


def test_the_view_no_longer_holds_the_window_wide(open_tab):
    # before: MapView and CloudView side by side, 320 px minimum each: 1235 px for the window
    tab = open_tab(MvsTab, (1300, 800))
    assert tab.view.minimumSizeHint().width() <= 340
    assert tab.minimumSizeHint().width() <= 940


def test_pinned_and_live_depth_share_one_scale_and_the_cache_says_so(qtbot, loaded, tab_runner):
    tab, _ = loaded()
    _run_and_pin(tab, tab_runner)
    live = tab_runner.run(tab, **FAST, ncc_accept=0.9)
    assert live is not None
    qtbot.wait(100)   # the pinned side is drawn from the event loop
    lv, pv = tab.map_view, tab._pinned_slot["map_view"]
    lo_l, hi_l = lv.image.getLevels()
    lo_p, hi_p = pv.image.getLevels()
    # before: each map at its own 1st-99th percentile (different colours for one depth)
    assert (lo_l, hi_l) == pytest.approx((lo_p, hi_p))
    own = [np.percentile(m.depth[np.isfinite(m.depth)], q) for m in (live.view_map(0),) for q in (1, 99)]
    assert lo_l <= own[0] + 1e-9 and hi_l >= own[1] - 1e-9
    # the result shown again from the cache does not say it took 0 ms
    assert tab_runner.run(tab, **FAST, ncc_accept=0.5) is not None
    assert not tab.last_report.ran
    assert "shown from the cache" in tab.stats_label.text() and " 0 ms on" not in tab.stats_label.text()


def test_copy_command_keeps_the_masks(qtbot, loaded, tab_runner, tmp_path):
    # before: the masks chosen with Masks… were not in the copied command: the CLI reconstructed
    # the whole images
    import os
    import shlex
    import subprocess
    import sys

    from app.io.image_io import write_image

    tab, data = loaded()
    h, w = data.scene.images[0].shape[:2]
    masks = tmp_path / "masks"
    masks.mkdir()
    keep = np.zeros((h, w), np.uint8)
    keep[:, : w // 2] = 255
    write_image(masks / f"{data.scene.names[0]}.png", keep)
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        assert tab.choose_masks(masks)
    res = tab_runner.run(tab, **FAST)
    assert res is not None
    argv = shlex.split(tab.command_line())
    assert "--mask-dir" in argv and argv[argv.index("--mask-dir") + 1] == str(masks)
    out = tmp_path / "cli"
    out.mkdir()
    r = subprocess.run([sys.executable, "-c", "import sys; from app.cli import main; sys.exit(main(sys.argv[1:]))",
                        *argv[1:]], cwd=out, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert r.returncode == 0, r.stderr[-1500:]
    name = data.scene.names[0]
    cli_depth = np.load(out / argv[argv.index("-o") + 1] / f"{name}.depth.npy")
    gui_depth = res.view_map(0).depth
    assert np.array_equal(cli_depth, gui_depth, equal_nan=True)
    assert not np.isfinite(cli_depth[:, w // 2:]).any()


def test_a_live_result_keeps_the_users_camera_and_the_frusta(qtbot, loaded, tab_runner):
    # before: every new result re-framed the 3-D view on its points (a turn or zoom was lost at
    # each Live edit) and sized the frusta from its own cloud (the pinned side's differed)
    tab, _ = loaded()
    assert tab_runner.run(tab, **FAST, ncc_accept=0.5) is not None
    view = tab.cloud_view
    if not view.available:
        pytest.skip(f"no OpenGL here (static pictures, no camera): {view.gl_reason}")
    cam = view.plotter.camera
    cam.azimuth = 35                                 # the user turns the view
    view.plotter.render()
    turned = tuple(cam.position)
    frusta = view.plotter.actors["frusta"].GetBounds()
    assert tab_runner.run(tab, **FAST, ncc_accept=0.9) is not None
    qtbot.wait(50)
    assert tuple(view.plotter.camera.position) == pytest.approx(turned)
    assert view.plotter.actors["frusta"].GetBounds() == pytest.approx(frusta)
    tab.view_combo.setCurrentIndex(1)                # another view: framed again
    qtbot.wait(50)
    assert tuple(view.plotter.camera.position) != pytest.approx(turned)
    # pinned and live: the frusta have one size (from the cameras, not from each side's cloud)
    tab.view_combo.setCurrentIndex(0)
    assert tab.pin()
    assert tab_runner.run(tab, **FAST, ncc_accept=0.5) is not None
    qtbot.wait(100)
    tab.cloud_combo.setCurrentIndex(tab.cloud_combo.findText("Seeds"))   # the content changes and back:
    qtbot.wait(100)                                                    # each side framed on its own cloud
    tab.cloud_combo.setCurrentIndex(tab.cloud_combo.findText("This view's points"))
    qtbot.wait(100)
    pinned = tab._pinned_slot["cloud_view"]
    assert pinned.plotter.actors["frusta"].GetBounds() == pytest.approx(view.plotter.actors["frusta"].GetBounds())


def test_save_never_writes_over_the_scenes_images(loaded, scene_file):
    # the window's Save result / Export refuse input_files(): the camera file and its images
    from app.io.atomic import OutputPathError, check_not_an_input

    tab, _ = loaded()
    for name in ("synth_par.txt", "view000.png", "view011.png"):
        with pytest.raises(OutputPathError):
            check_not_an_input(scene_file.parent / name, tab.input_files())
    check_not_an_input(scene_file.parent / "view000-depth.png", tab.input_files())


def _drawn_width(mv):
    import pyqtgraph as pg

    h, w = mv.shape
    r = mv.plot.vb.mapViewToScene(pg.QtCore.QRectF(0, 0, w, h)).boundingRect()
    return r.width()


def test_after_a_growing_preview_the_live_map_is_drawn_as_large_as_the_pinned_one(qtbot, loaded, tab_runner):
    # before: the preview's long title ("view000: growing, 12,345 samples (batch 3, ...)") made the
    # map's layout wider than its pane, and it never shrank back: after the run the live map was
    # drawn 12 % larger than the pinned one beside it (242 vs 214 px at 1280 x 800), its colour bar cut off
    tab, _ = loaded((1000, 700))
    first = _run_and_pin(tab, tab_runner)
    qtbot.wait(200)
    lv, pv = tab.map_view, tab._pinned_slot["map_view"]
    assert abs(_drawn_width(lv) - _drawn_width(pv)) <= 1
    depth = first.view_map(0).depth
    lv.show_scalar(depth, title="view000: growing, 12,345 samples (batch 3, 1,234,567 queued) " * 2)  # as _on_preview
    qtbot.wait(50)
    assert lv.glw.ci.geometry().width() <= lv.glw.width()        # the layout stays in its pane
    assert lv.title.toolTip().startswith("view000: growing")      # the cut title's whole text
    assert tab_runner.run(tab, **FAST, ncc_accept=0.85) is not None
    qtbot.wait(200)
    assert lv.glw.ci.geometry().width() <= lv.glw.width()
    assert abs(_drawn_width(lv) - _drawn_width(pv)) <= 1, (_drawn_width(lv), _drawn_width(pv))
    # the colour bar lies inside the pane
    bar = lv.bar.sceneBoundingRect()
    assert bar.right() <= lv.glw.width() + 1
