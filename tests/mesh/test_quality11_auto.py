"""k = "auto" by the learned score (issue 22, session 11, round 2: gpu_kernels/mesh/learned.py ``auto_merge``):

- the stop: a component stops merging once every candidate pair is predicted at least ``AUTO_STOP_P`` likely to
  be different (a model that says "different" everywhere merges only slivers; one that says "same" everywhere
  merges down to the target);
- the switch ``defaults.DEFAULT_AUTO_MERGE`` ("learned" by default since session 12) changes k = "auto" only, through
  :func:`gpu_kernels.mesh.learned.auto_merge`, and an integer k is untouched by it; on the GPU the same labels as
  on the CPU.
The fish of the thin-part tests (4,000 faces: clustered as it is)."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import defaults
from gpu_kernels.mesh import learned as ln
from gpu_kernels.mesh import segment as sg

# the fish, its fixture and the over-segmentation (one copy: tests/mesh/_quality_fixtures.py)
KW, _overseg, fish, prep = fx.KW, fx.overseg, fx.fish, fx.prep


def _constant(p: float) -> ln.TreeModel:
    """A model that predicts ``p`` for every pair (one leaf)."""
    return ln.TreeModel(feature=np.array([[-1]]), threshold=np.zeros((1, 1)), left=np.zeros((1, 1), np.int64),
                        right=np.zeros((1, 1), np.int64), value=np.array([[p]]), init=0.0, rate=1.0, depth=1)


@pytest.fixture(scope="module")
def graph(prep):
    return prep.graph   # (the fish as it is, prepared once per module: tests/mesh/_quality_fixtures.py)


@pytest.mark.parametrize(("p", "merges_all"), [(0.7, False), (0.3, True)])
def test_the_stop_follows_the_prediction(graph, p, merges_all):
    lab = _overseg(graph, 24)
    n = int(lab.max()) + 1
    lc = np.zeros(n, dtype=np.int64)
    out, merges = ln.learned_merge(graph, lab, {0: 2}, lc, policy="learned", model=_constant(p),
                                   stop_p=ln.AUTO_STOP_P)
    assert len(np.unique(out)) == (2 if merges_all else n)
    assert len(merges) == (n - 2 if merges_all else 0)


def _run(fish, k, merge, monkeypatch, device="cpu", prepared=None):
    monkeypatch.setattr(defaults, "DEFAULT_AUTO_MERGE", merge)
    calls = []
    orig = ln.auto_merge

    def spy(*a, **kw):
        calls.append(1)
        return orig(*a, **kw)

    monkeypatch.setattr(ln, "auto_merge", spy)
    kw = {"device": device} if device != "cpu" else dict(KW)
    kw["max_faces"] = None   # (the 4,000-face fish as it is: tests/mesh/_quality_fixtures.py)
    if prepared is not None:   # the module's prepared fish (its APSP once, not once per run; session 19)
        kw["prepared"] = prepared
    return sg.segment_mesh(*fish, k=k, **kw), len(calls)


def test_the_switch_changes_k_auto_only(fish, prep, monkeypatch):
    """The switch is read after the APSP: the four runs share the module's prepared fish."""
    assert defaults.DEFAULT_AUTO_MERGE == "learned"  # (on since session 12: the lead's cost rule passed, mesh_auto_session12.md)
    hand, n_hand = _run(fish, "auto", "hand", monkeypatch, prepared=prep)
    learned, n_learned = _run(fish, "auto", "learned", monkeypatch, prepared=prep)
    assert n_hand == 0 and n_learned == len(sg.AUTO_K_STARTS)  # (one per auto-k start)
    assert not np.array_equal(hand.labels, learned.labels)
    k_h, _ = _run(fish, 5, "hand", monkeypatch, prepared=prep)
    k_l, n_k = _run(fish, 5, "learned", monkeypatch, prepared=prep)
    assert n_k == 0 and np.array_equal(k_h.labels, k_l.labels)


@pytest.mark.gpu
def test_learned_k_auto_gives_the_same_labels_on_the_gpu(fish, monkeypatch):
    pytest.importorskip("cupy")
    cpu, _ = _run(fish, "auto", "learned", monkeypatch)
    gpu, n = _run(fish, "auto", "learned", monkeypatch, device="cuda")
    assert n >= 1 and np.array_equal(cpu.labels, gpu.labels)
