"""``auto_layout="concave"`` with less work (issue 22, session 10), the same result as session 9's
``autok.relayout`` after ``segment_prepared``:

- both layouts are cut at full resolution, but only the kept one gets its parts' memberships and colours;
- the integer k's run re-uses k = "auto"'s fuzzy cuts of the auto-k starts (``PreparedMesh.cuts``);
- the integer k's clustering is kept on the clustered result (``ClusteredMesh.layouts``): a second cut of it
  (a ``refine_boundaries`` edit) does not cluster again;
- k = "auto"'s full-resolution cut may run on a thread while the integer k clusters (``LAYOUT_OVERLAP``),
  at the working resolution's k, clustered again where the cut loses a part;
- ``autok.LAYOUT_DECIDE = "working"`` (the rule since the session's round) decides on the working mesh and
  cuts once; ``"full"`` (session 9's rule, decided on the full mesh) is equal to session 9's code.
The fish of the other layout tests, clustered at a working resolution of 2,000 faces."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import autok
from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh import simplify as simp

KW = {"device": "cpu", "apsp_method": "cpu"}

if not simp.available_simplifiers():  # (the working resolution is a simplified copy: the installed default)
    pytest.skip("no simplifier installed (fast-simplification or pymeshlab)", allow_module_level=True)


fish = fx.fish  # the stored fish (one copy: tests/mesh/_quality_fixtures.py)


def _prep(fish, device="cpu"):
    v, f = fish
    return sg.prepare_mesh(v, f, max_faces=2000, device=device, apsp_method="auto" if device != "cpu" else "cpu")


def _session9(prep, kw=KW):
    """Session 9's code path: every result cut and finished in full, the starts' cuts not re-used."""
    key = sg._row_cut_key
    sg._row_cut_key = lambda *a, **k: None
    try:
        seg = sg.segment_prepared(prep, k="auto", auto_layout="auto", **kw)
        return autok.relayout(prep, seg, lambda kk: sg.segment_prepared(prep, k=kk, **kw), "concave")
    finally:
        sg._row_cut_key = key


def _same(a, b):
    return (a.k == b.k and all(np.array_equal(getattr(a, x), getattr(b, x)) for x in
                               ("labels", "memberships", "face_colors", "representatives", "fuzzy", "component"))
            and a.info.get("auto_layout") == b.info.get("auto_layout"))


@pytest.fixture
def full(monkeypatch):
    monkeypatch.setattr(autok, "LAYOUT_DECIDE", "full")


def test_the_defaults():
    assert autok.LAYOUT_DECIDE == "working" and sg.DEFAULT_AUTO_LAYOUT == "auto" and sg.LAYOUT_OVERLAP


@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "serial"])
def test_concave_equals_session_9s_relayout(fish, monkeypatch, overlap, full):
    monkeypatch.setattr(sg, "LAYOUT_OVERLAP", overlap)
    ref = _session9(_prep(fish))
    assert ref.info["simplified"] and ref.k > 1
    seg = sg.segment_prepared(_prep(fish), k="auto", auto_layout="concave", **KW)
    assert _same(seg, ref)
    assert seg.info["auto_layout"]["kept"] in ("auto", "integer k")


@pytest.mark.parametrize("decide", ["full", "working"])
@pytest.mark.parametrize("kept", ["auto", "integer k"])
def test_only_the_kept_layout_gets_memberships(fish, monkeypatch, kept, decide):
    monkeypatch.setattr(autok, "LAYOUT_DECIDE", decide)
    """Either way the rule goes (the concavity forced), one parts' memberships, and the result is the kept one's."""
    real = autok.choose_layout

    def forced(*a, **k):
        use, note = real(*a, **k)
        return kept == "integer k", note

    monkeypatch.setattr(autok, "choose_layout", forced)
    calls = []
    pm = bd.part_memberships
    monkeypatch.setattr(bd, "part_memberships", lambda *a, **k: (calls.append(1), pm(*a, **k))[1])
    prep = _prep(fish)
    seg = sg.segment_prepared(prep, k="auto", auto_layout="concave", **KW)
    assert len(calls) == 1 and seg.info["auto_layout"]["kept"] == kept
    ref = (sg.segment_prepared(prep, k="auto", auto_layout="auto", **KW) if kept == "auto"
           else sg.segment_prepared(prep, k=seg.k, **KW))
    assert np.array_equal(seg.labels, ref.labels) and np.array_equal(seg.face_colors, ref.face_colors)


def test_the_integer_k_reuses_the_starts_cuts(fish, monkeypatch):
    calls = []
    rf = bd.resolve_fuzzy_regions
    monkeypatch.setattr(bd, "resolve_fuzzy_regions", lambda *a, **k: (calls.append(a[0].n), rf(*a, **k))[1])
    prep = _prep(fish)
    seg = sg.segment_prepared(prep, k="auto", auto_layout="auto", **KW)
    n_work = prep.working[0][1].n
    calls.clear()
    hit = sg.segment_prepared(prep, k=int(seg.k), **KW)
    with_cache = sum(n == n_work for n in calls)
    fresh_prep = _prep(fish)
    calls.clear()
    fresh = sg.segment_prepared(fresh_prep, k=int(seg.k), **KW)
    # the fresh run cuts every over-segmentation (four factors and three starts); after k = "auto", the starts'
    # three cuts come from the cache
    assert sum(n == n_work for n in calls) == with_cache + len(sg.AUTO_K_STARTS)
    assert _same(hit, fresh)
    assert any(prep.cuts.values())


@pytest.mark.parametrize("decide", ["full", "working"])
def test_a_second_cut_does_not_cluster_the_layout_again(fish, monkeypatch, decide):
    monkeypatch.setattr(autok, "LAYOUT_DECIDE", decide)
    v, f = fish
    prep = _prep(fish)
    cm = sg.cluster_prepared(prep, k="auto", **KW)
    sg.segment_mesh(v, f, prepared=prep, clustered=cm, auto_layout="concave", **KW)
    calls = []
    lc = sg.layout_clustered
    monkeypatch.setattr(sg, "layout_clustered", lambda *a, **k: (calls.append(1), lc(*a, **k))[1])
    again = sg.segment_mesh(v, f, prepared=prep, clustered=cm, auto_layout="concave", refine_boundaries=False, **KW)
    assert calls == [] and len(cm.layouts) == 1
    monkeypatch.setattr(sg, "layout_clustered", lc)
    fresh = sg.segment_mesh(v, f, max_faces=2000, k="auto", auto_layout="concave", refine_boundaries=False, **KW)
    assert _same(again, fresh)


def test_a_part_lost_in_the_cut_clusters_again_at_the_final_k(fish, monkeypatch, full):
    prep = _prep(fish)
    ref = sg.segment_prepared(prep, k="auto", auto_layout="concave", **KW)
    prep = _prep(fish)
    real = sg._carried_k
    monkeypatch.setattr(sg, "_carried_k", lambda cm: real(cm) + 1)  # as if the full-resolution cut lost a part
    seen = []
    lc = sg.layout_clustered
    monkeypatch.setattr(sg, "layout_clustered", lambda *a, **k: (seen.append(k["k"]), lc(*a, **k))[1])
    seg = sg.segment_prepared(prep, k="auto", auto_layout="concave", **KW)
    assert seen == [ref.k + 1, ref.k] and _same(seg, ref)


def test_working_decides_on_the_working_mesh_and_cuts_once(fish, monkeypatch):
    monkeypatch.setattr(autok, "LAYOUT_DECIDE", "working")
    prep = _prep(fish)
    graphs, cuts = [], []
    real, cl = autok.choose_layout, sg._cut_labels
    monkeypatch.setattr(autok, "choose_layout", lambda g, *a, **k: (graphs.append(g), real(g, *a, **k))[1])
    monkeypatch.setattr(sg, "_cut_labels", lambda *a, **k: (cuts.append(a[1]), cl(*a, **k))[1])
    seg = sg.segment_prepared(prep, k="auto", auto_layout="concave", **KW)
    assert graphs == [prep.working[0][1]] and len(cuts) == 1
    note = seg.info["auto_layout"]
    assert note["decided_on"] == "working" and note["kept"] in ("auto", "integer k")
    monkeypatch.setattr(sg, "_cut_labels", cl)
    ref = (sg.segment_prepared(prep, k="auto", auto_layout="auto", **KW) if note["kept"] == "auto"
           else sg.segment_prepared(prep, k=note["k"], **KW))
    assert np.array_equal(seg.labels, ref.labels) and np.array_equal(seg.memberships, ref.memberships)


@pytest.mark.gpu
def test_concave_equals_session_9s_relayout_on_the_gpu(fish, full):
    kw = {"device": "cuda"}
    ref = _session9(_prep(fish, "cuda"), kw)
    seg = sg.segment_prepared(_prep(fish, "cuda"), k="auto", auto_layout="concave", **kw)
    assert ref.info["simplified"] and _same(seg, ref)


@pytest.mark.gpu
def test_working_on_the_gpu_is_the_kept_layouts_own_run(fish):
    """The default decision ("working") on the GPU: the kept layout's own run on the same prepared mesh."""
    kw = {"device": "cuda"}
    prep = _prep(fish, "cuda")
    seg = sg.segment_prepared(prep, k="auto", auto_layout="concave", **kw)
    note = seg.info["auto_layout"]
    assert note["decided_on"] == "working"
    ref = (sg.segment_prepared(prep, k="auto", auto_layout="auto", **kw) if note["kept"] == "auto"
           else sg.segment_prepared(prep, k=note["k"], **kw))
    assert np.array_equal(seg.labels, ref.labels) and np.array_equal(seg.face_colors, ref.face_colors)
