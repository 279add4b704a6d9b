"""Stage 0: RGB to CIELAB, the bilateral filter in CIELAB, and the quantised colour codes.

CIELAB follows :func:`skimage.color.rgb2lab` (sRGB, illuminant D65, 2 degree observer) in
float32; the two agree within 1e-3 (``tests/imseg/test_imseg_color.py``). A grey image is
treated as lightness only (a = b = 0).

Quantisation (the paper's exponent ``Q``): each of L, a and b is cut into ``2**Q`` equal
bins over the sRGB gamut's range (:data:`LAB_LO` .. :data:`LAB_HI`), so the reduced colour
space has ``F = 2**(3 Q)`` colours (32,768 for the default Q = 5, the paper's F = 2^15). A
colour's code is ``(qL << 2Q) | (qa << Q) | qb``.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.color import rgb2lab
>>> lab = rgb2lab(np.array([[[255, 0, 0]]], dtype=np.uint8), device="cpu")
>>> [round(float(v), 2) for v in lab[0, 0]]
[53.24, 80.09, 67.2]
"""

from __future__ import annotations

import math

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.checks import check_int
from gpu_kernels.imseg._util import (
    NULL,
    PIXEL_SUFFIX,
    ImsegInputError,
    activated,
    as_image,
    grid,
    kernel,
    row_bands,
)
from gpu_kernels.jobs import as_progress

__all__ = [
    "LAB_LO",
    "LAB_HI",
    "DEFAULT_Q",
    "DEFAULT_BILATERAL_WINDOW",
    "DEFAULT_SIGMA_SPATIAL",
    "DEFAULT_SIGMA_COLOR",
    "MIN_Q",
    "MAX_Q",
    "rgb2lab",
    "bilateral_lab",
    "quantize_lab",
    "code_centres",
]

#: quantisation range of L, a, b: the sRGB gamut (a in [-86.2, 98.2], b in [-107.9, 94.5])
LAB_LO = (0.0, -87.0, -108.0)
LAB_HI = (100.0, 99.0, 95.0)

from gpu_kernels.imseg import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: bits per channel of the quantised colour space (the paper's Q = 5: F = 2^15 colours)
DEFAULT_Q = _d.DEFAULT_Q
MIN_Q, MAX_Q = _d.MIN_Q, _d.MAX_Q

#: bilateral filter window (pixels, odd), spatial and colour sigmas (pixels, CIELAB units)
DEFAULT_BILATERAL_WINDOW = _d.DEFAULT_BILATERAL_WINDOW
DEFAULT_SIGMA_SPATIAL = _d.DEFAULT_SIGMA_SPATIAL
DEFAULT_SIGMA_COLOR = _d.DEFAULT_SIGMA_COLOR
MAX_BILATERAL_WINDOW = _d.MAX_BILATERAL_WINDOW
MAX_BILATERAL_PASSES = _d.MAX_BILATERAL_PASSES

_COLOR_SRC = "imseg_color.cu"
#: exact float32 arithmetic order (no fused multiply-adds), as the NumPy path computes it
CUDA_OPTIONS = ("--fmad=false",)
#: pixels a thread of the codes kernels (codes_smem_*, codes_lab_smem: the histogram through a
#: block-private table in shared memory; H100, 512^2: 21.7 us at 1, 2 or 4, 30.7 at 8, against
#: 25.5 for the session-2 kernels, which session 10 removed)
CODES_CHUNK = 2


# --------------------------------------------------------------------------- NumPy path
def _unit_np(img: np.ndarray) -> np.ndarray:
    if img.dtype == np.uint8:
        return img.astype(np.float32) / np.float32(255.0)
    if img.dtype == np.uint16:
        return img.astype(np.float32) / np.float32(65535.0)
    return img.astype(np.float32, copy=False)


def _lab_f(t):
    f32 = np.float32
    return np.where(t > f32(0.008856), np.cbrt(t), f32(7.787) * t + f32(16.0) / f32(116.0)).astype(np.float32)


def _to_linear(c):
    f32 = np.float32
    with np.errstate(invalid="ignore"):
        g = ((c + f32(0.055)) / f32(1.055)) ** f32(2.4)
    return np.where(c > f32(0.04045), g, c / f32(12.92)).astype(np.float32)


def lab_np(img: np.ndarray, progress=None) -> np.ndarray:
    """CIELAB of a checked image (``as_image``) on the CPU, float32, shape (H, W, 3), in row
    bands (each reports to ``progress`` and checks for cancel first)."""
    h, w = img.shape[:2]
    out = np.empty((h, w, 3), np.float32)
    for r0, r1 in row_bands(h, w, progress, "CIELAB"):
        out[r0:r1] = _lab_rows(img[r0:r1])
    return out


def _lab_rows(img: np.ndarray) -> np.ndarray:
    f32 = np.float32
    u = _unit_np(img)
    if u.ndim == 2:
        L = f32(116.0) * _lab_f(_to_linear(u)) - f32(16.0)
        out = np.zeros(u.shape + (3,), np.float32)
        out[..., 0] = L
        return out
    r, g, b = (_to_linear(u[..., i]) for i in range(3))
    x = (f32(0.412453) * r + f32(0.357580) * g + f32(0.180423) * b) / f32(0.95047)
    y = f32(0.212671) * r + f32(0.715160) * g + f32(0.072169) * b
    z = (f32(0.019334) * r + f32(0.119193) * g + f32(0.950227) * b) / f32(1.08883)
    fx, fy, fz = _lab_f(x), _lab_f(y), _lab_f(z)
    out = np.empty(u.shape[:2] + (3,), np.float32)
    out[..., 0] = f32(116.0) * fy - f32(16.0)
    out[..., 1] = f32(500.0) * (fx - fy)
    out[..., 2] = f32(200.0) * (fy - fz)
    return out


def codes_np(lab: np.ndarray, q: int) -> np.ndarray:
    """Quantised colour codes (int32, same shape as ``lab[..., 0]``) of a float32 Lab image."""
    levels = 1 << q
    f32 = np.float32
    out = np.zeros(lab.shape[:-1], np.int32)
    for ch, shift in ((0, 2 * q), (1, q), (2, 0)):
        lo, hi = f32(LAB_LO[ch]), f32(LAB_HI[ch])
        inv_w = f32(levels) / (hi - lo)
        t = np.floor((lab[..., ch] - lo) * inv_w)
        qv = np.clip(t, 0, levels - 1).astype(np.int32)
        out |= qv << shift
    return out


def code_centres(codes, q: int, xp=np):
    """Lab coordinates (float64, ``(..., 3)``) of the bin centres of ``codes``."""
    levels = 1 << q
    mask = levels - 1
    codes = xp.asarray(codes)
    parts = ((codes >> (2 * q)), (codes >> q) & mask, codes & mask)
    out = xp.empty(codes.shape + (3,), dtype=xp.float64)
    for ch in range(3):
        lo, hi = float(np.float32(LAB_LO[ch])), float(np.float32(LAB_HI[ch]))
        out[..., ch] = lo + (parts[ch].astype(xp.float64) + 0.5) * ((hi - lo) / float(levels))
    return out


def bilateral_np(lab: np.ndarray, window: int, sigma_spatial: float, sigma_color: float, passes: int,
                 progress=None) -> np.ndarray:
    """The bilateral filter of :func:`bilateral_lab` on the CPU (float32)."""
    progress = as_progress(progress)
    f32 = np.float32
    r = window // 2
    inv2ss = f32(1.0 / (2.0 * sigma_spatial * sigma_spatial))
    inv2sr = f32(1.0 / (2.0 * sigma_color * sigma_color))
    h, w = lab.shape[:2]
    cur = lab.astype(np.float32, copy=True)
    for it in range(passes):
        progress.update(it / max(passes, 1), f"bilateral pass {it + 1}/{passes}")
        pad = np.pad(cur, ((r, r), (r, r), (0, 0)))
        sw = np.zeros((h, w), np.float32)
        acc = np.zeros((h, w, 3), np.float32)
        yy = np.arange(h)[:, None]
        xx = np.arange(w)[None, :]
        for dy in range(-r, r + 1):
            vy = (yy + dy >= 0) & (yy + dy < h)
            for dx in range(-r, r + 1):
                valid = vy & (xx + dx >= 0) & (xx + dx < w)
                nb = pad[r + dy:r + dy + h, r + dx:r + dx + w]
                d = nb - cur
                c2 = d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1] + d[..., 2] * d[..., 2]
                wgt = np.exp(-(f32(dx * dx + dy * dy) * inv2ss + c2 * inv2sr)).astype(np.float32)
                wgt = np.where(valid, wgt, f32(0.0))
                sw += wgt
                acc += wgt[..., None] * nb
        cur = (acc / sw[..., None]).astype(np.float32)
    progress.update(1.0, "bilateral")
    return cur


# --------------------------------------------------------------------------- CUDA path
def lab_device(be, img_d, n: int, c: int):
    """Interleaved float32 Lab of a device image (checked dtype), shape (n * 3,)."""
    xp = be.xp
    lab = xp.empty(3 * n, dtype=xp.float32)
    fn = kernel(be, _COLOR_SRC, f"rgb2lab_{PIXEL_SUFFIX[np.dtype(img_d.dtype)]}", options=CUDA_OPTIONS)
    fn(grid(n, 256), (256,), (img_d, np.int32(c), np.int64(n), lab))
    return lab


def bilateral_device(be, lab_d, h: int, w: int, window: int, sigma_spatial: float, sigma_color: float,
                     passes: int, out=None):
    """``passes`` bilateral passes on a device Lab buffer (ping-pong); returns the result."""
    xp = be.xp
    if passes <= 0:
        return lab_d
    fn = kernel(be, _COLOR_SRC, "bilateral_lab", options=CUDA_OPTIONS)
    other = out if out is not None else xp.empty_like(lab_d)
    src, dst = lab_d, other
    inv2ss = np.float32(1.0 / (2.0 * sigma_spatial * sigma_spatial))
    inv2sr = np.float32(1.0 / (2.0 * sigma_color * sigma_color))
    g = (-(-w // 16), -(-h // 16))
    for _ in range(passes):
        fn(g, (16, 16), (src, dst, np.int32(w), np.int32(h), np.int32(window // 2), inv2ss, inv2sr))
        src, dst = dst, src
    return src


def codes_device(be, img_d, n: int, c: int, q: int, hist=None, lab_d=None):
    """Codes (int32, n) of a device image or of a device Lab buffer; adds the pixel counts
    of each code to ``hist`` when given."""
    xp = be.xp
    codes = xp.empty(n, dtype=xp.int32)
    h = hist if hist is not None else NULL
    ch = int(CODES_CHUNK)
    g = grid(-(-n // ch), 256)
    if lab_d is not None:
        kernel(be, _COLOR_SRC, "codes_lab_smem", options=CUDA_OPTIONS)(
            g, (256,), (lab_d, np.int64(n), np.int32(q), np.int32(ch), codes, h))
    else:
        kernel(be, _COLOR_SRC, f"codes_smem_{PIXEL_SUFFIX[np.dtype(img_d.dtype)]}", options=CUDA_OPTIONS)(
            g, (256,), (img_d, np.int32(c), np.int64(n), np.int32(q), np.int32(ch), codes, h))
    return codes


# --------------------------------------------------------------------------- checks
def check_q(q) -> int:
    return check_int("q (bits per CIELAB channel)", q, MIN_Q, MAX_Q, error=ImsegInputError)


def check_bilateral(window, sigma_spatial, sigma_color, passes) -> tuple[int, float, float, int]:
    if (type(window) is int and type(passes) is int and type(sigma_spatial) is float and type(sigma_color) is float
            and 3 <= window <= MAX_BILATERAL_WINDOW and window % 2 == 1 and 0 <= passes <= MAX_BILATERAL_PASSES
            and 0.0 < sigma_spatial < math.inf and 0.0 < sigma_color < math.inf):
        return window, sigma_spatial, sigma_color, passes   # already canonical (every call of the tool's)
    passes_i = check_int("bilateral passes", passes, 0, MAX_BILATERAL_PASSES, error=ImsegInputError)
    win = check_int("the bilateral window (an odd number of pixels)", window, 3, MAX_BILATERAL_WINDOW,
                    error=ImsegInputError)
    if win % 2 == 0:
        raise ImsegInputError(
            f"the bilateral window must be an odd number of pixels from 3 to {MAX_BILATERAL_WINDOW}, got {window!r}")
    for name, v in (("sigma_spatial", sigma_spatial), ("sigma_color", sigma_color)):
        if not (isinstance(v, int | float | np.floating | np.integer) and np.isfinite(v) and v > 0):
            raise ImsegInputError(f"the bilateral {name} must be a positive number, got {v!r}")
    return win, float(sigma_spatial), float(sigma_color), passes_i


# --------------------------------------------------------------------------- public
def rgb2lab(image, *, device=None, progress=None):
    """Convert an sRGB (or grey) image to CIELAB (D65, 2 degree observer).

    Parameters
    ----------
    image : (H, W), (H, W, 3) or (H, W, 4) array
        uint8, uint16, bool or float in [0, 1]. Alpha is ignored; grey gives a = b = 0.
    device : str or Backend, optional
        ``"cpu"``, ``"cuda"``, ... (see :func:`gpu_kernels.backend.get_backend`).
    progress : callable or Progress, optional

    Returns
    -------
    lab : (H, W, 3) float32 ndarray
        L in [0, 100], a and b in about [-110, 100]; matches :func:`skimage.color.rgb2lab`
        within 1e-3.

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.color import rgb2lab
    >>> rgb2lab(np.full((1, 1), 255, np.uint8), device="cpu")[0, 0].tolist()
    [100.0, 0.0, 0.0]
    """
    progress = as_progress(progress)
    be = get_backend(device)
    img, h, w, c = as_image(image)
    progress.update(0.0, "CIELAB")
    if not be.is_gpu:
        return lab_np(img)
    with activated(be):
        img_d = be.xp.asarray(img)
        lab = lab_device(be, img_d, h * w, c)
        out = asnumpy(lab).reshape(h, w, 3)
    progress.update(1.0, "CIELAB")
    return out


def bilateral_lab(lab, *, window: int = DEFAULT_BILATERAL_WINDOW, sigma_spatial: float = DEFAULT_SIGMA_SPATIAL,
                  sigma_color: float = DEFAULT_SIGMA_COLOR, passes: int = 5, device=None, progress=None):
    """Bilateral filter of a CIELAB image, iterated.

    Each pass replaces a pixel by the mean of its ``window x window`` neighbourhood (the
    part inside the image) weighted by ``exp(-d^2 / (2 sigma_spatial^2) - dE^2 / (2
    sigma_color^2))``, with d the distance in pixels and dE the CIELAB difference (CIE76).

    Parameters
    ----------
    lab : (H, W, 3) float array
    window : int
        Odd window side, 3 to 17.
    sigma_spatial, sigma_color : float
        In pixels and in CIELAB units.
    passes : int
        Number of passes (0 returns the input).

    Returns
    -------
    (H, W, 3) float32 ndarray

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.color import bilateral_lab
    >>> flat = np.full((4, 4, 3), 50.0, np.float32)
    >>> round(float(bilateral_lab(flat, passes=2, device="cpu").max()), 4)
    50.0
    """
    progress = as_progress(progress)
    be = get_backend(device)
    win, ss, sr, passes = check_bilateral(window, sigma_spatial, sigma_color, passes)
    lab = np.asarray(asnumpy(lab), dtype=np.float32)
    if lab.ndim != 3 or lab.shape[2] != 3 or 0 in lab.shape:
        raise ImsegInputError(f"expected a non-empty (H, W, 3) CIELAB image, got shape {lab.shape}")
    if not be.is_gpu:
        return bilateral_np(lab, win, ss, sr, passes, progress)
    h, w = lab.shape[:2]
    with activated(be):
        d = be.xp.array(lab.reshape(-1), dtype=be.xp.float32, copy=True)  # the passes overwrite it
        out = bilateral_device(be, d, h, w, win, ss, sr, passes)
        res = asnumpy(out).reshape(h, w, 3)
    progress.update(1.0, "bilateral")
    return res


def quantize_lab(lab, *, q: int = DEFAULT_Q, device=None):
    """Quantised colour codes of a CIELAB image: int32 ``(H, W)`` in ``[0, 2**(3 q))``.

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.color import quantize_lab
    >>> int(quantize_lab(np.array([[[100.0, 0.0, 0.0]]], np.float32), q=5, device="cpu")[0, 0])
    32209
    """
    be = get_backend(device)
    q = check_q(q)
    lab = np.asarray(asnumpy(lab), dtype=np.float32)
    if lab.ndim != 3 or lab.shape[2] != 3:
        raise ImsegInputError(f"expected an (H, W, 3) CIELAB image, got shape {lab.shape}")
    if not be.is_gpu:
        return codes_np(lab, q)
    h, w = lab.shape[:2]
    with activated(be):
        d = be.xp.asarray(np.ascontiguousarray(lab).reshape(-1))
        codes = codes_device(be, None, h * w, 3, q, lab_d=d)
        return asnumpy(codes).reshape(h, w)
