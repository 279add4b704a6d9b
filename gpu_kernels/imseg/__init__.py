"""Image segmentation.

* :func:`segment_contours` (the default, issue 21): SLIC superpixels merged hierarchically by
  colour and by the strength of the contour between them (:mod:`gpu_kernels.imseg.contours`).
* :func:`segment_image` (issue 10, the paper's pipeline): CIELAB, bilateral filter, quantised
  k-means, GPU union-find connected components, small-region merging and region features.

Each stage is a function of its own (arrays in, arrays out, ``device=`` and ``progress=``);
the two entry points run them back to back on the device.
"""

from gpu_kernels.lazy import lazy_exports as _lazy_exports

# each name loads its submodule on first use (NumPy, SciPy, CuPy): importing the package or a
# light submodule of it stays cheap (start-up, issue 18 case 19)
__getattr__, __dir__ = _lazy_exports(__name__, {
    "ImsegInputError": "_util", "bilateral_lab": "color", "quantize_lab": "color", "rgb2lab": "color",
    "segment_contours": "contours", "features_table": "features", "region_features": "features",
    "kmeans_quantized": "kmeans", "label_components": "label", "merge_small_regions": "merge",
    "ImageSegmentation": "segment", "device_bytes_estimate": "segment", "segment_image": "segment",
})

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
