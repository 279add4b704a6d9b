"""Bad paths given to the MVS benchmark scripts (benchmarks/mvs*.py) end in one clear line on
stderr and exit status 2, before anything is measured: an output file in a folder that does not
exist, a ``--compare`` file that is missing or not JSON, a code root (``MVS4_CODE_ROOT`` /
``MVS5_CODE_ROOT``) without ``gpu_kernels``, a missing scene. Developer tools, but the brief says
every bad input.

Example
-------
>>> from mvs_cli import BadInput, check_paths
>>> check_paths(["--json", "/no/such/folder/out.json"])
Traceback (most recent call last):
...
mvs_cli.BadInput: --json /no/such/folder/out.json: the folder /no/such/folder does not exist
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

__all__ = ["BadInput", "check_paths", "check_scene", "run"]


class BadInput(Exception):
    """A bad path or input, said in one line."""


def _value(argv, flag):
    if flag not in argv:
        return None
    i = argv.index(flag)
    if i + 1 >= len(argv):
        raise BadInput(f"{flag} needs a value")
    return argv[i + 1]


def _output(flag, value) -> None:
    from app.io.atomic import OutputPathError, check_output_file

    try:
        check_output_file(value)
    except OutputPathError as exc:
        raise BadInput(f"{flag} {exc}") from None


def _json_input(flag, value) -> None:
    p = Path(value)
    if not p.is_file():
        raise BadInput(f"{flag}: no such file: {p}")
    try:
        json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise BadInput(f"{flag}: {p} is not a benchmark's JSON ({type(exc).__name__}: {exc})") from None


def check_paths(argv, *, outputs=("--json",), env_roots=("MVS4_CODE_ROOT", "MVS5_CODE_ROOT")) -> None:
    """Raise :class:`BadInput` for a bad output file, ``--compare`` file or code root in ``argv``
    and the environment."""
    argv = list(argv)
    if "--compare" in argv:
        i = argv.index("--compare")
        files = argv[i + 1:i + 3]
        if len(files) < 2 or any(f.startswith("--") for f in files):
            raise BadInput("--compare needs two JSON files (a benchmark's --json output)")
        for f in files:
            _json_input("--compare", f)
        return
    for flag in outputs:
        v = _value(argv, flag)
        if v is not None:
            _output(flag, v)
    for name in env_roots:
        root = os.environ.get(name)
        if root and not (Path(root) / "gpu_kernels").is_dir():
            raise BadInput(f"{name}={root}: no gpu_kernels folder there (the code to time)")


def check_scene(path) -> None:
    """Raise :class:`BadInput` where the scene folder ``path`` is missing."""
    if not Path(path).is_dir():
        raise BadInput(f"no MVS scene at {path} (set GPULAB_SHARED_DATA to the folder that holds "
                       "middlebury-mvs/templeSparseRing)")


def run(main, argv=None, *, scene=None, outputs=("--json",)) -> int:
    """``main(argv)`` after :func:`check_paths` (and :func:`check_scene` of ``scene()``, where given);
    a bad input, or a file or scene that cannot be read or written on the way, is one line on stderr
    and exit status 2."""
    from app.io.scene_io import SceneReadError

    argv = list(sys.argv[1:] if argv is None else argv)
    prog = Path(sys.argv[0]).name or "benchmark"
    try:
        check_paths(argv, outputs=outputs)
        if scene is not None and "--compare" not in argv:
            check_scene(scene())
        return main(argv) or 0
    except (BadInput, SceneReadError) as exc:
        msg = str(exc)
    except OSError as exc:  # a file that went away, a full disk, ...
        msg = f"{exc.strerror or type(exc).__name__}: {exc.filename or exc}"
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2
