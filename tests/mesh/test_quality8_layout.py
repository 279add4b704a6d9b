"""Session 8 (issue 22) experiment: k = "auto"'s final layout from its starts
(``segment.AUTO_K_LAYOUT``): "medoid" (the default), "remerge" (the medoid start's k, every
start's cut clusters merged to it by an integer k's merges, their medoid), "vote" (the same
at the median of the starts' k), "vote_auto" (the median k, the starts merged further by
k = "auto"'s own merges) and "vote_pick" (the start at the median k that agrees best with all). benchmarks/results/mesh_quality_session8.md."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment as segmod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mesh_cluster import box_bar_box  # noqa: E402


def _captured(monkeypatch, mode="vote"):
    """(graph, trials, j) of one k = "auto" run's relayout, on the box-bar-box."""
    got = {}
    orig = segmod._relayout_starts

    def spy(graph, trials, j, m):
        got.update(graph=graph, trials=trials, j=j)
        return orig(graph, trials, j, m)

    monkeypatch.setattr(segmod, "_relayout_starts", spy)
    monkeypatch.setattr(segmod, "AUTO_K_LAYOUT", mode)
    v, f, _ = box_bar_box()
    seg = segmod.segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu")
    return seg, got


def test_the_default_is_the_medoid(monkeypatch):
    assert segmod.AUTO_K_LAYOUT == "medoid"
    called = []
    monkeypatch.setattr(segmod, "_relayout_starts", lambda *a: called.append(1) or [])
    v, f, _ = box_bar_box()
    segmod.segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu")
    assert not called


@pytest.mark.parametrize("mode, want", [("vote", 4), ("remerge", 5)])
def test_every_start_is_merged_to_one_k(monkeypatch, mode, want):
    """With the starts' k set to 3 / 5 / 4 and the medoid at the second: "vote" merges every
    start to the median 4, "remerge" to the medoid's 5."""
    _, got = _captured(monkeypatch, mode)
    assert len(got["trials"]) == len(segmod.AUTO_K_STARTS) == 3
    trials = [dict(t, k_per_component=[k]) for t, k in zip(got["trials"], (3, 5, 4), strict=True)]
    out = segmod._relayout_starts(got["graph"], trials, 1, mode)
    assert [i for i, _, _ in out] == [0, 1, 2]
    for _, (lab, P, reps, _), info in out:
        assert np.unique(lab).size == want == P.shape[1] == reps.size
        assert info["k_per_component"] == [want]
        np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-5)


def test_vote_in_the_pipeline_takes_the_median_k(monkeypatch):
    seg, got = _captured(monkeypatch, "vote")
    ks = sorted(seg.info["auto_k_starts"].values())
    assert seg.k == ks[len(ks) // 2]
    assert got["trials"] and all("_cut" in t for t in got["trials"])


def test_vote_auto_merges_the_starts_above_the_median_k(monkeypatch):
    """Starts of 4 / 8 / 16 clusters give the fish 3 / 4 / 5 parts: "vote_auto" keeps the 8-start's
    result, merges the 16-start's one part further by k = "auto"'s merges, leaves the 4-start out."""
    got = []
    orig = segmod._vote_auto_starts

    def spy(graph, results, trials):
        out = orig(graph, results, trials)
        got.append(([t["k_per_component"] for t in trials], [(i, t["k_per_component"]) for i, _, t in out]))
        for _, (lab, P, reps, _), _ in out:
            assert np.unique(lab).size == P.shape[1] == reps.size
        return out

    monkeypatch.setattr(segmod, "_vote_auto_starts", spy)
    monkeypatch.setattr(segmod, "AUTO_K_STARTS", (4, 8, 16))
    monkeypatch.setattr(segmod, "AUTO_K_LAYOUT", "vote_auto")
    z = np.load(Path(__file__).with_name("data") / "fish4000.npz")
    seg = segmod.segment_mesh(z["vertices"].astype(np.float64), z["faces"].astype(np.int64), k="auto",
                              device="cpu", apsp_method="cpu")
    assert got == [([[3], [4], [5]], [(1, [4]), (2, [4])])]
    assert seg.k == 4 and seg.info["auto_k_starts"] == {4: 3, 8: 4, 16: 5}


def test_vote_pick_takes_a_start_at_the_median_k(monkeypatch):
    """Of starts with 3 / 5 / 4 parts, "vote_pick" keeps the one with 4, whatever the medoid is;
    of two at the median, the one agreeing best with all three results."""
    _, got = _captured(monkeypatch, "vote")
    g, trials = got["graph"], got["trials"]
    results = [(t["_cut"][0], None, None, None) for t in trials]  # (distinct labelings)
    fake = [dict(t, k_per_component=[k]) for t, k in zip(trials, (3, 5, 4), strict=True)]
    assert segmod._vote_pick(g, results, fake, 0) == 2
    assert segmod._vote_pick(g, results, fake, 1) == 2
    two = [dict(t, k_per_component=[k]) for t, k in zip(trials, (4, 5, 4), strict=True)]
    score = segmod.agreement_matrix([r[0] for r in results], g.areas).sum(axis=1)
    assert segmod._vote_pick(g, results, two, 1) == (0 if score[0] > score[2] else 2)
    none = [dict(t, k_per_component=[k]) for t, k in zip(trials, (3, 5, 4), strict=True)][:2]
    assert segmod._vote_pick(g, results[:2], none, 1) == 1  # (fewer than three starts: the medoid)


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["remerge", "vote", "vote_auto", "vote_pick"])
def test_gpu_layout_agrees_with_the_cpu(monkeypatch, mode):
    pytest.importorskip("cupy")
    monkeypatch.setattr(segmod, "AUTO_K_LAYOUT", mode)
    z = np.load(Path(__file__).with_name("data") / "fish4000.npz")
    for v, f in (box_bar_box()[:2], (z["vertices"].astype(np.float64), z["faces"].astype(np.int64))):
        cpu = segmod.segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu")
        gpu = segmod.segment_mesh(v, f, k="auto", device="cuda")
        assert gpu.k == cpu.k
        assert segmod.labels_agreement(gpu.labels, cpu.labels, np.ones(len(f))) > 0.97
