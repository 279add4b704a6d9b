"""3-D echo motion: volume-preserving CLG motion estimation (Bruhn's combined local-global
optical flow in 3-D with Song & Leahy's divergence term), after "GPU-based motion
estimation for 3D echocardiography".

Public API::

    from gpu_kernels.echo import estimate_motion, estimate_sequence, jacobian_determinant
    u = estimate_motion(fixed, moving, device="cuda")        # (3, Z, Y, X), voxels
    seq = estimate_sequence(frames, reference=0)             # pairwise + trajectories
    det = jacobian_determinant(u)

Arrays are indexed [z, y, x]; a displacement field has shape (3, Z, Y, X), component i
along array axis i, in voxels, with ``moving(x + u(x)) ~ fixed(x)`` (scikit-image's
convention). Modules: :mod:`~gpu_kernels.echo.motion` (the estimator),
:mod:`~gpu_kernels.echo.sequence`, :mod:`~gpu_kernels.echo.maps` (Jacobian determinant,
divergence, magnitude, warping, composition, metrics), :mod:`~gpu_kernels.echo.synthetic`
(synthetic 3-D echo with exact motion), ``_cpu``/``_gpu`` (the building blocks).
"""

from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.lazy import lazy_exports as _lazy_exports

# each name loads its submodule on first use (NumPy, SciPy, CuPy): importing the package or a
# light submodule of it stays cheap (start-up, issue 18 case 19)
__getattr__, __dir__ = _lazy_exports(__name__, {
    "compose": "maps", "invert": "maps", "divergence": "maps", "endpoint_error": "maps", "jacobian_determinant": "maps",
    "magnitude": "maps", "mean_squared_difference": "maps", "ncc": "maps", "warp_volume": "maps",
    "DEFAULT_ALPHA": "motion", "DEFAULT_BETA": "motion", "DEFAULT_DERIVATIVE": "motion",
    "DEFAULT_ITERS": "motion", "DEFAULT_LEVELS": "motion", "DEFAULT_RHO": "motion", "DEFAULT_SIGMA": "motion",
    "DEFAULT_SOLVER": "motion", "DEFAULT_TOL": "motion", "DEFAULT_VARIANT": "motion",
    "DEFAULT_WARPS": "motion", "MotionInfo": "motion", "estimate_motion": "motion",
    "Prepared": "motion", "prepare_motion": "motion", "solve_motion": "motion",
    "jacobi_damping": "motion", "SequenceMotion": "sequence", "estimate_sequence": "sequence",
})

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_BETA",
    "DEFAULT_DERIVATIVE",
    "DEFAULT_ITERS",
    "DEFAULT_LEVELS",
    "DEFAULT_RHO",
    "DEFAULT_SIGMA",
    "DEFAULT_SOLVER",
    "DEFAULT_TOL",
    "DEFAULT_VARIANT",
    "DEFAULT_WARPS",
    "EchoInputError",
    "MotionInfo",
    "Prepared",
    "SequenceMotion",
    "compose",
    "invert",
    "divergence",
    "endpoint_error",
    "estimate_motion",
    "estimate_sequence",
    "jacobi_damping",
    "jacobian_determinant",
    "magnitude",
    "mean_squared_difference",
    "ncc",
    "prepare_motion",
    "solve_motion",
    "warp_volume",
]
