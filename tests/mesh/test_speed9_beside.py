"""Issue 22, session 9: the working mesh's thickness is measured on a thread of its own beside
the APSP and the farthest-point orders (``segment.THICKNESS_BESIDE``), where it leaves the arc
weights as they are. The prepared mesh and the segmentation are the same; the thickness runs
off the main thread and overlaps the APSP; it is not used where the thickness is in the arc
weights; every way out of ``prepare_mesh`` (an error in the APSP, a cancel, an error in the
thickness itself) has joined its thread."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from test_speed8_simplify import _sphere

from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import dualgraph, segment
from gpu_kernels.mesh import simplify as simp

NAME = "gpulab-mesh-thickness"


def _measuring() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == NAME and t.is_alive()]


@pytest.fixture
def small_working(monkeypatch):
    if not simp.available_simplifiers():
        pytest.skip("no simplifier is installed here")
    monkeypatch.setattr(segment, "WORKING_FACES", 1000)
    v, f = _sphere(30)
    assert f.shape[0] > 3 * segment.WORKING_FACES
    return v, f


def _slow_thickness(log, delay=0.3, fail=False):
    real = segment.with_thickness

    def slow(*a, **kw):
        log.append(("start", threading.current_thread().name))
        time.sleep(delay)
        if fail:
            log.append(("end", threading.current_thread().name))
            raise RuntimeError("the thickness broke")
        out = real(*a, **kw)
        log.append(("end", threading.current_thread().name))
        return out
    return slow


def test_the_thickness_beside_gives_the_same_prepared_mesh_and_segmentation(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", False)
    p0 = segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    s0 = segment.segment_prepared(p0, device="cpu")
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", True)
    p1 = segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    s1 = segment.segment_prepared(p1, device="cpu")
    g0, g1 = p0.working[0][1], p1.working[0][1]
    assert p1.info["simplified"] and g1.thickness is not None
    assert np.array_equal(g1.thickness, g0.thickness) and np.array_equal(g1.weight, g0.weight)
    assert np.array_equal(s1.labels, s0.labels) and np.array_equal(s1.face_colors, s0.face_colors)
    assert not _measuring()


def test_the_thickness_runs_off_the_main_thread_beside_the_apsp(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", True)
    log = []
    monkeypatch.setattr(segment, "with_thickness", _slow_thickness(log, delay=0.3))
    real_apsp = segment.graph_distances

    def apsp(*a, **kw):
        log.append(("apsp", threading.current_thread().name))
        return real_apsp(*a, **kw)
    monkeypatch.setattr(segment, "graph_distances", apsp)
    prep = segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert prep.working[0][1].thickness is not None
    names = [e for e in log if e[0] == "start"]
    assert names == [("start", NAME)]                       # once, on its own thread
    kinds = [e[0] for e in log]
    assert kinds.index("start") < kinds.index("apsp") < kinds.index("end")   # the APSP overlapped it
    assert not _measuring()


def test_the_default_on_the_cpu_measures_it_first_on_the_calling_thread(monkeypatch, small_working):
    v, f = small_working
    assert segment.THICKNESS_BESIDE == "gpu"
    log = []
    monkeypatch.setattr(segment, "with_thickness", _slow_thickness(log, delay=0.0))
    real_apsp = segment.graph_distances

    def apsp(*a, **kw):
        log.append(("apsp", threading.current_thread().name))
        return real_apsp(*a, **kw)
    monkeypatch.setattr(segment, "graph_distances", apsp)
    segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert [e[0] for e in log] == ["start", "end", "apsp"]
    assert log[0][1] == threading.main_thread().name


def test_not_beside_when_the_thickness_is_in_the_arc_weights(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", True)
    monkeypatch.setattr(dualgraph, "SDF_WEIGHT", 0.25)
    log = []
    monkeypatch.setattr(segment, "with_thickness", _slow_thickness(log, delay=0.0))
    prep = segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert [e[1] for e in log] == [threading.main_thread().name] * 2
    assert prep.working[0][1].thickness is not None


def test_an_error_in_the_apsp_leaves_no_thickness_running(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", True)
    log = []
    monkeypatch.setattr(segment, "with_thickness", _slow_thickness(log, delay=0.4))

    def broken(*a, **kw):
        raise RuntimeError("the APSP broke")
    monkeypatch.setattr(segment, "graph_distances", broken)
    with pytest.raises(RuntimeError, match="APSP broke"):
        segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert ("end", NAME) in log and not _measuring()


def test_a_cancel_after_the_working_graph_leaves_no_thickness_running(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", True)
    log = []
    monkeypatch.setattr(segment, "with_thickness", _slow_thickness(log, delay=0.4))
    prog = Progress()
    real_apsp = segment.graph_distances

    def apsp(*a, **kw):
        prog.cancel()
        return real_apsp(*a, **kw)
    monkeypatch.setattr(segment, "graph_distances", apsp)
    with pytest.raises(Cancelled):
        segment.prepare_mesh(v, f, max_faces="auto", device="cpu", progress=prog)
    assert ("end", NAME) in log and not _measuring()


def test_the_thickness_error_reaches_the_caller(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "THICKNESS_BESIDE", True)
    log = []
    monkeypatch.setattr(segment, "with_thickness", _slow_thickness(log, delay=0.05, fail=True))
    with pytest.raises(RuntimeError, match="thickness broke"):
        segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert not _measuring()
