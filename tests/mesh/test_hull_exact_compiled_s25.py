"""Session 25 (issue 22, the ship of round hull24c): the exact hull's depth in the compiled merge loop. The loop stops
before a round whose candidate pairs lack a depth, :meth:`gpu_kernels.mesh.learned._Hull.fill` computes them (the
compiled incremental hull, :func:`gpu_kernels.mesh._numba_merge.hull_depth`; Qhull where it cannot say), and the
loop goes on: the same merges, bit for bit, as the NumPy loop, for the pairs that the merges make new only. The
compiled hull gives Qhull's depths to rounding."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest
from test_hull_feature_s24 import _body_leg, _col21_model, _merge

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln

fish, prep = fx.fish, fx.prep


@pytest.mark.parametrize("seed", [1, 3])
def test_the_compiled_loop_takes_the_exact_depths_and_merges_as_numpy(prep, monkeypatch, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    filled: list = []
    real_fill = ln._Hull.fill

    def fill(self, table, need, *rest):
        filled.append(need.copy())
        assert np.isnan(table[need[:, 0], need[:, 1]]).all()  # (asked for unknown pairs only)
        real_fill(self, table, need, *rest)

    monkeypatch.setattr(ln._Hull, "fill", fill)
    m21 = _col21_model()
    a = _merge(prep, m21, monkeypatch, hull=True, compiled=True, seed=seed)
    assert len(filled) >= 2  # the first round's pairs, then new ones after merges
    for f in filled:  # (each call asks for a pair once)
        assert len({(int(p), int(q)) for p, q in f}) == len(f) and (f[:, 0] < f[:, 1]).all()
    n_filled = len(filled)
    b = _merge(prep, m21, monkeypatch, hull=True, compiled=False, seed=seed)
    assert len(filled) == n_filled  # (the NumPy loop computes its own, through the cache)
    assert a == b


def test_wrong_fills_change_the_merges(prep, monkeypatch):
    """The compiled loop reads the filled table (not the k-DOP): depths filled as zeros merge otherwise."""
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    m21 = _col21_model()
    good = _merge(prep, m21, monkeypatch, hull=True, compiled=True)

    def zero(self, table, need, *rest):
        table[need[:, 0], need[:, 1]] = 0.0

    monkeypatch.setattr(ln._Hull, "fill", zero)
    assert _merge(prep, m21, monkeypatch, hull=True, compiled=True) != good


def _qhull_depth(P):
    from scipy.spatial import ConvexHull

    eq = ConvexHull(P).equations
    return float((-(P @ eq[:, :3].T + eq[:, 3])).min(axis=1).max())


def _point_sets():
    rng = np.random.default_rng(25)
    sphere = rng.normal(size=(128, 3))
    sphere /= np.linalg.norm(sphere, axis=1, keepdims=True)
    grid = rng.integers(0, 4, (128, 3)).astype(float)  # (many coplanar and repeated points)
    slab = rng.normal(size=(128, 3)) * [3.0, 1.0, 0.01]
    body, _, _, leg = _body_leg()
    return [("normal", rng.normal(size=(128, 3)) * [1.0, 2.0, 0.3]), ("sphere", sphere), ("grid", grid),
            ("slab", slab), ("body+leg", np.concatenate([body, leg])), ("small", rng.normal(size=(6, 3)))]


def test_the_compiled_hull_gives_qhulls_depth():
    """:func:`_numba_merge.hull_depth` (the incremental hull) against Qhull's facets, on point sets with every point on
    the hull, many coplanar or repeated, a thin slab and an L; NaN (Qhull's turn) for a flat set and for fewer than 5
    points; and through ``learned._exact_depth`` the same whether numba is there or not."""
    nm = bd.compiled_merge()
    if nm is None:
        pytest.skip("numba is not available: there is no compiled hull")
    for name, P in _point_sets():
        P = np.ascontiguousarray(P)
        d = nm.hull_depth(P)
        ext = float(np.ptp(P, axis=0).max())
        assert d == d, name
        assert abs(d - _qhull_depth(P)) <= 1e-12 * ext, (name, d, _qhull_depth(P))
    flat = np.c_[np.random.default_rng(1).normal(size=(50, 2)), np.zeros(50)]
    assert np.isnan(nm.hull_depth(flat)) and np.isnan(nm.hull_depth(np.eye(3)[:4].copy()))
    assert ln._exact_depth(flat) is None  # (flat: the k-DOP's depth then, as before)
    P = np.ascontiguousarray(_point_sets()[4][1])
    d = ln._exact_depth(P)
    assert d == nm.hull_depth(P) and d > 0.3  # (the leg on the body: deep)


def test_without_numba_qhull_gives_the_same_depth(monkeypatch):
    """With the compiled modules off (``boundary.COMPILED``), ``_exact_depth`` is Qhull's: the same values to rounding."""
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: nothing to compare")
    sets = [np.ascontiguousarray(P) for _, P in _point_sets()]
    fast = [ln._exact_depth(P) for P in sets]
    monkeypatch.setattr(bd, "COMPILED", False)
    assert bd.compiled_merge() is None
    slow = [ln._exact_depth(P) for P in sets]
    for P, a, b in zip(sets, fast, slow, strict=True):
        assert abs(a - b) <= 1e-12 * float(np.ptp(P, axis=0).max())


def test_fill_falls_back_for_a_flat_pair():
    """A flat union (two clusters of one plane): the compiled hull cannot say, Qhull neither, so the fill takes the
    k-DOP's depth, as the NumPy loop's :meth:`_Hull.pair_depth` does; a solid pair gets the exact depth."""
    rng = np.random.default_rng(3)
    flat = np.c_[rng.normal(size=(40, 2)), np.zeros(40)]
    body, _, _, leg = _body_leg()
    c = np.concatenate([flat, body, leg])
    lab0 = np.r_[np.zeros(20, np.int64), np.ones(20, np.int64), np.full(len(body), 2), np.full(len(leg), 3)]
    h = ln._Hull(lab0, c, 4, 1000)
    table = np.full((4, 4), np.nan)
    h.fill(table, np.array([[0, 1], [2, 3]]))
    kdop = ln._kdop_depth(np.maximum(h.sup[0], h.sup[1]), np.concatenate([h.pts[0, :20], h.pts[1, :20]]))
    assert table[0, 1] == kdop == h.pair_depth(0, 1)
    assert table[2, 3] == h.pair_depth(2, 3) > 0.3 and np.isnan(table[0, 2])
