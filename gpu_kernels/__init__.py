"""gpulab's compute library: arrays in, arrays out.

Each algorithm has a CuPy path (CUDA sources in ``gpu_kernels/cuda``) and a
NumPy/SciPy reference path; :mod:`gpu_kernels.backend` picks one. This package never
imports Qt and never reads files.
"""

import os as _os

# numba (optional, the CPU paths) tries its TBB threading layer first; the TBB that other wheels
# put in the process (VTK's, in the window) can be too old, and numba then prints a NumbaWarning
# on the first parallel loop. OpenMP first (numba's own next choice) says nothing. Read when
# numba is imported, so it is set here, before any of ours imports it; a user's setting wins.
_os.environ.setdefault("NUMBA_THREADING_LAYER_PRIORITY", "omp tbb workqueue")
# numba colours its typing messages through colorama (installed beside pyqtgraph), whose init/deinit REPLACE
# sys.stdout / sys.stderr process-wide, from whichever thread compiles: a warm-up compile on a thread of its own
# then swapped the main thread's streams under it (lines printed into a stale stream; session 13 review #4)
_os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

from gpu_kernels.errors import BackendError, GpulabError, InputError, TooLargeError  # noqa: E402
from gpu_kernels.jobs import Cancelled, LaunchTracker, Progress, as_progress  # noqa: E402
from gpu_kernels.lazy import lazy_exports as _lazy_exports  # noqa: E402

# the backend imports NumPy: loaded on first use, so that ``gpu_kernels.jobs`` and
# ``gpu_kernels.errors`` stay light (start-up, issue 18 case 19)
_lazy_getattr, __dir__ = _lazy_exports(__name__, {"get_backend": "backend", "backend": "backend"})


def __getattr__(name: str):
    if name == "__version__":  # the distribution's version (pyproject.toml), as app.__version__; on first use
        from importlib import metadata as _metadata

        try:
            v = _metadata.version("gpulab")
        except _metadata.PackageNotFoundError:  # a bare source tree on sys.path, never installed
            v = "0+unknown"
        globals()["__version__"] = v
        return v
    return _lazy_getattr(name)

__all__ = ["BackendError", "Cancelled", "GpulabError", "InputError", "LaunchTracker", "Progress",
           "TooLargeError", "as_progress", "get_backend", "__version__"]
