"""The register of file readers, for the reader fuzz test (``tests/framework/test_fuzz_readers.py``).

Every reader of user files joins by calling :func:`register_reader` at import time of its
module: the test corrupts samples of its format (truncation, flipped bytes, absurd header
counts, empty and huge files) and checks that the reader raises
:class:`gpu_kernels.errors.InputError` within a time limit, never another exception, never
hangs and never allocates without bound.

Example
-------
>>> from app.io.registry import register_reader, READERS
>>> def read_txt(path):
...     return open(path).read()
>>> spec = register_reader("text", read_txt, (".txt",), make_samples=None)
>>> spec in READERS
True
>>> READERS.remove(spec)
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["ReaderSpec", "READERS", "register_reader", "reader_by_name"]


@dataclass(frozen=True)
class ReaderSpec:
    """A reader: ``read(path)`` returns data or raises InputError.

    ``make_samples(folder) -> list[Path]`` writes a few valid files of the format there (the
    fuzz test corrupts them, together with the bundled samples of these extensions).
    """

    name: str
    read: Callable[[pathlib.Path], Any]
    extensions: tuple[str, ...]
    make_samples: Callable[[pathlib.Path], list[pathlib.Path]] | None = None


READERS: list[ReaderSpec] = []


def register_reader(name: str, read: Callable[[pathlib.Path], Any], extensions: tuple[str, ...], *,
                    make_samples: Callable[[pathlib.Path], list[pathlib.Path]] | None = None) -> ReaderSpec:
    spec = ReaderSpec(name, read, tuple(e.lower() for e in extensions), make_samples)
    READERS[:] = [r for r in READERS if r.name != name]
    READERS.append(spec)
    return spec


def reader_by_name(name: str) -> ReaderSpec:
    for r in READERS:
        if r.name == name:
            return r
    raise KeyError(name)
