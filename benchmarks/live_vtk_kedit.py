"""What the mesh tab's OpenGL (VTK) view does on a live k change (issue 20): the colour scalars
are updated in place, the mesh actor stays, and the view renders once. Needs pyvista/pyvistaqt
and a display with OpenGL (e.g. ``xvfb-run`` with Mesa):

    QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1600x1000x24" python benchmarks/live_vtk_kedit.py MESH

Prints, per k change, the time of ``set_segmentation``, the renders it made, whether the actor is
the same object and the polydata holds the new colours; the time of a render alone; and, for
uniform red/green/blue segmentations, the mean colour of the rendered foreground (that the
in-place update reaches the screen).
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from PySide6.QtWidgets import QApplication

    from app.tabs.mesh_view import MeshView
    from app.tools import mesh_seg

    argv = sys.argv[1:] if argv is None else argv
    path = pathlib.Path(argv[0]) if argv else ROOT / "resources" / "samples" / "creature.ply"
    app = QApplication.instance() or QApplication([])
    m = mesh_seg.load(path)
    v, f = m.vertices, m.faces
    view = MeshView()
    view.resize(900, 760)
    view.show()
    for _ in range(30):
        app.processEvents()
        time.sleep(0.05)
    pl = view.plotter
    if pl is None:
        print(f"no OpenGL view here: {view.gl_reason}")
        return 1
    view.set_mesh(v, f)
    app.processEvents()
    actor = view._actors["mesh"]
    renders = []
    real = pl.render
    pl.render = lambda *a, **k: (renders.append(1), real(*a, **k))[1]
    rng = np.random.default_rng(0)
    print(f"{path.name}: {len(f):,} faces")
    for k in (3, 5, 7, 4, 6):
        cols = rng.integers(0, 256, (k, 3)).astype(np.uint8)[rng.integers(0, k, len(f))]
        renders.clear()
        t = time.perf_counter()
        view.set_segmentation(cols)
        dt = time.perf_counter() - t
        print(f"k {k}: set_segmentation {1000 * dt:.1f} ms, renders {len(renders)}, same actor "
              f"{view._actors['mesh'] is actor}, colours set {np.array_equal(np.asarray(view.mesh.cell_data['colors']), cols)}")
    ts = []
    for _ in range(5):
        t = time.perf_counter()
        real()
        ts.append(1000 * (time.perf_counter() - t))
    print("a render alone (ms):", [round(x, 1) for x in ts])
    for name, c in (("red", (220, 20, 20)), ("green", (20, 200, 20)), ("blue", (20, 20, 220))):
        view.set_segmentation(np.tile(np.array(c, np.uint8), (len(f), 1)))
        img = view.render_image().astype(int)
        fg = img[np.abs(img - img[5, 5]).sum(axis=2) > 60]
        print(f"uniform {name}: mean foreground colour {fg.mean(axis=0).round(0).tolist()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
