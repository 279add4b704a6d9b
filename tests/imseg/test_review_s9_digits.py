"""Review (session 9, reviewer A): the block table's row and column sums (feat_pass1_smem) keep each run's
64-bit sum as three 16-bit digits in 32-bit words; the third digit (``x >> 32``) is used only where a run's
sum of rows (or columns) passes 2^32, i.e. in images more than about 4.2 million rows tall (or columns
wide). No other test reaches it: without ``fs_add_u48``'s third digit every other test passes. Here a
one-pixel-wide (and a one-pixel-high) image of 4.4 million pixels, on the CUDA emulator: the table's sums
equal the exact ones (session 10: the session-4 raster kernel it was also compared with is removed)."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")

N = 4_400_000   # a run of 32 lanes x 32 pixels in the last rows sums to about 4.5e9 > 2^32


@needs_emu
@pytest.mark.parametrize("tall", [True, False])
def test_row_and_column_sums_past_2_to_the_32_a_run(tall):
    from gpu_kernels.imseg import features as F

    be = emu_backend()
    h, w = (N, 1) if tall else (1, N)
    lab = np.ones((h, w), np.int32)
    lab.ravel()[: N // 2] = 2            # two regions, so that both a block's own sums and the carry differ
    img = np.zeros((h, w), np.uint8)
    acc = F.pass1_device(be, be.xp.asarray(lab).ravel(), 2, h, w, be.xp.asarray(img), 1, F.FT_BBOX)
    got = np.asarray(acc["sum_rc"]).copy().reshape(2, 2)
    assert F._smem_chunk(N) == 32
    idx = np.arange(N, dtype=np.int64)
    exact = np.zeros((2, 2), np.uint64)
    for r, sel in ((0, idx >= N // 2), (1, idx < N // 2)):   # label 1 at index 0, label 2 at index 1
        exact[r, 0 if tall else 1] = np.uint64(int(idx[sel].sum()))
    np.testing.assert_array_equal(got, exact)
