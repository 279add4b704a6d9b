"""GPU (CuPy) against the CPU path and the independent references, stage by stage, on sizes
that exercise every level of the union-find's global step. Run with ``pytest -m gpu`` on a
GPU host (numpy, scipy, scikit-image, cupy, pytest only)."""

from __future__ import annotations

import numpy as np
import pytest
from imseg_masks import adversarial, piecewise_image, random_mask, random_values
from scipy import ndimage as ndi
from skimage import data, transform
from skimage.measure import regionprops_table

from gpu_kernels.imseg import (
    bilateral_lab,
    kmeans_quantized,
    label_components,
    merge_small_regions,
    region_features,
    rgb2lab,
    segment_image,
)
from gpu_kernels.imseg.color import quantize_lab

pytestmark = pytest.mark.gpu
STRUCT = {4: ndi.generate_binary_structure(2, 1), 8: ndi.generate_binary_structure(2, 2)}


def natural(h=256, w=256):
    img = transform.resize(data.astronaut(), (h, w), anti_aliasing=True, preserve_range=True)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def test_lab_bilateral_codes_gpu_vs_cpu():
    from skimage.color import rgb2lab as sk

    img = natural(200, 300)
    lab_g = rgb2lab(img, device="cuda")
    assert np.abs(lab_g - sk(img)).max() < 1e-3
    lab_c = rgb2lab(img, device="cpu")
    assert np.abs(lab_g - lab_c).max() < 1e-4
    b_g = bilateral_lab(lab_c, passes=5, device="cuda")
    b_c = bilateral_lab(lab_c, passes=5, device="cpu")
    assert np.abs(b_g - b_c).max() < 1e-3
    np.testing.assert_array_equal(quantize_lab(lab_c, device="cuda"), quantize_lab(lab_c, device="cpu"))


@pytest.mark.parametrize("weights", ["histogram", "sort"])
def test_kmeans_gpu_equals_cpu_on_the_same_lab(weights):
    img = natural(240, 320)
    lab = rgb2lab(img, device="cpu")
    cg, eg = kmeans_quantized(img, lab=lab, weights=weights, device="cuda")
    cc, ec = kmeans_quantized(img, lab=lab, device="cpu")
    np.testing.assert_array_equal(cg, cc)
    np.testing.assert_allclose(eg, ec, rtol=0, atol=1e-12)


def test_kmeans_recovers_known_colour_regions_on_gpu():
    img, truth = piecewise_image(np.random.default_rng(0), 300, 400, noise=4.0)
    cl, centres = kmeans_quantized(img, device="cuda")
    assert len(centres) >= 4
    # every true region is (almost all) one cluster, and different regions different clusters
    major = [np.bincount(cl[truth == t]).argmax() for t in range(1, 5)]
    assert len(set(major)) == 4
    assert all((cl[truth == t] == major[t - 1]).mean() > 0.99 for t in range(1, 5))


@pytest.mark.parametrize("method,global_step", [("unionfind", "levels"), ("unionfind", "single"),
                                                ("equivalence", "levels")])
@pytest.mark.parametrize("conn", [4, 8])
def test_labelling_equals_scipy_random_and_adversarial(method, global_step, conn):
    rng = np.random.default_rng(conn)
    masks = {f"random{p}": random_mask(rng, 1000, 1037, p) for p in (0.3, 0.5, 0.6)}
    masks.update(adversarial(1030))
    masks["blocky4k"] = np.kron(random_mask(rng, 135, 240, 0.5), np.ones((16, 16), np.uint8))
    for name, m in masks.items():
        binary = (m > 0).astype(np.uint8)
        labels, n = label_components(binary, connectivity=conn, background=0, method=method,
                                     global_step=global_step, device="cuda")
        ref, nr = ndi.label(binary, structure=STRUCT[conn])
        assert n == nr, f"{name}: {n} vs scipy {nr}"
        np.testing.assert_array_equal(labels, ref, err_msg=name)


@pytest.mark.parametrize("conn", [4, 8])
def test_labelling_multivalue_gpu_equals_cpu(conn):
    rng = np.random.default_rng(7)
    for img in (random_values(rng, 777, 1100, k=3), random_values(rng, 1, 5000, k=2),
                random_values(rng, 3000, 1, k=2), adversarial(500)["double_comb"].astype(np.int32)):
        g, ng = label_components(img, connectivity=conn, device="cuda")
        c, nc = label_components(img, connectivity=conn, device="cpu")
        assert ng == nc
        np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("method", ["runs", "sort"])
def test_features_gpu_equal_regionprops(method):
    img = natural(300, 420)
    cl, _ = kmeans_quantized(img, device="cpu")
    labels, n = label_components(cl, connectivity=8, device="cpu")
    f = region_features(labels, img, method=method, device="cuda")
    ref = regionprops_table(labels, img, properties=("label", "area", "bbox", "centroid", "intensity_mean",
                                                     "moments_central"))
    np.testing.assert_array_equal(f["area"], ref["area"])
    for i in range(4):
        np.testing.assert_array_equal(f["bbox"][:, i], ref[f"bbox-{i}"])
    for i in range(2):
        np.testing.assert_allclose(f["centroid"][:, i], ref[f"centroid-{i}"], rtol=1e-12, atol=1e-9)
    for i in range(3):
        np.testing.assert_allclose(f["intensity_mean"][:, i], ref[f"intensity_mean-{i}"], rtol=1e-9, atol=1e-9)
    for i in range(4):
        for j in range(4):
            r = ref[f"moments_central-{i}-{j}"]
            np.testing.assert_allclose(f["moments_central"][:, i, j], r, rtol=1e-7,
                                       atol=1e-6 * np.abs(r).max() + 1e-6)
    c = region_features(labels, img, device="cpu")
    np.testing.assert_allclose(f["intensity_mean_lab"], c["intensity_mean_lab"], atol=1e-4)


def test_merge_gpu_equals_cpu_and_holds():
    img = natural(256, 256)
    lab = rgb2lab(img, device="cpu")
    cl, _ = kmeans_quantized(img, lab=lab, device="cpu")
    labels, n = label_components(cl, connectivity=8, device="cpu")
    for S in (16, 200):
        g, ng, rg = merge_small_regions(labels, lab, min_size=S, device="cuda")
        c, nc, rc = merge_small_regions(labels, lab, min_size=S, device="cpu")
        assert (ng, rg) == (nc, rc)
        np.testing.assert_array_equal(g, c)
        assert np.bincount(g.ravel())[1:].min() >= S


def test_pipeline_gpu_vs_cpu_and_sync_count():
    img = natural(384, 512)
    g = segment_image(img, device="cuda", min_size=64)
    c = segment_image(img, device="cpu", min_size=64)
    from gpu_kernels.imseg.merge import ROUNDS_PER_CHECK

    # one read of the merge's "done" flag per ROUNDS_PER_CHECK rounds (which brings the region
    # count too, at this size: no read before the merge)
    assert g.syncs == max(1, -(-g.info["merge_rounds"] // ROUNDS_PER_CHECK)), g.info["sync_reasons"]
    assert (g.labels == c.labels).mean() > 0.995
    assert abs(g.n_regions - c.n_regions) <= max(2, 0.01 * c.n_regions)
    assert np.bincount(g.labels.ravel())[1:].min() >= 64
    assert set(g.timings) >= {"quantise", "kmeans", "labelling", "features", "total"}
    g0 = segment_image(img, device="cuda", min_size=0, bilateral=5)
    assert g0.syncs == 1
    c0 = segment_image(img, device="cpu", min_size=0, bilateral=5)
    assert (g0.labels == c0.labels).mean() > 0.99


def test_pipeline_grey_rgba_uint16_float_on_gpu():
    img = natural(100, 130)
    for x in (img[..., 0], np.dstack([img, np.full(img.shape[:2], 7, np.uint8)]), img.astype(np.uint16) * 257,
              img.astype(np.float32) / 255):
        g = segment_image(x, device="cuda")
        c = segment_image(x, device="cpu")
        assert (g.labels == c.labels).mean() > 0.99


def test_pipeline_runs_ahead_of_the_device(monkeypatch):
    """Nothing before the first counted read-back waits for the GPU: with a 0.3 s kernel
    queued ahead of the pipeline, the host gets to that read-back long before it ends."""
    import time

    import cupy as cp

    from gpu_kernels.imseg import _util

    spin = cp.RawKernel(r"""
    extern "C" __global__ void spin(long long cycles, int* out) {
        long long t0 = clock64();
        while (clock64() - t0 < cycles) {}
        out[0] = 1;
    }""", "spin")
    img = cp.asarray(natural(512, 512))
    flag = cp.zeros(1, cp.int32)
    clock_hz = cp.cuda.runtime.getDeviceProperties(0)["clockRate"] * 1e3
    segment_image(img, device="cuda", min_size=64)  # warm-up: compiled kernels, pooled memory
    cp.cuda.get_current_stream().synchronize()
    seen = []
    real_read, real_many = _util.SyncCounter.read, _util.SyncCounter.read_many

    def read(self, be, a, reason=""):
        seen.append((time.perf_counter(), reason))
        return real_read(self, be, a, reason)

    def read_many(self, be, arrays, reason=""):
        seen.append((time.perf_counter(), reason))
        return real_many(self, be, arrays, reason)

    monkeypatch.setattr(_util.SyncCounter, "read", read)
    monkeypatch.setattr(_util.SyncCounter, "read_many", read_many)
    t0 = time.perf_counter()
    spin((1,), (1,), (np.int64(0.3 * clock_hz), flag))
    seg = segment_image(img, device="cuda", min_size=64)
    t_end = time.perf_counter()
    # 512^2: the merge is queued without reading the region count; its done flag is the first read
    assert seen and seen[0][1].startswith("min-size merge: done")
    assert seen[0][0] - t0 < 0.15, f"the host reached the first read-back after {seen[0][0] - t0:.3f} s"
    assert t_end - t0 > 0.25  # and the read-back did wait for the spin kernel
    assert seg.syncs == len(seen)
