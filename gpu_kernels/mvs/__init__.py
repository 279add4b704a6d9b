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

from gpu_kernels.lazy import lazy_exports as _lazy_exports

# each name loads its submodule on first use (NumPy, SciPy, CuPy): importing the package or a
# light submodule of it stays cheap (start-up, issue 18 case 19)
__getattr__, __dir__ = _lazy_exports(__name__, {
    "Camera": "camera", "MVSInputError": "camera", "MVSScene": "camera", "look_at": "camera",
    "FusedCloud": "fusion", "consistency_counts": "fusion", "fuse_depth_maps": "fusion", "DepthMap": "grow",
    "grow_depth_maps": "grow", "OptimizeParams": "optimize", "MVSResult": "stereo",
    "cross_view_consistency": "stereo", "parse_views": "stereo", "reconstruct": "stereo",
    "SyntheticScene": "synth", "render_synthetic_scene": "synth",
})

__all__ = [
    "Camera", "MVSInputError", "MVSScene", "look_at", "FusedCloud", "consistency_counts", "fuse_depth_maps",
    "DepthMap", "grow_depth_maps", "OptimizeParams", "MVSResult", "cross_view_consistency", "parse_views",
    "reconstruct", "SyntheticScene", "render_synthetic_scene",
]
