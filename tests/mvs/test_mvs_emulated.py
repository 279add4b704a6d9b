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
from test_mvs_gpu import _inputs

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

    kw = {"views": [0], "neighbors": 4, "batch_size": 4096, "fuse": False}
    c = reconstruct(small_scene.scene, device="cpu", **kw).maps[0]
    g = reconstruct(small_scene.scene, device=cuda_emu.emu_backend("numpy"), **kw).maps[0]
    assert c.n_samples > 1000
    assert abs(c.n_samples - g.n_samples) < 0.03 * c.n_samples, (c.n_samples, g.n_samples)
    both = np.isfinite(c.depth) & np.isfinite(g.depth)
    assert both.sum() > 0.95 * min(c.n_samples, g.n_samples)
    rel = np.abs(c.depth[both] - g.depth[both]) / c.depth[both]
    assert np.median(rel) < 1e-4
