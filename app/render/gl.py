"""Whether OpenGL can be used here: the one rule for the tabs' 3-D views and off-screen renders.

:func:`gl_unavailable_reason` returns "" when OpenGL should work, else why not. The
window passes its Qt platform name (and checks a context itself once this says yes);
off-screen renders pass none and need an X display, EGL or OSMesa. No Qt import.
"""

from __future__ import annotations

import ctypes.util
import os
import sys

__all__ = ["gl_unavailable_reason", "NO_GL_PLATFORMS", "ENV_NO_OPENGL"]

ENV_NO_OPENGL = "GPULAB_NO_OPENGL"
#: Qt platforms without OpenGL
NO_GL_PLATFORMS = ("offscreen", "minimal", "vnc", "linuxfb")


def gl_unavailable_reason(qt_platform: str | None = None) -> str:
    """Why OpenGL cannot be used ("" when it can, as far as can be told without trying).

    Parameters
    ----------
    qt_platform : str, optional
        ``QGuiApplication.platformName()`` for a view inside the window; ``None`` for an
        off-screen render (VTK then needs an X display, or EGL/OSMesa: with none of them it
        may abort the process instead of raising, so callers use a software renderer).
    """
    if os.environ.get(ENV_NO_OPENGL, "") not in ("", "0"):
        return f"{ENV_NO_OPENGL} is set"
    if qt_platform is not None:
        if qt_platform in NO_GL_PLATFORMS:
            return f"the Qt platform '{qt_platform}' has no OpenGL"
        return ""
    if os.environ.get("DISPLAY") or sys.platform in ("win32", "darwin"):
        return ""
    if ctypes.util.find_library("EGL") or ctypes.util.find_library("OSMesa"):
        return ""
    return "no X display and neither EGL nor OSMesa is installed"
