"""Session 7 (issue 22) experiment: an integer k's merges may weigh each boundary by the two
clusters' areas (``boundary.merge_weakest_boundaries(area_gamma=, area_s0=)``), so that small
clusters are joined before a large part is cut in two. It lost the leave-one-category-out rule
(plain 0.1432 -> 0.1403, held out 0.1462, 8 of 19 folds not worse: the fish want their small
fins). Session 8 removed the module switches (``segment.K_AREA_GAMMA`` / ``K_AREA_S0``,
``boundary.AREA_BEFORE_THICKNESS``, and session 8's own failed ``segment.AUTO_K_LAYOUT``); the
keyword stays for the recorded screens (``benchmarks/mesh_quality.py screen``), and the pipeline
never passes it."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from gpu_kernels.mesh import boundary
from gpu_kernels.mesh import segment as segmod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_mesh_cluster import box_bar_box  # noqa: E402


def _overseg():
    v, f, _ = box_bar_box()
    rng = np.random.default_rng(3)
    v = v + rng.normal(scale=0.05, size=v.shape)  # (no exact ties between boundaries)
    g = segmod.prepare_mesh(v, f, device="cpu").graph
    cell = np.floor((g.centroids - g.centroids.min(axis=0)) / 1.5).astype(np.int64)
    _, lab = np.unique(cell[:, 0] * 10_000 + cell[:, 1] * 100 + cell[:, 2], return_inverse=True)
    return g, lab.astype(np.int64)


def test_area_weighting_formula():
    area = np.array([0.5, 0.3, 0.01, 0.19])
    comp_area = np.array([1.0])
    lc = np.zeros(4, dtype=np.int64)
    ulo, uhi = np.array([0, 0]), np.array([1, 2])
    s = np.array([2.0, 2.0])
    same = boundary._area_weighted(s, area, comp_area, lc, ulo, uhi, 0.0, 1.0)
    np.testing.assert_array_equal(same, s)
    w = boundary._area_weighted(s, area, comp_area, lc, ulo, uhi, 0.5, 1.0)
    # 0.5 x 0.3 = 0.15 of the area squared: (15) ** 0.5; 0.5 x 0.01: (0.5) ** 0.5
    np.testing.assert_allclose(w, [1.0 + np.sqrt(15.0), 1.0 + np.sqrt(0.5)])
    assert w[0] > s[0] > w[1]  # between two large clusters stronger, around a small one weaker


def test_tables_and_arc_sums_make_the_same_area_weighted_merges():
    g, lab = _overseg()
    assert g.thickness is not None  # (the thickness contrast is in play)
    K = int(lab.max()) + 1
    lc = np.zeros(K, dtype=np.int64)
    for gamma, s0 in ((0.2, 1.0), (0.5, 1.5)):
        for target in (2, 5):
            st_t, st_a = [], []
            a = boundary._merge_tables(g, lab, {0: target}, lc, None, st_t, 0.002, gamma, s0)
            b = boundary._merge_arcs(g, lab, {0: target}, lc, None, st_a, 0.002, gamma, s0)
            np.testing.assert_array_equal(a[0], b[0])
            assert a[1] == b[1] and len(a[1]) > 0
            np.testing.assert_allclose(st_t, st_a, rtol=1e-9)


def test_the_weighting_changes_the_merges():
    """With gamma > 0 the order of the merges differs from the plain contrast (what it is for)."""
    g, lab = _overseg()
    K = int(lab.max()) + 1
    lc = np.zeros(K, dtype=np.int64)
    plain = boundary.merge_weakest_boundaries(g, lab, {0: 3}, lc)[1]
    weighted = boundary.merge_weakest_boundaries(g, lab, {0: 3}, lc, area_gamma=0.5, area_s0=1.0)[1]
    assert plain != weighted


def test_the_pipeline_merges_unweighted(monkeypatch):
    """Neither mode passes area keywords (gamma 0 is the unweighted merge order), and the
    session-7 switches are gone from the modules."""
    seen = []
    orig = boundary.merge_weakest_boundaries

    def spy(*a, **kw):
        seen.append(kw.get("area_gamma", 0.0))
        return orig(*a, **kw)

    monkeypatch.setattr(boundary, "merge_weakest_boundaries", spy)
    from gpu_kernels.mesh import defaults

    monkeypatch.setattr(defaults, "DEFAULT_AUTO_MERGE", "hand")  # (k = "auto"'s hand-made merges; the learned ones,
    v, f, _ = box_bar_box()                                      # the default since session 12, pass no area keywords)
    for k in ("auto", 3):
        segmod.segment_mesh(v, f, k=k, device="cpu", apsp_method="cpu")
    assert seen and set(seen) == {0.0}
    for name in ("K_AREA_GAMMA", "K_AREA_S0", "K_STARTS_EXTRA", "AUTO_K_LAYOUT"):
        assert not hasattr(segmod, name)
    for name in ("AREA_BEFORE_THICKNESS", "CONTRAST_C0_SCALE"):
        assert not hasattr(boundary, name)


def test_gamma_zero_is_the_plain_merge():
    g, lab = _overseg()
    lc = np.zeros(int(lab.max()) + 1, dtype=np.int64)
    st0, st1 = [], []
    a = boundary.merge_weakest_boundaries(g, lab, {0: 2}, lc, strengths=st0)
    b = boundary.merge_weakest_boundaries(g, lab, {0: 2}, lc, strengths=st1, area_gamma=0.0, area_s0=1.5)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1] and st0 == st1
