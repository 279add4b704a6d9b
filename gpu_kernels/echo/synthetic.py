"""Synthetic 3-D echocardiography sequences with exact ground-truth motion.

The images follow the usual physical model of ultrasound speckle:

1. **Scatterers.** Random point scatterers fill the volume (``density`` per voxel), each
   with a complex Gaussian amplitude scaled by the echogenicity of the tissue it belongs
   to: bright myocardium, dark blood pool, grey surrounding tissue.
2. **Point-spread function.** The PSF is a Gaussian envelope, narrow along the beam (array
   axis 0) and wider across it, times a carrier ``exp(i k0 z)`` along the beam. In
   demodulated (IQ) form a scatterer at depth ``z_k`` contributes ``a_k exp(-i k0 z_k)``
   times the envelope, so the scatterers are splatted trilinearly with that phase and
   convolved (FFT) with the real envelope. Trilinear splatting followed by the sampled
   envelope equals placing the interpolated envelope at each scatterer's exact position, so
   speckle moves continuously with sub-voxel motion; the carrier phase makes speckle
   decorrelate under deformation the way real RF speckle does.
3. **Envelope and log compression.** The magnitude of the complex (analytic) signal is
   Rayleigh distributed in fully developed speckle; thermal noise is added to the complex
   signal first; the envelope is log-compressed to a ``dynamic_range`` in dB and mapped to
   ``[0, 1]`` (or to ``uint8``).

The anatomy is a left-ventricle-like thick prolate shell (long axis along array axis 0,
open at the base), whose tissue moves with a map ``phi_p`` of the cardiac phase ``p``
(0 at end-diastole, 1 at end-systole). ``phi_p`` is the composition of three maps, each of
Jacobian determinant exactly 1 inside the myocardium:

* radial contraction towards the long axis that preserves cross-sectional area,
  ``r'^2 = r^2 + C(z)`` (the blood pool is scaled instead and loses volume: ejection);
* long-axis shortening, the base descending towards the apex by the factor
  ``1 - shortening``, with the in-plane expansion ``1 / sqrt(f'(z))`` that keeps volume;
* twist about the long axis, the apex and the base rotating in opposite senses.

Beyond the heart the motion fades out smoothly (there it is not volume preserving, which is
harmless: only the myocardium is evaluated for volume change). Scatterers move with
``phi_p``; between frames a fraction of their amplitude is redrawn (``decorrelation``), the
way real speckle decorrelates.

Ground truth follows scikit-image's convention: for a pair (fixed frame ``i``, moving frame
``j``), ``u(x) = phi_j(phi_i^-1(x)) - x``, so that ``moving(x + u(x))`` shows the tissue that
``fixed(x)`` shows. ``phi_i^-1`` is computed by fixed-point iteration to 1e-6 voxels (the map
is smooth with a displacement gradient well below 1). Components are in voxels along the
array axes (z, y, x).

Example
-------
>>> from gpu_kernels.echo.synthetic import make_sequence
>>> seq = make_sequence(32, frames=3, seed=1)
>>> seq.frames.shape, seq.frames.dtype
((3, 32, 32, 32), dtype('uint8'))
>>> u = seq.displacement(0, 1)
>>> u.shape
(3, 32, 32, 32)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.jobs import as_progress

__all__ = [
    "DEFAULT_SIZE",
    "DEFAULT_FRAMES",
    "DEFAULT_NOISE",
    "DEFAULT_DECORRELATION",
    "DEFAULT_DENSITY",
    "DEFAULT_PSF_SIGMA",
    "DEFAULT_WAVELENGTH",
    "DEFAULT_DYNAMIC_RANGE",
    "DEFAULT_CONTRACTION",
    "DEFAULT_SHORTENING",
    "DEFAULT_TWIST",
    "MIN_SIZE",
    "MAX_SIZE",
    "LABEL_BACKGROUND",
    "LABEL_MYOCARDIUM",
    "LABEL_BLOOD",
    "LVMotion",
    "AffineMotion",
    "SyntheticEcho",
    "make_sequence",
    "make_pair",
    "speckle_volume",
]

from gpu_kernels.echo import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: edge length in voxels of the generated volume (an int for a cube or a (Z, Y, X) tuple)
DEFAULT_SIZE = _d.SYNTH_SIZE
#: frames over one cardiac cycle (frame 0 end-diastole, frame frames//2 end-systole)
DEFAULT_FRAMES = _d.SYNTH_FRAMES
#: standard deviation of the complex thermal noise, relative to the RMS speckle signal
DEFAULT_NOISE = _d.SYNTH_NOISE
#: fraction of each scatterer's amplitude redrawn between consecutive frames (0: speckle
#: moves rigidly with the tissue, 1: new speckle every frame)
DEFAULT_DECORRELATION = _d.SYNTH_DECORRELATION
#: scatterers per voxel (about 10 per resolution cell with the default PSF: fully developed speckle)
DEFAULT_DENSITY = 0.2
#: standard deviations of the PSF envelope in voxels along (axis 0 = beam, axis 1, axis 2)
DEFAULT_PSF_SIGMA = (1.0, 2.0, 2.0)
#: carrier wavelength along the beam in voxels
DEFAULT_WAVELENGTH = 2.5
#: dB of envelope range mapped onto [0, 1]
DEFAULT_DYNAMIC_RANGE = 45.0
#: fraction of the blood pool's cross-section lost at end-systole at mid-ventricle
DEFAULT_CONTRACTION = _d.SYNTH_CONTRACTION
#: long-axis shortening at end-systole (base-to-apex length shrinks by this fraction)
DEFAULT_SHORTENING = _d.SYNTH_SHORTENING
#: apex-to-base rotation difference at end-systole, degrees
DEFAULT_TWIST = _d.SYNTH_TWIST
MIN_SIZE = _d.SYNTH_MIN_SIZE
MAX_SIZE = _d.SYNTH_MAX_SIZE

LABEL_BACKGROUND = 0
LABEL_MYOCARDIUM = 1
LABEL_BLOOD = 2
#: scatterer amplitude scale per label (background, myocardium, blood)
_ECHOGENICITY = (0.25, 1.0, 0.015)


# --------------------------------------------------------------------------- helpers
def _smoothstep(xp, u):
    u = xp.clip(u, 0.0, 1.0)
    return u * u * (3.0 - 2.0 * u)


def _window(xp, s, s1, s2):
    """1 for s <= s1, 0 for s >= s2, a smooth (C1) step between."""
    return 1.0 - _smoothstep(xp, (s - s1) / (s2 - s1))


def _as_size(size) -> tuple[int, int, int]:
    if isinstance(size, (int, np.integer)):
        size = (int(size),) * 3
    try:
        size = tuple(int(s) for s in size)
    except TypeError:
        raise EchoInputError(f"size must be an int or three ints (Z, Y, X), not {size!r}") from None
    if len(size) != 3:
        raise EchoInputError(f"size must be an int or three ints (Z, Y, X), not {size!r}")
    for s in size:
        if not MIN_SIZE <= s <= MAX_SIZE:
            raise EchoInputError(f"each size must be between {MIN_SIZE} and {MAX_SIZE} voxels, got {size}")
    return size


def cardiac_phase(frames: int, cycles: float = 1.0) -> np.ndarray:
    """Phase 0 (end-diastole) .. 1 (end-systole) of each frame over ``cycles`` cycles."""
    t = np.arange(frames, dtype=np.float64)
    return 0.5 * (1.0 - np.cos(2.0 * np.pi * cycles * t / max(frames, 1)))


# --------------------------------------------------------------------------- motion models
class _Motion:
    """A material map ``phi_p``: positions (3, n) in voxels (z, y, x) at phase p."""

    def forward(self, pts, p, xp):  # pragma: no cover - interface
        raise NotImplementedError

    def inverse(self, x, p, xp, *, tol: float = 1e-6, max_iter: int = 200):
        """``phi_p^-1(x)`` by fixed-point iteration ``X <- x - (phi_p(X) - X)``."""
        X = x.copy()
        for _ in range(max_iter):
            d = self.forward(X, p, xp) - X
            Xn = x - d
            err = float(xp.max(xp.abs(Xn - X))) if Xn.size else 0.0
            X = Xn
            if err < tol:
                break
        return X

    def labels(self, pts, xp):
        """Tissue label of material points (ED coordinates): 0 background, 1 myocardium, 2 blood."""
        return xp.zeros(pts.shape[1:], dtype=xp.uint8)


@dataclass
class AffineMotion(_Motion):
    """``phi_p(X) = c + (I + p (A - I)) (X - c) + p t``: identity at p = 0, the affine map at p = 1.

    ``matrix`` acts on (z, y, x) voxel coordinates; ``center`` defaults to the volume centre.
    Used for known translations and rotations.
    """

    matrix: Any = None
    shift: Any = (0.0, 0.0, 0.0)
    center: Any = None

    def _parts(self, xp, shape_hint=None):
        A = np.eye(3) if self.matrix is None else np.asarray(self.matrix, dtype=np.float64)
        t = np.asarray(self.shift, dtype=np.float64)
        c = np.zeros(3) if self.center is None else np.asarray(self.center, dtype=np.float64)
        return A, t, c

    def forward(self, pts, p, xp):
        A, t, c = self._parts(xp)
        M = np.eye(3) + p * (A - np.eye(3))
        q = pts - xp.asarray(c).reshape((3,) + (1,) * (pts.ndim - 1))
        out = xp.empty_like(pts)
        for i in range(3):
            out[i] = M[i, 0] * q[0] + M[i, 1] * q[1] + M[i, 2] * q[2] + c[i] + p * t[i]
        return out


@dataclass
class LVMotion(_Motion):
    """Left-ventricle-like shell and its volume-preserving wall motion (see the module text).

    Geometry in voxels of a (Z, Y, X) volume: long axis along z through the in-plane centre,
    outer semi-axes ``0.27 min(Y, X)`` and ``0.48 Z``, inner ``0.175 min(Y, X)`` and ``0.40 Z``,
    centred at ``z = 0.64 Z``, open at the base plane ``z = 0.78 Z`` (apex at low z).
    """

    shape: tuple
    contraction: float = DEFAULT_CONTRACTION
    shortening: float = DEFAULT_SHORTENING
    twist: float = DEFAULT_TWIST
    geom: dict = field(default_factory=dict, init=False)

    def __post_init__(self):
        Z, Y, X = self.shape
        L, R = float(Z), float(min(Y, X))
        zc = 0.64 * L
        g = dict(cy=(Y - 1) / 2.0, cx=(X - 1) / 2.0, zc=zc,
                 co=0.48 * L, ci=0.40 * L, ao=0.27 * R, ai=0.175 * R,
                 za=zc - 0.48 * L, zb=zc + 0.14 * L,
                 rw1=0.33 * R, rw2=0.75 * R, eps=0.04 * L)
        g["zw1"] = g["zb"] + 0.03 * L
        g["zw2"] = g["zb"] + 0.32 * L
        self.geom = g

    # -- pieces ---------------------------------------------------------------
    def labels(self, pts, xp):
        g = self.geom
        z, y, x = pts[0], pts[1] - g["cy"], pts[2] - g["cx"]
        r2 = y * y + x * x
        outer = ((z - g["zc"]) / g["co"]) ** 2 + r2 / g["ao"] ** 2 <= 1.0
        inner = ((z - g["zc"]) / g["ci"]) ** 2 + r2 / g["ai"] ** 2 <= 1.0
        below = z <= g["zb"]
        lab = xp.zeros(z.shape, dtype=xp.uint8)
        lab[outer & ~inner & below] = LABEL_MYOCARDIUM
        lab[inner | (outer & ~below)] = LABEL_BLOOD
        return lab

    def forward(self, pts, p, xp):
        g = self.geom
        p = float(p)
        z = pts[0]
        y = pts[1] - g["cy"]
        x = pts[2] - g["cx"]
        r2 = y * y + x * x
        r = xp.sqrt(r2)
        # 1. radial contraction, area preserving outside the blood pool
        t = (z - g["zc"]) / g["ci"]
        one_t2 = xp.clip(1.0 - t * t, 0.0, None)
        ri2 = g["ai"] ** 2 * one_t2
        C = -self.contraction * p * g["ai"] ** 2 * one_t2 * one_t2
        w1 = _window(xp, r, g["rw1"], g["rw2"])
        cavity = r2 < ri2
        rp2_wall = r2 + C * w1
        rp2_cav = r2 * (1.0 - self.contraction * p * one_t2)
        rp2 = xp.where(cavity, rp2_cav, rp2_wall)
        scale = xp.where(r2 > 0, xp.sqrt(xp.clip(rp2, 0.0, None) / xp.where(r2 > 0, r2, 1.0)), 1.0)
        y = y * scale
        x = x * scale
        # 2. long-axis shortening with the in-plane expansion that keeps volume
        r = xp.sqrt(y * y + x * x)
        zeta = z - g["za"]
        eps = g["eps"]
        u = xp.clip(zeta / eps, 0.0, 1.0)
        sig = u * u * (3.0 - 2.0 * u)
        G = xp.where(zeta <= eps, eps * (u ** 3 - 0.5 * u ** 4), 0.5 * eps + (zeta - eps))
        G = xp.where(zeta <= 0, 0.0, G)
        sp = self.shortening * p
        W = _window(xp, r, g["rw1"], g["rw2"]) * _window(xp, z, g["zw1"], g["zw2"])
        q = 1.0 / xp.sqrt(1.0 - sp * sig)
        s_inplane = 1.0 + W * (q - 1.0)
        y = y * s_inplane
        x = x * s_inplane
        z = z - W * sp * G
        # 3. twist: apex and base rotate in opposite senses
        r = xp.sqrt(y * y + x * x)
        W3 = _window(xp, r, g["rw1"], g["rw2"]) * _window(xp, z, g["zw1"], g["zw2"])
        frac = xp.clip((z - g["za"]) / (g["zb"] - g["za"]), 0.0, 1.0)
        psi = math.radians(self.twist) * p * (0.5 - frac) * W3
        c, s = xp.cos(psi), xp.sin(psi)
        y, x = c * y - s * x, s * y + c * x
        out = xp.empty_like(pts)
        out[0] = z
        out[1] = y + g["cy"]
        out[2] = x + g["cx"]
        return out


# --------------------------------------------------------------------------- rendering
class _Renderer:
    """Scatterers -> complex RF (trilinear splat, FFT with the PSF) -> envelope -> log."""

    def __init__(self, shape, *, psf_sigma, wavelength, be):
        self.shape = tuple(shape)
        self.be = be
        xp = be.xp
        self.pad = int(math.ceil(3.0 * max(psf_sigma))) + 2
        self.gshape = tuple(s + 2 * self.pad for s in self.shape)
        # PSF sampled on the padded grid, centred at index 0 (wrap-around)
        axes = [np.fft.fftfreq(n, 1.0 / n) for n in self.gshape]  # 0, 1, .., -1
        dz, dy, dx = np.meshgrid(*axes, indexing="ij", sparse=True)
        env = np.exp(-0.5 * ((dz / psf_sigma[0]) ** 2 + (dy / psf_sigma[1]) ** 2 + (dx / psf_sigma[2]) ** 2))
        env /= np.sqrt(np.sum(env ** 2))
        self.k0 = 2.0 * np.pi / float(wavelength)
        self.psf_hat = xp.asarray(np.fft.fftn(env.astype(np.complex64)).astype(np.complex64))

    def rf(self, pos, amp):
        """Complex RF on the (unpadded) grid from scatterers at ``pos`` (3, n) with ``amp`` (n,)."""
        xp = self.be.xp
        G = self.gshape
        P = pos + self.pad
        base = xp.floor(P)
        f = (P - base).astype(xp.float32)
        b = base.astype(xp.int64)
        keep = ((b[0] >= 0) & (b[0] < G[0] - 1) & (b[1] >= 0) & (b[1] < G[1] - 1)
                & (b[2] >= 0) & (b[2] < G[2] - 1))
        b, f, a = b[:, keep], f[:, keep], amp[keep]
        a = a * xp.exp(-1j * self.k0 * pos[0, keep]).astype(xp.complex64)   # IQ phase of each scatterer
        n = G[0] * G[1] * G[2]
        grid_re = xp.zeros(n, dtype=xp.float64)
        grid_im = xp.zeros(n, dtype=xp.float64)
        lin0 = (b[0] * G[1] + b[1]) * G[2] + b[2]
        ar, ai = a.real.astype(xp.float32), a.imag.astype(xp.float32)
        for dz in (0, 1):
            wz = f[0] if dz else 1.0 - f[0]
            for dy in (0, 1):
                wy = f[1] if dy else 1.0 - f[1]
                for dx in (0, 1):
                    wx = f[2] if dx else 1.0 - f[2]
                    w = wz * wy * wx
                    idx = lin0 + (dz * G[1] + dy) * G[2] + dx
                    grid_re += xp.bincount(idx, weights=w * ar, minlength=n)
                    grid_im += xp.bincount(idx, weights=w * ai, minlength=n)
        grid = (grid_re + 1j * grid_im).astype(xp.complex64).reshape(G)
        out = xp.fft.ifftn(xp.fft.fftn(grid) * self.psf_hat)
        p = self.pad
        return out[p:p + self.shape[0], p:p + self.shape[1], p:p + self.shape[2]].astype(xp.complex64)


def _log_compress(xp, env, ref, dynamic_range):
    db = 20.0 * xp.log10(xp.maximum(env / ref, 1e-12))
    return xp.clip((db + dynamic_range) / dynamic_range, 0.0, 1.0).astype(xp.float32)


# --------------------------------------------------------------------------- result
@dataclass
class SyntheticEcho:
    """A synthetic sequence and its exact motion.

    Attributes
    ----------
    frames : ndarray, (T, Z, Y, X)
        ``uint8`` (or ``float32`` in [0, 1]) volumes, indexed [t, z, y, x].
    spacing : tuple of float
        Voxel size (z, y, x) in mm.
    phases : ndarray, (T,)
        Cardiac phase of each frame (0 end-diastole, 1 end-systole).
    motion : LVMotion or AffineMotion
        The material map; :meth:`displacement` evaluates it.
    params : dict
        The generator's settings.
    """

    frames: np.ndarray
    spacing: tuple
    phases: np.ndarray
    motion: _Motion
    params: dict = field(default_factory=dict)
    device: Any = None

    @property
    def shape(self) -> tuple:
        return tuple(self.frames.shape[1:])

    def _grid_chunks(self, xp, chunk=16):
        Z, Y, X = self.shape
        yy, xx = xp.meshgrid(xp.arange(Y, dtype=xp.float64), xp.arange(X, dtype=xp.float64), indexing="ij")
        for z0 in range(0, Z, chunk):
            z1 = min(Z, z0 + chunk)
            zz = xp.arange(z0, z1, dtype=xp.float64).reshape(-1, 1, 1)
            pts = xp.empty((3, z1 - z0, Y, X), dtype=xp.float64)
            pts[0] = zz
            pts[1] = yy[None]
            pts[2] = xx[None]
            yield z0, z1, pts

    def displacement(self, fixed: int, moving: int, *, device=None) -> np.ndarray:
        """Exact displacement (3, Z, Y, X) float32, in voxels, from frame ``fixed`` to ``moving``:
        ``frames[moving](x + u(x))`` shows the tissue of ``frames[fixed](x)``."""
        be = get_backend(self.device if device is None else device)
        xp = be.xp
        T = len(self.phases)
        for k in (fixed, moving):
            if not -T <= int(k) < T:
                raise EchoInputError(f"frame {k} does not exist: the sequence has {T} frames")
        pi, pj = float(self.phases[fixed]), float(self.phases[moving])
        out = np.empty((3,) + self.shape, dtype=np.float32)
        with be.activate():
            for z0, z1, x in self._grid_chunks(xp):
                X = self.motion.inverse(x, pi, xp) if pi != 0.0 else x
                y = self.motion.forward(X, pj, xp)
                out[:, z0:z1] = asnumpy((y - x).astype(xp.float32))
        return out

    def labels(self, frame: int = 0, *, device=None) -> np.ndarray:
        """Tissue labels (Z, Y, X) uint8 of ``frame``: 0 background, 1 myocardium, 2 blood."""
        be = get_backend(self.device if device is None else device)
        xp = be.xp
        p = float(self.phases[frame])
        out = np.empty(self.shape, dtype=np.uint8)
        with be.activate():
            for z0, z1, x in self._grid_chunks(xp):
                X = self.motion.inverse(x, p, xp) if p != 0.0 else x
                out[z0:z1] = asnumpy(self.motion.labels(X, xp))
        return out

    def myocardium_mask(self, frame: int = 0, *, device=None) -> np.ndarray:
        """Boolean mask of the myocardium in ``frame`` (where the true motion keeps volume)."""
        return self.labels(frame, device=device) == LABEL_MYOCARDIUM


# --------------------------------------------------------------------------- generators
def _check_common(frames, noise, decorrelation, density, dynamic_range, psf_sigma, wavelength):
    if int(frames) < 1:
        raise EchoInputError(f"frames must be at least 1, got {frames}")
    if not 0.0 <= float(noise) <= 10.0:
        raise EchoInputError(f"noise must be between 0 and 10 (relative to the speckle RMS), got {noise}")
    if not 0.0 <= float(decorrelation) <= 1.0:
        raise EchoInputError(f"decorrelation must be between 0 and 1, got {decorrelation}")
    if not 0.01 <= float(density) <= 10.0:
        raise EchoInputError(f"density must be between 0.01 and 10 scatterers per voxel, got {density}")
    if not 1.0 <= float(dynamic_range) <= 200.0:
        raise EchoInputError(f"dynamic_range must be between 1 and 200 dB, got {dynamic_range}")
    if len(psf_sigma) != 3 or any(not 0.3 <= float(s) <= 8.0 for s in psf_sigma):
        raise EchoInputError(f"psf_sigma must be three values between 0.3 and 8 voxels, got {psf_sigma}")
    if not 1.0 <= float(wavelength) <= 100.0:
        raise EchoInputError(f"wavelength must be between 1 and 100 voxels, got {wavelength}")


def _render_sequence(shape, motion, phases, *, noise, decorrelation, density, psf_sigma, wavelength,
                     dynamic_range, dtype, seed, be, progress, margin):
    xp = be.xp
    rng = np.random.default_rng(seed)
    lo = np.array([-margin] * 3, dtype=np.float64)
    hi = np.array(shape, dtype=np.float64) - 1 + margin
    vol = float(np.prod(hi - lo))
    n = int(rng.poisson(density * vol))
    X0 = (lo[:, None] + (hi - lo)[:, None] * rng.random((3, n))).astype(np.float64)
    amp = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) / np.sqrt(2.0)
    T = len(phases)
    out = np.empty((T,) + tuple(shape), dtype=np.uint8 if dtype == "uint8" else np.float32)
    with be.activate():
        Xd = xp.asarray(X0)
        echo = xp.asarray(np.asarray(_ECHOGENICITY, dtype=np.float32))[motion.labels(Xd, xp).astype(xp.int64)]
        ren = _Renderer(shape, psf_sigma=psf_sigma, wavelength=wavelength, be=be)
        ref = rms = None
        keep = math.sqrt(max(0.0, 1.0 - float(decorrelation) ** 2))
        for t in range(T):
            progress.update(t / T, f"frame {t + 1}/{T}")
            if t > 0 and decorrelation > 0:
                fresh = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) / np.sqrt(2.0)
                amp = keep * amp + float(decorrelation) * fresh
            pos = motion.forward(Xd, float(phases[t]), xp)
            rf = ren.rf(pos, xp.asarray(amp.astype(np.complex64)) * echo)
            if rms is None:
                rms = float(xp.sqrt(xp.mean(xp.abs(rf) ** 2)))
            if noise > 0:
                nz = rng.standard_normal((2,) + tuple(shape), dtype=np.float32)
                rf = rf + (float(noise) * rms / np.sqrt(2.0)) * xp.asarray(nz[0] + 1j * nz[1])
            env = xp.abs(rf)
            if ref is None:
                sub = env[::2, ::2, ::2]
                ref = float(xp.percentile(sub, 99.5)) if sub.size else 1.0
                ref = ref if ref > 0 else 1.0
            img = _log_compress(xp, env, ref, float(dynamic_range))
            if dtype == "uint8":
                out[t] = asnumpy(xp.rint(img * 255.0).astype(xp.uint8))
            else:
                out[t] = asnumpy(img)
        progress.update(1.0, f"frame {T}/{T}")
    return out


def make_sequence(
    size=DEFAULT_SIZE,
    frames: int = DEFAULT_FRAMES,
    *,
    noise: float = DEFAULT_NOISE,
    decorrelation: float = DEFAULT_DECORRELATION,
    density: float = DEFAULT_DENSITY,
    psf_sigma=DEFAULT_PSF_SIGMA,
    wavelength: float = DEFAULT_WAVELENGTH,
    dynamic_range: float = DEFAULT_DYNAMIC_RANGE,
    contraction: float = DEFAULT_CONTRACTION,
    shortening: float = DEFAULT_SHORTENING,
    twist: float = DEFAULT_TWIST,
    cycles: float = 1.0,
    spacing=(1.0, 1.0, 1.0),
    dtype: str = "uint8",
    seed: int = 0,
    device=None,
    progress=None,
) -> SyntheticEcho:
    """A synthetic 3-D echo sequence of a beating left ventricle, with exact motion.

    Parameters
    ----------
    size : int or (int, int, int)
        Volume size in voxels (cube edge, or Z, Y, X), 16..512.
    frames : int
        Number of frames over ``cycles`` cardiac cycles; frame 0 is end-diastole.
    noise, decorrelation, density, psf_sigma, wavelength, dynamic_range
        Image formation (see the module text and the ``DEFAULT_*`` constants).
    contraction, shortening, twist
        Motion at end-systole: blood-pool cross-section lost (fraction), long-axis shortening
        (fraction) and apex-to-base twist (degrees).
    spacing : 3 floats
        Voxel size in mm, carried to the result.
    dtype : {"uint8", "float32"}
    seed : int
        The sequence is a deterministic function of the parameters and the seed.
    device : str or Backend, optional
        Where to render (the FFTs and splatting run on the GPU with CuPy).
    progress : callable or Progress, optional

    Returns
    -------
    SyntheticEcho

    Example
    -------
    >>> seq = make_sequence(32, frames=2, seed=0)
    >>> float(abs(seq.displacement(0, 0)).max())
    0.0
    """
    shape = _as_size(size)
    _check_common(frames, noise, decorrelation, density, dynamic_range, psf_sigma, wavelength)
    if dtype not in ("uint8", "float32"):
        raise EchoInputError(f"dtype must be 'uint8' or 'float32', not {dtype!r}")
    if not 0.0 <= contraction < 0.95 or not 0.0 <= shortening < 0.5 or not -90.0 <= twist <= 90.0:
        raise EchoInputError("contraction must be in [0, 0.95), shortening in [0, 0.5) and twist in [-90, 90] degrees")
    be = get_backend(device)
    progress = as_progress(progress)
    motion = LVMotion(shape, contraction=float(contraction), shortening=float(shortening), twist=float(twist))
    phases = cardiac_phase(int(frames), cycles)
    margin = int(math.ceil(0.12 * max(shape))) + 2
    out = _render_sequence(shape, motion, phases, noise=float(noise), decorrelation=float(decorrelation),
                           density=float(density), psf_sigma=tuple(float(s) for s in psf_sigma),
                           wavelength=float(wavelength), dynamic_range=float(dynamic_range), dtype=dtype,
                           seed=seed, be=be, progress=progress, margin=margin)
    params = dict(size=shape, frames=int(frames), noise=noise, decorrelation=decorrelation, density=density,
                  psf_sigma=tuple(psf_sigma), wavelength=wavelength, dynamic_range=dynamic_range,
                  contraction=contraction, shortening=shortening, twist=twist, cycles=cycles, seed=seed)
    return SyntheticEcho(out, tuple(float(s) for s in spacing), phases, motion, params, device=be)


def make_pair(
    size=64,
    *,
    matrix=None,
    shift=(0.0, 0.0, 0.0),
    center=None,
    noise: float = 0.0,
    decorrelation: float = 0.0,
    density: float = DEFAULT_DENSITY,
    psf_sigma=DEFAULT_PSF_SIGMA,
    wavelength: float = DEFAULT_WAVELENGTH,
    dynamic_range: float = DEFAULT_DYNAMIC_RANGE,
    dtype: str = "float32",
    seed: int = 0,
    device=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A speckle pair related by an affine map, and its exact displacement.

    The scatterers of the moving volume are those of the fixed volume moved by
    ``X -> center + matrix (X - center) + shift`` (voxels, z/y/x order). Returns
    ``(fixed, moving, u)`` with ``moving(x + u(x)) = fixed(x)`` up to speckle noise.

    Example
    -------
    >>> f, m, u = make_pair(32, shift=(0.5, 0.0, -1.0))
    >>> [round(float(c.mean()), 3) for c in u]
    [0.5, 0.0, -1.0]
    """
    shape = _as_size(size)
    _check_common(2, noise, decorrelation, density, dynamic_range, psf_sigma, wavelength)
    if center is None:
        center = tuple((s - 1) / 2.0 for s in shape)
    motion = AffineMotion(matrix=matrix, shift=shift, center=center)
    be = get_backend(device)
    A = np.eye(3) if matrix is None else np.asarray(matrix, dtype=np.float64)
    reach = float(np.abs(np.asarray(shift)).max()) + float(np.abs(A - np.eye(3)).max()) * max(shape)
    margin = int(math.ceil(reach)) + 4
    seq = SyntheticEcho(
        _render_sequence(shape, motion, np.array([0.0, 1.0]), noise=float(noise),
                         decorrelation=float(decorrelation), density=float(density),
                         psf_sigma=tuple(float(s) for s in psf_sigma), wavelength=float(wavelength),
                         dynamic_range=float(dynamic_range), dtype=dtype, seed=seed, be=be,
                         progress=as_progress(None), margin=margin),
        (1.0, 1.0, 1.0), np.array([0.0, 1.0]), motion, device=be)
    return seq.frames[0], seq.frames[1], seq.displacement(0, 1)


def speckle_volume(size=64, *, seed: int = 0, dtype: str = "float32", device=None) -> np.ndarray:
    """One volume of fully developed speckle (no anatomy), e.g. for tests."""
    f, _, _ = make_pair(size, seed=seed, dtype=dtype, device=device)
    return f


def rotation_matrix(axis: int, degrees: float) -> np.ndarray:
    """3x3 rotation about array axis ``axis`` (0 = z, 1 = y, 2 = x) acting on (z, y, x)."""
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    i, j = [k for k in range(3) if k != axis]
    R = np.eye(3)
    R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
    return R


__all__.append("rotation_matrix")
__all__.append("cardiac_phase")
