"""GPU path (cuda/mvs_optimize.cu) against the NumPy path. Needs CuPy and a CUDA device."""

from __future__ import annotations

import dataclasses
import gc
import threading

import numpy as np
import pytest

from gpu_kernels.mvs.fusion import consistency_counts, fuse_depth_maps
from gpu_kernels.mvs.optimize import (
    OptimizeParams,
    build_geometry,
    optimize_pixels,
    pack_views,
    threads_per_pixel,
)
from gpu_kernels.mvs.stereo import reconstruct
from gpu_kernels.mvs.views import select_views

pytestmark = pytest.mark.gpu


def _inputs(syn, ref, n, pert, nv, seed=0):
    sc = syn.scene
    nb = select_views(sc.cameras, None, None, ref, max_neighbors=nv, min_views=nv)
    geo, nbr, refid = build_geometry(sc.cameras, [ref], [nb], threads_per_pixel(len(nb)))
    H, W = syn.depths[ref].shape
    rng = np.random.default_rng(seed)
    ys, xs = np.mgrid[4:H - 4, 4:W - 4]
    pick = rng.choice(xs.size, n, replace=False)
    xs, ys = xs.ravel()[pick], ys.ravel()[pick]
    z = syn.depths[ref][ys, xs].astype(np.float64)
    init = np.stack([z * (1 + pert * rng.uniform(-1, 1, n)), rng.normal(0, 1e-3, n), rng.normal(0, 1e-3, n)], 1)
    return nb, geo, nbr, refid, np.stack([xs, ys], 1), init, z


@pytest.mark.parametrize("nv,window", [(4, 5), (6, 5), (8, 7)])
def test_optimizer_gpu_matches_cpu(small_scene, nv, window):
    syn = small_scene
    nb, geo, nbr, refid, xy, init, z = _inputs(syn, 0, 1500, 0.02, nv)
    prm = OptimizeParams(window=window, min_views=3)
    out = {}
    for dev in ("cpu", "cuda"):
        tex = pack_views(syn.scene.images, device=dev)
        out[dev] = optimize_pixels(tex, geo, nbr, refid, np.zeros(len(xy), np.int32), xy, init, nv=len(nb),
                                   params=prm, device=dev)
    c, g = out["cpu"], out["cuda"]
    same_status = (c["status"] == g["status"]).mean()
    assert same_status > 0.97, same_status
    both = (c["status"] >= 0) & (g["status"] >= 0)
    assert both.sum() > 0.3 * len(xy)
    rel = np.abs(c["param"][both, 0] - g["param"][both, 0]) / z[both]
    assert (rel < 1e-3).mean() > 0.97, (rel < 1e-3).mean()
    assert (np.abs(c["conf"][both] - g["conf"][both]) < 2e-3).mean() > 0.97
    assert (c["iters"] == g["iters"]).mean() > 0.9
    # the views kept active agree too
    assert (c["status"][both] == g["status"][both]).all()


def test_reconstruct_gpu_matches_cpu_and_truth(small_scene):
    syn = small_scene
    kw = {"views": [0, 1], "neighbors": 6, "batch_size": 512}
    cpu = reconstruct(syn.scene, device="cpu", **kw)
    gpu = reconstruct(syn.scene, device="cuda", views_together=2, **kw)
    for mc, mg in zip(cpu.maps, gpu.maps, strict=True):
        gt = syn.depths[mg.view]
        ok = np.isfinite(mg.depth)
        rel = np.abs(mg.depth[ok] - gt[ok]) / gt[ok]
        assert (rel < 0.01).mean() > 0.8 and ok.mean() > 0.2
        nc, ng = mc.n_samples, mg.n_samples
        assert abs(nc - ng) < 0.1 * nc, (nc, ng)
        both = np.isfinite(mc.depth) & ok
        assert both.sum() > 0.8 * min(nc, ng)
        d = np.abs(mc.depth[both] - mg.depth[both]) / gt[both]
        assert (d < 2e-3).mean() > 0.9
    assert gpu.stats["peak_device_bytes"] > 0


def test_fusion_gpu_matches_cpu(small_scene):
    syn = small_scene
    deps = [syn.depths[0], syn.depths[1], syn.depths[2]]
    fc = fuse_depth_maps(syn.scene.cameras, deps, views=[0, 1, 2], device="cpu")
    fg = fuse_depth_maps(syn.scene.cameras, deps, views=[0, 1, 2], device="cuda")
    assert abs(len(fc.points) - len(fg.points)) <= 0.001 * len(fc.points) + 2
    cc = consistency_counts(syn.scene.cameras, deps, views=[0, 1, 2], device="cpu")
    cg = consistency_counts(syn.scene.cameras, deps, views=[0, 1, 2], device="cuda")
    for a, b in zip(cc, cg, strict=True):
        assert (a == b).mean() > 0.999


def test_device_queue_is_deterministic_with_and_without_graphs(small_scene, monkeypatch):
    """The device queue gives the same maps on every run (a live re-run must equal a full run),
    whether a batch is replayed as a CUDA graph or launched kernel by kernel."""
    kw = {"views": [0, 1], "neighbors": 6, "batch_size": 512, "views_together": 2, "fuse": False}
    a = reconstruct(small_scene.scene, device="cuda", **kw)
    b = reconstruct(small_scene.scene, device="cuda", **kw)
    monkeypatch.setenv("GPULAB_MVS_GRAPH", "0")
    c = reconstruct(small_scene.scene, device="cuda", **kw)
    for x, y, z in zip(a.maps, b.maps, c.maps, strict=True):
        for f in ("depth", "normal", "conf", "iters"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f))
            np.testing.assert_array_equal(getattr(x, f), getattr(z, f))
        assert x.n_samples > 1000
    assert a.stats["batches"] > 5


def test_device_queue_follows_the_host_queue(small_scene):
    """The device path is the host path's state machine: close sample counts per view at several
    batch sizes (float rounding differs, so the fronts drift a little)."""
    for b in (64, 4096):
        kw = {"views": [0], "neighbors": 6, "batch_size": b, "fuse": False}
        c = reconstruct(small_scene.scene, device="cpu", **kw).maps[0]
        g = reconstruct(small_scene.scene, device="cuda", **kw).maps[0]
        assert abs(c.n_samples - g.n_samples) < 0.03 * c.n_samples, (b, c.n_samples, g.n_samples)
        both = np.isfinite(c.depth) & np.isfinite(g.depth)
        assert both.sum() > 0.95 * min(c.n_samples, g.n_samples)


def test_sample_split_layouts_agree(small_scene, monkeypatch):
    """SPL threads per (pixel, view) change only the summation order."""
    syn = small_scene
    nb, geo, nbr, refid, xy, init, z = _inputs(syn, 0, 800, 0.02, 8)
    prm = OptimizeParams(min_views=3)
    tex = pack_views(syn.scene.images, device="cuda")
    out = {}
    for spl in ("1", "2", "4"):
        monkeypatch.setenv("GPULAB_MVS_SPL", spl)
        out[spl] = optimize_pixels(tex, geo, nbr, refid, np.zeros(len(xy), np.int32), xy, init, nv=len(nb),
                                   params=prm, device="cuda")
    for spl in ("2", "4"):
        a, b = out["1"], out[spl]
        assert (a["status"] == b["status"]).mean() > 0.98
        both = (a["status"] >= 0) & (b["status"] >= 0)
        assert both.sum() > 0.3 * len(xy)
        assert (np.abs(a["param"][both, 0] - b["param"][both, 0]) / z[both] < 1e-4).mean() > 0.98


def test_fusion_kernel_matches_the_cupy_path_and_the_cpu(small_scene, monkeypatch):
    """``cuda/mvs_fuse.cu`` against the CuPy path it replaced (``GPULAB_MVS_FUSE_KERNEL=0``) and
    the NumPy path, on grown maps with normals, confidences and colours (one view without)."""
    r = reconstruct(small_scene.scene, views=[0, 1, 2, 3], device="cpu", min_views=3, neighbors=5, max_iter=6,
                    fuse=False)
    images = [small_scene.scene.images[v] for v in r.views]
    images[2] = None
    kw = {"views": r.views, "normals": [m.normal for m in r.maps], "confidences": [m.conf for m in r.maps],
          "images": images}
    deps = [m.depth for m in r.maps]
    cams = small_scene.scene.cameras
    new = fuse_depth_maps(cams, deps, device="cuda", **kw)
    monkeypatch.setenv("GPULAB_MVS_FUSE_KERNEL", "0")
    old = fuse_depth_maps(cams, deps, device="cuda", **kw)
    cpu = fuse_depth_maps(cams, deps, device="cpu", **kw)
    assert len(new.points) > 1000
    for f in dataclasses.fields(new):  # the CuPy path's cloud, bit for bit
        np.testing.assert_array_equal(getattr(new, f.name), getattr(old, f.name), err_msg=f.name)
    for ref in (old, cpu):
        assert abs(len(new.points) - len(ref.points)) <= 0.001 * len(ref.points) + 2
        if len(new.points) == len(ref.points):
            np.testing.assert_allclose(new.points, ref.points, rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(new.normals, ref.normals, atol=1e-5)
            assert np.abs(new.colors.astype(int) - ref.colors).max() <= 1
            np.testing.assert_array_equal(new.source_view, ref.source_view)


def test_first_states_on_the_device_give_the_same_maps(small_scene, monkeypatch):
    """``mvs_grow_init`` against textured_mask (cupyx) + first_state: the same grown maps."""
    kw = {"views": [0, 1, 2], "neighbors": 5, "min_views": 3, "batch_size": 512, "views_together": 3,
          "fuse": False}
    a = reconstruct(small_scene.scene, device="cuda", **kw)
    monkeypatch.setenv("GPULAB_MVS_INIT_KERNEL", "0")
    b = reconstruct(small_scene.scene, device="cuda", **kw)
    for x, y in zip(a.maps, b.maps, strict=True):
        for f in ("depth", "normal", "conf", "iters", "hs", "ht"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
        assert x.n_samples > 1000
        assert x.stats["free"] == y.stats["free"]


@pytest.mark.parametrize("sizes", [[(3,), (5, 3)], [(9_000_001,), (3_000_001, 3), (4_500_000,)],
                                   [(12_000_001,), (5_000_001, 3)]])
def test_staged_download_equals_get(sizes):
    """transfer.to_host (two pinned halves, threaded copy-outs) returns what ``get`` does, for
    small arrays and for several chunks with odd ends."""
    import cupy as cp

    from gpu_kernels.mvs.transfer import to_device, to_host

    rng = cp.random.default_rng(0)
    arrs = [rng.standard_normal(s, dtype=cp.float32) for s in sizes]
    arrs.append((rng.random(sizes[0][0]) * 1000).astype(cp.int16))
    s = cp.cuda.Stream(non_blocking=True)
    got = to_host(arrs, s)
    for a, g in zip(arrs, got, strict=True):
        assert isinstance(g, np.ndarray) and g.shape == a.shape and g.dtype == a.dtype
        np.testing.assert_array_equal(g, a.get())
    # and back up (transfer.to_device: the same halves, threaded copy-ins), None kept in place
    up = to_device([got[0], None, *got[1:]], cp)
    assert up[1] is None
    for a, u in zip(arrs, [up[0], *up[2:]], strict=True):
        assert isinstance(u, cp.ndarray) and u.shape == a.shape and u.dtype == a.dtype
        assert bool((u == a).all())


def test_fusion_while_the_maps_come_down_equals_fusion_after(small_scene, monkeypatch):
    """reconstruct on the GPU fuses the grown maps where they are while they come down (and the
    colours from the packed views' 8-bit images): the same maps and the same cloud, bit for bit,
    as waiting for the maps and uploading them again (``GPULAB_MVS_KEEP_DEVICE=0``)."""
    kw = {"views": [0, 1, 2, 3], "neighbors": 5, "min_views": 3, "batch_size": 1024, "views_together": 4}
    a = reconstruct(small_scene.scene, device="cuda", **kw)
    monkeypatch.setenv("GPULAB_MVS_KEEP_DEVICE", "0")
    b = reconstruct(small_scene.scene, device="cuda", **kw)
    assert a.stats["samples"] == b.stats["samples"] > 4000
    for x, y in zip(a.maps, b.maps, strict=True):
        assert x.device is None and x.pending is None  # waited for, device copies dropped
        for f in ("depth", "normal", "conf", "iters", "hs", "ht"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
        assert x.stats["samples"] == x.n_samples
    assert len(a.fused.points) > 1000
    for f in dataclasses.fields(a.fused):
        np.testing.assert_array_equal(getattr(a.fused, f.name), getattr(b.fused, f.name), err_msg=f.name)


def test_view_selection_on_the_device_equals_numpy():
    """``cuda/mvs_views.cu`` (every reference view's greedy steps in one launch) chooses the views
    that select_views chooses in NumPy, in the same order, at several numbers of neighbours."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.mvs.views import greedy_device, track_membership

    for seed, k in ((0, 4), (1, 8), (2, 11), (3, 6)):
        cams, pts, vis = view_scene(seed)
        member = track_membership(vis, len(pts), len(cams))
        g = greedy_device(get_backend("cuda"), cams, pts, member, list(range(len(cams))), k)
        for r in range(len(cams)):
            want = select_views(cams, pts, vis, r, max_neighbors=k, min_views=k, member=member)
            assert select_views(cams, pts, vis, r, max_neighbors=k, min_views=k, member=member,
                                _greedy=g[r]) == want, (seed, r)
        assert any(len(v) >= 2 for v in g.values())


def test_staged_copies_never_collect_garbage_off_the_gui_thread(small_scene):
    """The GC guard's rule (app/ui/gc_guard.py: the automatic collector off, collections only in the
    GUI thread): transfer.py's copy threads and the maps' background download run no collection
    and do not turn the collector back on (a collection there could run a Qt destructor)."""
    import cupy as cp

    from gpu_kernels.mvs.transfer import to_device, to_host

    seen = []

    def note(phase, info):
        if phase == "start":
            seen.append(threading.current_thread().name)

    was = gc.isenabled()
    gc.disable()
    gc.callbacks.append(note)
    try:
        arrs = [cp.arange(12_000_000, dtype=cp.float32), cp.ones((4_000_000, 3), cp.float32)]
        for _ in range(3):
            got = to_host(arrs, cp.cuda.Stream(non_blocking=True))
            up = to_device(got, cp)
            junk = [[] for _ in range(5000)]  # allocations that would trigger a collection if it were on
            for j in junk:
                j.append(j)
            del junk
        # and a reconstruction whose maps come down in the background thread while it fuses
        res = reconstruct(small_scene.scene, views=[0, 1, 2], device="cuda", neighbors=5, min_views=3,
                          batch_size=1024)
        assert res.fused is not None and res.stats["samples"] > 3000
        assert not gc.isenabled()
        assert seen == [], seen
        assert bool((up[0] == arrs[0]).all())
    finally:
        gc.callbacks.remove(note)
        if was:
            gc.enable()


def view_scene(seed: int, n_views: int = 12, n_points: int = 400):
    """A ring of cameras around random points, each point seen by a random run of views."""
    from gpu_kernels.mvs.camera import look_at

    rng = np.random.default_rng(seed)
    ang = np.sort(rng.uniform(0, 2 * np.pi, n_views))
    cams = [look_at([3 * np.cos(a), 3 * np.sin(a), rng.uniform(0.5, 1.5)], [0, 0, 0], [0, 0, 1],
                    focal=float(rng.uniform(80, 160)), width=64, height=48) for a in ang]
    pts = rng.normal(scale=0.4, size=(n_points, 3))
    vis = []
    for _ in range(n_points):
        s, k = rng.integers(0, n_views), rng.integers(2, 6)
        vis.append(np.unique((s + np.arange(k)) % n_views))
    return cams, pts, vis


def test_a_download_while_the_halves_are_taken_uses_halves_of_its_own():
    """transfer.to_host(if_free=True) (the fused cloud's download, while the maps' download holds
    the device's staging halves) brings the same arrays down through pinned halves of its own,
    without waiting for the others; and through the device's halves when they are free."""
    import cupy as cp

    from gpu_kernels.mvs import transfer

    rng = cp.random.default_rng(1)
    arrs = [rng.standard_normal(3_000_001, dtype=cp.float32), (rng.random(1_000_003) * 255).astype(cp.uint8)]
    want = [a.get() for a in arrs]
    s = cp.cuda.Stream(non_blocking=True)
    _mem, _views, busy = transfer._halves(cp)
    assert busy.acquire(timeout=10)
    try:
        got = transfer.to_host(arrs, s, min_bytes=1 << 20, if_free=True)  # would deadlock if it waited
    finally:
        busy.release()
    free = transfer.to_host(arrs, s, min_bytes=1 << 20, if_free=True)
    for w, g, f in zip(want, got, free, strict=True):
        np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(f, w)
    ones, jobs = transfer.host_arrays([((5, 7), np.float32), ((9_000_000,), np.int16)])
    for j in jobs:
        j.result()
    assert [o.shape for o in ones] == [(5, 7), (9_000_000,)] and not ones[1].any()


def test_maps_read_at_once_while_they_come_down_are_the_whole_maps(small_scene):
    """grow_views(keep_device=True) returns while the maps come down; reading a map's arrays at
    once (no wait called) gives the whole downloaded maps, the same as growing without it."""
    from gpu_kernels.mvs.stereo import grow_views, prepare_views

    sc = small_scene.scene
    kw = {"min_views": 3, "batch_size": 1024, "views_together": 6, "device": "cuda"}
    prep = prepare_views(sc, views=[0, 1, 2, 3, 4, 5], neighbors=5, min_views=3, device="cuda")
    ref, _ = grow_views(sc, prep, **kw)
    got, _ = grow_views(sc, prep, keep_device=True, **kw)
    # returned before anything waited: each map still holds its download and the device's maps
    # (only a wait clears them, however far the download got)
    assert all(m.__dict__["pending"] is not None and m.device is not None for m in got)
    for x, y in zip(ref, got, strict=True):
        for f in ("depth", "normal", "conf", "iters", "hs", "ht"):  # the first read waits
            np.testing.assert_array_equal(getattr(y, f), getattr(x, f), err_msg=f)
        assert y.pending is None and y.device is None


def test_pinned_downloads_equal_the_staged_ones(small_scene, monkeypatch):
    """The maps and the fused cloud come down straight into page-locked arrays (one DMA each):
    the same maps and cloud, bit for bit, as through the staging halves into ordinary arrays
    (``GPULAB_MVS_PINNED=0``); and pinned maps go back up (the tool's fusion stage) unchanged."""
    import cupy as cp

    from gpu_kernels.mvs.transfer import is_pinned, to_device

    kw = {"views": [0, 1, 2, 3], "neighbors": 5, "min_views": 3, "batch_size": 1024, "views_together": 4}
    a = reconstruct(small_scene.scene, device="cuda", **kw)
    a2 = reconstruct(small_scene.scene, device="cuda", fuse=False, **kw)
    monkeypatch.setenv("GPULAB_MVS_PINNED", "0")
    b = reconstruct(small_scene.scene, device="cuda", **kw)
    assert all(is_pinned(m.depth) and is_pinned(m.normal) for m in a.maps + a2.maps)
    assert is_pinned(a.fused.points) and not is_pinned(b.maps[0].depth)
    for x, x2, y in zip(a.maps, a2.maps, b.maps, strict=True):
        for f in ("depth", "normal", "conf", "iters", "hs", "ht"):
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
            np.testing.assert_array_equal(getattr(x2, f), getattr(y, f), err_msg=f)
    for f in dataclasses.fields(a.fused):
        np.testing.assert_array_equal(getattr(a.fused, f.name), getattr(b.fused, f.name), err_msg=f.name)
    host = [m.depth for m in a.maps] + [None] + [b.maps[0].depth, a.maps[1].normal]
    up = to_device(host, cp, min_bytes=0)
    assert up[len(a.maps)] is None
    for h, u in zip(host, up, strict=True):
        if h is not None:
            np.testing.assert_array_equal(u.get(), h)



def test_the_kept_pool_gives_the_same_maps_and_cloud(small_scene, monkeypatch):
    """CuPy's pool kept between calls (session 6b): the same maps and cloud, bit for bit, as
    freeing the pool at the end of every call (``GPULAB_MVS_POOL_KEEP=0``), on the second call
    too; after a call the kept pool holds more than a freed one (only the blocks of arrays dropped
    after the release). Since session 7 the kept pool's blocks are partly in use: the set-up and
    the grower kept for the next call (the second call reuses both)."""
    import cupy as cp

    pool = cp.get_default_memory_pool()
    kw = {"views": "all", "neighbors": 5, "min_views": 3, "batch_size": 1024}
    monkeypatch.setenv("GPULAB_MVS_POOL_KEEP", "0")
    b = reconstruct(small_scene.scene, device="cuda", **kw)
    freed = pool.total_bytes()
    monkeypatch.delenv("GPULAB_MVS_POOL_KEEP")
    for _ in range(2):  # the second call on the kept pool
        a = reconstruct(small_scene.scene, device="cuda", **kw)
        assert pool.total_bytes() > freed
        assert a.stats["samples"] == b.stats["samples"]
        for x, y in zip(a.maps, b.maps, strict=True):
            for f in ("depth", "normal", "conf", "iters", "hs", "ht"):
                np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
        for f in dataclasses.fields(a.fused):
            np.testing.assert_array_equal(getattr(a.fused, f.name), getattr(b.fused, f.name), err_msg=f.name)
    pool.free_all_blocks()
