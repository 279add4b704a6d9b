"""gpulab's user-facing side: the Qt window and tabs, the job worker, file I/O and the CLI."""


def __getattr__(name: str):
    # the one version: pyproject.toml's, through the installed (or editable) distribution; read
    # on first use (importlib.metadata costs 30-50 ms at every start: issue 18, case 19)
    if name == "__version__":
        from importlib import metadata as _metadata

        try:
            v = _metadata.version("gpulab")
        except _metadata.PackageNotFoundError:  # a bare source tree on sys.path, never installed
            v = "0+unknown"
        globals()["__version__"] = v
        return v
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
