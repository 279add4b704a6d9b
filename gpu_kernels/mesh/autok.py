"""k = "auto"'s stop rule: how strong a boundary must be to stop the merges.

k = "auto" over-segments a mesh component, merges its clusters down to two along the
weakest boundaries (:func:`gpu_kernels.mesh.boundary.merge_weakest_boundaries`) and keeps
the merges before the first boundary as strong as ``max(AUTO_K_STRENGTH, AUTO_K_RELATIVE
* reference)`` (:mod:`gpu_kernels.mesh.segment`). The reference is the strongest boundary
met on the way down: a mesh whose parts meet at very sharp creases has strong seams inside
its parts too.

A very small part with a sharp rim (a horn, an ear tip, a hoof) then sets the bar for the
whole mesh: on the four-legged animals of the PSB its boundary was 3-4x stronger than the
legs', so the legs merged into the body (mesh 385: one body and two slivers, Rand Index
error 0.66). Here each merge's strength counts towards the reference in proportion to the
smaller part's share of the component's area, up to ``AUTO_K_REF_SHARE``: a part of at
least that share counts in full, a part of a tenth of it counts a tenth.

Chosen by leave-one-category-out over the 76 PSB meshes (benchmarks/mesh_quality.py and
benchmarks/results/mesh_quality_session5.md). ``AUTO_K_REF_SHARE = 0`` is the plain
strongest boundary (the rule before session 5).

Where the merges stop (:func:`stop_index`): at the first boundary as strong as the bar, or,
with ``AUTO_K_LOOKAHEAD`` = L, at whichever of that merge and the L after it (those at least
``AUTO_K_STRENGTH`` strong) steps furthest above every boundary merged before it, in the ratio
``strength / max(earlier strengths)``: a bar crossed by a small step, followed by a much
bigger step, is the merge curve's shoulder and not yet its elbow (a cup's rim crease just
above the bar, followed by the handle; a table's top split in two). L = 1 since session 6
(benchmarks/results/mesh_quality_session6.md); L = 0 is the plain first crossing.

Example
-------
>>> reference_strength([0.8, 2.5, 9.9], [0.05, 0.05, 0.003])
2.5
>>> stop_index([0.5, 1.0, 1.6, 4.0, 4.4], threshold=1.5, floor=1.5, lookahead=0)
2
>>> stop_index([0.5, 1.0, 1.6, 4.0, 4.4], threshold=1.5, floor=1.5, lookahead=1)   # 1.6 / 1.0 < 4.0 / 1.6
3
"""

from __future__ import annotations

import numpy as np

__all__ = ["AUTO_K_REF_SHARE", "AUTO_K_LOOKAHEAD", "merge_shares", "reference_strength", "stop_index"]

#: area share of its component at which a merged part's boundary counts in full towards
#: k = "auto"'s relative threshold (0: every boundary counts in full)
AUTO_K_REF_SHARE = 0.03
#: how many merges past the first one over the bar k = "auto" may still take, when a later
#: one is a bigger step of the merge curve (:func:`stop_index`; 0: stop at the first)
AUTO_K_LOOKAHEAD = 1


def merge_shares(areas, labels, merges, label_component) -> np.ndarray:
    """The smaller part's share of its mesh component's area at each merge.

    Parameters
    ----------
    areas : (F,) face areas
    labels : (F,) cluster labels before the merges (0..K-1)
    merges : list of (kept, removed) label pairs, in order
    label_component : (K,) mesh component of each label

    Returns
    -------
    (len(merges),) float array in [0, 0.5].
    """
    lc = np.asarray(label_component, dtype=np.int64)
    area = np.bincount(np.asarray(labels, dtype=np.int64), weights=np.asarray(areas, np.float64),
                       minlength=lc.size).astype(np.float64)
    comp_area = np.bincount(lc, weights=area[:lc.size])
    out = np.empty(len(merges))
    for i, (keep, gone) in enumerate(merges):
        out[i] = min(area[keep], area[gone]) / max(comp_area[lc[keep]], 1e-300)
        area[keep] += area[gone]
        area[gone] = 0.0
    return out


def reference_strength(strengths, shares, ref_share: float | None = None) -> float:
    """The boundary strength k = "auto"'s relative threshold is taken from: the largest
    ``strength * min(1, share / ref_share)`` over one component's merges (the largest
    strength when ``ref_share`` is 0). 0.0 for no merges."""
    st = np.asarray(strengths, dtype=np.float64)
    if st.size == 0:
        return 0.0
    s0 = AUTO_K_REF_SHARE if ref_share is None else float(ref_share)
    if s0 <= 0:
        return float(st.max())
    sh = np.asarray(shares, dtype=np.float64)
    if sh.shape != st.shape:
        raise ValueError(f"{st.size} strengths but {sh.size} shares")
    return float(np.max(st * np.minimum(1.0, sh / s0)))


def stop_index(strengths, threshold: float, floor: float = 0.0, lookahead: int | None = None) -> int:
    """How many of one component's merges (in order, weakest boundary first) k = "auto"
    keeps.

    ``d`` is the index of the first merge whose strength reaches ``threshold`` (every merge
    is kept when none does). With ``lookahead`` L > 0 the stop is the merge among ``d .. d +
    L`` (only those at least ``floor`` strong) with the largest step ``strength[i] /
    max(strength[:i])``, ties to the earliest; the merges before it are kept.
    ``lookahead=None`` takes ``AUTO_K_LOOKAHEAD``.
    """
    st = np.asarray(strengths, dtype=np.float64)
    hit = np.flatnonzero(st >= threshold)
    if hit.size == 0:
        return int(st.size)
    d = int(hit[0])
    L = AUTO_K_LOOKAHEAD if lookahead is None else int(lookahead)
    if L <= 0:
        return d
    cand = np.arange(d, min(st.size, d + L + 1))
    cand = cand[st[cand] >= floor]
    if cand.size <= 1:
        return d
    tiny = 1e-9
    before = np.maximum.accumulate(np.r_[tiny, st])[:-1]
    step = np.log(np.maximum(st[cand], tiny) / np.maximum(before[cand], tiny))
    return int(cand[int(np.argmax(step))])
