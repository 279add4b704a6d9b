"""The "gain" merge order's tempered area weight (issue 22, session 19, helper mesh-q13): ``learned.GAIN_POWER`` g,
the pair of the lowest ``(2 p - 1) x (share_small x share_large) ** g`` merged first (gpu_kernels/mesh/learned.py and
the compiled loop gpu_kernels/mesh/_numba_merge.py, which takes g as an argument: numba freezes globals).

- g = 0.5 is shipped since session 19 (it passed its pre-registered round against 1.0:
  benchmarks/results/mesh_q13_session19.md);
- g = 1.0 gives the merges, labels and strengths of the code before the switch, bit for bit (pinned: the SHA-1s below
  were computed with the library at 2fa3ee2, before GAIN_POWER existed, and with this one);
- the compiled loop and the NumPy loop agree at g = 0.5 and 0.75 (the power by the C library's ``pow`` in both);
- on a crafted model (p = 0.9 for a small part, 0.6 for a large one) g changes which pair merges first, and each g
  merges the pair its own formula names; with a constant p no g changes anything (the power is monotone);
- k = "auto" (``AUTO_POLICY`` "learned") does not read it; a bad value is refused in one line."""

from __future__ import annotations

import hashlib
from pathlib import Path

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

_overseg, fish, prep = fx.overseg, fx.fish, fx.prep

#: the integer-k model the pins were taken with (learned_model.NPZ_BASE64 from session 16 to 19; session 20 shipped
#: round q15's model, so the pins read this one from tests/mesh/data)
MODEL_SHA = "10e9c47742bea2e406f7cf4670a5fc478df417ab"
MODEL_PATH = Path(__file__).resolve().parent / "data" / "intk_model_s16_10e9c477.npz"
#: SHA-1 of (labels int32, merges int64, strengths float64) of the fish's 30-cluster over-segmentation merged to k
#: by "gain" with the shipped model, compiled and NumPy alike, before GAIN_POWER existed (2fa3ee2)
PINS = {(3, 0.0, 0): "32a3b46390d5c38566b74916e0005096ac335ae0",
        (6, sg.MIN_PART_AREA, 1): "3aa4a6e32a2279d8942da4e38b7eb6abcdd68459",
        (10, sg.MIN_PART_AREA, 2): "ed2507321b30aee7ba284bc8f49672d4c4b8568e"}


def _digest(lab, mg, st) -> str:
    return hashlib.sha1(np.asarray(lab, np.int32).tobytes() + np.asarray(mg, np.int64).tobytes()
                        + np.asarray(st, np.float64).tobytes()).hexdigest()


def _merge(prep, k, min_area, seed, model, n=30, compiled=True, monkeypatch=None):
    if not compiled:
        monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    try:
        g = sg.k_merge_graph(prep.graph)
        lab = _overseg(prep.graph, n, seed=seed)
        lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
        st: list = []
        out, mg = ln.learned_merge(g, lab, {0: k}, lc, min_area=min_area, policy="gain", model=model, strengths=st)
        return out, mg, st
    finally:
        if not compiled:
            monkeypatch.setattr(bd, "COMPILED_MERGE", True)


def _model(t: float, p_small: float = 0.9, p_large: float = 0.6) -> ln.TreeModel:
    """One tree of depth 1: p = ``p_small`` where share_small <= ``t``, else ``p_large``."""
    i = np.array([[ln.SHARE_COLS[0], -1, -1]], dtype=np.int64)
    return ln.TreeModel(feature=i, threshold=np.array([[t, 0.0, 0.0]]), left=np.array([[1, 1, 2]]),
                        right=np.array([[2, 1, 2]]), value=np.array([[0.0, p_small, p_large]]), init=0.0, rate=1.0,
                        depth=1)


def test_the_shipped_value_is_a_half_and_exported():
    assert ln.GAIN_POWER == 0.5 and "GAIN_POWER" in ln.__all__
    assert ln.POLICY == "gain" and ln.AUTO_POLICY == "learned"


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("case", list(PINS))
def test_one_gives_the_merges_from_before_the_switch_bit_for_bit(prep, monkeypatch, case, compiled):
    if compiled and bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop here (the NumPy case still runs)")
    assert hashlib.sha1(MODEL_PATH.read_bytes()).hexdigest() == MODEL_SHA
    monkeypatch.setattr(ln, "GAIN_POWER", 1.0)
    monkeypatch.setattr(ln, "GAIN_BETA", 0.0)   # (session 30's caution, 0.06 shipped: off, as before the switches)
    k, min_area, seed = case
    assert _digest(*_merge(prep, k, min_area, seed, ln.TreeModel.from_npz(MODEL_PATH), compiled=compiled,
                           monkeypatch=monkeypatch)) == PINS[case]


@pytest.mark.parametrize("gp", [0.5, 0.75, 0.0])
@pytest.mark.parametrize("case", [(4, 0.0, 0), (8, sg.MIN_PART_AREA, 3)])
def test_the_compiled_loop_is_numpys_at_other_powers(prep, monkeypatch, gp, case):
    if bd.compiled_merge() is None:
        pytest.skip("numba is not available: there is no compiled loop to compare")
    monkeypatch.setattr(ln, "GAIN_POWER", gp)
    k, min_area, seed = case
    m = ln.shipped_model()
    a = _merge(prep, k, min_area, seed, m)
    b = _merge(prep, k, min_area, seed, m, compiled=False, monkeypatch=monkeypatch)
    assert _digest(*a) == _digest(*b) and len(np.unique(a[0])) == k


def _first_round(prep, monkeypatch, model):
    """Round one's features and predictions (NumPy loop, spied)."""
    seen = fx.spy_predictions(monkeypatch)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)
    _merge(prep, 19, 0.0, 5, model, n=20)
    monkeypatch.setattr(bd, "COMPILED_MERGE", True)
    X, p = seen[0]
    monkeypatch.undo()
    return X, p


def test_the_power_changes_the_first_merge_on_a_crafted_model(prep, monkeypatch):
    X, _ = _first_round(prep, monkeypatch, _model(0.0))
    monkeypatch.setattr(ln, "GAIN_BETA", 0.0)   # (the formulas below are session 19's: without session 30's caution)
    ss, sl = X[:, ln.SHARE_COLS[0]], X[:, ln.SHARE_COLS[1]]
    # the threshold: a small part (p 0.9) of low area product against large pairs (p 0.6) of a higher one
    found = None
    for t in np.unique(ss)[1:-1]:
        p = np.where(ss <= t, 0.9, 0.6)
        j1 = int(np.argmin((2 * p - 1) * ss * sl))
        j5 = int(np.argmin((2 * p - 1) * np.sqrt(ss * sl)))
        if j1 != j5:
            found = (float(t), j1, j5)
            break
    assert found is not None, "no threshold makes g = 1 and g = 0.5 differ on this fish: the crafted case is gone"
    t, j1, j5 = found
    model = _model(t)
    firsts = {}
    for gp in (1.0, 0.5):
        monkeypatch.setattr(ln, "GAIN_POWER", gp)
        for compiled in (True, False):
            if compiled and bd.compiled_merge() is None:
                continue
            monkeypatch.setattr(bd, "COMPILED_MERGE", compiled)
            g = sg.k_merge_graph(prep.graph)
            lab = _overseg(prep.graph, 20, seed=5)
            lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
            _, mg = ln.learned_merge(g, lab, {0: 19}, lc, policy="gain", model=model)
            firsts.setdefault(gp, set()).add(frozenset(map(int, mg[0])))
    monkeypatch.setattr(bd, "COMPILED_MERGE", True)
    assert len(firsts[1.0]) == len(firsts[0.5]) == 1        # compiled = NumPy
    a, b = next(iter(firsts[1.0])), next(iter(firsts[0.5]))
    assert a != b
    # each merged the pair its own formula names: the two clusters' area shares are the row's
    areas = prep.graph.areas
    lab = _overseg(prep.graph, 20, seed=5)
    tot = areas.sum()
    for pair, j in ((a, j1), (b, j5)):
        sh = sorted(float(areas[lab == c].sum() / tot) for c in pair)
        assert np.allclose(sh, sorted([ss[j], sl[j]]), rtol=1e-6)


def test_a_constant_p_gives_the_same_merges_at_every_power(prep, monkeypatch):
    model = _model(1.0, 0.8, 0.8)   # (every share <= 1: p = 0.8 everywhere)
    ref = _digest(*_merge(prep, 5, 0.0, 4, model))
    for gp in (1.0, 0.75, 0.25):
        monkeypatch.setattr(ln, "GAIN_POWER", gp)
        assert _digest(*_merge(prep, 5, 0.0, 4, model)) == ref


def test_k_auto_does_not_read_it(prep, monkeypatch):
    monkeypatch.setattr(ln, "GAIN_POWER", 1.0)
    ref = sg.segment_prepared(prep, k="auto")
    monkeypatch.setattr(ln, "GAIN_POWER", 0.5)
    other = sg.segment_prepared(prep, k="auto")
    assert np.array_equal(ref.labels, other.labels) and ref.k == other.k
    # ... while an integer k does: its kept result's merges come in another order (the fish at k = 6, session 26's
    # seven starts: the 50-cluster start's result is kept under both powers, its 33rd and 34th merges differ and
    # its labels end the same; with session 25's five starts and model 3,948 of the 4,000 faces moved, at k = 3
    # 3,667 did with session 20's model, at k = 4 2,444 with the factors beside three starts)
    a = sg.segment_prepared(prep, k=6)
    monkeypatch.setattr(ln, "GAIN_POWER", 1.0)
    b = sg.segment_prepared(prep, k=6)
    monkeypatch.setattr(ln, "GAIN_POWER", 0.5)
    assert len(a.info["merge_strengths"]) == len(b.info["merge_strengths"])
    assert a.info["merge_strengths"] != b.info["merge_strengths"]


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf")])
def test_a_bad_power_is_refused_in_one_line(prep, monkeypatch, bad):
    monkeypatch.setattr(ln, "GAIN_POWER", bad)
    with pytest.raises(ValueError, match="GAIN_POWER must be a finite number >= 0"):
        _merge(prep, 4, 0.0, 0, ln.shipped_model())
