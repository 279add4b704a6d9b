"""Session 28: a 3-D view leaves no PySide6 wrapper of its OpenGL context's ``QSurface`` behind.

pyvistaqt 0.13 keeps ``context().surface()`` on the interactor. A ``QSurface`` is not a QObject,
so PySide6 cannot see Qt delete it; the wrapper stayed in Shiboken's registry after its tab was
gone, and a later ``QAction`` at the same address came back as a "QSurface" (CI: ``'QSurface'
object has no attribute 'connect'`` while a tab built its preset menu, sessions 8 and 27).
``app.ui.view3d`` asks the context for its surface on each use instead.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

import shiboken6  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def _surface_wrappers() -> list:
    return [w for w in shiboken6.getAllValidWrappers() if type(w).__name__ == "QSurface"]


def test_a_mesh_view_keeps_no_qsurface_wrapper(qapp, tab_runner, qtbot):
    from app.tabs.mesh_tab import MeshTab
    from app.ui.gl import opengl_status

    ok, why = opengl_status()  # (the platform's rule, then one real context)
    if not ok:
        pytest.skip(f"needs an OpenGL 3-D view: {why}")
    before = len(_surface_wrappers())
    tab = MeshTab()                            # not open_tab: this test deletes the tab itself
    tab.resize(1000, 700)
    tab.show()
    qtbot.waitExposed(tab)
    tab_runner.load(tab, SAMPLES / "creature.ply")
    plotter = tab.view.plotter
    assert plotter is not None, tab.view.gl_reason
    qtbot.waitUntil(lambda: plotter.__dict__.get("_ctx") is not None, timeout=15000)  # initializeGL ran
    surf = plotter._surface                    # asked of the live context: a real surface
    assert type(surf).__name__ == "QSurface" and surf.surfaceClass() is not None
    del surf
    gc.collect()
    assert len(_surface_wrappers()) == before  # none kept between uses
    plotter.render()                           # makes the context current through the property
    assert len(_surface_wrappers()) == before
    tab.runner.shutdown(10000)
    tab.close()
    tab.deleteLater()
    qtbot.wait(200)
    gc.collect()
    assert len(_surface_wrappers()) == before  # and none after the tab is gone
