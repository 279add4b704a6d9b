"""Session 23, live tuning of the mesh tool: a stage-1 edit (a new mesh or graph parameter) cancels the background
clustering of the mesh it replaces, instead of letting it take the device from the new run. A cancelled prefetch
leaves nothing in its mesh's memo, so coming back to that mesh gives the plain result.

Session 24: the pipeline cancels it (the prefetch's handle, per cache scope: ``Pipeline.cancel_prefetches``), not a
process-wide ``segment.cancel_prefetches`` called by the graph stage, so another view's prefetch runs on."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tools import mesh_seg
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import Cancelled
from gpu_kernels.mesh import segment as segmod

CPU = get_backend("cpu")


def _slow_prefetch(monkeypatch) -> threading.Event:
    """The prefetch thread's clusterings take ~30 s unless cancelled (their progress raises Cancelled then)."""
    real = segmod.fuzzy_cluster_many
    started = threading.Event()

    def slow(D, ks, **kw):
        if threading.current_thread().name == "gpulab-mesh-prefetch":
            started.set()
            for i in range(3000):
                time.sleep(0.01)
                kw["progress"].update(i / 3000)
        return real(D, ks, **kw)

    monkeypatch.setattr(segmod, "fuzzy_cluster_many", slow)
    return started


def _prep():
    v, f, _ = box_bar_box()
    return segmod.prepare_mesh(v, f, device="cpu", apsp_method="cpu", max_faces=600)


def test_cancel_prefetches_stops_one_in_flight_and_leaves_its_memo_as_it_was(monkeypatch):
    started = _slow_prefetch(monkeypatch)
    prep = _prep()
    cs = segmod.clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    before = {m: set(d) for m, d in prep.memo.items()}
    job = segmod.prefetch_k_starts(prep, cs, device="cpu")
    assert started.wait(5)
    t = time.perf_counter()
    assert job.cancel()
    job.join(5)
    assert job.done() and time.perf_counter() - t < 3.0
    with pytest.raises(Cancelled):
        job.result()
    assert {m: set(d) for m, d in prep.memo.items()} == before
    assert not job.cancel()  # nothing left running


def _prefetch_of(cache, scope):
    preps = [e[0] for e in cache._entries.values() if isinstance(e[0], segmod.PreparedMesh) and e[3] == scope]
    assert len(preps) == 1
    return preps[0].prefetch


def test_a_graph_edit_cancels_the_replaced_meshs_prefetch_of_its_own_view_only(monkeypatch):
    started = _slow_prefetch(monkeypatch)
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    base = {"k": "auto", "apsp": "cpu", "max_faces": 600}
    cache = StageCache(cap_bytes=256 << 20)
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="other")  # another view of the same tool
    other = _prefetch_of(cache, "other")
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="x")
    job = _prefetch_of(cache, "x")
    assert job is not None and other is not None and started.wait(5)
    t = time.perf_counter()
    res, rep = mesh_seg.TOOL.run_staged(data, {**base, "delta": 0.1}, device=CPU, cache=cache, scope="x")
    assert "graph" in rep.ran
    job.join(5)
    assert job.done() and time.perf_counter() - t < 5.0  # (not the ~30 s the stale clustering would take)
    with pytest.raises(Cancelled):
        job.result()
    assert not other.done()  # the other view's prefetch runs on (session 23's process-wide cancel stopped it)
    # back to the first mesh: its memo lacks the cancelled counts, so the k edit clusters them: the plain result
    assert mesh_seg.PIPELINE.cancel_prefetches() == 2  # (the other view's, and the new mesh's own slow prefetch)
    other.join(5)
    assert other.done()
    monkeypatch.undo()
    got, _ = mesh_seg.TOOL.run_staged(data, {**base, "k": 5}, device=CPU, cache=cache, scope="x")
    ref = mesh_seg.run(data, {**base, "k": 5}, device=CPU)
    assert np.array_equal(got.seg.labels, ref.seg.labels)
    assert np.array_equal(got.seg.memberships, ref.seg.memberships)


@pytest.mark.gpu
def test_gpu_cancel_leaves_all_or_nothing_and_the_next_edit_is_the_plain_one():
    """On a GPU the background clustering is the device's own ``fuzzy_cluster_many`` (no stand-in): cancelled at once,
    it ends (cancelled or finished first), and its mesh's memo holds both extra starts or neither; the k edit that
    follows equals the edit on a mesh that never had a prefetch."""
    pytest.importorskip("cupy")
    if not get_backend("cuda").is_gpu:
        pytest.skip("no CUDA device")
    from tests.mesh._quality_fixtures import fish_arrays

    def prep():
        return segmod.prepare_mesh(*fish_arrays(), device="cuda")

    p = prep()
    cs = segmod.clusterings_prepared(p, k="auto", device="cuda")
    job = segmod.prefetch_k_starts(p, cs, device="cuda")
    assert job is not None
    job.cancel()
    job.join(30)
    assert job.done()
    try:
        made = job.result()
    except Cancelled:
        made = 0
    counts = set(segmod.K_STARTS) - set(segmod.AUTO_K_STARTS)  # (20, 42, 50 and 60 since session 26)
    extra = {key[1] for m in p.memo.values() for key in m if key[1] in counts}
    assert extra == (counts if made else set()), (made, extra)
    got = segmod.segment_prepared(p, k=6, device="cuda")
    q = prep()
    segmod.clusterings_prepared(q, k="auto", device="cuda")
    ref = segmod.segment_prepared(q, k=6, device="cuda")
    assert np.array_equal(got.labels, ref.labels) and np.array_equal(got.memberships, ref.memberships)
