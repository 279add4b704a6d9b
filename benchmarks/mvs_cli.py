"""Bad paths given to the MVS benchmark scripts (benchmarks/mvs*.py) end in one clear line on
stderr and exit status 2, before anything is measured: an output file in a folder that does not
exist, a ``--compare`` file that is missing or not JSON, a code root (``MVS4_CODE_ROOT`` /
``MVS5_CODE_ROOT``) without ``gpu_kernels``, a missing scene. Developer tools, but the brief says
every bad input. The checks themselves are ``bench_cli``'s, shared with the other benchmarks.

Example
-------
>>> from mvs_cli import BadInput, check_paths
>>> check_paths(["--json", "/no/such/folder/out.json"])
Traceback (most recent call last):
...
bench_cli.BadInput: --json /no/such/folder/out.json: the folder /no/such/folder does not exist
"""

from __future__ import annotations

import os
from pathlib import Path

from bench_cli import BadInput, check_json_input, check_output, option_value
from bench_cli import run as _run

__all__ = ["BadInput", "check_paths", "check_scene", "run"]


def check_paths(argv, *, outputs=("--json",), env_roots=("MVS4_CODE_ROOT", "MVS5_CODE_ROOT")) -> None:
    """Raise :class:`BadInput` for a bad output file, ``--compare`` file or code root in ``argv``
    and the environment (``--json PATH``, ``--json=PATH`` and abbreviations alike)."""
    argv = list(argv)
    if "--compare" in argv:
        i = argv.index("--compare")
        files = argv[i + 1:i + 3]
        if len(files) < 2 or any(f.startswith("--") for f in files):
            raise BadInput("--compare needs two JSON files (a benchmark's --json output)")
        for f in files:
            check_json_input("--compare", f)
        return
    for flag in outputs:
        v = option_value(argv, flag)
        if v is not None:
            check_output(flag, v)
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
    and exit status 2 (``bench_cli.run``)."""
    def check(argv):
        check_paths(argv, outputs=outputs)
        if scene is not None and "--compare" not in argv:
            check_scene(scene())

    return _run(main, argv, check=check)
