"""The hybrid merge (issue 21, session 16): the contour merge, then the learned merge.

The contours method's superpixels are first merged by the contour merge (:func:`contours.merge_np` /
:func:`contours.graph_merge_device`: the hand-made cost, one block on the GPU) in its count mode, down to
``M' = min(R, max(HYBRID_REGIONS, n_segments))`` regions; the learned merge (:mod:`gpu_kernels.imseg.learned`)
then runs from those regions to the end (τ from the coarseness and the S²/4 clean-up, or exactly ``n_segments``
regions), its region graph and sums built on the contour merge's labels and its model (:func:`model`) refit on
such starts: session 11's ``e2w`` recipe on the 200 BSDS500 training images, each merged first by the contour
merge to ``HYBRID_REGIONS`` regions (``benchmarks/imseg_q16_hybrid.py``; ``benchmarks/results/imseg_q7_session16.md``).

The learned merge from a few hundred regions needs far fewer rounds than from the superpixels (its late,
one-merge-a-round phase is short): on an H100 the hybrid costs 0.3-0.9 ms more than the contour merge end to end and
1.4-3.9 ms less than the learned merge (session 16's judged call). Quality on the 20 BSDS500 test images: covering
0.550 (contour 0.533, learned 0.567): selectable, not the default.

The CPU and the GPU give the same labels: each part does (contour merge and learned merge, each equal on both
paths), and the merged labels between them are numbered alike (each region by its lowest superpixel, in order).
"""

from __future__ import annotations

import math
import time

import numpy as np

from gpu_kernels.imseg import contours as _ct
from gpu_kernels.imseg import learned as _lm

__all__ = ["HYBRID_REGIONS", "model", "start_count", "merge_np", "stage_merge"]

#: the contour merge's last region count, where the learned merge takes over (chosen on the 200 BSDS500
#: training images by 5-fold cross-validation; benchmarks/results/imseg_q7_session16.md)
HYBRID_REGIONS = 200

_MODEL = None


def model() -> dict:
    """The hybrid's learned-merge model (``learned_model_hybrid``: refit on contour-merged starts); the arrays
    of :func:`learned.load_model`."""
    global _MODEL
    if _MODEL is None:
        from gpu_kernels.imseg import learned_model_hybrid

        _MODEL = _lm.load_model(learned_model_hybrid)
    return _MODEL


def start_count(R: int, n_segments: int = 0, regions: int | None = None) -> int:
    """The regions the contour merge leaves to the learned merge: min(R, max(M, n_segments))."""
    m = HYBRID_REGIONS if regions is None else int(regions)
    return int(min(int(R), max(m, int(n_segments))))


def merge_np(comps: np.ndarray, R: int, gq: np.ndarray, q: np.ndarray, S: int, target: int, tau: float, *,
             min_area: int = 0, regions: int | None = None, model_arrays: dict | None = None, progress=None,
             stats: dict | None = None) -> np.ndarray:
    """The hybrid merge of superpixels ``comps`` (1..R) on the CPU: labels 1..count (int32). ``target`` > 0:
    exactly that many regions (τ unused); ``stats`` (a dict) receives the start count and each part's rounds."""
    from gpu_kernels.jobs import as_progress

    progress = as_progress(progress)
    h, w = comps.shape
    inv_norm = 1.0 / math.sqrt(h * w)
    Mp = start_count(R, target, regions)
    r1 = 0
    if Mp < R:
        graph = _ct.region_graph_np(comps, R, gq, q)
        into, _, r1 = _ct.merge_np(graph, Mp, math.inf, inv_norm, progress=progress.sub(0.0, 0.4))
        seg, cnt = _ct._resolve(into)
        if cnt != Mp:
            raise ValueError(f"the contour merge left {cnt} regions, not {Mp}")
        mid = seg[comps - 1].astype(np.int32)
    else:
        mid = comps
    g = _ct.region_graph_np(mid, Mp, gq, q, boundary=True)
    g.update(_lm.graph_extras_np(mid, Mp, gq, q, g))
    into, _, r2 = _lm.merge_learned_np(g, int(target), tau, inv_norm, min_area=min_area,
                                       model_arrays=model_arrays or model(), progress=progress.sub(0.4, 1.0))
    seg, count = _ct._resolve(into)
    if stats is not None:
        stats.update(start=Mp, rounds_contour=int(r1), rounds_learned=int(r2), count=int(count))
    return seg[mid - 1].astype(np.int32)


def stage_merge(col: dict, sp: dict, *, coarseness: float = _ct.DEFAULT_COARSENESS, n_segments: int = 0,
                device=None, progress=None) -> dict:
    """:func:`contours.stage_merge` for ``merge="hybrid"`` (the same output; ``rounds``: both parts' rounds,
    also apart as ``rounds_contour`` and ``rounds_learned``; ``start``: the regions the learned merge began with)."""
    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import label as _label
    from gpu_kernels.imseg._util import StageTimer, SyncCounter, activated, grid, kernel

    be = get_backend(device)
    p = _ct.check_params(coarseness, n_segments, 1, _ct.DEFAULT_COMPACTNESS, _ct.DEFAULT_SIGMA)
    h, w, R = col["h"], col["w"], sp["R"]
    inv_norm = 1.0 / math.sqrt(h * w)
    min_area = _ct.min_region_area(sp["S"]) if not p["n_segments"] else 0
    tau = _lm.tau_from_coarseness(p["coarseness"], model()["tau"])
    Mp = start_count(R, p["n_segments"])
    out = {"coarseness": p["coarseness"], "n_segments": p["n_segments"], "min_area": min_area, "merge": "hybrid",
           "tau": tau, "start": Mp}
    if not be.is_gpu:
        t0 = time.perf_counter()
        st: dict = {}
        labels = merge_np(sp["comps"], R, col["gq"], col["q"], sp["S"], p["n_segments"], tau, min_area=min_area,
                          progress=progress, stats=st)
        out.update(labels=labels, count=st["count"], rounds=st["rounds_contour"] + st["rounds_learned"],
                   rounds_contour=st["rounds_contour"], rounds_learned=st["rounds_learned"],
                   t={"graph": 0.0, "merge": time.perf_counter() - t0})
        return out
    with activated(be):
        xp = be.xp
        n = h * w
        timer = StageTimer(be)
        syncs = SyncCounter()
        relabel = kernel(be, _label._SRC, "relabel_pixels")
        pre = sp.pop("graph_pre", None)   # (its table and sums serve one merge: the contour part's)
        st1 = None
        if Mp < R:
            into1, st1 = _ct.graph_merge_device(be, sp["comps"], R, h, w, col["gq"], col["q"], Mp, math.inf, inv_norm,
                                                timer=timer, min_area=0, pre=pre)
            newid = xp.empty(R, dtype=xp.int32)
            _label.relabel_device(be, into1, R, newid)
            xp.minimum(newid, np.int32(Mp), out=newid)   # (a failed contour merge cannot put labels beyond Mp)
            mid = sp["comps"].copy()
            relabel(grid(n, 256), (256,), (mid, np.int64(n), newid))
        else:
            mid = sp["comps"]
        ran: dict = {}
        into2, st2 = _lm.merge_device(be, mid, Mp, h, w, col["gq"], col["q"], p["n_segments"], tau, inv_norm,
                                      timer=None if st1 is not None else timer, min_area=min_area,
                                      model_arrays=model(), info=ran)
        newid2 = xp.empty(Mp, dtype=xp.int32)
        count_d = _label.relabel_device(be, into2, Mp, newid2)
        labels_d = mid if st1 is not None else mid.copy()
        relabel(grid(n, 256), (256,), (labels_d, np.int64(n), newid2))
        meta = syncs.read_many(be, (count_d, st2) + ((st1,) if st1 is not None else ()),
                               "number of segments (sizes the feature arrays)")
        r1 = 0
        if st1 is not None:   # (the contour part first: a failure there would show as the learned part's)
            _ct.check_merge_state(meta[5:8], 2)
            if int(meta[5]) != Mp:
                raise ValueError(f"the contour merge left {int(meta[5])} regions, not {Mp}")
            r1 = int(meta[6])
        _ct.check_merge_state(meta[1:5], 3)
        timer.mark("merge")
        out.update(labels=labels_d, count=int(meta[0]), rounds=r1 + int(meta[2]), rounds_contour=r1,
                   rounds_learned=int(meta[2]), timer=timer, syncs=syncs, merge_smem=ran["smem"])
    return out
