"""benchmarks/imseg_quality_session6.py (issue 21, session 6 quality screen) scores a
preprocessing variant the way the product does: its default variant gives exactly
``metrics.evaluate`` of ``segment_contours`` with the library defaults, and a variant gives
what ``segment_contours`` gives with those parameters."""

from __future__ import annotations

import numpy as np
import pytest
from imseg_bench import load_benchmark
from test_imseg_session3_bench import _scene  # the synthetic scene with two "human" segmentations

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg.contours import segment_contours
from gpu_kernels.imseg.metrics import evaluate


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("imseg_quality_session6")


def _check(bench, img, gts, pre, c, **kw):
    d = bench.prepare(img, gts, pre)
    cov, pri, voi, count = bench.run(d, c)
    seg = segment_contours(img, device="cpu", features=False, coarseness=c, **kw)
    ref = evaluate(seg.labels, gts)
    assert count == seg.n_regions
    np.testing.assert_allclose([cov, pri, voi], [ref["covering"], ref["pri"], ref["voi"]], rtol=1e-9, atol=1e-12)


def test_default_variant_is_the_library_default(bench):
    assert bench.DEFAULT_PRE == (C.DEFAULT_SIGMA, C.DEFAULT_COMPACTNESS, C.DEFAULT_N_SUPERPIXELS, C.SLIC_ITERATIONS)
    assert bench.DEFAULT_C == C.DEFAULT_COARSENESS
    img, gts = _scene()
    _check(bench, img, gts, bench.DEFAULT_PRE, bench.DEFAULT_C)


@pytest.mark.parametrize("pre", [(0.7, 10.0, 600, 4), (1.0, 20.0, 400, 4)])
def test_a_variant_scores_like_the_product_with_its_parameters(bench, pre):
    img, gts = _scene(2)
    _check(bench, img, gts, pre, 3.2, sigma=pre[0], compactness=pre[1], n_superpixels=pre[2])


@pytest.mark.parametrize("sigma", [0.6, 0.7, 0.85])
def test_kernels_in_the_emulator_give_the_cpu_labels_at_smaller_blurs(sigma):
    """The blurs screened this session (sigma under 1) through the CUDA kernels (run on the host
    by tests/cuda_emu): the same superpixel components and labels as the NumPy path."""
    from cuda_emu import available as emu_available
    from cuda_emu import emu_backend
    from skimage import data, transform

    if emu_available():
        pytest.skip(f"no C++ compiler for the kernel emulator: {emu_available()}")
    img = (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)
    kw = dict(n_superpixels=40, sigma=sigma, coarseness=3.0)
    a = segment_contours(img, device=emu_backend(), **kw)
    b = segment_contours(img, device="cpu", **kw)
    np.testing.assert_array_equal(a.clusters, b.clusters)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.info["merge_rounds"] == b.info["merge_rounds"]
