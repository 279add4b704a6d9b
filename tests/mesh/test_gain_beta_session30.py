"""The "gain" merge order's caution (issue 22, session 30): ``learned.GAIN_BETA`` beta, the pair of the lowest
``(2 p - 1 + beta) x weight`` merged first (gpu_kernels/mesh/learned.py and the compiled loop
gpu_kernels/mesh/_numba_merge.py, which takes beta as an argument: numba freezes globals).

- beta = 0 gives the merges, labels and strengths of the code before the switch, bit for bit (session 19's pins,
  taken before GAIN_POWER existed, at GAIN_POWER 1.0; and the shipped power's merges with and without the term);
- the compiled loop and the NumPy loop agree at other values, at both powers;
- on a model that says p = 0.5 everywhere, beta 0 merges the weakest hand-made strength first (every gain is 0,
  the ties go to the strength), and beta > 0 the pair of the smallest weight: what the formula says;
- k = "auto" (``AUTO_POLICY`` "learned") does not read it; a bad value is refused in one line."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest
import test_gain_power_session19 as s19  # noqa: E402  (session 19's pins and helpers, the same fixtures)

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

_overseg, fish, prep = fx.overseg, fx.fish, fx.prep


def test_the_shipped_value_and_its_export():
    # 0.06 since session 30 (round beta30 passed, benchmarks/results/lead_session30_beta30.md)
    assert "GAIN_BETA" in ln.__all__ and ln.GAIN_BETA == 0.06


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("case", list(s19.PINS))
def test_zero_gives_session_19s_pins_bit_for_bit(prep, monkeypatch, case, compiled):
    if compiled and bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop here (the NumPy case still runs)")
    monkeypatch.setattr(ln, "GAIN_POWER", 1.0)
    monkeypatch.setattr(ln, "GAIN_BETA", 0.0)
    k, min_area, seed = case
    assert s19._digest(*s19._merge(prep, k, min_area, seed, ln.TreeModel.from_npz(s19.MODEL_PATH),
                                   compiled=compiled, monkeypatch=monkeypatch)) == s19.PINS[case]


@pytest.mark.parametrize("gp", [0.5, 1.0])
@pytest.mark.parametrize("beta", [0.06, 0.3, -0.2])
@pytest.mark.parametrize("case", [(4, 0.0, 0), (8, sg.MIN_PART_AREA, 3)])
def test_the_compiled_loop_is_numpys(prep, monkeypatch, gp, beta, case):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    monkeypatch.setattr(ln, "GAIN_POWER", gp)
    monkeypatch.setattr(ln, "GAIN_BETA", beta)
    k, min_area, seed = case
    m = ln.shipped_model()
    a = s19._merge(prep, k, min_area, seed, m)
    b = s19._merge(prep, k, min_area, seed, m, compiled=False, monkeypatch=monkeypatch)
    assert s19._digest(*a) == s19._digest(*b) and len(np.unique(a[0])) == k


def test_a_large_value_changes_the_merges_of_the_shipped_model(prep, monkeypatch):
    m = ln.shipped_model()
    monkeypatch.setattr(ln, "GAIN_BETA", 0.0)
    a = s19._digest(*s19._merge(prep, 6, 0.0, 2, m))
    monkeypatch.setattr(ln, "GAIN_BETA", 0.5)
    b = s19._digest(*s19._merge(prep, 6, 0.0, 2, m))
    assert a != b


@pytest.mark.parametrize("compiled", [True, False])
def test_at_p_one_half_it_names_the_first_merge(prep, monkeypatch, compiled):
    if compiled and bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop here (the NumPy case still runs)")
    half = s19._model(1.0, 0.5, 0.5)   # p = 0.5 for every pair
    X, _ = s19._first_round(prep, monkeypatch, half)
    w = np.sqrt(X[:, ln.SHARE_COLS[0]] * X[:, ln.SHARE_COLS[1]])   # GAIN_POWER 0.5
    assert ln.GAIN_POWER == 0.5
    smallest = int(np.argmin(w))
    areas = prep.graph.areas
    lab = _overseg(prep.graph, 20, seed=5)
    tot = areas.sum()
    firsts = {}
    for beta in (0.0, 0.1):
        monkeypatch.setattr(ln, "GAIN_BETA", beta)
        monkeypatch.setattr(bd, "COMPILED_MERGE", compiled)
        g = sg.k_merge_graph(prep.graph)
        lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
        st: list = []
        _, mg = ln.learned_merge(g, lab, {0: 19}, lc, policy="gain", model=half, strengths=st)
        firsts[beta] = (frozenset(map(int, mg[0])), st[0])
    monkeypatch.setattr(bd, "COMPILED_MERGE", True)
    # beta 0: every gain is 0, the weakest strength goes first (round one's smallest; column 0 is its log)
    assert np.isclose(np.log(firsts[0.0][1]), X[:, 0].min(), rtol=1e-9, atol=1e-12)
    assert not np.isclose(np.log(firsts[0.1][1]), X[:, 0].min(), rtol=1e-9, atol=1e-12)
    # beta 0.1: the pair of the smallest weight: its two clusters' area shares are that row's
    sh = sorted(float(areas[lab == c].sum() / tot) for c in firsts[0.1][0])
    assert np.allclose(sh, sorted([X[smallest, ln.SHARE_COLS[0]], X[smallest, ln.SHARE_COLS[1]]]), rtol=1e-6)
    assert firsts[0.0][0] != firsts[0.1][0]


def test_k_auto_does_not_read_it(prep, monkeypatch):
    monkeypatch.setattr(ln, "GAIN_BETA", 0.0)
    ref = sg.segment_prepared(prep, k="auto")
    monkeypatch.setattr(ln, "GAIN_BETA", 0.5)
    other = sg.segment_prepared(prep, k="auto")
    assert np.array_equal(ref.labels, other.labels) and ref.k == other.k


@pytest.mark.parametrize("bad", [1.5, -2.0, float("nan"), float("inf"), "0.1x"])
def test_a_bad_value_is_refused_in_one_line(prep, monkeypatch, bad):
    monkeypatch.setattr(ln, "GAIN_BETA", bad)
    with pytest.raises(ValueError, match=r"GAIN_BETA must be a finite number in \[-1, 1\]"):
        s19._merge(prep, 4, 0.0, 0, ln.shipped_model())
