"""``segment.K_STARTS_ONLY`` (session 20, issue 22; on since round q15): where an integer k takes the auto-k starts,
the medoid is chosen among the starts' results alone and the default over-segmentation factors are not run at all."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment as segmod
from gpu_kernels.mesh import segment_mesh

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mesh_cluster import box_bar_box  # noqa: E402


def _capture(monkeypatch):
    seen = []
    real = segmod.choose_consensus

    def spy(graph, labelings, rule=None):
        out = real(graph, labelings, rule)
        seen.append(([np.asarray(x).copy() for x in labelings], out[0]))
        return out

    monkeypatch.setattr(segmod, "choose_consensus", spy)
    return seen


@pytest.mark.parametrize("k", [3, 5])
def test_the_starts_alone_are_the_full_runs_start_rows(monkeypatch, k):
    """With the switch on, the candidates are exactly the start rows of the default run (its last
    len(integer_k_starts()) candidates), the kept one is their medoid, and no factor row is clustered."""
    v, f, _ = box_bar_box()
    seen = _capture(monkeypatch)
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", False)
    full = segment_mesh(v, f, k=k, device="cpu", apsp_method="cpu")
    (cands_full, _), = seen
    n_st = len(segmod.integer_k_starts())
    assert len(cands_full) == len(segmod.DEFAULT_OVERSEGMENT) + n_st
    seen.clear()
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", True)
    only = segment_mesh(v, f, k=k, device="cpu", apsp_method="cpu")
    (cands, kept), = seen
    assert len(cands) == n_st
    for a, b in zip(cands, cands_full[-n_st:], strict=True):
        assert np.array_equal(a, b)
    assert str(only.info["oversegment_used"]) == f"start {segmod.integer_k_starts()[kept]}"
    assert set(only.info["k_start_scores"]) == set(segmod.integer_k_starts())
    assert only.info["oversegment_scores"] == {}
    assert only.k == full.k == k


def test_a_k_above_the_starts_still_uses_the_factors(monkeypatch):
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", True)
    v, f, _ = box_bar_box()
    seg = segment_mesh(v, f, k=min(segmod.integer_k_starts()) + 1, device="cpu", apsp_method="cpu")
    assert seg.info["oversegment_used"] in segmod.DEFAULT_OVERSEGMENT
    assert "k_start_scores" not in seg.info


def test_factors_a_caller_names_are_kept_beside_the_starts(monkeypatch):
    v, f, _ = box_bar_box()
    seen = _capture(monkeypatch)
    seg = segment_mesh(v, f, k=4, oversegment=(1.0, 2.0), device="cpu", apsp_method="cpu")
    (cands, _), = seen
    assert len(cands) == 2 + len(segmod.integer_k_starts())
    assert set(seg.info["oversegment_scores"]) == {1.0, 2.0}


def test_the_default_is_on():
    """Session 20's round q15 (benchmarks/results/mesh_q15_session20.md) shipped it."""
    assert segmod.K_STARTS_ONLY is True


def test_auto_k_does_not_read_the_switch(monkeypatch):
    v, f, _ = box_bar_box()
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", False)
    a = segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu")
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", True)
    b = segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu")
    assert np.array_equal(a.labels, b.labels)


def test_a_k_edit_from_the_memo_still_reports_and_cancels():
    """With the starts memoized, a k edit clusters nothing; its clusterings stage still says so and checks cancel
    (:func:`segment.clusterings_prepared`'s own first update)."""
    from gpu_kernels.jobs import Cancelled, Progress

    v, f, _ = box_bar_box()
    prep = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(prep, k=5, device="cpu", apsp_method="cpu")  # (fills the memo with every start)
    calls = []
    real = segmod.fuzzy_cluster_many
    segmod.fuzzy_cluster_many = lambda *a, **kw: calls.append(1) or real(*a, **kw)
    try:
        seen = []
        segmod.segment_prepared(prep, k=6, device="cpu", apsp_method="cpu",
                                progress=Progress(lambda fr, st: seen.append(st or ""), min_interval=0.0))
        assert calls == []  # nothing clustered
        assert any("clustering into 6 parts" in st for st in seen)
        box = {}

        def cb(fr, st):
            if st and "clustering into 7 parts" in st:
                box["p"].cancel()

        box["p"] = Progress(cb, min_interval=0.0)
        with pytest.raises(Cancelled):
            segmod.segment_prepared(prep, k=7, device="cpu", apsp_method="cpu", progress=box["p"])
    finally:
        segmod.fuzzy_cluster_many = real
