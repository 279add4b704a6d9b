"""Session 18, the mesh k edit at full resolution: a k edit's rows of cuts and merges run on the rows pool's
threads at once (segment.SETTLE_WORKERS) on a graph of at least segment.PARALLEL_ROWS_MIN_FACES faces, the lazy
models loaded first on the calling thread (segment._prime_lazy). The labels must be those of the old serial way and
of a fresh run at that k; the comparison must fail on a broken cache."""

from __future__ import annotations

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tools import mesh_seg
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.mesh import segment as segmod

CPU = get_backend("cpu")


def _arrays(seg):
    return seg.labels, seg.memberships, seg.fuzzy, seg.face_colors, seg.representatives


def _same(a, b) -> bool:
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(_arrays(a), _arrays(b), strict=True))


@pytest.fixture
def workers(monkeypatch):
    """The real pool with four threads (a fresh one, not a pool made earlier with another count)."""
    monkeypatch.setattr(segmod, "SETTLE_WORKERS", 4)
    monkeypatch.setattr(segmod, "_POOL", [])
    monkeypatch.setattr(segmod, "_ROWS_POOL", [])
    monkeypatch.setattr(segmod, "PARALLEL_ROWS_MIN_FACES", 0)  # (the test meshes are small)
    return 4


@pytest.mark.parametrize("early", [False, True])
@pytest.mark.parametrize("k", [3, 5, "auto"])
def test_rows_on_several_threads_equal_the_serial_rows(k, early, workers, monkeypatch):
    v, f, _ = box_bar_box()
    monkeypatch.setattr(segmod, "EARLY_SETTLE_CPU", early)
    rows = []
    real = segmod._settle_row
    monkeypatch.setattr(segmod, "_settle_row", lambda *a: rows.append(1) or real(*a))
    fast = segmod.segment_mesh(v, f, device="cpu", k=k, max_faces=None)
    if not early:
        assert len(rows) >= 2  # the pool took the rows
    monkeypatch.setattr(segmod, "SETTLE_WORKERS", 1)
    monkeypatch.setattr(segmod, "EARLY_SETTLE_CPU", False)
    n = len(rows)
    ref = segmod.segment_mesh(v, f, device="cpu", k=k, max_faces=None)
    assert len(rows) == n  # one worker: the old serial way, no pool rows
    assert _same(fast, ref)
    assert fast.info.get("merges") == ref.info.get("merges") and fast.info.get("cut") == ref.info.get("cut")
    assert fast.info.get("oversegment_used") == ref.info.get("oversegment_used")
    for key in ("oversegment_scores", "k_start_scores", "auto_k_starts"):  # every row's own outcome, not only the kept
        assert fast.info.get(key) == ref.info.get(key), key


def test_k_edits_equal_fresh_runs_at_each_k(workers, monkeypatch):
    """Through the stage cache, k 3 -> 4 -> 5 -> 6 -> 4 at full resolution: each result is a fresh run's at that k
    (the memo of the auto-k starts, their cut cache and the pool's rows in play)."""
    monkeypatch.setattr(segmod, "EARLY_SETTLE_CPU", True)
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    base = {"k": 3, "apsp": "cpu", "max_faces": None}
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="x")
    for k in (4, 5, 6, 4):
        res, rep = mesh_seg.TOOL.run_staged(data, {**base, "k": k}, device=CPU, cache=cache, scope="x")
        assert "graph" not in rep.ran
        fresh = mesh_seg.run(data, {**base, "k": k}, device=CPU)
        assert res.seg.k == fresh.seg.k
        assert _same(res.seg, fresh.seg), k


def test_the_comparison_fails_on_a_broken_cache(workers, monkeypatch):
    """The check above has teeth: a memo of the auto-k starts' clusterings spoiled after the first run (their
    memberships' faces reversed) gives a k edit that is not a fresh run's."""
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    base = {"k": 3, "apsp": "cpu", "max_faces": None}
    first, _ = mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="x")
    prep = cache_graph(cache)
    memo = prep.memo[("full", 0)]
    assert memo  # the starts' clusterings are kept
    for key, (fc, Pc) in list(memo.items()):
        bad = np.ascontiguousarray(Pc[::-1])
        memo[key] = (fc, bad)
    prep.cuts.clear()
    res, _ = mesh_seg.TOOL.run_staged(data, {**base, "k": 4}, device=CPU, cache=cache, scope="x")
    fresh = mesh_seg.run(data, {**base, "k": 4}, device=CPU)
    assert not _same(res.seg, fresh.seg)


def cache_graph(cache):
    """The PreparedMesh the stage cache holds (the graph stage's output)."""
    found = [v for v in _values(cache) if isinstance(v, segmod.PreparedMesh)]
    assert len(found) == 1
    return found[0]


def _values(cache):
    for key in cache.keys():
        hit, value = cache.get(key)[:2]
        if hit:
            yield value


def test_a_failing_row_on_the_pool_reaches_the_caller(workers, monkeypatch):
    v, f, _ = box_bar_box()
    monkeypatch.setattr(segmod, "EARLY_SETTLE_CPU", False)

    def boom(*a, **k):
        raise RuntimeError("row failed")

    monkeypatch.setattr(segmod, "_settle_row", boom)
    with pytest.raises(RuntimeError, match="row failed"):
        segmod.segment_mesh(v, f, device="cpu", k=3, max_faces=None)


def test_early_settle_off_keeps_the_rows_in_turn(workers, monkeypatch):
    """The quality benchmarks' recorders turn EARLY_SETTLE off to see the rows' cuts in their order: then no row
    goes to the pool."""
    v, f, _ = box_bar_box()
    monkeypatch.setattr(segmod, "EARLY_SETTLE", False)
    rows = []
    real = segmod._settle_row
    monkeypatch.setattr(segmod, "_settle_row", lambda *a: rows.append(1) or real(*a))
    segmod.segment_mesh(v, f, device="cpu", k=5, max_faces=None)
    assert rows == []


def test_the_lazy_models_are_loaded_before_rows_go_to_threads(workers, monkeypatch):
    """learned.shipped_model / shipped_auto_model append to one list on first use: two threads loading them at once
    could leave the integer k's model where k = "auto"'s is read (session 18: k = "auto" on 101.off gave k 5, not 6,
    in a fresh process with the rows on threads). Every row is handed out only after both are loaded, in order."""
    from gpu_kernels.mesh import learned

    monkeypatch.setattr(learned, "_SHIPPED", {})
    seen = []

    class Recording:
        def submit(self, fn, *args):
            seen.append(dict(learned._SHIPPED))
            from concurrent.futures import Future

            fut = Future()
            fut.set_result(fn(*args))
            return fut

    monkeypatch.setattr(segmod, "_rows_pool", lambda: Recording())
    monkeypatch.setattr(segmod, "EARLY_SETTLE_CPU", False)
    v, f, _ = box_bar_box()
    segmod.segment_mesh(v, f, device="cpu", k="auto", max_faces=None)
    assert seen
    for shipped in seen:
        assert sorted(shipped) == ["auto", "k"]
        assert shipped["auto"] is learned.shipped_auto_model() and shipped["k"] is learned.shipped_model()
        assert shipped["k"] is not shipped["auto"]


def test_a_small_graph_keeps_the_rows_in_turn(workers, monkeypatch):
    """Below PARALLEL_ROWS_MIN_FACES (the default working resolution's 3,500 faces) the rows stay on the job's
    thread, as before."""
    v, f, _ = box_bar_box()
    monkeypatch.setattr(segmod, "PARALLEL_ROWS_MIN_FACES", len(f) + 1)
    rows = []
    real = segmod._settle_row
    monkeypatch.setattr(segmod, "_settle_row", lambda *a: rows.append(1) or real(*a))
    segmod.segment_mesh(v, f, device="cpu", k=5, max_faces=None)
    assert rows == []
    monkeypatch.setattr(segmod, "PARALLEL_ROWS_MIN_FACES", 0)
    segmod.segment_mesh(v, f, device="cpu", k=5, max_faces=None)
    assert len(rows) >= 2


def test_rows_that_differ_equal_the_serial_rows_on_the_fish(workers, monkeypatch):
    """The stored 4,000-face fish at a 2,000-face working resolution, k = 12 (seven rows, five different
    clusterings, review F4): every row's score and the kept result are the serial ones."""
    from _quality_fixtures import fish_arrays

    v, f = fish_arrays()
    monkeypatch.setattr(segmod, "EARLY_SETTLE_CPU", False)
    monkeypatch.setattr(segmod, "K_STARTS_ONLY", False)  # (the factors' rows beside the starts', as before session 20)
    prep = segmod.prepare_mesh(v, f, max_faces=2000, device="cpu", apsp_method="cpu")
    rows = []
    real = segmod._settle_row
    monkeypatch.setattr(segmod, "_settle_row", lambda *a: rows.append(1) or real(*a))
    fast = segmod.segment_prepared(prep, k=12, auto_layout="auto", device="cpu", apsp_method="cpu")
    assert len(rows) >= 4
    monkeypatch.setattr(segmod, "SETTLE_WORKERS", 1)
    ref = segmod.segment_prepared(prep, k=12, auto_layout="auto", device="cpu", apsp_method="cpu")
    assert _same(fast, ref)
    scores = fast.info.get("oversegment_scores")
    assert scores and len(set(scores.values())) > 1  # the rows do differ
    for key in ("oversegment_scores", "k_start_scores", "oversegment_used", "merges"):
        assert fast.info.get(key) == ref.info.get(key), key
