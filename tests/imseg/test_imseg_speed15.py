"""Session 15 (issue 21, imseg-speed4): the contour merge's region-graph pixel pass queued before the
read-back of R (contours.EARLY_GRAPH), with arrays sized by the last R of the shape: the same labels and
features as the path before it and as the CPU, its bound exceeded (the fallback) included."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg.contours import segment_contours


def _img(seed: int):
    from skimage import data, transform

    src = data.astronaut() if seed == 0 else data.coffee()
    return (transform.resize(src, (40, 56), anti_aliasing=True) * 255).astype(np.uint8)


@pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")
@pytest.mark.parametrize("kw", [dict(n_segments=5), dict(coarseness=3.0)])
def test_early_graph_gives_the_same_labels(kw, monkeypatch):
    be = emu_backend()
    seen = []
    real = C.early_graph

    def spy(*a, **k):
        pre = real(*a, **k)
        seen.append(None if pre is None else pre["rcap"])
        return pre

    monkeypatch.setattr(C, "early_graph", spy)
    monkeypatch.setattr(C, "_LAST_R", {})   # the bounds of this test only (review s15 R13)
    for seed in (0, 1, 0):   # the first sets the bound; the second and third use it
        img = _img(seed)
        cpu = segment_contours(img, device="cpu", n_superpixels=40, **kw)
        monkeypatch.setattr(C, "EARLY_GRAPH", True)
        monkeypatch.setattr(C, "SMALL_TABLE", True)
        a = segment_contours(img, device=be, n_superpixels=40, **kw)
        monkeypatch.setattr(C, "EARLY_GRAPH", False)
        monkeypatch.setattr(C, "SMALL_TABLE", False)
        b = segment_contours(img, device=be, n_superpixels=40, **kw)
        for s in (a, b):
            np.testing.assert_array_equal(s.labels, cpu.labels)
            np.testing.assert_array_equal(s.features["area"], cpu.features["area"])
            assert s.syncs == 2 and s.info["merge_rounds"] == cpu.info["merge_rounds"]
    on, off = seen[0::2], seen[1::2]   # early_graph is called with the switch on, then off
    assert on[0] is None and all(r is not None for r in on[1:]) and off == [None] * 3, seen


@pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")
def test_a_bound_below_r_falls_back(monkeypatch):
    """R beyond the early pass's bound: its pass stops at the first label beyond (error bit 4) and the
    merge runs on a pass with the exact sizes: the same labels."""
    be = emu_backend()
    img = _img(0)
    cpu = segment_contours(img, device="cpu", n_superpixels=40)
    key = C._early_key(be, 40, 56, {"sigma": C.DEFAULT_SIGMA, "n_superpixels": 40,
                                     "compactness": C.DEFAULT_COMPACTNESS})
    used = []
    real = C.graph_merge_device

    def spy(*a, pre=None, **k):
        used.append((pre["rcap"] if pre is not None else None, a[2]))
        return real(*a, pre=pre, **k)

    monkeypatch.setattr(C, "graph_merge_device", spy)
    monkeypatch.setattr(C, "EARLY_GRAPH", True)
    monkeypatch.setattr(C, "_LAST_R", {key: 1})   # a bound of 10 regions: far below R (this test's only)
    a = segment_contours(img, device=be, n_superpixels=40)
    np.testing.assert_array_equal(a.labels, cpu.labels)
    np.testing.assert_array_equal(a.features["area"], cpu.features["area"])
    assert used and used[0][0] is not None and used[0][0] < used[0][1], used
    assert C._LAST_R[key] == a.n_clusters


@pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")
@pytest.mark.parametrize("max_log", [14, 7])
@pytest.mark.parametrize("smem", [True, "regions", False])
@pytest.mark.parametrize("kw", [dict(n_segments=7), dict(coarseness=2.5), dict(coarseness=3.5)])
def test_small_table_gives_the_cpu_merge(kw, smem, max_log, monkeypatch):
    """ct_merge with and without its small table in shared memory (``"always"``: also with every array in
    global memory), each shared-memory layout, count and threshold modes (clean-up included); max_log 7
    (128 slots): the first rounds use the global table, the later ones the small one. The CPU merge's
    regions and rounds exactly."""
    monkeypatch.setattr(C, "SMALL_TABLE_MAX_LOG", max_log)
    be = emu_backend()
    from skimage import data, transform

    img = (transform.resize(data.coffee(), (120, 160), anti_aliasing=True) * 255).astype(np.uint8)
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, n_superpixels=300, device="cpu")
    mg = C.stage_merge(col, sp, device="cpu", **kw)
    R, h, w = sp["R"], col["h"], col["w"]
    p = C.check_params(kw.get("coarseness", C.DEFAULT_COARSENESS), kw.get("n_segments", 0), 1,
                       C.DEFAULT_COMPACTNESS, C.DEFAULT_SIGMA)
    thr = np.inf if p["n_segments"] else C.coarseness_threshold(p["coarseness"])
    min_area = 0 if p["n_segments"] else C.min_region_area(C.slic_step(h, w, 300))
    xp = be.xp
    for small in ("always", True, False):
        into, state = C.graph_merge_device(
            be, xp.asarray(sp["comps"].ravel().astype(np.int32)), R, h, w, xp.asarray(col["gq"].ravel()),
            xp.asarray(col["q"].reshape(3, -1).ravel()), p["n_segments"], thr, 1.0 / np.sqrt(h * w),
            min_area=min_area, smem=smem, small=small)
        seg, count = C._resolve(np.asarray(into).astype(np.int64))
        st = np.asarray(state)
        assert int(st[2]) == 0 and int(st[1]) == mg["rounds"] and count == mg["count"]
        np.testing.assert_array_equal(seg[sp["comps"] - 1], mg["labels"])


def test_small_table_size():
    """The small table takes the largest power of two of 20-byte slots that fits (at least 64, at most
    2^SMALL_TABLE_MAX_LOG)."""
    assert C.small_table_log(20 * 63) == 0 and C.small_table_log(20 * 64) == 6
    assert C.small_table_log(231424 - 115896) == 12 and C.small_table_log(231424) == 13
    assert C.small_table_log(10**9) == C.SMALL_TABLE_MAX_LOG


@pytest.mark.gpu
def test_the_switches_give_the_same_result_on_the_gpu(monkeypatch):
    """On the GPU (the CUDA-graph replay at 512^2, the plain path at 1080p): both switches off and on, each
    shape called three times (the second call on uses the early pixel pass): the same labels and features."""
    import cv2
    from skimage import data

    for img in (cv2.resize(data.astronaut(), (512, 512), interpolation=cv2.INTER_AREA),
                cv2.resize(data.coffee(), (1920, 1080), interpolation=cv2.INTER_CUBIC)):
        out = {}
        for arm in ((False, False), (True, True)):
            monkeypatch.setattr(C, "EARLY_GRAPH", arm[0])
            monkeypatch.setattr(C, "SMALL_TABLE", arm[1])
            out[arm] = [segment_contours(img, device="cuda") for _ in range(3)]
        ref = out[(False, False)][0]
        for s in out[(False, False)][1:] + out[(True, True)]:
            np.testing.assert_array_equal(s.labels, ref.labels)
            assert s.info["merge_rounds"] == ref.info["merge_rounds"] and s.syncs == 2
            for k in ref.features:
                np.testing.assert_array_equal(np.asarray(s.features[k]), np.asarray(ref.features[k]))
