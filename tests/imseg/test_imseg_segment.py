"""segment_image end to end: result shape, bad inputs with one-line errors, progress and
cancel, the emulated GPU path against the CPU path, the doctests of the package."""

from __future__ import annotations

import doctest
import importlib

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from imseg_masks import piecewise_image

from app.io.image_io import ImageReadError, read_image
from gpu_kernels.imseg import ImsegInputError, segment_image
from gpu_kernels.imseg.segment import DEFAULT_MIN_SIZE
from gpu_kernels.jobs import Cancelled, Progress

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def test_result_is_complete_and_consistent():
    img, truth = piecewise_image(np.random.default_rng(0), 60, 80, noise=3.0)
    seg = segment_image(img, device="cpu")
    assert seg.labels.shape == (60, 80) and seg.labels.dtype == np.int32
    assert seg.labels.min() == 1 and seg.labels.max() == seg.n_regions
    assert seg.clusters.shape == (60, 80) and seg.clusters.max() < seg.n_clusters == len(seg.centres)
    f = seg.features
    assert f["area"].sum() == 60 * 80 and len(f["label"]) == seg.n_regions
    assert {"bilateral", "quantise", "kmeans", "labelling", "min_size", "features", "total"} <= set(seg.timings)
    assert seg.syncs == 0 and seg.info["params"]["min_size"] == DEFAULT_MIN_SIZE
    table = seg.region_table()
    assert table["moments_central-0-0"].tolist() == f["area"].tolist()


@pytest.mark.parametrize("image,match", [
    (np.zeros((0, 0, 3), np.uint8), "empty"),
    (np.zeros((5, 0), np.uint8), "empty"),
    (np.zeros((4, 4, 2), np.uint8), "shape"),
    (np.zeros((4, 4, 3), np.int16), "pixel type"),
    (np.full((4, 4), 1.5, np.float32), r"\[0, 1\]"),
    (np.full((4, 4), np.nan, np.float64), "NaN"),
    (np.zeros((2, 3, 4, 5), np.uint8), "shape"),
])
def test_bad_images_one_line(image, match):
    with pytest.raises(ImsegInputError, match=match) as ei:
        segment_image(image, device="cpu")
    assert "\n" not in str(ei.value)


@pytest.mark.parametrize("kw,match", [
    ({"k_max": 10**7}, "k_max"), ({"q": 8}, "q"), ({"connectivity": 6}, "connectivity"), ({"min_size": -1}, "min_size"),
    ({"bilateral": 2, "bilateral_window": 6}, "odd"), ({"label_method": "unionfind"}, "GPU"),
    ({"weights": "magic"}, "weights"),
])
def test_bad_parameters_one_line(kw, match):
    with pytest.raises(ImsegInputError, match=match):
        segment_image(np.zeros((8, 8, 3), np.uint8), device="cpu", **kw)


def test_sensible_results_for_tiny_images():
    one = segment_image(np.array([[7]], np.uint8), device="cpu")
    assert one.n_regions == 1 and one.features["bbox"].tolist() == [[0, 0, 1, 1]]
    row = segment_image(np.tile(np.array([[0, 0, 255, 255, 0]], np.uint8), (1, 3)), min_size=0, device="cpu")
    assert row.labels.tolist() == [[1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 7]] or row.n_regions >= 5
    col = segment_image(np.zeros((9, 1, 3), np.uint8), device="cpu")
    assert col.n_regions == 1


def test_corrupt_file_is_a_clear_error(tmp_path):
    p = tmp_path / "bad.jpg"
    p.write_bytes(b"\xff\xd8\xff\xe0 this is not a JPEG")
    with pytest.raises(ImageReadError) as ei:
        read_image(p)
    assert "bad.jpg" in str(ei.value) and "\n" not in str(ei.value)


def test_progress_and_cancel():
    img, _ = piecewise_image(np.random.default_rng(1), 40, 50, noise=2.0)
    seen = []
    segment_image(img, device="cpu", progress=lambda f, s: seen.append((f, s)))
    assert seen[-1][0] == 1.0 and any("k-means" in s for _, s in seen)
    p = Progress(min_interval=0)
    p.cancel()
    with pytest.raises(Cancelled):
        segment_image(img, device="cpu", progress=p)


@pytest.mark.parametrize("module", ["color", "kmeans", "label", "features", "merge", "segment", "metrics", "vis",
                                    "deferred"])
def test_doctests(module):
    m = importlib.import_module(f"gpu_kernels.imseg.{module}")
    res = doctest.testmod(m, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


@needs_emu
@pytest.mark.parametrize("kw", [{}, pytest.param({"bilateral": 2, "min_size": 20, "connectivity": 4},
                                                 marks=pytest.mark.slow)])
def test_emulated_gpu_pipeline_equals_cpu(kw):
    be = emu_backend()
    img, _ = piecewise_image(np.random.default_rng(2), 34, 47, noise=5.0, shading=True)
    g = segment_image(img, device=be, **kw)
    c = segment_image(img, device="cpu", **kw)
    assert g.n_regions == c.n_regions and g.n_clusters == c.n_clusters
    assert (g.labels == c.labels).mean() > 0.995
    from gpu_kernels.imseg.merge import ROUNDS_PER_CHECK

    # one read of the merge's "done" flag per ROUNDS_PER_CHECK rounds, which brings the region
    # count too (small images: no read before the merge); without merging, the count alone
    merge_reads = max(1, -(-g.info["merge_rounds"] // ROUNDS_PER_CHECK))
    assert g.syncs == (merge_reads if kw.get("min_size", DEFAULT_MIN_SIZE) > 1 else 1)
    np.testing.assert_allclose(g.features["centroid"], c.features["centroid"], atol=0.05)
