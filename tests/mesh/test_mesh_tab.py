"""The Mesh segmentation tab: load a sample, segment it on the CPU through the worker,
coloured faces, legend, memberships of a picked face, toggles, exports, settings, the
too-large proposal and Cancel. Runs under Xvfb (3-D view) and offscreen (static view)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from PySide6.QtCore import QSettings  # noqa: E402

from app.commands import mesh_seg  # noqa: E402
from app.errors import UserError  # noqa: E402
from app.io.mesh_io import MeshIOError, read_face_colors, read_mesh, read_seg  # noqa: E402
from app.tabs.mesh_tab import MeshTab  # noqa: E402
from app.tabs.mesh_view import NEUTRAL  # noqa: E402

pytestmark = pytest.mark.gui

SAMPLES = Path(__file__).resolve().parents[1] / "resources" / "samples"


@pytest.fixture
def tab(qtbot):
    t = MeshTab()
    qtbot.addWidget(t)
    t.resize(1200, 760)
    t.show()
    qtbot.waitExposed(t)
    t.apsp_combo.setCurrentIndex(t.apsp_combo.findText("cpu"))  # one process: fastest on small meshes
    yield t
    t.runner.shutdown(10000)
    t.view.close_view()


def segment(qtbot, t: MeshTab, timeout=60000):
    assert t.run_segmentation(device="cpu")
    qtbot.waitUntil(lambda: not t.runner.is_running(), timeout=timeout)
    assert t.result is not None
    return t.result.seg


@pytest.fixture(scope="module")
def dumbbell_result():
    """The dumbbell segmented once (on the CPU) for the tests that look at a result."""
    v, f = read_mesh(SAMPLES / "dumbbell.ply")
    return mesh_seg.segment(v, f, apsp="cpu", device="cpu")


@pytest.fixture
def segmented(qtbot, tab, dumbbell_result, monkeypatch):
    """A tab showing the dumbbell's segmentation; the job still runs through the worker."""
    monkeypatch.setattr(mesh_seg, "segment", lambda *a, **k: dumbbell_result)
    tab.open_file(SAMPLES / "dumbbell.ply")
    segment(qtbot, tab)
    return tab


def test_samples_are_offered(tab):
    names = [Path(p).stem for p in tab.samples()]
    assert names[0] == "dumbbell" and {"creature", "table"} <= set(names)
    assert tab.sample_combo.count() == len(names) + 1
    assert tab.handles("x.PLY") and tab.handles("y.off") and not tab.handles("z.png")


def test_load_run_and_the_faces_are_coloured(qtbot, tab):
    tab.open_file(SAMPLES / "dumbbell.ply")
    v, f = read_mesh(SAMPLES / "dumbbell.ply")
    assert tab.view.mesh.n_cells == len(f)
    assert (np.asarray(tab.view.mesh.cell_data["colors"]) == NEUTRAL).all()
    assert "3,000 faces" in tab.mesh_info.text()
    assert tab.run_button.isEnabled() and not tab.can_save()

    progress = []
    tab.runner.progress.connect(lambda fr, st: progress.append((fr, st)))
    with qtbot.waitSignal(tab.result_shown, timeout=60000):
        assert tab.run_segmentation(device="cpu")
        assert tab.runner.is_running() and not tab.run_button.isEnabled() and tab.cancel_button.isEnabled()
    seg = tab.result.seg
    # per-stage progress reached the runner (and so the status bar)
    stages = " ".join(s for _, s in progress)
    assert "dual graph" in stages and "APSP" in stages
    # the faces carry the segmentation's colours, and more than one
    shown = np.asarray(tab.view.mesh.cell_data["colors"])
    np.testing.assert_array_equal(shown, seg.face_colors)
    assert len(np.unique(shown, axis=0)) >= seg.k >= 2
    assert not (shown == NEUTRAL).all(axis=1).all()
    # the dumbbell's two boxes end up in different parts
    x = v[f].mean(axis=1)[:, 0]
    left = np.bincount(seg.labels[x < -0.6]).argmax()
    right = np.bincount(seg.labels[x > 0.6]).argmax()
    assert left != right
    # legend: one row per part, face counts add up
    assert tab.legend.rowCount() == seg.k
    counts = [int(tab.legend.item(r, 1).text().replace(",", "")) for r in range(seg.k)]
    assert sum(counts) == len(f)
    assert f"{seg.k} parts" in tab.summary_label.text()
    assert tab.can_save() and tab.export_segments_button.isEnabled() and not tab.cancel_button.isEnabled()


def test_picking_a_face_shows_its_memberships(segmented):
    tab = segmented
    seg = tab.result.seg
    face = int(seg.representatives[0])
    tab.show_face(face)
    np.testing.assert_allclose(tab.bars.values, seg.memberships[face])
    assert tab.bars.label == int(seg.labels[face])
    assert tab.bars.order()[0] == int(np.argmax(seg.memberships[face]))
    text = tab.face_label.text()
    assert f"Face {face:,}" in text and f"part {int(seg.labels[face])}" in text
    assert tab.view.picked_face == face
    # the background / an invalid id clears the panel
    tab.show_face(-1)
    assert tab.bars.values is None and tab.view.picked_face is None
    # a legend row selects its part's representative
    tab.legend.selectRow(seg.k - 1)
    assert tab.view.picked_face == int(seg.representatives[seg.k - 1])


def test_clicking_in_the_3d_view_picks_a_face(qtbot, segmented):
    tab = segmented
    if not tab.view.available:
        pytest.skip(f"no OpenGL here: {tab.view.gl_reason}")
    w, h = tab.view.plotter.window_size
    face = tab.view.pick_at(w // 2, h // 2)
    assert 0 <= face < len(tab.faces)
    assert tab.view.pick_at(2, 2) == -1  # background corner
    with qtbot.waitSignal(tab.view.face_picked) as sig:
        tab.view.face_picked.emit(face)
    assert sig.args == [face] and tab.bars.values is not None


def test_toggles(segmented):
    tab = segmented
    seg = tab.result.seg
    colors = lambda: np.asarray(tab.view.mesh.cell_data["colors"])  # noqa: E731
    tab.fuzzy_check.setChecked(True)
    fuzzy = np.asarray(seg.fuzzy, bool)
    if fuzzy.any():
        assert (colors()[fuzzy] != seg.face_colors[fuzzy]).any(axis=1).all()
    np.testing.assert_array_equal(colors()[~fuzzy], seg.face_colors[~fuzzy])
    tab.fuzzy_check.setChecked(False)
    np.testing.assert_array_equal(colors(), seg.face_colors)
    tab.edges_check.setChecked(True)
    assert tab.view.show_edges
    tab.reset_view_button.click()
    tab.reps_check.setChecked(False)
    tab.reps_check.setChecked(True)
    if tab.view.available:
        assert "reps" in tab.view._actors
        assert tab.view._actors["mesh"].GetProperty().GetEdgeVisibility()
        img = tab.view.render_image()
        assert img is not None and img.std() > 5
    else:
        assert tab.view.static.pixmap() is not None and not tab.view.static.pixmap().isNull()


def test_exports(tmp_path, segmented):
    tab = segmented
    seg = tab.result.seg
    nf = len(tab.faces)
    tab.save_result(tmp_path / "parts.ply")
    np.testing.assert_array_equal(read_face_colors(tmp_path / "parts.ply"), seg.face_colors)
    tab.save_result(tmp_path / "parts.seg")
    np.testing.assert_array_equal(read_seg(tmp_path / "parts.seg", n_faces=nf), seg.labels)
    files = tab.export_segments(tmp_path / "segs", "obj")
    assert len(files) == seg.k and all(p.suffix == ".obj" for p in files)
    assert sum(len(read_mesh(p)[1]) for p in files) == nf
    with pytest.raises(UserError, match="cannot save .txt"):
        tab.save_result(tmp_path / "parts.txt")
    tab.export_screenshot(tmp_path / "view.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["parts.ply", "parts.seg", "segs", "view.png"]
    assert "*.ply" in tab.result_filters() and "*.seg" in tab.result_filters()


def test_a_bad_file_keeps_the_current_mesh(tmp_path, tab):
    tab.open_file(SAMPLES / "table.ply")
    (tmp_path / "cloud.ply").write_text("ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\n"
                                        "property float y\nproperty float z\nend_header\n0 0 0\n")
    with pytest.raises(MeshIOError, match="point cloud"):
        tab.open_file(tmp_path / "cloud.ply")
    assert tab.mesh_path.name == "table.ply" and tab.view.mesh.n_cells == len(tab.faces)


def test_parameters_persist(tab, tmp_path, qtbot):
    tab.k_spin.setValue(4)
    tab.delta_auto.setChecked(False)
    tab.delta_spin.setValue(0.35)
    tab.eta_auto.setChecked(True)
    tab.eps_spin.setValue(0.07)
    tab.apsp_combo.setCurrentIndex(tab.apsp_combo.findText("cpu-mt"))
    tab.iter_spin.setValue(9)
    tab.maxfaces_spin.setValue(5000)
    tab.edges_check.setChecked(True)
    params = tab.params()
    assert params == {"k": 4, "delta": 0.35, "eta_convex": None, "epsilon": 0.07, "apsp": "cpu-mt",
                      "max_iter": 9, "max_faces": 5000}
    s = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    s.beginGroup("tabs/mesh")
    tab.save_settings(s)
    s.endGroup()
    s.sync()

    other = MeshTab(allow_3d=False)
    qtbot.addWidget(other)
    s2 = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    s2.beginGroup("tabs/mesh")
    other.restore_settings(s2)
    assert other.params() == params
    assert other.edges_check.isChecked()
    assert other.delta_spin.isEnabled() and not other.eta_spin.isEnabled()  # "auto" greys its spin box


def test_too_large_proposes_simplification(qtbot, tab, monkeypatch, dumbbell_result):
    from gpu_kernels.mesh.segment import MeshTooLargeError

    calls = []

    def fake(vertices, faces, **kw):
        calls.append(kw.get("max_faces"))
        if kw.get("max_faces") is None:
            raise MeshTooLargeError(len(faces), 1500, "cpu")
        return dumbbell_result

    monkeypatch.setattr(mesh_seg, "segment", fake)
    asked = []
    monkeypatch.setattr(tab, "ask_simplify", lambda msg: asked.append(msg) or True)
    tab.open_file(SAMPLES / "dumbbell.ply")
    tab.run_segmentation(device="cpu")
    qtbot.waitUntil(lambda: tab.result is not None, timeout=60000)
    assert len(asked) == 1 and "3,000 faces" in asked[0] and "1,400 faces" in asked[0]
    assert calls == [None, 1400] and tab.maxfaces_spin.value() == 1400
    assert tab.result.params["max_faces"] == 1400
    assert tab.legend.rowCount() == tab.result.seg.k


@pytest.mark.parametrize("choice", ["cancel", "simplify", "run"])
def test_large_mesh_on_the_cpu_offers_to_simplify_first(qtbot, tab, monkeypatch, dumbbell_result, choice):
    import app.tabs.mesh_tab as mt

    seen = []
    monkeypatch.setattr(mt, "CPU_COMFORT_FACES", 1000)
    monkeypatch.setattr(mesh_seg, "segment", lambda *a, **k: seen.append(k["max_faces"]) or dumbbell_result)
    monkeypatch.setattr(tab, "ask_slow_cpu_run", lambda n: seen.append(n) or choice)
    tab.open_file(SAMPLES / "dumbbell.ply")
    started = tab.run_segmentation(device="cpu")
    assert started == (choice != "cancel")
    qtbot.waitUntil(lambda: not tab.runner.is_running(), timeout=20000)
    expected = {"cancel": [3000], "simplify": [3000, 1000], "run": [3000, None]}[choice]
    assert seen == expected
    assert (tab.result is not None) == started


def test_cancel_keeps_the_window_usable_and_writes_nothing(qtbot, tab, tmp_path, monkeypatch):
    import threading

    gate = threading.Event()

    def slow(vertices, faces, *, progress=None, **kw):
        progress.update(0.1, "APSP")
        gate.wait(5)
        for i in range(200):
            progress.update(0.1 + i / 250, "APSP")
            threading.Event().wait(0.01)
        raise AssertionError("not cancelled")

    monkeypatch.setattr(mesh_seg, "segment", slow)
    tab.open_file(SAMPLES / "dumbbell.ply")
    with qtbot.waitSignal(tab.runner.cancelled, timeout=10000):
        tab.run_segmentation(device="cpu")
        tab.cancel_button.click()
        gate.set()
    assert tab.result is None and not tab.can_save() and tab.run_button.isEnabled()
    assert list(tmp_path.iterdir()) == []


def test_gpu_apsp_without_a_gpu_says_so(tab, monkeypatch):
    from gpu_kernels import backend

    if backend.cupy_available():
        pytest.skip("this machine has a CUDA device")
    errors = []
    monkeypatch.setattr(tab, "_error", lambda title, msg: errors.append(msg))
    tab.open_file(SAMPLES / "dumbbell.ply")
    tab.apsp_combo.setCurrentIndex(tab.apsp_combo.findText("gpu-sym"))
    assert not tab.run_segmentation(device="cpu")
    assert len(errors) == 1 and "CUDA GPU" in errors[0] and not tab.runner.is_running()


def test_without_opengl_the_tab_still_works(qtbot, tmp_path):
    t = MeshTab(allow_3d=False)
    qtbot.addWidget(t)
    t.show()
    assert not t.view.available and "unavailable" in t.view.placeholder.text()
    t.apsp_combo.setCurrentIndex(t.apsp_combo.findText("cpu"))
    t.open_file(SAMPLES / "dumbbell.ply")
    t.maxfaces_spin.setValue(800)
    seg = segment(qtbot, t)
    np.testing.assert_array_equal(np.asarray(t.view.mesh.cell_data["colors"]), seg.face_colors)
    assert not t.view.static.pixmap().isNull()
    t.export_screenshot(tmp_path / "v.png")
    assert (tmp_path / "v.png").stat().st_size > 1000


def test_main_window_routes_meshes_to_the_tab(qtbot, monkeypatch):
    from app.gui.main_window import MainWindow

    errors = []
    w = MainWindow()
    qtbot.addWidget(w)
    monkeypatch.setattr(w, "show_error", lambda *a: errors.append(a))
    tab = w.tabs[0]
    assert isinstance(tab, MeshTab)
    assert w.tab_for_path("bunny.off") is tab and w.tab_for_path("x.stl") is tab
    assert w.open_path(SAMPLES / "creature.ply") and tab.mesh_path.name == "creature.ply"
    assert errors == []
    w.close()
