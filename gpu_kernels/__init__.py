"""gpulab's compute library: arrays in, arrays out.

Each algorithm has a CuPy path (CUDA sources in ``gpu_kernels/cuda``) and a
NumPy/SciPy reference path; :mod:`gpu_kernels.backend` picks one. This package never
imports Qt and never reads files.
"""

from importlib import metadata as _metadata

try:  # the distribution's version (pyproject.toml), the same one app.__version__ reports
    __version__ = _metadata.version("gpulab")
except _metadata.PackageNotFoundError:  # a bare source tree on sys.path, never installed
    __version__ = "0+unknown"

from gpu_kernels.errors import BackendError, GpulabError, InputError, TooLargeError  # noqa: E402
from gpu_kernels.jobs import Cancelled, LaunchTracker, Progress, as_progress  # noqa: E402
from gpu_kernels.lazy import lazy_exports as _lazy_exports  # noqa: E402

# the backend imports NumPy: loaded on first use, so that ``gpu_kernels.jobs`` and
# ``gpu_kernels.errors`` stay light (start-up, issue 18 case 19)
__getattr__, __dir__ = _lazy_exports(__name__, {"get_backend": "backend", "backend": "backend"})

__all__ = ["BackendError", "Cancelled", "GpulabError", "InputError", "LaunchTracker", "Progress",
           "TooLargeError", "as_progress", "get_backend", "__version__"]
