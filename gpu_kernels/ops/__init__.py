"""Image operations shared by the image tools, on the GPU (CuPy kernels in
``gpu_kernels/cuda/ops_image.cu``) or the CPU (NumPy/SciPy), with the same results:

- :func:`to_gray`: greyscale float32 in 0..1 from 8/16-bit or float, grey/RGB/RGBA;
- :func:`gaussian_filter`, :func:`uniform_filter`, :func:`correlate_axis`: separable filters
  of N-D arrays along chosen axes;
- :func:`pyr_down`, :func:`pyr_up`, :func:`gaussian_pyramid`, :func:`resize`: pyramids and
  resampling of N-D arrays;
- :func:`warp`, :func:`warp_flow`: bilinear (2-D) and trilinear (3-D) warping.

Every function takes ``device=None`` (a spec string or a Backend) and returns arrays on that
backend (NumPy on the CPU, CuPy on a GPU).
"""

from .color import gray_scale, to_gray
from .filters import (
                      DEFAULT_TRUNCATE,
                      MODES,
                      correlate_axis,
                      gaussian_filter,
                      gaussian_kernel1d,
                      uniform_filter,
)
from .pyramid import (
                      DEFAULT_PYR_SIGMA,
                      DEFAULT_PYR_TRUNCATE,
                      DEFAULT_PYRAMID_LEVELS,
                      gaussian_pyramid,
                      pyr_down,
                      pyr_up,
                      pyramid_levels,
                      resize,
)
from .warp import bilinear_sample, warp, warp_flow

__all__ = [
    "DEFAULT_TRUNCATE",
    "MODES",
    "DEFAULT_PYR_SIGMA",
    "DEFAULT_PYR_TRUNCATE",
    "DEFAULT_PYRAMID_LEVELS",
    "to_gray",
    "gray_scale",
    "gaussian_kernel1d",
    "correlate_axis",
    "gaussian_filter",
    "uniform_filter",
    "pyr_down",
    "pyr_up",
    "resize",
    "gaussian_pyramid",
    "pyramid_levels",
    "warp",
    "warp_flow",
    "bilinear_sample",
]
