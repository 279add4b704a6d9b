"""Stable part colours across results of the same mesh (Qt-free; the mesh tab uses it).

The kernels colour part ``j`` with ``palette(K)[j]``: the colour follows the part number, so
after a k edit (or between the pinned and the live result) a part that did not change could
change colour, and two different parts could share one. :func:`stable_colors` gives a new
result's parts the colours of the parts of earlier results they overlap most (one to one, by
face area, Hungarian assignment), and the parts that match nothing colours no reference uses.

Example
-------
>>> import numpy as np
>>> old = np.array([0, 0, 1, 1, 2, 2])          # three parts
>>> old_colors = np.array([[230, 25, 75], [60, 180, 75], [0, 130, 200]], np.uint8)
>>> new = np.array([2, 2, 0, 0, 1, 3])           # the same parts renumbered, the last one split
>>> stable_colors(new, [(old, old_colors)]).tolist()
[[60, 180, 75], [0, 130, 200], [230, 25, 75], [245, 130, 48]]
"""

from __future__ import annotations

__all__ = ["stable_colors", "MIN_IOU"]

#: a new part takes a reference part's colour only where the two overlap this much
#: (intersection over union of their face areas): a part split in two halves keeps its colour
#: on the larger half (0.5), a part that only touches an old one gets a new colour
MIN_IOU = 0.2


def stable_colors(labels, refs, weights=None, *, k: int | None = None, min_iou: float = MIN_IOU):
    """(K, 3) uint8 part colours for ``labels`` (F,) that keep the colours of ``refs``.

    Parameters
    ----------
    labels : (F,) int array
        The new result's part of every face, 0..K-1.
    refs : sequence of ``(ref_labels, ref_colors)``
        Earlier results of the same faces, most important first (the pinned result, then the
        previous live one): each new part that is still uncoloured takes the colour of the
        reference part it overlaps most (one to one), if their IoU is at least ``min_iou`` and the
        colour is still free. A reference over other faces (another length) is skipped.
    weights : (F,) array, optional
        Face areas (the overlap is measured in area; default: face counts).
    k : int, optional
        The number of parts (default ``labels.max() + 1``).

    Returns
    -------
    numpy.ndarray
        ``(K, 3)`` uint8. Parts that match nothing get the first palette colours
        (:func:`gpu_kernels.mesh.colors.palette`) that no reference and no other part uses, so a
        new part never wears the colour of a part that is gone.
    """
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    from gpu_kernels.mesh.colors import palette

    labels = np.asarray(labels, dtype=np.int64)
    K = int(labels.max()) + 1 if k is None and labels.size else int(k or 0)
    w = np.ones(labels.shape, np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
    out = np.zeros((K, 3), np.uint8)
    done = np.zeros(K, bool)
    taken: set[tuple] = set()
    seen: set[tuple] = set()
    for ref_labels, ref_colors in refs:
        ref_labels = np.asarray(ref_labels, dtype=np.int64)
        ref_colors = np.asarray(ref_colors, dtype=np.uint8)
        if ref_labels.shape != labels.shape or not len(ref_colors):
            continue
        seen.update(tuple(int(x) for x in c) for c in ref_colors)
        R = len(ref_colors)
        ov = np.bincount(labels * R + ref_labels, weights=w, minlength=K * R).reshape(K, R)
        iou = ov / np.maximum(ov.sum(1)[:, None] + ov.sum(0)[None, :] - ov, 1e-300)
        free_rows = np.flatnonzero(~done)
        free_cols = [j for j in range(R) if tuple(int(x) for x in ref_colors[j]) not in taken]
        if not len(free_rows) or not free_cols:
            continue
        sub = ov[np.ix_(free_rows, free_cols)]
        rows, cols = linear_sum_assignment(-sub)
        for r, c in zip(rows, cols, strict=True):
            i, j = int(free_rows[r]), int(free_cols[c])
            if iou[i, j] >= min_iou and ov[i, j] > 0:
                out[i] = ref_colors[j]
                done[i] = True
                taken.add(tuple(int(x) for x in ref_colors[j]))
    left = np.flatnonzero(~done)
    if len(left):
        pal = palette(len(seen) + len(taken) + K)
        fresh = [c for c in pal if tuple(int(x) for x in c) not in seen | taken]
        fresh += [c for c in pal if tuple(int(x) for x in c) in seen - taken]   # only if the palette ran out
        for i, c in zip(left, fresh, strict=False):
            out[i] = c
    return out
