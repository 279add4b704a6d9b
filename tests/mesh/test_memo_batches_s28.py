"""Session 28 (issue 22): the memo's cluster counts are clustered in two fixed batches, the auto-k starts and an
integer k's other starts, whichever k asks first (``segment.MEMO_FIXED_BATCHES``). A product's rounding depends on its
batch's shape: on the H200, the auto-k starts alone and inside the batch of all seven starts gave other
representatives on 14 of 152 PSB cases (``benchmarks/results/lead_session28.md``), so a memo hit filled by another k
was not the clustering a fresh run makes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment as segmod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mesh_cluster import box_bar_box  # noqa: E402
from test_quality7_batches import _batches as _record  # noqa: E402  (the fuzzy_cluster_many batch recorder)

AUTO = sorted(int(x) for x in segmod.AUTO_K_STARTS)
OTHER = sorted(set(segmod.integer_k_starts()) - set(AUTO))


@pytest.fixture(scope="module")
def mesh():
    v, f, _ = box_bar_box()
    assert f.shape[0] > max(segmod.integer_k_starts())  # (no count clipped to the component's size)
    return v, f


def test_the_batches_do_not_depend_on_which_k_came_first(mesh, monkeypatch):
    v, f = mesh
    assert OTHER  # (the shipped integer k has starts beside the auto-k starts)
    seen = _record(monkeypatch)
    a = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(a, k=5, device="cpu", apsp_method="cpu")      # an integer k fresh: two batches
    assert sorted(seen) == sorted([AUTO, OTHER]), seen
    seen.clear()
    segmod.segment_prepared(a, k="auto", device="cpu", apsp_method="cpu")  # then k = "auto": every start a hit
    assert seen == []
    b = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(b, k="auto", device="cpu", apsp_method="cpu")  # k = "auto" fresh: its batch alone
    assert seen == [AUTO]
    seen.clear()
    segmod.segment_prepared(b, k=7, device="cpu", apsp_method="cpu")      # then an integer k: the other batch
    assert seen == [OTHER]


def test_the_memo_key_holds_the_batch_and_a_batch_is_made_whole(mesh, monkeypatch):
    v, f = mesh
    p = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(p, k=5, device="cpu", apsp_method="cpu")
    memo = next(m for m in p.memo.values() if m)
    assert {key[1]: key[4] for key in memo} == {**{x: tuple(AUTO) for x in AUTO}, **{x: tuple(OTHER) for x in OTHER}}
    # one clustering of a batch dropped (an entry another batch made would not be found either): the whole batch
    # is clustered again, as a fresh run clusters it
    del memo[next(key for key in memo if key[1] == AUTO[0])]
    seen = _record(monkeypatch)
    segmod.segment_prepared(p, k="auto", device="cpu", apsp_method="cpu")
    assert seen == [AUTO]


def test_the_prefetch_runs_the_same_batch(mesh):
    v, f = mesh
    p = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(p, k="auto", device="cpu", apsp_method="cpu")
    (_, _, cap, power, _), = {key for m in p.memo.values() for key in m if key[1] == AUTO[0]}
    work = segmod._missing_starts(p, tuple(segmod.integer_k_starts()), cap, power)
    assert [sorted(w[4]) for w in work] == [OTHER]


def test_labels_are_the_same_in_either_order(mesh):
    v, f = mesh

    def run(order):
        prep = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
        return {k: segmod.segment_prepared(prep, k=k, device="cpu", apsp_method="cpu").labels for k in order}

    x, y = run([5, "auto"]), run(["auto", 5])
    assert np.array_equal(x["auto"], y["auto"]) and np.array_equal(x[5], y[5])


def test_the_switch_off_is_the_old_single_batch(mesh, monkeypatch):
    v, f = mesh
    monkeypatch.setattr(segmod, "MEMO_FIXED_BATCHES", False)
    seen = _record(monkeypatch)
    p = segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu")
    segmod.segment_prepared(p, k=5, device="cpu", apsp_method="cpu")
    assert seen == [sorted(AUTO + OTHER)]


def test_the_default():
    assert segmod.MEMO_FIXED_BATCHES is True
