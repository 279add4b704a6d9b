"""The default method (``search``: patch inverse search, densification, TV-L1) on the CPU:
large synthetic motions of real pictures, a small-motion Middlebury pair, its stages, bad input."""

import os
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.flow import FlowInputError, optical_flow
from gpu_kernels.flow import search as S
from gpu_kernels.flow.synthetic import natural_image, synthetic_flow, warp_image_by_flow


def _textured_interior(img, valid, border=16, min_std=0.02):
    """Valid pixels away from the border whose 9 x 9 neighbourhood has some texture."""
    from scipy import ndimage

    m = ndimage.uniform_filter(img, 9)
    sd = np.sqrt(np.maximum(ndimage.uniform_filter(img * img, 9) - m * m, 0))
    keep = valid & (sd > min_std)
    keep[:border] = keep[-border:] = False
    keep[:, :border] = keep[:, -border:] = False
    return keep


def _aee(res, flow, keep):
    return float(np.hypot(res.u - flow[..., 0], res.v - flow[..., 1])[keep].mean())


def test_translation_60px():
    img = natural_image("coffee", (288, 384))
    H, W = img.shape
    flow = np.zeros((H, W, 2), np.float32)
    flow[..., 0], flow[..., 1] = 52.0, -30.0          # 60 px
    img2, valid = warp_image_by_flow(img, flow)
    res = optical_flow(img, img2, device="cpu")        # the default method
    assert res.method == "search"
    keep = _textured_interior(img, valid)
    assert keep.mean() > 0.3
    err = _aee(res, flow, keep)
    assert err <= 1.0, err
    # the old default (TV-L1 from zero, 5 levels) does not reach this far
    old = optical_flow(img, img2, method="refine", device="cpu")
    assert _aee(old, flow, keep) > 3 * err


def test_rotation_plus_zoom_40px():
    img = natural_image("astronaut", (288, 384))
    H, W = img.shape
    f = synthetic_flow("rotation", (H, W), 1.0) + synthetic_flow("zoom", (H, W), 1.0)
    f *= np.float32(40.0 / np.hypot(f[..., 0], f[..., 1]).max())
    img2, valid = warp_image_by_flow(img, f)
    res = optical_flow(img, img2, device="cpu")
    keep = _textured_interior(img, valid)
    err = _aee(res, f, keep)
    assert err <= 1.0, err


def _middlebury():
    env = os.environ.get("GPULAB_SHARED_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    return root / "middlebury-flow"


#: the old default's (refine, TV-L1 5 x 5 x 10) AEE on Grove2 (640 x 480), CPU path, 2026-11-25
TODAY_GROVE2 = 0.172


@pytest.mark.slow
def test_middlebury_small_motion_not_worse():
    d = _middlebury() / "Grove2"
    if not (d / "flow10.flo").exists():
        pytest.skip(f"the shared Middlebury pair is absent ({d})")
    from app.io import flow_io, image_io

    a = image_io.read_image(d / "frame10.png")
    b = image_io.read_image(d / "frame11.png")
    gt, valid = flow_io.read_flow(d / "flow10.flo")
    res = optical_flow(a, b, device="cpu")
    err = float(np.hypot(res.u - gt[..., 0], res.v - gt[..., 1])[valid].mean())
    assert err <= TODAY_GROVE2, err


def test_stages_are_pure_and_shaped():
    from gpu_kernels.backend import get_backend

    be = get_backend("cpu")
    rng = np.random.default_rng(3)
    I1 = rng.random((40, 52)).astype(np.float32)
    I2 = np.roll(I1, (2, -3), (0, 1))
    u0 = np.zeros_like(I1)
    v0 = np.zeros_like(I1)
    before = [x.copy() for x in (I1, I2, u0, v0)]
    pu, pv, cost, conf = S.coarse_match(be, I1, I2, u0, v0, radius=4)
    assert pu.shape == (len(S.patch_grid(40, 8, 4)), len(S.patch_grid(52, 8, 4)))
    # a random texture rolled by (-3, 2): the interior patches find it exactly
    assert np.allclose(pu[1:-1, 1:-1], -3, atol=0.05) and np.allclose(pv[1:-1, 1:-1], 2, atol=0.05)
    assert (conf > 0).all() and (conf <= 1).all() and (cost >= 0).all()
    u, v = S.densify(be, I1, I2, pu, pv, conf, u0, v0)
    assert u.shape == I1.shape and np.isfinite(u).all()
    assert np.allclose(u[10:-10, 10:-10], -3, atol=0.1)
    for x, y in zip(before, (I1, I2, u0, v0), strict=True):
        assert np.array_equal(x, y)
    p1, p2 = S.build_pyramids(be, I1, I2, 3, blur=0.5)
    assert [p.shape for p in p1] == [(40, 52), (20, 26), (10, 13)]


def test_patch_grid_and_levels():
    assert S.patch_grid(8, 8, 4).tolist() == [0]
    g = S.patch_grid(101, 8, 4)
    assert g[0] == 0 and g[-1] == 93 and np.diff(g).max() <= 4
    assert S.coarsest_level((480, 640)) == 4
    assert S.coarsest_level((1080, 1920)) == 6
    assert S.coarsest_level((5, 5)) == 0


def test_tiny_and_flat_images():
    z = np.zeros((6, 7), np.float32)
    r = optical_flow(z, z, device="cpu")
    assert r.u.shape == (6, 7) and np.isfinite(r.u).all()
    flat = np.full((64, 64), 0.5, np.float32)
    r = optical_flow(flat, flat, device="cpu")
    assert np.abs(r.u).max() < 1e-3 and np.isfinite(r.quality).all()


@pytest.mark.parametrize("kw, word", [
    (dict(patch=5), "patch"), (dict(warps=[]), "warps"), (dict(warps="x"), "warps"), (dict(blur=-1), "blur"),
    (dict(radius=99), "radius"), (dict(stride=0), "stride"), (dict(eps=0), "eps"), (dict(median=4), "median"),
])
def test_bad_parameters_one_line(kw, word):
    img = np.zeros((32, 32), np.float32)
    with pytest.raises(FlowInputError) as e:
        optical_flow(img, img, method="search", device="cpu", **kw)
    assert word in str(e.value) and "\n" not in str(e.value)


def test_mask_zero_outside():
    img = natural_image("coffee", (96, 128))
    img2 = np.roll(img, 3, axis=1)
    mask = np.zeros(img.shape, bool)
    mask[20:80, 20:100] = True
    r = optical_flow(img, img2, method="search", mask=mask, device="cpu")
    assert np.all(r.u[~mask] == 0) and np.all(r.quality[~mask] == 0)
    assert abs(float(np.median(r.u[30:70, 30:90])) - 3.0) < 0.2


def _occlusion_scene():
    """A textured object moving 40 px over a background moving 4 px along x: ``(img1, img2,
    (y0, x0, dx), covered)``, ``covered`` the background of frame 1 hidden in frame 2."""
    rng = np.random.default_rng(7)
    from scipy import ndimage

    H, W = 160, 224
    bg = ndimage.gaussian_filter(rng.random((H + 8, W + 8)), 1.5).astype(np.float32)
    bg = (bg - bg.min()) / (bg.max() - bg.min())
    obj = natural_image("astronaut", (48, 56))
    img1 = bg[4:4 + H, 4:4 + W].copy()
    img2 = bg[4:4 + H, 0:W].copy()                   # background moves +4 px along x
    y0, x0, dx = 56, 40, 40
    img1[y0:y0 + 48, x0:x0 + 56] = obj
    img2[y0:y0 + 48, x0 + dx:x0 + dx + 56] = obj
    covered = np.zeros((H, W), bool)
    covered[y0:y0 + 48, x0 + dx - 4:x0 + dx + 52] = True
    covered[y0:y0 + 48, x0:x0 + 56] = False
    return img1, img2, (y0, x0, dx), covered


def test_quality_map_flags_occlusions():
    """A textured object moving 40 px over a background moving 4 px: the background the object
    covers in the second frame has no match, and the quality map says so."""
    img1, img2, (y0, x0, dx), covered = _occlusion_scene()
    H, W = img1.shape
    r = optical_flow(img1, img2, device="cpu")
    visible = np.zeros((H, W), bool)
    visible[16:-16, 16:-16] = True
    visible[y0 - 8:y0 + 56, x0 - 8:x0 + dx + 64] = False
    obj_px = np.zeros((H, W), bool)
    obj_px[y0 + 4:y0 + 44, x0 + 4:x0 + 52] = True
    assert abs(float(np.median(r.u[obj_px])) - dx) < 0.5      # the object's 40 px is found
    assert abs(float(np.median(r.u[visible])) - 4) < 0.2
    assert r.quality[covered].mean() < 0.5 * r.quality[visible].mean(), (r.quality[covered].mean(),
                                                                          r.quality[visible].mean())


def test_tool_stages_reuse_and_equal_a_full_run():
    """The tool's three stages: a quality-map change re-runs only the quality map, a TV-L1
    change keeps the pyramids, and each result equals a full run of the library."""
    from app.tools import flow
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    img = natural_image("astronaut", (72, 96))
    f = synthetic_flow("translation", (72, 96), 6.0)
    img2, _ = warp_image_by_flow(img, f)
    data = flow.FlowData(img, img2, "a", "b")
    cpu, cache = get_backend("cpu"), StageCache(cap_bytes=1 << 28)
    r1, rep = flow.PIPELINE.execute(data, flow.PARAMS.validate({}), device=cpu, cache=cache, scope="t")
    assert rep.ran[:3] == ["pyramids", "flow", "quality"]
    r2, rep = flow.PIPELINE.execute(data, flow.PARAMS.validate({"quality_map": "ncc"}), device=cpu, cache=cache,
                                    scope="t")
    assert rep.ran[0] == "quality" and {"pyramids", "flow"} <= set(rep.reused)
    one = S.inverse_search_flow(img, img2, quality="ncc", device="cpu")
    np.testing.assert_array_equal(r2.u, one.u)
    np.testing.assert_array_equal(r2.quality, one.quality)
    assert not np.array_equal(r1.quality, r2.quality)
    r3, rep = flow.PIPELINE.execute(data, flow.PARAMS.validate({"lam": 50.0}), device=cpu, cache=cache, scope="t")
    assert rep.ran[0] == "flow" and "pyramids" in rep.reused
    np.testing.assert_array_equal(r3.u, S.inverse_search_flow(img, img2, lam=50.0, device="cpu").u)


def test_other_methods_parameters_rerun_nothing():
    """The stages are keyed on the active method's parameters: with the search method, editing a
    block-matching or Lucas-Kanade parameter (a preset that sets them all) re-uses every stage, while
    a search parameter still re-runs the flow; with block matching, its block size re-runs it."""
    from app.tools import flow
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    img = natural_image("astronaut", (48, 64))
    img2, _ = warp_image_by_flow(img, synthetic_flow("translation", (48, 64), 3.0))
    data = flow.FlowData(img, img2, "a", "b")
    cpu, cache = get_backend("cpu"), StageCache(cap_bytes=1 << 28)

    def run(**p):
        return flow.PIPELINE.execute(data, flow.PARAMS.validate(p), device=cpu, cache=cache, scope="k")[1]

    run()
    rep = run(block=16, radius=6, window=15, seed="lk", tile_size=64)
    assert not rep.ran, rep.ran                                # nothing the search reads changed
    assert run(block=16, warps=3).ran[:1] == ["flow"]
    run(method="bm")
    assert run(method="bm", block=16).ran[:1] == ["flow"]
    assert not run(method="bm", block=16, patch=12, window=3).ran


@pytest.mark.parametrize("kw", [dict(edge=-1.0), dict(occ=-0.1), dict(radius_levels=0), dict(fb_level=-1),
                                dict(nonsense=1)])
def test_new_parameters_checked(kw):
    with pytest.raises(FlowInputError) as e:
        optical_flow(np.zeros((32, 32)), np.zeros((32, 32)), method="search", device="cpu", **kw)
    assert "\n" not in str(e.value)


def test_edge_and_occlusion_terms_run_and_recover_translation():
    img = natural_image("astronaut", (96, 128))
    f = synthetic_flow("translation", (96, 128), 20.0)
    img2, valid = warp_image_by_flow(img, f)
    r = S.inverse_search_flow(img, img2, edge=5.0, occ=0.05, radius_levels=2, device="cpu")
    err = np.hypot(r.u - f[..., 0], r.v - f[..., 1])[valid].mean()
    assert err < 0.5, err


def test_small_level_block_kernel_equals_per_iteration_launches(monkeypatch):
    """tv_iterate_block (every TV-L1 iteration of a small level in one block) against the two
    kernels per iteration, in the CUDA emulator, with and without the edge-aware weights."""
    import cuda_emu as emu

    if emu.available():
        pytest.skip(emu.available())
    from gpu_kernels.flow import refine

    be = emu.emu_backend()
    img = natural_image("astronaut", (30, 41))
    f = synthetic_flow("translation", (30, 41), 2.0)
    img2, _ = warp_image_by_flow(img, f)
    out = {}
    for small in (16384, 0):
        monkeypatch.setattr(refine, "SMALL_LEVEL", small)
        for edge in (0.0, 5.0):
            u = np.ones((30, 41), np.float32)
            v = np.zeros((30, 41), np.float32)
            refine._level(be, img.astype(np.float32), img2.astype(np.float32), u, v, None, warps=2, iters=5,
                          lam=100.0, theta=0.3, tau=0.25, median=5, edge=edge, occ=0.1)
            out[small, edge] = (np.asarray(u), np.asarray(v))
    for edge in (0.0, 5.0):
        np.testing.assert_allclose(out[16384, edge][0], out[0, edge][0], atol=1e-5)
        np.testing.assert_allclose(out[16384, edge][1], out[0, edge][1], atol=1e-5)
    assert not np.allclose(out[16384, 0.0][0], out[16384, 5.0][0])


def _qmap(d, residual=0.0, mag=0.0, ncc_img=True):
    """The "fb" quality map of a constant flow ``(mag, 0)`` over a textured picture whose
    backward flow disagrees by ``d`` px along y and whose second frame is off by ``residual``."""
    from gpu_kernels.backend import get_backend

    g1 = natural_image("astronaut", (40, 48)).astype(np.float32)
    g2 = g1 + np.float32(residual)
    u = np.full(g1.shape, mag, np.float32)
    v = np.zeros_like(u)
    back = (-u, np.full(g1.shape, d, np.float32))
    return S.quality_map(get_backend("cpu"), g1, g2, u, v, backward=(back[0].copy(), back[1]))[20, 24]


def test_quality_map_orders_inconsistent_pixels():
    """The map keeps ordering pixels far from forward-backward consistent (a Gaussian of the
    distance, the session-2 map, gave 0 to all of them) and lowers a pixel for a photometric
    residual or a larger motion; 0..1 and 1 only for a perfect pixel."""
    q = [_qmap(d) for d in (0.0, 0.5, 2.0, 5.0, 10.0)]
    assert all(a > b > 0 for a, b in zip(q, q[1:], strict=False)), q
    assert 0.9 < q[0] <= 1.0
    assert _qmap(1.0, residual=0.05) < _qmap(1.0)
    assert _qmap(1.0, mag=40.0) < _qmap(1.0, mag=0.0)
    # "matching failed" (< 0.25 in the window): 10 px inconsistent is, 0.1 px is not
    assert _qmap(10.0) < 0.25 < _qmap(0.1)


def test_patch_cost_equals_bilinear_reference():
    """The NumPy patch cost (one x lerp per window row, then the y lerp) equals the mean-normalised
    SSD of each patch against the second frame sampled bilinearly at the patch's shifted pixels,
    edges clamped, for sub-pixel, integer and far-off-frame shifts."""
    from gpu_kernels.ops.warp import _bilinear_np

    rng = np.random.default_rng(3)
    I1 = natural_image("astronaut", (30, 38)).astype(np.float32)
    I2 = np.roll(I1, 2, 1) + np.float32(0.01) * rng.random(I1.shape, dtype=np.float32)
    P = S._Patches(I1, 6, 3)
    n = P.Ny * P.Nx
    u = rng.normal(0, 4, n).astype(np.float32)
    v = rng.normal(0, 4, n).astype(np.float32)
    u[:3], v[3:6], u[6] = 1e3, -1e3, 2.0
    cost, r = P.cost(I2, u, v)
    xs = np.clip(P.fx + u[:, None], 0, I1.shape[1] - 1)
    ys = np.clip(P.fy + v[:, None], 0, I1.shape[0] - 1)
    w = _bilinear_np(I2, xs, ys)
    w = w - w.mean(1, keepdims=True)
    ref = w - P.T
    np.testing.assert_allclose(r, ref, atol=2e-6)
    np.testing.assert_allclose(cost, (ref * ref).sum(1), rtol=1e-4, atol=1e-7)


def _two_regions(H=48, W=64):
    """A picture of two textured regions split at x = 32 and a flow of (3, 0) on the left, (-2, 1)
    on the right."""
    rng = np.random.default_rng(5)
    g = np.where(np.arange(W)[None, :] < 32, 0.2, 0.8) + 0.02 * rng.random((H, W))
    u = np.where(np.arange(W)[None, :] < 32, 3.0, -2.0) * np.ones((H, 1))
    v = np.where(np.arange(W)[None, :] < 32, 0.0, 1.0) * np.ones((H, 1))
    return g.astype(np.float32), u.astype(np.float32), v.astype(np.float32)


def test_edge_aware_fill_spreads_along_the_image_not_across_edges():
    """Pixels marked inconsistent next to an image edge get the flow of their own side; the
    consistent pixels are kept exactly; without edge-awareness (a huge intensity scale) the
    other side's flow leaks in."""
    from gpu_kernels.backend import get_backend

    g, u, v = _two_regions()
    bad = np.zeros_like(g, bool)
    bad[10:38, 32:44] = True                           # right side, next to the edge
    ub, vb = u.copy(), v.copy()
    ub[bad], vb[bad] = 25.0, -17.0                     # garbage there
    ok = (~bad).astype(np.float32)
    cpu = get_backend("cpu")
    fu, fv = S.edge_aware_fill(cpu, g, ub, vb, ok)
    np.testing.assert_array_equal(fu[~bad], u[~bad])
    assert np.abs(fu[bad] - (-2.0)).max() < 0.05 and np.abs(fv[bad] - 1.0).max() < 0.05, (fu[bad].min(), fu[bad].max())
    lu, _ = S.edge_aware_fill(cpu, g, ub, vb, ok, sigma_r=1e6)
    assert np.abs(lu[bad] - (-2.0)).max() > 0.3        # the plain (not edge-aware) fill mixes the sides


def test_fill_inconsistent_uses_forward_backward_distance():
    """fill_inconsistent replaces exactly the pixels whose |f + b(x + f)| exceeds the threshold."""
    from gpu_kernels.backend import get_backend

    g, _, _ = _two_regions()
    u, v = np.full_like(g, 3.0), np.zeros_like(g)      # everything moves 3 px right ...
    u2 = u.copy()
    u2[20:24, 40:44] = 9.0                              # ... but a wrong patch, 6 px from consistent
    back = (np.full_like(u, -3.0), np.zeros_like(u))
    fu, _ = S.fill_inconsistent(get_backend("cpu"), g, g, u2, v, back, threshold=2.0)
    assert np.abs(fu[20:24, 40:44] - 3.0).max() < 0.05
    same = np.ones_like(u, bool)
    same[20:24, 40:44] = False
    np.testing.assert_array_equal(fu[same], u2[same])
    with pytest.raises(FlowInputError, match="fill"):
        S.inverse_search_flow(g, g, fill=-1.0, device="cpu")


def test_fill_lowers_error_where_the_background_is_covered():
    """The occlusion scene above: the background pixels hidden in the second frame have no
    match; the forward-backward fill gives them the background's flow (+4 px)."""
    img1, img2, _, covered = _occlusion_scene()
    on = S.inverse_search_flow(img1, img2, device="cpu")
    off = S.inverse_search_flow(img1, img2, device="cpu", fill=0.0)
    e_on = np.hypot(on.u[covered] - 4, on.v[covered]).mean()
    e_off = np.hypot(off.u[covered] - 4, off.v[covered]).mean()
    assert e_on < 0.7 * e_off, (e_on, e_off)


def test_fill_runs_at_the_working_level(monkeypatch):
    """Frames over ``max_pixels`` are filled at the working level (FILL_AT_WORK: the fill's
    threshold and scale in that level's pixels), then upsampled: the occlusion scene above, twice
    as large and solved at half size, gets its covered background's flow back as at full size."""
    import cv2

    img1, img2, _, covered = _occlusion_scene()
    H, W = img1.shape
    a, b = (cv2.resize(x, (2 * W, 2 * H), interpolation=cv2.INTER_LINEAR) for x in (img1, img2))
    cov = cv2.resize(covered.astype(np.uint8), (2 * W, 2 * H), interpolation=cv2.INTER_NEAREST) > 0
    shapes = []
    fill = S.fill_inconsistent
    monkeypatch.setattr(S, "fill_inconsistent", lambda be, g1, *x, **k: shapes.append(g1.shape) or fill(be, g1, *x, **k))
    kw = dict(max_pixels=H * W, device="cpu")
    on = S.inverse_search_flow(a, b, **kw)
    assert shapes == [(H, W)]                           # filled at the working level, once
    off = S.inverse_search_flow(a, b, fill=0.0, **kw)
    assert on.u.shape == (2 * H, 2 * W)
    e_on = np.hypot(on.u[cov] - 8, on.v[cov]).mean()
    e_off = np.hypot(off.u[cov] - 8, off.v[cov]).mean()
    assert e_on < 0.7 * e_off, (e_on, e_off)
    monkeypatch.setattr(S, "FILL_AT_WORK", False)       # the full-resolution fill: filled at 2H x 2W
    S.inverse_search_flow(a, b, **kw)
    assert shapes[-1] == (2 * H, 2 * W)
