"""The OpenGL proof is made once per process and its context and surface are kept (session 8: a
QOffscreenSurface made and dropped for every 3-D view left stale PySide6 wrappers, and a later
QAction came back as a "QSurface" while a tab built its preset menu, in CI under Xvfb)."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

pytestmark = pytest.mark.gui


def test_the_context_is_made_once_and_kept(qapp, monkeypatch):
    import PySide6.QtGui as QtGui

    from app.ui import gl

    made = []

    class Ctx:
        def __init__(self):
            made.append(self)

        def create(self):
            return True

        def makeCurrent(self, surf):  # noqa: N802 (Qt)
            return True

        def doneCurrent(self):  # noqa: N802 (Qt)
            pass

    class Surf:
        destroyed = False

        def create(self):
            pass

        def destroy(self):
            Surf.destroyed = True

    monkeypatch.setattr(gl, "gl_unavailable_reason", lambda name: "")
    monkeypatch.setattr(QtGui, "QOpenGLContext", Ctx)
    monkeypatch.setattr(QtGui, "QOffscreenSurface", Surf)
    monkeypatch.setattr(gl, "_PROOF", {})
    assert gl.opengl_status() == (True, "")
    assert gl.opengl_status() == (True, "")
    assert len(made) == 1                                   # one context per process
    assert gl._PROOF["context"] is made[0] and isinstance(gl._PROOF["surface"], Surf)
    assert not Surf.destroyed                               # kept, not dropped


def test_a_platform_without_opengl_is_still_asked_every_time(qapp, monkeypatch):
    from app.ui import gl

    monkeypatch.setattr(gl, "_PROOF", {})
    monkeypatch.setattr(gl, "gl_unavailable_reason", lambda name: "no OpenGL on this platform")
    assert gl.opengl_status() == (False, "no OpenGL on this platform")
    assert gl._PROOF == {}
