"""Bad inputs get one clear line; tiles give the same result as one piece."""

import numpy as np
import pytest

from gpu_kernels.flow import FlowInputError, block_matching, lucas_kanade, optical_flow, tvl1_refine
from gpu_kernels.flow.blockmatch import bm_halo
from gpu_kernels.flow.synthetic import synthetic_pair

A = np.zeros((32, 40), np.uint8)


@pytest.mark.parametrize("call,msg", [
    (lambda: optical_flow(A, np.zeros((32, 41), np.uint8), device="cpu"), "different sizes"),
    (lambda: optical_flow(A, A, mask=np.ones((31, 40)), device="cpu"), "mask is 40 x 31"),
    (lambda: optical_flow(A, A, mask=np.zeros((32, 40)), device="cpu"), "selects no pixel"),
    (lambda: optical_flow(A, A, method="farneback", device="cpu"), "unknown flow method"),
    (lambda: optical_flow(A, A, method="bm", window=5, device="cpu"), "no parameter"),
    (lambda: block_matching(A, A, block=7, device="cpu"), "block must be one of"),
    (lambda: block_matching(A, A, radius=0, device="cpu"), "radius must be between"),
    (lambda: block_matching(A, A, levels=0, device="cpu"), "levels must be between"),
    (lambda: lucas_kanade(A, A, window=4, device="cpu"), "window must be odd"),
    (lambda: lucas_kanade(A, A, iters=2.5, device="cpu"), "iters must be an integer"),
    (lambda: tvl1_refine(A, A, seed="sift", device="cpu"), "unknown seed"),
    (lambda: tvl1_refine(A, A, tau=0.5, device="cpu"), "tau must be <= 0.25"),
    (lambda: tvl1_refine(A, A, lam=float("nan"), device="cpu"), "finite"),
    (lambda: optical_flow(np.zeros((4, 4, 5)), np.zeros((4, 4, 5)), device="cpu"), "1 to 4 channels"),
    (lambda: optical_flow(np.zeros((4, 4), bool), np.zeros((4, 4), bool), device="cpu"), "boolean"),
    (lambda: optical_flow(np.zeros((4, 4), np.int32), np.zeros((4, 4), np.int32), device="cpu"), "pixel type"),
    (lambda: optical_flow(np.full((4, 4), np.nan), np.zeros((4, 4)), device="cpu"), "NaN"),
    (lambda: optical_flow(np.zeros((0, 4)), np.zeros((0, 4)), device="cpu"), "no pixels"),
])
def test_bad_inputs_one_line(call, msg):
    with pytest.raises(FlowInputError, match=msg) as ei:
        call()
    assert "\n" not in str(ei.value)


def test_halo_grows_with_levels_and_radius():
    assert bm_halo(3, 8, 2) < bm_halo(4, 8, 2) < bm_halo(5, 8, 4)
    assert bm_halo(5, 8, 4) % (8 * 16) == 0


def test_tiles_give_the_same_result():
    # 136 rows: two full rows of 64-px tiles and a partial one of 8 (as 200 rows gave three and a partial one;
    # every tile's halo reaches both the top and the bottom either way), the columns unchanged
    p = synthetic_pair("zoom", size=(136, 720), magnitude=6.0, image="rocket")
    kw = dict(levels=3, radius=2, device="cpu")
    whole = block_matching(p.img1, p.img2, **kw)
    tiled = block_matching(p.img1, p.img2, tile_size=64, **kw)
    assert tiled.params["tile_size"] == 64
    # tiles narrower than the image, so some tiles see neither side border
    assert bm_halo(3, 8, 2) * 2 + 64 < 720
    # the same computation; on the CPU the window statistics come from cumulative sums whose
    # rounding depends on the tile's origin, so allow float32 rounding (the GPU test asks for
    # bitwise equality)
    np.testing.assert_allclose(tiled.u, whole.u, atol=1e-5)
    np.testing.assert_allclose(tiled.v, whole.v, atol=1e-5)
    np.testing.assert_allclose(tiled.quality, whole.quality, atol=1e-5)


def test_tiles_with_a_mask():
    p = synthetic_pair("translation", size=(96, 600), magnitude=3.0, image="rocket")
    mask = np.zeros((96, 600), bool)
    mask[:, 100:300] = True
    kw = dict(levels=2, radius=2, mask=mask, device="cpu")
    whole = block_matching(p.img1, p.img2, **kw)
    tiled = block_matching(p.img1, p.img2, tile_size=32, **kw)
    np.testing.assert_allclose(tiled.u, whole.u, atol=1e-5)
    assert (tiled.u[:, 400:] == 0).all()
