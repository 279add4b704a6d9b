"""k = "auto" stops at the merge curve's bigger step just past the bar (gpu_kernels.mesh.autok
.stop_index, issue 22 session 6): a boundary that crosses the bar by a small step, followed
at once by a much bigger step, is merged too (a cup's rim crease, a table top split in two)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from psb_cases import needs_psb, psb_mesh  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import autok, simplify
from gpu_kernels.mesh.autok import stop_index


def _both(monkeypatch, module, name, values, v, f, humans):
    """psb_cases.segment_with (k = "auto" on the CPU: its k and mean Rand Index error) at each of ``values``,
    the first stage prepared once: the setting acts in the cuts only, and each run gets a copy with empty
    memos, so each is segment_mesh(v, f)'s fresh result."""
    import dataclasses

    from gpu_kernels.mesh import defaults
    from gpu_kernels.mesh import segment as segmod
    from gpu_kernels.mesh.metrics import rand_index_error

    # (the settings compared are the hand-made stop rule's: k = "auto" by it, not by the learned merges, the
    # default since session 12)
    monkeypatch.setattr(defaults, "DEFAULT_AUTO_MERGE", "hand")
    prep = segmod.prepare_mesh(v, f, device="cpu")
    out = []
    for value in values:
        monkeypatch.setattr(module, name, value)
        seg = segmod.segment_mesh(v, f, k="auto", device="cpu", prepared=dataclasses.replace(prep, memo={}, cuts={}))
        out.append((seg.k, float(np.mean([rand_index_error(seg.labels, h) for h in humans]))))
    return out


def test_no_lookahead_is_the_first_crossing():
    st = [0.4, 0.9, 1.6, 1.7, 5.0]
    assert stop_index(st, 1.5, floor=1.5, lookahead=0) == 2
    assert stop_index(st, 1.65, floor=1.5, lookahead=0) == 3
    assert stop_index(st, 9.0, floor=1.5, lookahead=0) == 5  # never crossed: every merge kept
    assert stop_index([], 1.5, lookahead=1) == 0


def test_a_small_crossing_followed_by_a_big_step_is_merged():
    # 1.6 / 1.0 = 1.6 steps less than 4.0 / 1.6 = 2.5: the stop moves to 4.0
    assert stop_index([0.5, 1.0, 1.6, 4.0, 4.4], 1.5, floor=1.5, lookahead=1) == 3
    # a big crossing followed by a small step stays where it was
    assert stop_index([0.5, 1.0, 3.0, 3.3, 9.0], 1.5, floor=1.5, lookahead=1) == 2
    # the bigger step two merges later needs lookahead 2
    st = [0.5, 1.0, 1.6, 1.7, 6.0]
    assert stop_index(st, 1.5, floor=1.5, lookahead=1) == 2
    assert stop_index(st, 1.5, floor=1.5, lookahead=2) == 4


def test_candidates_below_the_floor_are_not_stops():
    # the merge after the crossing is weaker than the floor (merges are not monotone in
    # strength): it cannot be the stop, so the crossing stays the stop
    assert stop_index([0.5, 1.0, 1.6, 1.2], 1.5, floor=1.5, lookahead=1) == 2


def test_ties_go_to_the_earliest():
    assert stop_index([1.0, 2.0, 4.0], 1.5, floor=1.5, lookahead=1) == 1


def test_the_default_is_the_cross_validated_lookahead():
    assert autok.AUTO_K_LOOKAHEAD == 1
    st = [0.5, 1.0, 1.6, 4.0, 4.4]
    assert stop_index(st, 1.5, floor=1.5) == stop_index(st, 1.5, floor=1.5, lookahead=1)


@pytest.mark.slow
@needs_psb(23)
def test_cup_is_not_split_inside_from_outside_at_auto_k(monkeypatch):
    """PSB mesh 23 (a cup): with the plain first crossing k = auto stops at the rim crease
    (strength just over the bar) and cuts the cup's inside from its outside (Rand Index error
    0.43); with the lookahead the next, much bigger step is the stop and the error is small."""
    from gpu_kernels.mesh import segment as _segmod

    v, f, humans = psb_mesh(23)
    # (pinned at the 4,000-face working mesh the case was found and the switch chosen at: since session 16 the
    # working mesh has 3,500 faces, where the first crossing no longer fails here, 0.073 against the lookahead's 0.056:
    # benchmarks/results/mesh_speed5_session16.md)
    monkeypatch.setattr(_segmod, "WORKING_FACES", 4000)
    # (and simplified in the file's listing, as then: session 21's canonical order, on by default since session 22,
    # gives a working mesh that no longer shows the failure either, 0.070 against 0.056)
    monkeypatch.setattr(simplify, "CANONICAL_ORDER", False)
    hk = [int(np.unique(h).size) for h in humans]
    (k_new, ri_new), (k_old, ri_old) = _both(monkeypatch, autok, "AUTO_K_LOOKAHEAD", (1, 0), v, f, humans)
    assert min(hk) <= k_new <= max(hk), (k_new, hk)
    assert ri_new < 0.15, ri_new
    assert ri_old > ri_new + 0.2, (ri_old, ri_new)  # the failure the change mends


# --------------------------------------------------------------------------- AUTO_K_MIN_PART
def test_small_parts_join_a_neighbour_and_parts_stay():
    """absorb_small_parts merges only the parts under the share, into a neighbour."""
    import sys

    from gpu_kernels.mesh import segment as segmod
    from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_mesh_cluster import box_bar_box

    v, f, truth = box_bar_box()
    vc, fc, _, _ = clean_mesh(v, f)
    g = dual_graph(vc, fc, delta=0.05, eta_convex=0.02)
    lab = truth.astype(np.int32).copy()
    # a patch of a few faces inside part 0 becomes label 3
    seed = int(np.flatnonzero(lab == 0)[0])
    near = np.argsort(np.linalg.norm(g.centroids - g.centroids[seed], axis=1))[:6]
    lab[near[lab[near] == 0]] = 3
    share = np.bincount(lab, weights=g.areas) / g.areas.sum()
    assert share[3] < 0.01 < share[:3].min()
    out, merges = segmod.absorb_small_parts(g, lab, np.zeros(4, dtype=np.int64), {0}, 0.01)
    assert len(merges) == 1 and merges[0][1] == 3
    np.testing.assert_array_equal(np.unique(out), [0, 1, 2])
    np.testing.assert_array_equal(out[lab != 3], lab[lab != 3])
    same, none = segmod.absorb_small_parts(g, lab, np.zeros(4, dtype=np.int64), {0}, 0.0)
    assert none == [] and np.array_equal(same, lab)
    # another component's parts are not touched
    _, none = segmod.absorb_small_parts(g, lab, np.zeros(4, dtype=np.int64), {1}, 0.01)
    assert none == []


def test_the_small_part_default():
    from gpu_kernels.mesh import segment as segmod

    assert segmod.AUTO_K_MIN_PART == 0.01


@pytest.mark.slow
@needs_psb(145)
def test_table_has_the_humans_k_at_auto_k(monkeypatch):
    """PSB mesh 145 (a table; every human says 5 parts): k = auto kept two tiny parts besides
    the top and the legs (k = 7); absorbed, k = 5 at the same Rand Index."""
    from gpu_kernels.mesh import segment as segmod

    v, f, humans = psb_mesh(145)
    (k_new, ri_new), (k_old, ri_old) = _both(monkeypatch, segmod, "AUTO_K_MIN_PART", (0.01, 0.0), v, f, humans)
    assert k_new == 5 and k_old > 5, (k_new, k_old)
    assert ri_new < ri_old + 0.01, (ri_new, ri_old)
