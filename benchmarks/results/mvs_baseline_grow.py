# The region grower as it was before issue 24 (commit b1a4bcd, gpu_kernels/mvs/grow.py): the
# priority queue on the host, one round trip per batch. Kept only as the same-run baseline of
# `python benchmarks/mvs.py queue` (benchmarks/results/mvs_queue_h100.md); not part of gpulab.
"""Region growing (Goesele et al. 2007, Section 4.4; the CUDA port's batching): pixels are
optimised in order of confidence, seeds first, then the 4-neighbours of accepted pixels,
which start from their parent's plane (``h + ds hs + dt ht``, same ``hs``, ``ht``).

Each step takes the ``batch_size`` highest-priority candidates of the queue and optimises them
in one call of :func:`gpu_kernels.mvs.optimize.optimize_pixels` (one kernel launch on the
GPU). Several reference views can grow at once: their candidates share the batch, which
keeps the GPU busy while each view's front is still small. The queue lives on the host as
flat NumPy arrays (top-k selection by ``argpartition``, de-duplication by pixel), so its
cost per batch is a few vectorised passes over the live candidates; the time it takes is
measured (``stats["queue_s"]``).

Example
-------
>>> from gpu_kernels.mvs.grow import DEFAULT_BATCH_GPU, DEFAULT_BATCH_CPU
>>> DEFAULT_BATCH_GPU > DEFAULT_BATCH_CPU
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from gpu_kernels.backend import get_backend
from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs.camera import MVSInputError
from gpu_kernels.mvs.optimize import (
    DEFAULT_SEED_MIN_ITER,
    OptimizeParams,
    build_geometry,
    launch_optimize,
    threads_per_pixel,
)

__all__ = ["DEFAULT_BATCH_GPU", "DEFAULT_BATCH_CPU", "DEFAULT_MAX_ATTEMPTS", "DEFAULT_MAX_SLANT_DEG",
           "DepthMap", "grow_depth_maps", "textured_mask"]

#: pixels per launch on the GPU (shared by the views growing together). templeSparseRing, 16
from gpu_kernels.mvs import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: views together on an H100: 4096 -> 0.20 s per view, 16384 -> 0.19 s, 65536 -> 0.137 s,
#: with the same samples (76.5k per view) and consistency
DEFAULT_BATCH_GPU = _d.BATCH_GPU
#: pixels per NumPy step on the CPU
DEFAULT_BATCH_CPU = 2048
#: how often a pixel may be tried (from different parents) before it is given up
DEFAULT_MAX_ATTEMPTS = _d.MAX_ATTEMPTS
#: surfaces seen more obliquely than this are rejected
DEFAULT_MAX_SLANT_DEG = 80.0

_FREE, _DONE, _CLOSED = 0, 1, 2
SEED_PRIORITY = 10.0


@dataclass
class DepthMap:
    """One reference view's result.

    ``depth``: z-depth (NaN where nothing was reconstructed); ``normal``: unit camera-frame
    normals (NaN where none, facing the camera); ``conf``: mean NCC of the active views (0
    where none); ``iters``: iterations the optimisation took (0 where never tried);
    ``hs``/``ht``: the depth offsets; ``neighbors``: the neighbour view indices.
    """

    view: int
    depth: np.ndarray
    normal: np.ndarray
    conf: np.ndarray
    iters: np.ndarray
    hs: np.ndarray
    ht: np.ndarray
    neighbors: list
    stats: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return int(np.isfinite(self.depth).sum())


def textured_mask(img9: np.ndarray, window: int, min_std: float) -> np.ndarray:
    """Pixels whose n x n RGB window (the optimiser's reference window) has a standard
    deviation of at least ``min_std``; ``img9`` from :func:`prepare_image`."""
    f = img9[..., :3].astype(np.float64)
    m = ndimage.uniform_filter(f.mean(2), window, mode="nearest")
    m2 = ndimage.uniform_filter((f * f).mean(2), window, mode="nearest")
    return (m2 - m * m) > min_std ** 2 * (1 - 1e-3)


class _Queue:
    """A bucket queue: priorities quantised into ``levels`` buckets over ``[lo, hi]`` (seeds in a
    bucket of their own above), first in first out inside a bucket. Pushing and popping a
    batch cost O(batch) whatever the queue's length (a fully sorted queue would cost O(n)
    per batch: 10 ms at a million candidates). Candidates of pixels finished through another
    parent are dropped when they come up (lazy deletion)."""

    def __init__(self, lo: float, hi: float, levels: int = 256):
        self.lo, self.hi, self.levels = float(lo), float(hi), int(levels)
        self.buckets: list[list] = [[] for _ in range(levels + 1)]
        self.counts = np.zeros(levels + 1, np.int64)
        self.top = -1

    def __len__(self):
        return int(self.counts.sum())

    def _bucket(self, pri):
        b = ((pri - self.lo) * (self.levels / max(self.hi - self.lo, 1e-9))).astype(np.int64)
        b = np.clip(b, 0, self.levels - 1)
        return np.where(pri >= SEED_PRIORITY, self.levels, b)

    def push(self, key, pri, init):
        if len(key) == 0:
            return
        b = self._bucket(pri)
        order = np.argsort(b, kind="stable")
        bs = b[order]
        cut = np.flatnonzero(np.diff(bs)) + 1
        starts = np.concatenate([[0], cut])
        ends = np.concatenate([cut, [len(bs)]])
        key, pri, init = key[order], pri[order], init[order]
        for s0, e0 in zip(starts.tolist(), ends.tolist(), strict=True):
            bk = int(bs[s0])
            self.buckets[bk].append((key[s0:e0], pri[s0:e0], init[s0:e0]))
            self.counts[bk] += e0 - s0
            self.top = max(self.top, bk)

    def pop_top(self, k: int, state: np.ndarray, stamp: np.ndarray):
        """Remove and return up to ``k`` of the best candidates whose pixel is free, one per pixel."""
        while True:
            chunks, got = [], 0
            bk = self.top
            while got < k and bk >= 0:
                lst = self.buckets[bk]
                while lst and got < k:
                    c = lst.pop(0)
                    need = k - got
                    if len(c[0]) > need:
                        lst.insert(0, (c[0][need:], c[1][need:], c[2][need:]))
                        c = (c[0][:need], c[1][:need], c[2][:need])
                    chunks.append(c)
                    got += len(c[0])
                    self.counts[bk] -= len(c[0])
                if not lst:
                    bk -= 1
            self.top = bk
            while self.top >= 0 and self.counts[self.top] == 0:
                self.top -= 1
            if not chunks:
                e = np.zeros(0, np.int64)
                return e, np.zeros(0, np.float32), np.zeros((0, 3), np.float32)
            key = np.concatenate([c[0] for c in chunks])
            pri = np.concatenate([c[1] for c in chunks])
            init = np.concatenate([c[2] for c in chunks])
            live = state[key] == _FREE
            key, pri, init = key[live], pri[live], init[live]
            if len(key) == 0:
                continue
            # one candidate per pixel, the best: the last write of ascending order wins
            order = np.argsort(pri, kind="stable")
            stamp[key[order]] = order
            first = stamp[key] == np.arange(len(key))
            return key[first], pri[first], init[first]


class _Grower:
    """The region-growing state of a group of reference views: flat maps, the queue, and the
    two host steps around an optimiser launch (:meth:`next_batch`, :meth:`apply`)."""

    def __init__(self, cameras, refs, neighbors, seeds, images9, masks, params, batch_size, max_attempts,
                 max_slant_deg, depth_ranges, seed_min_iter, nv, tpp):
        self.params, self.batch_size, self.max_attempts = params, batch_size, max_attempts
        self.nv = nv
        self.geo, self.nbr, self.refid = build_geometry(cameras, refs, neighbors, tpp)
        rad = params.window // 2
        nref = len(refs)
        sizes = [(cameras[r].height, cameras[r].width) for r in refs]
        offs = np.concatenate([[0], np.cumsum([h * w for h, w in sizes])]).astype(np.int64)
        total = int(offs[-1])
        # all views' results in one packed record array (one scatter per accepted pixel); each
        # DepthMap holds (strided) views of its slice while growing, own arrays at the end
        self.rec = np.zeros(total, _REC)
        self.rec["h"] = self.rec["hs"] = self.rec["ht"] = np.nan
        self.rec["n"] = np.nan
        self.iters = np.zeros(total, np.int16)
        self.state = np.full(total, _CLOSED, np.uint8)
        self.maps: list[DepthMap] = []
        self.slices = []
        for a, r in enumerate(refs):
            H, W = sizes[a]
            st = np.full((H, W), _CLOSED, np.uint8)
            m = rad + 1
            if H > 2 * m and W > 2 * m:
                st[m:H - m, m:W - m] = _FREE
            st[~textured_mask(images9[r], params.window, params.min_ref_std)] = _CLOSED
            if masks is not None and masks[r] is not None:
                st[~np.asarray(masks[r], bool)] = _CLOSED
            sl = slice(offs[a], offs[a + 1])
            self.slices.append(sl)
            self.state[sl] = st.reshape(-1)
            rv = self.rec[sl]
            self.maps.append(DepthMap(r, rv["h"].reshape(H, W), rv["n"].reshape(H, W, 3), rv["conf"].reshape(H, W),
                                      self.iters[sl].reshape(H, W), rv["hs"].reshape(H, W), rv["ht"].reshape(H, W),
                                      list(neighbors[a])))
        self.attempts = np.zeros(total, np.uint8)
        self.stamp = np.zeros(total, np.int64)
        self.qpri = np.full(total, -np.inf, np.float32)  # best priority a pixel is queued with
        self.which = np.repeat(np.arange(nref), np.diff(offs))
        self.offs = offs
        self.Hs = np.array([s_[0] for s_ in sizes], np.int64)
        self.Ws = np.array([s_[1] for s_ in sizes], np.int64)
        self.Kinv = np.array([np.linalg.inv(cameras[r].K) for r in refs], np.float32)
        self.dmin = np.array([0.0 if depth_ranges is None else depth_ranges[a][0] for a in range(nref)], np.float32)
        self.dmax = np.array([np.inf if depth_ranges is None else depth_ranges[a][1] for a in range(nref)],
                             np.float32)
        self.cos_slant = np.float32(np.cos(np.radians(max_slant_deg)))
        self.mi_grow = np.int32(params.min_iter)
        self.mi_seed = np.int32(max(seed_min_iter, params.min_iter))
        self.q = _Queue(params.ncc_accept, 1.0)
        self.n_seeds = 0
        for a, r in enumerate(refs):
            S = np.asarray(seeds[a], np.float64).reshape(-1, 3)
            if not len(S):
                continue
            uv, z = cameras[r].project(S)
            ui = np.round(np.nan_to_num(uv, nan=-1)).astype(np.int64)
            H, W = sizes[a]
            ok = (z > 0) & (ui[:, 0] >= 0) & (ui[:, 0] < W) & (ui[:, 1] >= 0) & (ui[:, 1] < H)
            ok &= (z >= self.dmin[a]) & (z <= self.dmax[a])
            key = offs[a] + ui[ok, 1] * W + ui[ok, 0]
            live = self.state[key] == _FREE
            key, zz = key[live], z[ok][live]
            self.n_seeds += len(key)
            init = np.stack([zz, np.zeros_like(zz), np.zeros_like(zz)], 1)
            self.q.push(key, np.full(len(key), SEED_PRIORITY, np.float32), init)
        self.total_free = max(int((self.state == _FREE).sum()), 1)
        self.samples = self.tried = self.batches = 0
        self.t_queue = 0.0
        self.cache: dict = {}
        self.stream = None

    def next_batch(self):
        """Pop the next batch: ``(key, pri, a, xs, ys, xy, init, min_iter)`` or None."""
        t0 = time.perf_counter()
        key, pri, init = self.q.pop_top(self.batch_size, self.state, self.stamp)
        if len(key) == 0:
            self.t_queue += time.perf_counter() - t0
            return None
        a = self.which[key]
        ys, xs = np.divmod(key - self.offs[a], self.Ws[a])
        mi = np.where(pri >= SEED_PRIORITY, self.mi_seed, self.mi_grow).astype(np.int32)
        xy = np.empty((len(key), 2), np.int32)
        xy[:, 0], xy[:, 1] = xs, ys
        self.t_queue += time.perf_counter() - t0
        return key, pri, a, xs, ys, xy, init, mi

    def apply(self, batch, res) -> None:
        """Write the accepted pixels and queue their 4-neighbours."""
        t0 = time.perf_counter()
        key, _pri, a, xs, ys, _xy, _init, _mi = batch
        self.batches += 1
        self.tried += len(key)
        prm_ = res["param"]
        h, hs, ht, conf = prm_[:, 0], prm_[:, 1], prm_[:, 2], res["conf"]
        ok = (res["status"] >= 0) & (conf >= self.params.ncc_accept) & (h >= self.dmin[a]) & (h <= self.dmax[a])
        # the window's plane against the viewing ray (normals_from_offsets, vectorised per view)
        Ki = self.Kinv[a]
        xf, yf = xs.astype(np.float32), ys.astype(np.float32)
        ray = Ki[:, :, 0] * xf[:, None] + Ki[:, :, 1] * yf[:, None] + Ki[:, :, 2]
        Pu = hs[:, None] * ray + h[:, None] * Ki[:, :, 0]
        Pv = ht[:, None] * ray + h[:, None] * Ki[:, :, 1]
        nrm = np.cross(Pu, Pv)
        nn = np.sqrt(np.einsum("ij,ij->i", nrm, nrm))
        dot = np.einsum("ij,ij->i", nrm, ray)
        rr = np.sqrt(np.einsum("ij,ij->i", ray, ray))
        ok &= np.abs(dot) >= self.cos_slant * rr * nn
        acc = np.flatnonzero(ok)
        kacc = key[acc]
        na = len(acc)
        if na:
            rec = np.empty(na, self.rec.dtype)
            rec["h"], rec["hs"], rec["ht"], rec["conf"] = h[acc], hs[acc], ht[acc], conf[acc]
            sgn = np.where(dot[acc] > 0, np.float32(-1), np.float32(1)) / np.maximum(nn[acc], np.float32(1e-30))
            rec["n"] = nrm[acc] * sgn[:, None]
            self.rec[kacc] = rec
        self.iters[key] = res["iters"]
        self.state[kacc] = _DONE
        self.samples += na
        kr = key[~ok]
        self.qpri[kr] = -np.inf  # a failed pixel may be queued again from another parent
        att = self.attempts[kr] + 1
        self.attempts[kr] = att
        self.state[kr[att >= self.max_attempts]] = _CLOSED
        # the 4-neighbours of accepted pixels start from the parent's plane
        if na:
            aa = a[acc]
            Wa, Ha = self.Ws[aa][:, None], self.Hs[aa][:, None]
            nx = xs[acc][:, None] + _DX
            ny = ys[acc][:, None] + _DY
            inb = (nx >= 0) & (ny >= 0) & (nx < Wa) & (ny < Ha)
            k2 = np.where(inb, kacc[:, None] + _DY * Wa + _DX, 0)
            free = inb & (self.state[k2] == _FREE)
            r_, c_ = np.nonzero(free)
            nk = k2[r_, c_]
            npri = conf[acc][r_]
            # queue a pixel again only with a better priority than it already has
            better = npri > self.qpri[nk]
            r_, c_, nk, npri = r_[better], c_[better], nk[better], npri[better]
            self.qpri[nk] = npri
            src = acc[r_]
            ninit = np.empty((len(nk), 3), np.float32)
            ninit[:, 1], ninit[:, 2] = hs[src], ht[src]
            ninit[:, 0] = h[src] + _DXf[c_] * ninit[:, 1] + _DYf[c_] * ninit[:, 2]
            self.q.push(nk, npri, ninit)
        self.t_queue += time.perf_counter() - t0

    def finish(self) -> None:
        """Copy the results out of the packed record array into the maps' own arrays."""
        for mp, sl in zip(self.maps, self.slices, strict=True):
            H, W = mp.depth.shape
            r = self.rec[sl]
            mp.depth, mp.hs, mp.ht = (np.ascontiguousarray(r[f]).reshape(H, W) for f in ("h", "hs", "ht"))
            mp.conf = np.ascontiguousarray(r["conf"]).reshape(H, W)
            mp.normal = np.ascontiguousarray(r["n"]).reshape(H, W, 3)
            mp.iters = self.iters[sl].reshape(H, W).copy()


_DX = np.array([1, -1, 0, 0], np.int64)
_DY = np.array([0, 0, 1, -1], np.int64)
_DXf = _DX.astype(np.float32)
_DYf = _DY.astype(np.float32)
_REC = np.dtype([("h", "<f4"), ("hs", "<f4"), ("ht", "<f4"), ("conf", "<f4"), ("n", "<f4", (3,))])


def grow_depth_maps(textures, images9, cameras, refs, neighbors, seeds, *, masks=None,
                    params: OptimizeParams = OptimizeParams(), batch_size: int | None = None,
                    max_attempts: int = DEFAULT_MAX_ATTEMPTS, max_slant_deg: float = DEFAULT_MAX_SLANT_DEG,
                    depth_ranges=None, seed_min_iter: int = DEFAULT_SEED_MIN_ITER, overlap: bool | None = None,
                    device=None, progress=None, callback=None, work_hint: float | None = None) -> list[DepthMap]:
    """Grow the depth maps of the reference views ``refs`` together.

    Parameters
    ----------
    textures : ViewTextures
        :func:`pack_views` of (at least) the references and their neighbours.
    images9 : dict
        ``view -> prepare_image(image)`` for the references (to find textured pixels).
    cameras : list of Camera
    refs : list of int
    neighbors : list of list of int
        Neighbour views of each reference (at most :data:`MAX_NEIGHBORS`).
    seeds : list of ndarray
        For each reference, ``(k, 3)`` world points to start from.
    batch_size : int, optional
        Pixels per launch (default 65536 on the GPU, 2048 on the CPU).
    depth_ranges : list of (float, float), optional
        Accepted z-depth range per reference (default: no limit).
    seed_min_iter : int
        Iterations before a seed may converge (seeds start fronto-parallel).
    overlap : bool, optional
        On the GPU with two or more references: split them into two groups, each with its own
        CUDA stream, and alternate, so that the host keeps one group's queue while the GPU
        optimises the other's batch (default: on).
    callback : callable, optional
        Called after each batch as ``callback(maps, info)`` with the live :class:`DepthMap`
        objects (do not modify) and ``info = {"batch", "samples", "queued"}``.
    work_hint : float, optional
        The share of the free pixels the growing is expected to try (from views grown
        before; 0.5 when None): the progress bar's scale, since the growing's length is
        known only at its end.

    Returns
    -------
    list of DepthMap, one per reference, with ``stats`` (samples, batches, time split:
    ``queue_s`` is the host's queue and bookkeeping time, ``wait_s`` the time it waited for
    the optimiser).
    """
    be = get_backend(device)
    progress = as_progress(progress)
    params.check()
    if batch_size is None:
        batch_size = DEFAULT_BATCH_GPU if be.is_gpu else DEFAULT_BATCH_CPU
    batch_size = int(batch_size)
    if batch_size < 1:
        raise MVSInputError(f"batch_size must be at least 1, got {batch_size}")
    nv = max((len(n) for n in neighbors), default=0)
    if nv < params.min_views:
        bad = refs[int(np.argmin([len(n) for n in neighbors]))]
        raise MVSInputError(f"view {bad} has {min(len(n) for n in neighbors)} neighbour views, fewer than "
                            f"min_views = {params.min_views}: lower min_views or add views")
    tpp = threads_per_pixel(nv)
    refs = list(refs)
    if overlap is None:
        overlap = True
    ngroups = 2 if (overlap and be.is_gpu and len(refs) >= 2) else 1
    bounds = np.linspace(0, len(refs), ngroups + 1).round().astype(int)
    groups = []
    for g in range(ngroups):
        sel = list(range(bounds[g], bounds[g + 1]))
        gr = _Grower(cameras, [refs[i] for i in sel], [neighbors[i] for i in sel], [seeds[i] for i in sel],
                     images9, masks, params, max(1, batch_size // ngroups), max_attempts, max_slant_deg,
                     None if depth_ranges is None else [depth_ranges[i] for i in sel], seed_min_iter, nv, tpp)
        if ngroups > 1:
            with be.activate():
                gr.stream = be.xp.cuda.Stream(non_blocking=True)
        groups.append(gr)
    if sum(g.n_seeds for g in groups) == 0:
        raise MVSInputError("no seed point projects into a reconstructable pixel of the reference view(s): "
                            "the scene has no usable sparse points (check the cameras, masks or depth range)")
    maps = [m for g in groups for m in g.maps]
    total_free = sum(g.total_free for g in groups)

    def launch(g, batch):
        key, pri, a, xs, ys, xy, init, mi = batch
        return launch_optimize(textures, g.geo, g.nbr, g.refid, a.astype(np.int32), xy, init, nv=nv, params=params,
                               item_min_iter=mi, cache=g.cache, stream=g.stream, device=be)

    t_start = time.perf_counter()
    t_wait = 0.0
    pending = {}
    for gi, g in enumerate(groups):
        b = g.next_batch()
        if b is not None:
            pending[gi] = (b, launch(g, b))
    while pending:
        for gi, g in enumerate(groups):
            if gi not in pending:
                continue
            b, h = pending.pop(gi)
            tw = time.perf_counter()
            res = h.result()
            t_wait += time.perf_counter() - tw
            g.apply(b, res)
            nb_ = g.next_batch()
            if nb_ is not None:
                pending[gi] = (nb_, launch(g, nb_))
            samples = sum(x.samples for x in groups)
            if callback is not None:
                callback(maps, {"batch": sum(x.batches for x in groups), "samples": samples,
                                "queued": sum(len(x.q) for x in groups)})
            tried = sum(x.tried for x in groups)
            # the growing's length is known only at its end: expect it to try the share of the free
            # pixels that the previous views tried (work_hint), about half at first
            progress.update(min(0.97, tried / (max(work_hint or 0.5, 0.05) * max(total_free, 1))),
                            f"batch {sum(x.batches for x in groups)}: {samples:,} samples, "
                            f"{sum(len(x.q) for x in groups):,} queued")
    for g in groups:
        g.finish()
    total_s = time.perf_counter() - t_start
    stats = {"seeds": sum(g.n_seeds for g in groups), "batches": sum(g.batches for g in groups),
             "tried": sum(g.tried for g in groups), "free": int(total_free), "time_s": total_s, "wait_s": t_wait,
             "queue_s": sum(g.t_queue for g in groups), "views_together": len(refs), "groups": ngroups,
             "neighbors": nv}
    stats["optimize_s"] = t_wait if ngroups > 1 else max(total_s - stats["queue_s"], 0.0)
    for mp in maps:
        mp.stats = {"samples": mp.n_samples, **stats}
    return maps
