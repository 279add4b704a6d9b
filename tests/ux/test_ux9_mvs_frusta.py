"""Session 9: in a tall, narrow MVS 3-D pane the camera frusta were cut at the left and right edges
before a run (VTK's reset_camera fits the vertical view angle only). CloudView.frame fits what it
shows both ways for the pane's shape, and follows the pane's resizes until the user moves the
camera. Needs the VTK view (OpenGL: run under Xvfb, ``xvfb-run``); skipped with the reason where
the window has no 3-D view (offscreen)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import loaded_tab  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "mvs" / "synth_par.txt"


def _outside(view, points) -> int:
    """How many of ``points`` VTK draws outside the view."""
    ren = view.plotter.renderer
    W, H = ren.GetSize()
    n = 0
    for p in np.asarray(points, np.float64):
        ren.SetWorldPoint(*p, 1.0)
        ren.WorldToDisplay()
        x, y, _ = ren.GetDisplayPoint()
        n += not (0 <= x <= W and 0 <= y <= H)
    return n


def _frusta_points(view):
    pts = [view.plotter.actors[name].GetMapper().GetInput().GetPoints() for name in ("frusta", "current")
           if name in view.plotter.actors]
    from vtkmodules.util.numpy_support import vtk_to_numpy

    return np.vstack([vtk_to_numpy(p.GetData()) for p in pts])


@pytest.fixture
def tall_tab(qtbot, open_tab, tab_runner):
    from app.tabs.mvs_tab import MvsTab

    tab = loaded_tab(open_tab, tab_runner, MvsTab, SAMPLE, (1280, 1000))
    view = tab.cloud_view
    if view.plotter is None:
        pytest.skip(f"no 3-D view here ({view.gl_reason or 'no OpenGL'}): run under Xvfb (xvfb-run)")
    qtbot.wait(300)
    return tab


def test_every_frustum_is_in_a_tall_narrow_pane_before_a_run(qtbot, tall_tab):
    view = tall_tab.cloud_view
    assert view.height() > 2 * view.width(), "the case: a tall, narrow pane"
    pts = _frusta_points(view)
    assert len(pts) == 5 * 12
    assert _outside(view, pts) == 0


def test_the_framing_follows_a_resize_until_the_user_moves_the_camera(qtbot, tall_tab):
    view = tall_tab.cloud_view
    tall_tab.window().resize(1000, 800)
    qtbot.wait(400)
    pts = _frusta_points(view)
    assert _outside(view, pts) == 0
    view.plotter.camera.zoom(3.0)          # the user zooms in: their camera stays on resize
    view.plotter.render()
    zoomed = _outside(view, pts)
    assert zoomed > 0
    tall_tab.window().resize(1100, 850)
    qtbot.wait(400)
    assert _outside(view, pts) > 0
