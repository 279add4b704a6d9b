"""Session 8 speed work (issue 21): the tool's ``run`` (the CLI, batch, the demo) makes a GPU
full run that the deferred stages would turn into one library call as that call itself
(``deferred.full_run``), without the five stage calls and the pipeline around it; the result,
the errors, the first-run rule (``GRAPH_AFTER``) and the window's staged runs are unchanged.
Emulated CUDA here; the same on a real GPU with ``pytest -m gpu``."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import piecewise_image
from test_imseg_session6 import _natural, _same

from app.tools import imseg
from gpu_kernels.imseg import contours as CT
from gpu_kernels.imseg import deferred as D
from gpu_kernels.imseg import segment as SG
from gpu_kernels.jobs import Cancelled, Progress

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")
METHODS = ("kmeans", "contours")
_PARAMS = {"kmeans": {"method": "kmeans", "min_size": 12, "k_max": 24, "iterations": 3},
           "contours": {"method": "contours", "n_superpixels": 60}}


def _compare(method):
    return functools.partial(_same, kmeans=method == "kmeans")


class _Record:
    """What a run did: the library calls it made (outermost only), the tool stages it called
    (``deferred``'s stage functions) and the pipeline's waits for the device."""

    LIBRARY = ((SG, "segment_image"), (CT, "segment_contours"))
    STAGES = ("lab", "codes", "kmeans", "regions", "colour", "superpixels", "merge", "finish")

    def __init__(self, monkeypatch, be):
        self.library: list[str] = []
        self.stages: list[str] = []
        self.waits = 0
        self.depth = {"library": 0, "stages": 0}
        for mod, name in self.LIBRARY:
            monkeypatch.setattr(mod, name, self._wrap(getattr(mod, name), name, "library"))
        for name in self.STAGES:
            monkeypatch.setattr(D, name, self._wrap(getattr(D, name), name, "stages"))

        def wait(_self):
            self.waits += 1
        monkeypatch.setattr(type(be), "synchronize", wait)

    def _wrap(self, fn, name, kind):
        def call(*a, **kw):
            if not self.depth[kind]:
                getattr(self, kind).append(name)
            self.depth[kind] += 1
            try:
                return fn(*a, **kw)
            finally:
                self.depth[kind] -= 1
        return call

    def take(self):
        out = (self.library, self.stages, self.waits)
        self.library, self.stages, self.waits = [], [], 0
        return out


def _pipeline_run(data, p, be, monkeypatch):
    """The tool's run through its stages (the code before session 8)."""
    monkeypatch.setattr(imseg, "DIRECT_RUN", False)
    try:
        return imseg.run(data, p, device=be)
    finally:
        monkeypatch.setattr(imseg, "DIRECT_RUN", True)


@needs_emu
@pytest.mark.parametrize("method", METHODS)
def test_emulated_run_is_the_library_call_itself_from_graph_after(method, monkeypatch):
    """GRAPH_AFTER 2: the first full run of a shape and parameter set goes stage by stage (and is
    counted once), the second is the one library call with no stage call and no pipeline wait;
    all give the stages' result. Fails on the session-7 code (the run went through the five
    stages and waited twice) and where the first run were counted twice (a capture on it)."""
    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 2)
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    img, _ = piecewise_image(np.random.default_rng(21), 28, 36, noise=4.0, shading=True)
    p = _PARAMS[method]
    rec = _Record(monkeypatch, be)
    lib = "segment_image" if method == "kmeans" else "segment_contours"
    first = imseg.run(imseg.ImageData(None, img), p, device=be)
    library, stages, _ = rec.take()
    assert lib not in library and stages[0] in ("lab", "colour"), (library, stages)   # stage by stage
    d0 = D.stats()["direct"]
    second = imseg.run(imseg.ImageData(None, img.copy()), p, device=be)
    assert rec.take() == ([lib], [], 0)
    assert D.stats()["direct"] == d0 + 1
    assert second.params == imseg.PARAMS.validate(p) and second.device == be.label and second.elapsed > 0
    ref = _pipeline_run(imseg.ImageData(None, img.copy()), p, be, monkeypatch)
    library, stages, waits = rec.take()
    assert library == [lib] and stages and waits == 2   # the pipeline's way: stages, two waits
    _compare(method)(first.seg, ref.seg)
    _compare(method)(second.seg, ref.seg)


@needs_emu
@pytest.mark.parametrize("change, image", [
    ({"method": "kmeans", "bilateral": 2, "bilateral_window": 4}, None),
    ({"method": "kmeans"}, np.zeros((8, 8, 2), np.uint8)),
    ({"method": "contours"}, np.full((8, 8, 3), 2.0, np.float32)),
    ({"method": "contours"}, np.full((8, 8), np.nan, np.float64)),
    ({"method": "kmeans"}, np.zeros((0, 8, 3), np.uint8)),
])
def test_emulated_run_bad_input_gets_the_stages_error(change, image, monkeypatch):
    """A bad image or parameter fails as it did through the stages: the same error and message
    (full_run leaves every bad input to the stages)."""
    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    img = image if image is not None else np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(Exception) as direct:
        imseg.run(imseg.ImageData(None, img), change, device=be)
    with pytest.raises(Exception) as staged:
        _pipeline_run(imseg.ImageData(None, img), change, be, monkeypatch)
    assert type(direct.value) is type(staged.value) and str(direct.value) == str(staged.value)
    assert "\n" not in str(direct.value)


@needs_emu
def test_emulated_full_run_leaves_a_value_the_library_refuses_to_the_stages(monkeypatch):
    """An even bilateral window passes the tool's parameter validation but not the library's
    checks: full_run hands the run back (None), so the lab stage raises it, as before."""
    from gpu_kernels.imseg import ImsegInputError

    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    p = imseg.PIPELINE.effective(imseg.PARAMS.validate({"method": "kmeans", "bilateral": 2, "bilateral_window": 4}))
    img = np.zeros((8, 8, 3), np.uint8)
    d0 = D.stats()["direct"]
    assert D.full_run(img, p, device=be) is None and D.stats()["direct"] == d0
    with pytest.raises(ImsegInputError, match="bilateral window"):
        imseg.run(imseg.ImageData(None, img), p, device=be)


@needs_emu
@pytest.mark.parametrize("method", METHODS)
def test_emulated_run_reports_progress_and_hears_cancel(method, monkeypatch):
    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    img, _ = piecewise_image(np.random.default_rng(22), 24, 32, noise=4.0, shading=False)
    seen = []
    d0 = D.stats()["direct"]
    imseg.run(imseg.ImageData(None, img), _PARAMS[method], device=be,
              progress=Progress(lambda f, s: seen.append((f, s)), min_interval=0))
    assert D.stats()["direct"] == d0 + 1 and seen and seen[-1][0] == 1.0
    stop = Progress()
    stop.cancel()
    with pytest.raises(Cancelled):
        imseg.run(imseg.ImageData(None, img), _PARAMS[method], device=be, progress=stop)


@pytest.mark.parametrize("method", METHODS)
def test_cpu_run_goes_through_the_stages(method):
    """On the CPU nothing changes: the stages run (no deferral, no direct call)."""
    from gpu_kernels.backend import get_backend

    img, _ = piecewise_image(np.random.default_rng(23), 24, 30, noise=4.0, shading=False)
    d0 = D.stats()["direct"]
    assert D.full_run(img, imseg.PIPELINE.effective(imseg.PARAMS.validate(_PARAMS[method])), device="cpu") is None
    res = imseg.run(imseg.ImageData(None, img), _PARAMS[method], device=get_backend("cpu"))
    assert D.stats()["direct"] == d0 and res.seg.n_regions >= 1


@pytest.mark.gpu
@pytest.mark.parametrize("method", METHODS)
def test_gpu_run_is_the_library_call_with_the_stages_result(method, monkeypatch):
    """512^2 on the GPU, the tool's defaults of each method: the run replays the library's
    graph with no pipeline wait, and its labels, clusters and every feature equal the staged
    run's (DIRECT_RUN off), the library call's and, for a device image (not taken directly),
    the same again."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import graphs as G
    from gpu_kernels.imseg.api import segment

    be = get_backend("cuda")
    img = _natural(512, 512)
    p = {"method": method}
    staged = _pipeline_run(imseg.ImageData(None, img), p, be, monkeypatch).seg
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    rec = _Record(monkeypatch, be)
    first = imseg.run(imseg.ImageData(None, img.copy()), p, device=be).seg
    assert rec.take()[1][:1] in (["lab"], ["colour"])   # the first run of the set: stage by stage
    runs = [imseg.run(imseg.ImageData(None, img.copy()), p, device=be).seg for _ in range(2)]
    r0, d0 = G.stats()["replays"], D.stats()["direct"]
    again = imseg.run(imseg.ImageData(None, img.copy()), p, device=be).seg
    lib = "segment_image" if method == "kmeans" else "segment_contours"
    assert rec.take() == ([lib] * 3, [], 0)   # no stage call, no pipeline wait
    assert G.stats()["replays"] == r0 + 1 and D.stats()["direct"] == d0 + 1 and again.info.get("graph")
    ref = segment(img, method=method, device=be)
    dev = imseg.run(imseg.ImageData(None, cp.asarray(img)), p, device=be).seg
    assert rec.take()[1]   # a device image goes through the stages
    for r in (first, *runs, again, ref, dev):
        _compare(method)(r, staged)
