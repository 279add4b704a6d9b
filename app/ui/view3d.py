"""The frame every 3-D view of the window shares: a pyvistaqt ``QtInteractor`` where OpenGL
works, otherwise a static picture under a note that says why, and a placeholder until there
is something to show. Subclasses draw the content (:mod:`app.tabs.mesh_view`,
:mod:`app.tabs.mvs_views`)."""

from __future__ import annotations

import logging
import sys

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtWidgets import QLabel, QSizePolicy, QStackedLayout, QVBoxLayout, QWidget

from .gl import opengl_status

__all__ = ["View3D"]

log = logging.getLogger(__name__)

#: Start-up (issue 18, case 19): importing pyvistaqt and VTK takes about 1 s, so the interactor
#: is built right after the view's placeholder is first painted (or at the first use of
#: ``plotter``, whichever comes first), not while the window is being built.
DEFER_INTERACTOR = True

_RENDERING_LINKED = False   # a linked view is being rendered (no render back and forth)


_INTERACTOR: list = []


def _interactor_class():
    """pyvistaqt's ``QtInteractor`` that never keeps a Python wrapper of its context's surface.

    pyvistaqt (0.13) stores ``self._surface = self.context().surface()``. That object is a
    ``QSurface`` (not a QObject), so PySide6 cannot tell when Qt deletes it, and the wrapper
    stays in Shiboken's registry for as long as the interactor's Python object lives (which
    outlives its tab). A later Qt object at that address then comes back as a "QSurface": a
    tab's ``menu.addAction(text, slot)`` raised ``'QSurface' object has no attribute
    'connect'`` (CI, sessions 8 and 27). Here ``_surface`` is asked of the context on every use,
    so the wrapper is released as soon as the call that needed it returns.
    """
    if not _INTERACTOR:
        from pyvistaqt import QtInteractor

        class Interactor(QtInteractor):
            @property
            def _surface(self):
                if not self.__dict__.get("_gpulab_has_surface"):
                    return None
                ctx = self.__dict__.get("_ctx")
                if ctx is None:
                    return None
                try:
                    return ctx.surface()
                except RuntimeError:   # the context is already deleted
                    return None

            @_surface.setter
            def _surface(self, value) -> None:
                self.__dict__["_gpulab_has_surface"] = value is not None

        _INTERACTOR.append(Interactor)
    return _INTERACTOR[0]


class View3D(QWidget):
    """A 3-D view with a software fallback.

    A subclass sets its own attributes, then calls :meth:`init_view` once; it may override
    :meth:`setup_plotter` (observers, axes). Afterwards ``plotter`` is the interactor or
    ``None``, ``static`` the fallback's picture label or ``None``, and ``gl_reason`` says why
    OpenGL is not used.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setMinimumSize(200, 150)   # two views side by side still fit a half-screen window
        self._gl_pending = False
        self._plotter = None
        self.static: QLabel | None = None
        self._static_box: QWidget | None = None
        self.gl_reason = ""
        self._camera_links: list[tuple[object, int, View3D]] = []   # (render window, observer, view)

    @property
    def plotter(self):
        """The interactor (built now if its build was deferred), or None."""
        if self._gl_pending:
            self._build_view(True)
        return self._plotter

    @plotter.setter
    def plotter(self, value) -> None:
        self._plotter = value

    def init_view(self, placeholder_html: str, *, name: str, allow_3d: bool = True) -> None:
        """Build the placeholder, the interactor or the fallback; ``name`` prefixes the object
        names (``NAME-placeholder``, ``NAME-note``, ``NAME-static``)."""
        self._stack = QStackedLayout()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(self._stack)
        self.placeholder = QLabel(placeholder_html)
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setObjectName(f"{name}-placeholder")
        self._stack.addWidget(self.placeholder)
        ok, why = opengl_status() if allow_3d else (False, "the 3-D view was turned off")
        self.gl_reason = why
        self._view_name = name
        if ok and DEFER_INTERACTOR and "pyvistaqt" not in sys.modules:
            self._gl_pending = True             # built after the first paint (see DEFER_INTERACTOR)
            self.placeholder.installEventFilter(self)
            # an OpenGL widget in the window from its first show: the window composes with OpenGL
            # from the start (adding the first one to a shown window switches its compositor,
            # which crashed under Xvfb's Mesa)
            from PySide6.QtOpenGLWidgets import QOpenGLWidget

            self._gl_anchor = QOpenGLWidget(self)
            self._gl_anchor.setFixedSize(1, 1)
            self._gl_anchor.lower()
        else:
            self._build_view(ok)
        self._stack.setCurrentWidget(self.placeholder)

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if obj is self.placeholder and event.type() == QEvent.Type.Paint and self._gl_pending:
            self.placeholder.removeEventFilter(self)
            QTimer.singleShot(0, self, self._build_if_pending)
        return super().eventFilter(obj, event)

    def _build_if_pending(self) -> None:
        if self._gl_pending:
            self._build_view(True)

    def _build_view(self, ok: bool) -> None:
        """The interactor where OpenGL works (``ok``), else the static fallback."""
        self._gl_pending = False
        name = self._view_name
        current = self._stack.currentWidget()
        if ok:
            try:
                self.plotter = _interactor_class()(self, auto_update=False)
                self.plotter.set_background("#f4f5f7", top="#d7dce3")
                self._stack.addWidget(self._plotter_widget())
                self.setup_plotter(self.plotter)
            except Exception as exc:  # no usable OpenGL after all
                log.warning("3-D view unavailable: %s", exc)
                self.gl_reason = f"{type(exc).__name__}: {exc}"
                self._drop_plotter()
        if self._plotter is None:
            box = QWidget()
            bl = QVBoxLayout(box)
            bl.setContentsMargins(0, 0, 0, 0)
            bl.setSpacing(0)
            note = QLabel(f"Static picture: the interactive 3-D view is unavailable ({self.gl_reason}).")
            note.setObjectName(f"{name}-note")
            note.setWordWrap(True)
            note.setStyleSheet("background: #fff4d6; color: #6b4e00; padding: 4px 8px;")
            self.static = QLabel()
            self.static.setObjectName(f"{name}-static")
            self.static.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.static.setWordWrap(True)
            self.static.setStyleSheet("background: #ffffff;")
            bl.addWidget(note)
            bl.addWidget(self.static, 1)
            self._static_box = box
            self._stack.addWidget(box)
            self.placeholder.setText(
                self.placeholder.text()
                + f"<p style='color:#a15c00'>The interactive 3-D view is unavailable ({self.gl_reason}); "
                "a static picture is shown instead.</p>")
        if current is not None:
            self._stack.setCurrentWidget(current)

    def setup_plotter(self, plotter) -> None:
        """Called once with a working interactor (observers, axes, anti-aliasing)."""

    @property
    def available(self) -> bool:
        """True when the interactive OpenGL view is in use."""
        return self._gl_pending or self._plotter is not None   # (a deferred build is not forced here)

    def _plotter_widget(self) -> QWidget:
        return self.plotter.interactor if hasattr(self.plotter, "interactor") else self.plotter

    def _drop_plotter(self) -> None:
        if self.plotter is not None:
            try:
                self.plotter.close()
            except Exception:  # noqa: BLE001
                pass
            w = self._plotter_widget()
            self._stack.removeWidget(w)
            w.deleteLater()
        self.plotter = None

    # ------------------------------------------------------------------ linked cameras
    def link_camera(self, other: View3D) -> bool:
        """Share one camera with ``other`` (a pinned copy of this view): turning, panning or
        zooming either view, or resetting it, moves both. False where either view has no
        interactive 3-D view (the static fallback)."""
        a, b = self.plotter, other.plotter
        if a is None or b is None or other is self:
            return False
        b.renderer.camera = a.renderer.camera
        for src, dst in ((self, other), (other, self)):
            rw = src._plotter.render_window
            oid = rw.AddObserver("EndEvent", lambda *_, d=dst: d._render_linked())
            src._camera_links.append((rw, oid, dst))
        other._render_linked()
        return True

    def unlink_cameras(self) -> None:
        """Stop sharing the camera (the pinned copy is going away); each view keeps its framing."""
        for rw, oid, dst in self._camera_links:
            try:
                rw.RemoveObserver(oid)
            except Exception:  # noqa: BLE001 - a finalised render window
                pass
            for rw2, oid2, back in list(dst._camera_links):
                if back is self:
                    try:
                        rw2.RemoveObserver(oid2)
                    except Exception:  # noqa: BLE001
                        pass
                    dst._camera_links.remove((rw2, oid2, back))
        self._camera_links = []

    @property
    def linked_views(self) -> list[View3D]:
        return [d for _, _, d in self._camera_links]

    def _render_linked(self) -> None:
        """Render this view because a linked one rendered (never back: one render each)."""
        global _RENDERING_LINKED
        p = self._plotter
        if _RENDERING_LINKED or p is None or getattr(p, "_closed", False) or p.render_window is None:
            return
        _RENDERING_LINKED = True
        try:
            p.renderer.ResetCameraClippingRange()
            p.render_window.Render()
        finally:
            _RENDERING_LINKED = False

    def close_view(self) -> None:
        """Release the render window (the tab is closing)."""
        self.unlink_cameras()
        self._gl_pending = False            # never built: nothing to release (and no VTK to import)
        if self._plotter is not None:
            try:
                self._plotter.close()
            except Exception:  # pragma: no cover
                log.debug("closing the plotter failed", exc_info=True)
