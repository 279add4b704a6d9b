"""Review (session 9, reviewer A): where the probe of the three-term sums' orders finds no single order
(``thickness._sum3_orders`` gives None for the device's or the host's), ``face_thickness`` on a CUDA array
module runs the host loop with the per-step search, and gives what that loop gives with the ball kernel
switched off. Checked here with a stand-in array module named "cupy" and a NumPy search of the product
path's formula (the GPU tests only see devices where the probe succeeds)."""

from __future__ import annotations

import numpy as np
import pytest
from test_speed9_thickness import _box_mesh

from gpu_kernels.mesh import thickness as th


def _numpy_search(xp, samples, **kw):
    s = np.asarray(samples)
    s2 = (s * s).sum(axis=1)

    def query(c):
        d2 = (c * c).sum(axis=1)[:, None] + s2[None, :] - 2.0 * c @ s.T
        j = np.argmin(d2, axis=1)
        return np.sqrt(np.maximum(d2[np.arange(len(c)), j], 0.0)), j
    return query


@pytest.mark.parametrize("orders", [(None, 2), (0, None), (None, None)])
def test_an_unknown_order_falls_back_to_the_host_loop(monkeypatch, orders):
    from gpu_kernels.mesh.dualgraph import dual_graph

    v, f = _box_mesh()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    fake = type("FakeCupy", (), {"__name__": "cupy"})()
    monkeypatch.setattr(th, "_nearest_on_device", _numpy_search)
    monkeypatch.setattr(th, "LOOP_ON_DEVICE", False)
    ref = th.face_thickness(v, f, g.centroids, g.normals, xp=fake)
    monkeypatch.setattr(th, "LOOP_ON_DEVICE", True)
    monkeypatch.setattr(th, "_sum3_orders", lambda xp: orders)
    got = th.face_thickness(v, f, g.centroids, g.normals, xp=fake)
    np.testing.assert_array_equal(got, ref)
    diag = float(np.linalg.norm(v.max(axis=0) - v.min(axis=0)))
    assert got.max() < 0.5 * diag and len(np.unique(got)) > 5     # the loop ran: the balls shrank


def test_the_ball_kernel_is_launched_in_chunks_of_faces_emulated(monkeypatch):
    """One launch of mesh_thick_balls costs faces x steps x samples: it goes in launches of at most
    ``BALL_FACES`` faces (a display GPU's watchdog), and the chunks give the one launch's radii bit for bit."""
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    from gpu_kernels import backend
    from gpu_kernels.mesh.dualgraph import dual_graph

    v, f = _box_mesh()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    n = th._orient_outward(v, f, np.asarray(g.normals, dtype=np.float64))
    p = np.asarray(g.centroids, dtype=np.float64)
    samples = np.concatenate([v[np.unique(f)], p])
    diag = float(np.linalg.norm(samples.max(axis=0) - samples.min(axis=0)))
    grids = []
    real = backend.kernel

    def spy_kernel(*a, **k):
        fn = real(*a, **k)

        def launch(grid, block, args, **kw):
            grids.append(int(grid[0]))
            return fn(grid, block, args, **kw)
        return launch
    monkeypatch.setattr(backend, "kernel", spy_kernel)
    kw = dict(orders=(0, 2), device=cuda_emu.emu_backend())
    one = th._balls_on_device(cuda_emu.xp, p, n, samples, diag, **kw)
    assert grids == [len(p)]
    grids.clear()
    monkeypatch.setattr(th, "BALL_FACES", 100)
    chunked = th._balls_on_device(cuda_emu.xp, p, n, samples, diag, **kw)
    assert max(grids) <= 100 and sum(grids) == len(p) and len(grids) == -(-len(p) // 100)
    assert np.array_equal(np.asarray(chunked).view(np.int64), np.asarray(one).view(np.int64))
    assert len(np.unique(one)) > 5
