"""GPU path (cuda/mvs_optimize.cu) against the NumPy path. Needs CuPy and a CUDA device."""

from __future__ import annotations

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
