"""Environment variables of the compute layer (standard library only, so the CLI's help can
name them without importing NumPy)."""

#: the default device (``cpu``, ``cuda``, ``cuda:N``, ``auto``) where none is given
ENV_VAR = "GPULAB_DEVICE"


def distribution_version() -> str:
    """The one version: pyproject.toml's, through the installed (or editable) distribution, read
    when first asked for (importlib.metadata costs 30-50 ms: issue 18, case 19); ``0+unknown``
    for a source tree that was never installed. ``gpu_kernels.__version__`` and
    ``app.__version__`` are this."""
    from importlib import metadata

    try:
        return metadata.version("gpulab")
    except metadata.PackageNotFoundError:
        return "0+unknown"
