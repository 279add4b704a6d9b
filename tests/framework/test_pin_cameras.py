"""Pinned 3-D results share the live view's camera (base.ToolTab.pin, View3D.link_camera)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from app.tabs.mesh_tab import MeshTab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


@pytest.mark.slow
def test_turning_either_view_turns_both_and_unpin_unlinks(open_tab, tab_runner):
    tab = open_tab(MeshTab, (1200, 760))
    tab.form.set_value("apsp", "cpu")
    tab_runner.load(tab, SAMPLES / "dumbbell.ply")
    assert tab_runner.run(tab, k=2) is not None
    if not tab.view.available:
        pytest.skip(f"no OpenGL here (static pictures, nothing to turn): {tab.view.gl_reason}")
    assert tab.pin()
    pinned = tab._pinned_slot["view"]
    assert tab.view.linked_views == [pinned] and pinned.linked_views == [tab.view]
    live_cam, pin_cam = tab.view.plotter.camera, pinned.plotter.camera
    before = tuple(pin_cam.position)
    live_cam.azimuth = 40                       # the user turns the live view
    tab.view.plotter.render()
    assert tuple(pinned.plotter.camera.position) == tuple(tab.view.plotter.camera.position) != before
    pinned.plotter.camera.elevation = 25        # or the pinned one
    assert tuple(tab.view.plotter.camera.position) == tuple(pinned.plotter.camera.position)
    assert tab_runner.run(tab, k=3) is not None  # a new live result keeps the link
    assert tab.view.linked_views == [pinned]
    tab.unpin()
    assert tab.view.linked_views == [] and tab.view.plotter.render_window.HasObserver("EndEvent") == 0
    tab.view.plotter.render()                   # rendering after the pinned view is gone is harmless
