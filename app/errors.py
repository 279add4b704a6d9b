"""How the CLI and the window tell a user's mistake from a bug: one rule, :func:`classify`.

* **user**: :class:`gpu_kernels.errors.GpulabError` and its subclasses (``InputError``,
  ``TooLargeError``, every tool's and reader's errors, :class:`UserError`), a device that
  cannot be used (``BackendError``), and operating-system errors about a named file (no
  such file, permission denied). One clear line; no traceback.
* **oom**: the GPU or the host ran out of memory: one line that says what to try.
* **bug**: anything else, ``ValueError`` and ``TypeError`` included. The window shows a
  message with the traceback under "Show Details"; the CLI prints the traceback.

This module never imports Qt.
"""

from __future__ import annotations

import errno
import os
import re

from gpu_kernels.errors import BackendError, GpulabError, InputError, TooLargeError

__all__ = ["UserError", "InputError", "TooLargeError", "classify", "is_user_error", "user_message",
           "one_line", "is_out_of_memory", "out_of_memory_message", "disk_error_message", "in_context"]


class UserError(GpulabError):
    """A problem with the request that the user can fix (app-level: output paths, options).

    The message should say what went wrong and, where it helps, what to do.
    """


def one_line(text: str) -> str:
    """The first non-empty line of ``text``, stripped."""
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return ""


#: numpy's ``tofile`` on a full disk: ``OSError("19200 requested and 16352 written")`` (no errno)
_SHORT_WRITE = re.compile(r"^\d+ requested and \d+ written$")

#: errors of the operating system about the place written to, whatever the file
_DISK_ERRNOS = {
    errno.ENOSPC: "no space left on the disk",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EFBIG: "the file is larger than the file system allows",
    errno.EIO: "input/output error (a failing disk or network share)",
}


def disk_error_message(exc: BaseException) -> str | None:
    """One line for a full disk, an exceeded quota, a read-only file system or a short write,
    with the file when the error names one; None for other errors."""
    if not isinstance(exc, OSError):
        return None
    if exc.errno in _DISK_ERRNOS:
        what = _DISK_ERRNOS[exc.errno]
    elif exc.errno is None and _SHORT_WRITE.match(one_line(str(exc))):
        what = "the disk is full (a write stopped short)"
    else:
        return None
    where = f" while writing {os.fspath(exc.filename)}" if getattr(exc, "filename", None) else ""
    fix = "" if exc.errno == errno.EIO else ": free some space or choose another output folder"
    if exc.errno == errno.EROFS:
        fix = ": choose another output folder"
    return f"{what}{where}{fix}"


def is_user_error(exc: BaseException) -> bool:
    """True for exceptions whose message is meant for the user as it stands."""
    if isinstance(exc, GpulabError | BackendError):
        return True
    if disk_error_message(exc) is not None:
        return True
    return isinstance(exc, OSError) and bool(getattr(exc, "filename", None)) and not is_out_of_memory(exc)


def user_message(exc: BaseException) -> str:
    """One line describing ``exc`` for a user (no traceback, no class path)."""
    msg = getattr(exc, "user_message", None)
    if callable(msg):
        msg = msg()
    if msg:
        return one_line(str(msg))
    disk = disk_error_message(exc)
    if disk:
        return disk
    if isinstance(exc, OSError) and exc.filename:
        reason = exc.strerror or one_line(str(exc))
        # the system's own text: "No such file" -> "no such file"; a text gpulab wrote stays as
        # written (it may start with a file's name: "Notes.txt is a file, not a folder")
        system = isinstance(exc.errno, int) and reason == os.strerror(exc.errno)
        if system and reason[0].isupper() and not reason[:2].isupper():
            reason = reason[0].lower() + reason[1:]
        return f"{reason}: {exc.filename}"
    return one_line(str(exc)) or type(exc).__name__


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CuPy's ``OutOfMemoryError`` (detected by name: CuPy may be absent),
    cuBLAS/cuSOLVER allocation failures, and Python's ``MemoryError``."""
    for cls in type(exc).__mro__:
        if cls.__name__ in ("OutOfMemoryError", "MemoryError"):
            return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True   # mmap, fork or a shared-memory segment: "[Errno 12] Cannot allocate memory"
    text = str(exc)
    return "CUBLAS_STATUS_ALLOC_FAILED" in text or "cudaErrorMemoryAllocation" in text


def out_of_memory_message(what: str, exc: BaseException) -> str:
    """What ran out of memory, and what to try instead (one paragraph)."""
    host = type(exc).__name__ == "MemoryError" or (isinstance(exc, OSError) and exc.errno == errno.ENOMEM)
    where = "host" if host else "GPU"
    detail = one_line(str(exc))
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        detail = "the system could not allocate memory"
    return (
        f"{what} ran out of {where} memory"
        + (f" ({detail})" if detail else "")
        + ". Try a smaller input (e.g. simplify the mesh or downscale the images)"
        + (", or run on the CPU (--device cpu, or Compute → CPU in the window)." if where == "GPU" else ".")
    )


def in_context(what: str, msg: str) -> str:
    """``"what: msg"``, without saying the file name twice: ``in_context("Opening a.ply",
    "a.ply: not a mesh")`` is ``"Opening a.ply: not a mesh"``.

    >>> in_context("Opening notamesh.ply", "notamesh.ply: the file is empty")
    'Opening notamesh.ply: the file is empty'
    >>> in_context("Saving", "out.png: permission denied")
    'Saving: out.png: permission denied'
    """
    what, msg = what.strip(), msg.strip()
    if not what:
        return msg
    head, sep, rest = msg.partition(": ")
    if sep and head and rest and (what.endswith(" " + head) or what == head):
        return f"{what}: {rest}"
    return f"{what}: {msg}"


def classify(exc: BaseException, what: str = "The job") -> tuple[str, str]:
    """``(kind, message)`` with kind ``"user"``, ``"oom"`` or ``"bug"`` (see the module
    docstring). The message is one line for ``user`` and ``oom``."""
    if isinstance(exc, GpulabError | BackendError):
        return "user", user_message(exc)
    if is_out_of_memory(exc):
        return "oom", out_of_memory_message(what, exc)
    if is_user_error(exc):
        return "user", user_message(exc)
    return "bug", f"{type(exc).__name__}: {user_message(exc)}"
