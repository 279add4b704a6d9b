"""The contour-following segmentation (issue 21) on the CPU, and its CUDA kernels through the
emulator: shaded regions are segmented into regions, not bands; the number of segments can
be set; bad input gets one clear line; the kernels give the CPU path's labels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import segment_image
from gpu_kernels.imseg._util import ImsegInputError
from gpu_kernels.imseg.contours import segment_contours
from gpu_kernels.imseg.metrics import evaluate


def shaded_regions(seed: int, h: int = 200, w: int = 280, cells: int = 6, ramp: float = 110.0):
    """Voronoi cells of distinct colours, each with a strong linear gradient of its own
    direction inside (``ramp`` grey levels across the image), and a little noise."""
    rng = np.random.default_rng(seed)
    pts = rng.random((cells, 2)) * (h, w)
    yy, xx = np.mgrid[:h, :w]
    truth = ((yy[..., None] - pts[:, 0]) ** 2 + (xx[..., None] - pts[:, 1]) ** 2).argmin(-1) + 1
    base = np.array([[200, 60, 60], [60, 180, 70], [60, 80, 200], [200, 190, 60], [170, 70, 190],
                     [70, 190, 190], [120, 120, 120], [230, 140, 90]], float)
    img = np.zeros((h, w, 3))
    for t in range(1, cells + 1):
        ang = rng.uniform(0, 2 * np.pi)
        r = (np.cos(ang) * xx + np.sin(ang) * yy) / max(h, w)
        m = truth == t
        img[m] = base[t - 1] + ramp * (r[m] - r[m].mean())[:, None]
    img += rng.normal(0, 2.0, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8), truth


def test_shaded_regions_are_regions_not_bands():
    """Each region's own ramp spans more grey levels than the steps between regions: ours
    follows the steps (the contours), not the shading."""
    ours, old = [], []
    for seed in range(4):
        img, truth = shaded_regions(seed, ramp=160.0)
        seg = segment_contours(img, device="cpu", features=False)
        ours.append(evaluate(seg.labels, [truth])["covering"])
        assert ours[-1] > 0.95, (seed, ours[-1])
        assert seg.n_regions <= 3 * truth.max()
        old.append(evaluate(segment_image(img, device="cpu", features=False).labels, [truth])["covering"])
    # the paper's colour quantisation cuts some of the same ramps into bands
    assert np.mean(ours) > np.mean(old) + 0.05, (ours, old)


def test_n_segments_is_exact_and_coarseness_orders_the_hierarchy():
    img, _ = shaded_regions(3, cells=8)
    for k in (1, 3, 8, 20):
        assert segment_contours(img, n_segments=k, device="cpu", features=False).n_regions == k
    counts = [segment_contours(img, coarseness=c, device="cpu", features=False).n_regions for c in (1.0, 2.5, 4.0)]
    assert counts[0] > counts[1] >= counts[2] >= 1


def test_min_area_holds_in_coarseness_mode():
    img, _ = shaded_regions(4)
    img = img.copy()
    img[50:52, 50:53] = (0, 0, 0)  # a tiny dark speck: a region of its own before the clean-up
    seg = segment_contours(img, device="cpu", features=False, coarseness=2.0)
    S = C.slic_step(*img.shape[:2], C.DEFAULT_N_SUPERPIXELS)
    assert np.bincount(seg.labels.ravel())[1:].min() >= C.min_region_area(S)


def test_features_and_labels_are_consistent():
    img, _ = shaded_regions(5)
    seg = segment_contours(img, device="cpu")
    assert seg.labels.min() == 1 and seg.labels.max() == seg.n_regions
    assert seg.features["area"].tolist() == np.bincount(seg.labels.ravel())[1:].tolist()
    first = [np.flatnonzero(seg.labels.ravel() == r)[0] for r in range(1, seg.n_regions + 1)]
    assert first == sorted(first)  # numbered in raster order of the first pixel


def test_stages_compose_to_the_pipeline():
    img, _ = shaded_regions(6)
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, device="cpu")
    mg = C.stage_merge(col, sp, coarseness=3.0, device="cpu")
    seg = C.stage_finish(col, sp, mg, device="cpu")
    ref = segment_contours(img, coarseness=3.0, device="cpu")
    np.testing.assert_array_equal(seg.labels, ref.labels)
    lab, g = C.colour_gradient(img, device="cpu")
    assert lab.shape == img.shape and g.shape == img.shape[:2]
    labels, R = C.superpixels(img, device="cpu")
    assert R == sp["R"]
    graph = C.region_graph(labels, img)
    seg_of_region, count, _ = C.merge_regions(graph, n_segments=5)
    assert count == 5 and seg_of_region.shape == (R,)


def test_lab_table_close_to_skimage():
    from skimage.color import rgb2lab

    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    ours = np.moveaxis(C.lab_planes_np(img), 0, -1)
    assert np.abs(ours - rgb2lab(img)).max() < 0.05


def test_other_dtypes_are_brought_to_8_bits():
    img, _ = shaded_regions(7, h=60, w=80)
    a = segment_contours(img, device="cpu", features=False).labels
    for other in (img.astype(np.uint16) * 257, img.astype(np.float32) / 255):
        np.testing.assert_array_equal(segment_contours(other, device="cpu", features=False).labels, a)
    grey = segment_contours(img[..., 0], device="cpu", features=False)
    assert grey.labels.shape == img.shape[:2]


@pytest.mark.parametrize("kw,match", [
    (dict(coarseness="x"), "coarseness"), (dict(coarseness=-1), "coarseness"), (dict(coarseness=11), "coarseness"),
    (dict(coarseness=math.nan), "coarseness"), (dict(n_segments=1.5), "n_segments"),
    (dict(n_segments=-2), "n_segments"), (dict(n_segments=True), "True"), (dict(n_superpixels=0), "n_superpixels"),
    (dict(compactness=-1.0), "compactness"), (dict(sigma=0.0), "sigma"), (dict(features_method="fast"), "features"),
])
def test_bad_parameters_one_line(kw, match):
    img, _ = shaded_regions(8, h=40, w=50)
    with pytest.raises(ImsegInputError, match=match) as e:
        segment_contours(img, device="cpu", **kw)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("img,match", [
    (np.zeros((0, 5, 3), np.uint8), "empty"), (np.zeros((4, 4, 2), np.uint8), "shape"),
    (np.full((4, 4), np.nan, np.float32), "NaN"), (np.full((4, 4), 2.0), r"\[0, 1\]"),
    (np.zeros((4, 4), np.complex64), "unsupported"),
])
def test_bad_images_one_line(img, match):
    with pytest.raises(ImsegInputError, match=match) as e:
        segment_contours(img, device="cpu")
    assert "\n" not in str(e.value)




@pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")
@pytest.mark.parametrize("kw", [dict(n_segments=5), dict(coarseness=3.0)])
def test_kernels_in_the_emulator_give_the_cpu_labels(kw):
    """The CUDA kernels (run on the host by tests/cuda_emu) and the NumPy path: the same
    superpixel components and the same labels, clean-up included."""
    from skimage import data, transform

    img = (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)
    be = emu_backend()
    a = segment_contours(img, device=be, n_superpixels=40, **kw)
    b = segment_contours(img, device="cpu", n_superpixels=40, **kw)
    np.testing.assert_array_equal(a.clusters, b.clusters)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.info["merge_rounds"] == b.info["merge_rounds"] and a.syncs == 2
    np.testing.assert_array_equal(a.features["area"], b.features["area"])


def test_size_guard_makes_large_merges_dearer():
    """The merge cost carries (1 + SIZE_K f^3), f = the merged area's share of the image: a
    merge covering most of the image costs several times what it would without the guard,
    a merge of two small regions almost the same (float32 costs, as the kernel's)."""
    area = np.array([100, 200, 30_000, 60_000], np.int64)
    rsum = np.array([[16 * 50, 0, 0], [16 * 52, 0, 0], [16 * 40, 0, 0], [16 * 45, 0, 0]], np.int64) * area[:, None]
    a, b = np.array([0, 2]), np.array([1, 3])
    el, eg = np.array([20, 300]), np.array([20 * 16, 300 * 16])
    npx = float(area.sum())
    plain = C.merge_cost_np(area, rsum, a, b, el, eg, 16.0, C.B0, 1e-3, npx, 0.0).astype(np.float64)
    guard = C.merge_cost_np(area, rsum, a, b, el, eg, 16.0, C.B0, 1e-3, npx, C.SIZE_K).astype(np.float64)
    f = (area[a] + area[b]) / npx
    np.testing.assert_allclose(guard / plain, 1 + C.SIZE_K * f ** 3, rtol=1e-6)
    assert guard[0] / plain[0] < 1.001 and guard[1] / plain[1] > 5
