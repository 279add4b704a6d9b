"""The echo motion estimator's defaults and choices (standard library only: the tool's
parameters are declared from them without loading NumPy or SciPy; :mod:`gpu_kernels.echo.motion`
and :mod:`gpu_kernels.echo.synthetic` re-export them)."""

from __future__ import annotations

__all__ = ["DEFAULT_ALPHA", "DEFAULT_BETA", "DEFAULT_RHO", "DEFAULT_SIGMA", "DEFAULT_LEVELS", "DEFAULT_WARPS",
           "DEFAULT_ITERS", "DEFAULT_TOL", "DEFAULT_SOLVER", "DEFAULT_SOR_OMEGA", "DEFAULT_VARIANT",
           "DEFAULT_DERIVATIVE", "DEFAULT_CHECK_EVERY", "DEFAULT_PRECISION", "SOLVERS", "PRECISIONS", "VARIANTS", "DERIVATIVES", "SYNTH_SIZE",
           "SYNTH_MIN_SIZE", "SYNTH_MAX_SIZE", "SYNTH_FRAMES", "SYNTH_NOISE", "SYNTH_DECORRELATION", "SYNTH_CONTRACTION",
           "SYNTH_SHORTENING", "SYNTH_TWIST", "PREPARE_KEYS", "TENSOR_KEYS", "SOLVE_KEYS"]

DEFAULT_ALPHA = 0.02
DEFAULT_BETA = 0.02
DEFAULT_RHO = 3.5
DEFAULT_SIGMA = 0.0
#: pyramid levels; 0 = automatic (:func:`auto_levels`: the coarsest level about 24-48 voxels)
DEFAULT_LEVELS = 0
DEFAULT_WARPS = 3
#: the sweep cap of a warp (issue 24: 7 instead of 10, the same or lower EPE on six synthetic
#: pairs and ACDC NCC 0.9265 against 0.9266, 256^3 28.3 ms against 34.8 ms on an H100;
#: benchmarks/results/echo_session4.md)
DEFAULT_ITERS = 7
DEFAULT_TOL = 1e-3
DEFAULT_SOLVER = "sor"
DEFAULT_SOR_OMEGA = 1.8
DEFAULT_VARIANT = "cache"
DEFAULT_DERIVATIVE = "central"
DEFAULT_CHECK_EVERY = 5
#: storage of the per-voxel system the sweeps read (the arithmetic is float32 either way);
#: float16 measured harmless (same EPE to 4 digits at 128^3 and 256^3 and the same ACDC NCC,
#: benchmarks/results/echo_issue24.md) with 4.6 fewer floats per voxel at the peak
DEFAULT_PRECISION = "float16"
SOLVERS = ("sor", "jacobi")
PRECISIONS = ("float32", "float16")
VARIANTS = ("cache", "smem")
DERIVATIVES = ("central", "forward")
#: the parameters the prepared pyramids and tensors depend on (motion.prepare_motion) and those
#: of motion.solve_motion; the kernel variant is a solve parameter: both variants' tensor
#: kernels do the same float32 arithmetic, so a preparation serves either
PREPARE_KEYS = ("rho", "sigma", "levels", "derivative")
#: the part of PREPARE_KEYS that only the structure tensors read (motion.with_tensors's arguments)
TENSOR_KEYS = ("rho", "derivative")
SOLVE_KEYS = ("alpha", "beta", "warps", "iters", "tol", "solver", "omega", "precision", "variant")

# -- the synthetic echo generator (gpu_kernels.echo.synthetic; ``gpulab echo-synth``)
#: edge length in voxels of the generated volume
SYNTH_SIZE = 128
SYNTH_MIN_SIZE = 16
SYNTH_MAX_SIZE = 512
#: frames over one cardiac cycle (frame 0 end-diastole, frame frames//2 end-systole)
SYNTH_FRAMES = 10
#: standard deviation of the complex thermal noise, relative to the RMS speckle signal
SYNTH_NOISE = 0.05
#: fraction of each scatterer's amplitude redrawn between consecutive frames
SYNTH_DECORRELATION = 0.05
#: fraction of the blood pool's cross-section lost at end-systole at mid-ventricle
SYNTH_CONTRACTION = 0.5
#: long-axis shortening at end-systole (base-to-apex length shrinks by this fraction)
SYNTH_SHORTENING = 0.12
#: apex-to-base rotation difference at end-systole, degrees
SYNTH_TWIST = 12.0
