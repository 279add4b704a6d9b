"""The inputs of the echo tool: the study (:class:`app.io.echo_study.EchoStudy`, read by
:func:`app.io.volume_io.read_sequence`), synthetic sequences written as folders, the samples
and the batch items.
"""

from __future__ import annotations

import json
import pathlib
from typing import TYPE_CHECKING

from gpu_kernels.echo import defaults as _d
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_module

from ..io import formats as _formats
from ..io.atomic import atomic_output_dir, atomic_write
from ..io.registry import input_kind
from .base import BatchItem, samples_in
from .params import Param, ParamSet

if TYPE_CHECKING:
    import numpy as np

    from ..io import echo_study as _study
    from ..io import volume_io
    from ..io.echo_study import EchoStudy
    from ..io.echo_study import EchoStudy as EchoData  # noqa: F401 - see __getattr__
else:  # loaded on first use (start-up, issue 18 case 19)
    np = lazy_module("numpy")
    volume_io = lazy_module("app.io.volume_io")
    _study = lazy_module("app.io.echo_study")


def __getattr__(name: str):
    # the study a run takes: read by app.io.volume_io.read_sequence (folders, DICOM series,
    # pairing and ground truth are decided there and in the reader registry, not here)
    if name in ("EchoData", "EchoStudy"):
        return _study.EchoStudy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["SYNTH_PARAMS", "EchoData", "load", "load_pair", "with_frames", "with_truth", "write_synthetic", "samples",
           "batch_items", "batch_load", "INPUT_EXTENSIONS", "ACDC_ED"]

INPUT_EXTENSIONS = _formats.VOLUME_EXTENSIONS
_SYNTH_FORMATS = ("nii.gz", "nii", "npz", "mha", "nrrd")


# ----------------------------------------------------------------------------- data
def load(path, *, progress: Progress | None = None) -> EchoStudy:
    """A 4-D file, a 3-D file (paired with the next volume of its folder), a folder of 3-D
    frames, a DICOM series folder, or a synthetic sequence folder (``gpulab echo-synth``),
    with its ground truth: :func:`app.io.volume_io.read_sequence`."""
    return volume_io.read_sequence(path, progress=progress)


def load_pair(fixed, moving, *, progress: Progress | None = None) -> EchoStudy:
    """Two 3-D volumes as a two-frame sequence (fixed first)."""
    return volume_io.read_sequence(fixed, moving=moving, progress=progress)


def with_frames(data: EchoStudy, i: int, j: int) -> EchoStudy:
    """The pair (frame ``i`` -> frame ``j``) of a sequence as a two-frame input."""
    return _study.with_frames(data, i, j)


def with_truth(data: EchoStudy, gt_path, mask_path=None) -> EchoStudy:
    """A ground-truth field for the pair (frame 0 -> 1) and, optionally, a mask."""
    return _study.with_truth(data, gt_path, mask_path)


# ----------------------------------------------------------------------------- synthetic sequences

#: the generator's settings (``gpulab echo-synth`` flags are made from them; the generator
#: validates the values, so its messages are the ones a user sees)
SYNTH_PARAMS = ParamSet([
    Param("size", int, _d.SYNTH_SIZE, "Size", "Edge of the cubic volume in voxels.",
          minimum=_d.SYNTH_MIN_SIZE, maximum=_d.SYNTH_MAX_SIZE, metavar="N"),
    Param("frames", int, _d.SYNTH_FRAMES, "Frames", "Frames over one cardiac cycle.", minimum=1, maximum=1000,
          metavar="T"),
    Param("noise", float, _d.SYNTH_NOISE, "Noise", "Complex noise relative to the speckle RMS.", minimum=0.0,
          maximum=10.0, metavar="X"),
    Param("decorrelation", float, _d.SYNTH_DECORRELATION, "Decorrelation", "Speckle decorrelation between frames.",
          minimum=0.0, maximum=1.0, metavar="X"),
    Param("contraction", float, _d.SYNTH_CONTRACTION, "Contraction",
          "Blood-pool cross-section lost at end-systole.", minimum=0.0, maximum=0.95, max_open=True, metavar="X"),
    Param("shortening", float, _d.SYNTH_SHORTENING, "Shortening", "Long-axis shortening at end-systole.",
          minimum=0.0, maximum=0.5, max_open=True, metavar="X"),
    Param("twist", float, _d.SYNTH_TWIST, "Twist", "Apex-to-base twist at end-systole.", minimum=-90.0,
          maximum=90.0, unit="degrees", metavar="DEG"),
    Param("spacing", float, 1.0, "Voxel size", "Voxel size.", minimum=0.0, min_open=True, unit="mm", metavar="MM"),
    Param("seed", int, 0, "Seed", "Random seed.", metavar="SEED"),
    Param("format", str, "nii.gz", "Format", "File type of the sequence.", choices=_SYNTH_FORMATS),
])


def write_synthetic(out_dir, seq, *, fmt: str = "nii.gz", progress: Progress | None = None) -> list[pathlib.Path]:
    """Write a :class:`~gpu_kernels.echo.synthetic.SyntheticEcho` as a folder: ``sequence.<fmt>``
    (4-D), ``gt_III_JJJ.npy`` for every consecutive pair (and from frame 0 to every frame),
    ``myocardium_III.nii.gz`` masks and ``params.json`` (atomically: all or nothing)."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    if fmt not in _SYNTH_FORMATS:
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
    """The bundled synthetic sequence (its truth is stored with it), then the ACDC pair if the
    shared data is beside the checkout (opening ``sax_ed`` pairs it with ``sax_es``)."""
    out = samples_in("echo", (".npz",), first=("lv_synthetic",))
    from ..io.sample_data import data_path

    acdc = data_path(*ACDC_ED.parts)
    if acdc is not None and acdc.is_file():
        out.append(acdc.resolve())
    return out


def batch_items(paths: list[pathlib.Path]) -> list[BatchItem]:
    """Consecutive frame pairs of every 4-D file; 3-D files pair up in turn (a folder stands
    for its sequence file, else for its volumes, as the reader registry lists them)."""
    items: list[BatchItem] = []
    threes: list[pathlib.Path] = []
    for p in paths:
        if p.is_dir():
            seq = _study.sequence_file(p)
            items += batch_items([seq] if seq is not None else input_kind("volumes").files_in(p))
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


def batch_load(item: BatchItem, *, progress: Progress | None = None) -> EchoStudy:
    if len(item.inputs) == 2:
        return load_pair(*item.inputs, progress=progress)
    i, j = item.meta.get("frames", [0, 1])
    return volume_io.read_sequence(item.inputs[0], frames=(int(i), int(j)), progress=progress)
