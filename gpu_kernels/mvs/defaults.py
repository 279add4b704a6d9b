"""The multi-view stereo defaults that the tool declares its parameters with (standard library
only: ``gpulab mvs --help`` and the window load no NumPy or SciPy for them). Each kernel module
re-exports its own under its usual name (``optimize.DEFAULT_WINDOW`` is :data:`WINDOW`, ...)."""

from __future__ import annotations

__all__ = ["FUSE_TOL", "FUSE_MIN_VIEWS", "BATCH_GPU", "MAX_ATTEMPTS", "WINDOW", "MIN_VIEWS", "NCC_ACCEPT",
           "MAX_ITER", "MAX_NEIGHBORS", "VIEWS_TOGETHER_GPU", "NEIGHBORS", "TEXTURE_SHARE"]

# -- fusion
#: relative depth agreement (COLMAP's ``max_depth_error``)
FUSE_TOL = 0.01
#: views that must agree on a fused point (its own included)
FUSE_MIN_VIEWS = 2

# -- grow
#: views together on an H100: 4096 -> 0.20 s per view, 16384 -> 0.19 s, 65536 -> 0.137 s,
#: with the same samples (76.5k per view) and consistency
BATCH_GPU = 65536
#: how often a pixel may be tried (from different parents) before it is given up
MAX_ATTEMPTS = 2

# -- optimize
#: window size n (n x n pixels), the paper's and Goesele's 5
WINDOW = 5
#: a pixel fails with fewer active views (the CUDA paper: "at least four active views")
MIN_VIEWS = 4
#: NCC a view must keep to stay active
NCC_ACCEPT = 0.6
#: iterations (Goesele: 20)
MAX_ITER = 20
#: neighbour views per pixel the kernel supports (threads per pixel <= 16)
MAX_NEIGHBORS = 16

# -- stereo
#: reference views grown in one shared batch on the GPU
VIEWS_TOGETHER_GPU = 16
#: the textures of every view of a scene are packed once (a stage of their own, which view
#: selection edits do not re-run) when they take at most this share of the free device memory
#: (of the host's available memory on the CPU): the stage cache's own default share
TEXTURE_SHARE = 0.25

# -- views
#: neighbour views per reference view (Goesele: 10 for community photos; the CUDA paper: 8)
NEIGHBORS = 8
