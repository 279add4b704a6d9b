"""Issue 22 (session 12): ``clean_mesh`` looks for duplicate vertices by a hash of the rows first and sorts them
(``_unique_rows``) only where two rows share a hash: the same vertices, faces, kept faces and report as the sort
every time (the reference: the hash forced to say "may repeat"; session 13: no switch), duplicates (-0.0 against
0.0 included) still merged."""

from __future__ import annotations

import numpy as np
import pytest
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import dualgraph as dg


def _always_sort(monkeypatch):
    """The reference: ``clean_mesh`` with the sort every time (the hash's answer forced to "may repeat")."""
    monkeypatch.setattr(dg, "_may_repeat_rows", lambda a: True)


def _both(monkeypatch, v, f):
    a = dg.clean_mesh(v, f)
    with monkeypatch.context() as m:
        _always_sort(m)
        b = dg.clean_mesh(v, f)
    return a, b


def _same(a, b):
    assert a[0].tobytes() == b[0].tobytes() and a[0].shape == b[0].shape
    assert a[1].tobytes() == b[1].tobytes() and a[2].tobytes() == b[2].tobytes()
    assert a[3].keys() == b[3].keys()
    for key in a[3]:
        assert np.array_equal(a[3][key], b[3][key]), key


@pytest.mark.parametrize("seed", range(8))
def test_the_same_clean_mesh_with_planted_duplicates(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    v, f = _sphere(12)
    v = v * 10.0 ** rng.uniform(-6, 6)
    if seed % 2:   # duplicates of some vertices, appended and used by some faces
        src = rng.choice(v.shape[0], size=5, replace=False)
        extra = v[src].copy()
        extra[extra == 0.0] = -0.0
        if seed % 4 == 1:
            v[src[0], 0], extra[0, 0] = 0.0, -0.0   # -0.0 and 0.0: equal coordinates
        f = f.copy()
        for j, s in enumerate(src):
            rows = np.flatnonzero((f == s).any(axis=1))[:2]
            f[rows] = np.where(f[rows] == s, v.shape[0] + j, f[rows])
        v = np.vstack([v, extra])
        perm = rng.permutation(v.shape[0])
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.size)
        v, f = v[perm], inv[f]
    a, b = _both(monkeypatch, v, f)
    _same(a, b)
    assert (a[3]["n_merged_vertices"] > 0) == bool(seed % 2)


def test_rows_that_repeat_are_always_flagged():
    rng = np.random.default_rng(7)
    for _ in range(200):
        a = rng.normal(size=(int(rng.integers(2, 400)), 3)) * 10.0 ** rng.uniform(-200, 200)
        i, j = rng.choice(a.shape[0], size=2, replace=False)
        a[j] = a[i]
        if rng.random() < 0.5:
            a[i, 0], a[j, 0] = 0.0, -0.0
        assert dg._may_repeat_rows(a)
    assert not dg._may_repeat_rows(np.zeros((1, 3)))


def test_the_sort_is_skipped_where_no_row_repeats(monkeypatch):
    calls = []
    real = dg._unique_rows
    monkeypatch.setattr(dg, "_unique_rows", lambda a: calls.append(a.shape) or real(a))
    v, f = _sphere(20)
    assert not dg._may_repeat_rows(v)
    a = dg.clean_mesh(v, f)
    assert calls == []
    _always_sort(monkeypatch)
    _same(a, dg.clean_mesh(v, f))
    assert calls == [v.shape]
