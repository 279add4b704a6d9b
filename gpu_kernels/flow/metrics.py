"""Flow accuracy against ground truth, and how useful a confidence map is.

- :func:`flow_metrics`: average endpoint error (AEE), average angular error (AAE, degrees,
  Barron et al.'s angle between ``(u, v, 1)`` and ``(u_gt, v_gt, 1)``), and the percentages
  of pixels with an endpoint error above 1 and 3 pixels, on valid pixels only.
- :func:`sparsification`: the AEE of the pixels that remain as the least confident are
  removed, against the oracle that removes the largest errors first; the area between the
  two curves (AUSE) says how well a confidence ranks errors (0 is perfect).
- :func:`forward_backward_confidence`: the usual baseline: ``exp(-|f(x) + b(x + f(x))|^2 / s^2)``.

Everything runs on the host in NumPy (CuPy inputs are copied).

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow.metrics import flow_metrics
>>> gt = np.zeros((4, 4, 2), np.float32)
>>> est = gt.copy(); est[..., 0] = 2.0
>>> m = flow_metrics(est[..., 0], est[..., 1], gt)
>>> m["aee"], m["r1"], m["r3"]
(2.0, 100.0, 0.0)
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.backend import asnumpy

from ._common import FlowInputError

__all__ = ["endpoint_error", "angular_error", "flow_metrics", "sparsification", "forward_backward_confidence",
           "DEFAULT_FRACTIONS"]

#: removed fractions of the sparsification curve: 0, 2%, ..., 98%
DEFAULT_FRACTIONS = np.round(np.arange(0, 1.0, 0.02), 2)


def _gt_parts(gt, valid):
    g = np.asarray(asnumpy(gt), dtype=np.float64)
    if g.ndim != 3 or g.shape[-1] != 2:
        raise FlowInputError(f"the ground truth must be (H, W, 2), got shape {g.shape}")
    ok = np.isfinite(g).all(-1) & (np.abs(g) < 1e9).all(-1)
    if valid is not None:
        valid = np.asarray(asnumpy(valid)).astype(bool)
        if valid.shape != g.shape[:2]:
            raise FlowInputError("the valid mask and the ground truth differ in size")
        ok &= valid
    return g[..., 0], g[..., 1], ok


def endpoint_error(u, v, gt, valid=None) -> np.ndarray:
    """Per-pixel endpoint error (float64, NaN where the ground truth is unknown)."""
    u = np.asarray(asnumpy(u), np.float64)
    v = np.asarray(asnumpy(v), np.float64)
    gu, gv, ok = _gt_parts(gt, valid)
    if u.shape != gu.shape:
        raise FlowInputError(f"the flow is {u.shape[1]} x {u.shape[0]} but the ground truth "
                             f"{gu.shape[1]} x {gu.shape[0]}")
    e = np.hypot(u - gu, v - gv)
    e[~ok] = np.nan
    return e


def angular_error(u, v, gt, valid=None) -> np.ndarray:
    """Per-pixel angular error in degrees (NaN where unknown)."""
    u = np.asarray(asnumpy(u), np.float64)
    v = np.asarray(asnumpy(v), np.float64)
    gu, gv, ok = _gt_parts(gt, valid)
    num = u * gu + v * gv + 1.0
    den = np.sqrt((u * u + v * v + 1.0) * (gu * gu + gv * gv + 1.0))
    a = np.degrees(np.arccos(np.clip(num / den, -1.0, 1.0)))
    a[~ok] = np.nan
    return a


def flow_metrics(u, v, gt, valid=None) -> dict:
    """AEE, AAE (degrees), % of pixels with EPE > 1 and > 3, and the pixel count.

    ``gt`` is ``(H, W, 2)``; only pixels where it is known (and ``valid``) count.
    """
    e = endpoint_error(u, v, gt, valid)
    a = angular_error(u, v, gt, valid)
    ok = np.isfinite(e)
    n = int(ok.sum())
    if n == 0:
        raise FlowInputError("the ground truth has no valid pixel")
    ev, av = e[ok], a[ok]
    return {"aee": float(ev.mean()), "aae": float(av.mean()), "r1": float(100.0 * (ev > 1).mean()),
            "r3": float(100.0 * (ev > 3).mean()), "n": n}


def sparsification(epe, confidence, *, fractions=DEFAULT_FRACTIONS, valid=None, seed: int = 0) -> dict:
    """Sparsification curve of a confidence map against the oracle.

    Parameters
    ----------
    epe : array_like
        Per-pixel endpoint error (NaN where unknown).
    confidence : array_like
        Larger is more confident; pixels are removed from the least confident (ties in random
        order, fixed ``seed``).
    fractions : sequence of float
        Removed fractions, from 0.

    Returns
    -------
    dict
        ``fractions``, ``curve`` (AEE of what remains), ``oracle``, ``ause`` (mean of
        ``curve - oracle`` over the fractions, pixels) and ``ause_rel`` (``ause / AEE``).

    Example
    -------
    >>> import numpy as np
    >>> e = np.array([0.1, 0.2, 3.0, 5.0])
    >>> sparsification(e, -e, fractions=[0.0, 0.5])["ause"]   # a perfect confidence
    0.0
    """
    e = np.asarray(asnumpy(epe), np.float64).ravel()
    c = np.asarray(asnumpy(confidence), np.float64).ravel()
    if e.shape != c.shape:
        raise FlowInputError("the error and confidence maps differ in size")
    ok = np.isfinite(e) & np.isfinite(c)
    if valid is not None:
        ok &= np.asarray(asnumpy(valid)).astype(bool).ravel()
    e, c = e[ok], c[ok]
    n = e.size
    if n == 0:
        raise FlowInputError("no valid pixel to rank")
    rng = np.random.default_rng(seed)
    tie = rng.random(n)
    order = np.lexsort((tie, c))          # least confident first
    kept_c = np.cumsum(e[order][::-1])[::-1]   # sum of errors from position k to the end
    order_o = np.argsort(e)[::-1]         # largest errors first
    kept_o = np.cumsum(e[order_o][::-1])[::-1]
    fr = np.asarray(fractions, np.float64)
    curve, oracle = [], []
    for f in fr:
        k = min(int(round(f * n)), n - 1)
        curve.append(kept_c[k] / (n - k))
        oracle.append(kept_o[k] / (n - k))
    curve, oracle = np.array(curve), np.array(oracle)
    ause = float(np.mean(curve - oracle))
    return {"fractions": fr, "curve": curve, "oracle": oracle, "ause": ause,
            "ause_rel": ause / max(float(e.mean()), 1e-12)}


def forward_backward_confidence(u, v, ub, vb, *, sigma: float = 1.0) -> np.ndarray:
    """Forward-backward consistency: ``exp(-|f(x) + b(x + f(x))|^2 / sigma^2)`` (NumPy).

    ``(u, v)`` is the flow from image 1 to 2, ``(ub, vb)`` from 2 to 1; ``b`` is sampled
    bilinearly at ``x + f(x)``; points that leave the image get 0.
    """
    from gpu_kernels.ops.warp import _bilinear_np, _inside_np

    u, v, ub, vb = (np.asarray(asnumpy(a), np.float32) for a in (u, v, ub, vb))
    H, W = u.shape
    xs = np.arange(W, dtype=np.float32)[None, :] + u
    ys = np.arange(H, dtype=np.float32)[:, None] + v
    bu = _bilinear_np(ub, xs, ys)
    bv = _bilinear_np(vb, xs, ys)
    d2 = (u + bu) ** 2 + (v + bv) ** 2
    return (np.exp(-d2 / np.float32(sigma * sigma)) * _inside_np(xs, ys, H, W)).astype(np.float32)
