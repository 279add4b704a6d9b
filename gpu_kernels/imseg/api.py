"""One entry point for both image segmentation methods, with every keyword explicit (what the
tool layer declares its parameters against; compare :func:`gpu_kernels.flow.api.compute_flow`).

>>> import numpy as np
>>> img = np.zeros((40, 60, 3), np.uint8); img[:, 30:] = 200
>>> segment(img, method="contours", n_segments=2, device="cpu").n_regions
2
"""

from __future__ import annotations

from . import defaults as _d
from ._util import ImsegInputError

__all__ = ["segment", "METHODS"]

#: contours: superpixels merged by colour and contour strength (the default); kmeans: the paper's
METHODS = ("contours", "kmeans")


def segment(image, *, method: str = "contours",
            coarseness: float = _d.DEFAULT_COARSENESS, n_segments: int = _d.DEFAULT_N_SEGMENTS,
            n_superpixels: int = _d.DEFAULT_N_SUPERPIXELS, compactness: float = _d.DEFAULT_COMPACTNESS,
            sigma: float = _d.DEFAULT_SIGMA, merge: str = _d.DEFAULT_MERGE,
            k_max: int = _d.DEFAULT_K_MAX, q: int = _d.DEFAULT_Q, iterations: int = _d.DEFAULT_ITERATIONS,
            merge_distance: float = _d.DEFAULT_MERGE_DISTANCE, bilateral: int = _d.DEFAULT_BILATERAL,
            bilateral_window: int = _d.DEFAULT_BILATERAL_WINDOW, sigma_spatial: float = _d.DEFAULT_SIGMA_SPATIAL,
            sigma_color: float = _d.DEFAULT_SIGMA_COLOR, connectivity: int = _d.DEFAULT_CONNECTIVITY,
            min_size: int = _d.DEFAULT_MIN_SIZE, features: bool = True, moments: bool = True,
            device=None, progress=None):
    """Segment ``image`` with ``method``; the keywords the other method reads are ignored
    (``coarseness`` ... ``merge`` are the contours method's, ``k_max`` ... ``min_size`` the
    k-means pipeline's). Returns the method's :class:`~gpu_kernels.imseg.segment.ImageSegmentation`."""
    if method == "contours":
        from .contours import segment_contours

        return segment_contours(image, coarseness=coarseness, n_segments=n_segments, n_superpixels=n_superpixels,
                                compactness=compactness, sigma=sigma, merge=merge, features=features, moments=moments,
                                device=device, progress=progress)
    if method == "kmeans":
        from .segment import segment_image

        return segment_image(image, k_max=k_max, q=q, iterations=iterations, merge_distance=merge_distance,
                             bilateral=bilateral, bilateral_window=bilateral_window, sigma_spatial=sigma_spatial,
                             sigma_color=sigma_color, connectivity=connectivity, min_size=min_size,
                             features=features, moments=moments, device=device, progress=progress)
    raise ImsegInputError(f"unknown segmentation method {method!r}: use {' or '.join(METHODS)}")
