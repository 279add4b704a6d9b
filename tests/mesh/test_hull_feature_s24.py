"""Session 24 (issue 22, rounds hull24-hull24c): ``learned.HULL_FEATURE``, a 22nd merge feature, the depth of a
candidate pair's union under the exact convex hull of up to ``HULL_POINTS`` kept face centroids a cluster (the k-DOP
of 26 directions where the union is flat), over the square root of the component's area. On by default since session
25 (the shipped integer-k model reads it; k = "auto"'s does not); the k-DOP's depth as the feature and the failed
candidates' columns are gone since session 26. The compiled loop and the NumPy loop merge alike bit for bit, a model
that reads the column changes the merges, a model that does not read it merges as with the switch off, and records
carry the 22nd column."""

from __future__ import annotations

import hashlib

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

fish, prep = fx.fish, fx.prep


def _plain() -> ln.TreeModel:
    """A model that reads none of the hull's columns: k = "auto"'s (21 columns)."""
    m = ln.shipped_auto_model()
    assert int(m.feature.max()) < len(ln.FEATURES)
    return m


def _digest(lab, mg, st) -> str:
    return hashlib.sha1(np.asarray(lab, np.int32).tobytes() + np.asarray(mg, np.int64).tobytes()
                        + np.asarray(st, np.float64).tobytes()).hexdigest()


def _col21_model() -> ln.TreeModel:
    """The shipped integer-k model with its first tree's root split on the union depth (its own splits on it: the
    exact hull's values since session 25)."""
    base = ln.shipped_model()
    m = ln.TreeModel(feature=base.feature.copy(), threshold=base.threshold.copy(), left=base.left, right=base.right,
                     value=base.value, init=base.init, rate=base.rate, depth=base.depth)
    m.feature[0, 0] = len(ln.FEATURES)
    m.threshold[0, 0] = 0.05
    return m


def _record(prep, seed=1) -> dict:
    """A record's tables for the fish's 30-cluster over-segmentation (``_merge``'s): its clusters dealt round-robin to
    four "human" parts."""
    lab = fx.overseg(prep.graph, 30, seed=seed)
    return {"comp": [np.eye(4)[np.arange(int(lab.max()) + 1) % 4]]}


def _body_leg(n=9):
    """Points on a box's surface (``body``), its two halves, and a leg standing on its side (the leg's end on the body
    left out, as a surface has none there)."""
    body = _box((0, 0, 0), (2, 1, 1), n=n)
    leg = _box((0, 1, 0), (0.3, 3, 1))
    return body, body[body[:, 0] < 1], body[body[:, 0] >= 1], leg[leg[:, 1] > 1]


def _merge(prep, model, monkeypatch, *, hull, compiled, k=6, seed=1, record=None):
    monkeypatch.setattr(ln, "HULL_FEATURE", hull)
    monkeypatch.setattr(bd, "COMPILED_MERGE", compiled)
    g = sg.k_merge_graph(prep.graph)
    lab = fx.overseg(prep.graph, 30, seed=seed)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    st: list = []
    out, mg = ln.learned_merge(g, lab, {0: k}, lc, min_area=sg.MIN_PART_AREA, policy="gain", model=model,
                               strengths=st, record=record)
    return _digest(out, mg, st)


def test_on_by_default_and_only_the_integer_k_model_reads_the_column():
    assert ln.HULL_FEATURE is True and ln.n_columns() == 22
    assert ln.HULL_DIRS.shape == (26, 3) and np.allclose(np.linalg.norm(ln.HULL_DIRS, axis=1), 1.0)
    assert int(ln.shipped_model().feature.max()) == len(ln.FEATURES)  # (the hull's column, 21)
    assert int(ln.shipped_auto_model().feature.max()) < len(ln.FEATURES)


@pytest.mark.parametrize("seed", [1, 2])
def test_compiled_and_numpy_agree_and_the_column_is_read(prep, monkeypatch, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    m21, shipped = _col21_model(), _plain()
    a = _merge(prep, m21, monkeypatch, hull=True, compiled=True, seed=seed)
    b = _merge(prep, m21, monkeypatch, hull=True, compiled=False, seed=seed)
    assert a == b
    plain_on = _merge(prep, shipped, monkeypatch, hull=True, compiled=True, seed=seed)
    plain_off = _merge(prep, shipped, monkeypatch, hull=False, compiled=True, seed=seed)
    assert plain_on == plain_off  # (a model that does not read the column: the same merges)
    assert a != plain_on          # (one that does: other merges)


def test_a_model_reading_a_column_the_merges_lack_is_refused(prep, monkeypatch):
    with pytest.raises(ValueError, match="feature column 21"):
        _merge(prep, _col21_model(), monkeypatch, hull=False, compiled=True)


def test_records_carry_the_22nd_column(prep, monkeypatch):
    rec = _record(prep)
    _merge(prep, _plain(), monkeypatch, hull=True, compiled=True, record=rec)
    assert rec["X"] and all(x.shape[1] == len(ln.FEATURES) + 1 for x in rec["X"])
    assert all(np.isfinite(x[:, -1]).all() and (x[:, -1] >= 0).all() for x in rec["X"])


def _box(lo, hi, n=6):
    """Points on the surface of an axis-aligned box (a grid on each face)."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    t = np.linspace(0, 1, n)
    pts = []
    for ax in range(3):
        u, v = [a for a in range(3) if a != ax]
        for side in (lo[ax], hi[ax]):
            for s in t:
                for r in t:
                    p = np.empty(3)
                    p[ax], p[u], p[v] = side, lo[u] + s * (hi[u] - lo[u]), lo[v] + r * (hi[v] - lo[v])
                    pts.append(p)
    return np.array(pts)


def test_the_depth_is_zero_for_a_convex_union_and_deep_at_an_inner_corner():
    # a box's surface cut in two halves (a convex union: every point on a supporting plane) against a half joined by
    # a leg on its side (an L: the body's top near the leg lies under the union's hull); the leg's end on the body is
    # left out, as a surface has none there
    body, half_a, half_b, leg = _body_leg()
    for a, other, deep in ((half_a, half_b, False), (body, leg, True)):
        c = np.concatenate([a, other])
        lab0 = np.r_[np.zeros(len(a), np.int64), np.ones(len(other), np.int64)]
        h = ln._Hull(lab0, c, 2, 1000)
        d = float(h.depth(np.array([0]), np.array([1]))[0])
        assert (d > 0.3) if deep else (abs(d) < 1e-9), (deep, d)
    # the kept points of a merge: at most HULL_POINTS, evenly spaced over the two lists joined
    h = ln._Hull(np.r_[np.zeros(100, np.int64), np.ones(100, np.int64)], np.random.default_rng(0).normal(size=(200, 3)),
                 2, 64)
    assert list(h.cnt) == [64, 64]
    h.merge(0, 1)
    assert list(h.cnt) == [64, 0] and np.array_equal(ln._hull_keep(128, 64), np.arange(64) * 2)


def test_the_exact_hull_depth_is_cached_per_pair_and_below_the_k_dop():
    """The union's depth under the kept points' exact convex hull (round hull24c's): never deeper than the k-DOP's
    of the same pair (the k-DOP contains the hull), strictly shallower where a slanted part lies under the k-DOP's
    corner planes, zero for a convex union, cached until one of the pair merges."""
    body, half_a, half_b, leg = _body_leg()
    tilt = np.array([[1.0, 0.0, 0.0], [0.0, 0.8, -0.6], [0.0, 0.6, 0.8]])  # (a rotation: no longer axis-aligned)
    for a, other, deep in ((half_a, half_b, False), (body, leg, True), (body @ tilt.T, leg @ tilt.T, True)):
        c = np.concatenate([a, other])
        lab0 = np.r_[np.zeros(len(a), np.int64), np.ones(len(other), np.int64)]
        h = ln._Hull(lab0, c, 2, 1000)
        d = float(h.depth(np.array([0]), np.array([1]))[0])
        dk = ln._kdop_depth(np.maximum(h.sup[0], h.sup[1]), c)
        assert d <= dk + 1e-12 and ((d > 0.3) if deep else abs(d) < 1e-9), (deep, d, dk)
        assert (0, 1) in h._cache
        h.merge(0, 1)
        assert not h._cache
    assert d < dk - 1e-3  # (the tilted L: the k-DOP over-states it, the exact hull does not)


def test_no_hull_is_built_for_a_model_that_does_not_read_it(prep, monkeypatch):
    """With the switches on, a model that reads no hull column (k = "auto"'s) merges in the compiled loop without
    building the hull (no cost), with the same merges; one that reads it builds it."""
    built = []
    real = ln._Hull

    def spy(*a, **k):
        built.append(1)
        return real(*a, **k)

    monkeypatch.setattr(ln, "_Hull", spy)
    on = _merge(prep, _plain(), monkeypatch, hull=True, compiled=True)
    assert built == []
    assert on == _merge(prep, _plain(), monkeypatch, hull=False, compiled=True)
    _merge(prep, _col21_model(), monkeypatch, hull=True, compiled=True)
    assert built == [1]
