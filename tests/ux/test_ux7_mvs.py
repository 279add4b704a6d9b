"""Session 7 (ux2), U7: the MVS depth map's title sits right under the map, not at the pane's
bottom ~90 px below it. CPU, offscreen."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import shown  # noqa: E402

from app.tabs.mvs_views import MapView  # noqa: E402

pytestmark = pytest.mark.gui


def _geometry(v: MapView):
    H, W = v.shape
    vb = v.plot.vb
    pic = vb.mapViewToScene(pg_rect(W, H)).boundingRect()
    title = v.title.sceneBoundingRect()
    return pic, title, vb.sceneBoundingRect()


def pg_rect(w, h):
    from PySide6.QtCore import QRectF

    return QRectF(0, 0, w, h)


@pytest.mark.parametrize("size", [(330, 360), (330, 600), (700, 260)])
def test_the_title_sits_under_the_map(qtbot, size):
    # before: at 330 x 360 (the live MVS pane at 1280 px, pinned) the 160 x 120 map was drawn in
    # the middle of its box and its title at the pane's bottom: ~90 px of empty pane between them
    v = shown(qtbot, MapView(), size, min_size=(1, 1))
    v.show_scalar(np.random.default_rng(0).random((120, 160)).astype(np.float32),
                  title="view000: depth (z, scene units)")
    qtbot.wait(100)
    pic, title, box = _geometry(v)
    gap = title.top() - pic.bottom()
    assert -1 <= gap <= 12, (size, pic, title)
    # the map fills its box in the limiting direction (less pyqtgraph's padding)
    assert max(pic.width() / box.width(), pic.height() / box.height()) >= 0.8, (pic, box)
    # the title inside the pane, under the map
    assert title.bottom() <= v.glw.height() + 0.5 and title.top() >= pic.bottom() - 1
    # a resize keeps it so
    v.resize(size[0], size[1] + 150)
    qtbot.wait(100)
    pic, title, _ = _geometry(v)
    assert -1 <= title.top() - pic.bottom() <= 12
    # emptied: the title line at the pane's bottom, inside it
    v.clear()
    qtbot.wait(50)
    assert v.title.sceneBoundingRect().bottom() <= v.glw.height() + 0.5
