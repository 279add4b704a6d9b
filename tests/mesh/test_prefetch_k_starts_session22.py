"""Session 22, live tuning of the mesh tool: after a k = "auto" run, the clusterings an integer k takes beside
k = "auto"'s (``segment.K_STARTS`` 20, 42, 50 and 60 since session 26; 20 and 42 before) are made on a thread
(``segment.prefetch_k_starts``, started by the tool's live runs through ``Stage.prefetch``), so the first k edit
clusters nothing. The results must be exactly those without it; a one-shot run (the CLI) must not start it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tools import mesh_seg
from app.tools.stages import Pipeline, Stage, StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import segment as segmod
from tests.mesh._quality_fixtures import fish_arrays

CPU = get_backend("cpu")
#: the counts an integer k takes beside k = "auto"'s 24, 30 and 36 (session 26: seven starts)
EXTRA = (20, 42, 50, 60)


def _arrays(seg):
    return seg.labels, seg.memberships, seg.fuzzy, seg.face_colors, seg.representatives


def _same(a, b) -> bool:
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(_arrays(a), _arrays(b), strict=True))


def _counting(monkeypatch) -> list:
    """Every ``fuzzy_cluster_many`` call's cluster counts, on whichever thread."""
    calls = []
    real = segmod.fuzzy_cluster_many

    def spy(D, ks, **kw):
        calls.append((threading.current_thread().name, tuple(ks)))
        return real(D, ks, **kw)

    monkeypatch.setattr(segmod, "fuzzy_cluster_many", spy)
    return calls


def _prep(device="cpu"):
    return segmod.prepare_mesh(*fish_arrays(), device=device, apsp_method="cpu" if device == "cpu" else "auto")


@pytest.mark.parametrize("k", [2, 6, 12])
def test_an_integer_k_after_the_prefetch_clusters_nothing_and_is_the_same(k, monkeypatch):
    calls = _counting(monkeypatch)
    prep = _prep()
    cs = segmod.clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    assert [c for _, c in calls] == [(24, 30, 36)]
    job = segmod.prefetch_k_starts(prep, cs, device="cpu")
    assert tuple(sorted(set(segmod.K_STARTS) - set(segmod.AUTO_K_STARTS))) == EXTRA
    assert job.result() == len(EXTRA)
    assert calls[-1] == ("gpulab-mesh-prefetch", EXTRA)  # the batch the first edit would run
    n = len(calls)
    got = segmod.segment_prepared(prep, k=k, device="cpu")
    assert len(calls) == n  # the edit clustered nothing
    ref_prep = _prep()  # the same edit without the prefetch
    segmod.clusterings_prepared(ref_prep, k="auto", device="cpu", apsp_method="cpu")
    ref = segmod.segment_prepared(ref_prep, k=k, device="cpu")
    assert calls[-1][1] == EXTRA and calls[-1][0] != "gpulab-mesh-prefetch"  # (it clustered them itself)
    assert _same(got, ref)
    assert segmod.prefetch_k_starts(prep, cs, device="cpu") is None  # nothing left to do


def test_the_comparison_fails_on_a_spoiled_prefetch(monkeypatch):
    """The check above has teeth: a prefetch that stored another count's clustering under 20's key gives a k edit
    that is not the plain one."""
    prep = _prep()
    cs = segmod.clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    segmod.prefetch_k_starts(prep, cs, device="cpu").result()
    memo = prep.memo[("working", 0)] if ("working", 0) in prep.memo else prep.memo[("full", 0)]
    k20 = next(key for key in memo if key[1] == 20)
    k42 = next(key for key in memo if key[1] == 42)
    memo[k20] = memo[k42]
    got = segmod.segment_prepared(prep, k=6, device="cpu")
    ref_prep = _prep()
    segmod.clusterings_prepared(ref_prep, k="auto", device="cpu", apsp_method="cpu")
    assert not _same(got, segmod.segment_prepared(ref_prep, k=6, device="cpu"))


def test_an_edit_waits_for_a_prefetch_in_flight(monkeypatch):
    """An edit that comes while the prefetch runs waits for it and does not cluster the same counts again."""
    calls = _counting(monkeypatch)
    real = segmod._prefetch
    started = threading.Event()

    def slow(*a):
        started.set()
        time.sleep(0.3)
        return real(*a)

    monkeypatch.setattr(segmod, "_prefetch", slow)
    prep = _prep()
    cs = segmod.clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    segmod.prefetch_k_starts(prep, cs, device="cpu")
    assert started.wait(5)
    segmod.clusterings_prepared(prep, k=6, device="cpu", apsp_method="cpu")
    assert [c for _, c in calls] == [(24, 30, 36), EXTRA]  # (the second from the prefetch's thread)
    assert prep.prefetch is None


def test_an_edit_waiting_reports_the_prefetch_and_its_cancel_stops_it(monkeypatch):
    """A long prefetch (a full-resolution graph on a CPU) is no silent wait: the edit waiting for it reports it, and
    cancelling the edit cancels it. Its clusterings do not reach the memo; the next edit makes them and equals the
    plain edit."""
    real = segmod.fuzzy_cluster_many
    started = threading.Event()

    def slow(D, ks, **kw):
        if threading.current_thread().name == "gpulab-mesh-prefetch":
            started.set()
            for i in range(500):  # ~5 s unless cancelled: update() raises Cancelled then
                time.sleep(0.01)
                kw["progress"].update(i / 500)
        return real(D, ks, **kw)

    monkeypatch.setattr(segmod, "fuzzy_cluster_many", slow)
    prep = _prep()
    cs = segmod.clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    job = segmod.prefetch_k_starts(prep, cs, device="cpu")
    assert started.wait(5)
    stages = []
    prog = Progress(lambda f, st: stages.append(st), min_interval=0.0)
    threading.Timer(0.3, prog.cancel).start()
    t = time.perf_counter()
    with pytest.raises(Cancelled):
        segmod.clusterings_prepared(prep, k=6, device="cpu", apsp_method="cpu", progress=prog)
    assert time.perf_counter() - t < 3.0
    assert any("begun in the background" in st for st in stages), stages
    assert job.done() and prep.prefetch is None
    with pytest.raises(Cancelled):
        job.result()
    assert not any(key[1] in EXTRA for m in prep.memo.values() for key in m)
    got = segmod.segment_prepared(prep, k=6, device="cpu")
    ref_prep = _prep()
    segmod.clusterings_prepared(ref_prep, k="auto", device="cpu", apsp_method="cpu")
    assert _same(got, segmod.segment_prepared(ref_prep, k=6, device="cpu"))


def test_nothing_to_prefetch_where_an_integer_k_takes_no_starts(monkeypatch):
    prep = _prep()
    cs = segmod.clusterings_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    monkeypatch.setattr(segmod, "K_FROM_AUTO_STARTS", False)
    assert segmod.prefetch_k_starts(prep, cs, device="cpu") is None


def test_live_runs_prefetch_and_one_shot_runs_do_not(monkeypatch):
    """The tool's live path (a stage cache) starts it after a k = "auto" run; the k edit that follows clusters
    nothing and equals a one-shot run at that k, which starts no prefetch."""
    calls = _counting(monkeypatch)
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    base = {"k": "auto", "apsp": "cpu", "max_faces": 600}
    mesh_seg.run(data, base, device=CPU)
    assert all(name != "gpulab-mesh-prefetch" for name, _ in calls)  # one-shot: no prefetch
    calls.clear()
    cache = StageCache(cap_bytes=256 << 20)
    mesh_seg.TOOL.run_staged(data, base, device=CPU, cache=cache, scope="x")
    prep = next(x for x in _values(cache) if isinstance(x, segmod.PreparedMesh))
    assert prep.prefetch is not None
    prep.prefetch.join()
    assert any(name == "gpulab-mesh-prefetch" for name, _ in calls)
    n = len(calls)
    res, rep = mesh_seg.TOOL.run_staged(data, {**base, "k": 5}, device=CPU, cache=cache, scope="x")
    assert "cluster" in rep.ran and len(calls) == n
    assert _same(res.seg, mesh_seg.run(data, {**base, "k": 5}, device=CPU).seg)


def _values(cache):
    return [e[0] for e in cache._entries.values()]


def test_a_stage_prefetch_runs_after_a_live_run_only_and_never_fails_it():
    seen = []

    def double(ctx):
        return ctx.data * 2

    def pre(ctx, out):
        seen.append(("prefetch", out))
        raise RuntimeError("a prefetch error is dropped")

    pipe = Pipeline([Stage("double", double, prefetch=pre)],
                    finish=lambda data, outs, p, **kw: seen.append(("finish", outs["double"])) or outs["double"])
    assert pipe.run(3, {}, device=CPU) == 6
    assert seen == [("finish", 6)]  # one-shot: no prefetch
    seen.clear()
    cache = StageCache(cap_bytes=1 << 20)
    result, _ = pipe.execute(3, {}, device=CPU, cache=cache, scope="t")
    assert result == 6 and seen == [("finish", 6), ("prefetch", 6)]  # after the result, error dropped
    seen.clear()
    pipe.execute(3, {}, device=CPU, cache=cache, scope="t")
    assert seen == [("finish", 6)]  # a cached stage did not run: nothing to prefetch


@pytest.mark.gpu
def test_gpu_prefetch_gives_the_edits_clusterings():
    pytest.importorskip("cupy")
    gpu = get_backend("cuda")
    if not gpu.is_gpu:
        pytest.skip("no CUDA device")
    prep = _prep("cuda")
    cs = segmod.clusterings_prepared(prep, k="auto", device="cuda")
    assert segmod.prefetch_k_starts(prep, cs, device="cuda").result() == len(EXTRA)
    got = segmod.segment_prepared(prep, k=6, device="cuda")
    ref_prep = _prep("cuda")
    segmod.clusterings_prepared(ref_prep, k="auto", device="cuda")
    assert _same(got, segmod.segment_prepared(ref_prep, k=6, device="cuda"))
