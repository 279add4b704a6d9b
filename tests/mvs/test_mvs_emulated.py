"""The MVS GPU path (``mvs_optimize.cu``: the per-pixel plane optimiser with its warp-group
reductions and ballots; ``mvs_queue.cu``: the device's growing queue; their host code) run
on the CPU through the test suite's CUDA emulator (tests/cuda_emu), against the NumPy path.
This checks the kernels in CI, where there is no GPU; tests/mvs/test_mvs_gpu.py runs them on
a real GPU."""

from __future__ import annotations

import cuda_emu
import numpy as np
import pytest

# the same optimiser inputs as the GPU test (tests/mvs is on sys.path, as for every test folder)
from test_mvs_gpu import _inputs, view_scene

from gpu_kernels.mvs import optimize as opt
from gpu_kernels.mvs.optimize import (
    OptimizeParams,
    optimize_pixels,
    pack_views,
)

if cuda_emu.available():
    pytest.skip(cuda_emu.available(), allow_module_level=True)


def _optimize(syn, dev, nv, window, n=160):
    nb, geo, nbr, refid, xy, init, z = _inputs(syn, 0, n, 0.02, nv)
    prm = OptimizeParams(window=window, min_views=3)
    tex = pack_views(syn.scene.images, device=dev)
    out = optimize_pixels(tex, geo, nbr, refid, np.zeros(len(xy), np.int32), xy, init, nv=len(nb), params=prm,
                          device=dev)
    return {k: np.asarray(v) for k, v in out.items()}, z


def _compare(c, g, z):
    np.testing.assert_array_equal(g["status"], c["status"])
    ok = c["status"] >= 0
    assert ok.sum() > 0.2 * len(z)                            # some pixels converge ...
    assert (~ok).any()                                        # ... and some are rejected
    np.testing.assert_allclose(g["param"][ok, 0], c["param"][ok, 0], rtol=1e-4)
    np.testing.assert_allclose(g["conf"][ok], c["conf"][ok], atol=1e-4)
    assert (g["iters"] == c["iters"]).mean() > 0.95


@pytest.mark.parametrize("nv,window,host", [(4, 5, "cupy"), pytest.param(8, 7, "numpy", marks=pytest.mark.slow)])
def test_emulated_optimizer_equals_numpy(small_scene, nv, window, host):
    c, z = _optimize(small_scene, "cpu", nv, window)
    g, _ = _optimize(small_scene, cuda_emu.emu_backend(host), nv, window)
    _compare(c, g, z)


def test_a_broken_optimizer_is_caught(small_scene, monkeypatch):
    """The comparison can fail: with the optimiser's launch dropped, the outputs are whatever
    the buffers held."""
    real = opt.kernel
    monkeypatch.setattr(opt, "kernel", lambda *a, **k: (lambda *args, **kw: None) if a[2] == "mvs_optimize"
                        else real(*a, **k))
    c, z = _optimize(small_scene, "cpu", 4, 5)
    g, _ = _optimize(small_scene, cuda_emu.emu_backend(), 4, 5)
    with pytest.raises(AssertionError):
        _compare(c, g, z)


@pytest.mark.slow
def test_emulated_device_queue_follows_the_host_queue(small_scene):
    """Region growing on the device (mvs_queue.cu and mvs_grow_apply, launched batch by batch)
    against the host's queue: close sample counts, the same depths where both have one."""
    from gpu_kernels.mvs.stereo import reconstruct

    # 8 growing iterations, not the default 20: the emulated device spends ~0.45 s an iteration, and on this scene
    # iterations 9-20 add 3 of 2,383 samples (8: 2,380 on both sides, the same depths; session 20: 13.2 -> 7.9 s)
    kw = {"views": [0], "neighbors": 4, "batch_size": 4096, "fuse": False, "max_iter": 8}
    c = reconstruct(small_scene.scene, device="cpu", **kw).maps[0]
    g = reconstruct(small_scene.scene, device=cuda_emu.emu_backend("numpy"), **kw).maps[0]
    assert c.n_samples > 1000
    assert abs(c.n_samples - g.n_samples) < 0.03 * c.n_samples, (c.n_samples, g.n_samples)
    both = np.isfinite(c.depth) & np.isfinite(g.depth)
    assert both.sum() > 0.95 * min(c.n_samples, g.n_samples)
    rel = np.abs(c.depth[both] - g.depth[both]) / c.depth[both]
    assert np.median(rel) < 1e-4


def _odd_images():
    rng = np.random.default_rng(3)
    return [rng.integers(0, 256, (7, 9, 3), dtype=np.uint8),      # RGB
            rng.integers(0, 256, (5, 6), dtype=np.uint8),         # grey
            rng.integers(0, 256, (4, 5, 4), dtype=np.uint8),      # RGBA: the first three
            rng.integers(0, 256, (3, 2, 1), dtype=np.uint8),      # one channel, two columns
            rng.integers(0, 256, (2, 1, 3), dtype=np.uint8),      # one column: no x gradient
            rng.integers(0, 65536, (4, 4, 3), dtype=np.uint16)]   # 16 bit: packed on the host


def test_emulated_packing_equals_prepare_image():
    """``cuda/mvs_pack.cu`` (8-bit views packed on the device) gives prepare_image's values,
    bit for bit, in the float4 layout; views left out keep an empty slot."""
    ims = _odd_images()
    dev = cuda_emu.emu_backend("numpy")
    tex = pack_views(ims, device=dev, views=[0, 1, 2, 3, 4, 5])
    flat = np.asarray(tex.flat)
    for i, im in enumerate(ims):
        o, n = int(tex.pix_offset[i]), im.shape[0] * im.shape[1]
        want = opt.prepare_image(im).reshape(-1, 9)
        got = flat[o:o + n]
        np.testing.assert_array_equal(got[:, [0, 1, 2, 4, 5, 6, 8, 9, 10]], want, err_msg=str(i))
        assert not got[:, [3, 7, 11]].any()
    part = pack_views(ims, device=dev, views=[2])
    assert list(part.widths) == [0, 0, 5, 0, 0, 0]
    np.testing.assert_array_equal(np.asarray(part.flat)[:, [0, 1, 2]], opt.prepare_image(ims[2]).reshape(-1, 9)[:, :3])


def _fusion_inputs(small_scene):
    """Depth maps for the fusion tests: views 0-3's true depths and normals, 40 % of the pixels
    dropped and the rest disturbed by 0.2 %, random confidences (seeded). The fusion paths are
    compared on the same inputs; before session 10 these came from a CPU growing of the four
    views, the largest part of the tests' time."""
    rng = np.random.default_rng(10)
    views = [0, 1, 2, 3]
    deps, confs = [], []
    for v in views:
        d = np.array(small_scene.depths[v], np.float32)
        d[rng.random(d.shape) < 0.4] = np.nan
        deps.append((d * (1 + 0.002 * rng.standard_normal(d.shape))).astype(np.float32))
        confs.append(rng.random(d.shape).astype(np.float32))
    normals = [np.array(small_scene.normals[v], np.float32) for v in views]
    images = [small_scene.scene.images[v] for v in views]
    images[2] = None  # a view without colours: its partners add none
    kw = {"views": views, "normals": normals, "confidences": confs, "images": images}
    return deps, kw


def _same_cloud(a, b):
    assert len(a.points) > 1000
    assert abs(len(a.points) - len(b.points)) <= 0.001 * len(a.points) + 2
    if len(a.points) == len(b.points):
        np.testing.assert_allclose(np.asarray(b.points), a.points, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(np.asarray(b.normals), a.normals, atol=1e-5)
        assert np.abs(np.asarray(b.colors).astype(int) - a.colors).max() <= 1
        np.testing.assert_array_equal(np.asarray(b.source_view), a.source_view)
        assert (np.asarray(b.n_views) == a.n_views).mean() > 0.999


def test_emulated_fusion_equals_numpy(small_scene):
    """``cuda/mvs_fuse.cu`` (one launch per view against all the others) fuses as the NumPy path."""
    from gpu_kernels.mvs.fusion import fuse_depth_maps

    deps, kw = _fusion_inputs(small_scene)
    cams = small_scene.scene.cameras
    a = fuse_depth_maps(cams, deps, device="cpu", **kw)
    b = fuse_depth_maps(cams, deps, device=cuda_emu.emu_backend("cupy"), **kw)
    _same_cloud(a, b)
    assert (np.asarray(b.n_views) >= 2).all() and set(np.unique(b.source_view)) <= set(kw["views"])


def test_a_fusion_without_marking_is_caught(small_scene, monkeypatch):
    """Without the marking launch every sample is emitted again by the views that confirmed it."""
    from gpu_kernels.mvs import fusion

    deps, kw = _fusion_inputs(small_scene)
    cams = small_scene.scene.cameras
    a = fusion.fuse_depth_maps(cams, deps, device="cpu", **kw)
    real = fusion.kernel
    monkeypatch.setattr(fusion, "kernel", lambda *x, **k: (lambda *args, **kw_: None) if x[2] == "mvs_fuse_mark"
                        else real(*x, **k))
    b = fusion.fuse_depth_maps(cams, deps, device=cuda_emu.emu_backend("cupy"), **kw)
    with pytest.raises(AssertionError):
        _same_cloud(a, b)


@pytest.mark.parametrize("window", [5, 7])
def test_emulated_first_states_equal_the_host_ones(small_scene, window):
    """``mvs_grow_init`` (border, mask and textured test in one launch) gives the states, seeds
    and counts of textured_mask + _Group.first_state, on three views with a mask on one."""
    from gpu_kernels.mvs import grow
    from gpu_kernels.mvs.stereo import prepare_views

    sc = small_scene.scene
    dev = cuda_emu.emu_backend("numpy")
    prep = prepare_views(sc, views=[0, 1, 2], neighbors=5, min_views=3, device="cpu", pack=False)
    refs = prep.views
    prm = OptimizeParams(min_views=3, window=window)
    g = grow._Group(sc.cameras, refs, [prep.neighbors[v] for v in refs], [prep.view_seeds[v] for v in refs], prm,
                    80.0, None, 15)
    masks = [None] * sc.n_views
    H, W = sc.images[1].shape[:2]
    masks[1] = np.zeros((H, W), bool)
    masks[1][:, : W // 2] = True
    textured = [grow.textured_mask(opt.prepare_image(sc.images[r]), window, prm.min_ref_std) for r in refs]
    want = g.first_state(np, textured, masks)
    got = g.first_state_device(dev, np, pack_views(sc.images, device=dev), prm, masks)
    for w, x in zip(want, got, strict=True):
        np.testing.assert_array_equal(np.asarray(x), w)
    state = want[0]
    free = state == grow._FREE
    assert 1000 < free.sum() < 0.9 * state.size
    assert not free[g.offs[1]:g.offs[2]].reshape(H, W)[:, W // 2:].any()  # the mask closed them
    assert want[3] > 0  # seeds on free pixels


@pytest.mark.parametrize("seed,neighbors", [(0, 4), (1, 8), (2, 11)])
def test_emulated_view_selection_equals_numpy(seed, neighbors):
    """``cuda/mvs_views.cu`` (every reference view's greedy steps in one launch) chooses the
    views NumPy's select_views chooses, in the same order, fill-in by angle included."""
    from gpu_kernels.mvs.views import greedy_device, select_views, track_membership

    cams, pts, vis = view_scene(seed)
    member = track_membership(vis, len(pts), len(cams))
    refs = list(range(len(cams)))
    g = greedy_device(cuda_emu.emu_backend("cupy"), cams, pts, member, refs, neighbors)
    for r in refs:
        want = select_views(cams, pts, vis, r, max_neighbors=neighbors, min_views=neighbors, member=member)
        got = select_views(cams, pts, vis, r, max_neighbors=neighbors, min_views=neighbors, member=member,
                           _greedy=g[r])
        assert got == want, (r, got, want)
    assert any(len(g[r]) >= 2 for r in refs)  # the greedy steps did choose views


def test_a_wrong_view_selection_is_caught(monkeypatch):
    """The comparison can fail: with the parallax factor left out of the kernel's scores (alpha_max
    huge: every factor ~0), the greedy steps choose other views or none."""
    from gpu_kernels.mvs import views as vw

    cams, pts, vis = view_scene(1)
    member = vw.track_membership(vis, len(pts), len(cams))
    monkeypatch.setattr(vw.np, "radians", lambda x: 1e6)
    g = vw.greedy_device(cuda_emu.emu_backend("cupy"), cams, pts, member, list(range(len(cams))), 8)
    monkeypatch.undo()
    want = {r: vw.select_views(cams, pts, vis, r, max_neighbors=8, member=member) for r in range(len(cams))}
    assert any(g[r] != want[r] for r in want)


def test_emulated_sample_counts_per_view():
    """``mvs_count_samples`` (each view's finite depths, counted on the device before the maps
    come down) equals NumPy's count, with views that end inside a thread's 16 pixels."""
    from gpu_kernels.backend import kernel

    dev = cuda_emu.emu_backend("numpy")
    rng = np.random.default_rng(5)
    sizes = [37, 5, 300, 1, 129]
    offs = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    d = np.where(rng.random(offs[-1]) < 0.6, rng.random(offs[-1]), np.nan).astype(np.float32)
    d[40] = np.inf
    k = kernel(dev, "mvs_queue.cu", "mvs_count_samples", {"LEVELS": 256})
    counts = dev.xp.zeros(len(sizes), dev.xp.int32)
    k(((offs[-1] + 4095) // 4096,), (256,), (dev.xp.asarray(d), np.int32(offs[-1]), dev.xp.asarray(offs[:-1]),
                                             np.int32(len(sizes)), counts))
    want = [int(np.isfinite(d[offs[a]:offs[a + 1]]).sum()) for a in range(len(sizes))]
    assert list(np.asarray(counts)) == want and min(want) >= 0 and sum(want) > 200
