"""Fusion of depth maps into one point cloud, and cross-view consistency.

A depth sample of view ``r`` is *confirmed* by view ``v`` when its 3-D point projects into a
pixel of ``v`` whose depth agrees with the point's depth in ``v`` within ``rel_tol`` (relative,
COLMAP's fusion default 1 %). :func:`consistency_counts` counts the confirming views of
every sample; :func:`fuse_depth_maps` walks the views in order and, for every sample not yet
used, gathers the samples of the other views that confirm it; when at least ``min_views``
views agree (the sample's own view included) it emits their mean point, normal, colour and
confidence and marks them used, so that a surface seen by several views is emitted once.
Both run on NumPy or CuPy arrays (``device``); on the GPU the fusion takes one launch per view
against all the others and one ordered compaction at the end, with no host round trip per view
(``cuda/mvs_fuse.cu``, the same float64 operations, the same cloud bit for bit;
``GPULAB_MVS_FUSE_KERNEL=0`` keeps the CuPy path). Device arrays are read where they are.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.mvs.camera import look_at
>>> from gpu_kernels.mvs.fusion import fuse_depth_maps
>>> cams = [look_at([x, 0, -3], [0, 0, 0], [0, -1, 0], focal=50, width=32, height=24) for x in (-0.2, 0.2)]
>>> # a plane z = 0 seen by both cameras
>>> deps = []
>>> for c in cams:
...     v, u = np.mgrid[0:24, 0:32]
...     d = c.rays(np.stack([u.ravel(), v.ravel()], 1))
...     s = -c.center[2] / d[:, 2]
...     deps.append(s.reshape(24, 32).astype(np.float32))
>>> cloud = fuse_depth_maps(cams, deps)
>>> len(cloud.points) > 300, bool(np.abs(cloud.points[:, 2]).max() < 1e-3)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gpu_kernels.backend import get_backend, kernel
from gpu_kernels.env import flag
from gpu_kernels.jobs import as_progress
from gpu_kernels.mvs.camera import MVSInputError
from gpu_kernels.mvs.transfer import direct_to_host, pinned_arrays, to_device, to_host, use_pinned

__all__ = ["DEFAULT_FUSE_TOL", "DEFAULT_FUSE_MIN_VIEWS", "FusedCloud", "fuse_depth_maps", "consistency_counts"]

from gpu_kernels.mvs import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: relative depth agreement (COLMAP's ``max_depth_error``)
DEFAULT_FUSE_TOL = _d.FUSE_TOL
#: views that must agree on a fused point (its own included)
DEFAULT_FUSE_MIN_VIEWS = _d.FUSE_MIN_VIEWS


@dataclass
class FusedCloud:
    points: np.ndarray       # (N, 3) float32
    normals: np.ndarray      # (N, 3) float32, world frame (zeros where unknown)
    colors: np.ndarray       # (N, 3) uint8
    confidence: np.ndarray   # (N,) float32
    n_views: np.ndarray      # (N,) int32, views that agreed
    source_view: np.ndarray  # (N,) int32


def _cam_arrays(xp, cam):
    return (xp.asarray(cam.K, dtype=xp.float64), xp.asarray(cam.R, dtype=xp.float64),
            xp.asarray(cam.t, dtype=xp.float64))


def _cam_tables(xp, cam):
    """``(K, R, t, K^-1)`` of ``cam`` on ``xp``, made once per view and call (the same arrays,
    and so the same results, as making them at every use: no upload and no inverse per pair)."""
    K, R, t = _cam_arrays(xp, cam)
    return K, R, t, xp.linalg.inv(K)


def _backproject(xp, cam, depth, ca=None):
    H, W = depth.shape
    idx = xp.flatnonzero(xp.isfinite(depth.reshape(-1)) & (depth.reshape(-1) > 0))
    v, u = xp.divmod(idx, W)
    K, R, t, Ki = ca if ca is not None else _cam_tables(xp, cam)
    d = depth.reshape(-1)[idx].astype(xp.float64)
    rc = xp.stack([u.astype(xp.float64), v.astype(xp.float64), xp.ones(len(idx))], 1) @ Ki.T
    X = (rc * d[:, None] - t) @ R  # R^T (z ray - t)
    return X, idx


def _project(xp, cam, X, ca=None):
    K, R, t = ca[:3] if ca is not None else _cam_arrays(xp, cam)
    Xc = X @ R.T + t
    z = Xc[:, 2]
    p = Xc @ K.T
    with np.errstate(divide="ignore", invalid="ignore"):
        u = p[:, 0] / p[:, 2]
        v = p[:, 1] / p[:, 2]
    return u, v, z


def _lookup(xp, cam, depth_v, X, rel_tol, ca=None):
    """For points X: (pixel index in v or -1, agrees?)."""
    H, W = depth_v.shape
    u, v, z = _project(xp, cam, X, ca)
    ui = xp.rint(u)
    vi = xp.rint(v)
    inside = (z > 0) & (ui >= 0) & (vi >= 0) & (ui < W) & (vi < H) & xp.isfinite(ui) & xp.isfinite(vi)
    pix = xp.where(inside, vi * W + ui, 0).astype(xp.int64)
    dv = depth_v.reshape(-1)[pix]
    agree = inside & xp.isfinite(dv) & (xp.abs(dv - z) <= rel_tol * xp.abs(z))
    return pix, agree


def consistency_counts(cameras, depths, *, views=None, rel_tol: float = DEFAULT_FUSE_TOL, device=None):
    """For each view (``views``: indices of ``cameras``, parallel to ``depths``), an ``(H, W)``
    int32 map of how many *other* views confirm each depth sample (-1 where no depth)."""
    be = get_backend(device)
    xp = be.xp
    views = list(range(len(depths))) if views is None else list(views)
    if len(views) != len(depths):
        raise MVSInputError("views and depths must have the same length")
    with be.activate():
        D = [xp.asarray(d, dtype=xp.float32) for d in depths]
        cams = [_cam_tables(xp, cameras[v]) for v in views]
        out = []
        for a, r in enumerate(views):
            X, idx = _backproject(xp, cameras[r], D[a], cams[a])
            cnt = xp.zeros(len(idx), xp.int32)
            for b, v in enumerate(views):
                if b == a:
                    continue
                _, agree = _lookup(xp, cameras[v], D[b], X, rel_tol, cams[b])
                cnt += agree.astype(xp.int32)
            m = xp.full(D[a].size, -1, xp.int32)
            m[idx] = cnt
            out.append(be.asnumpy(m.reshape(D[a].shape)))
        return out


def fuse_depth_maps(cameras, depths, *, views=None, normals=None, confidences=None, images=None,
                    rel_tol: float = DEFAULT_FUSE_TOL, min_views: int = DEFAULT_FUSE_MIN_VIEWS,
                    device=None, progress=None) -> FusedCloud:
    """Fuse depth maps into a point cloud (see the module docstring).

    ``normals`` are camera-frame ``(H, W, 3)`` maps, ``confidences`` ``(H, W)`` and ``images``
    ``(H, W, 3)`` uint8, each a list parallel to ``depths`` (or None).
    """
    be = get_backend(device)
    xp = be.xp
    progress = as_progress(progress)
    views = list(range(len(depths))) if views is None else list(views)
    if min_views < 1:
        raise MVSInputError(f"min_views must be at least 1, got {min_views}")
    n = len(views)
    if be.is_gpu and n and flag("GPULAB_MVS_FUSE_KERNEL", True):
        return _fuse_device(be, cameras, depths, views, normals, confidences, images, rel_tol, min_views, progress)
    with be.activate():
        D = [xp.asarray(d, dtype=xp.float32) for d in depths]
        used = [xp.zeros(d.size, bool) for d in D]
        outs = {k: [] for k in ("p", "n", "c", "q", "k", "s")}
        cams = [_cam_tables(xp, cameras[v]) for v in views]
        # each view's normals, colours and confidences on the device once (not once per pair)
        NF = [None if normals is None or normals[b] is None
              else xp.asarray(normals[b], dtype=xp.float64).reshape(-1, 3) for b in range(n)]
        CF = []
        for b in range(n):
            img = None
            if images is not None and images[b] is not None:
                img = xp.asarray(images[b])
                img = img.reshape(-1, img.shape[2] if img.ndim == 3 else 1)
            CF.append(img)
        QF = [None if confidences is None or confidences[b] is None
              else xp.asarray(confidences[b], dtype=xp.float64).reshape(-1) for b in range(n)]

        def attrs(b, pix):
            N = None
            if NF[b] is not None:
                N = xp.nan_to_num(NF[b][pix]) @ cams[b][1]
            C = None
            if CF[b] is not None:
                C = CF[b][pix][:, :3].astype(xp.float64)
                if C.shape[1] == 1:
                    C = xp.repeat(C, 3, axis=1)
            Q = None
            if QF[b] is not None:
                Q = QF[b][pix]
            return N, C, Q

        for a in range(n):
            progress.update(a / max(n, 1), f"fusing view {a + 1}/{n}")
            X, idx = _backproject(xp, cameras[views[a]], D[a], cams[a])
            free = ~used[a][idx]
            X, idx = X[free], idx[free]
            if len(idx) == 0:
                continue
            N0, C0, Q0 = attrs(a, idx)
            sx, cnt = X.copy(), xp.ones(len(idx), xp.int32)
            sn = N0.copy() if N0 is not None else None
            sc = C0.copy() if C0 is not None else None
            sq = Q0.copy() if Q0 is not None else None
            partners = []
            for b in range(n):
                if b == a:
                    continue
                pix, agree = _lookup(xp, cameras[views[b]], D[b], X, rel_tol, cams[b])
                agree &= ~used[b][pix]
                if not bool(agree.any()):
                    continue
                Y = xp.zeros_like(X)
                Yb, _ = _backproject_pixels(xp, cameras[views[b]], D[b], pix[agree], cams[b])
                Y[agree] = Yb
                sx += Y
                cnt += agree.astype(xp.int32)
                Nb, Cb, Qb = attrs(b, pix)
                w = agree[:, None].astype(xp.float64)
                if sn is not None and Nb is not None:
                    sn += Nb * w
                if sc is not None and Cb is not None:
                    sc += Cb * w
                if sq is not None and Qb is not None:
                    sq += Qb * agree
                partners.append((b, pix, agree))
            emit = cnt >= min_views
            used[a][idx] = True
            for b, pix, agree in partners:
                used[b][pix[agree & emit]] = True
            if not bool(emit.any()):
                continue
            _emitted(xp, outs, views[a], emit, cnt, sx, sn, sc, sq)
        progress.update(1.0, "fused")
        return _cloud(be, outs)


def _cloud(be, outs) -> FusedCloud:
    """The fused points gathered per view in ``outs`` (device or host arrays), as one host cloud."""
    def cat(key, shape, dtype):
        if not outs[key]:
            return np.zeros(shape, dtype)
        return be.asnumpy(be.xp.concatenate(outs[key]))

    return FusedCloud(cat("p", (0, 3), np.float32), cat("n", (0, 3), np.float32), cat("c", (0, 3), np.uint8),
                      cat("q", (0,), np.float32), cat("k", (0,), np.int32), cat("s", (0,), np.int32))


def _emitted(xp, outs, a_view, emit, cnt, sx, sn, sc, sq):
    """The fused points of one view's emitted samples (``emit``: a boolean mask), ``sn``/``sc``/``sq``
    None where that view has no normals/colours/confidences, appended to ``outs`` (the CuPy and
    NumPy paths; ``cuda/mvs_fuse.cu`` computes the same values in its gather kernel)."""
    c = cnt[emit].astype(xp.float64)
    outs["p"].append((sx[emit] / c[:, None]).astype(xp.float32))
    if sn is not None:
        nn = sn[emit]
        nn /= xp.maximum(xp.linalg.norm(nn, axis=1, keepdims=True), 1e-12)
        outs["n"].append(nn.astype(xp.float32))
    else:
        outs["n"].append(xp.zeros((len(c), 3), xp.float32))
    if sc is not None:
        outs["c"].append(xp.clip(xp.rint(sc[emit] / c[:, None]), 0, 255).astype(xp.uint8))
    else:
        outs["c"].append(xp.full((len(c), 3), 200, xp.uint8))
    if sq is not None:
        outs["q"].append((sq[emit] / c).astype(xp.float32))
    else:
        outs["q"].append(xp.ones(len(c), xp.float32))
    outs["k"].append(cnt[emit])
    outs["s"].append(xp.full(len(c), a_view, xp.int32))


def _is_device(a) -> bool:
    return a is not None and not isinstance(a, np.ndarray) and hasattr(a, "__cuda_array_interface__")


_inverses: dict = {}


def _device_inverse(be, K) -> np.ndarray:
    """``K^-1`` as the device computes it (``xp.linalg.inv``, what the CuPy path uses: the same
    bits), kept per device and matrix, so that a fusion downloads none per view."""
    key = (be.label, np.asarray(K, np.float64).tobytes())
    inv = _inverses.get(key)
    if inv is None:
        if len(_inverses) > 4096:
            _inverses.clear()
        inv = _inverses[key] = be.asnumpy(be.xp.linalg.inv(be.xp.asarray(K, dtype=be.xp.float64)))
    return inv


def _fuse_device(be, cameras, depths, views, normals, confidences, images, rel_tol, min_views, progress):
    """:func:`fuse_depth_maps` on the GPU: every view's maps concatenated on the device once, and
    one view's samples against all the others in one launch (``cuda/mvs_fuse.cu``), the same
    arithmetic as the CuPy path in float64."""
    xp = be.xp
    n = len(views)
    with be.activate():
        # every map up at once, in its own dtype (pinned staging, transfer.py); float64 on the device
        up = [np.asarray(d, np.float32) if not _is_device(d) else d for d in depths]
        nrm = [None if normals is None else normals[b] for b in range(n)]
        img = [None if images is None else images[b] for b in range(n)]
        cnf = [None if confidences is None else confidences[b] for b in range(n)]
        host = [x if x is not None and not _is_device(x) else None for x in up + nrm + img + cnf]
        dev = to_device(host, xp)
        own = [dv if dv is not None else x for x, dv in zip(up + nrm + img + cnf, dev, strict=True)]
        D = [xp.asarray(d, dtype=xp.float32).reshape(-1) for d in own[:n]]
        normals, images, confidences = own[n:2 * n], own[2 * n:3 * n], own[3 * n:]
        shapes = [tuple(np.shape(d)) for d in depths]
        sizes = np.array([d.size for d in D], np.int64)
        offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        total = max(int(sizes.sum()), 1)
        # maps that are consecutive pieces of one device buffer (the growing's records) are read
        # in place: one conversion each instead of one per view
        Dall = _joined(xp, D, offs, total)
        if Dall is None:
            Dall = xp.concatenate(D) if n > 1 else D[0]
        used = xp.zeros(total, xp.uint8)
        Nj = _joined(xp, normals, offs, total, 3)
        Nall = Nj.astype(xp.float64) if Nj is not None else xp.zeros((total, 3), xp.float64)
        Qj = _joined(xp, confidences, offs, total)
        Qall = Qj.astype(xp.float64) if Qj is not None else xp.zeros(total, xp.float64)
        Iall = xp.zeros((total, 3), xp.uint8)
        flags = np.zeros(n, np.int32)
        cams = np.zeros((n, 30), np.float64)
        for b in range(n):
            sl = slice(int(offs[b]), int(offs[b] + sizes[b]))
            if normals[b] is not None:
                if Nj is None:
                    Nall[sl] = xp.asarray(normals[b]).reshape(-1, 3).astype(xp.float64)
                flags[b] |= 1
            if images[b] is not None:
                im = xp.asarray(images[b])
                im = im.reshape(-1, im.shape[2] if im.ndim == 3 else 1)[:, :3]
                Iall[sl] = im if im.shape[1] == 3 else xp.repeat(im, 3, axis=1)
                flags[b] |= 2
            if confidences[b] is not None:
                if Qj is None:
                    Qall[sl] = xp.asarray(confidences[b]).reshape(-1).astype(xp.float64)
                flags[b] |= 4
            cam = cameras[views[b]]
            cams[b] = np.concatenate([np.asarray(cam.K, np.float64).ravel(), np.asarray(cam.R, np.float64).ravel(),
                                      np.asarray(cam.t, np.float64).ravel(), _device_inverse(be, cam.K).ravel()])
        d_offs, d_cams, d_flags = xp.asarray(offs), xp.asarray(cams), xp.asarray(flags)
        d_W = xp.asarray(np.array([s_[1] for s_ in shapes], np.int32))
        d_H = xp.asarray(np.array([s_[0] for s_ in shapes], np.int32))
        k_gather = kernel(be, "mvs_fuse.cu", "mvs_fuse_gather", options=("--fmad=false",))
        k_mark = kernel(be, "mvs_fuse.cu", "mvs_fuse_mark", options=("--fmad=false",))
        # every pixel's count and, where emitted, its fused values, at the pixel's own place: no
        # host round trip per view, one ordered compaction at the end (view, then pixel: the
        # order of the per-view emission)
        S = max(int(sizes.max()), 1)
        pixb = xp.empty((n, S), xp.int32)
        cnt = xp.empty(total, xp.int32)
        p_out = xp.empty((total, 3), xp.float32)
        n_out = xp.empty((total, 3), xp.float64)
        c_out = xp.empty((total, 3), xp.uint8)
        q_out = xp.empty(total, xp.float32)
        s_out = xp.empty(total, xp.int32)
        i32 = np.int32
        for a in range(n):
            progress.update(a / max(n, 1), f"fusing view {a + 1}/{n}")
            m = int(sizes[a])
            if m == 0:
                continue
            grid = ((m + 127) // 128,)
            k_gather(grid, (128,), (i32(a), i32(m), i32(n), d_offs, d_W, d_H, d_cams, Dall, used, Nall, Qall, Iall,
                                    d_flags, np.float64(rel_tol), i32(min_views), i32(views[a]), pixb, i32(S), cnt,
                                    p_out, n_out, c_out, q_out, s_out))
            k_mark(grid, (128,), (i32(a), i32(m), i32(n), d_offs, pixb, i32(S), cnt, i32(min_views), used))
        emit = xp.flatnonzero(cnt[:int(sizes.sum())] >= min_views)
        nn = n_out[emit]
        nn /= xp.maximum(xp.linalg.norm(nn, axis=1, keepdims=True), 1e-12)
        out = [p_out[emit], nn.astype(xp.float32), c_out[emit], q_out[emit], cnt[emit], s_out[emit]]
        progress.update(1.0, "fused")
        return FusedCloud(*_download(be, out))


def _joined(xp, arrays, offs, total, k: int = 1):
    """The one device array that ``arrays`` (C-contiguous device arrays of float32 with ``k``
    values per pixel, view ``b``'s at pixel ``offs[b]``) are consecutive pieces of, viewed
    whole (``(total,)`` or ``(total, k)``); None where they are not (host arrays, a gap, a
    ``None``, another dtype)."""
    if getattr(xp, "__name__", None) != "cupy" or not arrays or any(
            a is None or not _is_device(a) or a.dtype != xp.float32 or not a.flags.c_contiguous for a in arrays):
        return None
    p0 = arrays[0].data.ptr
    if any(a.data.ptr != p0 + int(o) * 4 * k for a, o in zip(arrays, offs, strict=True)):
        return None
    if sum(a.size for a in arrays) != total * k:
        return None
    whole = xp.ndarray((total, k) if k > 1 else (total,), xp.float32, memptr=arrays[0].data)
    return whole


def _download(be, arrays) -> list:
    """The cloud's arrays on the host in one copy: packed into one device buffer (one launch per
    array), brought down once."""
    xp = be.xp
    if getattr(xp, "__name__", None) != "cupy":  # NumPy, or the tests' emulator
        return [be.asnumpy(a) for a in arrays]
    nb = [int(a.nbytes) for a in arrays]
    ofs = np.concatenate([[0], np.cumsum([(x + 15) // 16 * 16 for x in nb])]).astype(np.int64)
    buf = xp.empty(max(int(ofs[-1]), 1), xp.uint8)
    for a, o, k in zip(arrays, ofs, nb, strict=False):
        if k:
            buf[o:o + k] = xp.ascontiguousarray(a).reshape(-1).view(xp.uint8)
    stream = xp.cuda.get_current_stream()
    pinned = pinned_arrays([(buf.shape, np.uint8)]) if use_pinned() else None
    if pinned is not None:  # one DMA into page-locked memory (CuPy's pinned pool)
        direct_to_host([buf], stream, pinned)
        stream.synchronize()
        host = pinned[0]
    else:  # pinned staging and copy threads where the maps' download does not hold them
        host = to_host([buf], stream, min_bytes=4 << 20, if_free=True)[0]
    return [host[o:o + k].view(a.dtype).reshape(a.shape) for a, o, k in zip(arrays, ofs, nb, strict=False)]


def _backproject_pixels(xp, cam, depth, pix, ca=None):
    H, W = depth.shape
    v, u = xp.divmod(pix, W)
    K, R, t, Ki = ca if ca is not None else _cam_tables(xp, cam)
    d = depth.reshape(-1)[pix].astype(xp.float64)
    rc = xp.stack([u.astype(xp.float64), v.astype(xp.float64), xp.ones(len(pix))], 1) @ Ki.T
    return (rc * d[:, None] - t) @ R, pix
