"""Session 16 (issue 21, imseg-speed5): ``ct_merge``'s new shared-memory layouts for large R (mode 3: best and
into only; mode 4: best only), the small table beside them or beside global arrays (HOT_SMALL_LOG), and the
renaming skip (SKIP_RENAME: a pair of two regions untouched by the round's merges is copied as it is to a second
set of pair arrays). Every combination gives the CPU merge's regions and rounds exactly."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg.contours import segment_contours

needs_emu = pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")


def _case(kw, size=(120, 160), n_superpixels=300):
    from skimage import data, transform

    img = (transform.resize(data.coffee(), size, anti_aliasing=True) * 255).astype(np.uint8)
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, n_superpixels=n_superpixels, device="cpu")
    mg = C.stage_merge(col, sp, device="cpu", **kw)
    p = C.check_params(kw.get("coarseness", C.DEFAULT_COARSENESS), kw.get("n_segments", 0), 1,
                       C.DEFAULT_COMPACTNESS, C.DEFAULT_SIGMA)
    thr = np.inf if p["n_segments"] else C.coarseness_threshold(p["coarseness"])
    min_area = 0 if p["n_segments"] else C.min_region_area(C.slic_step(col["h"], col["w"], n_superpixels))
    return col, sp, mg, p, thr, min_area


def _device_merge(be, col, sp, p, thr, min_area, **kw):
    xp = be.xp
    h, w = col["h"], col["w"]
    return C.graph_merge_device(
        be, xp.asarray(sp["comps"].ravel().astype(np.int32)), sp["R"], h, w, xp.asarray(col["gq"].ravel()),
        xp.asarray(col["q"].reshape(3, -1).ravel()), p["n_segments"], thr, 1.0 / np.sqrt(h * w),
        min_area=min_area, **kw)


def _assert_cpu(into, state, sp, mg):
    seg, count = C._resolve(np.asarray(into).astype(np.int64))
    st = np.asarray(state)
    assert int(st[2]) == 0 and int(st[1]) == mg["rounds"] and count == mg["count"]
    np.testing.assert_array_equal(seg[sp["comps"] - 1], mg["labels"])


@needs_emu
@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("smem", [True, "regions", False, "best_into", "best"])
@pytest.mark.parametrize("kw", [dict(n_segments=7), dict(coarseness=2.5), dict(coarseness=3.5)])
def test_layouts_and_skip_give_the_cpu_merge(kw, smem, skip, monkeypatch):
    """Every layout, with and without the renaming skip, the small table off, on where the regions are in
    shared memory, and capped beside the hot fields / global arrays (2^7 slots: the first rounds through
    the global table, the later ones through the small one); count and threshold modes (clean-up included)."""
    be = emu_backend()
    col, sp, mg, p, thr, min_area = _case(kw)
    for small, hot_log in ((False, 0), (True, 0), (True, 7)):
        monkeypatch.setattr(C, "HOT_SMALL_LOG", hot_log)
        into, state = _device_merge(be, col, sp, p, thr, min_area, smem=smem, small=small, skip=skip)
        _assert_cpu(into, state, sp, mg)


@needs_emu
@pytest.mark.parametrize("seed", range(6))
def test_skip_fuzz_over_images(seed):
    """The skip with the hot layouts on other images, sizes and superpixel counts (a random draw per seed):
    the CPU merge exactly."""
    rng = np.random.default_rng(1600 + seed)
    h, w = int(rng.integers(48, 120)), int(rng.integers(48, 160))
    nsp = int(rng.integers(60, 400))
    kw = dict(n_segments=int(rng.integers(2, 12))) if seed % 2 else dict(coarseness=float(rng.uniform(1.5, 4.0)))
    be = emu_backend()
    col, sp, mg, p, thr, min_area = _case(kw, (h, w), nsp)
    for smem in ("best_into", "best", False, "regions"):
        into, state = _device_merge(be, col, sp, p, thr, min_area, smem=smem, small=True, skip=True)
        _assert_cpu(into, state, sp, mg)


def test_hot_modes_are_chosen_only_where_the_regions_do_not_fit(monkeypatch):
    """merge_smem_mode: 1 and 2 as before; 3 / 4 (HOT_SMEM) only where the regions' 44 bytes do not fit
    and the hot fields do; the info names the layout."""
    be = object()
    monkeypatch.setattr(C, "_max_smem", lambda be: 227 * 1024 - 1024)   # an H100's
    monkeypatch.setattr(C, "HOT_SMEM", "best_into")
    assert C.merge_smem_mode(be, 1000, 3016) == 1 and C.merge_smem_mode(be, 2634, 3 * 2634 + 16) == 2
    assert C.merge_smem_mode(be, 9227, 3 * 9227 + 16) == 3
    assert C.merge_smem_mode(be, 19500, 3 * 19500 + 16) == 0   # 234 KB of best + into: too many
    monkeypatch.setattr(C, "HOT_SMEM", "best")
    assert C.merge_smem_mode(be, 9227, 3 * 9227 + 16) == 4 and C.merge_smem_mode(be, 19500, 58516) == 4
    monkeypatch.setattr(C, "HOT_SMEM", None)
    assert C.merge_smem_mode(be, 9227, 3 * 9227 + 16) == 0
    assert C.SMEM_INFO == {0: False, 1: True, 2: "regions", 3: "best_into", 4: "best"}


@needs_emu
@pytest.mark.parametrize("hot,skip,hot_log", [("best_into", True, 11), ("best", True, 0), (None, True, 11)])
def test_segment_contours_with_the_switches(hot, skip, hot_log, monkeypatch):
    """segment_contours end to end with the switches on (the emulator's shared memory cut so that the
    regions' arrays do not fit and the hot layouts are used): the CPU labels and features."""
    from skimage import data, transform

    img = (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)
    cpu = segment_contours(img, device="cpu", n_superpixels=60)
    be = emu_backend()
    R = cpu.n_clusters
    monkeypatch.setattr(C, "_max_smem", lambda be: 44 * R - 8)   # the regions no longer fit
    monkeypatch.setattr(C, "HOT_SMEM", hot)
    monkeypatch.setattr(C, "HOT_SMALL_LOG", hot_log)
    monkeypatch.setattr(C, "SKIP_RENAME", skip)
    monkeypatch.setattr(C, "_LAST_R", {})
    for _ in range(2):   # the second call uses the early pass (allocated with the second pair set)
        s = segment_contours(img, device=be, n_superpixels=60)
        np.testing.assert_array_equal(s.labels, cpu.labels)
        np.testing.assert_array_equal(s.features["area"], cpu.features["area"])
        assert s.info["merge_rounds"] == cpu.info["merge_rounds"]
        assert s.info["merge_in_shared_memory"] == (hot or False)


@pytest.mark.gpu
def test_the_switches_give_the_same_result_on_the_gpu(monkeypatch):
    """On the GPU (512^2 replay: the regions in shared memory; 1080p: the hot layouts): every switch
    combination of session 16 gives the same labels, rounds and features as all off."""
    import cv2
    from skimage import data

    for img in (cv2.resize(data.astronaut(), (512, 512), interpolation=cv2.INTER_AREA),
                cv2.resize(data.coffee(), (1920, 1080), interpolation=cv2.INTER_CUBIC)):
        out = []
        for hot, hot_log, skip in ((None, 0, False), ("best_into", 0, True), ("best", 11, True),
                                   ("best_into", 11, False), (None, 11, True)):
            monkeypatch.setattr(C, "HOT_SMEM", hot)
            monkeypatch.setattr(C, "HOT_SMALL_LOG", hot_log)
            monkeypatch.setattr(C, "SKIP_RENAME", skip)
            out += [segment_contours(img, device="cuda") for _ in range(2)]
        ref = out[0]
        for s in out[1:]:
            np.testing.assert_array_equal(s.labels, ref.labels)
            assert s.info["merge_rounds"] == ref.info["merge_rounds"] and s.syncs == 2
            for k in ref.features:
                np.testing.assert_array_equal(np.asarray(s.features[k]), np.asarray(ref.features[k]))
