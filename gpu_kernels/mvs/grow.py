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
    normals_from_offsets,
    optimize_pixels,
    threads_per_pixel,
)

__all__ = ["DEFAULT_BATCH_GPU", "DEFAULT_BATCH_CPU", "DEFAULT_MAX_ATTEMPTS", "DEFAULT_MAX_SLANT_DEG",
           "DepthMap", "grow_depth_maps", "textured_mask"]

#: pixels per launch on the GPU (shared by the views growing together)
DEFAULT_BATCH_GPU = 16384
#: pixels per NumPy step on the CPU
DEFAULT_BATCH_CPU = 2048
#: how often a pixel may be tried (from different parents) before it is given up
DEFAULT_MAX_ATTEMPTS = 2
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
    """Candidate pixels: flat arrays, grown by concatenation, compacted as they are used."""

    def __init__(self):
        self.key = np.zeros(0, np.int64)
        self.pri = np.zeros(0, np.float32)
        self.init = np.zeros((0, 3), np.float32)

    def push(self, key, pri, init):
        if len(key):
            self.key = np.concatenate([self.key, key])
            self.pri = np.concatenate([self.pri, pri.astype(np.float32)])
            self.init = np.concatenate([self.init, init.astype(np.float32)])

    def __len__(self):
        return len(self.key)

    def pop_top(self, k: int, state_flat: np.ndarray):
        """Remove and return the ``k`` best live candidates (one per pixel)."""
        live = state_flat[self.key] == _FREE
        if not live.all():
            self.key, self.pri, self.init = self.key[live], self.pri[live], self.init[live]
        n = len(self.key)
        if n == 0:
            return self.key, self.pri, self.init
        if n > k:
            part = np.argpartition(-self.pri, k - 1)[:k]
        else:
            part = np.arange(n)
        # best first, then one candidate per pixel
        part = part[np.argsort(-self.pri[part], kind="stable")]
        _, first = np.unique(self.key[part], return_index=True)
        take = part[np.sort(first)]
        keep = np.ones(n, bool)
        keep[take] = False  # duplicates not taken stay: another parent, another start
        k_, p_, i_ = self.key[take], self.pri[take], self.init[take]
        self.key, self.pri, self.init = self.key[keep], self.pri[keep], self.init[keep]
        return k_, p_, i_


def grow_depth_maps(textures, images9, cameras, refs, neighbors, seeds, *, masks=None,
                    params: OptimizeParams = OptimizeParams(), batch_size: int | None = None,
                    max_attempts: int = DEFAULT_MAX_ATTEMPTS, max_slant_deg: float = DEFAULT_MAX_SLANT_DEG,
                    depth_ranges=None, seed_min_iter: int = DEFAULT_SEED_MIN_ITER, device=None, progress=None,
                    callback=None) -> list[DepthMap]:
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
    depth_ranges : list of (float, float), optional
        Accepted z-depth range per reference (default: no limit).
    callback : callable, optional
        Called after each batch as ``callback(maps, info)`` with the live :class:`DepthMap`
        objects (do not modify) and ``info = {"batch", "samples", "queued"}``.

    Returns
    -------
    list of DepthMap, one per reference, with ``stats`` (samples, batches, time split).
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
    geo, nbr, refid = build_geometry(cameras, refs, neighbors, tpp)
    rad = params.window // 2
    maps: list[DepthMap] = []
    sizes = []
    state_parts = []
    for a, r in enumerate(refs):
        cam = cameras[r]
        H, W = cam.height, cam.width
        sizes.append((H, W))
        st = np.full((H, W), _CLOSED, np.uint8)
        m = rad + 1
        if H > 2 * m and W > 2 * m:
            st[m:H - m, m:W - m] = _FREE
        st[~textured_mask(images9[r], params.window, params.min_ref_std)] = _CLOSED
        if masks is not None and masks[r] is not None:
            st[~np.asarray(masks[r], bool)] = _CLOSED
        state_parts.append(st.reshape(-1))
        nan = np.full((H, W), np.nan, np.float32)
        maps.append(DepthMap(r, nan.copy(), np.full((H, W, 3), np.nan, np.float32), np.zeros((H, W), np.float32),
                             np.zeros((H, W), np.int16), nan.copy(), nan.copy(), list(neighbors[a])))
    offs = np.concatenate([[0], np.cumsum([h * w for h, w in sizes])]).astype(np.int64)
    state = np.concatenate(state_parts)
    attempts = np.zeros(len(state), np.uint8)
    Hs = np.array([s[0] for s in sizes], np.int64)
    Ws = np.array([s[1] for s in sizes], np.int64)
    dmin = np.array([0.0 if depth_ranges is None else depth_ranges[a][0] for a in range(len(refs))], np.float32)
    dmax = np.array([np.inf if depth_ranges is None else depth_ranges[a][1] for a in range(len(refs))], np.float32)
    cos_slant = float(np.cos(np.radians(max_slant_deg)))

    q = _Queue()
    n_seeds = 0
    for a, r in enumerate(refs):
        S = np.asarray(seeds[a], np.float64).reshape(-1, 3)
        if not len(S):
            continue
        uv, z = cameras[r].project(S)
        ui = np.round(uv).astype(np.int64)
        H, W = sizes[a]
        ok = (z > 0) & (ui[:, 0] >= 0) & (ui[:, 0] < W) & (ui[:, 1] >= 0) & (ui[:, 1] < H)
        ok &= (z >= dmin[a]) & (z <= dmax[a])
        key = offs[a] + ui[ok, 1] * W + ui[ok, 0]
        live = state[key] == _FREE
        key, zz = key[live], z[ok][live]
        n_seeds += len(key)
        init = np.stack([zz, np.zeros_like(zz), np.zeros_like(zz)], 1)
        q.push(key, np.full(len(key), SEED_PRIORITY, np.float32), init)
    if n_seeds == 0:
        raise MVSInputError("no seed point projects into a reconstructable pixel of the reference view(s): "
                            "the scene has no usable sparse points (check the cameras, masks or depth range)")

    t_start = time.perf_counter()
    t_opt = t_queue = 0.0
    batches = 0
    tried = 0
    total_free = max(int((state == _FREE).sum()), 1)
    samples = np.zeros(len(refs), np.int64)
    which = np.repeat(np.arange(len(refs)), np.diff(offs))
    while len(q):
        t0 = time.perf_counter()
        key, pri, init = q.pop_top(batch_size, state)
        if len(key) == 0:
            t_queue += time.perf_counter() - t0
            break
        a = which[key]
        local = key - offs[a]
        ys, xs = np.divmod(local, Ws[a])
        t1 = time.perf_counter()
        t_queue += t1 - t0
        mi = np.where(pri >= SEED_PRIORITY, max(seed_min_iter, params.min_iter), params.min_iter).astype(np.int32)
        res = optimize_pixels(textures, geo, nbr, refid, a.astype(np.int32), np.stack([xs, ys], 1).astype(np.int32),
                              init, nv=nv, params=params, item_min_iter=mi, device=be)
        t2 = time.perf_counter()
        t_opt += t2 - t1
        batches += 1
        tried += len(key)
        h, hs, ht = res["param"][:, 0], res["param"][:, 1], res["param"][:, 2]
        ok = (res["status"] >= 0) & (res["conf"] >= params.ncc_accept) & (h >= dmin[a]) & (h <= dmax[a])
        # slant: the window's plane against the viewing ray
        normals = np.full((len(key), 3), np.nan, np.float32)
        if ok.any():
            idx = np.flatnonzero(ok)
            for aa in np.unique(a[idx]):
                sub = idx[a[idx] == aa]
                K = cameras[refs[aa]].K
                nn = normals_from_offsets(K, xs[sub], ys[sub], h[sub], hs[sub], ht[sub])
                ray = np.stack([xs[sub], ys[sub], np.ones(len(sub))], 1) @ np.linalg.inv(K).T
                ray /= np.linalg.norm(ray, axis=1, keepdims=True)
                cosang = -np.sum(nn * ray, axis=1)
                good = cosang >= cos_slant
                normals[sub] = nn
                ok[sub[~good]] = False
        acc = np.flatnonzero(ok)
        rej = np.flatnonzero(~ok)
        # write accepted
        state[key[acc]] = _DONE
        for aa in np.unique(a[acc]):
            sub = acc[a[acc] == aa]
            mp = maps[aa]
            loc = local[sub]
            mp.depth.reshape(-1)[loc] = h[sub]
            mp.hs.reshape(-1)[loc] = hs[sub]
            mp.ht.reshape(-1)[loc] = ht[sub]
            mp.conf.reshape(-1)[loc] = res["conf"][sub]
            mp.normal.reshape(-1, 3)[loc] = normals[sub]
            samples[aa] += len(sub)
        iters = res["iters"].astype(np.int16)
        for aa in np.unique(a):
            sub = np.flatnonzero(a == aa)
            loc = local[sub]
            it = maps[aa].iters.reshape(-1)
            it[loc] = np.maximum(it[loc], iters[sub])
        # failures: give up after max_attempts
        kr = key[rej]
        attempts[kr] += 1
        state[kr[attempts[kr] >= max_attempts]] = _CLOSED
        # push the 4-neighbours of accepted pixels
        if len(acc):
            ka, xa, ya, aa_ = key[acc], xs[acc], ys[acc], a[acc]
            ha, hsa, hta, ca = h[acc], hs[acc], ht[acc], res["conf"][acc]
            nk, npri, ninit = [], [], []
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nx, ny = xa + dx, ya + dy
                inb = (nx >= 0) & (ny >= 0) & (nx < Ws[aa_]) & (ny < Hs[aa_])
                k2 = np.where(inb, ka + dy * Ws[aa_] + dx, 0)
                free = inb & (state[k2] == _FREE)
                if not free.any():
                    continue
                nk.append(k2[free])
                npri.append(ca[free])
                ninit.append(np.stack([ha[free] + dx * hsa[free] + dy * hta[free], hsa[free], hta[free]], 1))
            if nk:
                q.push(np.concatenate(nk), np.concatenate(npri), np.concatenate(ninit))
        t3 = time.perf_counter()
        t_queue += t3 - t2
        done_frac = min(1.0, float(samples.sum() + (attempts > 0).sum()) / total_free)
        if callback is not None:
            callback(maps, {"batch": batches, "samples": int(samples.sum()), "queued": len(q)})
        progress.update(done_frac, f"batch {batches}: {int(samples.sum()):,} samples, {len(q):,} queued")
    total = time.perf_counter() - t_start
    for a, mp in enumerate(maps):
        mp.stats = {"samples": int(samples[a]), "seeds": n_seeds, "batches": batches, "tried": tried,
                    "time_s": total, "optimize_s": t_opt, "queue_s": t_queue, "views_together": len(refs),
                    "neighbors": nv}
    return maps
