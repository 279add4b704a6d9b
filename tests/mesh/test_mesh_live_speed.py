"""Issue 20, mesh: what a k edit re-uses and re-runs, and that the quicker paths give the same
clusterings and merges as the plain ones (farthest-point order kept in stage 1, lockstep
clustering of the over-segmentations, the fused membership kernel, the merge tables)."""

from __future__ import annotations

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box, distances  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tools import mesh_seg
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.mesh import boundary
from gpu_kernels.mesh import segment as segmod
from gpu_kernels.mesh.cluster import (
    farthest_order,
    farthest_representatives,
    fuzzy_cluster,
    fuzzy_cluster_many,
    memberships,
    memberships_many,
)

CPU = get_backend("cpu")


@pytest.fixture(scope="module")
def bar_distances():
    _, D = distances(*box_bar_box()[:2])
    return D


def test_a_continued_farthest_order_is_the_order_computed_at_once(bar_distances):
    D = bar_distances
    whole = farthest_order(D, 40)
    short = farthest_order(D, 7)
    longer = farthest_order(D, 40, short)
    np.testing.assert_array_equal(longer.reps, whole.reps)
    np.testing.assert_array_equal(longer.G, whole.G)
    assert short.count == 7  # the start is not modified
    for k in (1, 5, 12):
        reps, G = farthest_representatives(D, k, whole)
        ref_reps, ref_G = farthest_representatives(D, k)
        np.testing.assert_array_equal(reps, ref_reps)
        np.testing.assert_array_equal(G, ref_G)


def test_lockstep_clusterings_are_the_clusterings_one_by_one(bar_distances):
    D = bar_distances
    ks = [3, 5, 6, 9]
    many = fuzzy_cluster_many(D, ks, max_iter=20, power=2.0, order=farthest_order(D, 4))
    assert [fc.k for fc in many] == ks
    for k, fc in zip(ks, many, strict=True):
        one = fuzzy_cluster(D, k, max_iter=20, power=2.0)
        np.testing.assert_array_equal(fc.reps, one.reps)
        assert (fc.n_iter, fc.converged) == (one.n_iter, one.converged)
        np.testing.assert_allclose(fc.P, one.P, rtol=1e-6, atol=1e-7)
        assert len(fc.history) == len(one.history)
    # an iteration cap stops every clustering where it would stop alone
    capped = fuzzy_cluster_many(D, ks, max_iter=1, power=2.0)
    assert [fc.n_iter for fc in capped] == [fuzzy_cluster(D, k, max_iter=1, power=2.0).n_iter for k in ks]


def test_the_fused_membership_kernel_equals_memberships_per_clustering(bar_distances):
    """``cuda/mesh_cluster.cu`` through the CPU emulator of CUDA kernels: a face at distance 0
    from a representative, and representatives shared between clusterings."""
    from cuda_emu import available, emu_backend

    if available():
        pytest.skip(f"CUDA emulator unavailable: {available()}")
    be = emu_backend()
    D = np.ascontiguousarray(bar_distances[:300, :300])
    reps_list = [np.array([0, 50, 120]), np.array([7, 50, 299, 180, 3]), np.array([11])]
    for power in (1.0, 2.0):
        P, W = memberships_many(be.xp.asarray(D), reps_list, power, be)
        P, W = np.asarray(P), np.asarray(W)
        col = 0
        for reps in reps_list:
            ref = memberships(D, reps)
            np.testing.assert_allclose(P[:, col:col + reps.size], ref, rtol=2e-6, atol=1e-7)
            np.testing.assert_allclose(W[:, col:col + reps.size], ref ** power, rtol=5e-6, atol=1e-7)
            col += reps.size
        assert P[0, 0] == 1.0 and P[50, 1] == 1.0 and P[50, 4] == 1.0  # on a representative


def test_the_fused_lockstep_clusterings_are_the_plain_ones(bar_distances):
    """The GPU path of fuzzy_cluster_many (membership kernel, products over the running
    clusterings' columns only) through the CPU emulator: the plain path's clusterings."""
    from cuda_emu import available, emu_backend

    if available():
        pytest.skip(f"CUDA emulator unavailable: {available()}")
    be = emu_backend()
    D = np.ascontiguousarray(bar_distances[:400, :400])
    ks = [3, 5, 6, 9]
    plain = fuzzy_cluster_many(D, ks, max_iter=20, power=2.0)
    fused = fuzzy_cluster_many(be.xp.asarray(D), ks, max_iter=20, power=2.0, device=be)
    assert len({fc.n_iter for fc in plain}) > 1  # the clusterings stop at different iterations
    for a, b in zip(plain, fused, strict=True):
        np.testing.assert_array_equal(a.reps, b.reps)
        assert (a.n_iter, a.converged, len(a.history)) == (b.n_iter, b.converged, len(b.history))
        np.testing.assert_allclose(np.asarray(b.P), a.P, rtol=2e-6, atol=1e-7)


def test_the_farthest_order_kernel_is_the_order_step_by_step(bar_distances):
    """``mesh_farthest`` (one launch for all steps) through the CPU emulator: the order, the
    gaps, a continuation from a shorter order, and the stop when every face is taken."""
    from cuda_emu import available, emu_backend

    if available():
        pytest.skip(f"CUDA emulator unavailable: {available()}")
    be = emu_backend()
    D = np.ascontiguousarray(bar_distances[:300, :300])
    ref = farthest_order(D, 40)
    got = farthest_order(be.xp.asarray(D), 40, device=be)
    np.testing.assert_array_equal(got.reps, ref.reps)
    np.testing.assert_array_equal(got.G, ref.G)
    np.testing.assert_array_equal(np.asarray(got.mind), np.asarray(ref.mind))
    short = farthest_order(be.xp.asarray(D), 7, device=be)
    longer = farthest_order(be.xp.asarray(D), 40, short, device=be)
    np.testing.assert_array_equal(longer.reps, ref.reps)
    assert short.count == 7 and not short.done
    tiny = np.ascontiguousarray(D[:5, :5])  # 5 faces: the order stops at 5 (every face taken)
    every = farthest_order(be.xp.asarray(tiny), 5, device=be)
    np.testing.assert_array_equal(every.reps, farthest_order(tiny, 5).reps)


def test_merge_tables_make_the_merges_of_the_arc_sums():
    """Both implementations of merge_weakest_boundaries merge the same clusters in the same
    order with the same strengths (the tables are the quick one, up to DENSE_MERGE_MAX)."""
    v, f, _ = box_bar_box()
    rng = np.random.default_rng(3)
    # jittered: a voxel surface ties many boundaries exactly, and ties may go either way when
    # sums are added in another order
    v = v + rng.normal(scale=0.05, size=v.shape)
    prep = segmod.prepare_mesh(v, f, device="cpu")
    g = prep.graph
    # an over-segmentation: faces grouped by a coarse grid of their centroids (connected blobs)
    cell = np.floor((g.centroids - g.centroids.min(axis=0)) / 1.5).astype(np.int64)
    _, lab = np.unique(cell[:, 0] * 10_000 + cell[:, 1] * 100 + cell[:, 2], return_inverse=True)
    lab = lab.astype(np.int64)
    K = int(lab.max()) + 1
    assert K > 12
    lc = np.zeros(K, dtype=np.int64)
    for stop, min_area in ((None, 0.0), (None, 0.01), ({0: 1.2}, 0.002)):
        for target in (2, 5):
            st_t, st_a = [], []
            a = boundary._merge_tables(g, lab, {0: target}, lc, stop, st_t, min_area)
            b = boundary._merge_arcs(g, lab, {0: target}, lc, stop, st_a, min_area)
            np.testing.assert_array_equal(a[0], b[0])
            assert a[1] == b[1] and len(a[1]) > 0
            np.testing.assert_allclose(st_t, st_a, rtol=1e-9)


def test_a_k_edit_reruns_only_the_k_stages_and_equals_a_full_run():
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    base = {"k": 3, "apsp": "cpu", "max_faces": None}
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="t")
    for k in (2, 4):
        p = {**base, "k": k}
        res, rep = mesh_seg.TOOL.run_staged(data, p, device=CPU, cache=cache, scope="t")
        assert rep.ran == ["cluster", "segment", "cut"] and rep.reused == ["graph"]
        full = mesh_seg.run(data, p, device=CPU)
        np.testing.assert_array_equal(res.seg.labels, full.seg.labels)
        np.testing.assert_array_equal(res.seg.face_colors, full.seg.face_colors)
        assert res.seg.k == full.seg.k


def test_a_refine_boundaries_edit_reruns_only_the_cut(monkeypatch):
    """Issue 20: refine_boundaries used to re-run the clustering; now only the cut stage runs,
    and the result is a full run's."""
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    base = {"k": 3, "apsp": "cpu", "max_faces": 400}  # a working resolution: the re-cut applies
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="r")
    calls = []
    real = segmod.fuzzy_cluster_many
    monkeypatch.setattr(segmod, "fuzzy_cluster_many", lambda *a, **k: calls.append(1) or real(*a, **k))
    p = {**base, "refine_boundaries": False}
    res, rep = mesh_seg.TOOL.run_staged(data, p, device=CPU, cache=cache, scope="r")
    assert rep.ran == ["cut"] and rep.reused == ["graph", "cluster", "segment"] and calls == []
    full = mesh_seg.run(data, p, device=CPU)
    np.testing.assert_array_equal(res.seg.labels, full.seg.labels)
    assert res.seg.info["params"]["refine_boundaries"] is False
    back, rep = mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="r")
    assert rep.ran == [] and back.seg.info["params"]["refine_boundaries"] is True


@pytest.mark.parametrize("max_faces", [None, 400])
def test_an_epsilon_edit_reuses_the_clusterings(monkeypatch, max_faces):
    """epsilon only changes the cuts: its edit re-runs the cuts and merges (and the full-resolution
    cut after them), not the clusterings, and equals a full run."""
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    base = {"k": 3, "apsp": "cpu", "max_faces": max_faces}
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="e")
    calls = []
    real = segmod.fuzzy_cluster_many
    monkeypatch.setattr(segmod, "fuzzy_cluster_many", lambda *a, **k: calls.append(1) or real(*a, **k))
    p = {**base, "epsilon": 0.3}
    res, rep = mesh_seg.TOOL.run_staged(data, p, device=CPU, cache=cache, scope="e")
    assert rep.ran == ["segment", "cut"] and rep.reused == ["graph", "cluster"] and calls == []
    monkeypatch.setattr(segmod, "fuzzy_cluster_many", real)
    full = mesh_seg.run(data, p, device=CPU)
    np.testing.assert_array_equal(res.seg.labels, full.seg.labels)
    np.testing.assert_array_equal(res.seg.fuzzy, full.seg.fuzzy)
    assert res.seg.info["params"]["epsilon"] == 0.3


@pytest.mark.gpu
def test_the_gpu_clusterings_are_the_cpu_clusterings(bar_distances):
    """The fused kernel and one product per iteration on the GPU: the representatives the CPU
    finds (the distances are the same float32 matrix)."""
    import cupy as cp

    D = bar_distances
    ks = [3, 5, 6, 9]
    cpu = fuzzy_cluster_many(D, ks, max_iter=20, power=2.0)
    gpu = fuzzy_cluster_many(cp.asarray(D), ks, max_iter=20, power=2.0, device=get_backend("cuda:0"))
    for a, b in zip(cpu, gpu, strict=True):
        np.testing.assert_array_equal(a.reps, b.reps)
        assert a.n_iter == b.n_iter
        np.testing.assert_allclose(cp.asnumpy(b.P), a.P, rtol=1e-5, atol=1e-6)
