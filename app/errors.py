"""Errors meant for the user, not for a traceback.

Raise :class:`UserError` (or a subclass, e.g. ``app.io.mesh_io.MeshIOError``) when the
input or the request is wrong in a way the user can fix. The CLI prints its message
as one line (``gpulab: error: ...``, exit status 2) and the window shows it in a
dialog without a traceback. Any exception with a ``user_message`` attribute is
treated the same way.

This module never imports Qt.
"""

from __future__ import annotations

__all__ = ["UserError", "is_user_error", "user_message"]


class UserError(Exception):
    """A problem with the input or the request that the user can fix.

    The message should say what went wrong and, where it helps, what to do.
    """

    @property
    def user_message(self) -> str:
        return one_line(str(self)) or type(self).__name__


def one_line(text: str) -> str:
    """The first non-empty line of ``text``, stripped."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


def is_user_error(exc: BaseException) -> bool:
    """True for exceptions whose message is meant for the user as it stands."""
    from gpu_kernels.backend import BackendError
    from gpu_kernels.errors import GpulabError

    return isinstance(exc, UserError | BackendError | GpulabError) or hasattr(exc, "user_message")


def user_message(exc: BaseException) -> str:
    """One line describing ``exc`` for a user (no traceback, no class path)."""
    msg = getattr(exc, "user_message", None)
    if callable(msg):
        msg = msg()
    if msg:
        return one_line(str(msg))
    if isinstance(exc, OSError) and exc.filename:
        reason = exc.strerror or one_line(str(exc))
        if reason and reason[0].isupper() and not reason[:2].isupper():
            reason = reason[0].lower() + reason[1:]  # "No such file" -> "no such file"
        return f"{reason}: {exc.filename}"
    return one_line(str(exc)) or type(exc).__name__


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CuPy's ``OutOfMemoryError`` (detected by name: CuPy may be absent),
    cuBLAS/cuSOLVER allocation failures, and Python's ``MemoryError``."""
    for cls in type(exc).__mro__:
        if cls.__name__ in ("OutOfMemoryError", "MemoryError"):
            return True
    text = str(exc)
    return "CUBLAS_STATUS_ALLOC_FAILED" in text or "cudaErrorMemoryAllocation" in text


def out_of_memory_message(what: str, exc: BaseException) -> str:
    """What ran out of memory, and what to try instead (one paragraph)."""
    where = "host" if type(exc).__name__ == "MemoryError" else "GPU"
    detail = one_line(str(exc))
    return (
        f"{what} ran out of {where} memory"
        + (f" ({detail})" if detail else "")
        + ". Try a smaller input (e.g. simplify the mesh or downscale the images)"
        + (", or run on the CPU (--device cpu, or Compute → CPU in the window)." if where == "GPU" else ".")
    )
