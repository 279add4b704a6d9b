"""The learned merge score for an integer k's merges (issue 22, session 11: gpu_kernels/mesh/learned.py):

- ``policy="hand"`` merges exactly as the library's hand-made loop (labels, merges, strengths);
- the trees as arrays predict the same in NumPy and compiled, and as a hand-built tree says;
- the shipped model is within the brief's size (<= 64 trees, depth <= 4) and reads the features it names;
- ``policy="learned"`` merges the pair the model ranks lowest;
- the switch ``defaults.DEFAULT_K_MERGE`` ("learned" by default since session 11) changes an integer k's merges only (k = "auto" is untouched), through
  :func:`gpu_kernels.mesh.learned.k_merge`; on the GPU the same labels as on the CPU.
The fish of the thin-part tests (4,000 faces: clustered as it is)."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import defaults
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

# the fish, its prepared mesh and the over-segmentation (one copy: tests/mesh/_quality_fixtures.py)
KW, STORED, _overseg, fish, prep = fx.KW, fx.STORED, fx.overseg, fx.fish, fx.prep


@pytest.mark.parametrize("k", [2, 5, 9])
def test_the_hand_policy_is_the_hand_made_loop(prep, k):
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    st_a, st_b = [], []
    a, ma = bd.merge_weakest_boundaries(g, lab, {0: k}, lc, strengths=st_a, min_area=sg.MIN_PART_AREA)
    b, mb = ln.learned_merge(g, lab, {0: k}, lc, strengths=st_b, min_area=sg.MIN_PART_AREA, policy="hand")
    assert np.array_equal(a, b) and [tuple(map(int, x)) for x in ma] == [tuple(map(int, x)) for x in mb]
    assert np.allclose(st_a, st_b, rtol=1e-12, atol=0) and len(np.unique(b)) == k


def test_trees_numpy_and_compiled_agree_and_follow_their_arrays():
    m = ln.shipped_model()
    X = np.random.default_rng(3).normal(size=(300, ln.n_columns()))
    pn = m.predict_numpy(X)
    if ln._compiled_predict() is not None:
        assert np.array_equal(m.predict(X), pn)
    # one hand-built tree of depth 1: x1 <= 0.5 -> 1.0, else 2.0; init 0.25, rate 0.5
    t = ln.TreeModel(feature=np.array([[1, -1, -1]]), threshold=np.array([[0.5, 0, 0]]), left=np.array([[1, 1, 2]]),
                     right=np.array([[2, 1, 2]]), value=np.array([[0.0, 1.0, 2.0]]), init=0.25, rate=0.5, depth=1)
    x = np.array([[9.0, 0.5], [9.0, 0.6], [-9.0, -1.0]])
    assert np.array_equal(t.predict_numpy(x), [0.75, 1.25, 0.75])
    assert np.array_equal(t.predict(x), [0.75, 1.25, 0.75])


def test_the_shipped_model_is_small_and_reads_its_features():
    m = ln.shipped_model()
    assert m.feature.shape[0] <= 64 and 1 <= m.depth <= 4
    assert m.feature.max() < ln.n_columns() and m.feature.min() >= -1
    assert m.feature.max() == len(ln.FEATURES) == 21 and ln.n_columns() == 22  # (session 25: the exact hull's)
    used = np.unique(m.feature[m.feature >= 0])
    assert used.size >= 5  # (it reads more than the hand-made strength)


def test_the_learned_policy_merges_the_pair_the_model_ranks_lowest(prep, monkeypatch):
    g = sg.k_merge_graph(prep.graph)
    lab = _overseg(prep.graph, 20, seed=1)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    m = ln.shipped_model()
    seen = []
    orig = ln.TreeModel.predict

    def spy(self, X):
        p = orig(self, X)
        seen.append((np.asarray(X).copy(), p))
        return p

    compiled, mc = ln.learned_merge(g, lab, {0: 4}, lc, min_area=0.0, policy="learned", model=m)
    monkeypatch.setattr(ln.TreeModel, "predict", spy)
    monkeypatch.setattr(bd, "COMPILED_MERGE", False)  # (the NumPy loop calls predict; session 12: the compiled
    hand, mh = ln.learned_merge(g, lab, {0: 4}, lc, min_area=0.0, policy="hand")  # loop, its own trees)
    out, ml = ln.learned_merge(g, lab, {0: 4}, lc, min_area=0.0, policy="learned", model=m)
    assert len(seen) == len(ml) == len(mh) == int(lab.max()) + 1 - 4
    assert np.array_equal(compiled, out) and mc == ml
    # round one: the merged pair has the lowest prediction (the hand-made strength, column 0, breaks ties)
    X, p = seen[0]
    j = int(np.lexsort((X[:, 0], p))[0])
    assert abs(p[j] - p.min()) < 1e-15
    assert not np.array_equal(hand, out)  # (the model's order is not the hand-made one on this fish)


def test_bad_policy_or_no_model_is_refused(prep):
    lab = _overseg(prep.graph, 6)
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    with pytest.raises(ValueError, match="policy"):
        ln.learned_merge(prep.graph, lab, {0: 2}, lc, policy="convex")
    with pytest.raises(ValueError, match="model"):
        ln.learned_merge(prep.graph, lab, {0: 2}, lc, policy="learned")


def test_the_default_is_the_learned_score():
    assert defaults.DEFAULT_K_MERGE == "learned"  # (session 11's round and its confirmation)
    # (session 13: the merges ordered by the expected change of the Rand Index, results/mesh_q_session13.md)
    assert ln.POLICY == "gain" and ln.MODEL is None


def _run(fish, k, merge, monkeypatch, device="cpu", prepared=None):
    monkeypatch.setattr(defaults, "DEFAULT_K_MERGE", merge)
    calls = []
    orig = ln.k_merge

    def spy(*a, **kw):
        calls.append(1)
        return orig(*a, **kw)

    monkeypatch.setattr(ln, "k_merge", spy)
    kw = {"device": device} if device != "cpu" else dict(KW)
    kw["max_faces"] = None   # (the 4,000-face fish as it is: tests/mesh/_quality_fixtures.py)
    if prepared is not None:   # the module's prepared fish (its APSP once, not once per run; session 19)
        kw["prepared"] = prepared
    seg = sg.segment_mesh(*fish, k=k, **kw)
    return seg, len(calls)


def test_the_switch_changes_an_integer_k_only(fish, prep, monkeypatch):
    """The switch is read after the APSP: the four runs share the module's prepared fish."""
    # (k = 6: at k = 5 the two orders keep the same labels since session 20's K_STARTS_ONLY)
    hand, n_hand = _run(fish, 6, "hand", monkeypatch, prepared=prep)
    learned, n_learned = _run(fish, 6, "learned", monkeypatch, prepared=prep)
    assert n_hand == 0 and n_learned >= 1 and hand.k == learned.k == 6
    assert not np.array_equal(hand.labels, learned.labels)
    auto_h, _ = _run(fish, "auto", "hand", monkeypatch, prepared=prep)
    auto_l, n_auto = _run(fish, "auto", "learned", monkeypatch, prepared=prep)
    assert n_auto == 0 and np.array_equal(auto_h.labels, auto_l.labels)


@pytest.mark.gpu
def test_the_learned_merges_give_the_same_labels_on_the_gpu(fish, monkeypatch):
    pytest.importorskip("cupy")
    for merge in ("hand", "learned"):
        cpu, _ = _run(fish, 5, merge, monkeypatch)
        gpu, n = _run(fish, 5, merge, monkeypatch, device="cuda")
        assert (n >= 1) == (merge == "learned")
        assert np.array_equal(cpu.labels, gpu.labels), merge
