"""The first check of every reader: is this path a file we can read?

:func:`check_input_file` is called by each reader before it opens anything, so that every
format gives the same one-line answer for a missing file, a folder, a FIFO or device (which
``open`` would block on, or stream forever), an unreadable or an empty file.

Example
-------
>>> import pathlib, tempfile
>>> from app.io.inputs import check_input_file
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> (d / "a.txt").write_text("x")
1
>>> check_input_file(d / "a.txt").name
'a.txt'
>>> try:
...     check_input_file(d, what="a mesh")
... except Exception as exc:
...     print(exc)  # doctest: +ELLIPSIS
tmp...: is a folder, not a mesh
"""

from __future__ import annotations

import errno
import os
import pathlib
import stat

from gpu_kernels.errors import InputError

__all__ = ["check_input_file", "file_kind"]


def file_kind(mode: int) -> str:
    """A user's word for what a non-regular file is ("a FIFO (named pipe)", "a device", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _label(path: pathlib.Path) -> str:
    return path.name or str(path)


def check_input_file(path: str | os.PathLike, *, error: type[Exception] = InputError, what: str = "",
                     allow_dir: bool = False, allow_empty: bool = False,
                     label: str | None = None) -> pathlib.Path:
    """``path`` as a :class:`pathlib.Path` if it is a regular, readable, non-empty file
    (symbolic links followed); else raises ``error`` with one line that names the file.

    Parameters
    ----------
    path : path-like
        The file the user gave.
    error : exception class
        The reader's own error (a subclass of :class:`~gpu_kernels.errors.InputError`).
    what : str
        What the file should be, for "is a folder, not <what>" ("a mesh file").
    allow_dir : bool
        A folder is accepted too (a DICOM series, an image sequence).
    allow_empty : bool
        An empty file is accepted (only formats where that means something).
    label : str, optional
        How the message names the file (default: its name).

    Notes
    -----
    The check uses ``stat`` only: a FIFO, a character device or a socket is refused without
    being opened (opening a FIFO blocks until a writer comes).
    """
    p = pathlib.Path(path)
    name = label or _label(p)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise error(f"{name}: a symbolic link to a file that does not exist") from None
        raise error(f"{name}: no such file") from None
    except PermissionError:
        raise error(f"{name}: permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise error(f"{name}: a loop of symbolic links") from None
        if exc.errno == errno.ENAMETOOLONG:
            raise error(f"{name}: the file name is too long") from None
        if exc.errno == errno.ENOTDIR:
            raise error(f"{name}: no such file (a part of the path is not a folder)") from None
        raise error(f"{name}: cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(st.st_mode):
        if allow_dir:
            if not os.access(p, os.R_OK | os.X_OK):
                raise error(f"{name}: permission denied")
            return p
        raise error(f"{name}: is a folder, not {what or 'a file'}")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name}: is {file_kind(st.st_mode)}, not a regular file; gpulab reads only files")
    if not os.access(p, os.R_OK):
        raise error(f"{name}: permission denied")
    if st.st_size == 0 and not allow_empty:
        raise error(f"{name}: the file is empty")
    return p


#: what a decoder's exception means to a user, by exception class name (no class name is
#: ever shown: "(BadGzipFile)" says nothing to someone who opened a scan)
_REASONS = {
    "BadGzipFile": "the gzip compression is damaged",
    "BadZipFile": "not a valid zip archive",
    "LargeZipFile": "the zip archive is too large",
    "error": "the compressed data is damaged",          # zlib.error, struct.error
    "EOFError": "the file ends too early",
    "UnicodeDecodeError": "the file holds bytes that are not text",
    "UnidentifiedImageError": "the image format is not recognised",
    "DecompressionBombError": "the image is far too large",
    "TiffFileError": "not a valid TIFF file",
    "ImageFileError": "the header is not valid",
    "HeaderDataError": "the header is not valid",
    "MemoryError": "too large to read into memory",
    "OverflowError": "a size in the header is too large",
    "IndexError": "the file is malformed",
    "KeyError": "a part of the file is missing",
    "MatReadError": "not a valid MATLAB file",
    "UnpicklingError": "the file holds pickled objects, which gpulab does not load",
}


def failure_reason(exc: BaseException) -> str:
    """A short phrase for why a decoder failed, for "not a readable X file (<reason>)";
    never the exception's class name. OS errors give their text ("permission denied")."""
    if isinstance(exc, OSError) and exc.strerror:
        text = exc.strerror
        return text[0].lower() + text[1:]
    if isinstance(exc, EOFError):
        return _REASONS["EOFError"]
    for cls in type(exc).__mro__:
        if cls.__name__ in _REASONS:
            return _REASONS[cls.__name__]
    if isinstance(exc, ValueError | TypeError):
        return "the file is malformed"
    return "the file is corrupt"
