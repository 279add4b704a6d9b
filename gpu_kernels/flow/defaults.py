"""The optical flow methods' defaults and choices that the tool declares its parameters with
(standard library only: ``gpulab flow --help`` and the window load no NumPy or SciPy for them).
Each kernel module re-exports its own under its usual name (``blockmatch.DEFAULT_RADIUS`` is
:data:`BM_RADIUS`, ``search.DEFAULT_PATCH`` is :data:`SEARCH_PATCH`, ...)."""

from __future__ import annotations

__all__ = ["METHODS", "DEFAULT_METHOD", "BM_BLOCK", "BM_RADIUS", "BM_MAX_RADIUS", "LK_WINDOW", "TV_SEEDS",
           "TV_SEED", "TV_LAMBDA", "TV_MEDIAN", "SEARCH_PATCH", "SEARCH_FINEST_PATCH_LEVEL", "SEARCH_MAX_PIXELS",
           "SEARCH_QUALITY", "SEARCH_QUALITIES", "SEARCH_FILL"]

# -- api
#: search: patch inverse search + densification + TV-L1 (large motions); bm: NCC block matching;
#: lk: pyramidal Lucas-Kanade; refine: TV-L1 alone (or seeded by bm / lk)
METHODS = ("search", "bm", "lk", "refine")
#: holds from 0 to ~200 px and beats DIS medium on the shared pairs (benchmarks/results/flow_search.md)
DEFAULT_METHOD = "search"

# -- blockmatch
#: block side in pixels
BM_BLOCK = 8
#: search radius at every level, pixels of that level
BM_RADIUS = 4
BM_MAX_RADIUS = 14

# -- lucas_kanade
#: side of the square window of the 2 x 2 solve, pixels (odd)
LK_WINDOW = 9

# -- refine (TV-L1)
TV_SEEDS = ("bm", "lk", "none")
#: what starts the refinement
TV_SEED = "none"
#: weight of the data term (intensities 0..1)
TV_LAMBDA = 100.0
#: side of the median filter of the flow after each warp (5, 3, or 0 for none)
TV_MEDIAN = 5

# -- search (patch inverse search)
#: patch side (pixels of each level)
SEARCH_PATCH = 8
#: finest level with a patch search, counted from the working level (0: the working level itself)
SEARCH_FINEST_PATCH_LEVEL = 0
#: the finest level solved has at most this many pixels (larger frames are solved at the first level
#: that fits and the flow is upsampled, as DIS solves at half resolution): 1080p at 960 x 540
SEARCH_MAX_PIXELS = 600_000
#: the quality map: "fb" (local NCC x forward-backward consistency) or "ncc" (local NCC alone)
SEARCH_QUALITY = "fb"
SEARCH_QUALITIES = ("fb", "ncc")
#: forward-backward fill: pixels more than this many px from forward-backward consistent get the flow
#: of the consistent pixels around them, spread along the first frame's edges (0: off)
SEARCH_FILL = 2.0
