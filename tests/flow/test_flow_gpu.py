"""GPU path against the CPU path on real CUDA hardware (pytest -m gpu on the GPU host).

Needs only numpy, scipy, cupy, scikit-image and pytest. Test data: set GPULAB_SHARED_DATA to a
folder holding middlebury-flow/ (default ../shared/data beside the repository).
"""

import os
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels import ops
from gpu_kernels.flow import block_matching, flow_metrics, lucas_kanade, ncc_confidence, tvl1_refine
from gpu_kernels.flow.synthetic import synthetic_pair

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(5)


def _np(a):
    return a.get() if hasattr(a, "get") else np.asarray(a)


def _data_dir():
    env = os.environ.get("GPULAB_SHARED_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    return root / "middlebury-flow"


@pytest.fixture(scope="module")
def pair():
    return synthetic_pair("vortex", size=(243, 319), magnitude=12.0, image="coffee")


def test_ops_gpu_vs_cpu():
    x = RNG.random((61, 83, 3)).astype(np.float32)
    for fn in (lambda d: ops.gaussian_filter(x, 1.7, axes=(0, 1), device=d),
               lambda d: ops.gaussian_filter(x[..., 0], (0.7, 2.5), device=d),
               lambda d: ops.pyr_down(x, axes=(0, 1), device=d),
               lambda d: ops.pyr_up(x, (121, 165, 3), axes=(0, 1), value_scale=2, device=d),
               lambda d: ops.resize(x, (30, 200, 3), axes=(0, 1), device=d)):
        # SciPy accumulates in float64, the kernels in float32
        np.testing.assert_allclose(_np(fn("cuda")), fn("cpu"), atol=1.5e-5)
    img = RNG.random((3, 61, 83)).astype(np.float32)
    d = (RNG.standard_normal((2, 61, 83)) * 5).astype(np.float32)
    g, gi = ops.warp(img, d, channel_axis=0, return_inside=True, device="cuda")
    c, ci = ops.warp(img, d, channel_axis=0, return_inside=True, device="cpu")
    np.testing.assert_allclose(_np(g), c, atol=2e-6)
    assert np.array_equal(_np(gi), ci)
    vol = RNG.random((9, 10, 11)).astype(np.float32)
    d3 = (RNG.standard_normal((3, 9, 10, 11)) * 2).astype(np.float32)
    np.testing.assert_allclose(_np(ops.warp(vol, d3, device="cuda")), ops.warp(vol, d3, device="cpu"), atol=2e-6)
    for dt in (np.uint8, np.uint16, np.float32):
        im = (RNG.random((33, 47, 3)) * 250).astype(dt)
        # float32 agreement: values up to 250, so 1 ulp is ~1.5e-5 in absolute terms
        np.testing.assert_allclose(_np(ops.to_gray(im, device="cuda")), ops.to_gray(im, device="cpu"),
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("block,radius", [(8, 4), (16, 8), (4, 2)])
def test_block_matching_gpu_vs_cpu(pair, block, radius):
    a = block_matching(pair.img1, pair.img2, block=block, radius=radius, device="cpu")
    b = block_matching(pair.img1, pair.img2, block=block, radius=radius, device="cuda").to_numpy()
    du = np.abs(b.extras["block_u"] - a.extras["block_u"])
    # an exact NCC tie may break differently in float32: allow a handful of blocks
    assert (du > 2e-3).mean() < 0.01
    assert np.median(np.abs(b.u - a.u)) < 1e-4
    assert np.median(np.abs(b.quality - a.quality)) < 1e-4


def test_lucas_kanade_gpu_vs_cpu(pair):
    a = lucas_kanade(pair.img1, pair.img2, device="cpu")
    b = lucas_kanade(pair.img1, pair.img2, device="cuda").to_numpy()
    for k in ("u", "v", "quality"):
        d = np.abs(getattr(b, k) - getattr(a, k))
        assert np.percentile(d, 99) < 1e-3 and np.median(d) < 1e-4, k


@pytest.mark.parametrize("seed", ["none", "bm"])
def test_refine_gpu_vs_cpu(pair, seed):
    kw = dict(seed=seed, iters=10)
    a = tvl1_refine(pair.img1, pair.img2, device="cpu", **kw)
    b = tvl1_refine(pair.img1, pair.img2, device="cuda", **kw).to_numpy()
    for k in ("u", "v", "quality"):
        d = np.abs(getattr(b, k) - getattr(a, k))
        assert np.percentile(d, 99) < 2e-3 and np.median(d) < 2e-4, (k, np.percentile(d, 99))
    ma = flow_metrics(a.u, a.v, pair.flow, pair.valid)["aee"]
    mb = flow_metrics(b.u, b.v, pair.flow, pair.valid)["aee"]
    assert abs(ma - mb) < 1e-3


@pytest.mark.parametrize("method", ["bm", "lk", "refine"])
def test_graph_plans_match_plain_launches(pair, method):
    """The cached CUDA-graph plan gives the plain launches' result, and follows new inputs."""
    import cupy as cp

    from gpu_kernels.flow import _plan, optical_flow

    a, b = cp.asarray(pair.img1), cp.asarray(pair.img2)
    saved = _plan.ENABLED
    _plan.clear()
    _plan.ENABLED = True
    try:
        first = optical_flow(a, b, method=method, device="cuda").to_numpy()
        again = optical_flow(a, b, method=method, device="cuda").to_numpy()      # replay
        swapped = optical_flow(b, a, method=method, device="cuda").to_numpy()    # replay, other inputs
        assert _plan.LAST_FALLBACK is None, _plan.LAST_FALLBACK
        _plan.ENABLED = False
        plain = optical_flow(a, b, method=method, device="cuda").to_numpy()
        plain_swapped = optical_flow(b, a, method=method, device="cuda").to_numpy()
    finally:
        _plan.ENABLED = saved
        _plan.clear()
    for r in (first, again):
        assert np.array_equal(r.u, plain.u) and np.array_equal(r.quality, plain.quality)
    assert np.array_equal(swapped.v, plain_swapped.v)
    assert not np.array_equal(swapped.u, first.u)


def test_refine_median3_gpu_vs_cpu(pair):
    a = tvl1_refine(pair.img1, pair.img2, median=3, iters=5, device="cpu")
    b = tvl1_refine(pair.img1, pair.img2, median=3, iters=5, device="cuda").to_numpy()
    assert np.percentile(np.abs(a.u - b.u), 99) < 2e-3


def test_refine_graph_and_plain_launches_agree(pair):
    from gpu_kernels.flow import refine

    a = tvl1_refine(pair.img1, pair.img2, iters=5, device="cuda").to_numpy()
    refine._USE_GRAPHS = False
    try:
        b = tvl1_refine(pair.img1, pair.img2, iters=5, device="cuda").to_numpy()
    finally:
        refine._USE_GRAPHS = True
    assert np.array_equal(a.u, b.u) and np.array_equal(a.v, b.v)


def test_masks_on_gpu(pair):
    mask = np.zeros(pair.img1.shape, bool)
    mask[30:200, 40:280] = True
    for fn in (block_matching, lucas_kanade, tvl1_refine):
        a = fn(pair.img1, pair.img2, mask=mask, device="cpu")
        b = fn(pair.img1, pair.img2, mask=mask, device="cuda").to_numpy()
        assert (b.u[~mask] == 0).all() and (b.quality[~mask] == 0).all()
        assert np.median(np.abs(b.u - a.u)[mask]) < 2e-4


def test_confidence_gpu_vs_cpu(pair):
    u, v = pair.flow[..., 0].copy(), pair.flow[..., 1].copy()
    a = ncc_confidence(pair.img1, pair.img2, u, v, device="cpu")
    b = _np(ncc_confidence(pair.img1, pair.img2, u, v, device="cuda"))
    # The NCC's variances are E[x^2] - E[x]^2 in float32 on both paths (summed in a different
    # order): where a window is nearly flat they cancel, and the two paths may then differ by a
    # few 1e-3. Where both windows have texture (local std above 0.03) they agree to 3e-4.
    from scipy.ndimage import uniform_filter

    from gpu_kernels.flow.refine import DEFAULT_CONF_WINDOW as w

    def local_var(x):
        x = x.astype(np.float64)
        return uniform_filter(x * x, w) - uniform_filter(x, w) ** 2

    textured = (local_var(pair.img1) > 1e-3) & (local_var(pair.img2) > 1e-3)
    assert textured.mean() > 0.3
    d = np.abs(a - b)
    assert np.percentile(d[textured], 99.9) < 3e-4
    assert np.percentile(d, 99.9) < 1e-2 and d.max() < 0.05


def test_tiles_identical_on_gpu():
    p = synthetic_pair("zoom", size=(300, 900), magnitude=6.0, image="rocket")
    whole = block_matching(p.img1, p.img2, levels=3, radius=2, device="cuda").to_numpy()
    tiled = block_matching(p.img1, p.img2, levels=3, radius=2, tile_size=96, device="cuda")
    assert tiled.params["tile_size"] == 96
    assert np.array_equal(tiled.u, whole.u) and np.array_equal(tiled.quality, whole.quality)


def test_device_arrays_in_device_arrays_out(pair):
    import cupy as cp

    r = tvl1_refine(cp.asarray(pair.img1), cp.asarray(pair.img2), iters=3, device="cuda")
    assert isinstance(r.u, cp.ndarray) and r.u.shape == pair.img1.shape


def test_middlebury_gpu_matches_cpu():
    d = _data_dir() / "RubberWhale"
    if not d.exists():
        pytest.skip(f"Middlebury data not found at {d} (set GPULAB_SHARED_DATA)")
    from skimage.io import imread

    a, b = imread(d / "frame10.png"), imread(d / "frame11.png")
    raw = np.fromfile(d / "flow10.flo", "<f4")
    w, h = raw[1:3].view("<i4")
    gt = raw[3:].reshape(h, w, 2)
    valid = (np.abs(gt) < 1e9).all(-1)
    r_cpu = tvl1_refine(a, b, device="cpu")
    r_gpu = tvl1_refine(a, b, device="cuda").to_numpy()
    m_cpu = flow_metrics(r_cpu.u, r_cpu.v, gt, valid)["aee"]
    m_gpu = flow_metrics(r_gpu.u, r_gpu.v, gt, valid)["aee"]
    assert abs(m_cpu - m_gpu) < 2e-3 and m_gpu < 0.25


# ----------------------------------------------------------------------------- search (issue 25)
def _large_pair():
    from gpu_kernels.flow.synthetic import synthetic_flow, warp_image_by_flow

    img = synthetic_pair("translation", size=(240, 320), magnitude=1.0, image="astronaut").img1
    f = synthetic_flow("rotation", (240, 320), 25.0) + synthetic_flow("translation", (240, 320), 30.0)
    img2, valid = warp_image_by_flow(img, f)
    return img, img2, f, valid


def test_search_stages_gpu_vs_cpu():
    """Each stage of the default method on the GPU against the CPU path, from the same inputs."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import search as S

    cp = pytest.importorskip("cupy")
    img1, img2, f, _ = _large_pair()
    cpu, gpu = get_backend("cpu"), get_backend("cuda")
    I1, I2 = img1.astype(np.float32), img2.astype(np.float32)
    u0 = np.full(I1.shape, 3.0, np.float32)
    v0 = np.full(I1.shape, -2.0, np.float32)
    with gpu.activate():
        g = S.coarse_match(gpu, cp.asarray(I1), cp.asarray(I2), cp.asarray(u0), cp.asarray(v0), radius=3)
        c = S.coarse_match(cpu, I1, I2, u0, v0, radius=3)
        pu, pv, cost, conf = (_np(x) for x in g)
        # the searches agree except where float ties differ (a few patches)
        close = (np.abs(pu - c[0]) < 1e-2) & (np.abs(pv - c[1]) < 1e-2)
        assert close.mean() > 0.97, close.mean()
        np.testing.assert_allclose(conf, c[3], atol=1e-4)
        dg = S.densify(gpu, cp.asarray(I1), cp.asarray(I2), *(cp.asarray(x) for x in c[:2]), cp.asarray(c[3]),
                       cp.asarray(u0), cp.asarray(v0))
        dc = S.densify(cpu, I1, I2, c[0], c[1], c[3], u0, v0)
        np.testing.assert_allclose(_np(dg[0]), dc[0], atol=2e-4)
        np.testing.assert_allclose(_np(dg[1]), dc[1], atol=2e-4)


def test_search_gpu_vs_cpu_end_to_end():
    from gpu_kernels.flow.search import inverse_search_flow

    img1, img2, f, valid = _large_pair()
    g = inverse_search_flow(img1, img2, device="cuda").to_numpy()
    c = inverse_search_flow(img1, img2, device="cpu")
    eg = np.hypot(g.u - f[..., 0], g.v - f[..., 1])[valid].mean()
    ec = np.hypot(c.u - f[..., 0], c.v - f[..., 1])[valid].mean()
    assert ec < 1.0 and eg < 1.0, (ec, eg)
    assert abs(eg - ec) < 0.05, (eg, ec)
    # compared where the ground truth is valid: where x + f leaves the frame there is no data
    # term and float differences can move the flow by a pixel (seen on an H100, 2026-11-25)
    d = np.hypot(g.u - c.u, g.v - c.v)[valid]
    assert np.median(d) < 0.02 and (d > 1.0).mean() < 0.01, (np.median(d), (d > 1.0).mean())
    assert np.abs(g.quality - c.quality).mean() < 0.01


def test_search_plan_matches_plain_launches():
    from gpu_kernels.flow import _plan
    from gpu_kernels.flow.search import inverse_search_flow

    img1, img2, _, _ = _large_pair()
    a = inverse_search_flow(img1, img2, device="cuda").to_numpy()
    saved = _plan.ENABLED
    _plan.ENABLED = False
    try:
        b = inverse_search_flow(img1, img2, device="cuda").to_numpy()
    finally:
        _plan.ENABLED = saved
    np.testing.assert_array_equal(a.u, b.u)
    np.testing.assert_array_equal(a.quality, b.quality)
    assert _plan.LAST_FALLBACK is None or "search" not in str(_plan.LAST_FALLBACK)


def test_search_edge_and_occlusion_terms_gpu_vs_cpu():
    """The edge-aware TV (tv_edge, tv_dual_w) and the occlusion-robust data weight (tv_warp's
    occ) on the GPU against the NumPy path, end to end and at one level."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow.refine import _level
    from gpu_kernels.flow.search import inverse_search_flow

    cp = pytest.importorskip("cupy")
    img1, img2, f, valid = _large_pair()
    kw = dict(edge=5.0, occ=0.05, radius_levels=2)
    g = inverse_search_flow(img1, img2, device="cuda", **kw).to_numpy()
    c = inverse_search_flow(img1, img2, device="cpu", **kw)
    d = np.hypot(g.u - c.u, g.v - c.v)[valid]
    assert np.median(d) < 0.02 and (d > 1.0).mean() < 0.01, (np.median(d), (d > 1.0).mean())
    I1, I2 = img1.astype(np.float32), img2.astype(np.float32)
    u = np.full(I1.shape, 2.0, np.float32)
    v = np.zeros(I1.shape, np.float32)
    uc, vc = u.copy(), v.copy()
    lk = dict(warps=2, iters=10, lam=100.0, theta=0.3, tau=0.25, median=5, edge=5.0, occ=0.05)
    _level(get_backend("cpu"), I1, I2, uc, vc, None, **lk)
    gpu = get_backend("cuda")
    with gpu.activate():
        ug, vg = cp.asarray(u), cp.asarray(v)
        _level(gpu, cp.asarray(I1), cp.asarray(I2), ug, vg, None, **lk)
    np.testing.assert_allclose(_np(ug), uc, atol=2e-3)
    np.testing.assert_allclose(_np(vg), vc, atol=2e-3)


def test_search_tool_stages_on_gpu_match_one_call():
    """The tool's staged run (pyramids / matching + TV-L1 / quality map) on the GPU gives the
    library's one-call result, and a quality-map change re-runs only the last compute stage."""
    from app.tools import flow
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow.search import inverse_search_flow

    img1, img2, _, _ = _large_pair()
    data = flow.FlowData(img1, img2, "a", "b")
    be = get_backend("cuda")
    cache = StageCache(cap_bytes=1 << 30, device_cap_bytes=1 << 30)
    p = flow.PARAMS.validate({})
    r1, rep1 = flow.PIPELINE.execute(data, p, device=be, cache=cache, scope="t")
    ref = inverse_search_flow(img1, img2, device="cuda").to_numpy()
    np.testing.assert_allclose(r1.u, ref.u, atol=1e-4)
    np.testing.assert_allclose(r1.quality, ref.quality, atol=1e-4)
    r2, rep2 = flow.PIPELINE.execute(data, flow.PARAMS.validate({"quality_map": "ncc"}), device=be, cache=cache,
                                     scope="t")
    assert rep2.ran[0] == "quality" and "flow" in rep2.reused, (rep2.ran, rep2.reused)
    np.testing.assert_array_equal(r2.u, r1.u)


def test_small_level_block_kernel_matches_launches(monkeypatch):
    """tv_iterate_block (a small level's TV-L1 iterations in one block) against two launches per
    iteration on the GPU, end to end (every level of a 120 x 160 pair is small)."""
    from gpu_kernels.flow import _plan, refine
    from gpu_kernels.flow.search import inverse_search_flow

    img1, img2, _, _ = _large_pair()
    monkeypatch.setattr(refine, "SMALL_LEVEL", 16384)
    monkeypatch.setattr(_plan, "ENABLED", False)
    a = inverse_search_flow(img1[:120, :160], img2[:120, :160], device="cuda").to_numpy()
    monkeypatch.setattr(refine, "SMALL_LEVEL", 0)
    monkeypatch.setattr(_plan, "ENABLED", False)
    b = inverse_search_flow(img1[:120, :160], img2[:120, :160], device="cuda").to_numpy()
    np.testing.assert_allclose(a.u, b.u, atol=1e-3)
    np.testing.assert_allclose(a.v, b.v, atol=1e-3)


def test_tiled_iterations_match_launches_gpu(monkeypatch):
    """tv_iterate_tile (TV-L1 iterations in shared-memory windows, the default) against two
    launches per iteration, at one 540 x 960 level (the 1080p working level: many windows, two
    launches of 10 iterations per warp) and on a small level (one window), with the edge-aware
    and occlusion terms, on the GPU."""
    from gpu_kernels.flow import refine
    from gpu_kernels.flow.refine import _level

    cp = pytest.importorskip("cupy")
    for H, W in ((540, 960), (50, 70)):
        p = synthetic_pair("vortex", size=(H, W), magnitude=6.0, image="astronaut")
        I1, I2 = (np.asarray(x, np.float32) for x in (p.img1, p.img2))
        if I1.ndim == 3:
            I1, I2 = I1.mean(-1).astype(np.float32), I2.mean(-1).astype(np.float32)
        if I1.max() > 1:
            I1, I2 = I1 / 255, I2 / 255
        u0 = (p.flow[..., 0] * 0.7).astype(np.float32)
        v0 = (p.flow[..., 1] * 0.7).astype(np.float32)
        kw = dict(warps=3, iters=20, lam=100.0, theta=0.3, tau=0.25, median=5, edge=6.0, occ=0.1)
        out = []
        for tile in (0, 10):
            monkeypatch.setattr(refine, "TILE_ITERS", tile)
            ug, vg = cp.asarray(u0), cp.asarray(v0)
            _level(refine.get_backend("cuda"), cp.asarray(I1), cp.asarray(I2), ug, vg, None, **kw)
            out.append((_np(ug), _np(vg)))
        assert np.abs(out[0][0] - u0).mean() > 0.01
        np.testing.assert_allclose(out[1][0], out[0][0], atol=1e-4)
        np.testing.assert_allclose(out[1][1], out[0][1], atol=1e-4)


def test_fill_kernels_gpu_vs_cpu(monkeypatch):
    """The forward-backward fill's recursive filter on the GPU (is_rf_axis1_seg, segmented, the
    default; is_rf_axis1, coalesced; and is_rf_rows) against the NumPy path, at 1080 x 1920."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.flow import search

    cp = pytest.importorskip("cupy")
    rng = np.random.default_rng(7)
    g = rng.random((1080, 1920)).astype(np.float32)
    g = (g + np.roll(g, 1, 0) + np.roll(g, 1, 1)) / 3
    u = rng.normal(0, 3, g.shape).astype(np.float32)
    v = rng.normal(0, 3, g.shape).astype(np.float32)
    ok = (rng.random(g.shape) > 0.3).astype(np.float32)
    c = search.edge_aware_fill(get_backend("cpu"), g, u, v, ok)
    assert np.abs(c[0][ok == 0] - u[ok == 0]).mean() > 0.5
    for coalesced, segments in ((True, 32), (True, 0), (False, 0)):
        monkeypatch.setattr(search, "RF_COALESCED", coalesced)
        monkeypatch.setattr(search, "RF_SEGMENTS", segments)
        gg = search.edge_aware_fill(get_backend("cuda"), *(cp.asarray(x) for x in (g, u, v, ok)))
        for a, b in zip(gg, c, strict=True):
            np.testing.assert_allclose(_np(a), b, atol=2e-4, rtol=1e-4)
