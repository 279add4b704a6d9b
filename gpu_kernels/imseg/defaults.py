"""The image segmentation's defaults and limits that the tool declares its parameters with
(standard library only: ``gpulab imseg --help`` and the window load no NumPy or SciPy for
them). The kernel modules take theirs from here under their usual names."""

from __future__ import annotations

# -- color (CIELAB, bilateral filter, quantisation)
DEFAULT_Q = 5
MIN_Q, MAX_Q = 2, 7
DEFAULT_BILATERAL_WINDOW = 5
DEFAULT_SIGMA_SPATIAL = 2.0
DEFAULT_SIGMA_COLOR = 6.0
MAX_BILATERAL_WINDOW = 17
MAX_BILATERAL_PASSES = 50

# -- kmeans
DEFAULT_K_MAX = 64
DEFAULT_ITERATIONS = 3
DEFAULT_MERGE_DISTANCE = 18.0
MAX_K = 1024
MAX_ITERATIONS = 100

# -- merge
DEFAULT_MIN_SIZE = 512

# -- segment (the k-means pipeline)
DEFAULT_BILATERAL = 0
DEFAULT_CONNECTIVITY = 8

# -- contours (the default method)
DEFAULT_COARSENESS = 3.3
MIN_COARSENESS, MAX_COARSENESS = 0.0, 10.0
DEFAULT_N_SEGMENTS = 0
MAX_N_SEGMENTS = 1_000_000
DEFAULT_N_SUPERPIXELS = 600
MAX_N_SUPERPIXELS = 100_000
DEFAULT_COMPACTNESS = 10.0
DEFAULT_SIGMA = 1.0

# -- vis
STYLES = ("random", "mean", "boundaries", "clusters")
