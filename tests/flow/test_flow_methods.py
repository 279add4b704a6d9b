"""Each flow method recovers known synthetic flows (a natural image warped by an analytic field
of up to 30 px), CPU path. Tolerances are stated per method and per kind."""

import numpy as np
import pytest

from gpu_kernels.flow import block_matching, flow_metrics, lucas_kanade, optical_flow, tvl1_refine
from gpu_kernels.flow.metrics import endpoint_error
from gpu_kernels.flow.synthetic import KINDS, synthetic_flow, synthetic_pair

SIZE = (240, 320)


@pytest.fixture(scope="module")
def pairs30():
    return {k: synthetic_pair(k, size=SIZE, magnitude=30.0, image="coffee") for k in KINDS}


@pytest.fixture(scope="module")
def pairs8():
    return {k: synthetic_pair(k, size=SIZE, magnitude=8.0, image="coffee") for k in KINDS}


def test_synthetic_pairs_follow_the_convention(pairs8):
    from gpu_kernels.ops import warp_flow

    for p in pairs8.values():
        assert np.abs(p.flow).max() <= 8.0 + 1e-4
        back = warp_flow(p.img2, p.flow[..., 0], p.flow[..., 1], device="cpu")   # IMG2(x + f) = IMG1(x)
        err = np.abs(back - p.img1)[p.valid]
        wrong = np.abs(warp_flow(p.img2, -p.flow[..., 0], -p.flow[..., 1], device="cpu") - p.img1)[p.valid]
        assert err.mean() < 0.03 < wrong.mean()


def test_synthetic_magnitudes():
    for k in KINDS:
        f = synthetic_flow(k, (100, 140), 12.0)
        assert abs(np.hypot(f[..., 0], f[..., 1]).max() - 12.0) < 0.05


# refinement (TV-L1): mean endpoint error on the valid pixels
TV_TOL = {"translation": 0.05, "rotation": 0.4, "zoom": 0.25, "vortex": 1.8}


@pytest.mark.parametrize("kind", KINDS)
def test_refine_recovers_30px(pairs30, kind):
    p = pairs30[kind]
    r = tvl1_refine(p.img1, p.img2, iters=10, device="cpu")
    m = flow_metrics(r.u, r.v, p.flow, p.valid)
    assert m["aee"] < TV_TOL[kind], m
    assert r.quality.min() >= 0 and r.quality.max() <= 1


# block matching: median endpoint error (blocks that match outside the frame or across the
# border are the method's known weakness, so the mean is looser)
BM_TOL = {"translation": (0.15, 3.5), "rotation": (0.9, 4.5), "zoom": (0.7, 8.0), "vortex": (2.2, 6.5)}


@pytest.mark.parametrize("kind", KINDS)
def test_block_matching_recovers_30px(pairs30, kind):
    p = pairs30[kind]
    r = block_matching(p.img1, p.img2, device="cpu")
    e = endpoint_error(r.u, r.v, p.flow, p.valid)
    e = e[np.isfinite(e)]
    med_tol, mean_tol = BM_TOL[kind]
    assert np.median(e) < med_tol and e.mean() < mean_tol, (np.median(e), e.mean())
    nby, nbx = r.extras["block_u"].shape
    assert (nby, nbx) == (30, 40)


# Lucas-Kanade (3 levels reach about 8 px): median and mean endpoint error at 8 px
LK_TOL = {"translation": (0.05, 0.6), "rotation": (0.25, 1.2), "zoom": (0.25, 1.5), "vortex": (0.35, 1.5)}


@pytest.mark.parametrize("kind", KINDS)
def test_lucas_kanade_recovers_8px(pairs8, kind):
    p = pairs8[kind]
    r = lucas_kanade(p.img1, p.img2, device="cpu")
    e = endpoint_error(r.u, r.v, p.flow, p.valid)
    e = e[np.isfinite(e)]
    med_tol, mean_tol = LK_TOL[kind]
    assert np.median(e) < med_tol and e.mean() < mean_tol, (np.median(e), e.mean())


def test_quality_maps_rank_errors(pairs8):
    """The refinement's quality map (and LK's reliability) put lower quality where the error is
    larger. (Block matching's map is the NCC at the peak, as the paper defines it: see
    test_bm_flat_blocks_have_low_quality.)"""
    p = pairs8["vortex"]
    for method in ("lk", "refine"):
        r = optical_flow(p.img1, p.img2, method=method, device="cpu")
        e = endpoint_error(r.u, r.v, p.flow, p.valid)
        ok = np.isfinite(e)
        q = r.quality[ok]
        hi, lo = e[ok][q >= np.median(q)], e[ok][q < np.median(q)]
        assert hi.mean() < lo.mean(), method


def test_bm_flat_blocks_have_low_quality():
    rng = np.random.default_rng(0)
    img = rng.random((64, 64)).astype(np.float32)
    img[:, :32] = 0.5                      # left half flat
    r = block_matching(img, img, levels=2, device="cpu")
    assert r.quality[:, :24].max() == 0.0
    assert r.quality[:, 40:].min() > 0.9
    # zero motion, up to the parabola's sub-pixel fit on noise
    assert np.abs(r.u[:, 40:]).max() < 0.1 and np.abs(r.v[:, 40:]).max() < 0.1


@pytest.mark.parametrize("shape", [(37, 53), (5, 7), (1, 40), (200, 3), (64, 64, 4)])
def test_any_size_and_layout(shape):
    rng = np.random.default_rng(1)
    a = (rng.random(shape) * 255).astype(np.uint8)
    for method in ("bm", "lk", "refine"):
        r = optical_flow(a, a, method=method, device="cpu")
        assert r.u.shape == shape[:2] and np.isfinite(r.u).all() and np.isfinite(r.quality).all()


def test_16bit_and_float_inputs_agree():
    p = synthetic_pair("translation", size=(64, 80), magnitude=2.0)
    r8 = block_matching((p.img1 * 65535).astype(np.uint16), (p.img2 * 65535).astype(np.uint16), device="cpu")
    rf = block_matching(p.img1, p.img2, device="cpu")
    assert np.allclose(r8.u, rf.u, atol=0.02)


def test_mask_neither_contributes_nor_receives():
    p = synthetic_pair("translation", size=(96, 128), magnitude=3.0)
    mask = np.zeros((96, 128), bool)
    mask[20:80, 30:100] = True
    rng = np.random.default_rng(2)
    img2 = p.img2.copy()
    img2[~mask] = rng.random(int((~mask).sum()))     # garbage outside the region of interest
    img1 = p.img1.copy()
    img1[~mask] = rng.random(int((~mask).sum()))
    for method, tol in (("lk", 0.25), ("refine", 0.25), ("bm", 0.5)):
        r = optical_flow(img1, img2, method=method, mask=mask, device="cpu")
        assert (r.u[~mask] == 0).all() and (r.quality[~mask] == 0).all(), method
        inner = np.zeros_like(mask)
        inner[32:68, 42:80] = True
        e = np.hypot(r.u - p.flow[..., 0], r.v - p.flow[..., 1])[inner]
        assert np.median(e) < tol, (method, np.median(e))


def test_progress_and_cancel():
    from gpu_kernels.jobs import Cancelled, Progress

    p = synthetic_pair("translation", size=(64, 64), magnitude=2.0)
    seen = []
    tvl1_refine(p.img1, p.img2, levels=3, iters=2, device="cpu", progress=lambda f, s: seen.append((f, s)))
    assert seen and seen[-1][0] > 0.9 and any("TV-L1" in s for _, s in seen)
    prog = Progress()
    prog.cancel()
    with pytest.raises(Cancelled):
        block_matching(p.img1, p.img2, device="cpu", progress=prog)
