"""Session 4 speed work (issue 21), checked in the CUDA emulator: the contours merge gives the
same result with its arrays in shared memory as in global memory, and the warp-aggregated
feature flushes give the CPU's features on regions that span many chunks and warps."""

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import features as F

needs_emu = pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")


def _image(h=40, w=56):
    from skimage import data, transform

    return (transform.resize(data.astronaut(), (h, w), anti_aliasing=True) * 255).astype(np.uint8)


@needs_emu
@pytest.mark.parametrize("target, coarseness", [(5, 3.3), (0, 3.0)])
def test_merge_in_shared_memory_equals_global_memory(target, coarseness):
    be = emu_backend()
    xp = be.xp
    img = _image()
    col = C.stage_colour(img, device=be)
    sp = C.stage_superpixels(col, n_superpixels=40, device=be)
    h, w, R = col["h"], col["w"], sp["R"]
    thr = np.inf if target else C.coarseness_threshold(coarseness)
    out = {}
    for smem in (True, False):
        into, state = C.graph_merge_device(be, sp["comps"], R, h, w, col["gq"], col["q"], target, thr,
                                           1.0 / np.sqrt(h * w), min_area=0 if target else 4, smem=smem)
        out[smem] = (np.asarray(xp.asnumpy(into) if hasattr(xp, "asnumpy") else into).copy(),
                     np.asarray(state).copy())
    np.testing.assert_array_equal(out[True][0], out[False][0])
    np.testing.assert_array_equal(out[True][1], out[False][1])
    assert out[True][1][1] > 1  # several rounds ran
    # and the CPU rounds agree
    graph = C.region_graph_np(np.asarray(sp["comps"]).reshape(h, w), R, np.asarray(col["gq"]).reshape(h, w),
                              np.asarray(col["q"]).reshape(3, h, w))
    into_np, count, rounds = C.merge_np(graph, target, thr, 1.0 / np.sqrt(h * w), min_area=0 if target else 4)
    assert int(out[True][1][0]) == count and int(out[True][1][1]) == rounds


@needs_emu
@pytest.mark.parametrize("kw", [{}, dict(n_segments=7), dict(coarseness=4.0)])
def test_emulated_merge_in_shared_memory_gives_cpu_labels(kw):
    """Many rounds (28-43 here), the merge's arrays in shared memory: the CPU's labels and
    round count."""
    from gpu_kernels.imseg.contours import segment_contours

    img = _image(120, 160)
    a = segment_contours(img, device=emu_backend(), n_superpixels=300, **kw)
    b = segment_contours(img, device="cpu", n_superpixels=300, **kw)
    assert a.info["merge_rounds"] == b.info["merge_rounds"] > 10
    assert a.info["merge_in_shared_memory"]
    np.testing.assert_array_equal(a.labels, b.labels)


@needs_emu
@pytest.mark.parametrize("h, w, block", [(48, 300, 40), (33, 517, 97), (20, 1030, 1030)])
def test_warp_aggregated_features_equal_cpu(h, w, block):
    """Regions wider than a warp's span (32 threads x 16 pixels): the last segments of the
    lanes are summed across the warp before the atomics."""
    rng = np.random.default_rng(h + w)
    cols = np.arange(w) // block
    labels = (cols[None, :] + 3 * (np.arange(h)[:, None] // 7) + 1).astype(np.int32)
    labels[rng.random((h, w)) < 0.01] = 1  # a few stray pixels break the runs
    _, labels = np.unique(labels, return_inverse=True)
    labels = (labels.reshape(h, w) + 1).astype(np.int32)
    R = int(labels.max())
    img = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
    ref = F.features_np(labels, R, img, moments=True)
    be = emu_backend()
    got = F.features_device(be, be.xp.asarray(labels).ravel(), R, h, w, be.xp.asarray(img), 3, "runs", True)
    for k in ("area", "bbox"):
        np.testing.assert_array_equal(np.asarray(got[k]), ref[k])
    for k in ("centroid", "intensity_mean"):
        np.testing.assert_allclose(np.asarray(got[k]), ref[k], rtol=1e-12)
    # the GPU's float32 CIELAB differs from NumPy's in the last bits
    np.testing.assert_allclose(np.asarray(got["intensity_mean_lab"]), ref["intensity_mean_lab"], atol=1e-4)
    scale = np.abs(ref["moments_central"]).reshape(R, -1).max(axis=1)[:, None, None] + 1.0
    assert np.all(np.abs(np.asarray(got["moments_central"]) - ref["moments_central"]) <= 1e-12 * scale)


@pytest.mark.gpu
def test_gpu_upload_and_download_keep_earlier_results():
    """The threaded pinned upload gives the image, and results downloaded into pooled pinned
    blocks stay as they were when later calls download theirs."""
    cp = pytest.importorskip("cupy")
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import _util
    from gpu_kernels.imseg.contours import segment_contours

    be = get_backend("cuda")
    rng = np.random.default_rng(0)
    big = rng.integers(0, 256, size=(2200, 2000, 3), dtype=np.uint8)
    assert big.nbytes >= _util.UPLOAD_THREADED_MIN
    for _ in range(2):
        np.testing.assert_array_equal(cp.asnumpy(_util.upload(be, big)), big)
    img1 = np.repeat(np.repeat(_image(60, 85), 20, axis=0), 20, axis=1)  # 1200 x 1700
    img2 = img1[::-1].copy()
    s1 = segment_contours(img1, device="cuda")
    keep = (s1.labels.copy(), {k: v.copy() for k, v in s1.features.items()})
    s2 = segment_contours(img2, device="cuda")
    s3 = segment_contours(img1, device="cuda")
    np.testing.assert_array_equal(s1.labels, keep[0])
    for k, v in keep[1].items():
        np.testing.assert_array_equal(s1.features[k], v)
    np.testing.assert_array_equal(s3.labels, s1.labels)
    assert not np.shares_memory(s1.labels, s2.labels)
    cpu = segment_contours(img1, device="cpu")
    np.testing.assert_array_equal(s1.labels, cpu.labels)


@pytest.mark.gpu
def test_gpu_results_past_the_pinned_cap_go_to_pageable_memory(monkeypatch):
    pytest.importorskip("cupy")
    from gpu_kernels.imseg import _util
    from gpu_kernels.imseg.contours import segment_contours

    img = _image(200, 300)
    a = segment_contours(img, device="cuda")
    monkeypatch.setattr(_util, "PINNED_RESULT_CAP", 0)
    b = segment_contours(img, device="cuda")
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.features["moments_central"], b.features["moments_central"])
