"""The thickness feature (shrinking-ball shape diameter, gpu_kernels.mesh.thickness) and its
use in the merges (dualgraph.SDF_MERGE, issue 22)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import boundary, dualgraph
from gpu_kernels.mesh.dualgraph import dual_graph
from gpu_kernels.mesh.thickness import face_thickness

FISH = Path(__file__).with_name("data") / "fish4000.npz"


def _fish():
    z = np.load(FISH)
    return z["vertices"].astype(np.float64), z["faces"].astype(np.int64), z["truth"].astype(np.int64)


def test_fins_are_thinner_than_the_body():
    v, f, truth = _fish()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=True)
    th = g.thickness
    assert th.shape == (len(f),) and np.all(np.isfinite(th)) and np.all(th > 0)
    body = np.median(th[truth == 0])
    # the body's half-axes are 0.9, 0.32 and 0.22 (the largest inside ball touching its
    # surface: a diameter of 0.2-0.64), the fins' 0.035 (0.07 across)
    assert 0.2 < body < 0.64
    for fin in range(1, 5):
        assert 0.03 < np.median(th[truth == fin]) < 0.25 * body


def test_thickness_does_not_depend_on_the_winding():
    v, f, _ = _fish()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02)
    a = face_thickness(v, f, g.centroids, g.normals)
    flipped = f[:, ::-1]
    gf = dual_graph(v, flipped, delta=0.05, eta_convex=0.02)
    b = face_thickness(v, flipped, gf.centroids, gf.normals)
    np.testing.assert_allclose(a, b, rtol=1e-9)


def test_thickness_only_when_used(monkeypatch):
    v, f, _ = _fish()
    monkeypatch.setattr(dualgraph, "SDF_MERGE", 0.0)
    assert dual_graph(v, f, delta=0.05, eta_convex=0.02).thickness is None
    monkeypatch.setattr(dualgraph, "SDF_MERGE", 0.5)
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02)
    assert g.thickness is not None
    # SDF_MERGE alone leaves the distances as they were
    np.testing.assert_array_equal(g.weight, dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False).weight)
    monkeypatch.setattr(dualgraph, "SDF_WEIGHT", 1.0)
    assert np.all(dual_graph(v, f, delta=0.05, eta_convex=0.02).weight >= g.weight)


def test_a_boundary_between_thin_and_thick_clusters_is_stronger(monkeypatch):
    v, f, truth = _fish()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=True)
    lab = np.full(len(f), 3)                             # the other fins
    lab[truth == 0] = 0                                   # the body's back half ...
    lab[(truth == 0) & (g.centroids[:, 0] > 0)] = 2       # ... and its front half
    lab[truth == 2] = 1                                   # the tail
    ulo, uhi = np.array([0, 0]), np.array([1, 2])
    monkeypatch.setattr(dualgraph, "SDF_MERGE", 0.0)
    assert boundary._thickness_contrast(g, lab, ulo, uhi, 4) == 1.0
    monkeypatch.setattr(dualgraph, "SDF_MERGE", 1.0)
    c = boundary._thickness_contrast(g, lab, ulo, uhi, 4)
    assert c[0] > 1.5 and c[1] < 1.3


@pytest.mark.gpu
def test_cpu_and_gpu_agree_with_the_thickness_on():
    from gpu_kernels.mesh import segment_mesh
    from gpu_kernels.mesh.metrics import rand_index_error

    assert dualgraph.SDF_MERGE > 0   # the default
    v, f, _ = _fish()
    for k in ("auto", 4):
        cpu = segment_mesh(v, f, k=k, device="cpu", apsp_method="cpu")
        gpu = segment_mesh(v, f, k=k, device="cuda")
        assert gpu.k == cpu.k and rand_index_error(gpu.labels, cpu.labels) < 0.01


def test_the_full_resolution_graph_gets_no_thickness_when_a_working_resolution_is_clustered():
    """The thickness is measured where the clustering and the merges happen, not on the
    full mesh that is only re-cut (speed)."""
    from gpu_kernels.mesh import segment as segmod
    from gpu_kernels.mesh.simplify import available_simplifiers

    if not available_simplifiers():
        pytest.skip("no simplifier here: the full resolution is clustered")
    v, f, _ = _fish()
    prep = segmod.prepare_mesh(v, f, max_faces=2000, device="cpu", apsp_method="cpu")
    assert prep.graph.thickness is None and prep.working[0][1].thickness is not None


def test_the_brute_force_search_gives_the_k_d_tree_answer(monkeypatch):
    """The GPU's nearest-sample search (brute force, ``mesh_thick_nearest``), run here through the
    test suite's CUDA emulator (the per-step path: the ball-loop kernel is for CuPy only), against
    the CPU path (k-d tree)."""
    import functools

    import cuda_emu

    from gpu_kernels.mesh import thickness as thmod

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    monkeypatch.setattr(thmod, "_nearest_on_device",
                        functools.partial(thmod._nearest_on_device, device=cuda_emu.emu_backend()))
    v, f, _ = _fish()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    sub = np.arange(0, len(f), 5)   # every fifth face's balls (the emulator runs one core)
    a = face_thickness(v, f, g.centroids[sub], g.normals[sub])
    b = face_thickness(v, f, g.centroids[sub], g.normals[sub], xp=cuda_emu.xp)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert len(np.unique(a)) > 50 and a.max() < 0.5 * np.linalg.norm(np.ptp(v, axis=0))   # the balls shrank


@pytest.mark.gpu
def test_thickness_on_the_gpu_equals_the_cpu():
    import cupy

    v, f, _ = _fish()
    g = dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    a = face_thickness(v, f, g.centroids, g.normals, src=g.src, dst=g.dst, areas=g.areas)
    b = face_thickness(v, f, g.centroids, g.normals, src=g.src, dst=g.dst, areas=g.areas, xp=cupy)
    assert isinstance(b, np.ndarray)
    assert np.mean(np.isclose(a, b, rtol=1e-9)) > 0.99   # ties between equidistant samples aside
