"""The 3-D view of the Mesh segmentation tab: a pyvistaqt ``QtInteractor`` showing the
faces in their segment colours, with toggles for edges, representatives and fuzzy faces,
and face picking by a click.

Where OpenGL is not available (``QT_QPA_PLATFORM=offscreen``, a remote session without
GLX, ``GPULAB_NO_OPENGL=1``) the view says so and shows a static software-rendered
picture instead; everything else (the PolyData and its colour array, picking through
:meth:`MeshView.pick_face`) keeps working, so the tab stays usable and testable.
"""

from __future__ import annotations

import logging

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QWidget

from ..render.mesh import LABEL_BOX, FaceRaster, layout_labels, set_default_view, to_polydata
from ..ui.gl import opengl_status
from ..ui.view3d import View3D

__all__ = ["MeshView", "opengl_status"]  # opengl_status re-exported for the tests

log = logging.getLogger(__name__)

NEUTRAL = (205, 205, 200)  # faces before any segmentation
FUZZY_COLOR = (25, 25, 25)  # "highlight fuzzy faces"
PICK_COLOR = "#ff1744"
SOFTWARE_MAX_FACES = 300_000  # above this the static fallback picture is skipped


class MeshView(View3D):
    """A mesh with per-face colours, in 3-D when OpenGL works.

    Signals
    -------
    face_picked(int)
        The user clicked a face (its index), or -1 for the background.
    """

    face_picked = Signal(int)

    def __init__(self, parent: QWidget | None = None, *, allow_3d: bool = True):
        super().__init__(parent)
        self.mesh = None  # pyvista.PolyData with cell array "colors"
        self.vertices: np.ndarray | None = None
        self.faces: np.ndarray | None = None
        self.base_colors: np.ndarray | None = None
        self.fuzzy: np.ndarray | None = None
        self.show_edges = False
        self.show_fuzzy = False
        self.reps_points: np.ndarray | None = None
        self.reps_colors: np.ndarray | None = None
        self.show_reps = False
        self.picked_face: int | None = None
        self._actors: dict[str, object] = {}
        self._label_actors: list = []
        self._press: tuple[int, int] | None = None
        self._camera_moved = False  # the user turned or zoomed: keep their view on resize
        self._raster: FaceRaster | None = None  # the static picture's face numbers (per mesh and size)
        self.init_view(
            "<div style='color:#666'><h3>No mesh loaded</h3>"
            "<p>Open a mesh (File ▸ Open, or drop a PLY, OBJ, OFF, STL … file on the window)<br>"
            "or pick a bundled sample on the left.</p></div>",
            name="mesh-view", allow_3d=allow_3d)
        self.placeholder.setWordWrap(True)   # its text (and the no-OpenGL note) wraps, never cut at the edge

    def setup_plotter(self, plotter) -> None:
        try:
            plotter.enable_anti_aliasing("fxaa")
        except Exception:  # pragma: no cover - older VTK
            pass
        self._install_picking()
        plotter.add_axes(interactive=False, line_width=2, labels_off=False)

    # ------------------------------------------------------------------ content
    def clear(self) -> None:
        self.mesh = None
        self._raster = None
        self.vertices = self.faces = self.base_colors = self.fuzzy = None
        self.reps_points = self.reps_colors = None
        self.picked_face = None
        if self.plotter is not None:
            self.plotter.clear_actors()
            self._actors.clear()
            self._clear_label_overlay()
            self.plotter.render()
        self._stack.setCurrentWidget(self.placeholder)

    def set_mesh(self, vertices, faces, face_colors=None, *, reset_camera: bool = True) -> None:
        """Show a new mesh (grey unless ``face_colors`` (F, 3) uint8 is given)."""
        self.vertices = np.asarray(vertices, dtype=np.float64)
        self.faces = np.asarray(faces, dtype=np.int64)
        self._raster = None
        self.fuzzy = None
        self.reps_points = self.reps_colors = None
        self.picked_face = None
        if face_colors is None:
            face_colors = np.tile(np.array(NEUTRAL, np.uint8), (len(self.faces), 1))
        self.base_colors = np.ascontiguousarray(np.asarray(face_colors)[:, :3], dtype=np.uint8)
        self.mesh = to_polydata(self.vertices, self.faces, self._display_colors())
        if self.plotter is not None:
            self.plotter.clear_actors()
            self._actors.clear()
            self._clear_label_overlay()
            self._actors["mesh"] = self.plotter.add_mesh(
                self.mesh, scalars="colors", rgb=True, show_edges=self.show_edges,
                edge_color="#3a3a3a", line_width=0.5, smooth_shading=False, name="mesh",
                pickable=True, reset_camera=False,
            )
            if reset_camera:
                self._frame()
            self._stack.setCurrentWidget(self.plotter.interactor if hasattr(self.plotter, "interactor")
                                         else self.plotter)
            self.plotter.render()
        else:
            self._update_static()

    def set_segmentation(self, face_colors, fuzzy=None, reps_points=None, reps_colors=None) -> None:
        """Colour the faces of the current mesh and set what the toggles show."""
        if self.mesh is None:
            return
        self.base_colors = np.ascontiguousarray(np.asarray(face_colors)[:, :3], dtype=np.uint8)
        self.fuzzy = None if fuzzy is None else np.asarray(fuzzy, bool)
        self.reps_points = None if reps_points is None else np.asarray(reps_points, np.float64)
        self.reps_colors = None if reps_colors is None else np.asarray(reps_colors, np.uint8)
        if self.plotter is None:
            # the static picture holds the colours and the representatives: draw it once, not once
            # for each (146 ms of a 17k-face result's 315 ms on the H100 host, issue 20)
            self.mesh.cell_data["colors"] = self._display_colors()
            self._update_static()
        else:
            # the face colours in place (the actor stays), the representatives, the picked face:
            # one render at the end (highlight_face), not one after each
            self._refresh_colors(render=False)
            self._refresh_reps(render=False)
        self.highlight_face(self.picked_face)

    def reset_camera(self) -> None:
        """Back to the default 3/4 view of the whole mesh."""
        if self.plotter is not None and self.vertices is not None:
            self._frame()
            self.plotter.render()

    def _frame(self) -> None:
        """Frame the whole mesh for the view's current shape (both ways)."""
        w, h = max(self.width(), 1), max(self.height(), 1)
        set_default_view(self.plotter, self.vertices, aspect=w / h)
        self._camera_moved = False

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if self.vertices is None:
            return
        if self.plotter is not None:
            if not self._camera_moved:  # the first view follows the window until the user moves it
                self._frame()
                self.plotter.render()
        elif self.static is not None:
            self._update_static()

    def set_show_edges(self, on: bool) -> None:
        self.show_edges = bool(on)
        actor = self._actors.get("mesh")
        if actor is not None:
            actor.GetProperty().SetEdgeVisibility(self.show_edges)
            self.plotter.render()
        elif self.plotter is None:
            self._update_static()

    def set_show_fuzzy(self, on: bool) -> None:
        self.show_fuzzy = bool(on)
        self._refresh_colors()

    def set_show_representatives(self, on: bool) -> None:
        self.show_reps = bool(on)
        self._refresh_reps()

    def _display_colors(self) -> np.ndarray:
        c = self.base_colors.copy()
        if self.show_fuzzy and self.fuzzy is not None and self.fuzzy.shape[0] == c.shape[0]:
            c[self.fuzzy] = FUZZY_COLOR
        return c

    def _refresh_colors(self, *, render: bool = True) -> None:
        if self.mesh is None:
            return
        colors = self._display_colors()
        old = self.mesh.cell_data.get("colors") if hasattr(self.mesh.cell_data, "get") else None
        if self.plotter is not None and old is not None and getattr(old, "shape", None) == colors.shape:
            old[...] = colors   # the scalars in place: the mapper re-reads them, the actor stays
        else:
            self.mesh.cell_data["colors"] = colors
        if self.plotter is not None:
            self.mesh.Modified()
            if render:
                self.plotter.render()
        else:
            self._update_static()

    def _refresh_reps(self, *, render: bool = True) -> None:
        if self._gl_pending and self.mesh is None:
            return      # the interactor is built after the first paint (View3D); nothing to draw yet
        if self.plotter is None:
            if self.mesh is not None:
                self._update_static()
            return
        for name in [n for n in self._actors if n == "reps" or n.startswith("rep-label-")]:
            self.plotter.remove_actor(self._actors.pop(name), render=False)
        if self.show_reps and self.reps_points is not None and len(self.reps_points):
            import pyvista as pv

            diag = float(np.linalg.norm(np.ptp(self.vertices, axis=0))) or 1.0
            pts = pv.PolyData(self.reps_points)
            cols = self.reps_colors if self.reps_colors is not None else np.zeros((len(pts.points), 3), np.uint8)
            # darker than their part, so a representative stands out on its own faces
            pts.point_data["colors"] = (np.asarray(cols, np.float64) * 0.55).astype(np.uint8)
            glyphs = pts.glyph(geom=pv.Sphere(radius=diag * 0.015, theta_resolution=16, phi_resolution=16),
                               scale=False, orient=False)
            self._actors["reps"] = self.plotter.add_mesh(
                glyphs, scalars="colors", rgb=True, name="reps", pickable=False, reset_camera=False,
                smooth_shading=True, specular=0.4,
            )
            self._add_label_overlay(cols)
        else:
            self._clear_label_overlay()
        if render:
            self.plotter.render()

    # ------------------------------------------------------------------ part numbers
    def _clear_label_overlay(self) -> None:
        for a in self._label_actors:
            self.plotter.renderer.RemoveViewProp(a)
        self._label_actors = []

    def _add_label_overlay(self, cols) -> None:
        """One numbered box per part, drawn on top of the mesh (so it shows even when its
        sphere is hidden) and laid out again at every render so that no two boxes overlap."""
        import vtkmodules.vtkRenderingCore as vtk  # not `import vtk`: that loads all of VTK

        self._clear_label_overlay()
        for j, c in enumerate(cols):
            t = vtk.vtkTextActor()
            t.SetInput(str(j))
            tp = t.GetTextProperty()
            tp.SetFontSize(13)
            tp.BoldOn()
            tp.SetJustificationToCentered()
            tp.SetVerticalJustificationToCentered()
            light = float(np.dot(np.asarray(c, float), [0.299, 0.587, 0.114])) > 150
            tp.SetColor((0.0, 0.0, 0.0) if light else (1.0, 1.0, 1.0))
            tp.SetBackgroundColor(*(float(x) / 255 for x in c))
            tp.SetBackgroundOpacity(0.95)
            tp.SetFrame(True)
            tp.SetFrameColor(0.1, 0.1, 0.1)
            t.SetPickable(False)
            self.plotter.renderer.AddViewProp(t)
            self._label_actors.append(t)
        if not getattr(self, "_label_observer", None):
            self._label_observer = self.plotter.renderer.AddObserver("StartEvent", self._place_labels)

    def label_positions(self) -> np.ndarray | None:
        """(M, 2) display positions of the part-number boxes (VTK coordinates), laid out."""
        if self.plotter is None or self.reps_points is None or not self._label_actors:
            return None
        ren = self.plotter.renderer
        anchors = []
        for p in self.reps_points:
            ren.SetWorldPoint(float(p[0]), float(p[1]), float(p[2]), 1.0)
            ren.WorldToDisplay()
            x, y, _ = ren.GetDisplayPoint()
            anchors.append((x, y))
        w, h = ren.GetSize()
        return layout_labels(np.asarray(anchors), (max(w, 1), max(h, 1)), LABEL_BOX)

    def _place_labels(self, *_args) -> None:
        pos = self.label_positions()
        if pos is None:
            return
        for a, (x, y) in zip(self._label_actors, pos, strict=False):
            a.SetDisplayPosition(int(round(x)), int(round(y)))

    # ------------------------------------------------------------------ picking
    def _install_picking(self) -> None:
        iren = self.plotter.iren
        iren.add_observer("LeftButtonPressEvent", self._on_press)
        iren.add_observer("LeftButtonReleaseEvent", self._on_release)
        for ev in ("MouseWheelForwardEvent", "MouseWheelBackwardEvent", "MiddleButtonPressEvent",
                   "RightButtonPressEvent"):
            iren.add_observer(ev, self._on_camera_event)

    def _on_camera_event(self, *_args) -> None:
        self._camera_moved = True

    def _on_press(self, obj, _event) -> None:
        self._press = tuple(self.plotter.iren.interactor.GetEventPosition())
        self._camera_moved = True

    def _on_release(self, obj, _event) -> None:
        pos = tuple(self.plotter.iren.interactor.GetEventPosition())
        start, self._press = self._press, None
        if start is None or abs(pos[0] - start[0]) + abs(pos[1] - start[1]) > 4:
            return  # a drag (rotation), not a click
        self.face_picked.emit(self.pick_at(*pos))

    def pick_at(self, x: int, y: int) -> int:
        """The face under display position (x, y) (VTK coordinates), or -1."""
        if self.plotter is None or "mesh" not in self._actors:
            return -1
        import vtkmodules.vtkRenderingCore as vtk  # not `import vtk`: that loads all of VTK

        picker = vtk.vtkCellPicker()
        picker.SetTolerance(0.0005)
        picker.PickFromListOn()
        picker.AddPickList(self._actors["mesh"])
        if not picker.Pick(x, y, 0, self.plotter.renderer):
            return -1
        return int(picker.GetCellId())

    def highlight_face(self, face: int | None) -> None:
        """Outline ``face`` in the view (None or -1 removes the outline)."""
        self.picked_face = None if face is None or face < 0 else int(face)
        if self.plotter is None:
            return
        self.plotter.remove_actor("picked", render=False)
        if self.picked_face is not None and self.faces is not None and self.picked_face < len(self.faces):
            import pyvista as pv

            tri = self.vertices[self.faces[self.picked_face]]
            loop = pv.lines_from_points(np.vstack([tri, tri[:1]]))
            self.plotter.add_mesh(loop, color=PICK_COLOR, line_width=4, name="picked", pickable=False,
                                  reset_camera=False, render_lines_as_tubes=False)
        self.plotter.render()

    # ------------------------------------------------------------------ pictures
    def render_image(self, size: tuple[int, int] | None = None) -> np.ndarray | None:
        """An RGB picture of the view: the OpenGL frame, or the software render."""
        if self.mesh is None:
            return None
        if self.plotter is not None:
            self.plotter.render()
            return np.asarray(self.plotter.screenshot(return_img=True))[..., :3]
        w, h = size or (max(self.width(), 640), max(self.height(), 480))
        markers = None
        if self.show_reps and self.reps_points is not None and len(self.reps_points):
            cols = self.reps_colors if self.reps_colors is not None else np.full((len(self.reps_points), 3), 128)
            markers = (self.reps_points, [str(j) for j in range(len(self.reps_points))], cols)
        return self.face_raster((w, h)).picture(self.mesh.cell_data["colors"], markers=markers)

    def face_raster(self, size: tuple[int, int]) -> FaceRaster:
        """The software picture's face numbers for the current mesh at ``size``: drawn once, and
        again only for a new mesh or size; a new result only recolours them (issue 20: 130 ms of
        a 17k-face mesh's live k edit on the H100 host went into drawing the triangles again)."""
        size = (int(size[0]), int(size[1]))
        r = self._raster
        if r is None or r.size != size or r.n_faces != len(self.faces):
            r = self._raster = FaceRaster(self.vertices, self.faces, size=size)
        return r

    def _update_static(self) -> None:
        if self.static is None or self.mesh is None:
            return
        if len(self.faces) > SOFTWARE_MAX_FACES:
            self.static.setText(f"<p>{len(self.faces):,} faces: too many for the static picture.</p>"
                                f"<p style='color:#a15c00'>The 3-D view is unavailable ({self.gl_reason}).</p>")
        else:
            if self.isVisible() and not self.static.isVisible():
                # the picture's page first, laid out now: the first picture is drawn at the size it
                # keeps (else the first result draws the triangles again at the label's real size)
                self._stack.setCurrentWidget(self._static_box)
                self._static_box.layout().activate()
            # the picture is drawn for the space it gets, so nothing is cut off
            w = self.static.width() if self.static.isVisible() else self.width()
            h = self.static.height() if self.static.isVisible() else self.height() - 30
            img = self.render_image((max(w, 320), max(h, 240)))
            img = np.ascontiguousarray(img)
            h, w, _ = img.shape
            qimg = QImage(img.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
            self.static.setPixmap(QPixmap.fromImage(qimg))
            self.static.setToolTip(f"Static picture: the 3-D view is unavailable ({self.gl_reason})")
        self._stack.setCurrentWidget(self._static_box)
