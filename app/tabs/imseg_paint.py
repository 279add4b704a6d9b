"""The image segmentation tab's live picture: the boundaries over the image, drawn for each new
result of a live edit without redoing what the edit did not change.

The input's 8-bit RGB picture is made once per input (:class:`BoundaryPainter`: a live edit
changes the labels, not the image), and the boundaries are drawn over it by
:func:`gpu_kernels.imseg.vis.boundaries_over`, the export's drawing too (flat indices from two
contiguous comparisons of the label map; it was a full mask painted through a boolean index over
three channels, ~6 ms per edit at 1080p on the dev CPU, 2-3x that on the GPU host).
"""

from __future__ import annotations

import numpy as np

from gpu_kernels.imseg import vis

__all__ = ["BoundaryPainter", "boundary_picture"]


def boundary_picture(base: np.ndarray, labels: np.ndarray, color=vis.BOUNDARY_COLOR, *,
                     scratch: np.ndarray | None = None) -> np.ndarray:
    """``base`` (8-bit RGB) with the boundaries of ``labels`` in ``color``:
    :func:`gpu_kernels.imseg.vis.boundaries_over` (the export's drawing too)."""
    return vis.boundaries_over(base, labels, color, scratch=scratch)


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
