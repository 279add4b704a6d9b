"""Session 25 (issue 22, the ship of round hull24c): the exact hull's depth in the compiled merge loop. The loop stops
before a round whose candidate pairs lack a depth, :meth:`gpu_kernels.mesh.learned._Hull.fill` computes them with
Qhull, and the loop goes on: the same merges, bit for bit, as the NumPy loop, for the pairs that the merges make
new only."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest
from test_hull_feature_s24 import _col21_model, _merge

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln

fish, prep = fx.fish, fx.prep


@pytest.mark.parametrize("seed", [1, 3])
def test_the_compiled_loop_takes_the_exact_depths_and_merges_as_numpy(prep, monkeypatch, seed):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    monkeypatch.setattr(ln, "HULL_EXACT", True)
    filled: list = []
    real_fill = ln._Hull.fill

    def fill(self, table, need):
        filled.append(need.copy())
        assert np.isnan(table[need[:, 0], need[:, 1]]).all()  # (asked for unknown pairs only)
        real_fill(self, table, need)

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
    monkeypatch.setattr(ln, "HULL_EXACT", False)


def test_wrong_fills_change_the_merges(prep, monkeypatch):
    """The compiled loop reads the filled table (not the k-DOP): depths filled as zeros merge otherwise."""
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    monkeypatch.setattr(ln, "HULL_EXACT", True)
    m21 = _col21_model()
    good = _merge(prep, m21, monkeypatch, hull=True, compiled=True)

    def zero(self, table, need):
        table[need[:, 0], need[:, 1]] = 0.0

    monkeypatch.setattr(ln._Hull, "fill", zero)
    assert _merge(prep, m21, monkeypatch, hull=True, compiled=True) != good
