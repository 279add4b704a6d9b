"""Session-8 walkthrough of the window (CPU, offscreen): file names with markup characters, and
the mesh view's size across k edits."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import shown  # noqa: E402
from PySide6.QtGui import QTextDocument  # noqa: E402

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "resources" / "samples"
ODD = "a <b>x & y ü"        # "<", ">", "&" and a non-ASCII letter in a file name


def _shown(html_text: str) -> str:
    """The text a rich-text label shows for ``html_text``."""
    doc = QTextDocument()
    doc.setHtml(html_text)
    return doc.toPlainText().replace("\u200b", "")    # the places a long name may wrap


def test_a_picture_title_shows_a_file_name_as_written(qtbot):
    # before: set_fitted_title handed the title to pyqtgraph as HTML: "a <b>x & y</b> ü.jpg" was
    # shown as "a x & y ü.jpg" in bold, and a name with "&lt;" as "<"
    import numpy as np

    from app.tabs.imseg_views import ImsegView

    view = shown(qtbot, ImsegView(), (900, 500))
    for name in (f"{ODD}.jpg", "fish &lt;3 &amp; chips.png"):
        title = f"{name} — Boundaries over the image: 12 regions"
        view.set_picture(np.zeros((40, 60, 3), np.uint8), title)
        assert view.title.item.toPlainText() == title
        assert view.title.text == title
    # cut to a narrow pane: the cut text as written, the whole text in a tooltip shown as written
    view.resize(160, 300)
    qtbot.wait(50)
    cut = view.title.item.toPlainText()
    assert cut.endswith("…") and title.startswith(cut[:-1])
    assert _shown(view.title.toolTip()).strip() == title


def test_the_pinned_caption_and_its_tooltip_show_markup_characters_as_written(qtbot):
    from app.ui.widgets import ElidedLabel

    lab = ElidedLabel()
    qtbot.addWidget(lab)
    lab.resize(90, 20)
    lab.show()
    lab.set_full_text(f"Pinned — {ODD}.png, k 5")
    assert lab.text().endswith("…") and "<b>" in lab.full_text()
    assert lab.textFormat().name == "PlainText"
    assert _shown(lab.toolTip()).strip() == f"Pinned — {ODD}.png, k 5"


@pytest.mark.parametrize("tab_name, sample", [
    ("mesh_tab.MeshTab", "dumbbell.ply"),
    ("imseg_tab.ImsegTab", "imseg/coffee.jpg"),
    ("echo_tab.EchoTab", "echo/lv_synthetic.npz"),
])
def test_the_input_line_shows_the_file_name_as_written(tmp_path, open_tab, tab_runner, tab_name, sample):
    # before: describe_input put the name into HTML as it was: "a <b>x & y</b> ü.ply" showed as
    # "a x & y ü.ply" in bold (the mesh tab's name in italics for "<i>")
    import importlib

    mod, cls = tab_name.split(".")
    Tab = getattr(importlib.import_module(f"app.tabs.{mod}"), cls)
    src = SAMPLES / sample
    odd = tmp_path / f"{ODD}{src.suffix}"
    shutil.copy(src, odd)
    tab = open_tab(Tab, (1200, 760))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, odd)
    assert f"{ODD}{src.suffix}" in _shown(tab.input_info.text())


def test_the_flow_and_mvs_input_lines_show_names_as_written(tmp_path, open_tab, tab_runner):
    from app.tabs.flow_tab import FlowTab
    from app.tabs.mvs_tab import MvsTab

    a, b = tmp_path / f"{ODD} 1.png", tmp_path / f"{ODD} 2.png"
    shutil.copy(SAMPLES / "flow" / "frame1.png", a)
    shutil.copy(SAMPLES / "flow" / "frame2.png", b)
    tab = open_tab(FlowTab, (1200, 760))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, a)          # a lone first frame: "choose the second"
    assert f"{ODD} 1.png" in _shown(tab.input_info.text())

    scene = tmp_path / f"scene {ODD}"
    shutil.copytree(SAMPLES / "mvs", scene)
    mt = open_tab(MvsTab, (1200, 760))
    mt.live_check.setChecked(False)
    tab_runner.load(mt, scene / "synth_par.txt")
    text = _shown(mt.input_info.text())
    assert f"scene {ODD}/synth_par.txt" in text and "12 views" in text


def test_mesh_k_edits_keep_the_view_size(qtbot, open_tab, tab_runner):
    # before: each result's digits set the parts table's width, the side panel followed it and
    # the splitter took the pixels from the 3-D view: the view shrank by 11 px at the first result
    # and by 1 px at k = 7 (dumbbell, 1300 px), and each time the static picture drew its
    # triangles again (the one-off slow repaint of the first k edits in the live benchmark; with
    # VTK a resize reframes the camera)
    from app.tabs.mesh_tab import MeshTab

    tab = open_tab(MeshTab, (1300, 800))
    tab.live_check.setChecked(False)
    tab.form.set_value("apsp", "cpu")
    tab_runner.load(tab, SAMPLES / "dumbbell.ply")
    qtbot.wait(200)
    size = tab.view.size()
    raster = tab.view._raster
    for k in (3, 4, 5, 6, 7):
        assert tab_runner.run(tab, k=k) is not None
        qtbot.wait(100)
        assert tab.view.size() == size, (k, size, tab.view.size())
    if raster is not None:                 # the static picture (no OpenGL offscreen)
        assert tab.view._raster is raster  # the triangles drawn once, recoloured since
    # every column still fits (no sideways scrolling): the reserve is a floor, not a cap
    assert tab.legend.minimumWidth() >= tab.legend.columns_width()


def test_the_flow_frames_fit_their_panes_in_a_narrow_pinned_window(qtbot, open_tab, tab_runner):
    # before: each pane's title ("First frame, flow as colour wheel + quality (grey), occlusions
    # (blue), failures (red)") set the pyqtgraph layout's minimum width: in a pinned half of an
    # 800 px window the frames were drawn wider than their pane and cut at the right
    from app.tabs.flow_tab import FlowTab

    tab = open_tab(FlowTab, (1000, 560))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLES / "flow" / "frame1.png")
    assert tab_runner.run(tab) is not None
    assert tab.pin()
    tab.form.set_value("quality_overlay", True)      # the long title
    qtbot.wait(300)
    tab.resize(900, 560)
    qtbot.wait(400)
    views = (tab._pinned_slot["view"], tab.view)
    for v in views:
        assert v.glw.width() < 250                      # the case: a half narrower than the title
        assert v.glw.ci.geometry().width() <= v.glw.width() + 1, (v.glw.ci.geometry(), v.glw.width())
        r = v.left.sceneBoundingRect()                  # the first frame's pane (stacked or side by side)
        assert r.right() <= v.glw.width() / (1 if v.vertical else 2) + 2, (r, v.glw.width(), v.vertical)
        shown = v.left_title.item.toPlainText()
        assert shown.endswith("…") and v.left_title.toolTip().startswith(shown[:-1])
    assert "quality (grey)" in tab.view.left_title.toolTip()     # the live side's whole title


def test_a_long_file_name_wraps_instead_of_widening_the_left_panel(tmp_path, qtbot, open_tab, tab_runner):
    # before: "experiment_2026-11-26_session_04_camera_left_exposure_auto_calibrated_frame_000123.jpg"
    # could not wrap (no spaces): the left panel grew from 317 to 686 px and the window could not
    # be made narrower than 1042 px
    from app.tabs.imseg_tab import ImsegTab

    long = tmp_path / "experiment_2026-11-26_session_04_camera_left_exposure_auto_calibrated_frame_000123.jpg"
    shutil.copy(SAMPLES / "imseg" / "coffee.jpg", long)
    tab = open_tab(ImsegTab, (1280, 760))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLES / "imseg" / "coffee.jpg")
    qtbot.wait(100)
    short_w = tab.splitter.sizes()[0]
    tab_runner.load(tab, long)
    qtbot.wait(200)
    assert long.name in _shown(tab.input_info.text())
    assert tab.splitter.sizes()[0] <= short_w + 10, (short_w, tab.splitter.sizes())
    assert tab.input_info.height() > 2 * tab.input_info.fontMetrics().height()   # wrapped onto more lines
