"""Session 16 (imseg-q7): the hybrid merge (``gpu_kernels.imseg.hybrid``): the contour merge in its count mode to
M' = min(R, max(M, n_segments)) regions, then the learned merge (its model refit on such starts) to the end. The CPU
path is the two library merges composed; the GPU path (emulator here; the H100 in the gpu-marked test) gives the
same labels in the coarseness and the count modes, with and without a contour part."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import hybrid as HY
from gpu_kernels.imseg import learned as LM

needs_emu = pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")


def _image(h=40, w=56):
    from skimage import data, transform

    return (transform.resize(data.astronaut(), (h, w), anti_aliasing=True) * 255).astype(np.uint8)


def _stages(img, device, n_superpixels=50):
    col = C.stage_colour(img, device=device)
    return col, C.stage_superpixels(col, n_superpixels=n_superpixels, device=device)


def test_start_count():
    assert HY.start_count(1000, 0, 200) == 200
    assert HY.start_count(150, 0, 200) == 150
    assert HY.start_count(1000, 300, 200) == 300      # the count mode: the contour merge stops at n if n > M
    assert HY.start_count(1000, 20, 200) == 200


def test_cpu_path_is_the_contour_merge_then_the_learned_merge():
    img = _image(64, 80)
    col, sp = _stages(img, "cpu", 80)
    R, comps = sp["R"], sp["comps"]
    M = R // 3
    h, w = comps.shape
    inv = 1 / math.sqrt(h * w)
    g = C.region_graph_np(comps, R, col["gq"], col["q"])
    into, cnt, _ = C.merge_np(g, M, math.inf, inv)
    assert cnt == M
    seg, _ = C._resolve(into)
    mid = seg[comps - 1]
    g2 = C.region_graph_np(mid, M, col["gq"], col["q"], boundary=True)
    g2.update(LM.graph_extras_np(mid, M, col["gq"], col["q"], g2))
    tau = LM.tau_from_coarseness(C.DEFAULT_COARSENESS)
    min_area = C.min_region_area(sp["S"])
    into2, _, _ = LM.merge_learned_np(g2, 0, tau, inv, min_area=min_area, model_arrays=HY.model())
    seg2, count = C._resolve(into2)
    st: dict = {}
    got = HY.merge_np(comps, R, col["gq"], col["q"], sp["S"], 0, tau, min_area=min_area, regions=M, stats=st)
    np.testing.assert_array_equal(got, seg2[mid - 1])
    assert st["start"] == M and st["count"] == count == int(got.max())


def test_count_mode_gives_exactly_n(monkeypatch):
    img = _image(64, 80)
    col, sp = _stages(img, "cpu", 80)
    monkeypatch.setattr(HY, "HYBRID_REGIONS", sp["R"] // 2)
    for n in (3, 7, sp["R"] // 2 + 5):
        mg = HY.stage_merge(col, sp, n_segments=n, device="cpu")
        assert mg["count"] == n == len(np.unique(mg["labels"]))
        assert mg["start"] == max(sp["R"] // 2, n)


@needs_emu
@pytest.mark.parametrize("regions", [12, 25, 10_000])   # 10_000 > R: no contour part
@pytest.mark.parametrize("n_segments", [0, 6])
def test_gpu_equals_cpu_emulator(monkeypatch, regions, n_segments):
    monkeypatch.setattr(HY, "HYBRID_REGIONS", regions)
    img = _image()
    col, sp = _stages(img, "cpu")
    want = HY.stage_merge(col, sp, n_segments=n_segments, device="cpu")
    be = emu_backend()
    gcol, gsp = _stages(img, be)
    assert gsp["R"] == sp["R"]
    got = HY.stage_merge(gcol, gsp, n_segments=n_segments, device=be)
    lab = np.asarray(got["labels"].get()).reshape(sp["comps"].shape)
    np.testing.assert_array_equal(lab, want["labels"])
    assert (got["count"], got["rounds_contour"], got["rounds_learned"], got["start"]) == \
        (want["count"], want["rounds_contour"], want["rounds_learned"], want["start"])
    seg = C.stage_finish(gcol, gsp, got, device=be)
    assert seg.n_regions == want["count"] and seg.info["params"]["merge"] == "hybrid"


@pytest.mark.gpu
def test_gpu_equals_cpu_on_a_gpu():
    """On a CUDA device: ``segment_contours(merge="hybrid")`` gives the CPU path's labels (coarseness and count
    modes) on a shaded synthetic scene and on BSDS images where the shared data is present."""
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    from test_quality12_learned_gpu import _images

    from gpu_kernels.imseg.contours import segment_contours

    for name, img in _images()[:4]:
        for kw in ({}, {"n_segments": 12}):
            want = segment_contours(img, merge="hybrid", device="cpu", features=False, **kw)
            got = segment_contours(img, merge="hybrid", device="cuda", **kw)
            np.testing.assert_array_equal(got.labels, want.labels, err_msg=f"{name} {kw}")
            assert got.info["params"]["merge"] == "hybrid" and got.n_regions == want.n_regions
            assert got.syncs == 2, got.info["sync_reasons"]   # the superpixel count and the segment count


def test_the_hybrid_takes_tau_from_its_own_model(monkeypatch):
    """τ at a coarseness starts from the hybrid model's stored τ (review s16 #5), not the learned model's."""
    m = dict(HY.model())
    m["tau"] = 0.5
    monkeypatch.setattr(HY, "_MODEL", m)
    seen = {}

    def fake(comps, R, gq, q, S, target, tau, **kw):
        seen["tau"] = tau
        kw["stats"].update(start=R, rounds_contour=0, rounds_learned=0, count=1)
        return comps

    monkeypatch.setattr(HY, "merge_np", fake)
    comps = np.ones((8, 8), np.int32)
    col = {"h": 8, "w": 8, "gq": np.zeros((8, 8), np.float32), "q": np.zeros((8, 8, 3), np.float32)}
    HY.stage_merge(col, {"R": 1, "comps": comps, "S": 4}, coarseness=C.DEFAULT_COARSENESS + 1.0, device="cpu")
    assert seen["tau"] == pytest.approx(0.5 + LM.TAU_PER_COARSENESS)


def test_one_model_loader_for_both_models():
    from gpu_kernels.imseg import learned_model, learned_model_hybrid

    a, b = LM.load_model(learned_model), LM.load_model(learned_model_hybrid)
    assert set(a) == set(b) and isinstance(b["tau"], float)
    assert HY.model()["tau"] == b["tau"] and LM.model()["base"] == a["base"]


def test_the_learned_tau_map_spans_the_coarseness_range():
    """Below the default τ falls linearly to 0 at coarseness 0 (session 16; it stopped at 0.19, a few dozen
    segments); from the default up it is unchanged; continuous and increasing over 0..10."""
    cs = np.linspace(0.0, 10.0, 1001)
    t = np.array([LM.tau_from_coarseness(c) for c in cs])
    assert t[0] == 0.0 and np.all(np.diff(t) > 0)
    d = C.DEFAULT_COARSENESS
    assert LM.tau_from_coarseness(d) == pytest.approx(0.39, abs=1e-12)
    assert abs(LM.tau_from_coarseness(d - 1e-9) - LM.tau_from_coarseness(d)) < 1e-8
    assert LM.tau_from_coarseness(5.0) == pytest.approx(0.39 + LM.TAU_PER_COARSENESS * (5.0 - d))


def test_coarseness_zero_gives_many_more_learned_segments():
    from skimage import data, transform

    im = (transform.resize(data.astronaut(), (160, 160), anti_aliasing=True) * 255).astype(np.uint8)
    n = [int(np.unique(C.segment_contours(im, coarseness=c, merge="learned", features=False, device="cpu").labels).size)
         for c in (0.0, 1.0, 3.3)]
    assert n[0] >= n[1] >= n[2] and n[0] >= 4 * n[2], n
