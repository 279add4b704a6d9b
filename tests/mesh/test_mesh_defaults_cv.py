"""The pieces chosen (or tried) by the leave-one-category-out cross-validation of issue 22:
simplifiers, the batched boundary cut, the multi-resolution consensus, the elbow rule for
k = auto, and the LOCO selection of benchmarks/mesh_psb.py --cv itself."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import boundary, segment_mesh
from gpu_kernels.mesh import segment as segmod
from gpu_kernels.mesh import simplify as simp
from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph
from gpu_kernels.mesh.metrics import rand_index_error

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def fish8000_consensus():
    """fish_mesh(8000) and its consensus=True first stage (prepare_mesh, ~8 s on the CPU), built once for the
    tests that cluster it; each takes a copy with empty memos (_fresh), so nothing is carried between them."""
    from test_mesh_thin_parts import fish_mesh

    if not simp.available_simplifiers():
        pytest.skip("no simplifier installed")
    v, f, _ = fish_mesh(8000)
    return v, f, segmod.prepare_mesh(v, f, consensus=True, device="cpu", apsp_method="cpu")


def _fresh(prep):
    """``prep`` as prepare_mesh returned it: the memos that segment_prepared fills are emptied (a copy)."""
    return dataclasses.replace(prep, memo={}, cuts={})


def _sphere(n_sub: int = 4):
    """An icosphere (20 * 4**n_sub faces)."""
    t = (1 + 5 ** 0.5) / 2
    v = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t], [0, -1, -t],
                  [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], float)
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
                  [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
                  [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]])
    for _ in range(n_sub):
        verts = list(map(tuple, v))
        index = {p: i for i, p in enumerate(verts)}
        new_f = []
        for a, b, c in f:
            mids = []
            for i, j in ((a, b), (b, c), (c, a)):
                m = tuple((np.asarray(verts[i]) + np.asarray(verts[j])) / 2)
                if m not in index:
                    index[m] = len(verts)
                    verts.append(m)
                mids.append(index[m])
            ab, bc, ca = mids
            new_f += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
        v, f = np.asarray(verts), np.asarray(new_f)
    return v / np.linalg.norm(v, axis=1, keepdims=True), f


@pytest.mark.parametrize("method", ["fast", "pymeshlab", "fast+pymeshlab"])
def test_each_simplifier_reaches_about_the_target(method):
    if method not in simp.available_simplifiers():
        pytest.skip(f"{method} is not installed here")
    v, f = _sphere(5)  # 20,480 faces
    vs, fs = simp.simplify_mesh(v, f, 1000, method=method)
    vs, fs, _, _ = clean_mesh(vs, fs)
    assert 850 <= len(fs) <= 1100
    # still a closed sphere: every dual arc present, one component
    g = dual_graph(vs, fs, delta=0.05, eta_convex=0.02)
    assert g.n_components == 1 and g.n_boundary_edges == 0
    np.testing.assert_allclose(np.linalg.norm(vs, axis=1), 1.0, atol=0.05)


def test_simplifier_choice_and_its_errors(monkeypatch):
    v, f = _sphere(3)
    with pytest.raises(ValueError, match="unknown simplifier"):
        simp.simplify_mesh(v, f, 100, method="nope")
    monkeypatch.setattr(simp, "available_simplifiers", lambda: [])
    with pytest.raises(RuntimeError, match="fast-simplification or pymeshlab"):
        simp.simplify_mesh(v, f, 100)
    monkeypatch.setattr(simp, "available_simplifiers", lambda: ["fast"])
    with pytest.raises(RuntimeError, match="pymeshlab"):
        simp.simplify_mesh(v, f, 100, method="pymeshlab")


def test_auto_prefers_the_fast_pre_reduction_then_pymeshlab():
    have = simp.available_simplifiers()
    if not have:
        pytest.skip("no simplifier installed")
    assert simp._resolve("auto") == have[0]
    if {"fast", "pymeshlab"} <= {m for h in have for m in h.split("+")}:
        assert have[0] == "fast+pymeshlab"


def test_batched_cut_matches_one_cut_per_region(monkeypatch):
    v, f, truth = box_bar_box()
    out = {}
    for mode in ("sequential", "batched"):
        monkeypatch.setattr(boundary, "CUT_MODE", mode)
        out[mode] = segment_mesh(v, f, k=3, device="cpu", apsp_method="cpu").labels
    assert rand_index_error(out["batched"], out["sequential"]) < 0.01
    assert rand_index_error(out["batched"], truth) < 0.05


def test_batched_cut_follows_the_crease():
    """Two fuzzy regions with different label pairs, each cut where its capacity is lowest."""
    # a strip of faces 0..9 (pair 0/1) and 10..19 (pair 2/3): a path graph each
    from gpu_kernels.mesh.dualgraph import DualGraph

    n = 24
    src = np.r_[np.arange(0, 11), np.arange(12, 23)]
    dst = src + 1
    ang = np.full(src.size, 0.01)
    ang[4] = 5.0    # the crease of the first strip: between faces 4 and 5
    ang[11 + 7] = 5.0  # of the second: between faces 19 and 20
    g = DualGraph(n=n, src=src, dst=dst, weight=np.ones(src.size), ang=ang, geod=np.ones(src.size),
                  avg_ang=float(ang.mean()), avg_geod=1.0, centroids=np.zeros((n, 3)), normals=np.zeros((n, 3)),
                  areas=np.ones(n), component=np.r_[np.zeros(12, int), np.ones(12, int)], n_components=2,
                  edge_vertices=np.zeros((src.size, 2), int), concave=np.ones(src.size, bool),
                  edge_length=np.ones(src.size))
    P = np.zeros((n, 4), np.float32)
    P[:12, 0], P[:12, 1] = np.linspace(1, 0, 12), np.linspace(0, 1, 12)
    P[12:, 2], P[12:, 3] = np.linspace(1, 0, 12), np.linspace(0, 1, 12)
    P /= P.sum(axis=1, keepdims=True)
    fuzzy = np.zeros(n, bool)
    fuzzy[1:11] = True
    fuzzy[13:23] = True
    lab, st = boundary.resolve_fuzzy_regions(g, P, fuzzy)
    np.testing.assert_array_equal(lab[:12], [0] * 5 + [1] * 7)
    np.testing.assert_array_equal(lab[12:], [2] * 8 + [3] * 4)
    assert st["n_cuts"] == 2


def test_elbow_stop_keeps_the_merges_before_the_jump(monkeypatch):
    monkeypatch.setattr(segmod, "AUTO_K_STRENGTH", 1.5)
    assert segmod.elbow_stop([0.2, 0.3, 0.3, 0.4, 2.5, 3.0, 3.5]) == 4
    # a curve that never reaches the absolute threshold keeps every merge
    assert segmod.elbow_stop([0.1, 0.2, 0.3, 0.4, 0.5]) == 5
    # the merges below the absolute threshold are kept even past an early elbow
    assert segmod.elbow_stop([0.1, 1.0, 1.1, 1.2, 1.3, 1.4, 9.0]) == 6


def test_consensus_picks_the_labeling_that_agrees_with_the_others():
    v, f, truth = box_bar_box()
    vc, fc, _, _ = clean_mesh(v, f)
    g = dual_graph(vc, fc, delta=0.05, eta_convex=0.02)
    t = truth[: len(fc)] if len(truth) != len(fc) else truth
    assert segmod.labels_agreement(t, t, g.areas) == pytest.approx(1.0)
    assert segmod.labels_agreement(t, (t + 1) % 3, g.areas) == pytest.approx(1.0)  # renumbered
    one = np.zeros_like(t)
    noisy = t.copy()
    noisy[: len(t) // 10] = (noisy[: len(t) // 10] + 1) % 3
    best, scores = segmod.choose_consensus(g, [one, t, noisy], rule="medoid")
    assert best == 1 and len(scores) == 3
    assert segmod.consensus_targets(4000, 50000, (0.5, 1.5)) == [4000, 2000, 6000]
    assert segmod.consensus_targets(4000, 5000, (0.5, 1.5)) == [4000, 2000, 5000]


@pytest.mark.slow
def test_consensus_option_clusters_three_resolutions():
    from test_mesh_thin_parts import fish_mesh

    if not simp.available_simplifiers():
        pytest.skip("no simplifier installed")
    v, f, _ = fish_mesh(8000)
    seg = segment_mesh(v, f, k=5, device="cpu", consensus=True)
    c = seg.info["consensus"]
    wf = segmod.WORKING_FACES   # (3,500 since session 16: 1,750 / 3,500 / 5,250)
    assert sorted(c["resolutions"]) == [wf // 2, wf, 3 * wf // 2] == [1750, 3500, 5250] and c["kept"] in c["resolutions"]
    assert seg.k == 5 and set(np.unique(seg.labels)) == set(range(5))
    assert seg.info["params"]["consensus"] is True


def _psb_module():
    spec = importlib.util.spec_from_file_location("mesh_psb_for_tests", ROOT / "benchmarks" / "mesh_psb.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_loco_chooses_on_the_other_categories_only():
    psb = _psb_module()
    # three categories (human, cup, glasses); A scores 0.1 on human and cup, 0.5 on glasses; B
    # 0.3 and 0.0. Without glasses A is better (0.1 < 0.3); without human or cup B is (0.15 < 0.3)
    rows = []
    for m in (1, 2, 21, 22, 41, 42):
        a = 0.1 if m < 40 else 0.5
        b = 0.3 if m < 40 else 0.0
        rows.append({"config": "A", "mesh": m, "RI": a})
        rows.append({"config": "B", "mesh": m, "RI": b})
    table, per_mesh, cands = psb.loco(rows, "RI", ["A", "B"])
    assert cands == ["A", "B"]
    chosen = {t["category"]: t["chosen"] for t in table}
    assert chosen == {"human": "B", "cup": "B", "glasses": "A"}
    held = {t["category"]: t["held_out"] for t in table}
    assert held == pytest.approx({"human": 0.3, "cup": 0.3, "glasses": 0.5})
    # a candidate missing a mesh is not a candidate
    table, _, cands = psb.loco(rows[:-1], "RI", ["A", "B"])
    assert cands == ["A"]
    assert psb.category_of(3) == "human" and psb.category_of(385) == "fourleg" and psb.category_of(261) == "?"


def test_cv_from_saved_rows_prints_the_tables(tmp_path, capsys):
    psb = _psb_module()
    rows = [{"config": c, "mesh": m, "category": psb.category_of(m), "faces": 100, "k_human_min": 2,
             "k_human_max": 4, "RI": r, "RI_auto": r + 0.05, "k_auto": 3, "in_range": True, "seconds": 1.0}
            for c, off in (("defaults", 0.0), ("other", 0.02)) for m, r in ((1, 0.1), (21, 0.2), (41, 0.3))
            for r in [r + off]]
    p = tmp_path / "rows.jsonl"
    p.write_text("\n".join(__import__("json").dumps(r) for r in rows))
    md = tmp_path / "cv.md"
    assert psb.main(["--cv-from", str(p), "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    assert "held-out mean 0.2000" in out
    text = md.read_text()
    assert "| **mean of the held-out folds** | | | **0.2000** |" in text
    assert "Plain scores of `defaults` on all 3 meshes" in text


def test_tool_refuses_a_simplifier_that_is_not_installed(monkeypatch):
    from app.tools import mesh_seg
    from gpu_kernels.backend import get_backend
    from gpu_kernels.errors import InputError

    monkeypatch.setattr(simp, "available_simplifiers", lambda: ["fast"])
    p = mesh_seg.PARAMS.validate({"simplifier": "pymeshlab"})
    with pytest.raises(InputError, match="pymeshlab simplifier needs pymeshlab"):
        mesh_seg.check_device(p, get_backend("cpu"))
    mesh_seg.check_device(mesh_seg.PARAMS.validate({"simplifier": "fast"}), get_backend("cpu"))


def test_tool_passes_simplifier_and_consensus_to_the_library(monkeypatch):
    from app.tools import mesh_seg
    from gpu_kernels.backend import get_backend

    seen = {}
    real = segmod.prepare_mesh

    def spy(*a, **k):
        seen.update(k)
        return real(*a, **k)

    monkeypatch.setattr(segmod, "prepare_mesh", spy)
    v, f, _ = box_bar_box()
    res = mesh_seg.run(mesh_seg.from_arrays(v, f), {"k": 3, "apsp": "cpu", "simplifier": "auto"},
                       device=get_backend("cpu"))
    assert seen["consensus"] is False and seen["simplifier"] == "auto" and res.seg.k == 3


def test_staged_tool_reuses_the_graphs_when_k_changes():
    """The tool's two stages: a change of k re-runs only the segmentation, with the same
    result as a full run; a change of delta re-runs both."""
    from app.tools import mesh_seg
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend

    cpu = get_backend("cpu")
    v, f, _ = box_bar_box()
    data = mesh_seg.from_arrays(v, f)
    cache = StageCache(cap_bytes=256 << 20)
    r1, rep = mesh_seg.TOOL.run_staged(data, {"k": 3, "apsp": "cpu"}, device=cpu, cache=cache, scope="t")
    assert rep.ran == ["graph", "cluster", "segment", "cut"]
    graph_before = r1.seg.info["n_faces"], len(r1.seg.info["warnings"])
    r2, rep = mesh_seg.TOOL.run_staged(data, {"k": 2, "apsp": "cpu"}, device=cpu, cache=cache, scope="t")
    assert rep.ran == ["cluster", "segment", "cut"] and rep.reused == ["graph"]
    full = mesh_seg.run(data, {"k": 2, "apsp": "cpu"}, device=cpu)
    np.testing.assert_array_equal(r2.seg.labels, full.seg.labels)
    assert r2.seg.k == 2 and (r2.seg.info["n_faces"], len(r2.seg.info["warnings"])) == graph_before
    _, rep = mesh_seg.TOOL.run_staged(data, {"k": 2, "apsp": "cpu", "delta": 0.3}, device=cpu, cache=cache,
                                      scope="t")
    assert rep.ran == ["graph", "cluster", "segment", "cut"]


def test_segment_prepared_leaves_the_prepared_mesh_as_it_was():
    v, f, _ = box_bar_box()
    prep = segmod.prepare_mesh(v, f, device="cpu")
    info_before = repr(prep.info)
    w_before = prep.graph.weight.copy()
    a = segmod.segment_prepared(prep, k=3, apsp_method="cpu", device="cpu")
    b = segmod.segment_prepared(prep, k=3, apsp_method="cpu", device="cpu")
    assert repr(prep.info) == info_before
    np.testing.assert_array_equal(prep.graph.weight, w_before)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.labels, segment_mesh(v, f, k=3, apsp_method="cpu", device="cpu").labels)


def test_speed_benchmark_times_a_file_end_to_end(tmp_path):
    """benchmarks/mesh.py --speed: file -> coloured result, one row per file and device."""
    spec = importlib.util.spec_from_file_location("mesh_bench_for_tests", ROOT / "benchmarks" / "mesh.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    sample = ROOT / "resources" / "samples" / "dumbbell.ply"
    rows = mod.speed([str(sample)], ["cpu"], repeat=1)
    assert len(rows) == 1
    r = rows[0]
    assert r["faces"] > 1000 and r["device"] == "cpu" and r["k"] >= 2
    assert 0 < r["read_s"] < r["total_s"] and r["t_apsp"] > 0


def test_refine_boundaries_recuts_only_near_the_boundaries():
    """``refine_boundaries`` (session 3b: off scores 0.002 / 0.001 better on the PSB held out,
    protocol / auto k; kept on for the boundaries' look): off, no face is re-decided at full
    resolution; on, a band around the boundaries is, and the parts stay the same."""
    from app.tools import mesh_seg
    from gpu_kernels.mesh import defaults

    if not simp.available_simplifiers():
        pytest.skip("no simplifier installed")
    assert defaults.DEFAULT_REFINE_BOUNDARIES is True
    assert mesh_seg.PARAMS.defaults()["refine_boundaries"] is defaults.DEFAULT_REFINE_BOUNDARIES
    v, f, truth = box_bar_box()
    prep = segmod.prepare_mesh(v, f, max_faces=400, apsp_method="cpu", device="cpu")
    assert prep.working  # clustered at a working resolution
    on = segmod.segment_prepared(prep, k=3, device="cpu", apsp_method="cpu", refine_boundaries=True)
    off = segmod.segment_prepared(prep, k=3, device="cpu", apsp_method="cpu", refine_boundaries=False)
    assert on.info["params"]["refine_boundaries"] is True and off.info["params"]["refine_boundaries"] is False
    assert off.info["cut_full_resolution"]["n_fuzzy"] == 0 < on.info["cut_full_resolution"]["n_fuzzy"]
    assert on.k == off.k == 3
    assert rand_index_error(on.labels, off.labels) < 0.05
    # on the boxes' sharp creases the re-cut moves the boundary faces onto the crease
    assert np.count_nonzero(on.labels != off.labels) > 0
    assert rand_index_error(on.labels, truth) <= rand_index_error(off.labels, truth)
    # the re-cut stays within the rings around the carried boundaries (session 3b: the fuzzy
    # faces are no longer in the band, they let the cut move a boundary far)
    g = prep.graph
    assert g.n == f.shape[0]
    lab0 = off.labels
    mask = np.zeros(g.n, dtype=bool)
    change = lab0[g.src] != lab0[g.dst]
    mask[g.src[change]] = True
    mask[g.dst[change]] = True
    rings = int(np.ceil(np.sqrt(g.n / prep.working[0][1].n))) + 1
    moved = on.labels != off.labels
    assert not (moved & ~boundary.dilate(g, mask, rings)).any()
    for seg in (on, off):
        assert 1 - rand_index_error(seg.labels, truth) > 0.85


@pytest.mark.slow
def test_consensus_winner_mode_re_cuts_only_the_result_it_keeps(monkeypatch, fish8000_consensus):
    """``CONSENSUS_RECUT = "winner"`` compares the carried results and re-cuts one of them at
    full resolution; "all" re-cuts all three (session 4: the same held-out quality within
    0.0007, 15-28 % quicker on the H100, benchmarks/results/mesh_session4.md)."""
    prep = _fresh(fish8000_consensus[2])   # prepare_mesh(fish_mesh(8000), consensus=True, cpu, cpu)
    calls = []
    real = segmod._recut_full

    def counting(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(segmod, "_recut_full", counting)
    out = {}
    for mode, n_cuts in (("all", 3), ("winner", 1)):
        monkeypatch.setattr(segmod, "CONSENSUS_RECUT", mode)
        calls.clear()
        seg = segmod.segment_prepared(prep, k=4, device="cpu", apsp_method="cpu")
        assert len(calls) == n_cuts
        assert seg.k == 4 and set(np.unique(seg.labels)) == set(range(4))
        out[mode] = seg
    # the same candidates (the clusterings do not depend on the mode), so the kept one's
    # parts differ from "all"'s only where the comparison or the cut differ
    assert out["all"].info["consensus"]["resolutions"] == out["winner"].info["consensus"]["resolutions"]
    assert out["all"].info["consensus"]["k"] == out["winner"].info["consensus"]["k"]
    if out["all"].info["consensus"]["kept"] == out["winner"].info["consensus"]["kept"]:
        assert rand_index_error(out["all"].labels, out["winner"].labels) < 1e-9


def test_auto_k_keeps_the_medoid_of_its_over_segmentations(monkeypatch):
    """k = "auto" over-segments once per AUTO_K_STARTS entry on the same distances and keeps
    the result that agrees best with the others; that result is the one a single run from
    that start gives (session 4: 0.1683 against 0.1761 held out, mesh_session4.md)."""
    from test_mesh_thin_parts import fish_mesh

    assert segmod.AUTO_K_STARTS == (24, 30, 36)  # the default
    v, f, _ = fish_mesh(2500)
    prep = segmod.prepare_mesh(v, f, max_faces=None, device="cpu", apsp_method="cpu")
    seg = segmod.segment_prepared(prep, k="auto", device="cpu", apsp_method="cpu")
    ks = seg.info["auto_k_starts"]
    used = seg.info["auto_k_start_used"]
    assert sorted(ks) == [24, 30, 36] and used in ks and seg.k == ks[used]
    singles = {}
    for st in (24, 30, 36):
        monkeypatch.setattr(segmod, "AUTO_K_STARTS", ())
        monkeypatch.setattr(segmod, "AUTO_K_START", st)
        singles[st] = segmod.segment_prepared(prep, k="auto", device="cpu", apsp_method="cpu").labels
        assert "auto_k_starts" not in segmod.segment_prepared(prep, k=3, device="cpu", apsp_method="cpu").info
    assert rand_index_error(seg.labels, singles[used]) < 1e-12
    # the kept one is the medoid of the three
    agree = {a: sum(segmod.labels_agreement(singles[a], singles[b], prep.graph.areas) for b in singles if b != a)
             for a in singles}
    assert agree[used] >= max(agree.values()) - 1e-9


@pytest.mark.slow
def test_the_consensus_of_resolutions_over_segments_each_resolution_once(monkeypatch, fish8000_consensus):
    """consensus=True was cross-validated with one auto-k over-segmentation per resolution;
    the starts consensus is for one working resolution only."""
    seen = []
    real = segmod._clusterings  # the clusterings of one resolution (starts: its 11th argument)

    def spy(*a, **kw):
        seen.append(kw["starts"] if "starts" in kw else (a[10] if len(a) > 10 else None))
        return real(*a, **kw)

    monkeypatch.setattr(segmod, "_clusterings", spy)
    v, f, prep = fish8000_consensus       # the clusterings are segment_prepared's: the first stage is shared
    seg = segment_mesh(v, f, k="auto", device="cpu", consensus=True, prepared=_fresh(prep))
    assert len(seg.info["consensus"]["resolutions"]) == 3 and seen == [(), (), ()]
    assert "auto_k_starts" not in seg.info
    seen.clear()
    seg = segment_mesh(v, f, k="auto", device="cpu")
    assert seen == [None] and sorted(seg.info["auto_k_starts"]) == [24, 30, 36]
