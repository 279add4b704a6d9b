"""The one register of gpulab's inputs: what each kind of input is, and which reader reads it.

Two tables, both standard-library only (declaring a tool loads no reader and no NumPy):

:data:`INPUT_KINDS`
    one :class:`InputKind` per kind of input a tool takes ("mesh", "frames", "volumes",
    "scene", "image"): the file name patterns, whether a folder is accepted and what it
    means, what a lone file is paired with, and where ground truth is found beside it. Every
    dispatch decision goes through it: the window's Open dialog and drag and drop
    (``Tool.handles``, the tab's file filter), ``gpulab <tool> INPUT`` (:func:`check_input`),
    ``gpulab batch``'s item expansion (:meth:`InputKind.expand`), the loaders' pairing and
    truth look-ups (:meth:`InputKind.partner`, :meth:`InputKind.truth_beside`) and the fuzz test.
:data:`READERS`
    every reader of user files, registered at import time of its module with
    :func:`register_reader`: the fuzz test (``tests/framework/test_fuzz_readers.py``) corrupts
    samples of its format and checks that it raises :class:`gpu_kernels.errors.InputError`.

Example
-------
>>> from app.io.registry import input_kind
>>> k = input_kind("volumes")
>>> k.matches("ed.NII.GZ"), k.matches("ed.png"), k.is_input_file("gt_000_001.npy")
(True, False, False)
>>> input_kind("frames").title
'Images or videos'
>>> from app.io.registry import register_reader, READERS
>>> def read_txt(path):
...     return open(path).read()
>>> spec = register_reader("text", read_txt, (".txt",), make_samples=None)
>>> spec in READERS
True
>>> READERS.remove(spec)
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpu_kernels.errors import InputError

from . import formats as _formats

__all__ = ["ReaderSpec", "READERS", "register_reader", "reader_by_name", "InputKind", "INPUT_KINDS",
           "register_input", "input_kind", "kinds_for", "check_input", "natural_key"]


# ----------------------------------------------------------------------------- readers
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


# ----------------------------------------------------------------------------- input kinds
_DIGITS = re.compile(r"(\d+)")


def _name(path: str | os.PathLike) -> str:
    """The last component of ``path`` (as ``PurePath(path).name``, without building a path)."""
    return os.path.basename(os.path.normpath(os.fspath(path))) if path else ""


def natural_key(p: str | os.PathLike) -> list:
    """Sort key that puts ``frame2`` before ``frame10``."""
    return [int(t) if t.isdigit() else t.lower() for t in _DIGITS.split(_name(p))]


def _is_dicom(path: pathlib.Path) -> bool:
    """A DICOM file by its preamble (``DICM`` at byte 128): series often have no extension."""
    try:
        with open(path, "rb") as fh:
            fh.seek(128)
            return fh.read(4) == b"DICM"
    except OSError:
        return False


@dataclass(frozen=True)
class InputKind:
    """One kind of input, as every part of gpulab dispatches it.

    Parameters
    ----------
    name : str
        The key tools name it by (``Tool(inputs="volumes")``).
    title : str
        Plural noun for dialogs and messages ("Volumes").
    patterns : tuple of str
        Lower-case endings of the file names read ("``.nii.gz``", "``_par.txt``").
    folder : str
        What a folder means, for help texts; empty when a folder is not an input.
    folder_holds : tuple of str
        A folder is an input when it holds a file with one of these endings (default:
        ``patterns``), or one of ``folder_subdirs``, or (``dicom``) DICOM files.
    pair : str
        What a lone file is paired with, for help texts ("" when a file stands alone);
        :meth:`partner` finds it.
    truth : tuple of str
        Glob patterns of ground-truth files beside an input (:meth:`truth_beside`).
    not_inputs : str
        A regular expression of names that match ``patterns`` but are not inputs of a folder
        (ground truth, masks): they are never listed, paired or expanded (a file given by name
        is still read).
    sequences : tuple of str
        Endings of files that hold several frames on their own (videos).
    """

    name: str
    title: str
    patterns: tuple[str, ...]
    folder: str = ""
    folder_holds: tuple[str, ...] = ()
    folder_subdirs: tuple[str, ...] = ()
    dicom: bool = False
    pair: str = ""
    truth: tuple[str, ...] = ()
    not_inputs: str = ""
    sequences: tuple[str, ...] = ()

    @property
    def accepts_folders(self) -> bool:
        return bool(self.folder)

    @property
    def filter(self) -> str:
        """The Open dialog's file filter: ``Volumes (*.nii *.nii.gz ...)``."""
        return f"{self.title} (" + " ".join(f"*{e}" for e in self.patterns) + ")" if self.patterns else ""

    def _excluded(self, name: str) -> bool:
        return bool(self.not_inputs) and re.search(self.not_inputs, name, re.I) is not None

    def matches(self, path: str | os.PathLike) -> bool:
        """Whether the name of ``path`` is one of this kind's files (no file system access)."""
        return _name(path).lower().endswith(self.patterns) if self.patterns else False

    def is_input_file(self, path: str | os.PathLike) -> bool:
        """:meth:`matches`, and not a truth or mask file (what folders are listed by)."""
        return self._name_is_input(_name(path))

    def _name_is_input(self, name: str) -> bool:
        return bool(self.patterns) and name.lower().endswith(self.patterns) and not self._excluded(name)

    def is_sequence_file(self, path: str | os.PathLike) -> bool:
        return _name(path).lower().endswith(self.sequences) if self.sequences else False

    def files_in(self, folder: str | os.PathLike) -> list[pathlib.Path]:
        """This kind's input files in ``folder`` (not recursive, no truth files), in natural order.

        One directory scan: names are matched first, and only matching entries are stat'ed
        (a folder of thousands of files is listed in milliseconds)."""
        d = pathlib.Path(folder)
        names = []
        try:
            with os.scandir(d) as it:
                for e in it:
                    if self._name_is_input(e.name):
                        try:
                            if e.is_file():
                                names.append(e.name)
                        except OSError:
                            continue
        except OSError:
            return []
        return [d / n for n in sorted(names, key=natural_key)]

    def folder_is_input(self, folder: str | os.PathLike) -> bool:
        """Whether ``folder`` is an input of this kind (what :attr:`folder` says it means)."""
        if not self.folder:
            return False
        d = pathlib.Path(folder)
        if any((d / s).is_dir() for s in self.folder_subdirs):
            return True
        holds = self.folder_holds or self.patterns
        try:
            entries = sorted(p for p in d.iterdir() if p.is_file())
        except OSError:
            return False
        if any(p.name.lower().endswith(holds) and not self._excluded(p.name) for p in entries):
            return True
        return self.dicom and any(p.suffix.lower() == ".dcm" or _is_dicom(p) for p in entries[:3])

    def accepts(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` is an input of this kind: a matching file, or a folder it accepts."""
        p = pathlib.Path(path)
        if p.is_dir():
            return self.folder_is_input(p)
        return self.matches(p)

    def expand(self, paths: Iterable[str | os.PathLike]) -> list[pathlib.Path]:
        """Files and folders as the files they stand for: a folder that is not itself one input
        gives its matching files (batch's default items)."""
        out: list[pathlib.Path] = []
        for p in map(pathlib.Path, paths):
            out += self.files_in(p) if p.is_dir() else [p]
        return out

    def partner(self, path: str | os.PathLike) -> pathlib.Path | None:
        """The file a lone ``path`` pairs with: the next input of its folder (natural order)."""
        p = pathlib.Path(path)
        seq = self.is_sequence_file(p)   # an image pairs with an image, never with a video
        files = [f for f in self.files_in(p.parent) if self.is_sequence_file(f) == seq]
        # the entries are p's siblings, so p is the one of the same name (no resolving: a
        # folder of thousands of images pairs in milliseconds)
        try:
            i = [f.name for f in files].index(p.name)
        except ValueError:
            return None
        return files[i + 1] if i + 1 < len(files) else None

    def truth_beside(self, path: str | os.PathLike) -> list[pathlib.Path]:
        """Ground-truth files beside ``path`` (in the folder ``path`` is, or is in), sorted."""
        p = pathlib.Path(path)
        d = p if p.is_dir() else p.parent
        found: set[pathlib.Path] = set()
        for pat in self.truth:
            found.update(q for q in d.glob(pat) if q.is_file())
        return sorted(found - ({p} if p.is_file() else set()), key=natural_key)

    def describe(self) -> str:
        """One line of what is accepted, for help texts and errors."""
        text = f"{self.title.lower()}: " + " ".join(self.patterns)
        return text + (f"; a folder: {self.folder}" if self.folder else "")


INPUT_KINDS: dict[str, InputKind] = {}


def register_input(kind: InputKind) -> InputKind:
    """Add ``kind`` (one of the same name is replaced)."""
    INPUT_KINDS[kind.name] = kind
    return kind


def input_kind(name: str) -> InputKind:
    try:
        return INPUT_KINDS[name]
    except KeyError:
        raise KeyError(f"no input kind {name!r} (known: {', '.join(INPUT_KINDS)})") from None


def kinds_for(path: str | os.PathLike, kinds: Sequence[str] | None = None) -> list[InputKind]:
    """The input kinds (of ``kinds``, default all) that accept ``path``."""
    return [k for n, k in INPUT_KINDS.items() if (kinds is None or n in kinds) and k.accepts(path)]


def check_input(kind: str | InputKind, path: str | os.PathLike, *, error: type[Exception] = InputError) -> pathlib.Path:
    """``path`` if it exists and is a file or a folder ``kind`` accepts; else one line that says why."""
    k = input_kind(kind) if isinstance(kind, str) else kind
    p = pathlib.Path(path)
    if not p.exists():
        raise error(f"{p}: no such file" + (" or folder" if k.folder else ""))
    if p.is_dir() and not k.folder_is_input(p):
        if not k.folder:
            raise error(f"{p}: is a folder; give one file ({k.describe()})")
        raise error(f"{p}: the folder holds no {k.title.lower()} ({' '.join(k.patterns)})")
    return p


# the built-in kinds -----------------------------------------------------------------------
register_input(InputKind("mesh", "Meshes", _formats.MESH_EXTENSIONS))
register_input(InputKind(
    "frames", "Images or videos", _formats.IMAGE_EXTENSIONS + _formats.VIDEO_EXTENSIONS,
    folder="a sequence of frames (its images in natural order), consecutive pairs",
    folder_holds=_formats.IMAGE_EXTENSIONS,
    pair="an image pairs with the next image of its folder",
    truth=("flow*.flo", "*flow_gt*.png", "*_gt.flo", "gt*.flo", "*flow*gt*.flo"),
    not_inputs=r"flow[^/]*\.(png|jpe?g|tiff?|bmp)$", sequences=_formats.VIDEO_EXTENSIONS))
register_input(InputKind(
    "volumes", "Volumes", _formats.VOLUME_EXTENSIONS,
    folder=("the frames of a sequence (3-D volumes in natural order), a DICOM series, or a folder written by "
            "'gpulab echo-synth' (sequence.* with gt_III_JJJ.npy and myocardium_III.* beside it)"),
    dicom=True, pair="a 3-D volume pairs with the next 3-D volume of the same grid in its folder",
    truth=("gt_*_*.npy", "myocardium_*.*"), not_inputs=r"^(gt_|myocardium_|labels)|\.(raw|dcm)$"))
register_input(InputKind(
    "scene", "Scenes", ("_par.txt", "cameras.txt", "cameras.bin", "images.txt", "images.bin"),
    folder="a Middlebury scene (one *_par.txt) or a COLMAP model (cameras/images, or sparse/0)",
    folder_holds=("_par.txt", "cameras.txt", "cameras.bin"), folder_subdirs=("sparse/0", "sparse", "dense/sparse")))
register_input(InputKind(
    "image", "Images", _formats.IMAGE_EXTENSIONS,
    folder="its images, one at a time (the first is opened; the others are stepped through)"))
