"""Issue 22 (session 12): ``dualgraph._cross_norm`` (the faces' cross products and their lengths, used by
``face_areas`` and ``dual_graph``) equals ``np.cross`` and ``np.linalg.norm(..., axis=1)`` bit for bit, on
ordinary, tiny, huge (overflowing) and NaN rows, and on a mesh."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import dualgraph as dg


def _old(u, w):
    cr = np.cross(u, w)
    return cr, np.linalg.norm(cr, axis=1)


@pytest.mark.parametrize("seed", range(6))
def test_the_same_bits_as_numpy(seed):
    rng = np.random.default_rng(seed)
    for _ in range(40):
        m = int(rng.integers(1, 300))
        u = rng.normal(size=(m, 3)) * 10.0 ** rng.uniform(-160, 160)
        w = rng.normal(size=(m, 3)) * 10.0 ** rng.uniform(-160, 160)
        if seed % 2:
            u[rng.integers(m), rng.integers(3)] = np.nan
            w[rng.integers(m), rng.integers(3)] = -0.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got, want = dg._cross_norm(u, w), _old(u, w)
        assert got[0].tobytes() == want[0].tobytes()
        assert got[1].tobytes() == want[1].tobytes()


def test_face_areas_and_the_graph_on_a_mesh():
    v, f = _sphere(30)
    a, b, c = v[f[:, 0]], v[f[:, 1]], v[f[:, 2]]
    want = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    assert dg.face_areas(v, f).tobytes() == want.tobytes()
    g = dg.dual_graph(v, f, delta=0.05, eta_convex=0.02, thickness=False)
    cr, ln = _old(b - a, c - a)
    assert g.areas.tobytes() == (0.5 * ln).tobytes()
    assert g.normals.tobytes() == (cr / np.where(ln > 0, ln, 1.0)[:, None]).tobytes()
