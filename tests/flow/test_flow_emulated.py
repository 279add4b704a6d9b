"""The GPU path (CUDA kernels + their host code) run on the CPU through the test suite's CUDA
emulator (tests/cuda_emu: g++, one fiber per CUDA thread), compared with the NumPy path. This checks the
kernels' indexing, barriers and argument types in CI, where there is no GPU; the real GPU runs
tests/flow/test_flow_gpu.py."""

import cuda_emu as emu  # tests/cuda_emu (tests/ is on sys.path through its conftest)
import numpy as np
import pytest

from gpu_kernels import ops
from gpu_kernels.flow import block_matching, lucas_kanade, ncc_confidence, tvl1_refine
from gpu_kernels.flow.synthetic import synthetic_pair

if emu.available():
    pytest.skip(emu.available(), allow_module_level=True)

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def be():
    return emu.emu_backend()


@pytest.fixture(scope="module")
def pair():
    return synthetic_pair("vortex", size=(40, 58), magnitude=3.0)


def test_ops_kernels(be):
    x = RNG.random((13, 17, 3)).astype(np.float32)
    for fn in (lambda d: ops.gaussian_filter(x, 1.3, axes=(0, 1), device=d),
               lambda d: ops.uniform_filter(x, 3, mode="nearest", device=d),
               lambda d: ops.pyr_down(x, axes=(0, 1), device=d),
               lambda d: ops.pyr_up(x, (25, 34, 3), axes=(0, 1), value_scale=2, device=d),
               lambda d: ops.resize(x, (7, 40, 3), axes=(0, 1), device=d)):
        np.testing.assert_allclose(fn(be), fn("cpu"), atol=2e-6)
    img = RNG.random((2, 13, 17)).astype(np.float32)
    d = (RNG.standard_normal((2, 13, 17)) * 3).astype(np.float32)
    for a, b in zip(ops.warp(img, d, channel_axis=0, return_inside=True, device=be),
                    ops.warp(img, d, channel_axis=0, return_inside=True, device="cpu"), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    vol = RNG.random((5, 6, 7)).astype(np.float32)
    d3 = (RNG.standard_normal((3, 5, 6, 7)) * 2).astype(np.float32)
    np.testing.assert_allclose(ops.warp(vol, d3, device=be), ops.warp(vol, d3, device="cpu"), atol=1e-6)
    for dt in (np.uint8, np.uint16, np.float32):
        im = (RNG.random((9, 11, 4)) * 200).astype(dt)
        np.testing.assert_allclose(ops.to_gray(im, device=be), ops.to_gray(im, device="cpu"), atol=1e-6)


@pytest.mark.parametrize("block,radius,levels", [(8, 4, 3), (4, 2, 2), (16, 1, 1)])
def test_block_matching(be, pair, block, radius, levels):
    a = block_matching(pair.img1, pair.img2, block=block, radius=radius, levels=levels, device="cpu")
    b = block_matching(pair.img1, pair.img2, block=block, radius=radius, levels=levels, device=be)
    for k in ("block_u", "block_v", "block_quality"):
        np.testing.assert_allclose(b.extras[k], a.extras[k], atol=2e-3)
    np.testing.assert_allclose(b.u, a.u, atol=2e-3)
    np.testing.assert_allclose(b.quality, a.quality, atol=2e-3)


def test_block_matching_mask(be, pair):
    mask = np.zeros(pair.img1.shape, bool)
    mask[5:35, 10:50] = True
    a = block_matching(pair.img1, pair.img2, levels=2, mask=mask, device="cpu")
    b = block_matching(pair.img1, pair.img2, levels=2, mask=mask, device=be)
    np.testing.assert_allclose(b.u, a.u, atol=2e-3)
    assert (b.u[~mask] == 0).all()


def test_lucas_kanade(be, pair):
    mask = np.ones(pair.img1.shape, bool)
    mask[:, :6] = False
    for m in (None, mask):
        a = lucas_kanade(pair.img1, pair.img2, mask=m, device="cpu")
        b = lucas_kanade(pair.img1, pair.img2, mask=m, device=be)
        for k in ("u", "v", "quality"):
            np.testing.assert_allclose(getattr(b, k), getattr(a, k), atol=5e-4)


@pytest.mark.parametrize("seed", ["none", "bm", "lk"])
def test_refine(be, pair, seed):
    kw = dict(levels=2, warps=2, iters=3, seed=seed)
    a = tvl1_refine(pair.img1, pair.img2, device="cpu", **kw)
    b = tvl1_refine(pair.img1, pair.img2, device=be, **kw)
    for k in ("u", "v", "quality"):
        np.testing.assert_allclose(getattr(b, k), getattr(a, k), atol=1e-3)


def test_confidence(be, pair):
    u = pair.flow[..., 0].copy()
    v = pair.flow[..., 1].copy()
    a = ncc_confidence(pair.img1, pair.img2, u, v, device="cpu")
    b = ncc_confidence(pair.img1, pair.img2, u, v, device=be)
    np.testing.assert_allclose(b, a, atol=5e-4)


def test_emulator_checks_argument_types(be):
    from gpu_kernels.ops import _gpu

    k = _gpu.kernel(be, "ops_image.cu", "ops_gray_f32")
    x = np.zeros(4, np.float32)
    with pytest.raises(emu.EmuError, match="numpy int64 scalar"):
        k((1,), (32,), (x, x, 4, np.int32(1), np.float32(1)))        # a Python int for a long long
    with pytest.raises(emu.EmuError, match="float64 array"):
        k((1,), (32,), (x.astype(np.float64), x, np.int64(4), np.int32(1), np.float32(1)))


def test_refine_median3(be, pair):
    kw = dict(levels=2, warps=2, iters=2, median=3)
    a = tvl1_refine(pair.img1, pair.img2, device="cpu", **kw)
    b = tvl1_refine(pair.img1, pair.img2, device=be, **kw)
    np.testing.assert_allclose(b.u, a.u, atol=1e-3)


@pytest.mark.slow
def test_search_kernels_match_numpy(be):
    """The default method's kernels (flow_search.cu: is_init, is_step, is_densify) against the NumPy path."""
    from gpu_kernels.flow.search import inverse_search_flow

    p = synthetic_pair("translation", size=(56, 72), magnitude=9.0)
    kw = dict(warps=(1,), tv_iters=4, iters=6, rounds=2, radius=2, patch=6, stride=3)
    g = inverse_search_flow(p.img1, p.img2, device=be, **kw)
    c = inverse_search_flow(p.img1, p.img2, device="cpu", **kw)
    # float sums in another order (is_step_warp sums over the warp): the same flow but for a few
    # pixels near a tie; compared where the ground truth is valid: where x + f leaves the frame
    # there is no data term and the rounding moves the flow there by up to a few pixels (as on
    # the H100, tests/flow/test_flow_gpu.py)
    d = np.hypot(g.u - c.u, g.v - c.v)[p.valid]
    assert np.median(d) < 1e-3 and np.quantile(d, 0.99) < 0.02 and d.max() < 0.25, (np.median(d), d.max())
    err = np.hypot(c.u - p.flow[..., 0], c.v - p.flow[..., 1])[p.valid].mean()
    assert err < 0.5, err


def test_search_quality_map_matches_numpy(be):
    """The "fb" quality map (one 3-channel warp of the backward flow and the second frame, then
    elementwise arithmetic) on the emulated GPU path equals the NumPy path on the same inputs."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow.search import quality_map

    p = synthetic_pair("vortex", size=(40, 58), magnitude=3.0)
    g1, g2 = (np.asarray(x, np.float32) for x in (p.img1, p.img2))
    if g1.ndim == 3:
        g1, g2 = g1.mean(-1).astype(np.float32), g2.mean(-1).astype(np.float32)
    u = np.ascontiguousarray(p.flow[..., 0], np.float32)
    v = np.ascontiguousarray(p.flow[..., 1], np.float32)
    ub = (-u + RNG.normal(0, 0.5, u.shape)).astype(np.float32)
    vb = (-v + RNG.normal(0, 0.5, u.shape)).astype(np.float32)
    c = quality_map(get_backend("cpu"), g1, g2, u, v, backward=(ub, vb))
    xp = be.xp
    g = quality_map(be, *(xp.asarray(x) for x in (g1, g2, u, v)), backward=(xp.asarray(ub), xp.asarray(vb)))
    g = np.asarray(g.get() if hasattr(g, "get") else g)
    assert c.std() > 0.05                         # not a flat map
    np.testing.assert_allclose(g, c, atol=2e-4)


@pytest.mark.parametrize("coalesced,segments", [(True, 32), (True, 3), (True, 0), (False, 0)])
def test_search_fill_kernel_matches_numpy(be, monkeypatch, coalesced, segments):
    """The forward-backward fill's recursive filter and its host code on the emulated GPU path
    against the NumPy path: flow_search.cu's is_rf_rows_seg and is_rf_cols (each line in segments of
    a scan, weights from the guide; segments of one step or more: with 32, the 37-long rows in 12
    segments of 3 steps, the 23-long columns in 22 of 1; with 3, longer ones), is_rf_axis1
    (coalesced, rows on a transposed stack) and is_rf_rows (one thread per row)."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import search
    from gpu_kernels.flow.search import edge_aware_fill

    monkeypatch.setattr(search, "RF_COALESCED", coalesced)
    monkeypatch.setattr(search, "RF_SEGMENTS", segments)
    monkeypatch.setattr(search, "RF_MIN_STEPS", 1)
    rng = np.random.default_rng(4)
    g = rng.random((23, 37)).astype(np.float32)
    u = rng.normal(0, 3, g.shape).astype(np.float32)
    v = rng.normal(0, 3, g.shape).astype(np.float32)
    ok = (rng.random(g.shape) > 0.4).astype(np.float32)
    c = edge_aware_fill(get_backend("cpu"), g, u, v, ok, sigma_s=20.0, sigma_r=0.3)
    xp = be.xp
    gg = edge_aware_fill(be, *(xp.asarray(x) for x in (g, u, v, ok)), sigma_s=20.0, sigma_r=0.3)
    assert np.abs(c[0][ok == 0] - u[ok == 0]).mean() > 0.5     # the fill changed the marked pixels
    for a, b in zip(gg, c, strict=True):
        a = np.asarray(a.get() if hasattr(a, "get") else a)
        np.testing.assert_allclose(a, b, atol=1e-4, rtol=1e-4)



@pytest.mark.parametrize("tiles", [dict(TILE_ITERS=3, TILE_SIDE=16, TILE_ROWS=4),
                                   dict(TILE_ITERS=10, TILE_SIDE=32, TILE_ROWS=8),
                                   dict(TILE_ITERS=10, TILE_SIDE=64, TILE_ROWS=16)])
def test_tiled_iterations_match_launches(be, monkeypatch, tiles):
    """tv_iterate_tile (several TV-L1 iterations per launch in shared-memory windows with a halo,
    double-buffered; or a whole small level in one window, in place) against two launches per
    iteration (tv_primal, tv_dual_w), at one level with the edge-aware weights and the occlusion
    term: many small windows (7 iterations as 2 + 2 + 2 + 1: an even count of launches, as the
    windows write to a second set of arrays and back), a few windows, and the one-window case. The same arithmetic: equal to float rounding."""
    from gpu_kernels.flow import refine
    from gpu_kernels.flow.refine import _level

    p = synthetic_pair("vortex", size=(40, 58), magnitude=3.0)
    I1, I2 = (np.asarray(x, np.float32) for x in (p.img1, p.img2))
    if I1.ndim == 3:
        I1, I2 = I1.mean(-1).astype(np.float32), I2.mean(-1).astype(np.float32)
    u0 = (p.flow[..., 0] * 0.5).astype(np.float32)
    v0 = (p.flow[..., 1] * 0.5).astype(np.float32)
    kw = dict(warps=2, iters=7, lam=100.0, theta=0.3, tau=0.25, median=5, edge=5.0, occ=0.05)
    xp = be.xp

    def run():
        ug, vg = xp.asarray(u0.copy()), xp.asarray(v0.copy())
        _level(be, xp.asarray(I1), xp.asarray(I2), ug, vg, None, **kw)
        return [np.asarray(a.get() if hasattr(a, "get") else a) for a in (ug, vg)]

    monkeypatch.setattr(refine, "TILE_ITERS", 0)
    ref = run()
    assert np.abs(ref[0] - u0).mean() > 0.05                 # the iterations moved the flow
    for k, x in tiles.items():
        monkeypatch.setattr(refine, k, x)
    assert len(refine.tile_plan(40, 58, 7)) == {16: 4, 32: 2, 64: 1}[tiles["TILE_SIDE"]]
    for a, b in zip(run(), ref, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_init_warp_kernel_matches_thread_kernel(be, monkeypatch):
    """is_init_warp (the coarsest levels' integer search, one warp per patch) gives is_init's
    flows, costs and confidences bit for bit: ties go to the start, then to the earliest shift,
    as in the sequential loop (a flat image makes many exact ties)."""
    from gpu_kernels.flow import search

    rng = np.random.default_rng(3)
    I1 = rng.random((30, 44)).astype(np.float32)
    I1[:, :12] = 0.5                                       # flat: every shift ties
    I2 = np.roll(I1, (2, -3), (0, 1))
    u0 = np.full(I1.shape, 0.25, np.float32)
    v0 = np.zeros(I1.shape, np.float32)
    xp = be.xp
    out = []
    for warp in (False, True):
        monkeypatch.setattr(search, "INIT_WARP", warp)
        r = search.coarse_match(be, *(xp.asarray(x) for x in (I1, I2, u0, v0)), patch=8, stride=4, iters=0, rounds=0,
                                radius=4)
        out.append([np.asarray(a.get() if hasattr(a, "get") else a) for a in r])
    assert np.abs(out[0][0] - 0.25).max() >= 3             # the search moved patches
    for a, b in zip(out[1], out[0], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("patch", [4, 8, 12])
def test_step_warp_kernel_matches_thread_kernel(be, monkeypatch, patch):
    """is_step_warp (a patch's propagation and Gauss-Newton rounds, one warp per patch, its
    pixels over the lanes) against is_step (one thread per patch): the same steps with the sums in
    another order, so the same patch flows but for float rounding; every lane takes the same
    decisions (a lane that disagreed would leave lane 0's flow off by whole steps)."""
    from gpu_kernels.flow import search

    p = synthetic_pair("translation", size=(48, 64), magnitude=5.0)
    I1, I2 = (np.asarray(x, np.float32) for x in (p.img1, p.img2))
    if I1.ndim == 3:
        I1, I2 = I1.mean(-1).astype(np.float32), I2.mean(-1).astype(np.float32)
    u0 = np.full(I1.shape, 3.0, np.float32)
    v0 = np.full(I1.shape, -1.0, np.float32)
    xp = be.xp
    out = []
    for warp in (False, True):
        monkeypatch.setattr(search, "STEP_WARP", warp)
        r = search.coarse_match(be, *(xp.asarray(x) for x in (I1, I2, u0, v0)), patch=patch, stride=patch // 2,
                                iters=8, rounds=2, radius=1)
        out.append([np.asarray(a.get() if hasattr(a, "get") else a) for a in r])
    moved = np.hypot(out[0][0] - 3.0, out[0][1] + 1.0)
    assert np.median(moved) > 0.5                            # the rounds moved the patches
    d = np.hypot(out[1][0] - out[0][0], out[1][1] - out[0][1])
    assert np.median(d) < 1e-4 and np.quantile(d, 0.98) < 1e-2, (np.median(d), d.max())
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-3, atol=1e-5)
