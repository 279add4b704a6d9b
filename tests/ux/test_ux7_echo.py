"""Session 7 (ux2): the echo tab's pinned colour-map legend (U4) and crosshair lines that end
at the slice pictures (U6). CPU, offscreen."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tabs.echo_tab import EchoTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "echo" / "lv_synthetic.npz"


@pytest.mark.slow
def test_the_pinned_side_gets_its_own_legend_when_its_colour_map_differs(qtbot, open_tab, tab_runner):
    # before: pinned in Magnitude (viridis), live in Jacobian determinant: the side panel had the
    # live side's blue-white-red legend only, nothing said what the pinned side's colours meant
    tab = open_tab(EchoTab, (1300, 800))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLE)
    assert tab_runner.run(tab, levels=1, iters=3) is not None
    assert tab.overlay_combo.currentText() == "Magnitude"
    assert tab.pin()
    qtbot.wait(200)
    # the same result, colour map and range on both sides: one legend
    assert tab.pinned_colorbar_label.isHidden() and "live side" not in tab.colorbar_title.text()
    tab.overlay_combo.setCurrentText("Jacobian determinant")
    qtbot.waitUntil(lambda: not tab.pinned_colorbar_label.isHidden(), timeout=3000)
    assert "det(I + ∇u)" in tab.colorbar_label.text()          # the live side's
    pinned_text = tab.pinned_colorbar_label.text()
    assert "mm" in pinned_text and "motion magnitude" in pinned_text, pinned_text
    assert not tab.pinned_colorbar.pixmap().isNull()
    # the ramp is the pinned side's colour map (viridis: dark purple at the left end)
    img = tab.pinned_colorbar.pixmap().toImage()
    c = img.pixelColor(1, img.height() // 2)
    assert c.blue() > c.green() and c.red() < 120, c.name()
    assert "live side" in tab.colorbar_title.text() and not tab.pinned_colorbar_title.isHidden()
    # the live side back in Magnitude: one legend again
    tab.overlay_combo.setCurrentText("Magnitude")
    qtbot.waitUntil(lambda: tab.pinned_colorbar_label.isHidden(), timeout=3000)
    # a new live result in Magnitude has its own range (99th percentile of its motion): two legends
    assert tab_runner.run(tab, levels=1, iters=3, alpha=0.2) is not None
    qtbot.waitUntil(lambda: not tab.pinned_colorbar_label.isHidden(), timeout=3000)
    assert tab.pinned_colorbar_label.text() != tab.colorbar_label.text()
    assert tab.pinned_colorbar_label.text() == pinned_text
    tab.unpin()
    qtbot.wait(50)
    assert tab.pinned_colorbar_label.isHidden() and tab.pinned_colorbar.isHidden()
    assert "live side" not in tab.colorbar_title.text()


def test_the_crosshair_lines_end_at_the_slice_pictures(qtbot, open_tab, tab_runner):
    # before: the crosshair's lines ran the full height (and width) of each view, past the
    # 190 px slice pictures into the pane's margins (the walk's echo screenshots)
    tab = open_tab(EchoTab, (1300, 800))
    tab.live_check.setChecked(False)
    tab_runner.load(tab, SAMPLE)
    qtbot.wait(200)
    view = tab.view
    for p in view.planes:
        pic = p.grey.sceneBoundingRect()
        pane = p.vb.sceneBoundingRect()
        assert pic.height() < pane.height() - 20 or pic.width() < pane.width() - 20, "the test needs margins"
        for line in (p.vline, p.hline):
            r = line.sceneBoundingRect()
            along_lo, along_hi = (r.top(), r.bottom()) if line is p.vline else (r.left(), r.right())
            pic_lo, pic_hi = (pic.top(), pic.bottom()) if line is p.vline else (pic.left(), pic.right())
            assert along_lo >= pic_lo - 1.5 and along_hi <= pic_hi + 1.5, (line.angle, r, pic)
            assert along_hi - along_lo >= (pic_hi - pic_lo) - 1.5, "the line spans the whole picture"
    # still draggable: moving the vertical line of the axial view moves the crosshair's x
    p = view.planes[0]
    x0 = view.pos[2]
    p.vline.setValue(p.vline.value() + 5 * view.spacing[2])
    assert view.pos[2] == x0 + 5
    # a zoom keeps the line on the picture (the visible part of it)
    p.vb.scaleBy((0.5, 0.5))
    qtbot.wait(50)
    r, pic, pane = p.vline.sceneBoundingRect(), p.grey.sceneBoundingRect(), p.vb.sceneBoundingRect()
    assert r.top() >= max(pic.top(), pane.top()) - 1.5 and r.bottom() <= min(pic.bottom(), pane.bottom()) + 1.5
