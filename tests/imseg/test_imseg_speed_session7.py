"""Session 7 speed work (issue 21): the tool's staged k-means pipeline runs a full run as one
library call (its CUDA graph) through deferred stages, and a live re-run from a later stage
still runs only the later stages, with the eager pipeline's result; a replayed graph that
fails waits for its kernels before another call may replay it. Emulated CUDA and fakes here;
the same on a real GPU with ``pytest -m gpu``."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import piecewise_image
from test_imseg_session6 import (  # _same: two segmentations equal, features included
    _natural,
    _same,
    graph_runs,
)

from app.tools import imseg
from app.tools.stages import StageCache
from gpu_kernels.imseg import deferred as D
from gpu_kernels.imseg import segment as SG
from gpu_kernels.jobs import as_progress

_same_contours = functools.partial(_same, kmeans=False)  # the contours method: no colours, centres
needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _eager(data, p, be, monkeypatch):
    monkeypatch.setattr(D, "ENABLED", False)
    try:
        return imseg.run(data, p, device=be).seg
    finally:
        monkeypatch.setattr(D, "ENABLED", True)


class _Calls:
    """The library calls the tool's stages make (not the calls inside them)."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        self.depth = 0
        for name in ("segment_image", "stage_lab", "stage_codes", "stage_kmeans", "stage_regions"):
            fn = getattr(SG, name)
            monkeypatch.setattr(SG, name, self._wrap(name, fn))

    def _wrap(self, name, fn):
        def call(*a, **kw):
            if not self.depth:
                self.names.append(name)
            self.depth += 1
            try:
                return fn(*a, **kw)
            finally:
                self.depth -= 1
        return call

    def take(self) -> list[str]:
        out, self.names = self.names, []
        return out


def _live_session(be, img, monkeypatch):
    """A full run and live edits of the paper's pipeline with a stage cache: which stages ran,
    which library calls they made, and the results against the eager pipeline's."""
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    data = imseg.ImageData(None, img)
    calls = _Calls(monkeypatch)
    cache = StageCache(cap_bytes=1 << 30)
    base = {"method": "kmeans", "min_size": 16, "k_max": 32}
    p = imseg.PARAMS.validate(base)
    r1, rep1 = imseg.PIPELINE.execute(data, p, device=be, cache=cache, scope="s7")
    assert rep1.ran == ["lab", "quantise", "kmeans", "segment", "regions"]
    # the full run is one library call: no stage function ran on its own
    assert calls.take() == ["segment_image"]
    _same(r1.seg, _eager(data, p, be, monkeypatch))
    calls.take()
    # a display-only edit re-runs nothing
    _, rep = imseg.PIPELINE.execute(data, imseg.PARAMS.validate({**base, "picture_style": "mean"}), device=be,
                                    cache=cache, scope="s7")
    assert rep.ran == [] and calls.take() == []
    # a later-stage edit runs only the later stages; the earlier ones' outputs are computed
    # once, from the cache's deferred outputs
    for change, ran in (({"min_size": 40}, ["segment", "regions"]),
                        ({"min_size": 40, "k_max": 16}, ["kmeans", "segment", "regions"])):
        p2 = imseg.PARAMS.validate({**base, **change})
        r2, rep2 = imseg.PIPELINE.execute(data, p2, device=be, cache=cache, scope="s7")
        assert rep2.ran == ran, change
        assert "segment_image" not in calls.take()
        _same(r2.seg, _eager(data, p2, be, monkeypatch))
        calls.take()
    return data


@needs_emu
def test_emulated_tool_full_run_is_one_library_call_and_live_edits_stay_staged(monkeypatch):
    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(7), 30, 44, noise=6.0, shading=True)
    _live_session(be, img, monkeypatch)


@needs_emu
def test_emulated_first_full_runs_go_stage_by_stage_until_graph_after(monkeypatch):
    """GRAPH_AFTER 2: the first full run of a shape and parameter set runs the stages (no
    capture for a value tried once), the second the library call; both the eager result."""
    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(8), 28, 36, noise=4.0, shading=False)
    data = imseg.ImageData(None, img)
    p = imseg.PARAMS.validate({"method": "kmeans", "min_size": 12, "k_max": 24, "iterations": 3})
    monkeypatch.setattr(D, "GRAPH_AFTER", 2)
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    calls = _Calls(monkeypatch)
    first = imseg.run(data, p, device=be).seg
    assert "segment_image" not in calls.take()
    second = imseg.run(imseg.ImageData(None, img.copy()), p, device=be).seg
    assert calls.take() == ["segment_image"]
    _same(first, second)
    _same(first, _eager(data, p, be, monkeypatch))


def test_cpu_stages_are_not_deferred():
    """On the CPU every stage runs when it is asked (nothing to gain from a graph)."""
    from gpu_kernels.backend import get_backend

    img, _ = piecewise_image(np.random.default_rng(9), 24, 30, noise=4.0, shading=False)
    lt = D.lab(img, bilateral=0, bilateral_window=5, sigma_spatial=3.0, sigma_color=10.0, device=get_backend("cpu"))
    assert isinstance(lt, dict) and "lab" in lt


@needs_emu
def test_deferred_stages_check_their_parameters_at_once():
    """A bad parameter fails in the stage that reads it, deferred or not."""
    from gpu_kernels.imseg import ImsegInputError

    be = emu_backend()
    img = np.zeros((8, 8, 3), np.uint8)
    lt = D.lab(img, bilateral=0, bilateral_window=5, sigma_spatial=3.0, sigma_color=10.0, device=be)
    assert isinstance(lt, D.Deferred)
    with pytest.raises(ImsegInputError):
        D.lab(img, bilateral=1, bilateral_window=4, sigma_spatial=3.0, sigma_color=10.0, device=be)
    with pytest.raises(ImsegInputError):
        D.lab(np.zeros((8, 8, 2), np.uint8), bilateral=0, bilateral_window=5, sigma_spatial=3.0, sigma_color=10.0,
              device=be)
    with pytest.raises(ImsegInputError):
        D.codes(lt, q=99, device=be)
    qt = D.codes(lt, q=5, device=be)
    with pytest.raises(ImsegInputError):
        D.kmeans(qt, k_max=0, iterations=3, merge_distance=10.0, device=be)


# ----------------------------------------------------------------------------- the graph lock
class _FakeGpu:
    """A backend that says it is a GPU (not CuPy: no device activation) and records waits."""

    is_gpu = True
    xp = np
    label = "fake-gpu"

    def __init__(self, events=None):
        self.events = events if events is not None else []

    def synchronize(self):
        self.events.append("synchronize")


class _Lock:
    def __init__(self, events):
        self.events, self._lock = events, threading.Lock()

    def __enter__(self):
        self._lock.acquire()
        self.events.append("acquire")

    def __exit__(self, *exc):
        self.events.append("release")
        self._lock.release()


@pytest.mark.parametrize("error", [RuntimeError("download failed"), KeyboardInterrupt()])
def test_replay_error_waits_for_the_kernels_before_releasing_the_graph(error):
    """An error after the graph was launched (a failed download, a cancel) must not let the
    next call replay the graph while its kernels may still write into its memory: the stream
    is synchronised before the lock is released, and the error still reaches the caller."""
    events: list[str] = []

    class Graph:
        h, w, c = 4, 4, 3
        lock = _Lock(events)
        feats = None
        state: dict = {}

        def launch(self, be, img):
            events.append("launch")
            raise error

    with pytest.raises(type(error)):
        SG._segment_graph(_FakeGpu(events), Graph(), np.zeros((4, 4, 3), np.uint8), True, True, "runs",
                          as_progress(None), {})
    assert events == ["acquire", "launch", "synchronize", "release"]


# ----------------------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@pytest.mark.parametrize("graph_after", [1, 2])
def test_gpu_tool_full_run_replays_the_graph_and_live_edits_stay_staged(graph_after, monkeypatch):
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import graphs as G

    be = get_backend("cuda")
    img = _natural(256, 320)
    _live_session(be, img, monkeypatch)
    # the tool's run (CLI, batch): replays the library's graph from the graph_after-th run on
    monkeypatch.setattr(D, "GRAPH_AFTER", graph_after)
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    data = imseg.ImageData(None, _natural(512, 512))
    p = imseg.PARAMS.validate({"method": "kmeans"})
    ref = _eager(data, p, be, monkeypatch)
    before = G.stats()["replays"]
    runs = [imseg.run(imseg.ImageData(None, data.image.copy()), p, device=be).seg for _ in range(graph_after + 2)]
    for r in runs:
        _same(r, ref)
    assert G.stats()["replays"] >= before + 1
    assert runs[-1].info.get("graph")


def test_contour_replay_error_waits_for_the_kernels_before_releasing_the_graph():
    """The contours method's replayed graph, as the k-means one: synchronise, then release."""
    from gpu_kernels.imseg import contours as CT

    events: list[str] = []

    class Graph:
        lock = _Lock(events)

        def launch(self, be, img):
            events.append("launch")
            raise RuntimeError("launch failed")

    img = np.zeros((4, 4, 3), np.uint8)
    with pytest.raises(RuntimeError, match="launch failed"):
        CT._segment_replay(_FakeGpu(events), Graph(), img, img, 3, {"sigma": 1.0, "n_superpixels": 4,
                                                                    "compactness": 10.0},
                           3.3, 0, True, True, "runs", as_progress(None))
    assert events == ["acquire", "launch", "synchronize", "release"]


@pytest.mark.gpu
@pytest.mark.parametrize("kind, kw", [("rgb", {}), ("rgb", {"n_segments": 12}), ("grey", {"sigma": 1.5}),
                                      ("rgba", {"n_superpixels": 300, "compactness": 5.0}), ("float", {}),
                                      ("rgb", {"features": False}), ("uint16", {"coarseness": 2.5})])
def test_gpu_contour_graph_replay_equals_the_ordinary_path(kind, kw):
    """The contours method's first stages replayed from their CUDA graph give exactly the
    ordinary path's result (this image and another of the same shape), and the CPU's labels."""
    from gpu_kernels.imseg import segment_contours

    img = _natural(240, 320)
    if kind == "grey":
        img = img[..., 1].copy()
    elif kind == "rgba":
        img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    elif kind == "float":
        img = img.astype(np.float32) / 255.0
    elif kind == "uint16":
        img = img.astype(np.uint16) * 257
    other = np.ascontiguousarray(img[::-1, ::-1])
    ref, ref_other, first, again, swapped = graph_runs(segment_contours, "CONTOURS", img, other, **kw)
    for a, b in ((first, ref), (again, ref), (swapped, ref_other)):
        _same_contours(a, b)
        assert a.syncs == b.syncs
    if kind == "rgb":
        cpu = segment_contours(img, device="cpu", **kw)
        np.testing.assert_array_equal(again.labels, cpu.labels)


def _contour_session(be, img, monkeypatch):
    """The contours method (the default) in the window's way: a full run is one
    segment_contours call; a coarseness edit runs only the merge and regions stages, with
    the stage functions; both give the eager pipeline's result."""
    from gpu_kernels.imseg import contours as CT

    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    names: list[str] = []
    depth = [0]
    for name in ("segment_contours", "stage_colour", "stage_superpixels", "stage_merge", "stage_finish"):
        fn = getattr(CT, name)

        def call(*a, _fn=fn, _name=name, **kw):
            if not depth[0]:
                names.append(_name)
            depth[0] += 1
            try:
                return _fn(*a, **kw)
            finally:
                depth[0] -= 1
        monkeypatch.setattr(CT, name, call)
    data = imseg.ImageData(None, img)
    cache = StageCache(cap_bytes=1 << 30)
    base = {"n_superpixels": 60}
    r1, rep1 = imseg.PIPELINE.execute(data, imseg.PARAMS.validate(base), device=be, cache=cache, scope="c7")
    assert rep1.ran == ["colour", "superpixels", "merge", "regions"]
    assert names == ["segment_contours"]
    _same_contours(r1.seg, _eager(data, imseg.PARAMS.validate(base), be, monkeypatch))
    names.clear()
    for change in ({"coarseness": 2.0}, {"n_segments": 5}):
        p2 = imseg.PARAMS.validate({**base, **change})
        r2, rep2 = imseg.PIPELINE.execute(data, p2, device=be, cache=cache, scope="c7")
        assert rep2.ran == ["merge", "regions"], change
        assert "segment_contours" not in names and "stage_merge" in names
        _same_contours(r2.seg, _eager(data, p2, be, monkeypatch))
        names.clear()


@needs_emu
def test_emulated_tool_contours_full_run_is_one_library_call_and_live_edits_stay_staged(monkeypatch):
    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(11), 40, 52, noise=5.0, shading=True)
    _contour_session(be, img, monkeypatch)


@pytest.mark.gpu
def test_gpu_tool_contours_full_run_replays_the_graph_and_live_edits_stay_staged(monkeypatch):
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import graphs as G

    be = get_backend("cuda")
    _contour_session(be, _natural(240, 320), monkeypatch)
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    data = imseg.ImageData(None, _natural(512, 512))
    ref = _eager(data, imseg.PARAMS.validate({}), be, monkeypatch)
    r0 = G.stats()["replays"]
    runs = [imseg.run(imseg.ImageData(None, data.image.copy()), {}, device=be).seg for _ in range(4)]
    for r in runs:
        _same_contours(r, ref)
    assert G.stats()["replays"] >= r0 + 1 and runs[-1].info.get("graph")


@needs_emu
@pytest.mark.parametrize("method, waits", [("kmeans", 2), ("contours", 2)])
def test_deferred_stages_do_not_wait_for_the_device(method, waits, monkeypatch):
    """The deferred stages queue nothing, so the pipeline does not synchronise after them: a
    full run waits for the device after the library call's stage and the last one only. (The
    tool's ``run`` makes the library call itself since session 8, which waits for its own
    download: no pipeline wait at all, test_imseg_speed_session8.)"""
    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    calls = []
    monkeypatch.setattr(type(be), "synchronize", lambda self: calls.append(1))
    img, _ = piecewise_image(np.random.default_rng(12), 24, 32, noise=4.0, shading=False)
    imseg.PIPELINE.execute(imseg.ImageData(None, img), imseg.PARAMS.validate({"method": method}), device=be)
    assert len(calls) == waits
