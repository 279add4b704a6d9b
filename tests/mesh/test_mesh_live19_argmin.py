"""Session 19, the representative update of the full-resolution k edit (gpu_kernels/mesh/cluster.py):

- ``column_argmin``: ``argmin(C, axis=0)`` over a contiguous copy of ``C.T`` on a GPU: the same first-minimum
  index as the strided argmin (ties included), so the labels do not change;
- ``fused_product_argmin`` (``cuda/mesh_cluster.cu``: ``mesh_colsum_partial_{32,64}`` + ``mesh_colargmin_reduce``):
  the column argmins of ``D @ W`` without cuBLAS, through the CPU emulator of CUDA kernels here and on the GPU
  under ``-m gpu``; ties -> the lowest row; a column's result does not depend on the other columns;
- ``product_argmin`` takes the fused kernel only on a graph of at least ``FUSED_ARGMIN_MIN_N`` faces (``None``,
  off, as shipped: measured slower than cuBLAS + the contiguous argmin on the H100);
- on the GPU, with the fused kernel in use, a k edit through the stage cache equals a fresh run at that k."""

from __future__ import annotations

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box, distances  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import cluster as clu
from gpu_kernels.mesh import segment as segmod


def _emu():
    from cuda_emu import available, emu_backend

    if available():
        pytest.skip(f"CUDA emulator unavailable: {available()}")
    return emu_backend()


@pytest.fixture(scope="module")
def bar_distances():
    _, D = distances(*box_bar_box()[:2])
    return D


def _ref(D, W):
    return np.argmin(D.astype(np.float64) @ W.astype(np.float64), axis=0)


def test_the_fused_kernel_is_off():
    """Measured slower than cuBLAS + the contiguous argmin on the H100 (session 19): off at every size; when a
    faster variant switches it on, the size is the full-resolution path's, above the default working mesh."""
    assert clu.FUSED_ARGMIN_MIN_N is None
    assert 3500 < segmod.PARALLEL_ROWS_MIN_FACES
    assert clu.fused_argmin_slices(16998) == 4 and clu.fused_argmin_slices(3000) == 1
    assert clu.fused_argmin_slices(10**6) == clu.FUSED_ARGMIN_MAX_SLICES


def test_column_argmin_on_the_host_is_numpys():
    C = np.array([[3, 1, 2], [1, 1, 2], [1, 0, 2]], dtype=np.float32)
    np.testing.assert_array_equal(clu.column_argmin(C), [1, 2, 0])
    assert clu.column_argmin(C).dtype == np.int64


@pytest.mark.parametrize(("n", "k", "slices"), [(300, 20, None), (300, 53, 3), (130, 70, 1), (97, 5, 2),
                                                (257, 64, 4), (65, 33, 8)])
def test_the_fused_kernel_gives_the_argmins_of_the_product(n, k, slices):
    """Random non-negative D and W (well separated minima): the float64 product's argmins, for one and two
    column groups (k > 64), 32- and 64-column tiles, rows and slices that do not fill the last tile."""
    be = _emu()
    rng = np.random.default_rng(n * 100 + k)
    D = rng.random((n, n), dtype=np.float32)
    W = rng.random((n, k), dtype=np.float32)
    got = clu.fused_product_argmin(be.xp.asarray(D), be.xp.asarray(W), be, slices=slices)
    assert got.dtype == np.int64 and got.shape == (k,)
    np.testing.assert_array_equal(got, _ref(D, W))


@pytest.mark.parametrize("slices", [1, 3])
def test_ties_go_to_the_lowest_row(slices):
    """Rows of D that are equal give equal sums (the same order of additions in every row): the minimum is
    shared by rows in different row tiles, and the kernel returns the lowest of them, as argmin does."""
    be = _emu()
    n, k = 200, 40
    rng = np.random.default_rng(7)
    D = 1.0 + rng.random((n, n), dtype=np.float32)
    W = rng.random((n, k), dtype=np.float32)
    low = np.full(n, 0.5, dtype=np.float32)
    for f in (150, 70, 199):  # tiles 2, 1, 3; the lowest is 70
        D[f] = low
    D[3] = low  # and one more in tile 0: the lowest
    got = clu.fused_product_argmin(be.xp.asarray(D), be.xp.asarray(W), be, slices=slices)
    np.testing.assert_array_equal(got, np.full(k, 3))
    D[3] = 1.0 + rng.random(n, dtype=np.float32)
    got = clu.fused_product_argmin(be.xp.asarray(D), be.xp.asarray(W), be, slices=slices)
    np.testing.assert_array_equal(got, np.full(k, 70))


def test_a_column_does_not_depend_on_the_other_columns():
    """The memo's clusterings and a fresh run's must agree whatever shares their launch: every column's
    argmin alone, or in another position of another batch, is the same."""
    be = _emu()
    n = 180
    rng = np.random.default_rng(3)
    D = rng.random((n, n), dtype=np.float32)
    D = (D + D.T) / 2  # near ties: a symmetric matrix with many close sums
    W = rng.random((n, 45), dtype=np.float32)
    W /= W.sum(axis=1, keepdims=True)
    X = be.xp.asarray(D)
    whole = clu.fused_product_argmin(X, be.xp.asarray(W), be)
    alone = [int(clu.fused_product_argmin(X, be.xp.asarray(np.ascontiguousarray(W[:, j:j + 1])), be)[0])
             for j in (0, 17, 44)]
    np.testing.assert_array_equal(alone, whole[[0, 17, 44]])
    shifted = clu.fused_product_argmin(X, be.xp.asarray(np.ascontiguousarray(W[:, ::-1])), be)
    np.testing.assert_array_equal(shifted[::-1], whole)


def test_the_fused_kernel_is_taken_only_from_the_switch_size(bar_distances, monkeypatch):
    be = _emu()
    D = np.ascontiguousarray(bar_distances[:300, :300])
    calls = []
    real = clu.fused_product_argmin
    monkeypatch.setattr(clu, "fused_product_argmin", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    ks = [3, 5, 6, 9]
    plain = clu.fuzzy_cluster_many(D, ks, max_iter=20, power=2.0)
    small = clu.fuzzy_cluster_many(be.xp.asarray(D), ks, max_iter=20, power=2.0, device=be)
    assert calls == []  # off (None): the product and the contiguous argmin
    monkeypatch.setattr(clu, "FUSED_ARGMIN_MIN_N", 8000)
    clu.fuzzy_cluster_many(be.xp.asarray(D), ks, max_iter=20, power=2.0, device=be)
    assert calls == []  # 300 faces, under the switch
    monkeypatch.setattr(clu, "FUSED_ARGMIN_MIN_N", 300)
    fused = clu.fuzzy_cluster_many(be.xp.asarray(D), ks, max_iter=20, power=2.0, device=be)
    assert len(calls) == max(fc.n_iter for fc in fused)  # one launch pair per lockstep iteration
    one = clu.fuzzy_cluster(be.xp.asarray(D), 4, max_iter=20, device=be)  # fuzzy_cluster's update too
    assert len(calls) == max(fc.n_iter for fc in fused) + one.n_iter
    np.testing.assert_array_equal(one.reps, clu.fuzzy_cluster(D, 4, max_iter=20).reps)
    for a, b, c in zip(plain, small, fused, strict=True):  # this matrix has no near tie: the same clusterings
        np.testing.assert_array_equal(a.reps, b.reps)
        np.testing.assert_array_equal(a.reps, c.reps)
        assert a.n_iter == b.n_iter == c.n_iter
    monkeypatch.setattr(clu, "FUSED_ARGMIN_MIN_N", 301)
    calls.clear()
    clu.fuzzy_cluster_many(be.xp.asarray(D), ks, max_iter=20, power=2.0, device=be)
    assert calls == []
    clu.fuzzy_cluster_many(D, ks, max_iter=20, power=2.0, device=None)  # the NumPy path never takes it
    monkeypatch.setattr(clu, "FUSED_ARGMIN_MIN_N", 0)
    clu.fuzzy_cluster_many(D, ks, max_iter=20, power=2.0)
    assert calls == []


def test_bad_shapes_are_refused():
    be = _emu()
    D = np.zeros((10, 10), dtype=np.float32)
    with pytest.raises(clu.InputError):
        clu.fused_product_argmin(be.xp.asarray(D), be.xp.asarray(np.zeros((9, 3), np.float32)), be)
    with pytest.raises(clu.InputError):
        clu.fused_product_argmin(be.xp.asarray(D.astype(np.float64)), be.xp.asarray(np.zeros((10, 3))), be)


# --------------------------------------------------------------------------------------------- on the GPU
@pytest.mark.gpu
def test_the_contiguous_argmin_is_the_strided_one_on_the_gpu():
    """Ties (repeated values down a column, whole equal rows) and a random 16,998 x 53 matrix: the index of the
    strided ``argmin(axis=0)`` the update used before, bit for bit."""
    import cupy as cp

    rng = np.random.default_rng(5)
    C = rng.integers(0, 4, size=(5000, 40)).astype(np.float32)  # many ties per column
    C[[17, 900, 4999]] = -1.0  # three equal minimum rows
    C[:, 39] = 2.0  # a constant column: row 0
    g = cp.asarray(C)
    got = clu.column_argmin(g)
    np.testing.assert_array_equal(got, cp.asnumpy(cp.argmin(g, axis=0)))
    np.testing.assert_array_equal(got, np.argmin(C, axis=0))
    assert got[0] == 17 and got[39] == 0
    R = cp.asarray(rng.random((16998, 53), dtype=np.float32))
    np.testing.assert_array_equal(clu.column_argmin(R), cp.asnumpy(cp.argmin(R, axis=0)))


@pytest.mark.gpu
@pytest.mark.parametrize(("n", "k"), [(9001, 53), (8000, 20), (1000, 130)])
def test_the_fused_kernel_on_the_gpu(n, k):
    """The compiled kernel: the float64 product's argmin wherever the float64 minimum is clear of the next row
    by more than fp32's rounding of a sum of n terms; elsewhere a row within that rounding of the minimum."""
    import cupy as cp

    from gpu_kernels.backend import get_backend

    be = get_backend("cuda:0")
    rng = np.random.default_rng(n + k)
    D = rng.random((n, n), dtype=np.float32)
    D[n // 3] = D[n // 3 + 1]  # a tie: the lower row
    D[n // 3] *= 0.5
    D[n // 3 + 1] = D[n // 3]
    W = rng.random((n, k), dtype=np.float32)
    got = clu.fused_product_argmin(cp.asarray(D), cp.asarray(W), be)
    assert np.all(got == n // 3)  # two equal rows, clearly the least: the lower
    D[n // 3] = D[n // 3 + 1] = 1.0
    got = clu.fused_product_argmin(cp.asarray(D), cp.asarray(W), be)
    C = D.astype(np.float64) @ W.astype(np.float64)
    ref = np.argmin(C, axis=0)
    best = C[ref, np.arange(k)]
    assert np.all(C[got, np.arange(k)] <= best * (1 + 1e-5))
    assert np.mean(got == ref) > 0.9


@pytest.mark.gpu
def test_k_edits_with_the_fused_kernel_equal_fresh_runs_on_the_gpu(monkeypatch):
    """Through the stage cache on the GPU, k 3 -> 4 -> 5 -> 6 -> 4 with the fused kernel in use (the switch
    lowered to the test mesh, the rows pool on): each result is a fresh run's at that k."""
    from app.tools import mesh_seg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    gpu = get_backend("cuda:0")
    calls = []
    real = clu.fused_product_argmin
    monkeypatch.setattr(clu, "fused_product_argmin", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    monkeypatch.setattr(clu, "FUSED_ARGMIN_MIN_N", 0)
    monkeypatch.setattr(segmod, "PARALLEL_ROWS_MIN_FACES", 0)
    monkeypatch.setattr(segmod, "SETTLE_WORKERS", 4)
    monkeypatch.setattr(segmod, "_POOL", [])
    monkeypatch.setattr(segmod, "_ROWS_POOL", [])
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    base = {"k": 3, "apsp": "auto", "max_faces": None}
    mesh_seg.TOOL.run_staged(data, base, device=gpu, cache=cache, scope="x")
    assert calls  # the kernel ran
    for k in (4, 5, 6, 4):
        res, _ = mesh_seg.TOOL.run_staged(data, {**base, "k": k}, device=gpu, cache=cache, scope="x")
        fresh = mesh_seg.run(data, {**base, "k": k}, device=gpu)
        assert res.seg.k == fresh.seg.k
        for a, b in zip((res.seg.labels, res.seg.fuzzy, res.seg.representatives),
                        (fresh.seg.labels, fresh.seg.fuzzy, fresh.seg.representatives), strict=True):
            np.testing.assert_array_equal(a, b)
