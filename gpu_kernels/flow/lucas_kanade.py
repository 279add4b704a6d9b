"""Pyramidal Lucas-Kanade optical flow with warping, an alpha mask and a reliability map.

The paper's second method (Marras et al., section 3.3), one kernel per step
(``cuda/flow_lk.cu``):

1. a Gaussian pyramid of both images (``levels``, 3 by default), the finest level smoothed
   with ``sigma``;
2. per level, the gradients ``Ix, Iy`` of the first image and the structure tensor
   ``G = sum_window m (Ix^2, Ix Iy, Iy^2)`` (``m`` the mask, box window of ``window`` pixels);
3. ``iters`` warp-and-refine iterations: ``It = I2(x + f) - I1``, linearised about each window
   pixel's own flow, ``b = sum_window m (Ix, Iy) (Ix u + Iy v - It)``, ``f = G^-1 b`` where G's
   smaller eigenvalue is large enough (scikit-image's iLK form: stable over many iterations);
4. the flow goes up one level (doubled) and starts the next.

The reliability map is ``q = l / (l + tau)`` with ``l`` the smaller eigenvalue of ``G``
(window mean) at the finest level; pixels outside the mask neither contribute to any sum
nor receive flow (0, quality 0).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow import lucas_kanade
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> img1, img2, gt, valid = synthetic_pair("translation", size=(96, 128), magnitude=2.0)
>>> res = lucas_kanade(img1, img2, device="cpu")
>>> err = np.hypot(res.u - gt[..., 0], res.v - gt[..., 1])[16:-16, 16:-16].mean()
>>> bool(err < 0.1)
True
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import Backend, get_backend
from gpu_kernels.jobs import as_progress
from gpu_kernels.ops import _gpu
from gpu_kernels.ops.color import _gray
from gpu_kernels.ops.filters import _correlate_axis, gaussian_kernel1d
from gpu_kernels.ops.pyramid import _pyr_down, _pyr_up, pyramid_levels
from gpu_kernels.ops.warp import _bilinear_np, _inside_np

from . import _plan
from ._common import FlowResult, check_float, check_int, check_pair, mask_pyramid, prepare_mask

__all__ = [
    "DEFAULT_LK_LEVELS",
    "DEFAULT_WINDOW",
    "DEFAULT_LK_ITERS",
    "DEFAULT_LK_SIGMA",
    "DEFAULT_EIG_MIN",
    "DEFAULT_EIG_TAU",
    "lucas_kanade",
]

#: pyramid levels (the paper's 3)
DEFAULT_LK_LEVELS = 3
from gpu_kernels.flow import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: side of the square window of the 2 x 2 solve, pixels (odd)
DEFAULT_WINDOW = _d.LK_WINDOW
#: warp-and-refine iterations per level
DEFAULT_LK_ITERS = 3
#: Gaussian pre-smoothing of the finest level (pixels); 0 for none
DEFAULT_LK_SIGMA = 1.0
#: no update where the structure tensor's smaller eigenvalue (window mean, intensities 0..1) is below this
DEFAULT_EIG_MIN = 1e-6
#: the reliability map is l / (l + tau)
DEFAULT_EIG_TAU = 1e-4

_SRC = "flow_lk.cu"


def _grad_np(img: np.ndarray):
    H, W = img.shape
    gx = np.zeros_like(img)
    gy = np.zeros_like(img)
    if W > 1:
        gx[:, 1:-1] = np.float32(0.5) * (img[:, 2:] - img[:, :-2])
        gx[:, 0] = img[:, 1] - img[:, 0]
        gx[:, -1] = img[:, -1] - img[:, -2]
    if H > 1:
        gy[1:-1] = np.float32(0.5) * (img[2:] - img[:-2])
        gy[0] = img[1] - img[0]
        gy[-1] = img[-1] - img[-2]
    return gx, gy


def _min_eig_np(a, c, d):
    h = np.float32(0.5) * (a - d)
    return np.float32(0.5) * (a + d) - np.sqrt(h * h + c * c)


def _box(be: Backend, stack, window: int):
    taps = np.full(window, 1.0 / window, np.float32)
    out = _correlate_axis(be, stack, taps, stack.ndim - 1, mode="nearest")
    return _correlate_axis(be, out, taps, stack.ndim - 2, mode="nearest")


def _smooth(be: Backend, img, sigma: float):
    if sigma <= 0:
        return img
    taps = gaussian_kernel1d(sigma)
    return _correlate_axis(be, _correlate_axis(be, img, taps, 1), taps, 0)


def _lk_level(be: Backend, I1, I2, m, u, v, *, window: int, iters: int, eig_min: float):
    """Refine (u, v) in place at one level; returns the window-mean structure tensor."""
    xp = be.xp
    H, W = I1.shape
    n = H * W
    if not be.is_gpu:
        gx, gy = _grad_np(I1)
        w = np.float32(1) if m is None else m
        G = _box(be, np.stack([w * gx * gx, w * gx * gy, w * gy * gy]), window)
        a, c, d = G
        ok = _min_eig_np(a, c, d) > np.float32(eig_min)
        det = a * d - c * c
        xs0 = np.arange(W, dtype=np.float32)[None, :]
        ys0 = np.arange(H, dtype=np.float32)[:, None]
        for _ in range(iters):
            xs, ys = xs0 + u, ys0 + v
            it = _bilinear_np(I2, xs, ys) - I1
            e = (w * _inside_np(xs, ys, H, W)) * (gx * u + gy * v - it)
            b0, b1 = _box(be, np.stack([gx * e, gy * e]), window)
            sdet = np.where(ok, det, np.float32(1))
            u[...] = np.where(ok, (d * b0 - c * b1) / sdet, u)
            v[...] = np.where(ok, (a * b1 - c * b0) / sdet, v)
        return G
    grad = xp.empty((2, H, W), xp.float32)
    prod = xp.empty((3, H, W), xp.float32)
    bbuf = xp.empty((2, H, W), xp.float32)
    has_m = _gpu.i32(m is not None)
    mm = m if m is not None else I1
    k = _gpu.kernel(be, _SRC, "lk_tensor")
    grid = _gpu.grid1d(n)
    k(grid, (_gpu.THREADS,), (I1, mm, has_m, grad, prod, _gpu.i32(H), _gpu.i32(W)))
    G = _box(be, prod, window)
    kr = _gpu.kernel(be, _SRC, "lk_residual")
    ku = _gpu.kernel(be, _SRC, "lk_update")
    for _ in range(iters):
        kr(grid, (_gpu.THREADS,), (I1, I2, u, v, grad, mm, has_m, bbuf, _gpu.i32(H), _gpu.i32(W)))
        b = _box(be, bbuf, window)
        ku(grid, (_gpu.THREADS,), (G, b, u, v, _gpu.f32(eig_min), _gpu.i32(H), _gpu.i32(W)))
    return G


def _lk_core(be: Backend, g1, g2, mask, *, levels: int, window: int, iters: int, sigma: float, eig_min: float,
             eig_tau: float, init=None, progress=None):
    """LK on prepared greyscale images (float32 on ``be``). Returns u, v, q, lmin."""
    xp = be.xp
    progress = as_progress(progress)
    L = pyramid_levels(g1.shape, levels, min_size=max(2, window // 2))
    p1 = [_smooth(be, g1, sigma)]
    p2 = [_smooth(be, g2, sigma)]
    for _ in range(L - 1):
        p1.append(_pyr_down(be, p1[-1], (0, 1)))
        p2.append(_pyr_down(be, p2[-1], (0, 1)))
    masks = mask_pyramid(be, mask, p1) if mask is not None else [None] * L
    u = v = None
    G = None
    for lev in range(L - 1, -1, -1):
        H, W = p1[lev].shape
        if u is None:
            if init is not None:
                s = 0.5 ** lev
                u = _resize_field(be, init[0], (H, W), s)
                v = _resize_field(be, init[1], (H, W), s)
            else:
                u = xp.zeros((H, W), xp.float32)
                v = xp.zeros((H, W), xp.float32)
        else:
            u = _pyr_up(be, u, (H, W), (0, 1), value_scale=2.0)
            v = _pyr_up(be, v, (H, W), (0, 1), value_scale=2.0)
        G = _lk_level(be, p1[lev], p2[lev], masks[lev], u, v, window=window, iters=iters, eig_min=eig_min)
        progress.update((L - lev) / L, f"Lucas-Kanade level {L - lev}/{L}")
    H, W = g1.shape
    if not be.is_gpu:
        lmin = np.maximum(_min_eig_np(G[0], G[1], G[2]), np.float32(0))
        q = (lmin / (lmin + np.float32(eig_tau))).astype(np.float32)
        if mask is not None:
            keep = mask > 0
            q = np.where(keep, q, np.float32(0))
            u = np.where(keep, u, np.float32(0))
            v = np.where(keep, v, np.float32(0))
        return u, v, q, lmin
    q = xp.empty((H, W), xp.float32)
    lmin = xp.empty((H, W), xp.float32)
    k = _gpu.kernel(be, _SRC, "lk_finish")
    k(_gpu.grid1d(H * W), (_gpu.THREADS,), (G, mask if mask is not None else q, _gpu.i32(mask is not None), u, v, q,
                                             lmin, _gpu.f32(eig_tau), _gpu.i32(H), _gpu.i32(W)))
    return u, v, q, lmin


def _resize_field(be: Backend, f, shape, scale: float):
    """A full-resolution field taken to a coarser level's shape (pyramid-aligned), values scaled."""
    from gpu_kernels.ops.pyramid import _linear_axis

    out = f
    for ax in (0, 1):
        n_in, n_out = out.shape[ax], shape[ax]
        if n_in != n_out:
            out = _linear_axis(be, out, ax, n_out, n_in / n_out if n_out > 1 else 0.0, 0.0, 1.0)
    return out * out.dtype.type(scale) if scale != 1 else out.copy()


def lucas_kanade(img1, img2, *, levels: int = DEFAULT_LK_LEVELS, window: int = DEFAULT_WINDOW,
                 iters: int = DEFAULT_LK_ITERS, sigma: float = DEFAULT_LK_SIGMA, eig_min: float = DEFAULT_EIG_MIN,
                 eig_tau: float = DEFAULT_EIG_TAU, mask=None, device=None, progress=None) -> FlowResult:
    """Pyramidal Lucas-Kanade flow from ``img1`` to ``img2``.

    Parameters
    ----------
    img1, img2 : array_like
        ``(H, W)`` or ``(H, W, C)`` (grey, grey + alpha, RGB, RGBA), uint8, uint16 or float
        (0..1); NumPy or CuPy.
    levels : int
        Pyramid levels (fewer where the image is too small).
    window : int
        Odd side of the square window of the per-pixel 2 x 2 solve.
    iters : int
        Warp-and-refine iterations per level.
    sigma : float
        Gaussian pre-smoothing of the finest level.
    eig_min : float
        No update where the structure tensor's smaller eigenvalue (window mean) is below this.
    eig_tau : float
        Reliability ``q = l / (l + eig_tau)``.
    mask : array_like, optional
        ``(H, W)``: pixels where it is 0 neither contribute nor receive flow.
    device : str or Backend, optional
    progress : callable or Progress, optional

    Returns
    -------
    FlowResult
        ``u``, ``v``, ``quality`` (the reliability map); ``extras["min_eig"]``.
    """
    levels = check_int("levels", levels, 1, 12)
    window = check_int("window", window, 1, 63)
    if window % 2 == 0:
        from ._common import FlowInputError

        raise FlowInputError(f"window must be odd, got {window}")
    iters = check_int("iters", iters, 1, 100)
    sigma = check_float("sigma", sigma, 0.0, 10.0)
    eig_min = check_float("eig_min", eig_min, 0.0)
    eig_tau = check_float("eig_tau", eig_tau, 0.0, lo_open=True)
    be = get_backend(device)
    progress = as_progress(progress)
    params = dict(levels=levels, window=window, iters=iters, sigma=sigma, eig_min=eig_min, eig_tau=eig_tau)
    with be.activate():
        a, b = check_pair(be, img1, img2)
        m = prepare_mask(be, mask, a.shape[:2])

        def build(x, y):
            return _lk_core(be, _gray(be, x), _gray(be, y), m, levels=levels, window=window, iters=iters,
                            sigma=sigma, eig_min=eig_min, eig_tau=eig_tau, progress=progress)

        if m is None:
            u, v, q, lmin = _plan.run(be, ("lk",) + tuple(sorted(params.items())), [a, b], build)
        else:
            u, v, q, lmin = build(a, b)
        progress.update(1.0, "Lucas-Kanade done")
    return FlowResult(u, v, q, "lk", be.label, params, {"min_eig": lmin}, m)
