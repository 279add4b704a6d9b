"""Atomic output: a file (or folder) appears complete, or not at all.

Every writer in gpulab goes through these helpers, so a crash, an error or a
cancelled job (:class:`gpu_kernels.jobs.Cancelled`) never leaves a half-written
result behind, and an existing file is only replaced once its successor is whole.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> with atomic_write(d / "labels.seg", "w") as f:
...     _ = f.write("0\\n1\\n")
>>> (d / "labels.seg").read_text()
'0\\n1\\n'
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from gpu_kernels.errors import InputError

__all__ = ["atomic_write", "cannot_write", "write_reason", "errors_named_after", "unwritable_reason", "write_failure", "file_in_the_way", "hidden_prefix", "write_lines", "atomic_output_dir", "check_output_file", "check_output_dir",
           "check_not_an_input",
           "foreign_entries", "foreign_message", "marker_names", "write_output_marker", "OUTPUT_MARKER", "OutputPathError", "check_writable_parent",
           "remove_stale_parts"]

# read once at import: os.umask() is process-wide and changing it from a worker
# thread would race with other threads creating files
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _host() -> str:
    import socket

    h = "".join(c for c in socket.gethostname().split(".")[0] if c.isalnum() or c in "-_")
    return h[:24] or "host"


def _part_prefix(name: str) -> str:
    """Prefix of the hidden temporary file or folder written before ``name`` appears:
    ``.NAME.HOST-PID.`` so that a later run can tell the leftovers of a killed one (NAME cut
    where a long name would make the temporary name longer than a file name may be)."""
    return f"{hidden_prefix(name)}{_host()}-{os.getpid()}."


def hidden_prefix(name: str) -> str:
    """``.NAME.``: the start of a hidden file or folder made beside ``name`` (a staging folder,
    a write probe, the replaced folder kept until the swap), ``NAME`` cut at a whole character
    as the temporary files' names are, so that a valid name of up to 255 bytes still leaves at
    least 35 bytes of NAME_MAX after the prefix (a tag, mkstemp's 8 characters, a suffix).

    >>> hidden_prefix("cloud.ply")
    '.cloud.ply.'
    >>> len(hidden_prefix("é" * 127).encode()) <= 255 - 35
    True
    """
    return f".{_name_part(name)}."


#: the bytes a file name may have (NAME_MAX of Linux and macOS)
_NAME_MAX = 255


def _name_part(name: str) -> str:
    """``name`` as the temporary name's NAME part: cut (at a whole character) so that
    ``.NAME.HOST-PID.`` + mkstemp's 8 characters + ``.part`` and an extension of up to 11
    characters stay within :data:`_NAME_MAX` bytes. Without the cut a valid name of 220-255
    bytes could not be written ("File name too long" for the hidden temporary file)."""
    room = _NAME_MAX - (len(_host()) + len(".." + "-" + "." + "12345678" + ".part") + 7 + 11)
    raw = name.encode("utf-8", "surrogateescape")
    if len(raw) <= room:
        return name
    return raw[:room].decode("utf-8", "ignore")


def cannot_write(path, reason: str) -> str:
    """The one line for an output that cannot be written, whichever writer or check met it (one cause,
    one wording: review B, session 10): the path the user chose, the reason, what to do.

    >>> cannot_write("/mnt/ro/out.png", "the file system is read-only")
    '/mnt/ro/out.png: the file system is read-only; choose another folder'
    """
    return f"{path}: {reason}; choose another folder"


def unwritable_reason(folder: Path) -> str:
    """Why ``folder`` (that exists) takes no new file: a read-only file system, or its permissions."""
    with contextlib.suppress(OSError, AttributeError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return "the file system is read-only"
    return f"the folder {folder} is not writable"


def write_reason(exc: OSError, path) -> str:
    """gpulab's words for an :class:`OSError` met writing ``path``."""
    if exc.errno == errno.EROFS:
        return "the file system is read-only"
    if exc.errno in (errno.EACCES, errno.EPERM):
        p = Path(path)
        return f"the folder {p.parent if str(p.parent) else Path('.')} is not writable"
    reason = exc.strerror or str(exc)
    system = isinstance(exc.errno, int) and reason == os.strerror(exc.errno)
    return reason[0].lower() + reason[1:] if system and reason[:1].isupper() and not reason[:2].isupper() else reason


def _with_message(exc: OSError, path) -> OSError:
    """``exc`` with the one-line text of :func:`cannot_write` as its ``user_message`` (what
    :func:`app.errors.user_message` shows), its ``strerror`` and ``filename`` unchanged."""
    exc.user_message = cannot_write(path, write_reason(exc, path))
    return exc


def write_failure(path, exc: OSError) -> str:
    """The line for a writer that wraps an :class:`OSError` met writing ``path`` in its own error."""
    msg = getattr(exc, "user_message", None)
    return msg if isinstance(msg, str) and msg else cannot_write(path, write_reason(exc, path))


@contextlib.contextmanager
def errors_named_after(path) -> Iterator[None]:
    """An :class:`OSError` raised inside (making a hidden temporary file or folder beside
    ``path``) is raised again, of the same kind, with ``path`` as its file name: the user reads
    the name they chose, not ``.NAME.HOST-PID.xxxxxxxx.part`` (and :func:`cannot_write`'s line)."""
    try:
        yield
    except OSError as exc:
        raise _with_message(type(exc)(exc.errno, exc.strerror, str(path)), path) from None


def remove_stale_parts(parent: str | os.PathLike, name: str | None = None) -> list[str]:
    """Remove the hidden ``.NAME.HOST-PID.*.part`` files and folders in ``parent`` that a
    process of this host left when it was killed (SIGKILL, a power cut: no clean-up code ran;
    a killed echo-synth left 41 MB folders). Only entries of processes that no longer exist
    are removed; ``name`` limits it to one output. Returns the names removed."""
    parent = Path(parent)
    host = _host()
    removed = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for e in entries:
        n = e.name
        if not (n.startswith(".") and (n.endswith(".part") or ".part." in n)):
            continue
        if name is not None and not n.startswith(f".{_name_part(name)}."):
            continue
        tag = f".{host}-"
        i = n.rfind(tag, 0, n.rfind(".part"))
        if i < 0:
            continue
        pid = n[i + len(tag):].split(".", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue                      # still running (or not ours to signal)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(OSError):
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path)
            else:
                os.unlink(e.path)
            removed.append(n)
    return removed


def file_in_the_way(folder: str | os.PathLike) -> Path | None:
    """The file (anything but a folder) that stands where ``folder`` or a folder above it should
    be, or None: ``notes.txt`` for ``notes.txt/out/x.ply``, whose write would otherwise say only
    that ``notes.txt/out`` does not exist.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "notes.txt").write_text("x")
    1
    >>> file_in_the_way(d / "notes.txt" / "out").name
    'notes.txt'
    >>> file_in_the_way(d / "new" / "out") is None
    True
    """
    p = Path(folder)
    for q in (p, *p.parents):
        try:
            st = os.stat(q)
        except (FileNotFoundError, NotADirectoryError):  # missing, or a file further up: look there
            continue
        except OSError:  # unreadable: not ours to name
            return None
        return None if stat.S_ISDIR(st.st_mode) else q
    return None


def _check_parent(path: Path, *, for_file: bool = True) -> Path:
    parent = path.parent if str(path.parent) else Path(".")
    blocker = file_in_the_way(parent)
    if blocker is not None:
        exc = NotADirectoryError(20, f"{blocker} is a file, not a folder", str(path))
        exc.user_message = cannot_write(path, exc.strerror)
        raise exc
    if not parent.exists():
        raise FileNotFoundError(2, "the folder to write into does not exist", str(parent))
    if not parent.is_dir():
        raise NotADirectoryError(20, "not a folder", str(parent))
    if for_file and path.is_dir():
        raise IsADirectoryError(21, "a folder has that name", str(path))
    return parent


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", **open_kwargs: Any) -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success move it onto ``path``.

    The temporary file lives in the same directory (so the final ``os.replace`` is
    atomic), is flushed and fsynced before the rename, and is deleted if the body
    raises anything, including :class:`~gpu_kernels.jobs.Cancelled` and
    ``KeyboardInterrupt``. ``mode`` is ``"wb"`` or ``"w"`` (text; ``encoding``
    defaults to UTF-8); extra keyword arguments go to :func:`open`.

    The body may also write to the temporary file by name, e.g. for a library that
    only accepts a path::

        with atomic_write(out, "wb") as f:
            f.close()
            library.save(f.name)
    """
    if mode not in ("w", "wb", "wt", "xb", "x", "xt"):
        raise ValueError(f"atomic_write supports write modes 'w'/'wb' only, not {mode!r}")
    path = Path(path)
    parent = _check_parent(path)
    if mode.startswith("x") and path.exists():
        raise FileExistsError(17, "file exists", str(path))
    if "b" not in mode:
        open_kwargs.setdefault("encoding", "utf-8")
    remove_stale_parts(parent, path.name)
    with errors_named_after(path):   # the file the user chose, not the hidden temporary one
        fd, tmp = tempfile.mkstemp(prefix=_part_prefix(path.name), suffix=".part", dir=parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        with open(tmp_path, "w" + ("b" if "b" in mode else ""), **open_kwargs) as f:
            yield f
            if not f.closed:
                f.flush()
                os.fsync(f.fileno())
        # the body may have closed f and written by name: sync what is there now
        with contextlib.suppress(OSError), open(tmp_path, "rb") as g:
            os.fsync(g.fileno())
        _copy_mode(path, tmp_path)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp_path.unlink()
        raise
    _fsync_dir(parent)


def write_lines(path: str | os.PathLike, lines) -> Path:
    """Write ``lines`` as a UTF-8 text file, one per line, atomically; returns the path."""
    path = Path(path)
    with atomic_write(path, "w") as fh:
        fh.write("".join(f"{line}\n" for line in lines))
    return path


def _copy_mode(existing: Path, new: Path) -> None:
    """Give ``new`` the permissions a freshly created file would get (not 0600)."""
    try:
        if existing.exists():
            os.chmod(new, existing.stat().st_mode & 0o777)
        else:
            os.chmod(new, 0o666 & ~_UMASK)
    except OSError:
        pass


#: the file that marks a folder as gpulab's own output (JSON: the names gpulab wrote there)
OUTPUT_MARKER = ".gpulab-output"


def marker_names(folder: Path) -> set[str] | None:
    """The top-level names gpulab recorded in ``folder``'s marker; None without a readable one."""
    try:
        data = json.loads((folder / OUTPUT_MARKER).read_text(encoding="utf-8"))
        names = data.get("files")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(names, list):
        return None
    return {str(n).split("/", 1)[0] for n in names}


def foreign_entries(folder: str | os.PathLike) -> list[str]:
    """The entries of an existing ``folder`` that gpulab did not write there (sorted): every
    entry, unless the folder carries gpulab's marker, then those the marker does not list."""
    folder = Path(folder)
    entries = sorted(p.name for p in folder.iterdir() if p.name != OUTPUT_MARKER)
    known = marker_names(folder)
    if known is None:
        return entries
    return [e for e in entries if e not in known]


def write_output_marker(folder: str | os.PathLike, names) -> Path:
    """Mark ``folder`` as gpulab's output, listing ``names`` (paths relative to it) as the files
    gpulab wrote; a later run may then replace them, and nothing else."""
    folder = Path(folder)
    from app import __version__

    data = {"gpulab": __version__, "files": sorted({str(n) for n in names} - {OUTPUT_MARKER})}
    marker = folder / OUTPUT_MARKER
    with atomic_write(marker, "w") as fh:
        fh.write(json.dumps(data, indent=1) + "\n")
    return marker


def check_output_dir(path: str | os.PathLike, *, option: str = "") -> Path:
    """Check, before any work, that an output folder may be written at ``path``: a new folder
    in a writable folder, an empty folder, or a folder gpulab wrote earlier holding nothing but
    what gpulab wrote (its marker lists it). A folder with anything else in it (the user's
    files, an input) is refused: gpulab never removes what it did not write. Raises
    :class:`OutputPathError`."""
    path = Path(path)
    lead = f"{option} {path}" if option else f"{path}"
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{lead}: a file has that name; give a folder name")
    if path.is_dir():
        try:
            foreign = foreign_entries(path)
        except OSError as exc:
            raise OutputPathError(f"{lead}: the folder cannot be read ({exc.strerror or exc})") from None
        if foreign:
            raise OutputPathError(foreign_message(lead, foreign, "give a new or empty folder"))
        if not os.access(path, os.W_OK):
            raise OutputPathError(cannot_write(lead, unwritable_reason(path)))
    check_writable_parent(path, lead)
    return path


def foreign_message(lead: str, foreign: list[str], remedy: str) -> str:
    """The one line that refuses a folder holding ``foreign`` entries gpulab did not write."""
    more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
    return f"{lead}: the folder holds files gpulab did not write ({foreign[0]}{more}); {remedy}"


def check_writable_parent(path, lead, error: type[Exception] | None = None) -> None:
    """Raise ``error`` (default :class:`OutputPathError`) with one line when the folder that
    would hold ``path`` is in the way of a file, missing or not writable."""
    error = OutputPathError if error is None else error
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    blocker = file_in_the_way(parent)
    if blocker is not None:
        raise error(cannot_write(lead, f"{blocker} is a file, not a folder"))
    if not parent.is_dir():
        raise error(f"{lead}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise error(cannot_write(lead, unwritable_reason(parent)))


@contextlib.contextmanager
def atomic_output_dir(path: str | os.PathLike, *, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary folder next to ``path``; on success rename it to ``path``.

    For outputs made of several files (e.g. one mesh per segment). On any exception the
    temporary folder and everything in it is removed. The finished folder carries gpulab's
    marker (:data:`OUTPUT_MARKER`) listing what was written. An existing ``path`` is replaced
    only when ``overwrite`` is true and it is empty or holds nothing but an earlier gpulab
    output (:func:`check_output_dir`; checked before and again just before the swap), and only
    after the new folder is complete (the old one is moved aside, then deleted).
    """
    path = Path(path)
    if path.exists() and path.is_dir() and not overwrite:
        raise FileExistsError(17, "folder exists", str(path))
    check_output_dir(path)
    parent = _check_parent(path, for_file=False)
    remove_stale_parts(parent, path.name)
    with errors_named_after(path):   # the folder the user chose, not the hidden temporary one
        tmp = Path(tempfile.mkdtemp(prefix=_part_prefix(path.name), suffix=".part", dir=parent))
    try:
        yield tmp
        write_output_marker(tmp, [p.name for p in tmp.iterdir()])
        os.chmod(tmp, 0o777 & ~_UMASK)
        if path.exists():
            check_output_dir(path)  # the user may have put files there while we worked
            old = Path(tempfile.mkdtemp(prefix=hidden_prefix(path.name), suffix=".old", dir=parent))
            os.rmdir(old)
            os.replace(path, old)
            try:
                os.replace(tmp, path)
            except BaseException:
                os.replace(old, path)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _fsync_dir(parent)


class OutputPathError(InputError):
    """An output cannot be written where the user asked (one clear line)."""


def check_not_an_input(path: str | os.PathLike, inputs, *, lead: str = "") -> Path:
    """Refuse, before any work, an output ``path`` that is one of ``inputs`` (the files the result
    was computed from), however it is spelled (relative, ``..``, a symbolic link): the one rule
    of the CLI's output checks and of the window's Save result / Export (README: gpulab never
    overwrites an input). ``lead`` prefixes the message (the CLI's option). Raises
    :class:`OutputPathError`.

    >>> import pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp()); (d / "a.png").write_bytes(b"x")
    1
    >>> check_not_an_input(d / "b.png", [d / "a.png"]).name
    'b.png'
    >>> check_not_an_input(d / "sub" / ".." / "a.png", [d / "a.png"])
    Traceback (most recent call last):
    ...
    app.io.atomic.OutputPathError: .../a.png: the output would overwrite the input a.png; choose another name
    """
    path = Path(path)
    target = path.resolve()
    for inp in inputs:
        if inp is None:
            continue
        inp = Path(inp)
        if inp.exists() and inp.resolve() == target:
            head = f"{lead} {path}" if lead else str(path)
            raise OutputPathError(f"{head}: the output would overwrite the input {inp.name}; choose another name")
    return path


def check_output_file(path: str | os.PathLike) -> Path:
    """Check, before any work, that a file can be written at ``path``: not a folder, in a
    folder that exists and is writable. Raises :class:`OutputPathError`; every writer's own
    check and the CLI's output checks call this one."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError(f"{path}: is a folder; give a file name")
    check_writable_parent(path, str(path))
    return path

