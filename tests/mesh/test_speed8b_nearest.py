"""Issue 22, session 8b: the full faces' nearest working face is searched on a thread of its own
as soon as the working dual graph exists (``segment.NEAREST_EARLY``), beside the thickness and the
APSP, instead of after them. The mapping and the segmentation are the same; the search starts
before the working mesh's thickness; every way out of ``prepare_mesh`` (an error in the thickness,
a cancel, an error in the search itself) has joined the search's thread."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from test_speed8_simplify import _sphere

from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import segment
from gpu_kernels.mesh import simplify as simp


def _searching() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "gpulab-mesh-nearest" and t.is_alive()]


@pytest.fixture
def small_working(monkeypatch):
    if not simp.available_simplifiers():
        pytest.skip("no simplifier is installed here")
    monkeypatch.setattr(segment, "WORKING_FACES", 1000)
    v, f = _sphere(30)
    assert f.shape[0] > 3 * segment.WORKING_FACES
    return v, f


def _slow_search(log, delay=0.3, fail=False):
    real = segment.kd_nearest

    def slow(*a, **kw):
        if threading.current_thread().name == "gpulab-mesh-nearest":
            log.append("start")
            time.sleep(delay)
            if fail:
                log.append("end")
                raise RuntimeError("the search broke")
            out = real(*a, **kw)
            log.append("end")
            return out
        return real(*a, **kw)
    return slow


def test_the_early_search_gives_the_same_mapping_and_segmentation(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "NEAREST_EARLY", False)
    p0 = segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    s0 = segment.segment_prepared(p0, device="cpu")
    monkeypatch.setattr(segment, "NEAREST_EARLY", True)
    p1 = segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    s1 = segment.segment_prepared(p1, device="cpu")
    assert p1.info["simplified"] and len(p1.nearest) == len(p0.nearest) == 1
    assert p1.nearest[0].dtype == np.int64 and np.array_equal(p1.nearest[0], p0.nearest[0])
    assert np.array_equal(s1.labels, s0.labels) and np.array_equal(s1.face_colors, s0.face_colors)
    assert not _searching()


def test_the_search_starts_before_the_working_thickness_off_the_main_thread(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "NEAREST_EARLY", True)
    events = []
    real_kd, real_th = segment.kd_nearest, segment.with_thickness

    def kd(*a, **kw):
        events.append(("search", threading.current_thread().name))
        return real_kd(*a, **kw)

    def th(*a, **kw):
        time.sleep(0.2)   # a search started before has begun by now (none started: none seen)
        events.append(("thickness", threading.current_thread().name))
        return real_th(*a, **kw)

    monkeypatch.setattr(segment, "kd_nearest", kd)
    monkeypatch.setattr(segment, "with_thickness", th)
    segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert events[0] == ("search", "gpulab-mesh-nearest")
    assert ("thickness", threading.main_thread().name) in events
    assert [e for e in events if e[0] == "search"] == [("search", "gpulab-mesh-nearest")]   # once


def test_off_the_search_runs_after_the_apsp_on_the_calling_thread(monkeypatch, small_working):
    """NEAREST_EARLY = "gpu" (the default) on the CPU backend: the path of before."""
    v, f = small_working
    assert segment.NEAREST_EARLY == "gpu"
    names = []
    real_kd = segment.kd_nearest
    monkeypatch.setattr(segment, "kd_nearest", lambda *a, **kw: names.append(threading.current_thread().name)
                        or real_kd(*a, **kw))
    segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert names == [threading.main_thread().name]


@pytest.mark.parametrize("where", ["error in the thickness", "cancel after the working graph", "error in the APSP"])
def test_every_way_out_joins_the_search(monkeypatch, small_working, where):
    v, f = small_working
    monkeypatch.setattr(segment, "NEAREST_EARLY", True)
    log = []
    monkeypatch.setattr(segment, "kd_nearest", _slow_search(log))
    stop = Progress()
    if where.startswith("error in the thickness"):
        monkeypatch.setattr(segment, "with_thickness",
                            lambda *a, **kw: (_ for _ in ()).throw(MemoryError("no room for the thickness")))
        expect = MemoryError
    elif where.startswith("cancel"):
        real_th = segment.with_thickness

        def th(*a, **kw):
            out = real_th(*a, **kw)
            stop.cancel()   # seen at the next progress update (the APSP's)
            return out
        monkeypatch.setattr(segment, "with_thickness", th)
        expect = Cancelled
    else:
        monkeypatch.setattr(segment, "graph_distances",
                            lambda *a, **kw: (_ for _ in ()).throw(MemoryError("no room for the APSP")))
        expect = MemoryError
    with pytest.raises(expect):
        segment.prepare_mesh(v, f, max_faces="auto", device="cpu", progress=stop)
    assert log == ["start", "end"]   # the search ended before the call did
    assert not _searching()


def test_an_error_in_the_search_reaches_the_caller(monkeypatch, small_working):
    v, f = small_working
    monkeypatch.setattr(segment, "NEAREST_EARLY", True)
    log = []
    monkeypatch.setattr(segment, "kd_nearest", _slow_search(log, delay=0.05, fail=True))
    with pytest.raises(RuntimeError, match="the search broke"):
        segment.prepare_mesh(v, f, max_faces="auto", device="cpu")
    assert log == ["start", "end"] and not _searching()
