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

The layout at the chosen k (:func:`relayout`, ``segment_mesh(..., auto_layout="concave")``): k = "auto"
chooses k by its own merges; the integer-k pipeline (over-segmentation factors, the auto starts, the
integer k's thickness contrast, the medoid) may lay the parts out better at that k. ``"concave"`` runs the
integer k at auto's k on the same prepared mesh and keeps whichever of the two results has the more concave
boundaries (:func:`gpu_kernels.mesh.segment.boundary_concavity` on the full mesh; no ground truth), ties to
auto's own. Issue 22, session 9 (benchmarks/results/mesh_quality_session9.md): on five new working-mesh draws,
leave one category out, k = "auto" 0.1671 -> 0.1563 held out, better on 5 of 5 draws, meshes above 0.30
10.8 -> 8.4, the same k. Session 10 (benchmarks/results/mesh_r2_session10.md): decided on the working mesh
(:data:`LAYOUT_DECIDE`), only the kept result is cut at full resolution; on 10 more new draws 0.1612 -> 0.1519.
It costs one integer-k clustering and its cuts and merges at the working resolution (the distances, the auto
starts' clusterings and their fuzzy cuts re-used): 12-80 ms at best-of on H100 hosts, still too much for 17k faces
within 0.2 s, so it stays off by default (``defaults.DEFAULT_AUTO_LAYOUT``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["AUTO_K_REF_SHARE", "AUTO_K_LOOKAHEAD", "AUTO_LAYOUTS", "merge_shares", "reference_strength", "stop_index",
           "check_layout", "choose_layout", "layout_note", "pick_layout", "relayout"]

#: area share of its component at which a merged part's boundary counts in full towards
#: k = "auto"'s relative threshold (0: every boundary counts in full)
AUTO_K_REF_SHARE = 0.03
#: how many merges past the first one over the bar k = "auto" may still take, when a later
#: one is a bigger step of the merge curve (:func:`stop_index`; 0: stop at the first). Read only by the
#: hand-made stop rule (``DEFAULT_AUTO_MERGE = "hand"``): under the learned default the labels are the same at
#: L = 0, 1 and 2 on 76 of 76 PSB meshes (session 17, benchmarks/results/mesh_auto8_session17.md)
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


#: ``auto_layout`` values: "auto" (k = "auto"'s own merges lay the parts out) or "concave" (:func:`relayout`)
AUTO_LAYOUTS = ("auto", "concave")


#: where :func:`choose_layout` decides between the two layouts in ``segment_mesh(..., auto_layout="concave")``:
#: "working" (session 10): on the working resolution's dual graph with the labels there, before any
#: full-resolution cut, and only the kept result is cut at full resolution; a mesh clustered at full resolution
#: or at several resolutions is decided as "full". "full" (session 9's rule): both results cut at full
#: resolution and compared on the full mesh's dual graph (one full-resolution cut more). Session 10's
#: pre-registered round (10 new working-mesh draws, seeds 1001-1010, leave one category out, H100): k = auto
#: 0.1612 -> 0.1519 held out with "working" (better on 9 of 10 draws) and -> 0.1509 with "full" (10 of 10);
#: "working" keeps 91 % of the gain (the rule asked for 90 %) for ~30-40 ms less at 50k faces
#: (benchmarks/results/mesh_r2_session10.md)
LAYOUT_DECIDE = "working"


def check_layout(auto_layout) -> str:
    """``auto_layout`` checked (one of :data:`AUTO_LAYOUTS`); a bad value is a one-line
    :class:`~gpu_kernels.mesh.dualgraph.MeshInputError`.

    Examples
    --------
    >>> check_layout(None)
    'auto'
    >>> check_layout("concave")
    'concave'
    """
    if auto_layout is None:
        return "auto"
    if not isinstance(auto_layout, str) or auto_layout not in AUTO_LAYOUTS:
        from gpu_kernels.mesh.dualgraph import MeshInputError

        raise MeshInputError(f"auto_layout must be one of {', '.join(map(repr, AUTO_LAYOUTS))}, got {auto_layout!r}")
    return auto_layout


def choose_layout(graph, own_labels, own_k, own_split, other_labels, other_k, other_split, rule: str = "concave"):
    """The layout rule on two labelings of the faces of ``graph`` (a dual graph) with their k and their split
    of k between the mesh components: ``(keep the other, note)``. The other only where it has the same k and
    the same split and strictly more concave boundaries (:func:`gpu_kernels.mesh.segment.boundary_concavity`);
    ties keep the own. ``note``: ``rule``, ``k``, ``why`` and, where compared, ``concavity_own`` and
    ``concavity_other``."""
    from gpu_kernels.mesh.segment import boundary_concavity

    note = {"rule": rule, "k": int(own_k)}
    if int(other_k) != int(own_k) or list(other_split) != list(own_split):
        return False, {**note, "why": "the other splits k between the components otherwise"}
    co = float(boundary_concavity(graph, np.asarray(own_labels)))
    ct = float(boundary_concavity(graph, np.asarray(other_labels)))
    note.update(concavity_own=co, concavity_other=ct)
    if ct > co:
        return True, {**note, "why": "more concave boundaries"}
    return False, {**note, "why": "the other is not more concave"}


def layout_note(note: dict, integer_kept: bool) -> dict:
    """:func:`choose_layout`'s note as ``info["auto_layout"]`` has it after :func:`relayout`: ``kept`` "integer
    k" or "auto", the concavities as ``concavity_auto`` and ``concavity_k``."""
    out = {key: val for key, val in note.items() if key not in ("concavity_own", "concavity_other")}
    out["kept"] = "integer k" if integer_kept else "auto"
    for a, b in (("concavity_own", "concavity_auto"), ("concavity_other", "concavity_k")):
        if a in note:
            out[b] = note[a]
    return out


def pick_layout(prep, own, other, rule: str = "concave"):
    """Of two segmentations of the prepared mesh ``prep`` with the same k, ``own`` unless ``other`` splits k
    between the mesh components the same way (``info["k_per_component"]``) and has strictly more concave
    boundaries (:func:`choose_layout` on ``prep.graph``, the labels on the cleaned faces ``prep.kept``). The
    kept one's ``info["auto_layout"]`` says which and why (``kept``: "own" or "other")."""
    kept = np.asarray(prep.kept)
    use, note = choose_layout(prep.graph, np.asarray(own.labels)[kept], own.k, own.info.get("k_per_component", []),
                              np.asarray(other.labels)[kept], other.k, other.info.get("k_per_component", []), rule)
    out = other if use else own
    out.info["auto_layout"] = {**note, "kept": "other" if use else "own"}
    return out


def relayout(prep, seg, resegment, auto_layout: str = "concave"):
    """k = "auto"'s result ``seg`` on the prepared mesh ``prep``, laid out again at its k.

    ``resegment(k)`` runs the integer-k pipeline on ``prep`` (``segment_prepared(prep, k=k, ...)``).
    With ``auto_layout="concave"`` its result replaces ``seg`` where ``seg.k > 1`` and
    :func:`pick_layout` prefers it (the same split between the components, strictly more concave
    boundaries). ``info["auto_layout"]["kept"]`` is "auto" or "integer k". ``"auto"``: ``seg``
    unchanged, nothing run. (``segment_mesh(..., auto_layout="concave")`` gives the same result with less
    work: :func:`gpu_kernels.mesh.segment._cut_and_lay_out`.)
    """
    mode = check_layout(auto_layout)
    if mode == "auto":
        return seg
    if int(seg.k) <= 1:
        seg.info["auto_layout"] = {"rule": mode, "k": int(seg.k), "kept": "auto", "why": "one part"}
        return seg
    alt = resegment(int(seg.k))
    out = pick_layout(prep, seg, alt, mode)
    note = out.info["auto_layout"]
    note.pop("kept")
    out.info["auto_layout"] = layout_note(note, out is alt)
    if out is alt:
        for key in ("auto_k_threshold", "auto_k_starts", "auto_k_start_used"):
            if key in seg.info:
                alt.info.setdefault(key, seg.info[key])
    return out
