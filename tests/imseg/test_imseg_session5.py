"""Session 5 speed work (issue 21): the k-means path's small-region rounds run on the device
(no host read per round; sums added as regions join instead of a pixel recount). They must
give the labels, region count and round count of the session-4 rounds (one host read per
round, kept as ``merge_device_host_rounds``) and of the CPU rounds. Emulated CUDA here; the
same on a real GPU with ``pytest -m gpu``."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import piecewise_image

from gpu_kernels.imseg import label_components, rgb2lab
from gpu_kernels.imseg import merge as M
from gpu_kernels.imseg._util import SyncCounter

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _noisy_labels(seed=0, h=48, w=64, k=6, speckle=0.08):
    rng = np.random.default_rng(seed)
    img = (rng.integers(0, k, (h, w)) * (255 // k)).astype(np.uint8)
    img = np.kron(img[::4, ::4], np.ones((4, 4), np.uint8))[:h, :w]
    img[rng.random((h, w)) < speckle] = 255  # many one-pixel regions
    i16 = img.astype(np.int32)
    rgb = np.dstack([i16, (i16 * 3) % 256, 255 - i16]).astype(np.uint8)
    lab = rgb2lab(rgb, device="cpu")
    return img, lab


def _run(be, fn, labels, R, lab, S, conn, **kw):
    xp = be.xp
    h, w = labels.shape
    labels_d = xp.asarray(labels.astype(np.int32)).reshape(-1)
    lab_d = xp.asarray(np.ascontiguousarray(lab, dtype=np.float32).reshape(-1))
    syncs = SyncCounter()
    R2, rounds = fn(be, labels_d, R, h, w, S, conn, None, 3, lab_d=lab_d, syncs=syncs, **kw)
    out = np.asarray(labels_d.get() if hasattr(labels_d, "get") else labels_d).reshape(h, w).copy()
    return out, R2, rounds, syncs.count


@needs_emu
@pytest.mark.parametrize("one_block", [True, False])
@pytest.mark.parametrize("seed, conn, S, per_check", [(0, 4, 10, None), (1, 8, 40, None), (2, 8, 12, 1),
                                                      (3, 4, 200, 2), (4, 8, 2, None), (5, 8, 100_000, 3)])
def test_device_rounds_equal_host_rounds_and_cpu(seed, conn, S, per_check, one_block):
    """Both forms of a round (one block for the region steps, or a grid kernel per step)."""
    be = emu_backend()
    img, lab = (_noisy_labels(seed, h=96, w=120, speckle=0.15) if one_block else _noisy_labels(seed))
    labels, R = label_components(img, connectivity=conn, device="cpu")
    if one_block:
        assert R > 1024  # the one-block steps loop over several chunks of 1024 regions
    new, Rn, rn, syncs = _run(be, M.merge_device, labels, R, lab, S, conn, rounds_per_check=per_check,
                              one_block=one_block)
    old, Ro, ro, _ = _run(be, M.merge_device_host_rounds, labels, R, lab, S, conn)
    cpu, Rc, rc = M.merge_np(labels, R, lab, S, conn)
    assert (Rn, rn) == (Ro, ro) == (Rc, rc)
    assert rn >= 1
    np.testing.assert_array_equal(new, old)
    np.testing.assert_array_equal(new, cpu)
    # one host read per ROUNDS_PER_CHECK rounds queued, not one a round
    P = per_check or M.ROUNDS_PER_CHECK
    assert syncs == max(1, -(-rn // P))


@needs_emu
def test_device_rounds_nothing_to_merge_and_one_region():
    be = emu_backend()
    img, lab = _noisy_labels(7, speckle=0.0)
    labels, R = label_components(img, connectivity=8, device="cpu")
    out, R2, rounds, syncs = _run(be, M.merge_device, labels, R, lab, 2, 8)
    assert (R2, rounds, syncs) == (R, 0, 1)
    np.testing.assert_array_equal(out, labels)
    one = np.ones_like(labels)
    out, R2, rounds, _ = _run(be, M.merge_device, one, 1, lab, 10**6, 8)
    assert (R2, rounds) == (1, 0) and np.all(out == 1)


@needs_emu
def test_device_rounds_over_the_limit_raise(monkeypatch):
    be = emu_backend()
    img, lab = _noisy_labels(8)
    labels, R = label_components(img, connectivity=4, device="cpu")
    _, _, rounds, _ = _run(be, M.merge_device, labels, R, lab, 300, 4)
    assert rounds >= 2
    monkeypatch.setattr(M, "MAX_ROUNDS", rounds - 1)
    with pytest.raises(RuntimeError, match="did not finish"):
        _run(be, M.merge_device, labels, R, lab, 300, 4)


@needs_emu
@pytest.mark.parametrize("unread_max", [1 << 20, 0])
def test_emulated_pipeline_gives_cpu_labels_with_two_reads(unread_max, monkeypatch):
    """The whole k-means pipeline on the emulated device: the CPU's labels, and two host reads
    (the region count after the labelling, the merge's done flag); one read (the done flag,
    with the count) where the merge is queued without reading the count (session 6)."""
    from gpu_kernels.imseg import segment as SG

    monkeypatch.setattr(SG, "UNREAD_COUNT_MAX_PIXELS", unread_max)
    from gpu_kernels.imseg import segment_image

    img, _ = piecewise_image(np.random.default_rng(11), 60, 80, noise=16.0, shading=True)
    kw = dict(min_size=200, k_max=64, merge_distance=5.0)  # many clusters: many small regions
    g = segment_image(img, device=emu_backend(), **kw)
    c = segment_image(img, device="cpu", **kw)
    assert g.info["merge_rounds"] == c.info["merge_rounds"] >= 3
    assert g.syncs == (1 if unread_max else 2), g.info["sync_reasons"]
    assert g.n_regions == c.n_regions and g.n_clusters == c.n_clusters
    np.testing.assert_array_equal(g.labels, c.labels)
    np.testing.assert_array_equal(g.features["area"], c.features["area"])


@pytest.mark.gpu
@pytest.mark.parametrize("S", [16, 64, 512])
def test_gpu_device_rounds_equal_host_rounds_and_cpu(S):
    from skimage import data, transform

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import kmeans_quantized

    be = get_backend("cuda")
    img = np.clip(np.round(transform.resize(data.astronaut(), (320, 480), anti_aliasing=True,
                                            preserve_range=True)), 0, 255).astype(np.uint8)
    lab = rgb2lab(img, device="cpu")
    cl, _ = kmeans_quantized(img, lab=lab, device="cpu")
    labels, R = label_components(cl, connectivity=8, device="cpu")
    with be.activate():
        new, Rn, rn, syncs = _run(be, M.merge_device, labels, R, lab, S, 8)
        old, Ro, ro, _ = _run(be, M.merge_device_host_rounds, labels, R, lab, S, 8)
    cpu, Rc, rc = M.merge_np(labels, R, lab, S, 8)
    assert (Rn, rn) == (Ro, ro) == (Rc, rc) and rn >= 1
    np.testing.assert_array_equal(new, old)
    np.testing.assert_array_equal(new, cpu)
    assert syncs == max(1, -(-rn // M.ROUNDS_PER_CHECK))


# --------------------------------------------------------------------------- issue 20's item
@pytest.mark.parametrize("change, first", [({"q": 4}, "quantise"), ({"k_max": 16}, "kmeans"),
                                           ({"merge_distance": 10.0}, "kmeans"), ({"iterations": 5}, "kmeans"),
                                           ({"min_size": 64}, "segment"), ({"connectivity": 4}, "segment"),
                                           ({"bilateral": 2}, "lab")])
def test_kmeans_parameters_rerun_only_from_the_stage_that_reads_them(change, first):
    """The paper's pipeline in the tool: q re-runs the quantised colours, not CIELAB or the
    bilateral filter; connectivity and min_size re-run the components and merging, not k-means;
    every re-run gives the labels of a full run."""
    from app.tools import imseg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    data = imseg.load(imseg.samples()[0])
    cpu = get_backend("cpu")
    cache = StageCache(cap_bytes=1 << 30)
    order = ["lab", "quantise", "kmeans", "segment"]
    imseg.PIPELINE.execute(data, imseg.PARAMS.validate({"method": "kmeans"}), device=cpu, cache=cache, scope="s5")
    p2 = imseg.PARAMS.validate({"method": "kmeans", **change})
    r2, rep = imseg.PIPELINE.execute(data, p2, device=cpu, cache=cache, scope="s5")
    ran = [s for s in order if s in rep.ran]
    assert ran == order[order.index(first):], (change, rep.ran)
    assert set(order[:order.index(first)]) <= set(rep.reused)
    full = imseg.run(data, p2, device=cpu)
    np.testing.assert_array_equal(r2.seg.labels, full.seg.labels)
    np.testing.assert_array_equal(r2.seg.features["area"], full.seg.features["area"])
    assert r2.seg.info["params"] == full.seg.info["params"]


# --------------------------------------------------------------------------- contours merge
@needs_emu
@pytest.mark.parametrize("target, coarseness", [(5, 3.3), (0, 3.0)])
def test_merge_with_regions_in_shared_memory_equals_global_memory(target, coarseness):
    """ct_merge with only the regions' arrays in shared memory (what fits at 512^2 on an H100:
    the pairs do not) gives the global-memory merge and the CPU's rounds."""
    from skimage import data, transform

    from gpu_kernels.imseg import contours as C

    be = emu_backend()
    xp = be.xp
    img = (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)
    col = C.stage_colour(img, device=be)
    sp = C.stage_superpixels(col, n_superpixels=40, device=be)
    h, w, R = col["h"], col["w"], sp["R"]
    thr = np.inf if target else C.coarseness_threshold(coarseness)
    out = {}
    for smem in ("regions", False, True):
        into, state = C.graph_merge_device(be, sp["comps"], R, h, w, col["gq"], col["q"], target, thr,
                                           1.0 / np.sqrt(h * w), min_area=0 if target else 4, smem=smem)
        out[smem] = (np.asarray(xp.asnumpy(into) if hasattr(xp, "asnumpy") else into).copy(),
                     np.asarray(state).copy())
    for smem in (False, True):
        np.testing.assert_array_equal(out["regions"][0], out[smem][0])
        np.testing.assert_array_equal(out["regions"][1], out[smem][1])
    assert out["regions"][1][1] > 1  # several rounds ran


def test_merge_smem_mode_picks_what_fits(monkeypatch):
    from gpu_kernels.imseg import contours as C

    class Be:  # an emulator-like backend with an H100's opt-in limit
        is_gpu = True
        xp = np
        max_dynamic_smem = 227 * 1024 - 1024

    be = Be()
    assert C.merge_smem_mode(be, 500, 3 * 500 + 16) == 1
    assert C.merge_smem_mode(be, 2634, 3 * 2634 + 16) == 2  # 512^2 with the default superpixels
    # 1080p: the regions' 44 bytes do not fit, their best field does (mode 4: HOT_SMEM = "best", session 16
    # changed the mode table; before it 1080p was mode 0)
    assert C.merge_smem_mode(be, 9227, 3 * 9227 + 16) == 4
    assert C.merge_smem_mode(be, 30000, 3 * 30000 + 16) == 0  # not even best (240 KB): every array global
    monkeypatch.setattr(C, "HOT_SMEM", None)
    assert C.merge_smem_mode(be, 9227, 3 * 9227 + 16) == 0  # the switch off: the mode table before session 16
    assert C.merge_smem_mode(be, 2634, 3 * 2634 + 16) == 2


@pytest.mark.gpu
def test_gpu_pinned_single_thread_upload_gives_the_images():
    """Images between UPLOAD_PINNED_MIN and UPLOAD_THREADED_MIN go up through the page-locked
    stage by one thread: each device copy is the image, also when the next upload (into the
    same stage) follows at once and when the host array changes after the call."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import _util

    be = get_backend("cuda")
    rng = np.random.default_rng(0)
    with be.activate():
        imgs = [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((300, 400), (512, 512), (301, 517))]
        assert all(_util.UPLOAD_PINNED_MIN <= a.nbytes < _util.UPLOAD_THREADED_MIN for a in imgs)
        ups = [_util.upload(be, a) for a in imgs]
        keep = [a.copy() for a in imgs]
        for a in imgs:
            a[:] = 0  # the upload copied it already
        for u, a in zip(ups, keep, strict=True):
            assert u.shape == a.shape and bool((u == cp.asarray(a)).all())
