"""The exact central moments (``feat_moments_exact`` + ``feat_moments_finish``) through the CUDA
emulator: 128-bit integer sums about the rounded-down centroid, so the GPU result no longer
depends on the order of its atomics; against the CPU path on label images with many short
runs (noise), rows that wrap inside a thread's chunk, background pixels and widths that are
not multiples of the chunk. The same kernels on a real GPU: test_imseg_contours_gpu.py."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend

from gpu_kernels.imseg import features as F

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _labels(rng, h, w, R, blocky):
    if blocky:
        lab = rng.integers(1, R + 1, size=((h + 7) // 8, (w + 7) // 8)).repeat(8, 0).repeat(8, 1)[:h, :w]
    else:
        lab = rng.integers(0, R + 1, size=(h, w))
    return lab.astype(np.int32)


@needs_emu
@pytest.mark.parametrize("h, w, R, blocky", [(37, 53, 9, False), (64, 37, 5, True), (120, 181, 30, True),
                                             (3, 5, 2, False)])
def test_exact_moments_match_cpu_and_do_not_depend_on_the_order(h, w, R, blocky):
    rng = np.random.default_rng(h * w)
    lab = _labels(rng, h, w, R, blocky)
    R = int(lab.max())
    img = rng.integers(0, 256, size=(h, w, 3)).astype(np.uint8)
    ref = F.features_np(lab, R, img, moments=True)["moments_central"]
    scale = np.abs(ref).reshape(R, -1).max(axis=1)[:, None, None] + 1.0
    be = emu_backend()
    got = {}
    for method in ("runs", "sort"):
        f = F.features_device(be, be.xp.asarray(lab).ravel(), R, h, w, be.xp.asarray(img), 3, method, True)
        got[method] = np.asarray(f["moments_central"])
        assert np.all(np.abs(got[method] - ref) <= 1e-12 * scale), method
    # raster runs and label-sorted order add the same integers: the same bits
    np.testing.assert_array_equal(got["runs"], got["sort"])
