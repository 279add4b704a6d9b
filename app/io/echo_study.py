"""A 3-D echo study: a sequence of volumes with everything that belongs to it, read in one call.

:func:`read_sequence` is the whole walk from what a user names to an :class:`EchoStudy`
(``gpulab echo``, the echo tab, batch and the demo all call it; :func:`app.io.volume_io.read_sequence`
is the same function). What an input may be, what a folder or a lone file means and where
ground truth sits come from the reader registry's ``"volumes"`` kind (:mod:`app.io.registry`):

* a 4-D file (NIfTI, MetaImage, NRRD, ``.npy``/``.npz``);
* a 3-D file, paired with the next 3-D volume of the same grid in its folder, or with
  ``moving`` when given;
* a folder: a sequence written by ``gpulab echo-synth`` (``sequence.*`` with ``gt_III_JJJ.npy``
  and ``myocardium_III.*`` beside it), a folder of 3-D frames in natural order, or a DICOM series;
* ground truth: the files beside a sequence, arrays ``gt_III_JJJ`` and ``myocardium_III``
  stored in an ``.npz`` with its frames (the bundled sample), or a field named by ``truth``.

Nothing is computed here: truth is read, never rebuilt by running a generator.

Example
-------
>>> import numpy as np, tempfile, pathlib
>>> from app.io.volume_io import write_volume
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> v = np.zeros((4, 5, 6), np.uint8)
>>> write_volume(d / "a.nii.gz", v); write_volume(d / "b.nii.gz", v + 1)
>>> s = read_sequence(d / "a.nii.gz")          # paired with the next volume of its folder
>>> s.n_frames, s.names, s.shape
(2, ['a.nii.gz', 'b.nii.gz'], (4, 5, 6))
"""

from __future__ import annotations

import os
import pathlib
import re
import zipfile
from dataclasses import dataclass, field, replace

import numpy as np

from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.errors import InputError
from gpu_kernels.jobs import Progress, as_progress

from . import volume_io
from .formats import SEQUENCE_NAMES
from .inputs import failure_reason
from .registry import input_kind

__all__ = ["EchoStudy", "read_sequence", "read_pair", "with_frames", "with_truth", "SEQUENCE_NAMES",
           "sequence_file"]

_GT = re.compile(r"gt_(\d+)_(\d+)(\.npy)?")
_MASK = re.compile(r"myocardium_(\d+)(\.(nii\.gz|nii|npy|npz|mha|nrrd))?")


@dataclass
class EchoStudy:
    """A sequence of T >= 1 volumes ``frames`` (T, Z, Y, X) and what belongs to it.

    Vector convention: displacement fields are (3, Z, Y, X), component i along array axis i
    (z, y, x), in voxels, with ``moving(x + u(x)) = fixed(x)``. ``truth`` maps a frame pair
    ``(i, j)`` to its exact field; ``masks`` maps a frame to a boolean mask (the myocardium)
    used by the metrics; ``truth_source`` says where the truth came from.
    """

    frames: np.ndarray
    spacing: tuple
    names: list[str]
    path: pathlib.Path | None = None
    affine: object = None
    time_step: float | None = None
    truth: dict = field(default_factory=dict)
    masks: dict = field(default_factory=dict)
    truth_source: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else (self.names[0] if self.names else "volumes")

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def shape(self) -> tuple:
        return tuple(int(s) for s in self.frames.shape[1:])


def _kind():
    return input_kind("volumes")


def _from_volume(vol: volume_io.Volume, name: str) -> EchoStudy:
    frames = vol.data if vol.data.ndim == 4 else vol.data[None]
    T = frames.shape[0]
    names = [f"{name}[{t}]" for t in range(T)] if T > 1 else [name]
    return EchoStudy(frames, vol.spacing, names, vol.path, vol.affine, vol.time_step)


def _stack(vols: list[volume_io.Volume], names: list[str], path) -> EchoStudy:
    shape = vols[0].data.shape
    for v, n in zip(vols, names, strict=True):
        if v.data.ndim != 3:
            raise EchoInputError(f"{n} is a {v.data.ndim}-D file; a folder of frames must hold 3-D volumes")
        if v.data.shape != shape:
            raise EchoInputError(f"{n} is {v.data.shape} voxels but {names[0]} is {shape}: the frames must share a grid")
    dt = np.result_type(*[v.data.dtype for v in vols])
    frames = np.stack([v.data.astype(dt, copy=False) for v in vols])
    data = EchoStudy(frames, vols[0].spacing, names, path, vols[0].affine)
    if any(tuple(np.round(v.spacing, 6)) != tuple(np.round(vols[0].spacing, 6)) for v in vols):
        data.warnings.append("the frames' voxel sizes differ; the first frame's is used")
    return data


def read_pair(fixed, moving, *, progress: Progress | None = None) -> EchoStudy:
    """Two 3-D volumes as a two-frame sequence (fixed first)."""
    progress = as_progress(progress)
    p1, p2 = pathlib.Path(fixed), pathlib.Path(moving)
    a, b = volume_io.read_volume(p1), volume_io.read_volume(p2)
    for v, p in ((a, p1), (b, p2)):
        if v.data.ndim != 3:
            raise EchoInputError(f"{p.name} holds a 4-D sequence; give it alone (with --frames i j) or two 3-D volumes")
    if a.data.shape != b.data.shape:
        raise EchoInputError(f"{p1.name} is {a.data.shape} voxels but {p2.name} is {b.data.shape}: "
                             "the volumes must share a grid")
    data = _stack([a, b], [p1.name, p2.name], p1)
    progress.update(1.0, f"read {p1.name} and {p2.name}")
    return data


def sequence_file(folder: pathlib.Path) -> pathlib.Path | None:
    """The ``sequence.*`` file ``gpulab echo-synth`` wrote in ``folder``, if any."""
    return next((folder / n for n in SEQUENCE_NAMES if (folder / n).is_file()), None)


def _truth_beside(data: EchoStudy, where: pathlib.Path) -> EchoStudy:
    """Ground-truth fields ``gt_III_JJJ.npy`` and masks ``myocardium_III.*`` beside a sequence
    (the files the registry's ``volumes`` kind names as truth)."""
    for p in _kind().truth_beside(where):
        m, k = _GT.fullmatch(p.name), _MASK.fullmatch(p.name)
        if m and m.group(3):
            i, j = int(m.group(1)), int(m.group(2))
            if i < data.n_frames and j < data.n_frames:
                data.truth[(i, j)] = volume_io.read_displacement(p, shape=data.shape)
        elif k and k.group(2) and int(k.group(1)) < data.n_frames:
            v = volume_io.read_volume(p)
            if v.data.shape == data.shape:
                data.masks[int(k.group(1))] = v.data > 0
    if data.truth:
        data.truth_source = where.name if where.is_dir() else where.parent.name
    return data


def _truth_stored(data: EchoStudy, path: pathlib.Path) -> EchoStudy:
    """Arrays ``gt_III_JJJ`` (3, Z, Y, X) and ``myocardium_III`` (Z, Y, X) stored in the ``.npz``
    beside its frames (what ``resources/samples/echo/make_sample.py`` writes)."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile):
        return data
    with zf:
        for member in zf.namelist():
            stem = member[:-4] if member.endswith(".npy") else member
            m, k = _GT.fullmatch(stem), _MASK.fullmatch(stem)
            if not (m or k):
                continue
            try:
                arr = volume_io.npz_member(zf, member, path)
            except InputError:
                raise
            except Exception as exc:  # noqa: BLE001 - a damaged member is the file's fault
                raise EchoInputError(f"{path.name}: the array {stem} cannot be read ({failure_reason(exc)})") from None
            if m:
                i, j = int(m.group(1)), int(m.group(2))
                if arr.shape != (3, *data.shape) or arr.dtype.kind != "f":
                    raise EchoInputError(f"{path.name}: {stem} is {arr.shape} {arr.dtype}; a truth field must be "
                                         f"(3, {', '.join(map(str, data.shape))}) floating point")
                if not np.isfinite(arr).all():
                    raise EchoInputError(f"{path.name}: {stem} contains NaN or infinite values")
                if i < data.n_frames and j < data.n_frames:
                    data.truth[(i, j)] = arr.astype(np.float32)
            elif arr.shape == data.shape and int(k.group(1)) < data.n_frames:
                data.masks[int(k.group(1))] = arr > 0
    if data.truth:
        data.truth_source = f"stored in {path.name}"
    return data


def _read_folder(path: pathlib.Path, progress) -> EchoStudy:
    seq_file = sequence_file(path)
    if seq_file is not None:                      # written by gpulab echo-synth
        data = _from_volume(volume_io.read_volume(seq_file), seq_file.name)
        data.path = path
        return _truth_beside(data, path)
    files = _kind().files_in(path)
    if not files:
        return _from_volume(volume_io.read_volume(path), path.name)   # a DICOM series
    vols = []
    for n, f in enumerate(files):
        progress.update(n / len(files), f"reading {f.name}")
        vols.append(volume_io.read_volume(f))
    if len(vols) == 1 and vols[0].data.ndim == 4:
        return _from_volume(vols[0], files[0].name)
    return _stack(vols, [f.name for f in files], path)


def _read_file(path: pathlib.Path) -> EchoStudy:
    vol = volume_io.read_volume(path)
    data = _from_volume(vol, path.name)
    if vol.data.ndim == 3:                        # paired with the next 3-D volume of its grid
        files = _kind().files_in(path.parent)
        try:
            rest = files[[f.resolve() for f in files].index(path.resolve()) + 1:]
        except ValueError:
            rest = []
        for f in rest:
            try:
                v2 = volume_io.read_volume(f)
            except InputError:
                continue
            if v2.data.ndim == 3 and v2.data.shape == vol.data.shape:
                data = _stack([vol, v2], [path.name, f.name], path)
                break
    if volume_io.volume_format(path) == "npz":
        _truth_stored(data, path)
    return data


def read_sequence(path, *, moving=None, frames: tuple[int, int] | None = None, truth=None, mask=None,
                  progress: Progress | None = None) -> EchoStudy:
    """Read an echo study (see the module text for what ``path`` may be).

    Parameters
    ----------
    path : path-like
        A 4-D file, a 3-D file, or a folder.
    moving : path-like, optional
        The moving 3-D volume (``path`` is then the fixed one).
    frames : (int, int), optional
        Keep only the pair frame ``i`` -> frame ``j`` (:func:`with_frames`).
    truth, mask : path-like, optional
        A ground-truth field of the pair and a mask for its metrics (:func:`with_truth`).

    Raises
    ------
    InputError
        One line: a missing file, a folder with no volumes, frames that differ in grid, ...
    """
    progress = as_progress(progress)
    p = pathlib.Path(path)
    if not os.path.lexists(p):
        raise InputError(f"no such file or folder: {p}")
    if moving is not None:
        data = read_pair(p, moving, progress=progress)
    elif p.is_dir():
        data = _read_folder(p, progress)
    else:
        data = _read_file(p)
    if frames is not None:
        data = with_frames(data, *frames)
    if truth is not None:
        data = with_truth(data, truth, mask)
    progress.update(1.0, f"read {p.name}: {data.n_frames} frame(s) of {data.shape}")
    return data


def with_frames(data: EchoStudy, i: int, j: int) -> EchoStudy:
    """The pair (frame ``i`` -> frame ``j``) of a sequence as a two-frame input."""
    T = data.n_frames
    for k in (i, j):
        if not -T <= k < T:
            raise EchoInputError(f"frame {k} does not exist: {data.name} has {T} frames (0..{T - 1})")
    i, j = i % T, j % T
    if i == j:
        raise EchoInputError("the two frames must differ")
    truth = {(0, 1): data.truth[(i, j)]} if (i, j) in data.truth else {}
    masks = {0: data.masks[i]} if i in data.masks else {}
    return replace(data, frames=data.frames[[i, j]], names=[data.names[i], data.names[j]], truth=truth, masks=masks)


def with_truth(data: EchoStudy, gt_path, mask_path=None) -> EchoStudy:
    """A ground-truth field for the pair (frame 0 -> 1) and, optionally, a mask."""
    if data.n_frames != 2:
        raise EchoInputError("a ground-truth field belongs to a pair: give two volumes or --frames i j")
    u = volume_io.read_displacement(gt_path, shape=data.shape)
    masks = dict(data.masks)
    if mask_path is not None:
        m = volume_io.read_volume(mask_path)
        if m.data.shape != data.shape:
            raise EchoInputError(f"the mask {pathlib.Path(mask_path).name} is {m.data.shape} voxels but the volumes "
                                 f"are {data.shape}")
        if not (m.data > 0).any():
            raise EchoInputError(f"the mask {pathlib.Path(mask_path).name} selects no voxel")
        masks[0] = m.data > 0
    return replace(data, truth={(0, 1): u}, masks=masks, truth_source=pathlib.Path(gt_path).name)


# --------------------------------------------------------------------------- fuzz-test registration
def _samples(folder: pathlib.Path) -> list[pathlib.Path]:
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 255, (3, 6, 7, 8), dtype=np.uint8)
    gt = rng.normal(0, 0.5, (3, 6, 7, 8)).astype(np.float32)
    out = folder / "study.npz"
    np.savez_compressed(out, frames=frames, spacing=np.array([1.0, 1.0, 2.0]), gt_000_001=gt,
                        myocardium_000=frames[0] > 128)
    return [out]


def _register() -> None:
    from .registry import register_reader

    register_reader("echo study", read_sequence, (".npz",), make_samples=_samples)


_register()
