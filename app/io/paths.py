"""Paths named inside files: a header's data file, a camera file's images.

A file that names another file (a MetaImage ``ElementDataFile``, a NRRD ``data file``, the
images of a Middlebury or COLMAP scene) must not make gpulab read outside the folder it
names them from: ``ElementDataFile = /etc/passwd`` in a downloaded ``.mhd`` would otherwise
hand any readable file to the reader. :func:`contained_path` is the one rule every reader
uses. A user who keeps such data elsewhere on purpose sets ``GPULAB_ALLOW_OUTSIDE_PATHS=1``.

>>> import pathlib, tempfile
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> contained_path(d, "raw/volume.raw").relative_to(d.resolve()).as_posix()
'raw/volume.raw'
>>> contained_path(d, "/etc/passwd")
Traceback (most recent call last):
...
app.io.paths.OutsidePathError: the data file '/etc/passwd' is outside the folder ... (set GPULAB_ALLOW_OUTSIDE_PATHS=1 to allow it)
"""

from __future__ import annotations

import os
import pathlib

from gpu_kernels.errors import InputError

__all__ = ["contained_path", "OutsidePathError", "outside_paths_allowed", "ALLOW_ENV"]

ALLOW_ENV = "GPULAB_ALLOW_OUTSIDE_PATHS"


class OutsidePathError(InputError):
    """A file names another file outside its folder (one clear line)."""


def outside_paths_allowed() -> bool:
    """True when the user allowed files named by headers to lie outside their folder."""
    return os.environ.get(ALLOW_ENV, "").strip().lower() in ("1", "yes", "true", "on")


def contained_path(folder: str | os.PathLike, name: str, *, what: str = "data file") -> pathlib.Path:
    """``folder / name``, refused with :class:`OutsidePathError` when it leads outside ``folder``.

    Absolute names, ``..`` components and symbolic links that point out of the folder are all
    caught, because the check compares the fully resolved paths. ``what`` names the entry in the
    message ("image", "data file").
    """
    folder = pathlib.Path(folder)
    if "\x00" in str(name):
        raise OutsidePathError(f"the {what} name {name!r} holds a NUL character")
    cand = folder / name
    if outside_paths_allowed():
        return cand
    base = folder.resolve()
    target = cand.resolve()
    if target != base and base not in target.parents:
        raise OutsidePathError(f"the {what} {name!r} is outside the folder {folder} "
                               f"(set {ALLOW_ENV}=1 to allow it)")
    return target
