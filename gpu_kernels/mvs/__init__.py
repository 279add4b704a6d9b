"""Multi-view stereo: Goesele-style region-growing depth/normal maps on the GPU (a batch of
top-priority pixels per launch, one thread per (pixel, neighbour view)), with a NumPy path.

Public API::

    from gpu_kernels.mvs import reconstruct, MVSScene, Camera, render_synthetic_scene
    res = reconstruct(scene, views="all", device="cuda")
    res.maps[0].depth, res.fused.points

Modules: :mod:`.camera` (cameras, scene container), :mod:`.seeds` (SIFT seeds),
:mod:`.views` (global view selection), :mod:`.optimize` (per-pixel optimisation, CPU and
``cuda/mvs_optimize.cu``), :mod:`.grow` (region growing), :mod:`.fusion`, :mod:`.stereo`
(end to end), :mod:`.synth` (synthetic scenes with ground truth).
"""

from gpu_kernels.mvs.camera import Camera, MVSInputError, MVSScene, look_at
from gpu_kernels.mvs.fusion import FusedCloud, consistency_counts, fuse_depth_maps
from gpu_kernels.mvs.grow import DepthMap, grow_depth_maps
from gpu_kernels.mvs.optimize import OptimizeParams
from gpu_kernels.mvs.stereo import MVSResult, cross_view_consistency, parse_views, reconstruct
from gpu_kernels.mvs.synth import SyntheticScene, render_synthetic_scene

__all__ = [
    "Camera", "MVSInputError", "MVSScene", "look_at", "FusedCloud", "consistency_counts", "fuse_depth_maps",
    "DepthMap", "grow_depth_maps", "OptimizeParams", "MVSResult", "cross_view_consistency", "parse_views",
    "reconstruct", "SyntheticScene", "render_synthetic_scene",
]
