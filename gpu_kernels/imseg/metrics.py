"""Segmentation quality against human ground truth (BSDS-style), from contingency tables.

Every measure compares a segmentation ``seg`` with one ground truth ``gt`` (two label
images of one shape; any integer values); :func:`evaluate` averages over several ground
truths, as the BSDS benchmark does with its 5-7 human segmentations per image.

``covering``
    Segmentation covering of the ground truth by ``seg`` (Arbelaez et al. 2011):
    ``1/N sum_{G} |G| max_{S} |G & S| / |G | S|``. Higher is better, 1 is perfect.
``pri``
    Rand index, averaged over the ground truths = probabilistic Rand index (Unnikrishnan et
    al. 2007). Higher is better.
``voi``
    Variation of information ``H(S) + H(G) - 2 I(S; G)`` in bits (log2, as in the BSDS
    ``compare_segmentations`` code). Lower is better.
``boundary_recall``
    Fraction of ground-truth boundary pixels with a boundary pixel of ``seg`` within
    ``tolerance`` pixels (Chebyshev distance; 2 by default, the superpixel-benchmark
    convention). Higher is better.
``undersegmentation``
    Undersegmentation error (Neubert & Protzel 2012): ``1/N sum_G sum_{S meets G}
    min(|S & G|, |S - G|)``. Lower is better.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.metrics import evaluate
>>> gt = np.repeat([[1, 1, 2, 2]], 4, axis=0)
>>> r = evaluate(gt.copy(), [gt])
>>> r["covering"], r["pri"], r["voi"], r["undersegmentation"]
(1.0, 1.0, 0.0, 0.0)
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

__all__ = [
    "contingency",
    "rand_index",
    "variation_of_information",
    "segmentation_covering",
    "undersegmentation_error",
    "boundary_map",
    "boundary_recall",
    "evaluate",
]


def contingency(seg, gt) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Joint counts of two label images: ``(s_index, g_index, counts, (seg sizes, gt sizes))``.

    Returns the non-zero cells only: row ``s_index[k]``, column ``g_index[k]`` holds
    ``counts[k]`` pixels; ``sizes[0][s]`` and ``sizes[1][g]`` are the region sizes.
    """
    a = np.asarray(seg).ravel()
    b = np.asarray(gt).ravel()
    if a.shape != b.shape:
        raise ValueError(f"segmentation and ground truth differ in size: {np.shape(seg)} vs {np.shape(gt)}")
    _, ai = np.unique(a, return_inverse=True)
    _, bi = np.unique(b, return_inverse=True)
    nb = int(bi.max()) + 1
    key = ai.astype(np.int64) * nb + bi
    cells, counts = np.unique(key, return_counts=True)
    s_idx, g_idx = cells // nb, cells % nb
    sizes_s = np.bincount(ai).astype(np.float64)
    sizes_g = np.bincount(bi).astype(np.float64)
    return s_idx, g_idx, counts.astype(np.float64), (sizes_s, sizes_g)


def rand_index(seg, gt) -> float:
    _, _, n, (a, b) = contingency(seg, gt)
    N = a.sum()
    if N < 2:
        return 1.0
    pairs = N * (N - 1) / 2.0
    disagree = (np.sum(a * a) / 2.0 + np.sum(b * b) / 2.0 - np.sum(n * n))
    return float(1.0 - disagree / pairs)


def variation_of_information(seg, gt) -> float:
    _, _, n, (a, b) = contingency(seg, gt)
    N = a.sum()
    pa, pb, pj = a / N, b / N, n / N
    hs = -np.sum(pa * np.log2(pa))
    hg = -np.sum(pb * np.log2(pb))
    hj = -np.sum(pj * np.log2(pj))
    mi = hs + hg - hj
    return float(max(hs + hg - 2.0 * mi, 0.0))


def segmentation_covering(seg, gt) -> float:
    s, g, n, (a, b) = contingency(seg, gt)
    overlap = n / (a[s] + b[g] - n)
    best = np.zeros(len(b))
    np.maximum.at(best, g, overlap)
    return float(np.sum(b * best) / b.sum())


def undersegmentation_error(seg, gt) -> float:
    s, _, n, (a, _) = contingency(seg, gt)
    return float(np.sum(np.minimum(n, a[s] - n)) / a.sum())


def boundary_map(labels) -> np.ndarray:
    """Pixels whose right or lower neighbour has another label (thin, one side)."""
    lab = np.asarray(labels)
    out = np.zeros(lab.shape, bool)
    out[:, :-1] |= lab[:, :-1] != lab[:, 1:]
    out[:-1, :] |= lab[:-1, :] != lab[1:, :]
    return out


def boundary_recall(seg, gt=None, *, tolerance: int = 2, gt_boundaries=None) -> float:
    """Recall of the ground truth's boundary pixels (``gt_boundaries``, e.g. BSDS's
    ``Boundaries``, or derived from ``gt``) by ``seg``'s, within ``tolerance`` pixels."""
    gb = np.asarray(gt_boundaries, bool) if gt_boundaries is not None else boundary_map(gt)
    total = int(gb.sum())
    if total == 0:
        return 1.0
    sb = boundary_map(seg)
    if tolerance > 0:
        sb = ndi.binary_dilation(sb, structure=np.ones((2 * tolerance + 1, 2 * tolerance + 1), bool))
    return float(np.sum(gb & sb) / total)


def evaluate(seg, gts, *, gt_boundaries=None, tolerance: int = 2) -> dict:
    """All measures of ``seg`` against a list of ground truths, averaged over them.

    ``gt_boundaries`` (optional): one boundary image per ground truth (BSDS's own thin
    boundaries); otherwise they are derived from the ground-truth labels.
    """
    gts = list(gts)
    if not gts:
        raise ValueError("no ground truth given")
    out = {"covering": [], "pri": [], "voi": [], "boundary_recall": [], "undersegmentation": []}
    for i, g in enumerate(gts):
        out["covering"].append(segmentation_covering(seg, g))
        out["pri"].append(rand_index(seg, g))
        out["voi"].append(variation_of_information(seg, g))
        gb = gt_boundaries[i] if gt_boundaries is not None else None
        out["boundary_recall"].append(boundary_recall(seg, g, tolerance=tolerance, gt_boundaries=gb))
        out["undersegmentation"].append(undersegmentation_error(seg, g))
    res = {k: float(np.mean(v)) for k, v in out.items()}
    res["segments"] = int(len(np.unique(np.asarray(seg))))
    return res
