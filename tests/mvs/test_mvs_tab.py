"""The Multi-view stereo tab, driven as a user would: open the bundled scene, reconstruct a
view with a live preview, switch the maps, threshold, 3-D content, export, and a bad scene."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import shown  # noqa: E402

from app.io.depth_io import read_pfm  # noqa: E402
from app.io.image_io import write_image  # noqa: E402
from app.tabs.mvs_tab import CLOUD_CHOICES, SHOW_CHOICES, MvsTab  # noqa: E402
from app.tools import mvs  # noqa: E402

pytestmark = pytest.mark.gui


#: the runs' growing settings: the tests check what the tab shows of a result (previews, maps, threshold, clouds,
#: pinning, masks), not the growing's quality (test_mvs_reconstruct.py does): at most 5 iterations and one
#: attempt per pixel instead of 20 and 2, about 30 % less CPU growing (view 0: 7941 samples against 8258)
RUN = dict(neighbors=5, min_views=3, batch_size=4096, max_iter=5, max_attempts=1)


@pytest.fixture
def tab(open_tab):
    return open_tab(MvsTab, (1300, 800))


def test_closing_the_tab_releases_its_3d_view(tab, monkeypatch):
    closed = []
    monkeypatch.setattr(type(tab.cloud_view), "close_view", lambda self: closed.append(self))
    tab.close()
    assert closed == [tab.cloud_view]


@pytest.mark.slow
def test_open_run_preview_and_displays(qtbot, tab, tab_runner, tmp_path, errors_of):
    sample = mvs.samples()
    if not sample:
        pytest.skip("the bundled sample is missing")
    # before a scene: nothing to reconstruct alone, and the side panel says what will show (session 10)
    assert not tab.only_button.isEnabled() and not tab.masks_button.isEnabled()
    assert "Not reconstructed yet" in tab.stats_label.text()
    data = tab_runner.load(tab, sample[0])
    assert tab.only_button.isEnabled() and tab.masks_button.isEnabled()
    assert "Not reconstructed yet" in tab.stats_label.text()
    assert data.n_views == 12 and tab.view_combo.count() == 12
    assert "12 views" in tab.input_info.text()
    previews = []
    tab.preview_ready.connect(lambda v, d, info: previews.append((v, int(np.isfinite(d).sum()))))
    res = tab_runner.run(tab, device="cpu", views="0", **RUN)
    assert res is not None, errors_of
    assert previews and all(v == 0 for v, _ in previews)
    assert previews[-1][1] <= res.view_map(0).n_samples
    # one view: no fused cloud, so its export is greyed out with the reason (it used to open a
    # save dialog and then an error); the maps' exports stay on
    fused = tab.export_buttons["fused"]
    assert not fused.isEnabled() and "no fused cloud" in fused.toolTip()
    assert tab.export_buttons["depth"].isEnabled()
    assert tab.map_view.shape == (120, 160) and "depth" in tab.map_view.title.text
    for what in SHOW_CHOICES:
        tab.show_combo.setCurrentText(what)
        assert tab.map_view.shape == (120, 160)
    tab.show_combo.setCurrentText("Depth")
    shown = np.isfinite(tab.map_view.image.image).sum()
    tab.threshold.setValue(95)
    assert np.isfinite(tab.map_view.image.image).sum() < shown
    tab.threshold.setValue(0)
    for what in CLOUD_CHOICES:
        tab.cloud_combo.setCurrentText(what)
    tab.cloud_combo.setCurrentText("This view's points")
    assert tab.cloud_view.n_points == res.view_map(0).n_samples
    assert "samples" in tab.stats_label.text() and "Not reconstructed yet" not in tab.stats_label.text()
    tab.view_combo.setCurrentIndex(5)  # not reconstructed: the image with a note
    assert "not reconstructed" in tab.map_view.title.text
    assert "Not reconstructed yet" in tab.stats_label.text()
    tab.only_this_view()
    assert tab.form.values()["views"] == "view005"
    tab.view_combo.setCurrentIndex(0)
    files = tab.save_result(tmp_path / "v0.pfm", mvs.TOOL.export_for("x.pfm"))
    np.testing.assert_array_equal(read_pfm(files[0]), res.view_map(0).depth)
    assert not errors_of


@pytest.mark.slow
def test_masks_are_chosen_and_removed_in_the_tab(qtbot, tab, tab_runner, tmp_path, errors_of):
    sample = mvs.samples()
    if not sample:
        pytest.skip("the bundled sample is missing")
    data = tab_runner.load(tab, sample[0])
    assert data.mask_dir is None and not tab.no_masks_button.isEnabled()
    h, w = data.scene.images[0].shape[:2]
    masks = tmp_path / "masks"
    masks.mkdir()
    keep = np.zeros((h, w), np.uint8)
    keep[:, : w // 2] = 255  # the left half only
    write_image(masks / f"{data.scene.names[0]}.png", keep)
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        assert tab.choose_masks(masks)
    assert tab.data.mask_dir == masks and "1 masks" in tab.input_info.text()
    assert tab.no_masks_button.isEnabled()
    res = tab_runner.run(tab, device="cpu", views="0", **RUN)
    assert res is not None, errors_of
    depth = res.view_map(0).depth
    assert np.isfinite(depth[:, : w // 2]).any() and not np.isfinite(depth[:, w // 2:]).any()
    with qtbot.waitSignal(tab.input_loaded, timeout=30000):
        assert tab.clear_masks()
    assert tab.data.mask_dir is None
    # a folder whose masks fit no image: one error dialog, the scene stays
    wrong = tmp_path / "wrong"
    wrong.mkdir()
    write_image(wrong / "nothing.png", keep)
    with qtbot.waitSignal(tab.runner.failed, timeout=30000):
        assert tab.choose_masks(wrong)
    qtbot.waitUntil(lambda: bool(errors_of), timeout=5000)
    assert "no mask" in errors_of[-1][1] and tab.data is not None


def test_a_bad_scene_is_one_error_dialog(qtbot, tab, tmp_path, errors_of):
    bad = tmp_path / "broken_par.txt"
    bad.write_text("2\nimg0.png 1 0 0\n")
    assert tab.open_file(bad)
    qtbot.waitUntil(lambda: bool(errors_of) and not tab.runner.is_running(), timeout=20000)
    title, summary, details = errors_of[-1]
    assert "line 2" in summary and not details
    assert tab.data is None


def test_views_naming_a_view_the_new_scene_lacks_go_back_to_all(qtbot, tab, tab_runner, tmp_path):
    """Issue 18, case 18: "view000" stayed as Views after a scene without such a view was opened."""
    import shutil

    sample = mvs.samples()
    if not sample:
        pytest.skip("the bundled sample is missing")
    tab_runner.load(tab, sample[0])
    tab.view_combo.setCurrentIndex(0)
    tab.only_this_view()
    assert tab.form.values()["views"] == "view000"
    other = tmp_path / "renamed"
    other.mkdir()
    src = sample[0].parent
    lines = (src / "synth_par.txt").read_text().splitlines()
    out = [lines[0]]
    for ln in lines[1:]:
        name, rest = ln.split(" ", 1)
        shutil.copy(src / name, other / name.replace("view", "cam"))
        out.append(f"{name.replace('view', 'cam')} {rest}")
    (other / "synth_par.txt").write_text("\n".join(out) + "\n")
    tab_runner.load(tab, other / "synth_par.txt")
    assert tab.form.values()["views"] == "all"
    # an index every scene has is kept
    tab.form.set_value("views", "0,1")
    tab_runner.load(tab, sample[0])
    assert tab.form.values()["views"] == "0,1"


def test_colour_bar_is_as_tall_as_the_map(qtbot):
    """Issue 18, case 12: the colour bar dwarfed a small depth map."""
    from app.tabs.mvs_views import MapView

    v = shown(qtbot, MapView(), (700, 900))
    v.show_scalar(np.random.default_rng(0).random((120, 160)).astype(np.float32), title="depth")
    # laid out (a fixed 50 ms wait failed once on the loaded 2-core container: 458 against 427);
    # a bar that dwarfs the map never gets there, and the wait fails after 3 s
    qtbot.waitUntil(lambda: 0 < v.map_height_on_screen() and v.bar.height() <= v.map_height_on_screen() + 4,
                    timeout=3000)
    map_h = v.map_height_on_screen()
    assert 0 < map_h < 700
    assert v.bar.height() <= map_h + 4, (v.bar.height(), map_h)


@pytest.mark.slow
def test_the_pinned_map_follows_the_view_chosen(qtbot, tab, tab_runner, errors_of):
    """Pinned, the map of the pinned result showed the view chosen when it was pinned whatever
    the view combo said; now both sides show the chosen view, each with its own display."""
    sample = mvs.samples()
    if not sample:
        pytest.skip("the bundled sample is missing")
    tab_runner.load(tab, sample[0])
    # two growing iterations: the test is about which result each side shows. The live run differs from the
    # pinned one (until session 12 its ncc_accept 0.6 was the default: the cache gave the same result, and
    # the side panel's check below could not tell the two apart) and grows view 0 only
    quick = {**RUN, "max_iter": 2}
    first = tab_runner.run(tab, device="cpu", views="0,1", **quick)
    assert first is not None, errors_of
    assert tab.pin()
    pinned_map = tab._pinned_slot["map_view"]
    assert tab_runner.run(tab, device="cpu", views="0", **quick, ncc_accept=0.7) is not None
    for v in (1, 0, 5):
        tab.view_combo.setCurrentIndex(v)
        qtbot.wait(20)
        name = tab.data.scene.names[v]
        assert pinned_map.title.text.startswith(name) and tab.map_view.title.text.startswith(name)
    tab.view_combo.setCurrentIndex(0)
    tab.show_combo.setCurrentText("Confidence")          # a display edit: the live side only
    qtbot.wait(20)
    assert "confidence" in tab.map_view.title.text and "depth" in pinned_map.title.text
    assert tab.show_combo.currentText() == "Confidence" and tab.params()["show"] == "Confidence"
    live_stats = tab.stats_label.text()
    assert live_stats == tab._stats_text(tab.result.view_map(0))   # the side panel: the live result
    assert live_stats != tab._stats_text(first.view_map(0))         # ... not the pinned one
