"""The flow colour wheel in whole-image float64 passes, the reference of the colour-wheel tests
(tests/flow/test_flow_metrics_colors.py, tests/framework/test_live_colorwheel.py)."""

from __future__ import annotations

import numpy as np

from gpu_kernels.flow.colorwheel import make_colorwheel


def wheel_whole_image(u, v, max_flow=None, valid=None, *, hypot: bool = False):
    """``(H, W, 3)`` uint8: magnitudes by ``sqrt(u^2 + v^2)`` (Middlebury's definition, the order
    of the kernels) or, with ``hypot``, by ``np.hypot`` (the code before the bands); hue
    ``atan2(-v, -u)``."""
    mag = np.hypot if hypot else (lambda a, b: np.sqrt(a * a + b * b))
    u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
    ok = np.isfinite(u) & np.isfinite(v) & (np.abs(u) < 1e9) & (np.abs(v) < 1e9)
    if valid is not None:
        ok &= valid
    u, v = np.where(ok, u, 0.0), np.where(ok, v, 0.0)
    maxrad = (float(mag(u, v)[ok].max()) if ok.any() else 0.0) if max_flow is None else float(max_flow)
    eps = np.finfo(np.float64).eps
    fu, fv = u / (maxrad + eps), v / (maxrad + eps)
    wheel = make_colorwheel()
    n = wheel.shape[0]
    r = mag(fu, fv)
    fk = (np.arctan2(-fv, -fu) / np.pi + 1.0) / 2.0 * (n - 1)
    k0 = np.floor(fk).astype(int)
    f = fk - k0
    out = np.zeros(u.shape + (3,), np.uint8)
    for i in range(3):
        col = (1 - f) * (wheel[k0, i] / 255.0) + f * (wheel[(k0 + 1) % n, i] / 255.0)
        col = np.where(r <= 1, 1 - r * (1 - col), col * 0.75)
        out[..., i] = np.where(ok, np.floor(255.0 * col), 0).astype(np.uint8)
    return out
