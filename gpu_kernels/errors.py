"""Errors common to every gpulab tool.

Every error a user can fix derives from :class:`GpulabError`; its message is one clear
line that says what is wrong and, where it helps, what to do. The CLI prints it as
``gpulab: error: ...`` (exit status 2), the window shows it in a dialog without a
traceback. Anything else that escapes a job is a bug: the window shows a message with
the traceback under "Show Details", the CLI prints the traceback.

* :class:`InputError`: the input data or a parameter is wrong (a file that is not a
  mesh, images of different sizes, NaN voxels, k out of range). Tools derive their own
  (``MeshInputError``, ``FlowInputError``, ...), so a caller can catch either.
* :class:`TooLargeError`: the input does not fit the device. It carries the size, the
  largest size that fits, and what to do (simplify a mesh, tile an image, downsample a
  volume); the window turns it into one "input too large" offer for every tool.
* :class:`gpu_kernels.backend.BackendError`: the device asked for cannot be used.

Example
-------
>>> from gpu_kernels.errors import TooLargeError
>>> e = TooLargeError(50_000, 20_000, unit="faces", remedy="simplify the mesh",
...                   parameter="max_faces")
>>> e.suggested_size
19000
>>> str(e)
'the input has 50,000 faces, but at most 20,000 fit on the device: simplify the mesh (max_faces = 19000)'
"""

from __future__ import annotations

import math

__all__ = ["GpulabError", "InputError", "TooLargeError", "BackendError", "round_down"]


class BackendError(RuntimeError):
    """The requested compute device cannot be used. The message is one clear line.
    (:mod:`gpu_kernels.backend` raises it and exports it under its own name too.)"""


class GpulabError(Exception):
    """Base of the errors whose message is meant for the user as it stands."""

    @property
    def user_message(self) -> str:
        for line in str(self).splitlines():
            if line.strip():
                return line.strip()
        return type(self).__name__


class InputError(GpulabError, ValueError):
    """The input data or a parameter is wrong in a way the user can fix.

    Also a :class:`ValueError`, so code that validates with ``except ValueError`` keeps
    working.
    """


def round_down(n: int) -> int:
    """``n`` rounded down to two significant digits (a friendlier number to offer)."""
    n = int(n)
    if n < 100:
        return max(n, 1)
    p = 10 ** (int(math.log10(n)) - 1)
    return (n // p) * p


class TooLargeError(GpulabError):
    """The input is larger than the device can process in one piece.

    Parameters
    ----------
    size : int
        The input's size, in ``unit``.
    max_size : int
        The largest size that fits now (0 when unknown).
    unit : str
        What ``size`` counts: ``"faces"``, ``"pixels"``, ``"voxels"``, ...
    remedy : str
        What the user can do, as a verb phrase ("simplify the mesh").
    parameter : str, optional
        The tool parameter that applies the remedy (``"max_faces"``); the window offers
        to re-run with it set to :attr:`suggested_size`.
    where : str
        The device, for the message ("the GPU", "host memory").
    message : str, optional
        Replaces the generated message.
    """

    def __init__(self, size: int, max_size: int, *, unit: str = "elements", remedy: str = "",
                 parameter: str | None = None, where: str = "the device", message: str | None = None):
        self.size = int(size)
        self.max_size = int(max_size)
        self.unit = unit
        self.remedy = remedy
        self.parameter = parameter
        self.where = where
        if message is None:
            message = (f"the input has {self.size:,} {unit}, but at most {self.max_size:,} fit on {where}"
                       if self.max_size > 0 else f"the input has {self.size:,} {unit}: too many for {where}")
            if remedy:
                message += f": {remedy}"
                if parameter and self.max_size > 0:
                    message += f" ({parameter} = {self.suggested_size})"
        super().__init__(message)

    @property
    def suggested_size(self) -> int:
        """A round size a little below :attr:`max_size`, to offer to the user."""
        return round_down(max(1, int(self.max_size * 0.95)))
