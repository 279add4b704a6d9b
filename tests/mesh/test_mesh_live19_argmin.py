"""Session 19, the representative update of the full-resolution k edit (gpu_kernels/mesh/cluster.py):
``column_argmin`` takes ``argmin(C, axis=0)`` over a contiguous copy of ``C.T`` on a GPU: the same first-minimum index
as the strided argmin (ties included), so the labels do not change. (A fused product + argmin kernel was measured
slower than cuBLAS + this argmin on the H100 and taken out; its tests went with it: commit 68e81ef.)"""

from __future__ import annotations

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box, distances  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import cluster as clu


def test_column_argmin_on_the_host_is_numpys():
    C = np.array([[3, 1, 2], [1, 1, 2], [1, 0, 2]], dtype=np.float32)
    np.testing.assert_array_equal(clu.column_argmin(C), [1, 2, 0])
    assert clu.column_argmin(C).dtype == np.int64


def test_product_argmin_is_the_argmin_of_the_product():
    """The update's one step: on the box-bar-box's distances with memberships of 7 clusters, the first minimum of
    each column of D @ W, as the update computed it inline before."""
    _, D = distances(*box_bar_box()[:2])
    W = np.random.default_rng(3).random((D.shape[0], 7)).astype(np.float32)
    W[:, 6] = W[:, 5]  # two equal columns: the same row
    got = clu.product_argmin(D, W)
    np.testing.assert_array_equal(got, np.argmin(D @ W, axis=0))
    assert got.dtype == np.int64 and got[5] == got[6]


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
