"""Whether the window can open an OpenGL (VTK) view: the rule of :mod:`app.render.gl` for
Qt's platform, then one real context as the proof."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication

from ..render.gl import gl_unavailable_reason

__all__ = ["opengl_status"]


#: the one real context's answer, and the context and surface themselves, kept for the process: a
#: QOffscreenSurface made and dropped on every 3-D view left PySide6 wrappers of its ``QSurface``
#: part behind, and a later Qt object at the same address came back as a "QSurface" (a CI failure
#: building a tab's preset menu, session 8)
_PROOF: dict = {}


def opengl_status() -> tuple[bool, str]:
    """``(ok, why_not)``: whether Qt can create a current OpenGL context here (the context is
    made once per process)."""
    why = gl_unavailable_reason(QGuiApplication.platformName())
    if why:
        return False, why
    if "answer" not in _PROOF:
        _PROOF["answer"] = _prove()
    return _PROOF["answer"]


def _prove() -> tuple[bool, str]:
    try:
        from PySide6.QtGui import QOffscreenSurface, QOpenGLContext

        ctx = QOpenGLContext()
        _PROOF["context"] = ctx
        if not ctx.create():
            return False, "no OpenGL context could be created"
        surf = QOffscreenSurface()
        _PROOF["surface"] = surf
        surf.create()
        ok = ctx.makeCurrent(surf)
        if ok:
            ctx.doneCurrent()
        if not ok:
            return False, "the OpenGL context cannot be made current"
    except Exception as exc:  # pragma: no cover - depends on the platform
        return False, f"OpenGL check failed: {exc}"
    return True, ""
