"""Errors of the 3-D echo motion tool."""

from __future__ import annotations

from gpu_kernels.errors import InputError

__all__ = ["EchoInputError"]


class EchoInputError(InputError):
    """Volumes or parameters the motion estimator cannot use (shapes differ, 2-D input, NaNs,
    a parameter out of range). The message is one line that says what to do."""
