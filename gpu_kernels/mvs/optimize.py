"""Per-pixel depth, normal and colour-scale optimisation (Goesele et al. 2007, Section 4 of the
CUDA port): a batch of pixels in one call, on the GPU (``cuda/mvs_optimize.cu``, one thread per
(pixel, neighbour view), per-pixel warp-shuffle reductions) or on the CPU (NumPy, the same
arithmetic in float32, vectorised over pixels x views x window samples).

The unknowns of a pixel ``(s, t)`` of the reference view are the depth ``h`` along its ray
(z-depth: rays are scaled to camera ``z = 1``), the depth offsets ``hs``, ``ht`` per pixel step
in ``s`` and ``t`` (the window's plane; the normal follows from them, see
:func:`normals_from_offsets`) and an RGB colour scale per neighbour view. The n x n window is
sampled bilinearly in the neighbour views (image and gradient images), nearest in the
reference view. Iteration ``it`` is a depth-only step, every fifth a joint depth + normal step
(3x3 normal equations) followed by a colour-scale update; NCC per view decides view removal
(below ``ncc_accept``), failure (fewer than ``min_views`` active views) and convergence (no
active NCC changes by ``eps``). Confidence = mean NCC of the active views.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.mvs.optimize import OptimizeParams
>>> OptimizeParams().window, OptimizeParams().min_views
(5, 4)
"""

from __future__ import annotations

import threading
from dataclasses import InitVar, dataclass

import numpy as np

from gpu_kernels.backend import Backend, get_backend, kernel
from gpu_kernels.mvs.camera import Camera, MVSInputError
from gpu_kernels.mvs.transfer import to_device, wait_for_queued

__all__ = [
    "DEFAULT_WINDOW",
    "DEFAULT_MIN_VIEWS",
    "DEFAULT_NCC_ACCEPT",
    "DEFAULT_MAX_ITER",
    "DEFAULT_EPS",
    "DEFAULT_MIN_ITER",
    "DEFAULT_SEED_MIN_ITER",
    "DEFAULT_DROP_FROM",
    "DEFAULT_STEP_PX",
    "DEFAULT_MIN_REF_STD",
    "MAX_NEIGHBORS",
    "ST_TOO_FEW_VIEWS",
    "ST_TEXTURELESS",
    "ST_BAD_DEPTH",
    "OptimizeParams",
    "ViewTextures",
    "prepare_image",
    "pack_views",
    "pair_geometry",
    "build_geometry",
    "optimize_pixels",
    "launch_optimize",
    "normals_from_offsets",
    "threads_per_pixel",
    "sample_split",
]

from gpu_kernels.mvs import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: window size n (n x n pixels), the paper's and Goesele's 5
DEFAULT_WINDOW = _d.WINDOW
#: a pixel fails with fewer active views (the CUDA paper: "at least four active views")
DEFAULT_MIN_VIEWS = _d.MIN_VIEWS
#: NCC a view must keep to stay active
DEFAULT_NCC_ACCEPT = _d.NCC_ACCEPT
#: iterations (Goesele: 20)
DEFAULT_MAX_ITER = _d.MAX_ITER
#: convergence: no active view's NCC changes by this much
DEFAULT_EPS = 1e-3
#: iterations before convergence may be declared (5: after the first joint depth + normal
#: step, so a seed's fronto-parallel start gets its normal at least once)
DEFAULT_MIN_ITER = 5
#: the same for a seed, which starts fronto-parallel: three joint steps get its normal
#: (on a plane slanted 35-70 degrees, a 2 % depth error and a fronto-parallel start end at a
#: median 0.04 % depth and 2 degrees normal error after 15 iterations, 0.26 % and 18 degrees
#: after 5)
DEFAULT_SEED_MIN_ITER = 15
#: passes before views below ``ncc_accept`` are removed (0: at once; a view whose window
#: leaves the image is removed at once regardless)
DEFAULT_DROP_FROM = 2
#: the largest step per iteration, in pixels of motion in the neighbour views
DEFAULT_STEP_PX = 1.0
#: reference windows whose RGB standard deviation (images in [0, 1]) is below this are not
#: reconstructed: dark, smooth backgrounds (a black backdrop, vignetting) match at any depth
#: and the region would leak into them. On templeSparseRing (H100 sweep, benchmarks/RESULTS.md)
#: 0.02 kept 97k samples per view but only 82.5 % of the fused points inside the object's
#: bounding box, 0.03 76.5k and 96.7 %, 0.04 74.4k and 98.5 %.
DEFAULT_MIN_REF_STD = 0.04
#: neighbour views per pixel the kernel supports (threads per pixel <= 16)
MAX_NEIGHBORS = _d.MAX_NEIGHBORS

ST_TOO_FEW_VIEWS = -1
ST_TEXTURELESS = -2
ST_BAD_DEPTH = -3


@dataclass(frozen=True)
class OptimizeParams:
    window: int = DEFAULT_WINDOW
    min_views: int = DEFAULT_MIN_VIEWS
    ncc_accept: float = DEFAULT_NCC_ACCEPT
    max_iter: int = DEFAULT_MAX_ITER
    eps: float = DEFAULT_EPS
    min_iter: int = DEFAULT_MIN_ITER
    drop_from: int = DEFAULT_DROP_FROM
    step_px: float = DEFAULT_STEP_PX
    min_ref_std: float = DEFAULT_MIN_REF_STD

    def check(self) -> None:
        if self.window < 3 or self.window % 2 == 0 or self.window > 11:
            raise MVSInputError(f"window must be an odd number from 3 to 11, got {self.window}")
        if not 1 <= self.min_views <= MAX_NEIGHBORS:
            raise MVSInputError(f"min_views must be 1..{MAX_NEIGHBORS}, got {self.min_views}")
        if not -1.0 <= self.ncc_accept < 1.0:
            raise MVSInputError(f"ncc_accept must be in [-1, 1), got {self.ncc_accept}")
        if self.max_iter < 1 or self.max_iter > 1000:
            raise MVSInputError(f"max_iter must be 1..1000, got {self.max_iter}")
        if not self.step_px > 0:
            raise MVSInputError(f"step_px must be positive, got {self.step_px}")


# ----------------------------------------------------------------------------- images
def prepare_image(img: np.ndarray) -> np.ndarray:
    """``(H, W, 9)`` float32: RGB in [0, 1], then d/dx and d/dy of each channel (central
    differences, zero at the border)."""
    a = np.asarray(img)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    a = a[..., :3]
    if a.dtype == np.uint8:
        f = a.astype(np.float32) / 255.0
    elif a.dtype == np.uint16:
        f = a.astype(np.float32) / 65535.0
    elif a.dtype == np.bool_:
        f = a.astype(np.float32)
    else:
        f = a.astype(np.float32)
    out = np.zeros(f.shape[:2] + (9,), np.float32)
    out[..., :3] = f
    out[:, 1:-1, 3:6] = 0.5 * (f[:, 2:] - f[:, :-2])
    out[1:-1, :, 6:9] = 0.5 * (f[2:] - f[:-2])
    return out


@dataclass
class ViewTextures:
    """Every view's image and gradients, packed for the optimiser on one backend.

    ``backend`` is an init-only value (a property, not a field), so that walking the fields
    (the stage cache's size count) meets arrays only, never the array module."""

    backend_: InitVar[Backend]
    flat: object          # CPU: (P, 9) float32; GPU: (P, 12) float32 (three float4 per pixel)
    pix_offset: np.ndarray  # (n_views,) int64 pixel offsets
    widths: np.ndarray
    heights: np.ndarray
    dev_ofs: object = None  # GPU copies of the offsets (in float4 units), widths, heights
    dev_w: object = None
    dev_h: object = None
    images8: dict | None = None  # GPU: view -> its 8-bit image as uploaded (the fusion's colours)

    def __post_init__(self, backend_: Backend) -> None:
        self._backend = backend_
        #: GPU: an event recorded behind the packing (on the packing thread's stream), which a
        #: grower made on another thread waits for (:func:`.transfer.wait_for_queued`)
        self.ready = None

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def nbytes(self) -> int:
        return int(self.flat.nbytes)


def _packs_on_device(a: np.ndarray) -> bool:
    """8-bit grey or RGB(A...) images are packed by the device (``cuda/mvs_pack.cu``); others
    (16-bit, float, two channels) by :func:`prepare_image` on the host."""
    if a.dtype != np.uint8 or a.ndim not in (2, 3) or 0 in a.shape:
        return False
    return a.ndim == 2 or a.shape[2] == 1 or a.shape[2] >= 3


def pack_views(images, *, device=None, views=None, sync: bool = True) -> ViewTextures:
    """Pack views (all, or the indices ``views``; the others get an empty slot) for
    :func:`optimize_pixels`. ``sync=False``: return without waiting for the device (the caller
    synchronises it before any other stream reads the textures, as the grower's set-up does)."""
    be = get_backend(device)
    n = len(images)
    use = set(range(n)) if views is None else set(int(v) for v in views)
    W = np.array([images[i].shape[1] if i in use else 0 for i in range(n)], np.int32)
    H = np.array([images[i].shape[0] if i in use else 0 for i in range(n)], np.int32)
    npx = W.astype(np.int64) * H
    ofs = np.concatenate([[0], np.cumsum(npx)[:-1]]).astype(np.int64)
    total = int(npx.sum())
    if be.is_gpu:
        xp = be.xp
        with be.activate():
            flat = xp.zeros((max(total, 1), 12), xp.float32)
            k_pack = None
            # the 8-bit images go up as they are, together (pinned staging and copy threads,
            # transfer.py, from 4 MiB on); the device converts, differentiates and interleaves
            # them (cuda/mvs_pack.cu: the same values as prepare_image)
            dev8 = [i for i in sorted(use) if _packs_on_device(np.asarray(images[i]))]
            up8 = dict(zip(dev8, to_device([np.asarray(images[i]) for i in dev8], xp, min_bytes=4 << 20),
                           strict=True))
            for i in sorted(use):
                a = np.asarray(images[i])
                if i in up8:
                    if k_pack is None:
                        k_pack = kernel(be, "mvs_pack.cu", "mvs_pack_view")
                    h, w = a.shape[:2]
                    c = 1 if a.ndim == 2 else a.shape[2]
                    img = up8[i]
                    k_pack(((h * w + 255) // 256,), (256,), (img, np.int32(h), np.int32(w), np.int32(c),
                                                             flat[ofs[i]:ofs[i] + npx[i]]))
                    continue
                p = prepare_image(a).reshape(-1, 9)
                buf = np.zeros((len(p), 12), np.float32)
                buf[:, 0:3], buf[:, 4:7], buf[:, 8:11] = p[:, 0:3], p[:, 3:6], p[:, 6:9]
                flat[ofs[i]:ofs[i] + npx[i]] = xp.asarray(buf)
            tx = ViewTextures(be, flat, ofs, W, H, xp.asarray(ofs * 3), xp.asarray(W), xp.asarray(H), up8)
            if xp is not np:
                tx.ready = xp.cuda.Event(block=False, disable_timing=True)
                tx.ready.record()
                # the optimiser runs on non-blocking streams, which do not wait for the null stream
                # (this thread's streams only: not the device, where another thread may capture)
                if sync:
                    wait_for_queued(xp)
            return tx
    flat = np.zeros((max(total, 1), 9), np.float32)
    for i in sorted(use):
        flat[ofs[i]:ofs[i] + npx[i]] = prepare_image(images[i]).reshape(-1, 9)
    return ViewTextures(be, flat, ofs, W, H)


# ----------------------------------------------------------------------------- geometry
def pair_geometry(ref: Camera, other: Camera) -> tuple[np.ndarray, np.ndarray]:
    """``(H, e)``: the pixel of ``other`` seeing reference pixel ``(u, v)`` at depth ``d`` is
    the dehomogenised ``e + d * H @ (u, v, 1)``."""
    M = other.K @ other.R
    Hm = M @ ref.R.T @ (ref.Kinv if isinstance(ref, _RefCamera) else np.linalg.inv(ref.K))
    e = other.K @ (other.R @ ref.center + other.t)
    return Hm, e


class _RefCamera:
    """What :func:`pair_geometry` reads of a reference camera, computed once for its pairs."""

    def __init__(self, cam):
        self.K, self.R = cam.K, cam.R
        self.center = cam.center
        self.Kinv = np.linalg.inv(cam.K)


#: the last few :func:`build_geometry` tables, by the cameras' values (a live edit grows the
#: same views with the same cameras again: 1-2 ms of small matrix products each time)
_GEO_MEMO: dict = {}
_GEO_MEMO_SIZE = 8
_GEO_LOCK = threading.Lock()  # runs in several threads (batch jobs) share the memo


def _camera_bytes(cam) -> bytes:
    return b"".join(np.ascontiguousarray(x, np.float64).tobytes() for x in (cam.K, cam.R, cam.t))


def build_geometry(cameras, refs, neighbors, tpp: int):
    """Tables for a batch over several reference views: ``geo (len(refs), tpp, 12)`` float32,
    ``nbr (len(refs), tpp)`` int32 (-1 where a slot is empty), ``refid`` int32.

    The same cameras (by value), references, neighbours and ``tpp`` give the same tables from a
    memo of the last :data:`_GEO_MEMO_SIZE` (copies: the caller may write them)."""
    used = sorted({int(r) for r in refs} | {int(v) for nb in neighbors for v in list(nb)[:tpp]})
    key = (int(tpp), tuple(int(r) for r in refs), tuple(tuple(int(v) for v in list(nb)[:tpp]) for nb in neighbors),
           tuple((v, _camera_bytes(cameras[v])) for v in used))
    with _GEO_LOCK:
        hit = _GEO_MEMO.get(key)
    if hit is None:
        hit = _build_geometry(cameras, refs, neighbors, tpp)
        with _GEO_LOCK:
            while len(_GEO_MEMO) >= _GEO_MEMO_SIZE:
                _GEO_MEMO.pop(next(iter(_GEO_MEMO)))
            _GEO_MEMO[key] = hit
    return tuple(x.copy() for x in hit)


def _build_geometry(cameras, refs, neighbors, tpp: int):
    geo = np.zeros((len(refs), tpp, 12), np.float32)
    nbr = np.full((len(refs), tpp), -1, np.int32)
    for a, r in enumerate(refs):
        ref = _RefCamera(cameras[r])  # K^-1 and the centre once per reference (the same values)
        for k, v in enumerate(neighbors[a][:tpp]):
            Hm, e = pair_geometry(ref, cameras[v])
            geo[a, k, :9] = Hm.reshape(-1)
            geo[a, k, 9:] = e
            nbr[a, k] = v
    return geo, nbr, np.asarray(refs, np.int32)


def threads_per_pixel(nv: int) -> int:
    t = 1
    while t < max(nv, 1):
        t *= 2
    return t


def sample_split(tpp: int) -> int:
    """Threads per (pixel, neighbour view) on the GPU: each takes every ``SPL``-th window sample,
    so a pixel's ``tpp * SPL`` threads fill a warp and an iteration's chain of dependent texture
    fetches is ``SPL`` times shorter (``GPULAB_MVS_SPL`` overrides it; 1 is the old layout)."""
    import os

    env = os.environ.get("GPULAB_MVS_SPL", "").strip()
    spl = int(env) if env else max(1, 32 // max(int(tpp), 1))
    spl = 1 << max(0, spl.bit_length() - 1)  # a power of two
    return max(1, min(spl, 32 // max(int(tpp), 1)))


# ----------------------------------------------------------------------------- normals
def normals_from_offsets(K: np.ndarray, u, v, h, hs, ht) -> np.ndarray:
    """Unit camera-frame normals (facing the camera, ``n_z < 0``) of the windows' planes.

    The window point of pixel ``(u, v)`` is ``P(u, v) = h(u, v) K^-1 (u, v, 1)`` with ``h``
    changing by ``hs`` per pixel in ``u`` and ``ht`` in ``v``; the normal is
    ``dP/du x dP/dv``.
    """
    Ki = np.linalg.inv(np.asarray(K, np.float64))
    u, v, h, hs, ht = (np.asarray(a, np.float64) for a in (u, v, h, hs, ht))
    ray = np.stack([u, v, np.ones_like(u)], -1) @ Ki.T
    Pu = hs[..., None] * ray + h[..., None] * Ki[:, 0]
    Pv = ht[..., None] * ray + h[..., None] * Ki[:, 1]
    n = np.cross(Pu, Pv)
    n /= np.maximum(np.linalg.norm(n, axis=-1, keepdims=True), 1e-30)
    flip = np.sum(n * ray, axis=-1) > 0
    n[flip] *= -1
    return n


# ----------------------------------------------------------------------------- the optimiser
def optimize_pixels(textures: ViewTextures, geo, nbr, refid, item_ref, item_xy, item_init, *,
                    nv: int, params: OptimizeParams = OptimizeParams(), item_min_iter=None, cache=None,
                    device=None):
    """Optimise a batch of pixels. All inputs are NumPy arrays (host).

    Parameters
    ----------
    textures : ViewTextures
        From :func:`pack_views` on the same backend.
    geo, nbr, refid
        From :func:`build_geometry` (``tpp`` = :func:`threads_per_pixel` of ``nv``).
    item_ref : (B,) int
        Row of ``geo`` / ``refid`` of each pixel.
    item_xy : (B, 2) int
        Pixel ``(s, t)``; must be at least ``window // 2`` pixels inside the reference image.
    item_init : (B, 3) float
        Initial ``(h, hs, ht)``.
    nv : int
        Neighbour slots in use (``<= MAX_NEIGHBORS``).
    item_min_iter : (B,) int, optional
        Per-pixel ``min_iter`` (default ``params.min_iter`` for all; seeds use more).
    cache : dict, optional
        Keeps the device copies of ``geo``, ``nbr``, ``refid`` between calls with the same
        ``geo`` object (region growing makes hundreds of calls).

    Returns
    -------
    dict of NumPy arrays: ``param (B, 3)``, ``conf (B,)``, ``iters (B,)``, ``status (B,)``
    (>= 0: success, the bit mask of the active views; < 0: ``ST_*`` failure codes) and
    ``ncc (B, tpp)`` (-2 for views not active at the end).
    """
    return launch_optimize(textures, geo, nbr, refid, item_ref, item_xy, item_init, nv=nv, params=params,
                           item_min_iter=item_min_iter, cache=cache, device=device).result()


class _Done:
    def __init__(self, res):
        self._res = res

    def result(self):
        return self._res


class _Pending:
    """A launched GPU batch; :meth:`result` waits for it (on its stream) and downloads."""

    def __init__(self, ob, B, tpp, stream):
        self.ob, self.B, self.tpp, self.stream = ob, B, tpp, stream

    def result(self):
        if self.stream is not None:
            with self.stream:
                o = self.ob.get()
        else:
            o = self.ob.get()
        return self.unpack(o)

    def unpack(self, o):
        B = self.B
        return {"param": o[:3 * B].reshape(B, 3), "conf": o[3 * B:4 * B], "iters": o[4 * B:5 * B].view(np.int32),
                "status": o[5 * B:6 * B].view(np.int32), "ncc": o[6 * B:].reshape(B, self.tpp)}


def launch_optimize(textures: ViewTextures, geo, nbr, refid, item_ref, item_xy, item_init, *,
                    nv: int, params: OptimizeParams = OptimizeParams(), item_min_iter=None, cache=None,
                    stream=None, device=None):
    """:func:`optimize_pixels` without waiting: returns an object whose ``result()`` gives the
    outputs. On the GPU the batch runs on ``stream`` (a ``cupy.cuda.Stream``; the current one
    if None) while the host goes on; on the CPU it is computed at once.
    """
    params.check()
    if not 1 <= nv <= MAX_NEIGHBORS:
        raise MVSInputError(f"the number of neighbour views must be 1..{MAX_NEIGHBORS}, got {nv}")
    be = get_backend(device)
    if item_min_iter is None:
        item_min_iter = np.full(len(item_ref), params.min_iter, np.int32)
    item_min_iter = np.asarray(item_min_iter, np.int32)
    if be.is_gpu != textures.backend.is_gpu:
        raise MVSInputError("the view textures were packed for another device")
    if len(item_ref) == 0:
        tpp = threads_per_pixel(nv)
        return _Done({"param": np.zeros((0, 3), np.float32), "conf": np.zeros(0, np.float32),
                      "iters": np.zeros(0, np.int32), "status": np.zeros(0, np.int32),
                      "ncc": np.zeros((0, tpp), np.float32)})
    if be.is_gpu:
        return _optimize_gpu(be, textures, geo, nbr, refid, item_ref, item_xy, item_init, item_min_iter, nv, params,
                             cache, stream)
    return _Done(_optimize_cpu(textures, geo, nbr, refid, item_ref, item_xy, item_init, item_min_iter, nv, params))


# ----------------------------------------------------------------------------- GPU
PIXELS_PER_BLOCK = 16

def _optimize_gpu(be, tx, geo, nbr, refid, item_ref, item_xy, item_init, item_min_iter, nv, prm, cache=None,
                  stream=None):
    xp = be.xp
    tpp = threads_per_pixel(nv)
    spl = sample_split(tpp)
    # 128 threads per block, the reference windows in (static, < 48 KiB) shared memory
    ppb = max(1, min((PIXELS_PER_BLOCK * 8) // (tpp * spl), (40 * 1024) // (prm.window ** 2 * 12)))
    B = len(item_ref)
    import contextlib

    with be.activate(), (stream if stream is not None and xp is not np else contextlib.nullcontext()):
        fn = kernel(be, "mvs_optimize.cu", "mvs_optimize", {"WIN": prm.window, "TPP": tpp, "SPL": spl, "PPB": ppb})
        tables = None if cache is None else cache.get("tables")
        if tables is None or tables[0] is not geo:
            tables = (geo, xp.asarray(np.ascontiguousarray(geo, np.float32)),
                      xp.asarray(np.ascontiguousarray(nbr, np.int32)),
                      xp.asarray(np.ascontiguousarray(refid, np.int32)))
            if cache is not None:
                cache["tables"] = tables
        _, d_geo, d_nbr, d_ref = tables
        # one upload of the integers (ref, x, y, min_iter) and one of the starts
        ib = np.empty(4 * B, np.int32)
        ib[:B] = item_ref
        ib[B:3 * B] = np.asarray(item_xy, np.int32).reshape(-1)
        ib[3 * B:] = item_min_iter
        d_ib = xp.asarray(ib)
        d_init = xp.asarray(np.ascontiguousarray(item_init, np.float32))
        # one download: param (3B), conf (B), iters (B), status (B), ncc (tpp B)
        ob = xp.empty((6 + tpp) * B, xp.float32)
        grid = ((B + ppb - 1) // ppb,)
        fn(grid, (tpp * spl * ppb,), (tx.flat, tx.dev_ofs, tx.dev_w, tx.dev_h, d_geo, d_nbr, d_ref, d_ib[:B],
                                 d_ib[B:3 * B], d_init, d_ib[3 * B:], np.int32(B), np.int32(nv),
                                 np.int32(prm.min_views), np.int32(prm.max_iter), np.int32(prm.drop_from),
                                 np.float32(prm.ncc_accept), np.float32(prm.eps), np.float32(prm.step_px),
                                 np.float32(prm.min_ref_std ** 2), ob[:3 * B], ob[3 * B:4 * B],
                                 ob[4 * B:5 * B].view(xp.int32), ob[5 * B:6 * B].view(xp.int32), ob[6 * B:]))
        if xp is np:  # the CPU emulator of the kernels (tests)
            return _Done(_Pending(ob, B, tpp, None).unpack(ob))
        return _Pending(ob, B, tpp, stream)


# ----------------------------------------------------------------------------- CPU
def _optimize_cpu(tx, geo, nbr, refid, item_ref, item_xy, item_init, item_min_iter, nv, prm):
    f32 = np.float32
    flat = tx.flat
    tpp = threads_per_pixel(nv)
    n = prm.window
    rad = (n - 1) // 2
    S = n * n
    q = np.arange(S)
    fi = (q % n - rad).astype(f32)
    fj = (q // n - rad).astype(f32)
    B = len(item_ref)
    item_ref = np.asarray(item_ref, np.int64)
    s = np.asarray(item_xy[:, 0], np.int64)
    t = np.asarray(item_xy[:, 1], np.int64)
    rv = np.asarray(refid, np.int64)[item_ref]
    Wr = tx.widths[rv].astype(np.int64)
    ridx = tx.pix_offset[rv][:, None] + (t[:, None] + fj.astype(np.int64)) * Wr[:, None] + s[:, None] + fi.astype(np.int64)
    R = flat[ridx][..., :3].astype(f32)                       # (B, S, 3)
    Nn = f32(3 * S)
    sx = R.reshape(B, -1).sum(1, dtype=f32)
    sxx = (R * R).reshape(B, -1).sum(1, dtype=f32)
    vx = (sxx - sx * sx / Nn).astype(f32)

    nbv = np.asarray(nbr, np.int64)[item_ref][:, :tpp]          # (B, tpp)
    nbv[:, nv:] = -1
    G = np.asarray(geo, f32)[item_ref][:, :tpp]                 # (B, tpp, 12)
    Wn = np.where(nbv >= 0, tx.widths[np.maximum(nbv, 0)], 1).astype(np.int64)
    Hn = np.where(nbv >= 0, tx.heights[np.maximum(nbv, 0)], 1).astype(np.int64)
    On = np.where(nbv >= 0, tx.pix_offset[np.maximum(nbv, 0)], 0).astype(np.int64)

    h = np.asarray(item_init[:, 0], f32).copy()
    hs = np.asarray(item_init[:, 1], f32).copy()
    ht = np.asarray(item_init[:, 2], f32).copy()
    status = np.zeros(B, np.int32)
    iters = np.zeros(B, np.int32)
    act = nbv >= 0
    ck = np.ones((B, tpp, 3), f32)
    ncc = np.full((B, tpp), -1.0, f32)
    ncc_prev = np.full((B, tpp), -2.0, f32)
    running = vx > f32(prm.min_ref_std ** 2) * Nn
    status[~running] = ST_TEXTURELESS
    fin_act = act.copy()

    u_all = (s[:, None].astype(f32) + fi[None, :])             # (B, S)
    v_all = (t[:, None].astype(f32) + fj[None, :])
    pass_ = 0
    while running.any():
        ids = np.flatnonzero(running)
        joint = ((pass_ + 1) % 5) == 0
        cupd = (pass_ % 5) == 0
        g = G[ids]
        a_ = act[ids]
        u = u_all[ids][:, None, :]
        v = v_all[ids][:, None, :]
        d = (h[ids, None, None] + fi[None, None, :] * hs[ids, None, None] + fj[None, None, :] * ht[ids, None, None])
        qx = g[..., 0, None] * u + g[..., 1, None] * v + g[..., 2, None]
        qy = g[..., 3, None] * u + g[..., 4, None] * v + g[..., 5, None]
        qz = g[..., 6, None] * u + g[..., 7, None] * v + g[..., 8, None]
        px = g[..., 9, None] + d * qx
        py = g[..., 10, None] + d * qy
        pz = g[..., 11, None] + d * qz
        okz = pz > f32(1e-12)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            iz = np.where(okz, f32(1) / np.where(okz, pz, f32(1)), f32(0)).astype(f32)
            x = (px * iz).astype(f32)
            y = (py * iz).astype(f32)
            Wf = Wn[ids][..., None].astype(f32)
            Hf = Hn[ids][..., None].astype(f32)
            inside = okz & (x >= 1) & (y >= 1) & (x < Wf - 2) & (y < Hf - 2)
            valid = a_ & inside.all(axis=2)
            x = np.where(inside, x, f32(1))
            y = np.where(inside, y, f32(1))
            dxdh = ((qx - x * qz) * iz).astype(f32)
            dydh = ((qy - y * qz) * iz).astype(f32)
        rate = np.sqrt(dxdh[..., S // 2] ** 2 + dydh[..., S // 2] ** 2).astype(f32)
        x0 = np.floor(x).astype(np.int64)
        y0 = np.floor(y).astype(np.int64)
        fx = (x - x0).astype(f32)
        fy = (y - y0).astype(f32)
        base = On[ids][..., None] + y0 * Wn[ids][..., None] + x0
        Wb = Wn[ids][..., None]
        c00, c10, c01, c11 = flat[base], flat[base + 1], flat[base + Wb], flat[base + Wb + 1]
        w00 = ((1 - fx) * (1 - fy))[..., None]
        w10 = (fx * (1 - fy))[..., None]
        w01 = ((1 - fx) * fy)[..., None]
        w11 = (fx * fy)[..., None]
        smp = (w00 * c00 + w10 * c10 + w01 * c01 + w11 * c11).astype(f32)   # (b, V, S, 9)
        Ik = smp[..., 0:3]
        D = (smp[..., 3:6] * dxdh[..., None] + smp[..., 6:9] * dydh[..., None]).astype(f32)
        Rr = R[ids][:, None, :, :]
        Sk = Ik.sum(2, dtype=f32)
        Skk = (Ik * Ik).sum(2, dtype=f32)
        Srk = (Rr * Ik).sum(2, dtype=f32)
        a_ = valid
        ckb = ck[ids]
        if cupd:
            newc = np.where(Skk > f32(1e-12), Srk / np.where(Skk > 0, Skk, f32(1)), f32(1)).astype(f32)
            ckb = np.where(a_[..., None], newc, ckb)
        sy = (ckb * Sk).sum(-1, dtype=f32)
        syy = (ckb * ckb * Skk).sum(-1, dtype=f32)
        sxy = (ckb * Srk).sum(-1, dtype=f32)
        vy = syy - sy * sy / Nn
        with np.errstate(divide="ignore", invalid="ignore"):
            nc = np.where(vy > f32(1e-12), (sxy - sx[ids, None] * sy / Nn) / np.sqrt(vx[ids, None] * np.maximum(vy, f32(1e-30))),
                          f32(-1)).astype(f32)
        nccb = np.where(a_, nc, ncc[ids])
        if pass_ >= prm.drop_from:
            a_ = a_ & (nccb >= f32(prm.ncc_accept))
        count = a_.sum(1)
        fail = count < prm.min_views
        moving = a_ & (np.abs(nccb - ncc_prev[ids]) >= f32(prm.eps))
        conv = (pass_ >= np.maximum(1, item_min_iter[ids])) & ~moving.any(1)
        fin = ~fail & (conv | (pass_ >= prm.max_iter))
        a_fin = a_ & (nccb >= f32(prm.ncc_accept))
        cnt_fin = a_fin.sum(1)
        # commit per-lane state
        ck[ids] = ckb
        ncc[ids] = nccb
        act[ids] = np.where(fin[:, None], a_fin, a_)
        ncc_prev[ids] = nccb
        fid = ids[fail]
        status[fid] = ST_TOO_FEW_VIEWS
        fin_act[fid] = a_[fail]
        ok_fin = fin & (cnt_fin >= prm.min_views)
        bad_fin = fin & (cnt_fin < prm.min_views)
        bits = (a_fin * (1 << np.arange(tpp))).sum(1).astype(np.int32)
        status[ids[ok_fin]] = bits[ok_fin]
        status[ids[bad_fin]] = ST_TOO_FEW_VIEWS
        fin_act[ids[fin]] = a_fin[fin]
        upd = ~fail & ~fin
        running[ids[~upd]] = False
        if not upd.any():
            pass_ += 1
            continue
        # ------------------------------------------------------------ the update
        u_ids = ids[upd]
        au = a_[upd]
        cnt = count[upd].astype(f32)
        mrate = (np.where(au, rate[upd], f32(0)).sum(1, dtype=f32) / cnt).astype(f32)
        with np.errstate(divide="ignore", invalid="ignore"):
            max_dh = np.where(mrate > 0, f32(prm.step_px) / np.where(mrate > 0, mrate, f32(1)), f32(0)).astype(f32)
        cu = ckb[upd]
        Du, Iu, Ru = D[upd], Ik[upd], np.broadcast_to(Rr[upd], Ik[upd].shape)
        dh = np.zeros(len(u_ids), f32)
        dhs = np.zeros(len(u_ids), f32)
        dht = np.zeros(len(u_ids), f32)
        if joint:
            gq = cu[:, :, None, :] * Du
            rq = Ru - cu[:, :, None, :] * Iu
            gg = (gq * gq).sum(-1, dtype=f32)
            gr = (gq * rq).sum(-1, dtype=f32)
            m = au[..., None].astype(f32)

            def red(w, val, m=m):
                return ((val * w[None, None, :]).sum(2, dtype=f32) * m[..., 0]).sum(1, dtype=f32)

            one = np.ones(S, f32)
            a11, a12, a13 = red(one, gg), red(fi, gg), red(fj, gg)
            a22, a23, a33 = red(fi * fi, gg), red(fi * fj, gg), red(fj * fj, gg)
            b1, b2, b3 = red(one, gr), red(fi, gr), red(fj, gr)
            # Jacobi-scaled explicit inverse (no overflow for large gradients)
            pos = (a11 > 0) & (a22 > 0) & (a33 > 0)
            with np.errstate(divide="ignore", invalid="ignore"):
                s1 = np.where(pos, f32(1) / np.sqrt(np.where(pos, a11, f32(1))), f32(0)).astype(f32)
                s2 = np.where(pos, f32(1) / np.sqrt(np.where(pos, a22, f32(1))), f32(0)).astype(f32)
                s3 = np.where(pos, f32(1) / np.sqrt(np.where(pos, a33, f32(1))), f32(0)).astype(f32)
            n12, n13, n23 = a12 * s1 * s2, a13 * s1 * s3, a23 * s2 * s3
            e1, e2, e3 = b1 * s1, b2 * s2, b3 * s3
            c11 = f32(1) - n23 * n23
            c12 = n13 * n23 - n12
            c13 = n12 * n23 - n13
            c22 = f32(1) - n13 * n13
            c23 = n12 * n13 - n23
            c33 = f32(1) - n12 * n12
            det = c11 + n12 * c12 + n13 * c13
            good = pos & (det > f32(1e-6))
            with np.errstate(divide="ignore", invalid="ignore"):
                idet = np.where(good, f32(1) / np.where(good, det, f32(1)), f32(0)).astype(f32)
                dh = np.where(good, (c11 * e1 + c12 * e2 + c13 * e3) * idet * s1,
                              np.where(a11 > 0, b1 / np.where(a11 > 0, a11, f32(1)), f32(0))).astype(f32)
                dhs = np.where(good, (c12 * e1 + c22 * e2 + c23 * e3) * idet * s2, f32(0)).astype(f32)
                dht = np.where(good, (c13 * e1 + c23 * e2 + c33 * e3) * idet * s3, f32(0)).astype(f32)
        else:
            Sdd = (Du * Du).sum(2, dtype=f32)
            Srd = (Ru * Du).sum(2, dtype=f32)
            Skd = (Iu * Du).sum(2, dtype=f32)
            a = ((cu * cu * Sdd).sum(-1, dtype=f32) * au).sum(1, dtype=f32)
            b = (((cu * Srd).sum(-1, dtype=f32) - (cu * cu * Skd).sum(-1, dtype=f32)) * au).sum(1, dtype=f32)
            with np.errstate(divide="ignore", invalid="ignore"):
                dh = np.where(a > 0, b / np.where(a > 0, a, f32(1)), f32(0)).astype(f32)
        max_ds = (max_dh / f32(max(rad, 1))).astype(f32)
        dh = np.clip(dh, -max_dh, max_dh)
        dhs = np.clip(dhs, -max_ds, max_ds)
        dht = np.clip(dht, -max_ds, max_ds)
        h[u_ids] += dh
        hs[u_ids] += dhs
        ht[u_ids] += dht
        iters[u_ids] += 1
        bad = ~(h[u_ids] > 0) | ~np.isfinite(h[u_ids]) | ~np.isfinite(hs[u_ids]) | ~np.isfinite(ht[u_ids])
        if bad.any():
            status[u_ids[bad]] = ST_BAD_DEPTH
            running[u_ids[bad]] = False
            fin_act[u_ids[bad]] = au[bad]
        pass_ += 1
    succ = status >= 0
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.where(succ, (np.where(fin_act, ncc, 0).sum(1) / np.maximum(fin_act.sum(1), 1)), 0).astype(f32)
    out_ncc = np.where(fin_act, ncc, f32(-2)).astype(f32)
    # views never activated keep -2
    return {"param": np.stack([h, hs, ht], 1).astype(f32), "conf": conf, "iters": iters, "status": status,
            "ncc": out_ncc}
