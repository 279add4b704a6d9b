"""Session 6 speed work (issue 21) on the k-means path: every k-means iteration in one block
(``kmeans_fused``) must give the centres and clusters of the grid kernels (one assignment and
one update launch an iteration) and of the CPU; the one-block merge round and the grid
kernels share their region steps (``md_link_one`` ...) and must agree on a real GPU; the
labelling's local step finds with path halving and must still give scipy's components.
Emulated CUDA here; the same on a real GPU with ``pytest -m gpu``."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import piecewise_image

from gpu_kernels.imseg import kmeans as K
from gpu_kernels.imseg import label_components, rgb2lab
from gpu_kernels.imseg import merge as M

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _kmeans(be, img, fused: bool, **kw):
    """k-means through the fused kernel or the grid kernels (FUSED_MAX_COLOURS forced)."""
    old = K.FUSED_MAX_COLOURS
    K.FUSED_MAX_COLOURS = (1 << 30) if fused else 0
    try:
        return K.kmeans_quantized(img, device=be, **kw)
    finally:
        K.FUSED_MAX_COLOURS = old


@needs_emu
@pytest.mark.parametrize("k_max, iterations, merge_distance, q", [(64, 3, 18.0, 5), (16, 0, 5.0, 4),
                                                                   (200, 7, 2.0, 5), (1, 2, 18.0, 3)])
def test_fused_kmeans_equals_grid_kernels_and_cpu(k_max, iterations, merge_distance, q):
    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(3), 40, 56, noise=12.0, shading=True)
    kw = dict(k_max=k_max, iterations=iterations, merge_distance=merge_distance, q=q)
    cf, ef = _kmeans(be, img, True, **kw)
    cg, eg = _kmeans(be, img, False, **kw)
    cc, ec = K.kmeans_quantized(img, device="cpu", **kw)
    np.testing.assert_array_equal(cf, cg)
    np.testing.assert_array_equal(ef, eg)  # bit for bit
    np.testing.assert_array_equal(cf, cc)
    np.testing.assert_array_equal(ef, ec)
    if k_max > 1:
        assert len(ef) > 1


def test_fused_kmeans_is_chosen_by_the_number_of_possible_colours(monkeypatch):
    """One k-means launch at the default q (2^15 colours), the grid kernels above the limit."""
    launched = []

    class Fn:
        def __init__(self, name):
            self.name = name

        def __call__(self, *a, **kw):
            launched.append(self.name)

    class XP:
        @staticmethod
        def empty(n, dtype=None):
            return np.empty(n, dtype)

        @staticmethod
        def zeros(n, dtype=None):
            return np.zeros(n, dtype)

        int32, uint32, float64 = np.int32, np.uint32, np.float64

    class BE:
        xp = XP

    monkeypatch.setattr(K, "kernel", lambda be, src, name, **kw: Fn(name))
    monkeypatch.setattr(K, "set_max_dynamic_smem", lambda fn, n: None)
    codes = np.zeros(512 * 512, np.int32)
    hist = np.zeros(1 << 15, np.uint32)
    K.kmeans_device(BE, codes, 512, 512, 5, 64, 3, 18.0, hist)
    assert launched.count("kmeans_fused") == 1 and "kmeans_update" not in launched
    launched.clear()
    K.kmeans_device(BE, codes, 512, 512, 6, 64, 3, 18.0, np.zeros(1 << 18, np.uint32))
    assert "kmeans_fused" not in launched and launched.count("kmeans_update") == 3


@needs_emu
@pytest.mark.parametrize("conn", [4, 8])
def test_halving_local_step_gives_scipys_components_on_uniform_tiles(conn):
    """Large one-colour areas (the case path halving is for) with a few holes and stripes."""
    from scipy import ndimage as ndi

    be = emu_backend()
    img = np.zeros((70, 90), np.int32)
    img[5:60, 3:80] = 1
    img[20:22, :] = 2
    img[:, 40] = 3
    img[30:33, 50:53] = 0
    got, R = label_components(img, connectivity=conn, device=be)
    ref, Rr = label_components(img, connectivity=conn, device="cpu")
    assert R == Rr
    np.testing.assert_array_equal(got, ref)
    s = ndi.generate_binary_structure(2, 1 if conn == 4 else 2)
    n = sum(ndi.label(img == v, structure=s)[1] for v in np.unique(img))
    assert R == n


# --------------------------------------------------------------------------- on the GPU
def _natural(h, w):
    from skimage import data, transform

    img = transform.resize(data.astronaut(), (h, w), anti_aliasing=True, preserve_range=True)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


@pytest.mark.gpu
@pytest.mark.parametrize("k_max, iterations, q", [(64, 3, 5), (256, 10, 5), (1024, 3, 4), (64, 0, 5)])
def test_gpu_fused_kmeans_equals_grid_kernels_and_cpu(k_max, iterations, q):
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    img = _natural(320, 480)
    kw = dict(k_max=k_max, iterations=iterations, merge_distance=6.0, q=q)
    cf, ef = _kmeans(be, img, True, **kw)
    cg, eg = _kmeans(be, img, False, **kw)
    cc, ec = K.kmeans_quantized(img, device="cpu", **kw)
    np.testing.assert_array_equal(cf, cg)
    np.testing.assert_array_equal(ef, eg)
    np.testing.assert_array_equal(cf, cc)
    np.testing.assert_array_equal(ef, ec)


@pytest.mark.gpu
@pytest.mark.parametrize("S", [16, 512])
def test_gpu_one_block_rounds_equal_grid_rounds(S):
    """md_round (one block) and md_link / md_settle / md_compress (grid) share their region
    steps: the same labels, regions and rounds on the H100 as each other and the CPU."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import kmeans_quantized
    from gpu_kernels.imseg._util import SyncCounter

    be = get_backend("cuda")
    img = _natural(320, 480)
    lab = rgb2lab(img, device="cpu")
    cl, _ = kmeans_quantized(img, lab=lab, k_max=128, merge_distance=6.0, device="cpu")
    labels, R = label_components(cl, connectivity=8, device="cpu")
    out = []
    with be.activate():
        xp = be.xp
        for one in (True, False):
            labels_d = xp.asarray(labels.astype(np.int32)).reshape(-1)
            lab_d = xp.asarray(np.ascontiguousarray(lab, dtype=np.float32).reshape(-1))
            Rn, rn = M.merge_device(be, labels_d, R, 320, 480, S, 8, None, 3, lab_d=lab_d, syncs=SyncCounter(),
                                    one_block=one)
            out.append((labels_d.get().reshape(320, 480), Rn, rn))
    cpu, Rc, rc = M.merge_np(labels, R, lab, S, 8)
    assert out[0][1:] == out[1][1:] == (Rc, rc) and rc >= 1
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][0], cpu)


@pytest.mark.gpu
def test_gpu_labelling_of_large_uniform_areas_equals_cpu():
    """The k-means clusters of a 1024 x 1024 image (tiles of one cluster) and a flat image."""
    import cupy as cp

    img = _natural(1024, 1024)
    cl, _ = K.kmeans_quantized(img, k_max=8, device="cpu")
    for a in (cl.astype(np.int32), np.zeros((700, 1000), np.int32)):
        got, R = label_components(cp.asarray(a), connectivity=8, device="cuda")
        ref, Rr = label_components(a, connectivity=8, device="cpu")
        assert R == Rr
        np.testing.assert_array_equal(np.asarray(got.get() if hasattr(got, "get") else got), ref)


# --------------------------------------------------------------------------- CUDA graphs
def be_cuda():
    from gpu_kernels.backend import get_backend

    return get_backend("cuda")


def _params(img, kw):
    """The checked parameters segment_image keys its graphs by."""
    from gpu_kernels.imseg import segment as SG

    d = dict(k_max=SG.DEFAULT_K_MAX, q=SG.DEFAULT_Q, iterations=SG.DEFAULT_ITERATIONS,
             merge_distance=SG.DEFAULT_MERGE_DISTANCE, bilateral=SG.DEFAULT_BILATERAL,
             bilateral_window=SG.DEFAULT_BILATERAL_WINDOW, sigma_spatial=SG.DEFAULT_SIGMA_SPATIAL,
             sigma_color=SG.DEFAULT_SIGMA_COLOR, connectivity=SG.DEFAULT_CONNECTIVITY, min_size=SG.DEFAULT_MIN_SIZE)
    d.update({k: v for k, v in kw.items() if k in d})
    return SG._check_params(d["k_max"], d["q"], d["iterations"], d["merge_distance"], d["bilateral"],
                            d["bilateral_window"], d["sigma_spatial"], d["sigma_color"], d["connectivity"],
                            d["min_size"], "auto", "histogram", "auto")


def _same(a, b, kmeans: bool = True):
    """Two segmentations equal, features included (``kmeans``: the k-means method's colours and
    centres too; the contours method has none)."""
    assert (a.n_regions, a.n_clusters, a.info["merge_rounds"]) == (b.n_regions, b.n_clusters, b.info["merge_rounds"])
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.clusters, b.clusters)
    if kmeans:
        assert a.info["n_colours"] == b.info["n_colours"]
        np.testing.assert_array_equal(a.centres, b.centres)
    assert set(a.features) == set(b.features)
    for k in a.features:
        np.testing.assert_array_equal(a.features[k], b.features[k], err_msg=k)


@needs_emu
@pytest.mark.parametrize("per_check", [1, 8])
def test_gated_renumbering_waits_for_the_rounds(per_check):
    """queue_renumber behind rounds that did not finish leaves the labels as they were (and
    merge_finish goes on to the right result); behind finished rounds it renumbers."""
    from gpu_kernels.imseg._util import SyncCounter

    be = emu_backend()
    xp = be.xp
    img, lab = _noisy(7)
    labels, R = label_components(img, connectivity=8, device="cpu")
    h, w = labels.shape
    labels_d = xp.asarray(labels.astype(np.int32)).reshape(-1)
    lab_d = xp.asarray(np.ascontiguousarray(lab, dtype=np.float32).reshape(-1))
    total = xp.asarray(np.array([R], np.int32))
    st = M.merge_queue(be, labels_d, h * w, h, w, 40, 8, None, 3, lab_d=lab_d, rounds_per_check=per_check,
                       count_dev=total)
    M.queue_renumber(be, st)
    done = int(np.asarray(st["st"])[0])
    got = np.asarray(labels_d).reshape(h, w).copy()
    cpu, Rc, rc = M.merge_np(labels, R, lab, 40, 8)
    assert rc > 1
    if per_check < rc:
        assert done == 0
        np.testing.assert_array_equal(got, labels)  # nothing renumbered yet
        Rn, rn = M.merge_finish(be, st, syncs=SyncCounter())
        got = np.asarray(labels_d).reshape(h, w)
        assert (Rn, rn) == (Rc, rc)
    else:
        assert done == 1
    np.testing.assert_array_equal(got, cpu)


@needs_emu
@pytest.mark.parametrize("one_block", [True, False])
@pytest.mark.parametrize("seed, S", [(1, 12), (2, 40)])
def test_rounds_with_the_count_on_the_device_equal_cpu(one_block, seed, S):
    """merge_device sized for one region a pixel, the region count read on the device, in both
    round forms (md_round, and the grid kernels with R0p): the CPU's labels and counts."""
    from gpu_kernels.imseg._util import SyncCounter

    be = emu_backend()
    xp = be.xp
    img, lab = _noisy(seed)
    labels, R = label_components(img, connectivity=8, device="cpu")
    h, w = labels.shape
    labels_d = xp.asarray(labels.astype(np.int32)).reshape(-1)
    lab_d = xp.asarray(np.ascontiguousarray(lab, dtype=np.float32).reshape(-1))
    total = xp.asarray(np.array([R], np.int32))
    Rn, rn = M.merge_device(be, labels_d, h * w, h, w, S, 8, None, 3, lab_d=lab_d, syncs=SyncCounter(),
                            one_block=one_block, count_dev=total)
    cpu, Rc, rc = M.merge_np(labels, R, lab, S, 8)
    assert (Rn, rn) == (Rc, rc) and rc >= 1
    np.testing.assert_array_equal(np.asarray(labels_d).reshape(h, w), cpu)


def _noisy(seed, h=48, w=64, k=6, speckle=0.1):
    rng = np.random.default_rng(seed)
    img = (rng.integers(0, k, (h, w)) * (255 // k)).astype(np.uint8)
    img = np.kron(img[::4, ::4], np.ones((4, 4), np.uint8))[:h, :w]
    img[rng.random((h, w)) < speckle] = 255
    i16 = img.astype(np.int32)
    rgb = np.dstack([i16, (i16 * 3) % 256, 255 - i16]).astype(np.uint8)
    return img, rgb2lab(rgb, device="cpu")


def graph_runs(fn, flag: str, img, other, **kw):
    """The CUDA-graph tests' five runs of ``fn`` (``segment_image`` or ``segment_contours``, on
    "cuda"): ``ref`` and ``ref_other`` with the graphs off (``graphs.<flag>`` False), then
    ``first`` (the ordinary way, capturing the graph), ``again`` and ``swapped`` (replaying it for
    this image and another of the same shape); the capture and replay counts are checked."""
    from gpu_kernels.imseg import graphs as G

    G.clear()
    setattr(G, flag, False)
    try:
        ref = fn(img, device="cuda", **kw)
        ref_other = fn(other, device="cuda", **kw)
    finally:
        setattr(G, flag, True)
    assert "graph" not in ref.info
    before = G.stats()
    first = fn(img, device="cuda", **kw)
    assert "graph" not in first.info and G.stats()["captures"] == before["captures"] + 1
    again = fn(img, device="cuda", **kw)
    swapped = fn(other, device="cuda", **kw)
    assert again.info.get("graph") and swapped.info.get("graph")
    assert G.stats()["replays"] == before["replays"] + 2 and G.stats()["captures"] == before["captures"] + 1
    return ref, ref_other, first, again, swapped


@pytest.mark.gpu
@pytest.mark.parametrize("shape, kw", [((512, 512), {}), ((321, 481), {"min_size": 64}), ((300, 200), {"bilateral": 2}),
                                       ((256, 384), {"connectivity": 4, "k_max": 16}), ((200, 300, 0), {}),
                                       ((256, 256), {"min_size": 4}), ((200, 300), {"min_size": 2}),
                                       ((256, 256), {"min_size": 64, "per_check": 1}),
                                       ((256, 256), {"features": False}), ((256, 256), {"moments": False}),
                                       ((512, 512), {"one_block_rounds": True}),
                                       ((321, 481), {"one_block_rounds": True})])
def test_gpu_graph_replay_equals_the_ordinary_path(shape, kw, monkeypatch):
    """The first call of a shape runs the ordinary way and captures the graph; later calls
    replay it and give exactly the ordinary path's result, for this image and for another
    image of the same shape: with the features in the graph (one host read), without them
    (min_size 2: too many possible regions), and where the graph's rounds do not finish the
    merge (per_check 1: the host goes on)."""
    from gpu_kernels.imseg import graphs as G
    from gpu_kernels.imseg import segment_image

    kw = dict(kw)
    if kw.pop("one_block_rounds", False):
        monkeypatch.setattr(G, "GRID_ROUNDS", False)
    if "per_check" in kw:
        monkeypatch.setattr(M, "ROUNDS_PER_CHECK", kw.pop("per_check"))

    h, w = shape[:2]
    img = _natural(h, w)
    other = np.ascontiguousarray(img[::-1, ::-1])
    if len(shape) == 3:  # grey
        img, other = img[..., 0].copy(), other[..., 1].copy()
    ref, ref_other, first, again, swapped = graph_runs(segment_image, "ENABLED", img, other, **kw)
    from gpu_kernels.imseg import label as L

    g = G.lookup(be_cuda(), img, _params(img, kw), L.DEFAULT_GLOBAL_STEP,
                 (kw.get("features", True), kw.get("moments", True), "runs"))
    assert g is not None
    in_graph = G.feature_rows(h, w, kw.get("min_size", 512)) <= G.FEATURE_ROWS_MAX
    assert (g.feats is not None) == in_graph
    if M.ROUNDS_PER_CHECK > 1:
        assert again.syncs == 1, again.info["sync_reasons"]
    else:
        assert again.syncs > 1 and again.info["merge_rounds"] > 1
    _same(first, ref)
    _same(again, ref)
    _same(swapped, ref_other)
    cpu = segment_image(img, device="cpu", **kw)
    np.testing.assert_array_equal(again.labels, cpu.labels)


@pytest.mark.gpu
def test_gpu_graphs_alternate_shapes_and_evict():
    """Two shapes taking turns with room for one graph: every call still gives the ordinary
    result (an evicted graph's memory is not reused under a live one)."""
    from gpu_kernels.imseg import graphs as G
    from gpu_kernels.imseg import segment_image

    a, b = _natural(256, 256), _natural(192, 320)
    G.clear()
    G.ENABLED = False
    try:
        ra, rb = segment_image(a, device="cuda"), segment_image(b, device="cuda")
    finally:
        G.ENABLED = True
    old = G.MAX_GRAPHS
    G.MAX_GRAPHS = 1
    try:
        for _ in range(3):
            _same(segment_image(a, device="cuda"), ra)
            _same(segment_image(b, device="cuda"), rb)
    finally:
        G.MAX_GRAPHS = old
    G.clear()
    for _ in range(3):
        _same(segment_image(a, device="cuda"), ra)
        _same(segment_image(b, device="cuda"), rb)
    assert G.stats()["graphs"] == 2
