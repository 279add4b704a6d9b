"""gpulab's user-facing side: the Qt window and tabs, the job worker, file I/O and the CLI."""
from importlib import metadata as _metadata

try:  # the one version: pyproject.toml's, through the installed (or editable) distribution
    __version__ = _metadata.version("gpulab")
except _metadata.PackageNotFoundError:  # a bare source tree on sys.path, never installed
    __version__ = "0+unknown"
