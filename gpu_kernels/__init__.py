"""gpulab's compute library: arrays in, arrays out.

Each algorithm has a CuPy path (CUDA sources in ``gpu_kernels/cuda``) and a
NumPy/SciPy reference path; :mod:`gpu_kernels.backend` picks one. This package never
imports Qt and never reads files.
"""

__version__ = "0.1.0"

from gpu_kernels.backend import BackendError, get_backend  # noqa: E402
from gpu_kernels.errors import GpulabError, InputError, TooLargeError  # noqa: E402
from gpu_kernels.jobs import Cancelled, LaunchTracker, Progress, as_progress  # noqa: E402

__all__ = ["BackendError", "Cancelled", "GpulabError", "InputError", "LaunchTracker", "Progress",
           "TooLargeError", "as_progress", "get_backend", "__version__"]
