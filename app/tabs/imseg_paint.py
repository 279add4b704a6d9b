"""The image segmentation tab's live picture: the boundaries over the image, drawn for each new
result of a live edit without redoing what the edit did not change.

:func:`gpu_kernels.imseg.vis.boundaries` (the export's and the CLI's picture) converts the image
to 8-bit RGB again, builds a full boolean mask with four strided ORs and paints it through a
boolean index over the three channels: ~6 ms per coarseness edit at 1080p on the dev CPU, 2-3x
that on the GPU host, most of a live edit's paint. Here the 8-bit picture of the input is made
once per input (:class:`BoundaryPainter`), and the boundary pixels are found as flat indices from
two contiguous comparisons of the label map: the same pixels (tests/ux/test_ux8b_imseg_live.py
compares them with ``vis.boundaries`` on every picture), about 5x faster.
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.imseg import vis

__all__ = ["BoundaryPainter", "boundary_picture"]


def boundary_picture(base: np.ndarray, labels: np.ndarray, color=vis.BOUNDARY_COLOR, *,
                     scratch: np.ndarray | None = None) -> np.ndarray:
    """``base`` (8-bit RGB, H x W x 3, as ``vis.to_rgb8`` gives it) with every pixel that has a
    4-neighbour of another label in ``color``: pixel for pixel ``vis.boundaries(image, labels)``.
    ``base`` is not changed. ``scratch``: a boolean array of at least H * W - 1 elements to compare
    into (kept by :class:`BoundaryPainter`: two fresh 2 MB arrays a picture were page faults)."""
    lab = np.ascontiguousarray(labels)
    h, w = lab.shape
    if base.shape[:2] != (h, w):
        raise ValueError(f"the labels ({h} x {w}) do not match the picture ({base.shape[0]} x {base.shape[1]})")
    out = base.copy()
    n = lab.size
    if n < 2:
        return out
    flat = lab.ravel()
    if scratch is None or scratch.size < n - 1 or scratch.dtype != np.bool_:
        scratch = np.empty(n - 1, np.bool_)
    px = out.reshape(-1)                   # R, G, B of pixel k at 3k, 3k + 1, 3k + 2
    idx = []
    if w > 1:
        d = np.not_equal(flat[1:], flat[:-1], out=scratch[:n - 1])   # each pixel and its right neighbour,
        d[w - 1::w] = False                # wrapping at row ends: a row's last pixel and the next row's first are not neighbours
        i = np.flatnonzero(d)
        idx += [i, i + 1]
    if h > 1:
        i = np.flatnonzero(np.not_equal(flat[w:], flat[:-w], out=scratch[:n - w]))   # each pixel and the one below
        idx += [i, i + w]
    if idx:
        k = np.concatenate(idx) * 3
        for c, v in enumerate(np.asarray(color, dtype=np.uint8)):
            px[k + c] = v
    return out


class BoundaryPainter:
    """The 8-bit RGB picture of one input, kept between results (a live edit changes the labels,
    not the image), and the boundary pictures drawn over it."""

    def __init__(self) -> None:
        self._image = None
        self._rgb: np.ndarray | None = None
        self._scratch: np.ndarray | None = None
        self.conversions = 0   # how often the input was converted to 8-bit RGB (tests count them)

    def base(self, image) -> np.ndarray:
        """``vis.to_rgb8(image)``, converted once per image object (for an 8-bit RGB image the
        image's own array, as before; nothing here writes into it)."""
        if self._rgb is None or self._image is not image:
            self._image, self._rgb = image, vis.to_rgb8(image)
            self.conversions += 1
        return self._rgb

    def boundaries(self, image, labels) -> np.ndarray:
        base = self.base(image)
        n = base.shape[0] * base.shape[1]
        if self._scratch is None or self._scratch.size < n:
            self._scratch = np.empty(max(n, 1), np.bool_)
        return boundary_picture(base, labels, scratch=self._scratch)
