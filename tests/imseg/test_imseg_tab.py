"""The Image segmentation tab, driven as a user would (CPU, offscreen or Xvfb)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.io.image_io import write_image  # noqa: E402
from app.io.labels_io import read_labels, read_region_table  # noqa: E402
from app.tabs.imseg_tab import VIEWS, ImsegTab  # noqa: E402
from app.tools import imseg  # noqa: E402

pytestmark = pytest.mark.gui


@pytest.fixture
def tab(open_tab):
    return open_tab(ImsegTab, (1300, 800))


def test_sample_segments_views_table_hover_and_exports(qtbot, tab, tab_runner, tmp_path, errors_of):
    data = tab_runner.load(tab, imseg.samples()[0])
    assert data.image.shape == (240, 360, 3)
    assert tab.view.img.image.shape[:2] == (240, 360)
    res = tab_runner.run(tab, device="cpu")
    assert res is not None, errors_of
    seg = res.seg
    assert tab.table.model_.rowCount() == seg.n_regions
    assert str(seg.n_regions) in tab.table_title.text()
    stages = [name for name, _ in imseg.stage_times(res)]   # the method's own stages
    assert stages and all(n in tab.timings.text() for n in stages) and "total" in tab.timings.text()
    for i, (text, style) in enumerate(VIEWS):
        tab.view_combo.setCurrentIndex(i)
        pic = tab.view.img.image
        assert pic.shape[:2] == (240, 360), text
        if style == "mean":  # the mean-colour view really is each region's mean colour
            lab = seg.labels
            r = int(lab[120, 180])
            np.testing.assert_allclose(pic[lab == r].mean(0), seg.features["intensity_mean"][r - 1], atol=0.6)
    # hover: the readout names the region under the cursor and its area
    tab._on_hover(180, 120)
    r = int(seg.labels[120, 180])
    assert f"region {r}" in tab.readout.text()
    assert f"{int(seg.features['area'][r - 1]):,} px" in tab.readout.text()
    # sort the table by area, largest first; the first row is the largest region
    tab.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
    biggest = int(np.argmax(seg.features["area"])) + 1
    assert tab.table.model_.label_at(0) == biggest
    # clicking a row highlights that region; clicking the image selects the row
    tab.table.selectRow(0)
    assert tab.selected == biggest
    assert "selected" in tab.view.title.text
    tab._on_click(5, 5)
    assert tab.selected == int(seg.labels[5, 5])
    assert tab.table.model_.label_at(tab.table.selectionModel().selectedRows()[0].row()) == tab.selected
    # exports
    tab.save_result(tmp_path / "labels.png")
    np.testing.assert_array_equal(read_labels(tmp_path / "labels.png"), seg.labels)
    tab.save_result(tmp_path / "regions.csv")
    assert len(read_region_table(tmp_path / "regions.csv")["label"]) == seg.n_regions
    assert not errors_of


def test_folder_steps_and_bad_file(qtbot, tab, tab_runner, tmp_path, errors_of):
    rng = np.random.default_rng(0)
    for i in range(3):
        img = np.zeros((40, 50, 3), np.uint8)
        img[:, : 10 * (i + 2)] = (200, 30, 30)
        img += rng.integers(0, 5, img.shape).astype(np.uint8)
        write_image(tmp_path / f"frame{i}.png", img)
    (tmp_path / "zz-broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    tab_runner.load(tab, tmp_path / "frame0.png")
    assert tab.folder_label.text() == "1 of 4"
    assert not tab.prev_button.isEnabled() and tab.next_button.isEnabled()
    # the paper's k-means pipeline: two flat colours are exactly two regions
    kmeans = {"method": "kmeans"} if "method" in imseg.PARAMS else {}
    res = tab_runner.run(tab, device="cpu", min_size=0, **kmeans)
    assert res is not None and res.seg.n_regions == 2
    with qtbot.waitSignal(tab.result_shown, timeout=60000):
        assert tab.step_image(+1)  # a result was shown: the next image is segmented too
    assert tab.input_path.name == "frame1.png" and tab.result is not None
    assert tab.result.seg.features["area"].tolist() == [30 * 40, 20 * 40]
    # the corrupt file in the folder: a one-line error, the tab keeps working
    errors_of.clear()
    tab.open_file(tmp_path / "zz-broken.png")
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=30000)
    qtbot.wait(20)
    assert errors_of and "zz-broken.png" in " ".join(errors_of[-1][:2])
    assert tab.input_path.name == "frame1.png"


def test_stages_panel_names_the_stages_a_live_rerun_reused():
    """A live re-run keeps the re-used stages' earlier times in the Stages panel: it must say
    which ones came from the cache, and that the total is this run's."""
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    img = np.zeros((48, 64, 3), np.uint8)
    img[:, 32:] = 200
    data = imseg.ImageData(None, img)
    be, cache = get_backend("cpu"), StageCache()
    p = imseg.PARAMS.validate({})
    imseg.TOOL.run_staged(data, p, device=be, cache=cache)
    res, rep = imseg.TOOL.run_staged(data, {**p, "coarseness": 2.5}, device=be, cache=cache)
    assert rep.reused, rep
    text = ImsegTab._timings_text(res, rep)
    assert "total, this run" in text and "re-used from the cache" in text
    assert rep.labels.get(rep.reused[0], rep.reused[0]) in text
    plain = ImsegTab._timings_text(res, None)
    assert "re-used" not in plain
