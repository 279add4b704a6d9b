"""Session 7 (issue 22): the auto-k starts' clusterings are clustered in a batch of their own
(``segment.STARTS_OWN_BATCH``), so a memo hit equals a fresh run by construction. (The integer-k
extra starts experiment, ``segment.K_STARTS_EXTRA``, lost in the leave-one-category-out run,
benchmarks/results/mesh_quality_session7.md, and was removed in session 8.)"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment as segmod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mesh_cluster import box_bar_box  # noqa: E402


def _batches(monkeypatch):
    seen = []
    orig = segmod.fuzzy_cluster_many

    def rec(D, ks, **kw):
        seen.append(sorted(int(k) for k in ks))
        return orig(D, ks, **kw)

    monkeypatch.setattr(segmod, "fuzzy_cluster_many", rec)
    return seen


def test_an_integer_k_clusters_the_starts_apart_from_its_factors(monkeypatch):
    """k = 5 on box-bar-box: the starts (24/30/36) are one batch, the factors (5/8/10/15)
    another; before session 7 all seven were one batch, so the starts' clusterings that the
    memo keeps depended on which k filled it."""
    seen = _batches(monkeypatch)
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", False)  # (the factors beside the starts, as before session 20)
    monkeypatch.setattr(segmod, "K_STARTS", None)  # (the auto-k starts 24/30/36, as before session 20)
    v, f, _ = box_bar_box()
    prep = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(prep, k=5, device="cpu", apsp_method="cpu")
    starts = sorted(segmod.AUTO_K_STARTS)
    assert starts in seen
    assert [5, 8, 10, 15] in seen
    assert all(not (set(b) & set(starts)) or b == starts for b in seen)


def test_auto_after_an_integer_k_is_a_memo_hit_equal_to_a_fresh_run(monkeypatch):
    """auto on the prepared mesh after k = 5 (the starts from the memo, no clustering at all)
    gives the labels of auto on a fresh prepared mesh; and k = 5 after auto those of a fresh k = 5."""
    v, f, _ = box_bar_box()
    a = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    k_first = segmod.segment_prepared(a, k=5, device="cpu", apsp_method="cpu")
    seen = _batches(monkeypatch)
    auto_hit = segmod.segment_prepared(a, k="auto", device="cpu", apsp_method="cpu", auto_layout="auto")
    assert all(b == [] for b in seen)  # every start came from the memo
    monkeypatch.undo()
    b = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    auto_fresh = segmod.segment_prepared(b, k="auto", device="cpu", apsp_method="cpu", auto_layout="auto")
    k_hit = segmod.segment_prepared(b, k=5, device="cpu", apsp_method="cpu")
    assert np.array_equal(auto_hit.labels, auto_fresh.labels)
    assert np.array_equal(k_hit.labels, k_first.labels)


def test_the_defaults():
    assert segmod.STARTS_OWN_BATCH is True


def test_an_integer_k_takes_the_auto_starts_above_it():
    v, f, _ = box_bar_box()
    seg = segmod.segment_mesh(v, f, k=5, device="cpu", apsp_method="cpu")
    assert set(seg.info["k_start_scores"]) == set(segmod.integer_k_starts())
    seg = segmod.segment_mesh(v, f, k=26, device="cpu", apsp_method="cpu")  # (a start below k: factors only)
    assert "k_start_scores" not in seg.info


@pytest.mark.gpu
@pytest.mark.parametrize("fixed, own", [(True, True), (False, True), (False, False)],
                         ids=["fixed-batches", "own-batch", "one-batch"])
def test_gpu_memo_hit_equals_a_fresh_run(monkeypatch, fixed, own):
    """The reviewer's question on the GPU: k then auto on one prepared mesh equals auto fresh,
    and auto then k equals k fresh: with the memo's two fixed batches (the default since session 28),
    with the memo's counts in one batch apart from the factors (sessions 7-27), and batched with the
    factors as before session 7 (equal on 38 of 38 PSB meshes on the H100, benchmarks/mesh_memo_session7.py).
    STARTS_OWN_BATCH is read only where MEMO_FIXED_BATCHES is off, so each case sets both."""
    pytest.importorskip("cupy")
    monkeypatch.setattr(segmod, "MEMO_FIXED_BATCHES", fixed)
    monkeypatch.setattr(segmod, "STARTS_OWN_BATCH", own)
    v, f, _ = box_bar_box()

    def run(order):
        prep = segmod.prepare_mesh(v, f, device="cuda")
        return {k: segmod.segment_prepared(prep, k=k, device="cuda").labels for k in order}

    x, y = run([5, "auto"]), run(["auto", 5])
    assert np.array_equal(x["auto"], y["auto"])
    assert np.array_equal(x[5], y[5])
