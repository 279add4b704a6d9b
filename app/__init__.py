"""gpulab's user-facing side: the Qt window and tabs, the job worker, file I/O and the CLI."""
__version__ = "0.1.0"
