"""The pictures of one flow result, made where the flow was computed (Qt-free).

A live flow edit at 1080p spent 127 ms of its 154 ms on the host painting the colour wheel
(issue 20). :class:`FlowPicture` colour-codes on the GPU when the result came from one: the
flow goes to the device once per result, and each picture (a new opacity, threshold or colour
radius) comes back as one 8-bit RGBA image in pinned memory. On the CPU it is the NumPy path
(:mod:`gpu_kernels.flow.colorwheel`), with the same bytes. The result's summary numbers (mean
and largest magnitude, mean quality) and the automatic colour radius are computed once.

It takes the result by its attributes (``u``, ``v``, ``quality``, ``data.mask``, ``device``),
so this layer does not import the tool layer.
"""

from __future__ import annotations

import logging

import numpy as np

from gpu_kernels.flow import colorwheel as _cw

__all__ = ["FlowPicture", "picture_backend"]

log = logging.getLogger(__name__)


def picture_backend(device_label: str | None):
    """The backend a result's pictures are made on: its own GPU, else the CPU (also where that
    GPU cannot be used here, e.g. a result loaded from a file)."""
    from gpu_kernels.backend import get_backend

    if device_label and str(device_label).startswith("cuda"):
        try:
            return get_backend(str(device_label))
        except Exception as exc:  # noqa: BLE001 - the CPU draws it then
            log.debug("flow pictures on the CPU: %s", exc)
    return get_backend("cpu")


class FlowPicture:
    """Pictures and summary numbers of one flow result.

    Parameters
    ----------
    result
        Anything with ``u``, ``v``, ``quality`` (``(H, W)`` arrays), ``data.mask`` (None or a
        bool map of the known pixels) and ``device`` (the label of the device that computed it).
    device : str or Backend, optional
        Where to draw (default: :func:`picture_backend` of ``result.device``).
    """

    def __init__(self, result, device=None):
        self.result = result
        self.be = picture_backend(getattr(result, "device", None)) if device is None else device
        if isinstance(self.be, str):
            from gpu_kernels.backend import get_backend

            self.be = get_backend(self.be)
        data = getattr(result, "data", None)
        mask = getattr(data, "mask", None)
        self.mask = None if mask is None else np.asarray(mask, bool)
        self._dev = None
        self._radius: float | None = None
        self._stats: dict | None = None
        self._rgb: tuple | None = None     # (radius, colours) on the CPU

    # ------------------------------------------------------------------ arrays
    def _arrays(self):
        """(u, v, quality, mask) where the pictures are made: on the GPU uploaded once."""
        res = self.result
        if not self.be.is_gpu:
            return res.u, res.v, res.quality, self.mask
        if self._dev is None:
            xp = self.be.xp
            with self.be.activate():
                self._dev = (xp.asarray(res.u), xp.asarray(res.v), xp.asarray(res.quality),
                             None if self.mask is None else xp.asarray(self.mask))
        return self._dev

    # ------------------------------------------------------------------ numbers
    def _guarded(self, fn):
        """``fn()``; where the GPU fails (out of memory, a lost context), the CPU draws from then on."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - the picture still comes, from the CPU
            if not self.be.is_gpu:
                raise
            from gpu_kernels.backend import get_backend

            log.warning("flow pictures on the CPU from now on: the GPU failed (%s: %s)", type(exc).__name__, exc)
            self.be, self._dev, self._radius, self._stats = get_backend("cpu"), None, None, None
            return fn()

    def radius(self) -> float:
        """The automatic colour radius: the largest known magnitude (pixels)."""
        return self._guarded(self._radius_now)

    def _radius_now(self) -> float:
        if self._radius is None:
            u, v, _q, m = self._arrays()
            self._radius = _cw.flow_radius(u, v, valid=m, device=self.be)
        return self._radius

    def stats(self) -> dict:
        """``mean_mag``, ``max_mag`` (pixels) and ``mean_quality`` over the known pixels (NaN where none is)."""
        return self._guarded(self._stats_now)

    def _stats_now(self) -> dict:
        if self._stats is None:
            u, v, q, m = self._arrays()
            xp = self.be.xp
            with self.be.activate():
                mag = xp.hypot(u, v)
                if m is not None:
                    mag, q = mag[m], q[m]
                n = int(mag.size)
                vals = xp.stack([mag.mean(), mag.max(), q.mean()]) if n else None
                vals = [float(x) for x in self.be.asnumpy(vals)] if n else [float("nan")] * 3
            self._stats = dict(zip(("mean_mag", "max_mag", "mean_quality"), vals, strict=True))
        return self._stats

    # ------------------------------------------------------------------ pictures
    def rgba(self, *, max_flow: float | None, alpha: int, threshold: float) -> np.ndarray:
        """``(H, W, 4)`` uint8 on the host: the colour wheel, ``alpha`` where the pixel is known
        and its quality at least ``threshold`` (the bytes of :func:`~gpu_kernels.flow.colorwheel.flow_to_rgba`).

        On the GPU one kernel makes it (about 3 ms at 1080p with the upload). On the CPU the
        colours of a radius are kept, so an opacity or threshold edit only sets the alpha channel
        (the colour coding is 60 ms at 1080p on 16 cores, 0.2-0.45 s on 2)."""
        return self._guarded(lambda: self._rgba_now(max_flow, alpha, threshold))

    def _rgba_now(self, max_flow, alpha, threshold) -> np.ndarray:
        u, v, q, m = self._arrays()
        if self.be.is_gpu:
            return _cw.flow_to_rgba(u, v, max_flow=self._gpu_max_flow(max_flow), valid=m, alpha=alpha, quality=q, threshold=threshold,
                                    device=self.be)
        a = _cw.check_alpha(alpha)
        rgb = self.rgb(max_flow=max_flow)
        out = np.empty(rgb.shape[:2] + (4,), np.uint8)
        out[..., :3] = rgb
        out[..., 3] = _cw.alpha_channel(rgb.shape[:2], m, q, threshold, a)
        return out

    def _gpu_max_flow(self, max_flow):
        """The radius to colour with on the GPU: the cached automatic one for ``None`` (the same
        value the kernel would find, without its reduction and read-back at every redraw)."""
        if max_flow is not None:
            return max_flow
        r = self._radius_now()
        return r if r > 0 else None   # no known motion: the kernel's own zero-radius case

    def rgb(self, *, max_flow: float | None) -> np.ndarray:
        """``(H, W, 3)`` uint8 on the host: the colour wheel, unknown pixels black (on the CPU
        kept for the last radius asked for; do not write into it)."""
        return self._guarded(lambda: self._rgb_now(max_flow))

    def _rgb_now(self, max_flow) -> np.ndarray:
        u, v, _q, m = self._arrays()
        if self.be.is_gpu:
            return _cw.flow_to_color(u, v, max_flow=self._gpu_max_flow(max_flow), valid=m, device=self.be)
        key = None if max_flow is None else float(max_flow)
        if self._rgb is None or self._rgb[0] != key:
            self._rgb = (key, _cw.flow_to_color(u, v, max_flow=max_flow, valid=m, device=self.be))
        return self._rgb[1]
