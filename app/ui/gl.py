"""Whether the window can open an OpenGL (VTK) view: the rule of :mod:`app.render.gl` for
Qt's platform, then one real context as the proof."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication

from ..render.gl import gl_unavailable_reason

__all__ = ["opengl_status"]


def opengl_status() -> tuple[bool, str]:
    """``(ok, why_not)``: whether Qt can create a current OpenGL context here."""
    why = gl_unavailable_reason(QGuiApplication.platformName())
    if why:
        return False, why
    try:
        from PySide6.QtGui import QOffscreenSurface, QOpenGLContext

        ctx = QOpenGLContext()
        if not ctx.create():
            return False, "no OpenGL context could be created"
        surf = QOffscreenSurface()
        surf.create()
        ok = ctx.makeCurrent(surf)
        if ok:
            ctx.doneCurrent()
        surf.destroy()
        if not ok:
            return False, "the OpenGL context cannot be made current"
    except Exception as exc:  # pragma: no cover - depends on the platform
        return False, f"OpenGL check failed: {exc}"
    return True, ""
