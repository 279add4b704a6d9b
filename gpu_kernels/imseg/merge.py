"""Minimum region size: small regions merge into their most similar neighbour, until none is
left smaller than ``min_size`` pixels.

Each round, every region smaller than ``min_size`` picks the adjacent region (same
connectivity as the labelling) whose mean CIELAB colour is nearest (squared CIE76 distance
rounded to float32; ties: the lower label), all picks are merged at once with a union-find
over regions, and the labels are renumbered 1..R in raster order of each region's first
pixel. The rounds repeat until no region is smaller, so the guarantee holds unless the whole
image has fewer than ``min_size`` pixels (then it is one region). Every small region merges
in each round, so the number of small regions at least halves per round.

On the GPU the rounds run over the regions (the labelling's, named by their smallest index,
their sums added exactly as they join) and stop on the device: the host reads the "done" flag
once per ``ROUNDS_PER_CHECK`` rounds queued (one read at the usual sizes).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.merge import merge_small_regions
>>> labels = np.array([[1, 1, 1, 2], [1, 1, 1, 3], [4, 4, 4, 3]], np.int32)
>>> lab = np.zeros((3, 4, 3), np.float32); lab[:, 3, 0] = 10.0; lab[2, :3, 0] = 50.0
>>> out, n, rounds = merge_small_regions(labels, lab, min_size=3, device="cpu")
>>> out.tolist(), n
([[1, 1, 1, 2], [1, 1, 1, 2], [3, 3, 3, 2]], 3)
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.imseg import features as _feat
from gpu_kernels.imseg import label as _label
from gpu_kernels.imseg._util import NULL, ImsegInputError, SyncCounter, activated, grid, kernel

__all__ = ["DEFAULT_MIN_SIZE", "MAX_ROUNDS", "ROUNDS_PER_CHECK", "check_min_size", "merge_small_regions"]

from gpu_kernels.imseg import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: regions smaller than this many pixels are merged (0 or 1: off); 512 chosen on BSDS500
#: (481 x 321 images: 0.3 % of the image; benchmarks/results/imseg.md)
DEFAULT_MIN_SIZE = _d.DEFAULT_MIN_SIZE
MAX_ROUNDS = 64
#: rounds the host queues between reads of the device's "done" flag (rounds past the end cost
#: a few empty launches; BSDS-sized to 4K images need 4-6)
ROUNDS_PER_CHECK = 6
#: up to this many regions the region steps of a round run in one block (md_round)
ONE_BLOCK_MAX = 32768
#: the round form where the region count stays on the device (merge_queue's count_dev): one
#: block (md_round) or the grid kernels, which read the count on the device too
UNREAD_ONE_BLOCK = True

_SRC = "imseg_merge.cu"


def check_min_size(min_size) -> int:
    try:
        s = int(min_size)
    except (TypeError, ValueError, OverflowError):
        raise ImsegInputError(f"min_size must be a whole number of pixels >= 0, got {min_size!r}") from None
    if s != min_size or s < 0:
        raise ImsegInputError(f"min_size must be a whole number of pixels >= 0, got {min_size!r}")
    return s


# --------------------------------------------------------------------------- CPU path
def _adjacent_pairs(labels: np.ndarray, connectivity: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = [(labels[:, :-1], labels[:, 1:]), (labels[:-1, :], labels[1:, :])]
    if connectivity == 8:
        pairs += [(labels[:-1, :-1], labels[1:, 1:]), (labels[:-1, 1:], labels[1:, :-1])]
    aa, bb = [], []
    for a, b in pairs:
        m = (a != b) & (a > 0) & (b > 0)
        aa.append(a[m])
        bb.append(b[m])
    a = np.concatenate(aa).astype(np.int64)
    b = np.concatenate(bb).astype(np.int64)
    return a, b


def dist_bits_np(area: np.ndarray, lab_sum: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 bits of the squared distance of the mean colours, as the GPU computes them."""
    wa = 1.0 / area[a].astype(np.float64)
    wb = 1.0 / area[b].astype(np.float64)
    parts = []
    for ch in range(3):
        parts.append(lab_sum[a, ch] * wa - lab_sum[b, ch] * wb)
    d = parts[0] * parts[0] + parts[1] * parts[1] + parts[2] * parts[2]
    return d.astype(np.float32).view(np.uint32)


def merge_np(labels: np.ndarray, n_regions: int, lab: np.ndarray, min_size: int, connectivity: int):
    """The CPU rounds; returns ``(labels, R, rounds)``."""
    labels = labels.astype(np.int32, copy=True)
    R = int(n_regions)
    rounds = 0
    # the GPU's fixed-point sums (features.LAB_SCALE): integers, exact in float64 below 2^53
    flat_lab = [np.rint(lab[..., ch].ravel().astype(np.float64) * _feat.LAB_SCALE) for ch in range(3)]
    while True:
        flat = labels.ravel()
        area = np.bincount(flat, minlength=R + 1)[1:R + 1]
        small = area < min_size
        if R <= 1 or not small.any():
            return labels, R, rounds
        if rounds >= MAX_ROUNDS:
            raise RuntimeError(f"small-region merging did not finish in {MAX_ROUNDS} rounds")
        lab_sum = np.stack([np.bincount(flat, weights=f, minlength=R + 1)[1:R + 1] for f in flat_lab],
                           axis=1) / _feat.LAB_SCALE
        a, b = _adjacent_pairs(labels, connectivity)
        a -= 1
        b -= 1
        key = np.unique(a * R + b)
        a, b = key // R, key % R
        bits = dist_bits_np(area, lab_sum, a, b).astype(np.uint64) << np.uint64(32)
        src = np.concatenate([a, b])
        dst = np.concatenate([b, a])
        keys = np.concatenate([bits, bits]) | dst.astype(np.uint64)
        keep = small[src]
        src, keys = src[keep], keys[keep]
        order = np.lexsort((keys, src))
        src, keys = src[order], keys[order]
        first = np.r_[True, src[1:] != src[:-1]]
        chooser = src[first]
        choice = (keys[first] & np.uint64(0xFFFFFFFF)).astype(np.int64)
        g = coo_matrix((np.ones(len(chooser)), (chooser, choice)), shape=(R, R))
        _, comp = connected_components(g, directed=True, connection="weak")
        root = np.full(comp.max() + 1, R, np.int64)
        np.minimum.at(root, comp, np.arange(R))
        rank = np.empty(len(root), np.int32)
        rank[np.argsort(root, kind="stable")] = np.arange(1, len(root) + 1, dtype=np.int32)
        newid = np.r_[0, rank[comp]].astype(np.int32)
        labels = newid[labels]
        R = len(root)
        rounds += 1


# --------------------------------------------------------------------------- GPU path
def merge_device(be, labels_d, R: int, h: int, w: int, min_size: int, connectivity: int, img_d, c: int,
                 lab_d=None, syncs: SyncCounter | None = None, rounds_per_check: int | None = None,
                 one_block: bool | None = None, count_dev=None, also=(), out: dict | None = None):
    """GPU rounds on device labels (changed in place) with no host read per round: the rounds
    run over the regions of ``labels_d`` (sums counted once, then added as regions join), each
    kernel returning at once when the device's flag says the merging is done, and the host
    queues ``ROUNDS_PER_CHECK`` rounds between reads (one read at the usual sizes). Up to
    ``ONE_BLOCK_MAX`` regions (``one_block`` None), a round's region steps and the final
    renumbering run in one block each (two launches a round, not five). The same labels as
    :func:`merge_device_host_rounds` and :func:`merge_np`. Returns ``(R, rounds)``.

    ``count_dev``: the number of regions as a (1,) device array, which the host has not read;
    ``R`` is then only an upper bound that sizes the arrays (the round form: ``one_block``, or
    ``UNREAD_ONE_BLOCK`` where None).
    ``also``: more small device arrays read back with the done flag (no extra
    synchronisation); their values go to ``out["also"]``."""
    state = merge_queue(be, labels_d, R, h, w, min_size, connectivity, img_d, c, lab_d=lab_d,
                        rounds_per_check=rounds_per_check, one_block=one_block, count_dev=count_dev)
    return merge_finish(be, state, syncs=syncs, also=also, out=out)


def merge_queue(be, labels_d, R: int, h: int, w: int, min_size: int, connectivity: int, img_d, c: int,
                lab_d=None, rounds_per_check: int | None = None, one_block: bool | None = None,
                count_dev=None) -> dict:
    """The first part of :func:`merge_device`: the sums, the initial counts and the first
    ``rounds_per_check`` rounds, queued with no host read (what a CUDA graph of the pipeline
    captures). Returns the state :func:`merge_finish` goes on from."""
    xp = be.xp
    per_check = max(1, int(rounds_per_check or ROUNDS_PER_CHECK))
    n = h * w
    R0 = max(int(R), 1)
    S = np.int32(min_size)
    acc = _feat.pass1_device(be, labels_d, R0, h, w, img_d, c, _feat.FT_LAB, lab_d=lab_d)
    area, lab_sum = acc["area"], acc["lab_sum"]
    st = xp.zeros(4, dtype=xp.int32)  # done, rounds, regions left, small regions left
    root = xp.empty(R0, dtype=xp.int32)
    rparent = xp.empty(R0, dtype=xp.int32)
    best = xp.empty(R0, dtype=xp.uint64)
    gr = grid(R0, 256)
    iR0, maxr = np.int32(R0), np.int32(MAX_ROUNDS)
    rp = count_dev if count_dev is not None else NULL
    kernel(be, _SRC, "md_init")(gr, (256,), (root, rparent, best, area, iR0, S, st, rp))
    kernel(be, _SRC, "md_check")((1,), (32,), (st, maxr))
    one = R0 <= ONE_BLOCK_MAX if one_block is None else bool(one_block)
    if count_dev is not None and one_block is None:
        one = UNREAD_ONE_BLOCK
    state = dict(labels=labels_d, n=n, w=w, h=h, conn8=np.int32(connectivity == 8), S=S, R0=R0, iR0=iR0,
                 maxr=maxr, rp=rp, one=one, per_check=per_check, st=st, root=root, rparent=rparent, best=best,
                 area=area, lab_sum=lab_sum, queued=0)
    _queue_rounds(be, state)
    return state


def _queue_rounds(be, s: dict) -> None:
    gr, gp = grid(s["R0"], 256), grid(s["n"], 256)
    labels_d, root, rparent, best, area, lab_sum, st = (s[k] for k in ("labels", "root", "rparent", "best", "area",
                                                                        "lab_sum", "st"))
    S, iR0, maxr = s["S"], s["iR0"], s["maxr"]
    f_choose = kernel(be, _SRC, "md_choose")
    f_round = kernel(be, _SRC, "md_round") if s["one"] else None
    for _ in range(s["per_check"]):
        f_choose(gp, (256,), (labels_d, np.int32(s["w"]), np.int32(s["h"]), s["conn8"], root, area, lab_sum, S,
                              best, st))
        if s["one"]:
            f_round((1,), (1024,), (root, rparent, best, area, lab_sum, iR0, S, maxr, st, s["rp"]))
            continue
        rp = s["rp"]
        kernel(be, _SRC, "md_link")(gr, (256,), (best, area, root, iR0, S, rparent, st, rp))
        kernel(be, _SRC, "md_settle")(gr, (256,), (root, rparent, iR0, area, lab_sum, st, rp))
        kernel(be, _SRC, "md_compress")(gr, (256,), (root, rparent, iR0, area, S, best, st, rp))
        kernel(be, _SRC, "md_check")((1,), (32,), (st, maxr))
    s["queued"] += s["per_check"]


def merge_finish(be, s: dict, syncs: SyncCounter | None = None, also=(), out: dict | None = None):
    """The rest of :func:`merge_device` after :func:`merge_queue`: read the done flag (with
    ``also``), queue more rounds until done, renumber. Returns ``(R, rounds)``."""
    xp = be.xp
    syncs = syncs if syncs is not None else SyncCounter()
    queued = s["queued"]
    while True:
        vals = syncs.read_many(be, (s["st"], *also), "min-size merge: done on the device?")
        done, rounds, rcur = (int(v) for v in vals[:3])
        if out is not None:
            out["also"] = [int(v) for v in vals[4:]]
        if done == 2:
            raise RuntimeError(f"small-region merging did not finish in {MAX_ROUNDS} rounds")
        if done or queued > MAX_ROUNDS:
            break
        _queue_rounds(be, s)
        queued = s["queued"]
    if rounds:
        R0, iR0, root, n = s["R0"], s["iR0"], s["root"], s["n"]
        newid = xp.empty(R0, dtype=xp.int32)
        if s["one"] or s["rp"] is not NULL:  # one block (the count may be on the device only)
            kernel(be, _SRC, "md_renumber")((1,), (1024,), (root, iR0, newid, s["rp"], NULL))
        else:
            _label.relabel_device(be, root, R0, newid)
        kernel(be, _label._SRC, "relabel_pixels")(grid(n, 256), (256,), (s["labels"], np.int64(n), newid))
    return rcur, rounds


def queue_renumber(be, s: dict) -> None:
    """Queue the final renumbering behind :func:`merge_queue`'s rounds, gated on the device by
    their done flag (a no-op unless they finished: see md_renumber)."""
    newid = s["newid"] = be.xp.empty(s["R0"], dtype=be.xp.int32)
    kernel(be, _SRC, "md_renumber")((1,), (1024,), (s["root"], s["iR0"], newid, s["rp"], s["st"]))
    kernel(be, _label._SRC, "relabel_pixels")(grid(s["n"], 256), (256,), (s["labels"], np.int64(s["n"]), newid))


def merge_device_host_rounds(be, labels_d, R: int, h: int, w: int, min_size: int, connectivity: int, img_d,
                             c: int, lab_d=None, syncs: SyncCounter | None = None):
    """The session-4 GPU rounds (kept as the reference of :func:`merge_device`): a pixel recount
    and one synchronisation per round plus the final check. Returns ``(R, rounds)``."""
    xp = be.xp
    syncs = syncs if syncs is not None else SyncCounter()
    n = h * w
    R0 = max(int(R), 1)
    S = np.int32(min_size)
    cnt = xp.zeros(2, dtype=xp.int32)  # [small regions, current R]
    nsmall_d, rcur_d = cnt[0:1], cnt[1:2]
    rcur_d.fill(int(R))
    best = xp.empty(R0, dtype=xp.uint64)
    rparent = xp.empty(R0, dtype=xp.int32)
    newid = xp.empty(R0, dtype=xp.int32)
    acc: dict = {}
    f_count = kernel(be, _SRC, "count_small")
    f_choose = kernel(be, _SRC, "merge_choose")
    f_link = kernel(be, _SRC, "merge_link")
    f_iota = kernel(be, _label._SRC, "iota_forest")
    f_relabel = kernel(be, _label._SRC, "relabel_pixels")
    rounds = 0
    while True:
        _feat.pass1_device(be, labels_d, R0, h, w, img_d, c, _feat.FT_LAB, lab_d=lab_d, out=acc)
        nsmall_d.fill(0)
        f_count(grid(R0, 256), (256,), (acc["area"], rcur_d, S, nsmall_d))
        nsmall, rcur = (int(v) for v in syncs.read(be, cnt, "min-size merge: any region still small?"))
        if nsmall == 0 or rcur <= 1:
            return rcur, rounds
        if rounds >= MAX_ROUNDS:
            raise RuntimeError(f"small-region merging did not finish in {MAX_ROUNDS} rounds")
        best.fill(np.uint64(0xFFFFFFFFFFFFFFFF))
        f_choose(grid(n, 256), (256,), (labels_d, np.int32(w), np.int32(h), np.int32(connectivity == 8),
                                        acc["area"], acc["lab_sum"], S, best))
        f_iota(grid(R0, 256), (256,), (rparent, np.int64(R0), rcur_d))
        f_link(grid(R0, 256), (256,), (best, acc["area"], rcur_d, S, rparent))
        total = _label.relabel_device(be, rparent, R0, newid, nptr=rcur_d)
        f_relabel(grid(n, 256), (256,), (labels_d, np.int64(n), newid))
        rcur_d[...] = total
        rounds += 1


# --------------------------------------------------------------------------- public
def merge_small_regions(labels, lab, *, min_size: int = DEFAULT_MIN_SIZE, connectivity: int = 8, device=None):
    """Merge every region smaller than ``min_size`` pixels into its most similar neighbour.

    Parameters
    ----------
    labels : (H, W) int array
        1..R, consecutive (0 is not allowed: every pixel belongs to a region).
    lab : (H, W, 3) float array
        The CIELAB image whose region means decide the similarity.
    min_size : int
        Smallest allowed region, in pixels (0 or 1: nothing to do).
    connectivity : {4, 8}
        Which pixels are neighbours (use the labelling's).

    Returns
    -------
    labels : (H, W) int32 ndarray
        Renumbered 1..R in raster order of first pixels.
    n : int
        R.
    rounds : int

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.merge import merge_small_regions
    >>> out, n, _ = merge_small_regions(np.array([[1, 2, 2, 2]]), np.zeros((1, 4, 3), np.float32),
    ...                                 min_size=2, device="cpu")
    >>> out.tolist(), n
    ([[1, 1, 1, 1]], 1)
    """
    be = get_backend(device)
    S = check_min_size(min_size)
    conn = _label.check_connectivity(connectivity)
    lab_img = np.asarray(asnumpy(labels))
    if lab_img.ndim != 2 or 0 in lab_img.shape or lab_img.dtype.kind not in "iu":
        raise ImsegInputError(f"labels must be a non-empty 2-D integer image, got {lab_img.dtype} {lab_img.shape}")
    h, w = lab_img.shape
    lab = np.asarray(asnumpy(lab), dtype=np.float32)
    if lab.shape != (h, w, 3):
        raise ImsegInputError(f"lab must have shape {(h, w, 3)}, got {lab.shape}")
    if lab_img.min() < 1:
        raise ImsegInputError("every pixel must carry a label >= 1")
    R = int(lab_img.max())
    if len(np.unique(lab_img)) != R:
        raise ImsegInputError("labels must be consecutive from 1")
    if S <= 1:
        return lab_img.astype(np.int32), R, 0
    if not be.is_gpu:
        return merge_np(lab_img, R, lab, S, conn)
    with activated(be):
        xp = be.xp
        labels_d = xp.asarray(lab_img.astype(np.int32)).reshape(-1)
        lab_d = xp.asarray(np.ascontiguousarray(lab).reshape(-1))
        R, rounds = merge_device(be, labels_d, R, h, w, S, conn, None, 3, lab_d=lab_d)
        return asnumpy(labels_d).reshape(h, w), R, rounds

