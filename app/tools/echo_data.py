"""The inputs of the echo tool: a sequence of volumes with what belongs to it (spacing, frame
names, ground-truth displacements, myocardium masks), read from a 4-D file, two volumes, a
folder of volumes or a synthetic sequence (whose truth is rebuilt); synthetic sequences
written as folders; the samples and batch items.
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.errors import InputError
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_module

from ..io import formats as _formats
from ..io.atomic import atomic_output_dir, atomic_write
from .base import BatchItem, samples_in

if TYPE_CHECKING:
    import numpy as np

    from ..io import volume_io
else:  # loaded on first use (start-up, issue 18 case 19)
    np = lazy_module("numpy")
    volume_io = lazy_module("app.io.volume_io")

__all__ = ["EchoData", "load", "load_pair", "with_frames", "with_truth", "write_synthetic", "samples",
           "batch_items", "batch_load", "INPUT_EXTENSIONS", "ACDC_ED"]

INPUT_EXTENSIONS = tuple(e for e in _formats.VOLUME_EXTENSIONS)


# ----------------------------------------------------------------------------- data
@dataclass
class EchoData:
    """A sequence of T >= 1 volumes ``frames`` (T, Z, Y, X) and what belongs to it.

    ``truth`` maps a frame pair ``(i, j)`` to its exact displacement (synthetic sequences);
    ``masks`` maps a frame to a boolean mask (the myocardium) used by the metrics.
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


def _natural_key(p: pathlib.Path):
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)]


def _volume_files(folder: pathlib.Path) -> list[pathlib.Path]:
    files = [p for p in folder.iterdir() if p.is_file() and volume_io.volume_format(p) in
             ("nifti", "metaimage", "nrrd", "npy", "npz") and not p.name.lower().endswith(".raw")]
    return sorted(files, key=_natural_key)


def _from_volume(vol: volume_io.Volume, name: str) -> EchoData:
    frames = vol.data if vol.data.ndim == 4 else vol.data[None]
    T = frames.shape[0]
    names = [f"{name}[{t}]" for t in range(T)] if T > 1 else [name]
    return EchoData(frames, vol.spacing, names, vol.path, vol.affine, vol.time_step)


def _stack(vols: list[volume_io.Volume], names: list[str], path) -> EchoData:
    shape = vols[0].data.shape
    for v, n in zip(vols, names, strict=True):
        if v.data.ndim != 3:
            raise EchoInputError(f"{n} is a {v.data.ndim}-D file; a folder of frames must hold 3-D volumes")
        if v.data.shape != shape:
            raise EchoInputError(f"{n} is {v.data.shape} voxels but {names[0]} is {shape}: the frames must share a grid")
    dt = np.result_type(*[v.data.dtype for v in vols])
    frames = np.stack([v.data.astype(dt, copy=False) for v in vols])
    data = EchoData(frames, vols[0].spacing, names, path, vols[0].affine)
    if any(tuple(np.round(v.spacing, 6)) != tuple(np.round(vols[0].spacing, 6)) for v in vols):
        data.warnings.append("the frames' voxel sizes differ; the first frame's is used")
    return data


def load_pair(fixed, moving, *, progress: Progress | None = None) -> EchoData:
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


def _synthetic_folder(folder: pathlib.Path) -> pathlib.Path | None:
    for name in ("sequence.nii.gz", "sequence.nii", "sequence.npz", "sequence.mha", "sequence.nrrd"):
        if (folder / name).is_file():
            return folder / name
    return None


def _attach_folder_truth(data: EchoData, folder: pathlib.Path) -> EchoData:
    """Ground-truth fields ``gt_III_JJJ.npy`` and masks ``myocardium_III.*`` beside a sequence."""
    for p in sorted(folder.glob("gt_*_*.npy")):
        m = re.fullmatch(r"gt_(\d+)_(\d+)\.npy", p.name)
        if m:
            i, j = int(m.group(1)), int(m.group(2))
            if i < data.n_frames and j < data.n_frames:
                data.truth[(i, j)] = volume_io.read_displacement(p, shape=data.shape)
    for p in sorted(folder.iterdir()):
        m = re.fullmatch(r"myocardium_(\d+)\.(nii\.gz|nii|npy|npz|mha|nrrd)", p.name)
        if m and int(m.group(1)) < data.n_frames:
            v = volume_io.read_volume(p)
            if v.data.shape == data.shape:
                data.masks[int(m.group(1))] = v.data > 0
    if data.truth:
        data.truth_source = folder.name
    return data


def _synthetic_truth(data: EchoData, params_json: str) -> EchoData:
    """Rebuild the exact motion of a sequence written with the generator's parameters."""
    from gpu_kernels.echo.synthetic import make_sequence

    try:
        prm = json.loads(params_json)
        seq = make_sequence(prm["size"], frames=prm["frames"], seed=prm["seed"],
                            spacing=tuple(prm.get("spacing", (1.0, 1.0, 1.0))), device="cpu")
    except Exception:  # noqa: BLE001 - no truth is not an error
        return data
    if seq.frames.shape != data.frames.shape:
        return data
    T = data.n_frames
    for k in range(T - 1):
        data.truth[(k, k + 1)] = seq.displacement(k, k + 1, device="cpu")
    for t in range(T):
        data.masks[t] = seq.myocardium_mask(t, device="cpu")
    data.truth_source = "the generator"
    return data


def load(path, *, progress: Progress | None = None) -> EchoData:
    """A 4-D file, a 3-D file (paired with the next volume of its folder), a folder of 3-D
    frames, a DICOM series folder, or a synthetic sequence folder (``gpulab echo-synth``)."""
    progress = as_progress(progress)
    path = pathlib.Path(path)
    if not path.exists():
        raise InputError(f"no such file or folder: {path}")
    if path.is_dir():
        seq_file = _synthetic_folder(path)
        if seq_file is not None:
            data = _from_volume(volume_io.read_volume(seq_file), seq_file.name)
            data.path = path
            _attach_folder_truth(data, path)
            progress.update(1.0, f"read {path.name}: {data.n_frames} frames")
            return data
        files = _volume_files(path)
        if not files:
            vol = volume_io.read_volume(path)          # a DICOM series
            return _from_volume(vol, path.name)
        vols = []
        for k, f in enumerate(files):
            progress.update(k / len(files), f"reading {f.name}")
            vols.append(volume_io.read_volume(f))
        if len(vols) == 1 and vols[0].data.ndim == 4:
            return _from_volume(vols[0], files[0].name)
        return _stack(vols, [f.name for f in files], path)
    vol = volume_io.read_volume(path)
    data = _from_volume(vol, path.name)
    if vol.data.ndim == 3:
        files = _volume_files(path.parent)
        idx = [f.resolve() for f in files].index(path.resolve()) if path.resolve() in [f.resolve() for f in files] else -1
        nxt = [f for f in files[idx + 1:] if not re.match(r"(gt_|myocardium_|labels)", f.name)] if idx >= 0 else []
        cand = None
        for f in nxt:
            try:
                v2 = volume_io.read_volume(f)
            except InputError:
                continue
            if v2.data.ndim == 3 and v2.data.shape == vol.data.shape:
                cand = (f, v2)
                break
        if cand is not None:
            data = _stack([vol, cand[1]], [path.name, cand[0].name], path)
    if path.suffix.lower() == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                pj = str(z["params"]) if "params" in z.files else None
        except Exception:  # noqa: BLE001
            pj = None
        if pj:
            _synthetic_truth(data, pj)
    progress.update(1.0, f"read {path.name}: {data.n_frames} frame(s) of {data.shape}")
    return data


def with_frames(data: EchoData, i: int, j: int) -> EchoData:
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


def with_truth(data: EchoData, gt_path, mask_path=None) -> EchoData:
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


# ----------------------------------------------------------------------------- synthetic sequences
def write_synthetic(out_dir, seq, *, fmt: str = "nii.gz", progress: Progress | None = None) -> list[pathlib.Path]:
    """Write a :class:`~gpu_kernels.echo.synthetic.SyntheticEcho` as a folder: ``sequence.<fmt>``
    (4-D), ``gt_III_JJJ.npy`` for every consecutive pair (and from frame 0 to every frame),
    ``myocardium_III.nii.gz`` masks and ``params.json`` (atomically: all or nothing)."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    if fmt not in ("nii.gz", "nii", "npz", "mha", "nrrd"):
        raise EchoInputError(f"unknown sequence format {fmt!r}: use nii.gz, nii, npz, mha or nrrd")
    T = seq.frames.shape[0]
    written = []
    with atomic_output_dir(out_dir) as tmp:
        volume_io.write_volume(tmp / f"sequence.{fmt}", seq.frames, spacing=seq.spacing, time_step=1.0)
        written.append(f"sequence.{fmt}")
        pairs = [(k, k + 1) for k in range(T - 1)] + [(0, t) for t in range(2, T)]
        for n, (i, j) in enumerate(pairs):
            progress.update(n / max(len(pairs), 1), f"ground truth {i} -> {j}")
            volume_io.write_displacement(tmp / f"gt_{i:03d}_{j:03d}.npy", seq.displacement(i, j))
            written.append(f"gt_{i:03d}_{j:03d}.npy")
        for t in range(T):
            volume_io.write_volume(tmp / f"myocardium_{t:03d}.nii.gz", seq.myocardium_mask(t).astype(np.uint8),
                                   spacing=seq.spacing)
            written.append(f"myocardium_{t:03d}.nii.gz")
        prm = dict(seq.params, spacing=list(seq.spacing), phases=[float(p) for p in seq.phases],
                   axes="[t, z, y, x]; fields (3, Z, Y, X) in voxels, moving(x + u(x)) = fixed(x)")
        with atomic_write(tmp / "params.json", "w") as fh:
            fh.write(json.dumps(prm, indent=1, default=list) + "\n")
        written.append("params.json")
    progress.update(1.0, "written")
    return [out_dir / w for w in written]


# ----------------------------------------------------------------------------- samples and batch
#: the real cardiac MRI pair (ACDC, end-diastole and end-systole), when the shared data sits
#: beside the checkout (it is not bundled)
ACDC_ED = pathlib.Path("cardiac-mri") / "acdc" / "sax_ed.nii.gz"   # under app.io.sample_data.data_dir()


def samples() -> list[pathlib.Path]:
    """The bundled synthetic sequence (its truth is rebuilt on load), then the ACDC pair if the
    shared data is beside the checkout (opening ``sax_ed`` pairs it with ``sax_es``)."""
    out = samples_in("echo", (".npz",), first=("lv_synthetic",))
    from ..io.sample_data import data_path

    acdc = data_path(*ACDC_ED.parts)
    if acdc is not None and acdc.is_file():
        out.append(acdc.resolve())
    return out


def batch_items(paths: list[pathlib.Path]) -> list[BatchItem]:
    """Consecutive frame pairs of every 4-D file; 3-D files pair up in turn."""
    items: list[BatchItem] = []
    threes: list[pathlib.Path] = []
    for p in paths:
        if p.is_dir():
            items += batch_items(_volume_files(p)) if _synthetic_folder(p) is None else \
                batch_items([_synthetic_folder(p)])
            continue
        vol = volume_io.read_volume(p)
        if vol.data.ndim == 4:
            stem = p.name.split(".")[0]
            for k in range(vol.data.shape[0] - 1):
                items.append(BatchItem(f"{stem}-{k:03d}", (str(p),), {"frames": [k, k + 1]}))
        else:
            threes.append(p)
    for a, b in zip(threes, threes[1:], strict=False):
        items.append(BatchItem(f"{a.name.split('.')[0]}-{b.name.split('.')[0]}", (str(a), str(b))))
    return items


def batch_load(item: BatchItem, *, progress: Progress | None = None) -> EchoData:
    if len(item.inputs) == 2:
        return load_pair(*item.inputs, progress=progress)
    data = load(pathlib.Path(item.inputs[0]), progress=progress)
    i, j = item.meta.get("frames", [0, 1])
    return with_frames(data, int(i), int(j))
