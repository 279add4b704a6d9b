"""Environment variables of the compute layer (standard library only, so the CLI's help can
name them without importing NumPy)."""

#: the default device (``cpu``, ``cuda``, ``cuda:N``, ``auto``) where none is given
ENV_VAR = "GPULAB_DEVICE"
