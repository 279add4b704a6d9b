"""Image segmentation.

* :func:`segment_contours` (the default, issue 21): SLIC superpixels merged hierarchically by
  colour and by the strength of the contour between them (:mod:`gpu_kernels.imseg.contours`).
* :func:`segment_image` (issue 10, the paper's pipeline): CIELAB, bilateral filter, quantised
  k-means, GPU union-find connected components, small-region merging and region features.

Each stage is a function of its own (arrays in, arrays out, ``device=`` and ``progress=``);
the two entry points run them back to back on the device.
"""

from gpu_kernels.imseg._util import ImsegInputError
from gpu_kernels.imseg.color import bilateral_lab, quantize_lab, rgb2lab
from gpu_kernels.imseg.contours import segment_contours
from gpu_kernels.imseg.features import features_table, region_features
from gpu_kernels.imseg.kmeans import kmeans_quantized
from gpu_kernels.imseg.label import label_components
from gpu_kernels.imseg.merge import merge_small_regions
from gpu_kernels.imseg.segment import ImageSegmentation, device_bytes_estimate, segment_image

__all__ = [
    "ImsegInputError",
    "ImageSegmentation",
    "segment_image",
    "segment_contours",
    "device_bytes_estimate",
    "rgb2lab",
    "bilateral_lab",
    "quantize_lab",
    "kmeans_quantized",
    "label_components",
    "merge_small_regions",
    "region_features",
    "features_table",
]
