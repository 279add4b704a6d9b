"""Region growing (Goesele et al. 2007, Section 4.4; the CUDA port's batching): pixels are
optimised in order of confidence, seeds first, then the 4-neighbours of accepted pixels,
which start from their parent's plane (``h + ds hs + dt ht``, same ``hs``, ``ht``).

The priority queue is one candidate slot per pixel: a 32-bit key holding the candidate's
priority (its parent's confidence) in its high bits and where its start comes from (which
4-neighbour, or a seed) in its low 3 bits, so that pushing a candidate is a maximum and the
best one wins whatever the order of the pushes. Each step takes the ``batch_size`` best
candidates by bucket (256 priority levels over ``[ncc_accept, 1]``, seeds above; the
threshold bucket in a fixed pixel order), optimises them in one launch, applies the results
and pushes the accepted pixels' free 4-neighbours. A pixel that fails takes its best accepted
neighbour other than the parent it failed from as its next candidate, until
``max_attempts``. Several reference views can grow at once: their pixels share the batches.

On the GPU the whole step runs on the device (``cuda/mvs_queue.cu`` selects and pushes,
``mvs_grow_apply`` in ``cuda/mvs_optimize.cu`` optimises and applies), replayed as one CUDA
graph per batch, a few batches ahead of the host, which only reads each batch's figures from
a small ring in pinned memory (no round trip per batch). The first states (border, masks and
the textured test of :func:`textured_mask`) are one launch (``mvs_grow_init``), with no CuPy
reduction (CuPy compiles one per size class), and the maps come down through pinned staging with
threaded copies (:mod:`.transfer`) into host arrays whose pages the copy threads touched while the
device grew; with ``keep_device`` they come down in a background thread while the caller goes on
with the device's copies (the fusion), and each view's samples are counted on the device. The
host arrays are page-locked where they fit (CuPy's pinned pool, :func:`.transfer.pinned_arrays`): the
download is then one DMA per map, with no staging and no host copy, and a map's arrays wait for it
on first access. The CPU path is the same state machine in NumPy, with the
same batch order, so both paths follow the same rules.

Example
-------
>>> from gpu_kernels.mvs.grow import DEFAULT_BATCH_GPU, DEFAULT_BATCH_CPU
>>> DEFAULT_BATCH_GPU > DEFAULT_BATCH_CPU
True
"""

from __future__ import annotations

import collections
import os
import threading
import time
import weakref
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from gpu_kernels.backend import get_backend, kernel
from gpu_kernels.env import flag
from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs import defaults as _d
from gpu_kernels.mvs import memo as _memo
from gpu_kernels.mvs.camera import MVSInputError
from gpu_kernels.mvs.optimize import (
    DEFAULT_SEED_MIN_ITER,
    OptimizeParams,
    build_geometry,
    launch_optimize,
    sample_split,
    threads_per_pixel,
)
from gpu_kernels.mvs.transfer import (
    direct_to_host,
    host_arrays,
    is_pinned,
    to_host,
    use_pinned,
    wait_for_queued,
)

__all__ = ["DEFAULT_BATCH_GPU", "DEFAULT_BATCH_CPU", "DEFAULT_MAX_ATTEMPTS", "DEFAULT_MAX_SLANT_DEG",
           "DepthMap", "grow_depth_maps", "release_device_reads", "textured_mask", "cand_key", "cand_level",
           "batch_order"]

#: pixels per launch on the GPU (shared by the views growing together)
DEFAULT_BATCH_GPU = _d.BATCH_GPU
#: pixels per NumPy step on the CPU
DEFAULT_BATCH_CPU = 2048
#: how often a pixel may be tried (from different parents) before it is given up
DEFAULT_MAX_ATTEMPTS = _d.MAX_ATTEMPTS
#: surfaces seen more obliquely than this are rejected
DEFAULT_MAX_SLANT_DEG = 80.0

_FREE, _DONE, _CLOSED = 0, 1, 2
SEED_PRIORITY = 10.0
SEED_CODE = 4
LEVELS = 256
# the device selection's layout (cuda/mvs_queue.cu): blocks of _NT threads, _KPT pixels each
_NT, _KPT = 256, 16
_CHUNK = _NT * _KPT
#: batches the host keeps queued on the device ahead of the one it reads (``GPULAB_MVS_AHEAD``
#: overrides it): enough that the device does not wait for the host's launches when the last,
#: small batches take less time than the host's turn of the loop (at most _RING)
_AHEAD = 8
_RING = 16

_DX = np.array([1, -1, 0, 0], np.int64)
_DY = np.array([0, 0, 1, -1], np.int64)


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
    #: while its maps are still coming down (``grow_depth_maps(keep_device=True)``): the device's
    #: ``(depth, normal, conf)`` and the download to wait for (:meth:`wait`)
    device: tuple | None = field(default=None, repr=False, compare=False)
    pending: object = field(default=None, repr=False, compare=False)
    #: the device grower's hold on its arrays (``keep_device=True``), let go by
    #: :func:`release_device_reads` once the caller has queued its last read of ``device``
    hold: object = field(default=None, repr=False, compare=False)

    @property
    def n_samples(self) -> int:
        self.wait()
        return int(np.isfinite(self.depth).sum())

    def wait(self) -> DepthMap:
        """Wait for the maps' download (where one is under way); drop the device's copies."""
        p = self.__dict__.get("pending")  # read once: another thread's wait may clear it
        if p is not None:
            p.wait()
        return self


def _waiting(name: str) -> property:
    """A map array that waits for the maps' download (``pending``) on first access, so that it is
    never read half-copied (``grow_depth_maps(keep_device=True)``)."""
    key = "_" + name

    def get(self):
        d = self.__dict__
        p = d.get("pending")  # read once: another thread's wait may clear it
        if p is not None:
            p.wait()
        return d[key]

    def put(self, value) -> None:
        self.__dict__[key] = value

    return property(get, put, doc=f"``{name}`` (waits for the maps' download where one is under way)")


for _name in ("depth", "normal", "conf", "iters", "hs", "ht"):
    setattr(DepthMap, _name, _waiting(_name))
del _name


def _is_cupy(xp) -> bool:
    """The real CuPy (not NumPy, nor a test emulator dressed as CuPy)."""
    return getattr(xp, "__name__", None) == "cupy"


def textured_mask(img9, window: int, min_std: float, *, device=None):
    """Pixels whose n x n RGB window (the optimiser's reference window) has a standard
    deviation of at least ``min_std``; ``img9``: :func:`prepare_image`'s ``(H, W, >=3)`` (NumPy,
    or CuPy with ``device``)."""
    be = get_backend(device) if device is not None else None
    if be is not None and be.is_gpu and _is_cupy(be.xp):
        from cupyx.scipy import ndimage as nd

        xp = be.xp
    else:
        nd, xp = ndimage, np
    f = img9[..., :3].astype(xp.float64)
    m = nd.uniform_filter(f.mean(2), window, mode="nearest")
    m2 = nd.uniform_filter((f * f).mean(2), window, mode="nearest")
    return (m2 - m * m) > min_std ** 2 * (1 - 1e-3)


# ----------------------------------------------------------------------------- queue keys
def cand_key(conf, code) -> np.ndarray:
    """The candidate keys of priorities ``conf`` (float32) from origin ``code`` (0..3: the
    parent's direction, 4: a seed): order-preserving float bits, low 3 bits the code."""
    b = np.ascontiguousarray(conf, np.float32).view(np.uint32)
    o = np.where(b & np.uint32(0x80000000), ~b, b | np.uint32(0x80000000)).astype(np.uint32)
    return (o & np.uint32(0xFFFFFFF8)) | np.asarray(code, np.uint32)


def cand_level(keys, lo: float, scale: float, levels: int = LEVELS) -> np.ndarray:
    """The bucket (0..levels-1; seeds: levels) of candidate keys, as ``cuda/mvs_queue.cu``
    computes it."""
    u = np.asarray(keys, np.uint32) & np.uint32(0xFFFFFFF8)
    b = np.where(u & np.uint32(0x80000000), u & np.uint32(0x7FFFFFFF), ~u).astype(np.uint32)
    x = (b.view(np.float32) - np.float32(lo)) * np.float32(scale)
    lv = np.where(x > 0, np.minimum(x, np.float32(levels - 1)), 0).astype(np.int64)
    return np.where((np.asarray(keys, np.uint32) & 7) == SEED_CODE, levels, lv)


def batch_order(p) -> np.ndarray:
    """The order in which the device writes a batch's pixels (block, thread, then the thread's
    own pixels): sorting by it gives the device's batch order."""
    p = np.asarray(p, np.int64)
    r = p % _CHUNK
    return (p - r) + (r % _NT) * _KPT + r // _NT


def _levels() -> int:
    """Priority buckets (``GPULAB_MVS_LEVELS`` overrides the default 256; a power of two)."""
    v = os.environ.get("GPULAB_MVS_LEVELS", "").strip()
    n = int(v) if v else LEVELS
    return max(2, min(n, 4096))


def _retry() -> bool:
    """A failed pixel takes its best other accepted neighbour at once (``GPULAB_MVS_RETRY=0``: it
    waits for a new neighbour's push)."""
    return flag("GPULAB_MVS_RETRY", True)


# ----------------------------------------------------------------------------- setup
class _Group:
    """What both paths share: the views' flat layout, the cameras' tables, the seeds."""

    def __init__(self, cameras, refs, neighbors, seeds, params, max_slant_deg, depth_ranges, seed_min_iter,
                 projection: tuple | None = None):
        nref = len(refs)
        self.refs = list(refs)
        self.sizes = [(cameras[r].height, cameras[r].width) for r in refs]
        self.offs = np.concatenate([[0], np.cumsum([h * w for h, w in self.sizes])]).astype(np.int64)
        self.total = int(self.offs[-1])
        if self.total >= 2 ** 31 - 1:
            raise MVSInputError(f"{nref} views of {self.total:,} pixels in one group: grow fewer views together")
        self.Hs = np.array([s_[0] for s_ in self.sizes], np.int64)
        self.Ws = np.array([s_[1] for s_ in self.sizes], np.int64)
        self.Kinv = np.array([np.linalg.inv(cameras[r].K) for r in refs], np.float32).reshape(nref, 3, 3)
        self.dmin = np.array([0.0 if depth_ranges is None else depth_ranges[a][0] for a in range(nref)], np.float32)
        self.dmax = np.array([np.inf if depth_ranges is None else depth_ranges[a][1] for a in range(nref)],
                             np.float32)
        self.cos_slant = np.float32(np.cos(np.radians(max_slant_deg)))
        self.ncc_accept = np.float32(params.ncc_accept)
        self.mi_grow = int(params.min_iter)
        self.mi_seed = int(max(seed_min_iter, params.min_iter))
        self.levels = _levels()
        self.retry = _retry()
        self.lo = float(np.float32(params.ncc_accept))
        self.scale = float(np.float32(self.levels / max(1.0 - self.lo, 1e-9)))
        self.window = params.window
        if projection is not None:  # the seeds' pixels of the same cameras, seeds and depth ranges
            self.seed_key, self.seed_z = projection
            return
        # seeds: pixel keys and depths, one per pixel (the last seed that lands on it)
        keys, zs = [], []
        for a, r in enumerate(refs):
            S = np.asarray(seeds[a], np.float64).reshape(-1, 3)
            if not len(S):
                continue
            uv, z = cameras[r].project(S)
            ui = np.round(np.nan_to_num(uv, nan=-1)).astype(np.int64)
            H, W = self.sizes[a]
            ok = (z > 0) & (ui[:, 0] >= 0) & (ui[:, 0] < W) & (ui[:, 1] >= 0) & (ui[:, 1] < H)
            ok &= (z >= self.dmin[a]) & (z <= self.dmax[a])
            keys.append(self.offs[a] + ui[ok, 1] * W + ui[ok, 0])
            zs.append(z[ok])
        key = np.concatenate(keys) if keys else np.zeros(0, np.int64)
        z = np.concatenate(zs).astype(np.float32) if zs else np.zeros(0, np.float32)
        _, last = np.unique(key[::-1], return_index=True)
        pick = len(key) - 1 - last
        self.seed_key, self.seed_z = key[pick], z[pick]

    def first_state(self, xp, textured, masks):
        """The first states on ``xp`` (FREE inside the border, textured, inside the mask), the
        first candidates (the seeds) and the seeds' depths, with the counts of free pixels and
        of seeds on them."""
        rad = self.window // 2
        state = xp.full(self.total, _CLOSED, xp.uint8)
        for a, r in enumerate(self.refs):
            H, W = self.sizes[a]
            st = state[self.offs[a]:self.offs[a + 1]].reshape(H, W)
            m = rad + 1
            if H > 2 * m and W > 2 * m:
                st[m:H - m, m:W - m] = _FREE
            keep = xp.asarray(textured[a], bool)
            if masks is not None and masks[r] is not None:
                keep = keep & xp.asarray(np.asarray(masks[r], bool))
            st[...] = xp.where(keep, st, xp.uint8(_CLOSED))
        cand = xp.zeros(self.total, xp.uint32)
        seed_z = xp.zeros(self.total, xp.float32)
        key = xp.asarray(self.seed_key)
        cand[key] = xp.asarray(cand_key(np.full(len(self.seed_key), SEED_PRIORITY, np.float32), SEED_CODE))
        seed_z[key] = xp.asarray(self.seed_z)
        n_seeds = int((state[key] == _FREE).sum()) if len(self.seed_key) else 0
        total_free = max(int((state == _FREE).sum()), 1)
        return state, cand, seed_z, n_seeds, total_free

    def first_state_device(self, be, xp, textures, params, masks):
        """:meth:`first_state` on the device in one launch (``mvs_grow_init`` in
        ``cuda/mvs_queue.cu``: the border, the masks and the textured test of
        :func:`textured_mask` together), from the packed ``textures``."""
        P = self.total
        k = kernel(be, "mvs_queue.cu", "mvs_grow_init", {"LEVELS": self.levels}, options=("--fmad=false",))
        has_mask = masks is not None and any(masks[r] is not None for r in self.refs)
        mh = np.ones(P if has_mask else 1, np.uint8)
        if has_mask:
            for a, r in enumerate(self.refs):
                if masks[r] is not None:
                    mh[self.offs[a]:self.offs[a + 1]] = np.asarray(masks[r], bool).reshape(-1)
        state = xp.empty(P, xp.uint8)
        counts = xp.zeros(2, xp.int32)  # FREE pixels, seeds on FREE pixels: no CuPy reduction
        tex_ofs = np.array([textures.pix_offset[r] for r in self.refs], np.int64)
        a = xp.asarray
        k(((P + _NT - 1) // _NT,), (_NT,), (textures.flat, a(tex_ofs), a(self.offs[:-1].astype(np.int32)),
                                            a(self.Ws.astype(np.int32)), a(self.Hs.astype(np.int32)),
                                            np.int32(len(self.refs)), np.int32(P), np.int32(self.window // 2),
                                            np.float64(params.min_ref_std ** 2 * (1 - 1e-3)), a(mh),
                                            np.int32(1 if has_mask else 0), state, counts))
        cand = xp.zeros(P, xp.uint32)
        seed_z = xp.zeros(P, xp.float32)
        key = xp.asarray(self.seed_key.astype(np.int64))
        ns = len(self.seed_key)
        if ns:
            cand[key] = xp.asarray(cand_key(np.full(ns, SEED_PRIORITY, np.float32), SEED_CODE))
            seed_z[key] = xp.asarray(self.seed_z)
            kc = kernel(be, "mvs_queue.cu", "mvs_count_seeds", {"LEVELS": self.levels}, options=("--fmad=false",))
            kc(((ns + _NT - 1) // _NT,), (_NT,), (key, np.int32(ns), state, counts))
        c = be.asnumpy(counts)
        return state, cand, seed_z, int(c[1]), max(int(c[0]), 1)

    def rtab(self) -> np.ndarray:
        """Per reference: K^-1 (9), dmin, dmax, 0 (``mvs_grow_apply``'s table)."""
        t = np.zeros((len(self.sizes), 12), np.float32)
        t[:, :9] = self.Kinv.reshape(-1, 9)
        t[:, 9], t[:, 10] = self.dmin, self.dmax
        return t


#: the last few :class:`_Group` set-ups by every value they are made from, and the seeds' pixels
#: (the costly part) by the values those are made from: a growing parameter's edit makes a new
#: group around the same seed arrays (so that a kept grower still fits, :func:`_grower_key`)
_GROUP_MEMO: collections.OrderedDict = collections.OrderedDict()
_PROJ_MEMO: collections.OrderedDict = collections.OrderedDict()
_GROUP_MEMO_SIZE = 8
_GROUP_LOCK = threading.Lock()


def _remember(memo: collections.OrderedDict, key, value) -> None:
    memo[key] = value
    memo.move_to_end(key)
    while len(memo) > _GROUP_MEMO_SIZE:
        memo.popitem(last=False)


def _group(cameras, refs, neighbors, seeds, params, max_slant_deg, depth_ranges, seed_min_iter) -> _Group:
    """:class:`_Group` of these inputs, from a memo of the last :data:`_GROUP_MEMO_SIZE` keyed by
    the reference cameras' values, the seeds' content (SHA-1), the depth ranges and the parameters
    it reads: a re-run of the same views skips projecting the seeds (0.5-1.4 ms on an H100 host),
    and an edit of a growing parameter projects them only once too. A group is read-only once
    made, so the same object serves every hit."""
    pkey = (tuple(int(r) for r in refs), tuple(_memo.camera_sig(cameras[r]) for r in refs),
            _memo.digest([np.asarray(seeds[a], np.float64) for a in range(len(refs))]),
            None if depth_ranges is None else tuple((float(lo), float(hi)) for lo, hi in depth_ranges))
    key = pkey + (float(params.ncc_accept), int(params.min_iter), int(params.window), float(max_slant_deg),
                  int(seed_min_iter), _levels(), _retry())
    with _GROUP_LOCK:
        g = _GROUP_MEMO.get(key)
        if g is not None:
            _GROUP_MEMO.move_to_end(key)
            return g
        proj = _PROJ_MEMO.get(pkey)
    g = _Group(cameras, refs, neighbors, seeds, params, max_slant_deg, depth_ranges, seed_min_iter, projection=proj)
    with _GROUP_LOCK:
        _remember(_GROUP_MEMO, key, g)
        _remember(_PROJ_MEMO, pkey, (g.seed_key, g.seed_z))
    return g


def _records(xp, P):
    """Depth, offsets, confidence (one plane each), unit normals and iterations."""
    rh, rhs, rht = (xp.full(P, np.nan, xp.float32) for _ in range(3))
    return rh, rhs, rht, xp.zeros(P, xp.float32), xp.full((P, 3), np.nan, xp.float32), xp.zeros(P, xp.int16)


class _HostGrower:
    """The NumPy path: the same steps as the device's, on host arrays."""

    def __init__(self, g: _Group, textured, masks, params, batch_size, max_attempts):
        self.g, self.params, self.B, self.max_attempts = g, params, int(batch_size), int(max_attempts)
        self.state, self.cand, self.seed_z, self.n_seeds, self.total_free = g.first_state(np, textured, masks)
        self.attempts = np.zeros(g.total, np.uint8)
        self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters = _records(np, g.total)
        self.samples = self.tried = self.batches = 0
        self.queued = 0

    def select(self):
        g = self.g
        idx = np.flatnonzero(self.cand)
        idx = idx[self.state[idx] == _FREE]
        self.queued = len(idx)
        if not len(idx):
            return None
        L = g.levels
        lvl = cand_level(self.cand[idx], g.lo, g.scale, L)
        if len(idx) > self.B:
            cum = np.zeros(L + 2, np.int64)
            cum[:L + 1] = np.cumsum(np.bincount(lvl, minlength=L + 1)[::-1])[::-1]
            T = int(np.flatnonzero(cum[:L + 1] >= self.B).max())
            need = self.B - int(cum[T + 1])
            eq = np.flatnonzero(lvl == T)
            eq = eq[np.argsort(batch_order(idx[eq]), kind="stable")][:need]
            idx = idx[np.concatenate([np.flatnonzero(lvl > T), eq])]
        idx = idx[np.argsort(batch_order(idx), kind="stable")]
        c = self.cand[idx]
        self.cand[idx] = 0
        code = (c & 7).astype(np.int64)
        a = np.searchsorted(g.offs, idx, side="right") - 1
        W = g.Ws[a]
        ys, xs = np.divmod(idx - g.offs[a], W)
        seed = code == SEED_CODE
        cc = np.where(seed, 0, code)
        dx, dy = _DX[cc], _DY[cc]
        pp = np.where(seed, idx, idx - dx - dy * W)
        ph, phs, pht = self.rh[pp], self.rhs[pp], self.rht[pp]
        init = np.empty((len(idx), 3), np.float32)
        init[:, 0] = np.where(seed, self.seed_z[idx], ph + dx.astype(np.float32) * phs + dy.astype(np.float32) * pht)
        init[:, 1] = np.where(seed, 0, phs)
        init[:, 2] = np.where(seed, 0, pht)
        mi = np.where(seed, g.mi_seed, g.mi_grow).astype(np.int32)
        xy = np.stack([xs, ys], 1).astype(np.int32)
        return {"key": idx, "a": a, "xs": xs, "ys": ys, "xy": xy, "init": init, "mi": mi, "code": code}

    def apply(self, b, res) -> None:
        """Write the accepted pixels, count the failures' attempts, push the candidates."""
        g = self.g
        key, a, xs, ys = b["key"], b["a"], b["xs"], b["ys"]
        self.batches += 1
        self.tried += len(key)
        prm_ = res["param"]
        h, hs, ht, conf = prm_[:, 0], prm_[:, 1], prm_[:, 2], res["conf"]
        ok = (res["status"] >= 0) & (conf >= g.ncc_accept) & (h >= g.dmin[a]) & (h <= g.dmax[a])
        # the window's plane against the viewing ray
        Ki = g.Kinv[a]
        xf, yf = xs.astype(np.float32), ys.astype(np.float32)
        ray = Ki[:, :, 0] * xf[:, None] + Ki[:, :, 1] * yf[:, None] + Ki[:, :, 2]
        Pu = hs[:, None] * ray + h[:, None] * Ki[:, :, 0]
        Pv = ht[:, None] * ray + h[:, None] * Ki[:, :, 1]
        nrm = np.cross(Pu, Pv)
        nn = np.sqrt(np.einsum("ij,ij->i", nrm, nrm))
        dot = np.einsum("ij,ij->i", nrm, ray)
        rr = np.sqrt(np.einsum("ij,ij->i", ray, ray))
        ok &= np.abs(dot) >= g.cos_slant * rr * nn
        acc = np.flatnonzero(ok)
        kacc = key[acc]
        self.iters[key] = res["iters"]
        if len(acc):
            self.rh[kacc], self.rhs[kacc], self.rht[kacc], self.rc[kacc] = h[acc], hs[acc], ht[acc], conf[acc]
            sgn = np.where(dot[acc] > 0, np.float32(-1), np.float32(1)) / np.maximum(nn[acc], np.float32(1e-30))
            self.nrm[kacc] = nrm[acc] * sgn[:, None]
            self.state[kacc] = _DONE
        self.samples += len(acc)
        kf = key[~ok]
        att = self.attempts[kf].astype(np.int64) + 1
        self.attempts[kf] = np.minimum(att, 255)
        self.state[kf[att >= self.max_attempts]] = _CLOSED
        self._push(key, a, xs, ys, b["code"])

    def _push(self, key, a, xs, ys, code) -> None:
        W, H = self.g.Ws[a], self.g.Hs[a]
        st = self.state[key]
        done = st == _DONE
        if done.any():
            kb = cand_key(self.rc[key[done]], 0)
            k, x, y, w, hh = key[done], xs[done], ys[done], W[done], H[done]
            for d in range(4):
                nx, ny = x + _DX[d], y + _DY[d]
                c = k + _DX[d] + _DY[d] * w
                ok = (nx >= 0) & (ny >= 0) & (nx < w) & (ny < hh)
                ok[ok] = self.state[c[ok]] == _FREE
                np.maximum.at(self.cand, c[ok], kb[ok] | np.uint32(d))
        fail = (st == _FREE) & self.g.retry
        if fail.any():
            k, x, y, w, hh, cf = key[fail], xs[fail], ys[fail], W[fail], H[fail], code[fail]
            best = np.zeros(len(k), np.uint32)
            for d in range(4):
                nx, ny = x - _DX[d], y - _DY[d]
                q = k - _DX[d] - _DY[d] * w
                ok = (nx >= 0) & (ny >= 0) & (nx < w) & (ny < hh) & (cf != d)
                ok[ok] = self.state[q[ok]] == _DONE
                kd = np.zeros(len(k), np.uint32)
                kd[ok] = cand_key(self.rc[q[ok]], d)
                best = np.maximum(best, kd)
            has = best > 0
            np.maximum.at(self.cand, k[has], best[has])

    def records(self):
        return self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters


class _DeviceGrower:
    """The GPU path: state, queue and maps on the device; a batch is four kernels and a copy of
    the figures' ring, captured once as a CUDA graph and replayed."""

    def __init__(self, be, tx, g: _Group, textured, masks, geo, nbr, refid, params, batch_size, max_attempts, nv,
                 tpp, keep: bool = False):
        self.be, self.g, self.params, self.B = be, g, params, int(batch_size)
        self.cache_key = None  # where it goes back to (the grower cache) once its maps are down
        self.max_attempts = int(max_attempts)
        xp = self.xp = be.xp
        self.emu = not _is_cupy(xp)  # a CPU emulator of the kernels (tests): one batch at a time
        self.tx, self.nv, self.tpp = tx, nv, tpp
        spl = sample_split(tpp)
        G = tpp * spl
        self.ppb = max(1, min(128 // G, (40 * 1024) // (params.window ** 2 * 12)))
        self.G = G
        P = g.total
        self.nb = (P + _CHUNK - 1) // _CHUNK
        self.ncum = g.levels + 2
        defs = {"WIN": params.window, "TPP": tpp, "SPL": spl, "PPB": self.ppb}
        self.k_apply = kernel(be, "mvs_optimize.cu", "mvs_grow_apply", defs)
        qdefs = {"LEVELS": g.levels}
        self.k_count = kernel(be, "mvs_queue.cu", "mvs_select_count", qdefs)
        self.k_take = kernel(be, "mvs_queue.cu", "mvs_select_take", qdefs)
        self.k_push = kernel(be, "mvs_queue.cu", "mvs_push", qdefs)
        if textured is None:  # the textured test on the device, with the states
            first = g.first_state_device(be, xp, tx, params, masks)
        else:
            first = g.first_state(xp, textured, masks)
        self.state, self.cand, self.seed_z, self.n_seeds, self.total_free = first
        # the first states and candidates, for :meth:`reset` (a re-run of the same set-up)
        self.state0, self.cand0 = (self.state.copy(), self.cand.copy()) if keep else (None, None)
        self.attempts = xp.zeros(P, xp.uint8)
        self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters = _records(xp, P)
        a = xp.asarray
        self.geo, self.nbr, self.refid = a(np.ascontiguousarray(geo, np.float32)), a(nbr), a(refid)
        self.goffs = a(g.offs[:-1].astype(np.int32))
        self.gW, self.gH = a(g.Ws.astype(np.int32)), a(g.Hs.astype(np.int32))
        self.rtab = a(g.rtab())
        B = self.B
        self.i_key, self.i_ref, self.i_mi, self.i_code = (xp.zeros(B, xp.int32) for _ in range(4))
        self.i_xy = xp.zeros(2 * B, xp.int32)
        self.i_init = xp.zeros(3 * B, xp.float32)
        self.ctrl = xp.zeros(8, xp.int32)
        self.gcum = xp.zeros(2 * self.ncum, xp.int32)
        self.bcum = xp.zeros(self.nb * self.ncum, xp.int32)
        self.ring = xp.zeros(4 * _RING, xp.int32)
        if self.emu:
            self.host_ring = None
            self.stream = None
        else:
            self._pinned = xp.cuda.alloc_pinned_memory(self.ring.nbytes)
            self.host_ring = np.frombuffer(self._pinned, np.int32, 4 * _RING)
            self.stream = xp.cuda.Stream(non_blocking=True)
            # the set-up ran on this thread's stream, the textures maybe on another thread's
            # (a kept set-up): wait for both, not for the device (another thread may be capturing)
            wait_for_queued(xp, getattr(tx, "ready", None))
        self.graph = None
        self.reset_graph = None  # :meth:`reset`'s work, captured at its first call
        self.after_reads = None  # behind the last run's reads of its maps (:func:`release_device_reads`)
        self.graphs: collections.OrderedDict = collections.OrderedDict()  # other batch keys' captured batches
        self.batch_key = _batch_key(g, params, max_attempts)
        self.host_out = None
        self.counts = None
        self.samples = self.tried = self.batches = 0
        self.t_launch = 0.0

    def retune(self, g: _Group, params, max_attempts) -> None:
        """Take another group of the same seeds' pixels and other growing parameters (thresholds,
        iterations, attempts: a live edit): the captured batch for them, kept from an earlier run
        (up to :data:`_GRAPHS` of them), else one captured at the next launch."""
        key = _batch_key(g, params, max_attempts)
        self.g = g
        if key == self.batch_key:
            return
        if self.graph:
            self.graphs[self.batch_key] = self.graph
            while len(self.graphs) > _GRAPHS:
                self.graphs.popitem(last=False)
        if self.graph is not False:  # False: this device captures none
            self.graph = self.graphs.pop(key, None)
        self.params, self.max_attempts, self.batch_key = params, int(max_attempts), key

    def reset(self) -> None:
        """Back to the state just after :meth:`__init__` (``keep=True``), queued on the grower's
        stream behind its last download, with nothing waiting for the device: the first states
        and candidates copied back, the maps, attempts, batch buffers and counters cleared. The
        captured batch (its graph) reads the same arrays, so it is replayed as it is."""
        xp = self.xp
        zeros = (self.attempts, self.rc, self.iters, self.i_key, self.i_ref, self.i_mi, self.i_code, self.i_xy,
                 self.i_init, self.ctrl, self.gcum, self.bcum, self.ring)
        nans = (self.rh, self.rhs, self.rht, self.nrm)
        if self.emu:
            self.state[...] = self.state0
            self.cand[...] = self.cand0
            for a in zeros:
                a[...] = 0
            for a in nans:
                a[...] = np.nan
        else:
            rt = xp.cuda.runtime
            if self.after_reads is not None:  # the last run's reads of the maps (the fusion, on the
                self.stream.wait_event(self.after_reads)  # caller's stream) end before they are cleared
                self.after_reads = None

            def ops():
                sp = self.stream.ptr
                for dst, src in ((self.state, self.state0), (self.cand, self.cand0)):
                    rt.memcpyAsync(dst.data.ptr, src.data.ptr, dst.nbytes, rt.memcpyDeviceToDevice, sp)
                for a in zeros:
                    rt.memsetAsync(a.data.ptr, 0, a.nbytes, sp)
                with self.stream:
                    for a in nans:
                        a.fill(np.nan)

            # the 19 copies, clears and fills as one captured graph: one launch
            if self.reset_graph is None and self.graph is not False:
                self.reset_graph = False
                try:
                    with self.stream:
                        self.stream.begin_capture()
                        try:
                            ops()
                        finally:
                            self.reset_graph = self.stream.end_capture()
                except Exception:  # noqa: BLE001 - no graphs here: one call each
                    self.reset_graph = False
                    self.stream = xp.cuda.Stream(non_blocking=True)
            if self.reset_graph:
                self.reset_graph.launch(self.stream)
            else:
                ops()
        self.host_out = None
        self.counts = None
        self.samples = self.tried = self.batches = 0
        self.t_launch = 0.0

    def _enqueue_batch(self) -> None:
        g, p, i32, f32 = self.g, self.params, np.int32, np.float32
        P = i32(g.total)
        self.k_count((self.nb,), (_NT,), (self.state, self.cand, P, f32(g.lo), f32(g.scale), self.ctrl, self.gcum,
                                          self.bcum))
        self.k_take((self.nb,), (_NT,), (self.state, self.cand, P, f32(g.lo), f32(g.scale), i32(self.B), self.ctrl,
                                         self.gcum, self.bcum, self.goffs, self.gW, i32(len(g.sizes)), self.rh,
                                         self.rhs, self.rht, self.seed_z, i32(g.mi_seed), i32(g.mi_grow), self.i_key,
                                         self.i_ref, self.i_xy, self.i_init, self.i_mi, self.i_code))
        tx = self.tx
        self.k_apply(((self.B + self.ppb - 1) // self.ppb,), (self.G * self.ppb,), (
            tx.flat, tx.dev_ofs, tx.dev_w, tx.dev_h, self.geo, self.nbr, self.refid, self.ctrl, self.i_key,
            self.i_ref, self.i_xy, self.i_init, self.i_mi, self.rtab, i32(self.nv), i32(p.min_views),
            i32(p.max_iter), i32(p.drop_from), f32(p.ncc_accept), f32(p.eps), f32(p.step_px),
            f32(p.min_ref_std ** 2), g.cos_slant, i32(self.max_attempts), self.state, self.attempts, self.rh,
            self.rhs, self.rht, self.rc, self.nrm, self.iters, self.ctrl[4:]))
        self.k_push(((self.B + _NT - 1) // _NT,), (_NT,), (self.ctrl, self.i_key, self.i_ref, self.i_code, self.goffs,
                                                          self.gW, self.gH, self.state, self.rc, self.cand, self.ring,
                                                          i32(_RING), i32(1 if g.retry else 0)))
        if not self.emu:
            rt = self.xp.cuda.runtime
            rt.memcpyAsync(self.host_ring.ctypes.data, self.ring.data.ptr, self.ring.nbytes,
                           rt.memcpyDeviceToHost, self.stream.ptr)

    def launch(self, use_graph: bool):
        """Queue one batch; returns an event to wait on (None when emulated: already done)."""
        if self.emu:
            self._enqueue_batch()
            return None
        t0 = time.perf_counter()
        if use_graph and self.graph is None:
            self.graph = False
            try:
                with self.stream:
                    self.stream.begin_capture()
                    try:
                        self._enqueue_batch()
                    finally:
                        self.graph = self.stream.end_capture()
            except Exception:  # noqa: BLE001 - no graphs here: launch the kernels one by one
                self.graph = False
                self.stream = self.xp.cuda.Stream(non_blocking=True)
        with self.stream:
            if use_graph and self.graph:
                self.graph.launch(self.stream)
            else:
                self._enqueue_batch()
            ev = self.xp.cuda.Event(block=False, disable_timing=True)
            ev.record(self.stream)
        self.t_launch += time.perf_counter() - t0
        return ev

    def stream_synchronize(self) -> None:
        """Wait for everything queued on the grower's stream."""
        if self.stream is not None:
            self.stream.synchronize()

    def reads_event(self):
        """An event recorded now on this thread's current stream of the grower's device: behind the
        reads of the maps that the caller queued there (the fusion)."""
        with self.be.activate():
            ev = self.xp.cuda.Event(block=False, disable_timing=True)
            ev.record()
        return ev

    def figures(self, b: int):
        ring = self.be.asnumpy(self.ring) if self.host_ring is None else self.host_ring
        r = ring[4 * (b % _RING):4 * (b % _RING) + 4]
        return int(r[0]), int(r[1]), int(r[2]), int(r[3])

    def depth_now(self) -> np.ndarray:
        if self.stream is not None:
            self.stream.synchronize()
        return self.be.asnumpy(self.rh)

    def prefault(self) -> None:
        """The host arrays the maps will come down into, allocated and touched by the copy threads
        now (while the device grows and the host waits), so the download is a plain copy."""
        if not self.emu and self.host_out is None:
            recs = (self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters)
            # + samples per view, + the control block (its tried count comes down with the maps)
            specs = [(a.shape, a.dtype) for a in recs] + [((len(self.g.refs),), np.int32), (self.ctrl.shape, np.int32)]
            be, pinned = self.be, use_pinned()

            def alloc():
                with be.activate():  # the run's device: page-locked for its context, no context on device 0
                    return host_arrays(specs, pinned)

            self.host_out = _background().submit(alloc)

    def _out(self) -> list:
        """The maps' host arrays and the samples' (one per view): from :meth:`prefault`, else new."""
        if self.host_out is None:
            recs = (self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters)
            return [np.empty(a.shape, a.dtype) for a in recs] + [np.empty(len(self.g.refs), np.int32),
                                                                  np.empty(self.ctrl.shape, np.int32)]
        outs, jobs = self.host_out.result()
        self.host_out = None
        for j in jobs:
            j.result()
        return outs

    def _count(self):
        """Each view's samples (finite depths), counted on the device on the grower's stream."""
        xp, g, i32 = self.xp, self.g, np.int32
        k = kernel(self.be, "mvs_queue.cu", "mvs_count_samples", {"LEVELS": g.levels})
        with self.stream:
            counts = xp.zeros(len(g.refs), xp.int32)
            k(((g.total + _CHUNK - 1) // _CHUNK,), (_NT,), (self.rh, i32(g.total), self.goffs, i32(len(g.refs)),
                                                           counts))
        return counts

    def records(self):
        """The maps on the host (and, on the GPU, each view's samples counted on the device:
        ``self.counts``)."""
        recs = (self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters)
        if self.emu:  # copies: the emulator's arrays may be the grower's own, which a reused grower overwrites
            self.tried = int(self.be.asnumpy(self.ctrl)[5])
            return tuple(np.array(self.be.asnumpy(x)) for x in recs)
        out = self._out()
        pinned = all(is_pinned(o) for o in out)  # asked before the count is queued: no gap after it
        counts = self._count()
        # straight into page-locked arrays (one DMA each, the tried count with them: no wait and
        # read of its own), else pinned staging and threaded copies
        if pinned:
            direct_to_host((*recs, counts, self.ctrl), self.stream, out)
            self.stream.synchronize()
            *host, c_host, ctrl = out
        else:
            *host, c_host, ctrl = to_host((*recs, counts, self.ctrl), self.stream, out=out)
        self.tried = int(ctrl[5])
        self.counts = [int(c) for c in c_host]
        return tuple(host)

    def records_later(self):
        """The records on the device and their download, started now (``(device records, host
        records being filled, future)``): the host goes on (to fusion, which reads the device's)
        while they come down, straight into the page-locked arrays of :meth:`prefault` (one DMA
        each, queued on the grower's stream), else in a background thread through the staging
        halves and the copy threads."""
        xp = self.xp
        counts = self._count()  # each view's samples, counted on the device (they come down with the maps)
        self.stream.synchronize()
        self.tried = int(self.be.asnumpy(self.ctrl)[5])
        recs = (self.rh, self.rhs, self.rht, self.rc, self.nrm, self.iters)
        *host, c_host, _ctrl = self._out()
        be, stream = self.be, self.stream
        if all(is_pinned(h) for h in (*host, c_host)):
            # one DMA each into page-locked arrays, queued behind the count: nothing for a thread
            direct_to_host((*recs, counts), stream, [*host, c_host])
            done = xp.cuda.Event(block=False, disable_timing=True)
            done.record(stream)
            return recs, host, _Copied(done, (recs, counts), c_host)

        def download():
            with be.activate():
                to_host((*recs, counts), stream, out=[*host, c_host])
            return [int(c) for c in c_host]

        return recs, host, _background().submit(download)


class _Copied:
    """The future of a download queued on a stream (:func:`transfer.direct_to_host`): ``result``
    waits for its event and gives each view's sample count; it holds the device arrays until then."""

    def __init__(self, event, keep, counts):
        self.event, self.keep, self.counts = event, keep, counts

    def result(self) -> list:
        self.event.synchronize()
        self.keep = None
        return [int(c) for c in self.counts]


#: one thread that runs the maps' downloads behind the host's back (transfer.to_host)
_background = _memo.LazyExecutor(1, "gpulab-mvs-download")


class _Pending:
    """A group's maps on their way down: :meth:`wait` joins the download, then counts each
    map's samples into its stats and drops the device's copies. Thread-safe: a second caller
    (say the window reading a map while the worker fuses) waits until the download has ended.

    ``on_done(event)`` (the grower back into its cache) runs once both the download has ended and
    the caller has let go of the device's maps (:meth:`release`, with ``record()``'s event behind
    its reads): a map read on another thread while the caller still fuses from the device's copies
    must not hand the grower to a second run of the same inputs, whose reset would clear the maps
    under the fusion."""

    def __init__(self, future, maps, on_done=None, record=None):
        self.future, self.maps, self.on_done, self.record = future, maps, on_done, record
        self.wait_s = 0.0
        self._lock = threading.Lock()
        self._left = 2  # the download joined, the caller's reads released
        self._released = False
        self._after = None

    def wait(self) -> None:
        with self._lock:
            if self.future is None:
                return
            t = time.perf_counter()
            counts = self.future.result()
            self.wait_s = time.perf_counter() - t
            for mp, c in zip(self.maps, counts, strict=True):
                mp.stats["samples"] = c
                mp.stats["download_wait_s"] = self.wait_s
                mp.pending = mp.device = None
            self.future = None
            self._step()

    def release(self) -> None:
        """The caller has queued its last read of the device's maps (on its current stream)."""
        with self._lock:
            if self._released:
                return
            self._released = True
            self._after = self.record() if self.record is not None else None
            self._step()

    def _step(self) -> None:
        self._left -= 1
        if self._left == 0 and self.on_done is not None:  # the grower's device maps are free for its next run
            self.on_done(self._after)
            self.on_done = None


def release_device_reads(maps) -> None:
    """``grow_depth_maps(keep_device=True)``: the caller has queued its last read of ``maps``' device
    copies (``DepthMap.device``, on its current stream). Their grower goes back to its cache (for
    the next run of the same inputs) once the download has ended too, and that run's reset waits, on
    the device, for an event recorded now behind those reads. Until then a second run of the same
    inputs (another thread) makes a grower of its own. :func:`gpu_kernels.mvs.stereo.finish_maps`
    calls it; a caller that never does only loses the reuse."""
    holds = {}
    for m in maps:
        h = m.hold
        if h is not None:
            holds[id(h)] = h
            m.hold = None
    for h in holds.values():
        h.release()


#: idle device growers by what they were set up from (:func:`_grower_key`): a re-run of the same
#: views with the same inputs and parameters resets one (:meth:`_DeviceGrower.reset`) instead of
#: allocating, uploading, synchronising and capturing its batch again (``GROWER_CACHE = False``:
#: a new one every time, as before session 7)
GROWER_CACHE = True
_GROWERS: collections.OrderedDict = collections.OrderedDict()
_GROWERS_SIZE = 2
_GROWERS_LOCK = threading.Lock()
#: captured batches a grower keeps for other parameters (a user going back to an earlier value)
_GRAPHS = 4


def _grower_key(be, tx, g, masks, geo, nbr, refid, params, batch_size, nv, tpp, textured) -> tuple:
    """What a :class:`_DeviceGrower`'s buffers and first states are made from: the textures and the
    seeds' pixels by object (a cached grower holds both, so neither identity can be taken by
    another object meanwhile), the masks by content, the geometry tables, the sizes and the
    parameters the first states or the kernels' compiled constants read. The others (thresholds,
    iterations, attempts) are only the captured batch's arguments (:meth:`_DeviceGrower.retune`)."""
    msig = None
    if masks is not None and any(masks[r] is not None for r in g.refs):
        msig = _memo.digest([None if masks[r] is None else np.asarray(masks[r], bool) for r in g.refs])
    return (be.label, id(tx), id(g.seed_key), id(g.seed_z), msig, geo.tobytes(), nbr.tobytes(), refid.tobytes(),
            int(params.window), float(params.min_ref_std), g.levels, int(batch_size), int(nv), int(tpp),
            sample_split(tpp), textured is None)


def _batch_key(g, params, max_attempts) -> tuple:
    """The values a captured batch holds beyond its grower's arrays."""
    return (params, int(max_attempts), float(g.lo), float(g.scale), int(g.mi_seed), int(g.mi_grow),
            float(g.cos_slant), bool(g.retry))


def _checkout(key):
    """An idle grower made from ``key`` (taken out of the cache: one run uses it at a time), or None."""
    with _GROWERS_LOCK:
        return _GROWERS.pop(key, None)


def _checkin(gr, after_reads=None) -> None:
    """``gr`` back into the cache once its maps are on the host (the least recently used beyond
    :data:`_GROWERS_SIZE` go); ``after_reads``: an event its next reset waits for (the caller's
    last reads of its maps on the device). A grower of a stale set-up's textures
    (:func:`drop_growers_of`) is not given back."""
    if gr.cache_key is None:
        return
    gr.after_reads = after_reads
    with _GROWERS_LOCK:
        if _is_stale(gr.tx):
            return
        _GROWERS[gr.cache_key] = gr
        _GROWERS.move_to_end(gr.cache_key)
        while len(_GROWERS) > _GROWERS_SIZE:
            _GROWERS.popitem(last=False)


def drop_growers() -> None:
    """Forget the idle growers (their device buffers go back to CuPy's pool)."""
    with _GROWERS_LOCK:
        _GROWERS.clear()


#: id -> weak reference of the textures of set-ups gone stale (:func:`drop_growers_of`; an entry
#: goes with its textures; ViewTextures, a dataclass with ``eq``, has no hash for a WeakSet)
_STALE: dict = {}


def _is_stale(tx) -> bool:
    ref = _STALE.get(id(tx))
    return ref is not None and ref() is tx


def drop_growers_of(textures) -> None:
    """A set-up went stale (its inputs changed in place; :meth:`memo.SetupMemo.forget`): forget the
    idle growers made from its ``textures`` (their keys name the textures by object, so no later
    call can take them: they only held device memory until evicted), and keep one still in use
    (another thread's run of the same set-up) from going back to the cache."""
    if textures is None:
        return
    i = id(textures)
    with _GROWERS_LOCK:
        _STALE[i] = weakref.ref(textures, lambda r, i=i: _STALE.get(i) is r and _STALE.pop(i, None))
        for k in [k for k, gr in _GROWERS.items() if gr.tx is textures]:
            del _GROWERS[k]


_memo.on_release(drop_growers)
_memo.on_stale(lambda prep: drop_growers_of(getattr(prep, "textures", None)))


def _maps(g: _Group, neighbors, rh, rhs, rht, rc, nrm, iters) -> list[DepthMap]:
    out = []
    for a, r in enumerate(g.refs):
        H, W = g.sizes[a]
        sl = slice(g.offs[a], g.offs[a + 1])
        out.append(DepthMap(r, rh[sl].reshape(H, W), nrm[sl].reshape(H, W, 3), rc[sl].reshape(H, W),
                            iters[sl].reshape(H, W), rhs[sl].reshape(H, W), rht[sl].reshape(H, W),
                            list(neighbors[a])))
    return out


def grow_depth_maps(textures, images9, cameras, refs, neighbors, seeds, *, masks=None,
                    params: OptimizeParams = OptimizeParams(), batch_size: int | None = None,
                    max_attempts: int = DEFAULT_MAX_ATTEMPTS, max_slant_deg: float = DEFAULT_MAX_SLANT_DEG,
                    depth_ranges=None, seed_min_iter: int = DEFAULT_SEED_MIN_ITER, overlap: bool | None = None,
                    device=None, progress=None, callback=None, work_hint: float | None = None,
                    graph: bool = True, keep_device: bool = False) -> list[DepthMap]:
    """Grow the depth maps of the reference views ``refs`` together.

    Parameters
    ----------
    textures : ViewTextures
        :func:`pack_views` of (at least) the references and their neighbours.
    images9 : dict or None
        Not needed any more (the textured pixels are found in ``textures``); kept for callers.
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
        Ignored (the two host-side groups it switched are gone: the queue lives on the device).
    callback : callable, optional
        Called after each batch as ``callback(maps, info)`` with the live :class:`DepthMap`
        objects (do not modify; on the GPU their depth is refreshed at most every 0.1 s) and
        ``info = {"batch", "samples", "queued"}``.
    work_hint : float, optional
        The share of the free pixels the growing is expected to try (from views grown
        before; 0.5 when None): the progress bar's scale.
    graph : bool
        On the GPU, replay each batch as one captured CUDA graph (else four launches).
    keep_device : bool
        On the GPU, return at once, with the maps still coming down in a background thread: each
        map's ``device`` holds its depth, normal and confidence on the device (for the fusion, which
        then runs while they come down) until :meth:`DepthMap.wait`, which must be called (on any
        one map of the call) before its arrays are read; ``stats["samples"]`` is set then.

    Returns
    -------
    list of DepthMap, one per reference, with ``stats`` (samples, batches, time split:
    ``queue_s`` is the host's own time in the loop (launches, bookkeeping), ``wait_s`` the
    time it waited for the device, ``setup_s`` the state and upload before it).
    """
    del images9, overlap
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
    t_start = time.perf_counter()
    dev = be.is_gpu
    with be.activate():
        g = _group(cameras, refs, neighbors, seeds, params, max_slant_deg, depth_ranges, seed_min_iter)
        textured = None  # on the GPU: found with the first states, in one launch
        if not dev or not flag("GPULAB_MVS_INIT_KERNEL", True):
            textured = []
            for r in refs:
                H, W = cameras[r].height, cameras[r].width
                o = int(textures.pix_offset[r])
                rgb = textures.flat[o:o + H * W, :3].reshape(H, W, 3)
                textured.append(textured_mask(rgb, params.window, params.min_ref_std, device=be if dev else None))
        geo, nbr, refid = build_geometry(cameras, refs, neighbors, tpp)
        if dev:
            gkey = _grower_key(be, textures, g, masks, geo, nbr, refid, params, batch_size, nv, tpp,
                               textured) if GROWER_CACHE else None
            gr = _checkout(gkey) if gkey is not None else None
            if gr is not None:
                gr.retune(g, params, max_attempts)
                gr.reset()
            else:
                gr = _DeviceGrower(be, textures, g, textured, masks, geo, nbr, refid, params, batch_size,
                                   max_attempts, nv, tpp, keep=gkey is not None)
                gr.cache_key = gkey
        else:
            gr = _HostGrower(g, textured, masks, params, batch_size, max_attempts)
        if gr.n_seeds == 0:
            raise MVSInputError("no seed point projects into a reconstructable pixel of the reference view(s): "
                                "the scene has no usable sparse points (check the cameras, masks or depth range)")
        maps = []
        if not dev:
            maps = _maps(g, neighbors, *gr.records())
        elif callback is not None:
            maps = _maps(g, neighbors, *_records(np, g.total))
        t_setup = time.perf_counter() - t_start
        scale = max(work_hint or 0.5, 0.05) * gr.total_free
        t_wait = 0.0
        t_loop = time.perf_counter()

        def report(batch, samples, queued, tried):
            if callback is not None:
                callback(maps, {"batch": batch, "samples": samples, "queued": queued})
            progress.update(min(0.97, tried / scale), f"batch {batch}: {samples:,} samples, {queued:,} queued")

        if dev:
            use_graph = graph and flag("GPULAB_MVS_GRAPH", True)
            inflight: collections.deque = collections.deque()
            nxt, stop, last_preview, tried = 0, False, 0.0, 0
            ahead = max(1, min(int(os.environ.get("GPULAB_MVS_AHEAD", "").strip() or _AHEAD), _RING))
            while True:
                while not stop and len(inflight) < ahead:
                    inflight.append((nxt, gr.launch(use_graph)))
                    nxt += 1
                if nxt == ahead:
                    gr.prefault()  # the maps' host arrays, while the first batches run
                    _memo.run_deferred()  # the caller's background work (the set-up's content check)
                if not inflight:
                    break
                b, ev = inflight.popleft()
                if ev is not None:
                    tw = time.perf_counter()
                    ev.synchronize()
                    t_wait += time.perf_counter() - tw
                n_items, avail, samples, _bno = gr.figures(b)
                if n_items == 0:
                    stop = True
                    continue
                gr.batches += 1
                tried += n_items
                gr.samples = samples
                if callback is not None and time.perf_counter() - last_preview >= 0.1:
                    tw = time.perf_counter()
                    d = gr.depth_now()
                    t_wait += time.perf_counter() - tw
                    for a, mp in enumerate(maps):
                        H, W = g.sizes[a]
                        mp.depth = d[g.offs[a]:g.offs[a + 1]].reshape(H, W)
                    last_preview = time.perf_counter()
                try:
                    report(gr.batches, samples, avail - n_items, tried)
                except BaseException:  # a cancel, a stale set-up (memo.StaleSetup): the queued batches
                    gr.stream_synchronize()  # still write its arrays; they land before the pool has them
                    raise
            t_loop_end = time.perf_counter()
            pend = None
            if keep_device and not gr.emu:
                recs, host, fut = gr.records_later()
                maps = _maps(g, neighbors, *host)
                pend = _Pending(fut, maps, on_done=lambda ev: _checkin(gr, ev), record=gr.reads_event)
                rh, nrm, rc = recs[0], recs[4], recs[3]
                for a, mp in enumerate(maps):
                    H, W = g.sizes[a]
                    sl = slice(int(g.offs[a]), int(g.offs[a + 1]))
                    mp.device = (rh[sl].reshape(H, W), nrm[sl].reshape(H, W, 3), rc[sl].reshape(H, W))
                    mp.pending = mp.hold = pend
            else:
                maps = _maps(g, neighbors, *gr.records())
                _checkin(gr)  # its maps are on the host (records waited for them)
            t_download = time.perf_counter() - t_loop_end
        else:
            while True:
                b = gr.select()
                if b is None:
                    break
                tw = time.perf_counter()
                res = launch_optimize(textures, geo, nbr, refid, b["a"].astype(np.int32), b["xy"], b["init"], nv=nv,
                                      params=params, item_min_iter=b["mi"], device=be).result()
                t_wait += time.perf_counter() - tw
                gr.apply(b, res)
                report(gr.batches, gr.samples, gr.queued - len(b["key"]), gr.tried)
            t_loop_end = time.perf_counter()
            t_download = 0.0
            pend = None
    total_s = time.perf_counter() - t_start
    loop_s = t_loop_end - t_loop
    stats = {"seeds": gr.n_seeds, "batches": gr.batches, "tried": int(gr.tried), "free": int(gr.total_free),
             "time_s": total_s, "wait_s": t_wait, "setup_s": t_setup, "queue_s": max(loop_s - t_wait, 0.0),
             "launch_s": getattr(gr, "t_launch", 0.0), "download_s": t_download, "loop_s": loop_s,
             "views_together": len(refs), "groups": 1, "neighbors": nv, "levels": g.levels, "retry": g.retry,
             "graph": bool(dev and getattr(gr, "graph", None))}
    stats["optimize_s"] = t_wait if not dev else loop_s
    counts = getattr(gr, "counts", None)  # counted on the device (GPU, maps downloaded at once)
    for a, mp in enumerate(maps):
        n = None if pend is not None else (counts[a] if counts is not None else mp.n_samples)
        mp.stats = {"samples": n, **stats}
    return maps
