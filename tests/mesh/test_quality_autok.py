"""k = "auto"'s relative threshold is taken from boundaries weighted by their part's area
(gpu_kernels.mesh.autok, issue 22 session 5): one tiny part with a sharp rim no longer sets
the bar for the whole mesh, so the four-legged animal keeps its legs."""

from __future__ import annotations

import numpy as np
import pytest
from psb_cases import needs_psb, psb_mesh, segment_with  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import autok
from gpu_kernels.mesh.autok import merge_shares, reference_strength


def test_merge_shares_follow_the_merges():
    # four clusters of areas 1, 2, 3, 4 on one component (total 10)
    labels = np.repeat(np.arange(4), [1, 2, 3, 4])
    areas = np.ones(10)
    merges = [(1, 0), (3, 2), (3, 1)]
    sh = merge_shares(areas, labels, merges, np.zeros(4, dtype=int))
    # 1 vs 2 -> 0.1; 3 vs 4 -> 0.3; then 3 (0+1) vs 7 (2+3) -> 0.3
    np.testing.assert_allclose(sh, [0.1, 0.3, 0.3])


def test_merge_shares_are_per_component():
    labels = np.array([0, 0, 1, 2, 2, 2, 3])
    sh = merge_shares(np.ones(7), labels, [(0, 1), (2, 3)], np.array([0, 0, 1, 1]))
    np.testing.assert_allclose(sh, [1 / 3, 1 / 4])


def test_a_tiny_sharp_part_counts_in_proportion_to_its_area():
    # mesh 385's sequence (k = auto from 30 clusters): legs at 2.4-2.9 with 5 % of the area
    # each, a horn at 9.9 with 1.2 %
    st = [0.8, 1.9, 2.41, 2.5, 2.69, 2.87, 6.28, 9.87]
    sh = [0.08, 0.2, 0.048, 0.06, 0.055, 0.049, 0.002, 0.012]
    assert reference_strength(st, sh, 0.0) == pytest.approx(9.87)  # the rule before: the horn sets it
    ref = reference_strength(st, sh, 0.03)
    assert ref == pytest.approx(9.87 * 0.012 / 0.03)  # the horn counts 40 %
    assert 0.4 * ref < min(st[2:6]) < 0.4 * 9.87  # every leg boundary now stops the merges


def test_reference_strength_edges():
    assert reference_strength([], []) == 0.0
    assert reference_strength([3.0], [0.5], 0.03) == 3.0
    with pytest.raises(ValueError):
        reference_strength([1.0, 2.0], [0.1], 0.03)


def test_the_default_is_the_cross_validated_share():
    assert autok.AUTO_K_REF_SHARE == 0.03


@pytest.mark.slow
@needs_psb(385)
def test_four_legged_animal_keeps_its_legs_at_auto_k(monkeypatch):
    """PSB mesh 385 (a four-legged animal; the worst mesh of the session-4 cross-validation):
    with the plain strongest boundary as reference its legs merge into the body (k = 5,
    Rand Index error 0.66); with the area-weighted reference they stay parts."""
    from gpu_kernels.mesh import defaults

    monkeypatch.setattr(defaults, "DEFAULT_AUTO_MERGE", "hand")  # (the hand-made stop rule's reference; the learned
    v, f, humans = psb_mesh(385)                                 # k = auto, the default since session 12, has none)
    hk = [int(np.unique(h).size) for h in humans]
    k_new, ri_new = segment_with(monkeypatch, autok, "AUTO_K_REF_SHARE", 0.03, v, f, humans)
    k_old, ri_old = segment_with(monkeypatch, autok, "AUTO_K_REF_SHARE", 0.0, v, f, humans)
    assert min(hk) <= k_new <= max(hk), (k_new, hk)
    assert ri_new < 0.30, ri_new
    assert ri_old > ri_new + 0.2, (ri_old, ri_new)  # the failure the change mends
