"""Session 8, imseg live edit (a coarseness edit at 1080p shown within 50 ms of the debounce):
what a new result redraws. The input's 8-bit picture is made once per input, not at every
result; the boundary picture is drawn from it and equals ``vis.boundaries`` pixel for pixel; the
region table takes a new result's rows without a model reset; and the tab looks the same,
pixel for pixel, as when it drew with the old code (``vis.boundaries`` and a reset)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")  # (app.tabs imports Qt: a machine without it skips, as the other ux tests do)

from app.tabs.imseg_paint import BoundaryPainter, boundary_picture  # noqa: E402
from gpu_kernels.imseg import vis  # noqa: E402


def _reference(image, labels, color=vis.BOUNDARY_COLOR):
    """The drawing before session 8 (a full mask painted through a boolean index), which
    ``vis.boundaries`` / ``vis.boundaries_over`` must reproduce pixel for pixel."""
    out = vis.to_rgb8(image).copy()
    out[vis.boundary_mask(labels)] = color
    return out


def _labels(shape, n, seed):
    rng = np.random.default_rng(seed)
    if not n:
        return np.zeros(shape, np.int32)
    # blocky regions (a segmentation's shape), some single-pixel islands, labels up to n
    h, w = shape
    lab = rng.integers(1, n + 1, size=(max(1, h // 7 + 1), max(1, w // 5 + 1))).astype(np.int32)
    lab = np.repeat(np.repeat(lab, 7, axis=0), 5, axis=1)[:h, :w].copy()
    k = lab.size // 50
    if k:
        lab.flat[rng.integers(0, lab.size, k)] = rng.integers(1, n + 1, k)
    return lab


IMAGES = {
    "rgb8": lambda s, r: r.integers(0, 256, s + (3,), dtype=np.uint8),
    "rgba8": lambda s, r: r.integers(0, 256, s + (4,), dtype=np.uint8),
    "grey8": lambda s, r: r.integers(0, 256, s, dtype=np.uint8),
    "rgb16": lambda s, r: r.integers(0, 65536, s + (3,), dtype=np.uint16),
    "float": lambda s, r: r.random(s + (3,), dtype=np.float32),
}


@pytest.mark.parametrize("kind", sorted(IMAGES))
@pytest.mark.parametrize("shape", [(1, 1), (1, 9), (9, 1), (2, 2), (13, 17), (64, 48), (120, 161)])
def test_boundary_picture_is_vis_boundaries_pixel_for_pixel(kind, shape):
    rng = np.random.default_rng(sum(shape))
    img = IMAGES[kind](shape, rng)
    for n, seed in ((0, 0), (1, 1), (2, 2), (7, 3), (500, 4)):
        lab = _labels(shape, n, seed)
        want = _reference(img, lab)
        np.testing.assert_array_equal(vis.boundaries(img, lab), want)   # the export's picture: the same drawing
        base = vis.to_rgb8(img)
        before = base.copy()
        got = boundary_picture(base, lab)
        assert got.dtype == np.uint8 and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"{kind} {shape} n={n}")
        np.testing.assert_array_equal(base, before)   # the kept picture of the input is not drawn on


def test_rows_are_not_neighbours_across_their_ends():
    """The flat comparison wraps from a row's last pixel to the next row's first: those two are
    not neighbours (rows of one label each: no boundary across them, only between the rows)."""
    lab = np.repeat(np.arange(1, 5, dtype=np.int32)[:, None], 6, axis=1)   # row r is all r + 1
    lab[:, 0] = lab[:, 0][::-1]                                            # the first column differs
    base = np.zeros((4, 6, 3), np.uint8)
    np.testing.assert_array_equal(boundary_picture(base, lab), _reference(base, lab))
    lab = np.repeat(np.arange(1, 5, dtype=np.int32)[:, None], 6, axis=1)
    lab[1] = lab[0]    # rows 0 and 1 one region, rows 2 and 3 others
    got = boundary_picture(base, lab)
    np.testing.assert_array_equal(got, _reference(base, lab))
    assert not got[0].any()    # row 0 touches only its own region (row 1), across no row's end


@pytest.mark.parametrize("layout", ["fortran", "strided"])
def test_the_drawing_of_a_base_in_any_memory_layout(layout):
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (40, 52, 3), dtype=np.uint8)
    base = np.asfortranarray(img) if layout == "fortran" else rng.integers(0, 256, (40, 104, 3), np.uint8)[:, ::2]
    lab = _labels((40, 52), 9, 5)
    np.testing.assert_array_equal(boundary_picture(base, lab), _reference(base, lab))
    np.testing.assert_array_equal(vis.boundaries(base, lab), _reference(base, lab))   # the export's picture


def test_boundary_picture_refuses_a_picture_of_another_size():
    with pytest.raises(ValueError, match="do not match"):
        boundary_picture(np.zeros((4, 5, 3), np.uint8), np.zeros((5, 4), np.int32))


def test_painter_converts_each_input_once():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 65536, (30, 40, 3), dtype=np.uint16)   # a conversion that copies
    p = BoundaryPainter()
    for seed in range(4):
        lab = _labels((30, 40), 9, seed)
        np.testing.assert_array_equal(p.boundaries(img, lab), _reference(img, lab))
    assert p.conversions == 1
    img2 = img.copy()
    p.boundaries(img2, lab)
    assert p.conversions == 2     # another input: converted again
    np.testing.assert_array_equal(p.base(img2), vis.to_rgb8(img2))
    # its comparison buffer is kept between pictures: a smaller input, then a larger one
    for shape in ((7, 50), (90, 31), (1, 5)):
        im = rng.integers(0, 256, shape + (3,), dtype=np.uint8)
        for seed in range(2):
            lab = _labels(shape, 6, seed)
            np.testing.assert_array_equal(p.boundaries(im, lab), _reference(im, lab), err_msg=str(shape))


# ----------------------------------------------------------------------------- the tab
pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from app.tabs import imseg_views  # noqa: E402
from app.tabs.imseg_tab import VIEWS, ImsegTab  # noqa: E402
from app.tools import imseg  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402

COARSE = (3.0, 3.6, 2.4, 3.6, 4.4)   # more regions, fewer, more again, the same, fewer


@pytest.fixture(scope="module")
def results():
    """Results of the bundled sample at several coarseness values (run once for the module)."""
    data = imseg.load(imseg.samples()[0])
    out = []
    for c in COARSE:
        p = imseg.TOOL.params.defaults()
        p["coarseness"] = c
        out.append((imseg.TOOL.run(data, p, device=get_backend("cpu"), progress=None), p))
    assert len({r.seg.n_regions for r, _ in out}) >= 2, "the edits must change the regions"
    return data, out


def _open(open_tab, qtbot, data):
    tab = open_tab(ImsegTab, (1300, 800))
    tab.set_input(data, data.path)
    qtbot.wait(5)
    return tab


def _show(tab, qtbot, res, p):
    tab._show_new_result(res, p, None)
    qtbot.wait(1)


@pytest.mark.gui
def test_a_new_result_converts_no_picture_of_the_input_and_shows_vis_boundaries(open_tab, qtbot, results,
                                                                                 monkeypatch):
    """At each new result (a live edit) the view shows ``vis.boundaries`` of the result exactly,
    and neither converts the input to 8 bit again nor calls ``vis.boundaries``: both were done at
    every edit (a 1080p conversion, copy and boolean-mask paint, ~6 ms on the dev CPU)."""
    data, res = results
    tab = _open(open_tab, qtbot, data)
    assert tab.current_style() == "boundaries"   # the default view
    calls = {"to_rgb8": 0, "boundaries": 0}
    real_rgb8, real_bound = vis.to_rgb8, vis.boundaries

    def rgb8(*a, **k):
        calls["to_rgb8"] += 1
        return real_rgb8(*a, **k)

    def bound(*a, **k):
        calls["boundaries"] += 1
        return real_bound(*a, **k)

    _show(tab, qtbot, *res[0])
    monkeypatch.setattr(vis, "to_rgb8", rgb8)
    monkeypatch.setattr(vis, "boundaries", bound)
    shown = []
    for r, p in res[1:]:
        _show(tab, qtbot, r, p)
        shown.append((r, tab.view.img.image.copy()))
    assert calls == {"to_rgb8": 0, "boundaries": 0}
    monkeypatch.undo()
    for r, pic in shown:
        np.testing.assert_array_equal(pic, vis.boundaries(data.image, r.seg.labels))
    # the other views and the original still come out as before
    for i, (_text, style) in enumerate(VIEWS):
        tab.view_combo.setCurrentIndex(i)
        want = vis.to_rgb8(data.image) if style is None else imseg.picture(tab.result, style)
        np.testing.assert_array_equal(tab.view.img.image, want, err_msg=str(style))


@pytest.mark.gui
def test_a_new_result_does_not_reset_the_region_table(open_tab, qtbot, results):
    """The table takes a new result's rows in place: no model reset (which rebuilt the headers
    and laid the side panel out again at every edit), rows, cells and order right, and no row
    selected afterwards (as after a reset)."""
    data, res = results
    tab = _open(open_tab, qtbot, data)
    _show(tab, qtbot, *res[0])
    m = tab.table.model_
    resets = []
    m.modelAboutToBeReset.connect(lambda: resets.append(1))
    tab.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
    for r, p in res[1:]:
        tab.table.selectRow(0)
        assert tab.selected is not None
        _show(tab, qtbot, r, p)
        f = r.seg.features
        assert m.rowCount() == len(f["label"]) == r.seg.n_regions
        areas = [m.data(m.index(i, 1)) for i in range(m.rowCount())]
        assert areas == [f"{a:,d}" for a in sorted(np.asarray(f["area"]).tolist(), reverse=True)]
        assert not tab.table.selectionModel().selectedRows() and not tab.table.currentIndex().isValid()
        assert tab.selected is None
    assert resets == []
    tab.clear_result()     # no result: a reset to an empty table
    assert m.rowCount() == 0 and resets == [1]


def _grabs(tab, qtbot, res):
    """The whole tab after each result, scrolled and with a row picked in between."""
    out = []
    for k, (r, p) in enumerate(res):
        if k == 2:
            tab.table.sortByColumn(1, Qt.SortOrder.DescendingOrder)
        if k == 3:
            tab.table.selectRow(1)
            tab.table.verticalScrollBar().setValue(tab.table.verticalScrollBar().maximum())
        _show(tab, qtbot, r, p)
        qtbot.wait(5)
        out.append(tab.grab().toImage())
    return out


@pytest.mark.gui
def test_the_tab_looks_the_same_as_with_the_old_drawing(open_tab, qtbot, results, monkeypatch):
    """Pixel for pixel: the tab after each of the edits, drawn with the new code, and drawn again
    in a second tab with the old code (``imseg.picture`` for the boundaries and a model reset)."""
    data, res = results
    new = _grabs(_open(open_tab, qtbot, data), qtbot, res)
    monkeypatch.setattr(imseg_views.RegionTableModel, "INCREMENTAL", False)
    old_tab = _open(open_tab, qtbot, data)
    monkeypatch.setattr(old_tab._painter, "boundaries", lambda image, labels: vis.boundaries(image, labels))
    old = _grabs(old_tab, qtbot, res)
    for k, (a, b) in enumerate(zip(new, old, strict=True)):
        assert a.size() == b.size()
        assert a == b, f"edit {k}: the tab differs from the old drawing"
