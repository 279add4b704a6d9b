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
#: the contours method's merges: "learned" (boosted trees over 24 features of each pair of regions,
#: gpu_kernels.imseg.learned; session 11's accepted model), "contour" (the hand-made merge cost) and "hybrid"
#: (the contour merge down to 200 regions, then the learned merge with a model refit on such starts:
#: gpu_kernels.imseg.hybrid; session 16)
MERGES = ("learned", "contour", "hybrid")
DEFAULT_MERGE = "contour"
#: the tool's help texts of the merge and the coarseness (app/tools/imseg.py)
MERGE_HELP = ("How the superpixels merge. learned: boosted trees trained on the 200 BSDS500 training images "
              "score each pair of adjacent regions from 24 measures of colour, texture, boundary strength, size "
              "and shape (covering 0.567 on the 20 BSDS500 test images, against 0.533); contour: the hand-made "
              "cost of colour difference and edge strength (faster); hybrid: the contour merge down to 200 regions, "
              "then the learned merge, its trees refit for such starts (covering 0.550; a little slower than contour, "
              "faster than learned: much faster on large images; its coarseness moves the count in coarser, not "
              "always monotone steps: use the number of segments to set it exactly).")
#: each merge in a few words (the command's description: "merged hierarchically <words>, the default, or ...")
MERGE_WORDS = {"contour": "by colour and boundary strength",
               "learned": "by a learned merge score trained on BSDS500, the best quality and slower",
               "hybrid": "by colour and boundary strength down to 200 regions, then by a learned merge score"}
COARSENESS_HELP = ("How far the merging goes. contour merge: regions merge while the cheapest merge costs less "
                   "than 10^coarseness; learned and hybrid merges: while the lowest score is under tau = 0.39 + 0.06 "
                   "(coarseness - 3.3), or 0.39 coarseness / 3.3 below the default. Larger: fewer, larger segments "
                   "(the default 3.3: about 20-27 on a 481 x 321 photograph; coarseness 0 with the learned merge: "
                   "about 650). The hybrid merge starts its learned part from 200 regions, so it gives at most "
                   "about 100: set the number of segments for more.")

# -- vis
STYLES = ("random", "mean", "boundaries", "clusters")
