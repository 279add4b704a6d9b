"""Bad paths given to a benchmark script end in one clear line on stderr and exit status 2, before
anything is measured or written: an output in a folder that does not exist, an input file that is
missing or not JSON, a data folder without the data, a results file the run would silently replace.
Developer tools, but the brief says every bad input. ``mvs_cli`` (the MVS scripts) and the session-8
scripts use these; the output check is ``app.io.atomic.check_output_file``, the one every writer uses.

Example
-------
>>> from bench_cli import BadInput, check_output
>>> check_output("--json", "/no/such/folder/out.json")
Traceback (most recent call last):
...
bench_cli.BadInput: --json /no/such/folder/out.json: the folder /no/such/folder does not exist
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# a checkout run without gpulab installed (a GPU host with only NumPy, SciPy and CuPy): the checks below import
# app.io, so the tree this file lives in is the fallback; appended, so an installed gpulab or a script's --root wins
_TREE = str(Path(__file__).resolve().parents[1])
if _TREE not in sys.path:
    sys.path.append(_TREE)

__all__ = ["BadInput", "check_bsds", "check_folder", "check_input_file", "check_json_input", "check_new_folder",
           "check_output", "check_results_file", "check_cache_source", "option_value", "run", "write_json"]


class BadInput(Exception):
    """A bad path or input, said in one line."""


def option_value(argv, flag):
    """The value of ``flag`` in ``argv`` as argparse reads it: ``flag VALUE``, ``flag=VALUE`` or a
    unique abbreviation (``--js VALUE``); None where it is not given."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == "--":
            break
        if not a.startswith("--") or len(a) < 4:
            continue
        key, eq, value = a.partition("=")
        if not flag.startswith(key):
            continue
        if eq:
            return value
        if i + 1 >= len(argv):
            raise BadInput(f"{flag} needs a value")
        return argv[i + 1]
    return None


def check_output(flag, value) -> Path:
    """An output file ``value`` may be written (``app.io.atomic.check_output_file``)."""
    from app.io.atomic import OutputPathError, check_output_file

    try:
        return check_output_file(value)
    except OutputPathError as exc:
        raise BadInput(f"{flag} {exc}") from None


def check_input_file(flag, value) -> Path:
    p = Path(value)
    if not p.is_file():
        raise BadInput(f"{flag}: no such file: {p}" if not p.is_dir() else f"{flag}: {p} is a folder, not a file")
    return p


def check_json_input(flag, value, *, lines: bool = False):
    """The parsed JSON of the input file ``value`` (a list of the rows where ``lines``: JSON Lines)."""
    p = check_input_file(flag, value)
    try:
        text = p.read_text()
        if lines:
            return [json.loads(x) for x in text.splitlines() if x.strip()]
        return json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{flag}: {p} is not a benchmark's JSON ({type(exc).__name__}: {exc})") from None


def check_folder(flag, value, *, writable: bool = False) -> Path:
    """``value`` is an existing folder (writable, where asked)."""
    import os

    p = Path(value)
    if not p.is_dir():
        raise BadInput(f"{flag}: {p} is a file, not a folder" if p.exists() else f"{flag}: no such folder: {p}")
    if writable and not os.access(p, os.W_OK):
        raise BadInput(f"{flag}: the folder {p} is not writable")
    return p


def check_new_folder(flag, value) -> Path:
    """``value`` is a folder, or one that can be made (its nearest existing parent a writable folder)."""
    import os

    p = Path(value)
    if p.exists():
        return check_folder(flag, p, writable=True)
    up = p.absolute().parent
    while not up.exists():
        up = up.parent
    if not up.is_dir():
        raise BadInput(f"{flag} {p}: {up} is a file, not a folder")
    if not os.access(up, os.W_OK):
        raise BadInput(f"{flag} {p}: the folder {up} is not writable")
    return p


def check_bsds(flag, root, *, val: bool = False) -> None:
    """``root`` holds BSDS500 as the shared data lays it out: ``train/images/*.jpg`` with
    ``train/groundTruth`` (and, with ``val``, ``images`` / ``groundTruth`` of the 20 images)."""
    root = check_folder(flag, root)
    for sub in ("train", "") if val else ("train",):
        d = root / sub if sub else root
        if not any((d / "images").glob("*.jpg")) or not (d / "groundTruth").is_dir():
            raise BadInput(f"{flag}: {root} holds no BSDS500 images (expected {d / 'images'}/*.jpg and "
                           f"{d / 'groundTruth'}/; the shared data's bsds500 folder)")


#: the file in a cache folder that names the data it was made from
CACHE_SOURCE = ".data-source"


def check_cache_source(flag, cache, data, *, data_flag: str = "--data") -> None:
    """A cache folder made from other data does not stand in for ``data``: the folder names its
    source in :data:`CACHE_SOURCE` (written here, for a cache that has none yet), and a cache
    made from another folder is refused (a cache without the file, made before it, is taken as
    it is)."""
    cache, src = Path(cache), str(Path(data).resolve())
    marker = cache / CACHE_SOURCE
    try:
        known = marker.read_text().strip() if marker.is_file() else None
    except (OSError, UnicodeDecodeError):
        known = None
    if known is not None and known != src:
        raise BadInput(f"{flag} {cache} was made from {known}, not {data_flag} {src}; give another {flag} "
                       "or remove that folder")
    if known is None:
        from app.io.atomic import atomic_write

        try:
            cache.mkdir(parents=True, exist_ok=True)
            with atomic_write(marker, "w") as fh:
                fh.write(src + "\n")
        except OSError as exc:  # a path check: one line (run), not a traceback
            raise BadInput(f"{flag} {cache}: {_os_line(exc)}") from None


def check_results_file(flag, given, default) -> Path:
    """The results file a run writes: ``given`` where named (checked), else ``default``, which must
    not exist yet: a run replaces committed results only where the user names the file."""
    if given is not None:
        return check_output(flag, given)
    p = check_output(flag, default)
    if p.exists():
        raise BadInput(f"{p} exists (committed results); name it with {flag} to write over it, or give another file")
    return p


def write_json(path, obj, **dumps) -> Path:
    """Write ``obj`` as JSON at ``path`` atomically (complete, or not at all)."""
    from app.io.atomic import atomic_write

    with atomic_write(path, "w") as fh:
        fh.write(json.dumps(obj, **dumps))
    return Path(path)


def _user_error(exc) -> bool:
    """``exc`` is one of gpulab's errors meant for the user as they stand (a file that cannot be
    read, a device that cannot be used), of whichever tree the script imported."""
    errors = sys.modules.get("gpu_kernels.errors")
    kinds = tuple(getattr(errors, k) for k in ("GpulabError", "InputError", "BackendError") if hasattr(errors, k))
    return bool(kinds) and isinstance(exc, kinds)


def _os_line(exc: OSError) -> str:
    return f"{exc.strerror or type(exc).__name__}: {exc.filename or exc}"


def run(main, argv=None, *, check=None) -> int:
    """``main(argv)`` after ``check(argv)`` (where given). A bad input is one line on stderr and exit
    status 2: a :class:`BadInput` (the path checks, made before anything is timed), an ``OSError``
    of ``check`` itself, and gpulab's own errors for the user (a mesh or scene that cannot be read,
    no CUDA device). Anything else raised while the benchmark runs, an ``OSError`` included, is a
    bug or a failure the checks did not foresee, and keeps its traceback (Python's own way, what a
    scikit-image or OpenCV user reads from a script), with exit status 1."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = Path(sys.argv[0]).name or "benchmark"
    try:
        if check is not None:
            try:
                check(argv)
            except OSError as exc:  # a path the checks could not look at
                raise BadInput(_os_line(exc)) from None
        return main(argv) or 0
    except BadInput as exc:
        msg = str(exc)
    except Exception as exc:
        if not _user_error(exc):
            raise
        msg = " ".join(str(exc).split()) or type(exc).__name__
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2
