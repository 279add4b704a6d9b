"""Session 9 (issue 21, speed half): the deferred stages' counters are changed under a lock
(the window's worker, batch threads and tests count at once)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from cuda_emu import available, emu_backend

from gpu_kernels.imseg import deferred as D
from gpu_kernels.imseg import segment as SG

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


class _Guarded(dict):
    """A counters dict that records every write made without ``deferred._STATS_LOCK`` held."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.unlocked: list[str] = []

    def __setitem__(self, k, v):
        if not D._STATS_LOCK.locked():
            self.unlocked.append(k)
        super().__setitem__(k, v)


@pytest.fixture
def guarded(monkeypatch):
    g = _Guarded(D._STATS)
    monkeypatch.setattr(D, "_STATS", g)
    return g


def test_forced_counts_from_many_threads_are_all_kept_and_locked(guarded):
    """Eight threads force 2000 deferred outputs each: every count lands, and each under the
    lock (fails where ``forced`` is counted with a bare ``+=``)."""
    before = D.stats()["forced"]
    outs = [[D.Deferred("lab", lambda: 1, {}) for _ in range(2000)] for _ in range(8)]

    def force(chunk):
        for d in chunk:
            d.value()

    threads = [threading.Thread(target=force, args=(c,)) for c in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert D.stats()["forced"] == before + 16000
    assert guarded.unlocked == []


@needs_emu
def test_chain_and_direct_counts_are_locked(guarded, monkeypatch):
    """The stages' chain count and full_run's chain/direct counts are made under the lock
    (the library call itself is a stand-in here: only the counting is under test)."""
    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    sentinel = object()
    monkeypatch.setattr(SG, "segment_image", lambda *a, **kw: sentinel)
    img = np.zeros((8, 8, 3), np.uint8)
    s0 = D.stats()
    lt = D.lab(img, bilateral=0, bilateral_window=5, sigma_spatial=2.0, sigma_color=6.0, device=be)
    qt = D.codes(lt, q=5, device=be)
    km = D.kmeans(qt, k_max=8, iterations=2, merge_distance=18.0, device=be)
    assert D.regions(qt, km, connectivity=8, min_size=4, device=be) is sentinel
    p = {"method": "kmeans", "bilateral": 0, "bilateral_window": 5, "sigma_spatial": 2.0, "sigma_color": 6.0,
         "q": 5, "k_max": 8, "iterations": 2, "merge_distance": 18.0, "connectivity": 8, "min_size": 4}
    assert D.full_run(img, p, device=be) is sentinel
    s1 = D.stats()
    assert (s1["chains"] - s0["chains"], s1["direct"] - s0["direct"]) == (2, 1)
    assert guarded.unlocked == []


# --------------------------------------------------------------------------- block-private feature sums
def _feature_labels(rng, h, w, kind):
    """Label images that exercise the block tables: few large regions with background (0)
    pixels, many regions a block (more than the table's slots: the global fallback), and one
    region a pixel (every run a new label)."""
    if kind == "few":
        lab = rng.integers(1, 6, size=((h + 15) // 16, (w + 15) // 16)).repeat(16, 0).repeat(16, 1)[:h, :w]
        lab[rng.random((h, w)) < 0.05] = 0
    elif kind == "halves":   # two large regions: per-block moment sums past 2^48 (every digit used)
        lab = np.ones((h, w), np.int64)
        lab[:, w // 2:] = 2
        lab[h // 3, :7] = 3
    elif kind == "many":
        lab = rng.integers(1, 400, size=((h + 1) // 2, (w + 1) // 2)).repeat(2, 0).repeat(2, 1)[:h, :w]
    else:
        lab = np.arange(1, h * w + 1).reshape(h, w)
    return np.ascontiguousarray(lab.astype(np.int32))


def _features_gpu(be, lab, img, method="runs", chunk=None, monkeypatch=None):
    from gpu_kernels.imseg import features as F

    h, w = lab.shape
    c = 1 if img.ndim == 2 else img.shape[2]
    if chunk is not None:
        monkeypatch.setattr(F, "SMEM_CHUNK", chunk)
        monkeypatch.setattr(F, "SMEM_CHUNK_BIG", chunk)
    f = F.features_device(be, be.xp.asarray(lab).ravel(), int(lab.max()), h, w, be.xp.asarray(img), c, method, True)
    return {k: np.asarray(v.get() if hasattr(v, "get") else v) for k, v in f.items()}


def _equal(a, b):
    assert set(a) == set(b)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _equal_cpu(gpu, lab, img):
    """The GPU's features against the CPU path's (features_np) on the labels present: label,
    area, box, centroid and (integer images) the mean colour bit for bit (exact integer sums on
    both sides); the central moments to the tolerance of test_imseg_gpu.py (the GPU's 128-bit
    integer sums against float64 bincounts); the CIELAB means within 5e-4 (the kernels' CIELAB of
    a pixel may differ from lab_np's in the last bits of a float32, which a and b scale by 500;
    regions of one pixel do not average that out: 1.2e-4 seen)."""
    from gpu_kernels.imseg import features as F

    cpu = F.features_np(lab, int(lab.max()), img, moments=True)
    assert set(cpu) == set(gpu)
    present = cpu["area"] > 0   # absent labels: the GPU leaves the box's initial values
    exact = ["label", "area", "bbox", "centroid"] + (["intensity_mean"] if img.dtype != np.float32 else [])
    for k in exact:
        np.testing.assert_array_equal(gpu[k][present], cpu[k][present], err_msg=k)
    if img.dtype == np.float32:
        np.testing.assert_allclose(gpu["intensity_mean"][present], cpu["intensity_mean"][present], rtol=1e-12)
    np.testing.assert_allclose(gpu["intensity_mean_lab"][present], cpu["intensity_mean_lab"][present], atol=5e-4)
    mu_g, mu_c = gpu["moments_central"][present], cpu["moments_central"][present]
    np.testing.assert_allclose(mu_g, mu_c, rtol=1e-7, atol=1e-6 * np.abs(mu_c).max() + 1e-6)


@needs_emu
@pytest.mark.parametrize("kind, h, w, dtype, chunk", [
    ("few", 40, 70, np.uint8, 8), ("many", 33, 61, np.uint8, 4), ("pixels", 17, 23, np.uint16, 8),
    ("few", 24, 37, np.float32, 3), ("many", 20, 50, "grey", 16), ("halves", 160, 300, np.uint8, 8),
    ("few", 60, 90, np.uint16, 32)])
def test_emulated_block_table_sums_equal_the_cpu_and_the_sorted_kernels(kind, h, w, dtype, chunk, monkeypatch):
    """feat_pass1_smem / feat_moments_digits (the raster method) against the CPU path, also where
    a block sees more regions than its table holds and with background pixels; and bit for bit
    against the sorted method's kernels (feat_pass1_* / feat_moments_exact through the label
    order: integer sums, float raw sums of these small images exact too), a second GPU path."""
    rng = np.random.default_rng(h * w)
    lab = _feature_labels(rng, h, w, kind)
    if dtype == "grey":
        img = rng.integers(0, 256, size=(h, w)).astype(np.uint8)
    elif dtype is np.float32:
        img = (rng.integers(0, 256, size=(h, w, 3)) / 256.0).astype(np.float32)
    else:
        img = rng.integers(0, np.iinfo(dtype).max, size=(h, w, 3)).astype(dtype)
    be = emu_backend()
    runs = _features_gpu(be, lab, img, chunk=chunk, monkeypatch=monkeypatch)
    _equal_cpu(runs, lab, img)
    _equal(_features_gpu(be, lab, img, method="sort"), runs)


@needs_emu
def test_emulated_merge_sums_through_the_block_table():
    """The merge's sums (area and CIELAB, pass1 with FT_LAB) through the table: bit for bit the
    sorted kernel's; the CPU's area, and its CIELAB integers (merge.py's: rint(L * LAB_SCALE) a
    pixel, added up) within one unit a pixel (the kernel's CIELAB of the 8-bit pixels may differ
    from lab_np's in the last bit of a float32)."""
    from gpu_kernels.imseg import color as C
    from gpu_kernels.imseg import features as F

    be = emu_backend()
    rng = np.random.default_rng(9)
    h, w = 30, 45
    lab = _feature_labels(rng, h, w, "many")
    img = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
    lab_d = be.xp.asarray(lab).ravel()
    acc = F.pass1_device(be, lab_d, h * w, h, w, be.xp.asarray(img), 3, F.FT_LAB)
    got = {k: np.asarray(v).copy() for k, v in acc.items()}
    order = be.xp.asarray(np.argsort(lab.ravel(), kind="stable").astype(np.int32))
    acc_s = F.pass1_device(be, lab_d, h * w, h, w, be.xp.asarray(img), 3, F.FT_LAB, order=order)
    _equal(got, {k: np.asarray(v).copy() for k, v in acc_s.items()})
    flat = lab.ravel()
    area = np.bincount(flat, minlength=h * w + 1)[1:]
    np.testing.assert_array_equal(got["area"], area)
    fixed = np.rint(C.lab_np(img).reshape(-1, 3).astype(np.float64) * F.LAB_SCALE).astype(np.int64)
    want = np.zeros((h * w + 1, 3), np.int64)
    np.add.at(want, flat, fixed)
    diff = np.abs(got["lab_sum"].reshape(-1, 3) - want[1:])
    assert (diff <= area[:, None]).all() and diff.sum() < 0.01 * np.abs(want).sum()


@pytest.mark.gpu
@pytest.mark.parametrize("case", ["kmeans512", "random4k", "pixels"])
def test_gpu_block_table_sums_equal_the_cpu_and_the_sorted_kernels(case, monkeypatch):
    """On the GPU: the raster method's features against the CPU path and bit for bit against the
    sorted method's, on the k-means pipeline's labels at 512^2, on 4K blocky random labels (12k
    regions) and on one region a pixel, for every chunk size (2 to 32: 8 is the default up to
    1 Mpx, 32 above)."""
    from test_imseg_session6 import _natural

    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    rng = np.random.default_rng(3)
    if case == "kmeans512":
        img = _natural(512, 512)
        lab = SG.segment_image(img, device="cpu", features=False).labels.astype(np.int32)
    elif case == "random4k":
        img = rng.integers(0, 256, size=(2160, 3840, 3)).astype(np.uint8)
        lab = rng.integers(1, 12000, size=(135, 240)).astype(np.int32).repeat(16, 0).repeat(16, 1)
    else:
        img = rng.integers(0, 256, size=(300, 400, 3)).astype(np.uint8)
        lab = _feature_labels(rng, 300, 400, "pixels")
    sort = _features_gpu(be, lab, img, method="sort")
    _equal_cpu(sort, lab, img)
    for chunk in (2, 4, 8, 16, 32):
        _equal(_features_gpu(be, lab, img, chunk=chunk, monkeypatch=monkeypatch), sort)


# --------------------------------------------------------------------------- codes through a block table
def _codes_gpu(be, img, q, monkeypatch, chunk=8, lab=None):
    from gpu_kernels.imseg import color as C

    h, w = img.shape[:2]
    c = 1 if img.ndim == 2 else img.shape[2]
    monkeypatch.setattr(C, "CODES_CHUNK", chunk)
    hist = be.xp.zeros(1 << (3 * q), dtype=be.xp.uint32)
    lab_d = be.xp.asarray(lab).ravel() if lab is not None else None
    codes = C.codes_device(be, None if lab is not None else be.xp.asarray(img), h * w, c, q, hist=hist, lab_d=lab_d)
    return (np.asarray(codes.get() if hasattr(codes, "get") else codes).copy(),
            np.asarray(hist.get() if hasattr(hist, "get") else hist).copy())


@needs_emu
@pytest.mark.parametrize("kind, q, chunk", [("flat", 5, 8), ("noise", 7, 4), ("grey", 3, 1), ("lab", 5, 8),
                                            ("u16", 6, 8)])
def test_emulated_codes_block_table_equal_the_cpu(kind, q, chunk, monkeypatch):
    """codes_smem_* / codes_lab_smem: the CPU's codes and their histogram, for a flat image (one
    code: the table's one slot), noise at q 7 (more codes a block than its table holds: the
    fallback) and grey, u16 and CIELAB inputs."""
    from gpu_kernels.imseg import color as C

    rng = np.random.default_rng(q)
    h, w = 37, 58
    lab = None
    if kind == "flat":
        img = np.full((h, w, 3), (40, 120, 200), np.uint8)
    elif kind == "grey":
        img = rng.integers(0, 256, size=(h, w)).astype(np.uint8)
    elif kind == "u16":
        img = rng.integers(0, 65536, size=(h, w, 3)).astype(np.uint16)
    else:
        img = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
    if kind == "lab":
        lab = C.lab_np(img).astype(np.float32)
    codes, hist = _codes_gpu(emu_backend(), img, q, monkeypatch, chunk, lab)
    want = C.codes_np(lab if lab is not None else C.lab_np(img), q).ravel()
    np.testing.assert_array_equal(codes, want)
    np.testing.assert_array_equal(hist, np.bincount(want, minlength=1 << (3 * q)))


@pytest.mark.gpu
@pytest.mark.parametrize("q", [5, 7])
def test_gpu_codes_block_table_equal_the_cpu(q, monkeypatch):
    from test_imseg_session6 import _natural

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import color as C

    img = _natural(512, 512)
    want = C.codes_np(C.lab_np(img), q).ravel()
    for chunk in (1, 4, 8, 16):
        codes, hist = _codes_gpu(get_backend("cuda"), img, q, monkeypatch, chunk)
        np.testing.assert_array_equal(codes, want)
        np.testing.assert_array_equal(hist, np.bincount(want, minlength=1 << (3 * q)))


# --------------------------------------------------------------------------- k-means with 32-bit sums
@needs_emu
@pytest.mark.parametrize("k_max, iterations, merge_distance, q", [(64, 3, 18.0, 5), (16, 0, 5.0, 4),
                                                                   (200, 7, 2.0, 5), (1, 2, 18.0, 3)])
def test_emulated_kmeans_fused32_equals_the_cpu(k_max, iterations, merge_distance, q):
    """kmeans_fused (32-bit shared sums with carries) and init_centres_fast (one lane's search up
    to 32 candidates, the warp's after: k_max 200 at merge distance 2 goes past 32) give the
    CPU's clusters and centres bit for bit."""
    from imseg_masks import piecewise_image

    from gpu_kernels.imseg import kmeans as K

    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(3), 40, 56, noise=12.0, shading=True)
    kw = dict(k_max=k_max, iterations=iterations, merge_distance=merge_distance, q=q)
    cc, ec = K.kmeans_quantized(img, device="cpu", **kw)
    c, e = K.kmeans_quantized(img, device=be, **kw)
    np.testing.assert_array_equal(c, cc)
    np.testing.assert_array_equal(e, ec)


def _kmeans_np_weights(codes, h, w, q, k_max, iterations, merge_distance, hist):
    """kmeans.kmeans_np with the colour weights given (``hist``, one per code): the CPU path's
    steps (initial centres, exact integer centroid sums, assignment)."""
    from gpu_kernels.imseg import color as C
    from gpu_kernels.imseg import kmeans as K

    occ = np.flatnonzero(hist).astype(np.int32)
    wts = hist[occ].astype(np.int64)
    centres = K._init_centres_np(codes, h, w, k_max, q, merge_distance * merge_distance)
    cc = C.code_centres(occ, q)
    for _ in range(iterations):
        centres = K._update_np(occ, wts, K._assign_np(cc, centres), centres, q)
    table = np.zeros(1 << (3 * q), np.int32)
    table[occ] = K._assign_np(cc, centres)
    return table[codes.ravel()], centres


@needs_emu
def test_emulated_kmeans_fused32_carries_into_the_high_word():
    """Weights of billions of pixels (a histogram made up for the test) make the low words
    overflow many times: the 32-bit sums with their carries still give the CPU's exact integer
    sums (centres and clusters)."""
    from gpu_kernels.imseg import color as C
    from gpu_kernels.imseg import kmeans as K

    be = emu_backend()
    xp = be.xp
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, size=(24, 32, 3)).astype(np.uint8)
    h, w = img.shape[:2]
    q = 5
    hist = xp.zeros(1 << (3 * q), dtype=xp.uint32)
    codes = C.codes_device(be, xp.asarray(img), h * w, 3, q, hist=hist)
    codes_h = np.asarray(codes).copy()
    made_up = np.where(np.asarray(hist) > 0, np.uint32(4_000_000_000) - np.asarray(hist) * 7919, 0).astype(np.uint32)
    assert made_up.astype(np.int64).sum() > 100 * (1 << 32)   # the low words overflow
    hist[...] = made_up
    cl, centres, k_d, _ = K.kmeans_device(be, codes, h, w, q, 8, 3, 18.0, hist, "histogram")
    k = int(np.asarray(k_d)[0])
    want_cl, want_centres = _kmeans_np_weights(codes_h, h, w, q, 8, 3, 18.0, made_up)
    np.testing.assert_array_equal(np.asarray(cl), want_cl)
    np.testing.assert_array_equal(np.asarray(centres)[:k], want_centres)


@pytest.mark.gpu
@pytest.mark.parametrize("k_max, iterations, q", [(64, 3, 5), (256, 10, 5), (1024, 3, 4), (64, 0, 5)])
def test_gpu_kmeans_fused32_equals_the_cpu(k_max, iterations, q):
    from test_imseg_session6 import _natural

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import kmeans as K

    img = _natural(320, 480)
    kw = dict(k_max=k_max, iterations=iterations, merge_distance=6.0, q=q)
    cc, ec = K.kmeans_quantized(img, device="cpu", **kw)
    c, e = K.kmeans_quantized(img, device=get_backend("cuda"), **kw)
    np.testing.assert_array_equal(c, cc)
    np.testing.assert_array_equal(e, ec)


@needs_emu
def test_emulated_moment_digits_round_trip_128_bit_values():
    """feat_moments_digits' split of a 128-bit sum into balanced 16-bit digits and its rebuild:
    exact (in 128-bit two's complement) for values of either sign up to about 2^120, added up
    to 3000 times (more than a block adds to one slot word)."""
    from gpu_kernels.imseg._util import kernel

    be = emu_backend()
    rng = np.random.default_rng(11)
    vals = [0, 1, -1, 5, -5, 32767, -32768, 65535, 1 << 47, -(1 << 47), (1 << 64) + 3, -(1 << 100) - 7,
            (1 << 119) - 12345, -(1 << 119)]
    vals += [int(v) * (1 << int(s)) * int(sg) for v, s, sg in zip(rng.integers(1, 1 << 62, 40), rng.integers(0, 58, 40),
                                                               rng.choice([-1, 1], 40), strict=True)]
    fn = kernel(be, "imseg_features.cu", "fd_roundtrip")
    for reps in (1, 3000):
        words = np.array([[v & ((1 << 64) - 1), (v >> 64) & ((1 << 64) - 1)] for v in vals], np.uint64)
        out = np.zeros_like(words)
        fn((1,), (len(vals),), (words.ravel(), out.ravel(), np.int32(len(vals)), np.int32(reps)))
        got = [int(lo) + (int(hi) << 64) for lo, hi in out]
        want = [(v * reps) % (1 << 128) for v in vals]   # two's complement in 128 bits
        assert got == want


# --------------------------------------------------------------------------- host fast paths
@pytest.mark.parametrize("args", [(5, 2.0, 6.0, 0), (3, 0.5, 1e-3, 50), (17, 1e6, 3.0, 7)])
def test_check_bilateral_fast_path_equals_the_checks(args):
    from gpu_kernels.imseg import color as C

    fast = C.check_bilateral(*args)
    slow = C.check_bilateral(np.int64(args[0]), np.float64(args[1]), np.float64(args[2]), np.int64(args[3]))
    assert fast == slow and [type(v) for v in fast] == [type(v) for v in slow] == [int, float, float, int]


@pytest.mark.parametrize("args", [(4, 2.0, 6.0, 0), (19, 2.0, 6.0, 0), (1, 2.0, 6.0, 0), (5, float("nan"), 6.0, 0),
                                  (5, 2.0, float("inf"), 0), (5, -1.0, 6.0, 0), (5, 0.0, 6.0, 0), (5, 2.0, 6.0, 51),
                                  (5, 2.0, 6.0, -1)])
def test_check_bilateral_fast_path_refuses_what_the_checks_refuse(args):
    from gpu_kernels.imseg import ImsegInputError
    from gpu_kernels.imseg import color as C

    with pytest.raises(ImsegInputError):
        C.check_bilateral(*args)


@pytest.mark.parametrize("args, ok", [((64, 3, 18.0), True), ((1, 0, 0.0), True), ((1024, 100, 1e9), True),
                                      ((0, 3, 18.0), False), ((1025, 3, 18.0), False), ((64, 101, 18.0), False),
                                      ((64, -1, 18.0), False), ((64, 3, -0.5), False), ((64, 3, float("nan")), False),
                                      ((64, 3, float("inf")), False)])
def test_check_kmeans_fast_path(args, ok):
    from gpu_kernels.imseg import ImsegInputError
    from gpu_kernels.imseg import kmeans as K

    if not ok:
        with pytest.raises(ImsegInputError):
            K.check_kmeans(*args)
        return
    fast = K.check_kmeans(*args)
    slow = K.check_kmeans(np.int64(args[0]), np.int64(args[1]), np.float64(args[2]))
    assert fast == slow and [type(v) for v in fast] == [type(v) for v in slow] == [int, int, float]


@pytest.mark.parametrize("shape", [(7, 9, 3), (7, 9, 4), (1, 1, 3)])
def test_as_image_fast_path_equals_the_checks(shape):
    from gpu_kernels.imseg._util import as_image

    img = np.random.default_rng(0).integers(0, 256, size=shape).astype(np.uint8)
    a, h, w, c = as_image(img)
    b = as_image(img.view(type("Sub", (np.ndarray,), {})))   # a subclass takes the general path
    assert a is img and (h, w, c) == b[1:] and [type(v) for v in (h, w, c)] == [int, int, int]
    np.testing.assert_array_equal(a, b[0])


def test_feature_chunk_by_image_size():
    """8 pixels a thread up to 1 Mpx, 32 above (the H100 timings in features.py)."""
    from gpu_kernels.imseg import features as F

    assert F._smem_chunk(512 * 512) == F.SMEM_CHUNK == 8
    assert F._smem_chunk(1 << 20) == 8 and F._smem_chunk((1 << 20) + 1) == F._smem_chunk(3840 * 2160) == 32
