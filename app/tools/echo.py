"""3-D echo motion as a tool: inputs (a 4-D sequence, two volumes, a folder of volumes, a
synthetic sequence with its truth), parameters, running, summary, exports, samples, demo and
batch.

The compute layer is :mod:`gpu_kernels.echo` (volume-preserving 3-D CLG motion on the GPU or
the CPU). ``gpulab echo``, ``gpulab echo-synth``, the 3-D echo motion tab, ``gpulab demo``
and ``gpulab batch`` all call this module.

A run estimates the motion of every consecutive frame pair and, for more than two frames,
the trajectory of every voxel from the reference frame (end-diastole by default), by
composing the pairwise fields.

Example
-------
>>> from app.tools import echo                                           # doctest: +SKIP
>>> from gpu_kernels.backend import get_backend                          # doctest: +SKIP
>>> data = echo.load(echo.samples()[0])                                  # doctest: +SKIP
>>> res = echo.run(data, {}, device=get_backend("cpu"), progress=None)   # doctest: +SKIP
>>> res.pairwise.shape                                                   # doctest: +SKIP
(3, 3, 48, 48, 48)
"""

from __future__ import annotations

import json
import pathlib
import re
from dataclasses import dataclass, field, replace

import numpy as np

from gpu_kernels.backend import Backend
from gpu_kernels.echo import maps as _maps
from gpu_kernels.echo import motion as _motion
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.echo.sequence import estimate_sequence
from gpu_kernels.errors import InputError, TooLargeError
from gpu_kernels.jobs import Progress, as_progress

from ..io import image_io, volume_io
from ..io.atomic import atomic_output_dir, atomic_write, write_lines
from .base import BatchItem, Export, Tool, fmt_seconds, samples_in
from .params import Param, ParamSet
from .stages import Pipeline, Stage

__all__ = ["PARAMS", "TOOL", "EchoData", "EchoResult", "load", "load_pair", "with_frames", "with_truth",
           "run", "summary", "samples", "demo", "slice_maps", "render_slices", "write_synthetic",
           "pair_metrics", "MAP_KINDS", "COLORMAPS"]

INPUT_EXTENSIONS = tuple(e for e in volume_io.VOLUME_EXTENSIONS)
#: voxels x pairs above which a CPU run takes minutes (the tab and the CLI say so)
CPU_COMFORT_VOXELS = 64 ** 3 * 4

_M = _motion
PARAMS = ParamSet([
    Param("alpha", float, _M.DEFAULT_ALPHA, "Smoothness α",
          "Weight of the smoothness term |grad u|^2 (intensities normalised to 0..1); larger gives "
          "smoother motion.", minimum=0.0, min_open=True, maximum=100.0, step=0.005, decimals=4),
    Param("beta", float, _M.DEFAULT_BETA, "Volume term β",
          "Weight of div(u)^2, which keeps the motion close to volume preserving (0: plain CLG).",
          minimum=0.0, maximum=100.0, step=0.005, decimals=4),
    Param("rho", float, _M.DEFAULT_RHO, "Integration ρ",
          "Standard deviation of the Gaussian that integrates the structure tensor (local part of CLG).",
          minimum=0.0, maximum=20.0, step=0.5, decimals=2, unit="vx"),
    Param("sigma", float, _M.DEFAULT_SIGMA, "Pre-smooth σ",
          "Gaussian pre-smoothing of both volumes on each pyramid level (0: none).",
          minimum=0.0, maximum=20.0, step=0.5, decimals=2, unit="vx", advanced=True),
    Param("levels", int, _M.DEFAULT_LEVELS, "Pyramid levels",
          "Levels of the multiresolution pyramid; 'auto' stops at about 32 voxels (thick slices are "
          "never halved). More levels follow larger motions.",
          minimum=1, maximum=12, auto=True, auto_value=0, typical=3, metavar="L"),
    Param("warps", int, _M.DEFAULT_WARPS, "Warps",
          "Re-linearisations (warp the moving volume, rebuild the tensor, solve) per level.",
          minimum=1, maximum=100, metavar="W"),
    Param("iters", int, _M.DEFAULT_ITERS, "Sweeps/warp",
          "Cap on the relaxation sweeps of one warp (the residual tolerance usually stops earlier).",
          minimum=1, maximum=10000, metavar="N"),
    Param("tol", float, _M.DEFAULT_TOL, "Tolerance",
          "Stop a warp's relaxation when the RMS residual (preconditioned, voxels) is below this.",
          minimum=0.0, maximum=1.0, step=0.0005, decimals=5, unit="vx", advanced=True),
    Param("solver", str, _M.DEFAULT_SOLVER, "Solver",
          "sor: 4-colour over-relaxation (converges in few sweeps); jacobi: the paper's Jacobi, damped "
          "automatically when β needs it.", choices=_M.SOLVERS,
          choice_help={"sor": "multi-colour SOR, in place, any β", "jacobi": "Jacobi as in the paper"}),
    Param("omega", float, None, "Relaxation ω",
          "Relaxation factor; 'auto': 1.8 for SOR, the stable damping for Jacobi.",
          minimum=0.0, min_open=True, maximum=2.0, max_open=True, auto=True, auto_value=None, typical=1.8,
          step=0.05, decimals=2, advanced=True),
    Param("variant", str, _M.DEFAULT_VARIANT, "Kernel variant",
          "GPU kernels: cache (global memory through L1/L2) or smem (z-slice tiles in shared memory), "
          "the paper's comparison; the CPU ignores it.", choices=_M.VARIANTS, advanced=True,
          choice_help={"cache": "rely on the L1/L2 caches (faster on recent GPUs)",
                       "smem": "shared-memory z-slice tiles with halos"}),
    Param("derivative", str, _M.DEFAULT_DERIVATIVE, "Derivatives",
          "Spatial derivative of the fixed volume: central, or forward differences as in the paper.",
          choices=_M.DERIVATIVES, advanced=True),
    Param("reference", int, 0, "Reference",
          "Frame the trajectories start from (end-diastole); negative counts from the end.",
          minimum=-10000, maximum=10000, library_name="", metavar="R"),
])

LIBRARY_KEYS = ("alpha", "beta", "rho", "sigma", "levels", "warps", "iters", "tol", "solver", "omega", "variant",
                "derivative")

MAP_KINDS = ("Magnitude", "Jacobian determinant", "Divergence", "None")
#: colour maps as control points (value in 0..1, RGB): shared by the tab and the PNG export
COLORMAPS = {
    "Magnitude": [(0.0, (68, 1, 84)), (0.25, (59, 82, 139)), (0.5, (33, 145, 140)), (0.75, (94, 201, 98)),
                  (1.0, (253, 231, 37))],
    "Jacobian determinant": [(0.0, (33, 102, 172)), (0.25, (103, 169, 207)), (0.5, (247, 247, 247)),
                             (0.75, (239, 138, 98)), (1.0, (178, 24, 43))],
    "Divergence": [(0.0, (33, 102, 172)), (0.25, (103, 169, 207)), (0.5, (247, 247, 247)),
                   (0.75, (239, 138, 98)), (1.0, (178, 24, 43))],
}
#: default value range of each map (magnitude: 0..its 99th percentile, in the unit shown)
MAP_RANGES = {"Jacobian determinant": (0.5, 1.5), "Divergence": (-0.5, 0.5)}


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


# ----------------------------------------------------------------------------- run
@dataclass
class EchoResult:
    """The motion of ``data``.

    ``pairwise[k]`` (3, Z, Y, X) float32: frame k -> k + 1. ``trajectory[t]``: reference ->
    frame t (float32 for two frames, float16 for longer sequences to halve the memory; exports
    recompose it in float32).
    """

    data: EchoData
    pairwise: np.ndarray
    trajectory: np.ndarray
    reference: int
    params: dict
    device: str
    elapsed: float
    infos: list = field(default_factory=list)
    metrics: dict | None = None
    stats: dict = field(default_factory=dict)
    _zero: np.ndarray | None = field(default=None, repr=False)

    @property
    def is_pair(self) -> bool:
        return self.data.n_frames == 2

    def field(self, t: int, kind: str = "trajectory") -> np.ndarray:
        """The field shown at frame ``t``: from the reference (``trajectory``) or to the next
        frame (``pairwise``; zero at the last frame). A view, not a copy (possibly float16):
        convert the slices you use."""
        if kind == "pairwise":
            if t >= len(self.pairwise):
                if self._zero is None:
                    self._zero = np.zeros_like(self.pairwise[0])
                return self._zero
            return self.pairwise[t]
        return self.trajectory[t]


def _params_for_library(p: dict) -> dict:
    return {k: p[k] for k in LIBRARY_KEYS}


def pair_metrics(u, gt, mask=None, spacing=None) -> dict:
    """EPE (mean, 95th percentile; voxels and mm) and, inside ``mask``, the mean absolute
    error of the Jacobian determinant (the issue's ``--gt`` metrics)."""
    e = _maps.endpoint_error(u, gt, spacing=spacing)
    out = {"epe_mean": e["mean"], "epe_p95": e["p95"], "epe_mean_mm": e["mean_mm"], "epe_p95_mm": e["p95_mm"]}
    if mask is not None:
        m = np.asarray(mask, bool)
        if m.shape != tuple(u.shape[1:]):
            raise EchoInputError(f"the mask is {m.shape} voxels but the field is {tuple(u.shape[1:])}")
        d = np.abs(_maps.jacobian_determinant(u) - _maps.jacobian_determinant(gt))[m]
        out["jacobian_error_mask"] = float(d.mean())
        out["epe_mean_mask"] = _maps.endpoint_error(u, gt, mask=m, spacing=spacing)["mean"]
        out["mask_voxels"] = int(m.sum())
    return {k: round(v, 5) if isinstance(v, float) else v for k, v in out.items()}


def check(params: dict, device: Backend) -> None:
    PARAMS.validate(params)


def _reference(data: EchoData, reference: int) -> int:
    T = data.n_frames
    if T < 2:
        raise EchoInputError(f"{data.name} is a single volume: open the moving volume too (two volumes, a 4-D "
                             "file or a folder of frames)")
    if not -T <= reference < T:
        raise EchoInputError(f"reference frame {reference} does not exist: the sequence has {T} frames (0..{T - 1})")
    return reference % T


def _pairs(ctx):
    """Stage 1: the motion of every consecutive pair (pyramids, gradients, the solver per level)."""
    d = ctx.data
    _reference(d, 0)
    seq = estimate_sequence(d.frames, trajectory=False, spacing=d.spacing, device=ctx.device,
                            progress=ctx.progress, **ctx.p)
    return seq.pairwise, list(seq.info)


def _trajectory(ctx):
    """Stage 2: the trajectories from the reference frame (composed forwards; backwards, the
    pairs are estimated with the frames swapped)."""
    d, p, be = ctx.data, ctx.p, ctx.device
    pair, _ = ctx["pairs"]
    ref = _reference(d, p["reference"])
    lib = _params_for_library(p)
    T, xp = d.n_frames, be.xp
    traj = np.zeros((T, 3) + d.shape, dtype=np.float32 if T == 2 else np.float16)
    infos = []
    with be.activate():
        cur = None
        for j in range(ref + 1, T):
            pk = xp.asarray(pair[j - 1])
            cur = pk if cur is None else _maps.compose(cur, pk, device=be)
            traj[j] = be.asnumpy(cur)
        cur = None
        for j in range(ref - 1, -1, -1):
            ctx.progress.update((ref - 1 - j) / max(ref, 1), f"backwards {j + 1}->{j}")
            back, info = _motion.estimate_motion(xp.asarray(d.frames[j + 1]), xp.asarray(d.frames[j]),
                                                 spacing=d.spacing, device=be, return_info=True, **lib)
            infos.append(info.as_dict())
            cur = back if cur is None else _maps.compose(cur, back, device=be)
            traj[j] = be.asnumpy(cur)
    return traj, infos


def _metrics(ctx):
    """Stage 3: the errors against the ground truth, where there is one."""
    d = ctx.data
    pair, _ = ctx["pairs"]
    if not d.truth:
        return None
    per = []
    for (i, j), gt in sorted(d.truth.items()):
        if j == i + 1 and i < len(pair):
            per.append(pair_metrics(pair[i], gt, d.masks.get(i), d.spacing))
    if not per:
        return None
    metrics = {k: (int(sum(m[k] for m in per)) if k == "mask_voxels" else round(float(np.mean([m[k] for m in per])), 5))
               for k in per[0] if all(k in m for m in per)}
    metrics["pairs"] = len(per)
    return metrics


def _finish(data: EchoData, out: dict, p: dict, *, device: Backend, elapsed: float) -> EchoResult:
    pair, infos = out["pairs"]
    traj, back_infos = out["trajectory"]
    ref = _reference(data, p["reference"])
    return EchoResult(data, pair, traj, ref, p, device.label, elapsed, [*infos, *back_infos], out["metrics"],
                      stats=motion_stats(pair, traj, data.spacing, ref))


#: the stages of a run (:mod:`app.tools.stages`)
PIPELINE = Pipeline([
    Stage("pairs", _pairs, params=LIBRARY_KEYS, inputs=("frames", "spacing"), label="pairwise motion", weight=8.0),
    Stage("trajectory", _trajectory, params=("reference", *LIBRARY_KEYS), inputs=("frames", "spacing"),
          label="trajectories"),
    Stage("metrics", _metrics, after=("pairs",), inputs=("truth", "masks", "spacing"), label="metrics",
          weight=0.2),
], finish=_finish, params=PARAMS)


def run(data: EchoData, params: dict, *, device: Backend, progress: Progress | None = None) -> EchoResult:
    """Motion of every consecutive pair of ``data`` and trajectories from the reference frame."""
    p = PARAMS.validate(params)
    _reference(data, p["reference"])
    return PIPELINE.run(data, p, device=device, progress=progress)


def motion_stats(pair: np.ndarray, traj: np.ndarray, spacing, reference: int) -> dict:
    """The numbers of the summary, on every second voxel (cheap on a 256^3 x 20 sequence)."""
    sub = (slice(None), slice(None), slice(None, None, 2), slice(None, None, 2), slice(None, None, 2))
    spv = np.asarray(spacing, np.float32).reshape(1, 3, 1, 1, 1)
    pw = pair[sub].astype(np.float32)
    mag = np.sqrt((pw ** 2).sum(axis=1))
    mag_mm = np.sqrt(((pw * spv) ** 2).sum(axis=1))
    out = {"mean_vox": float(mag.mean()), "p99_vox": float(np.percentile(mag, 99)),
           "mean_mm": float(mag_mm.mean()), "p99_mm": float(np.percentile(mag_mm, 99))}
    if len(traj) > 2:
        tr = traj[sub].astype(np.float32)
        tmag = np.sqrt(((tr * spv) ** 2).sum(axis=1)).reshape(len(tr), -1)
        p99 = np.percentile(tmag, 99, axis=1)
        k = int(np.argmax(p99))
        out.update(traj_frame=k, traj_p99_mm=float(p99[k]))
    # on every second voxel: the field in units of that coarser grid has the same gradient
    det = _maps.jacobian_determinant(pair[0][:, ::2, ::2, ::2].astype(np.float32) / 2.0)
    out.update(det_p1=float(np.percentile(det, 1)), det_p99=float(np.percentile(det, 99)))
    return out


def advise(data: EchoData, params: dict, device: Backend) -> TooLargeError | None:
    """A long CPU run: say so (the GPU does a 128^3 pair in tens of milliseconds)."""
    n = int(np.prod(data.shape)) * max(1, data.n_frames - 1)
    if not device.is_gpu and n > CPU_COMFORT_VOXELS:
        minutes = n / (128 ** 3) * 1.0
        return TooLargeError(n, CPU_COMFORT_VOXELS, unit="voxel pairs", where="the CPU in reasonable time",
                             message=(f"{data.n_frames - 1} pair(s) of {'x'.join(map(str, data.shape))} voxels on the "
                                      f"CPU take about {max(1, round(minutes))} minute(s); a CUDA GPU takes seconds"))
    return None


# ----------------------------------------------------------------------------- summary
def summary(result: EchoResult) -> list[str]:
    d, p = result.data, result.params
    Z, Y, X = d.shape
    sp = d.spacing
    lines = [f"{d.name}: {d.n_frames} frames of {Z} x {Y} x {X} voxels ({sp[0]:.3g} x {sp[1]:.3g} x {sp[2]:.3g} mm, "
             "[z, y, x])"]
    lines += [f"  warning: {w}" for w in d.warnings]
    lev = _motion.pyramid_shapes(d.shape, p["levels"] or _motion.auto_levels(d.shape, d.spacing), d.spacing)
    lines.append(f"  parameters: alpha {p['alpha']:g}, beta {p['beta']:g}, rho {p['rho']:g}, sigma {p['sigma']:g}, "
                 f"{len(lev)} levels, {p['warps']} warps, {p['solver']} (cap {p['iters']}, tol {p['tol']:g})")
    sweeps = sum(int(i.get("sweeps", 0)) for i in result.infos)
    npairs = len(result.pairwise)
    lines.append(f"  device: {result.device}; {npairs} pair(s) in {fmt_seconds(result.elapsed)} "
                 f"({fmt_seconds(result.elapsed / max(npairs, 1))} each, {sweeps} sweeps in all)")
    st = result.stats or motion_stats(result.pairwise, result.trajectory, sp, result.reference)
    lines.append(f"  frame-to-frame motion: mean {st['mean_vox']:.2f} voxels ({st['mean_mm']:.2f} mm), "
                 f"99th percentile {st['p99_vox']:.2f} voxels ({st['p99_mm']:.2f} mm)")
    if "traj_frame" in st:
        lines.append(f"  trajectories from frame {result.reference}: largest at frame {st['traj_frame']} "
                     f"(99th percentile {st['traj_p99_mm']:.2f} mm)")
    lines.append(f"  volume change det(I + grad u) of the first pair: 1st-99th percentile "
                 f"{st['det_p1']:.3f} .. {st['det_p99']:.3f}")
    if result.metrics:
        m = result.metrics
        line = (f"  against the truth ({d.truth_source or 'given'}, {m.get('pairs', 1)} pair(s)): EPE mean "
                f"{m['epe_mean']:.3f} voxels ({m['epe_mean_mm']:.3f} mm), 95th percentile {m['epe_p95']:.3f}")
        if "jacobian_error_mask" in m:
            line += f"; in the mask: EPE {m['epe_mean_mask']:.3f}, |det error| {m['jacobian_error_mask']:.4f}"
        lines.append(line)
    return lines


def metrics(result: EchoResult) -> dict:
    out = {"seconds": float(result.elapsed), "pairs": len(result.pairwise),
           "mean_motion_voxels": float((result.stats or {}).get("mean_vox", float("nan")))}
    if result.metrics:
        out.update({k: float(v) for k, v in result.metrics.items()})
    return out


# ----------------------------------------------------------------------------- maps and pictures
def slice_maps(u: np.ndarray, axis: int, index: int, kind: str, spacing=None) -> np.ndarray:
    """A derived map on one slice (``axis``, ``index``) of the field ``u`` (3, Z, Y, X): the
    magnitude (mm with ``spacing``), the Jacobian determinant or the divergence, computed from
    a three-slice slab (cheap enough to redraw while scrubbing through a 256^3 sequence)."""
    n = u.shape[1 + axis]
    index = int(np.clip(index, 0, n - 1))
    if kind == "Magnitude":
        sl = [slice(None)] * 4
        sl[1 + axis] = index
        w = u[tuple(sl)].astype(np.float32)
        sp = np.ones(3, np.float32) if spacing is None else np.asarray(spacing, np.float32)
        return np.sqrt(sum((w[i] * sp[i]) ** 2 for i in range(3)))
    lo, hi = max(index - 1, 0), min(index + 2, n)
    sl = [slice(None)] * 4
    sl[1 + axis] = slice(lo, hi)
    slab = u[tuple(sl)].astype(np.float32)
    if slab.shape[1 + axis] < 2:         # a single slice along this axis: no derivative across it
        pad = [(0, 0)] * 4
        pad[1 + axis] = (0, 1)
        slab = np.pad(slab, pad, mode="edge")
    m = _maps.jacobian_determinant(slab) if kind == "Jacobian determinant" else _maps.divergence(slab)
    take = [slice(None)] * 3
    take[axis] = index - lo
    return m[tuple(take)]


def colorize(values: np.ndarray, kind: str, vmin: float, vmax: float) -> np.ndarray:
    """RGB uint8 of ``values`` through the map's colour ramp over [vmin, vmax]."""
    pts = COLORMAPS.get(kind, COLORMAPS["Magnitude"])
    x = np.clip((np.asarray(values, np.float32) - vmin) / max(vmax - vmin, 1e-12), 0.0, 1.0)
    xs = np.array([p[0] for p in pts])
    out = np.empty(x.shape + (3,), np.float32)
    for c in range(3):
        out[..., c] = np.interp(x, xs, [p[1][c] for p in pts])
    return out.astype(np.uint8)


def map_range(kind: str, values: np.ndarray | None = None) -> tuple[float, float]:
    if kind in MAP_RANGES:
        return MAP_RANGES[kind]
    hi = float(np.percentile(values, 99)) if values is not None and values.size else 1.0
    return 0.0, max(hi, 1e-3)


def _grey(img: np.ndarray, lo: float, hi: float) -> np.ndarray:
    g = np.clip((img.astype(np.float32) - lo) / max(hi - lo, 1e-12), 0, 1)
    return np.repeat((g * 255)[..., None], 3, axis=-1)


def _draw_segments(rgb: np.ndarray, x0, y0, x1, y1, color=(255, 255, 0)) -> None:
    H, W = rgb.shape[:2]
    for a, b, c, d in zip(x0, y0, x1, y1, strict=True):
        n = int(max(abs(c - a), abs(d - b)) * 2) + 2
        xs = np.rint(np.linspace(a, c, n)).astype(int)
        ys = np.rint(np.linspace(b, d, n)).astype(int)
        ok = (xs >= 0) & (xs < W) & (ys >= 0) & (ys < H)
        rgb[ys[ok], xs[ok]] = color


def arrow_grid(u2: np.ndarray, v2: np.ndarray, step: int, scale: float = 1.0):
    """Arrow segments (x0, y0, x1, y1) of an in-plane field sampled every ``step`` pixels:
    ``u2`` along the image columns, ``v2`` along its rows."""
    H, W = u2.shape
    ys, xs = np.mgrid[step // 2:H:step, step // 2:W:step]
    du = u2[ys, xs] * scale
    dv = v2[ys, xs] * scale
    return xs.ravel().astype(float), ys.ravel().astype(float), (xs + du).ravel(), (ys + dv).ravel()


def render_slices(result: EchoResult, path=None, *, frame: int | None = None, center=None, kind: str = "Magnitude",
                  motion: str = "trajectory", opacity: float = 0.5, arrows: bool = True, step: int = 8,
                  zoom: int | None = None) -> np.ndarray:
    """The three orthogonal slices through ``center`` at ``frame`` side by side (axial z,
    coronal y, sagittal x), with the map as colour and the in-plane motion as arrows; written
    as a PNG when ``path`` is given. Returns the RGB picture."""
    d = result.data
    T = d.n_frames
    t = (T - 1 if not result.is_pair else 0) if frame is None else int(np.clip(frame, 0, T - 1))
    if result.is_pair and frame is None:
        t, motion = 0, "pairwise"
    Z, Y, X = d.shape
    if zoom is None:  # about 256 pixels per panel: a 48^3 sample stays legible, 256^3 stays 1:1
        zoom = max(1, int(round(256 / max(Z, Y, X))))
    c = (Z // 2, Y // 2, X // 2) if center is None else tuple(int(np.clip(v, 0, n - 1)) for v, n in zip(center, d.shape, strict=True))
    vol = d.frames[t]
    lo, hi = np.percentile(vol[::2, ::2, ::2], (1, 99.5))
    u = result.field(t, motion)
    panels = []
    # axial: plane (y, x) at z; coronal: (z, x) at y; sagittal: (z, y) at x
    for axis, (ra, ca) in ((0, (1, 2)), (1, (0, 2)), (2, (0, 1))):
        sl = [slice(None)] * 3
        sl[axis] = c[axis]
        img = _grey(vol[tuple(sl)], lo, hi)
        if kind in COLORMAPS:
            m = slice_maps(u, axis, c[axis], kind, d.spacing)
            vmin, vmax = map_range(kind, m)
            img = (1 - opacity) * img + opacity * colorize(m, kind, vmin, vmax)
        img = np.repeat(np.repeat(img, zoom, axis=0), zoom, axis=1).astype(np.uint8)
        if arrows:
            fs = [slice(None)] * 4
            fs[1 + axis] = c[axis]
            w = u[tuple(fs)].astype(np.float32)
            x0, y0, x1, y1 = arrow_grid(w[ca], w[ra], max(1, step))
            _draw_segments(img, x0 * zoom, y0 * zoom, x1 * zoom, y1 * zoom)
        panels.append(img)
    h = max(p.shape[0] for p in panels)
    gap = np.full((h, 6, 3), 255, np.uint8)
    row = []
    for p in panels:
        pad = np.full((h - p.shape[0], p.shape[1], 3), 255, np.uint8)
        row += [np.concatenate([p, pad], axis=0), gap]
    pic = np.concatenate(row[:-1], axis=1)
    if path is not None:
        image_io.write_image(path, pic)
    return pic


# ----------------------------------------------------------------------------- exports
def _affine(result: EchoResult):
    return result.data.affine


def write_field(result: EchoResult, path) -> list[pathlib.Path]:
    """A pair: its field (3, Z, Y, X); a sequence: the pairwise fields (T - 1, 3, Z, Y, X) as
    .npy/.npz (NIfTI holds one field: export a pair)."""
    path = pathlib.Path(path)
    name = path.name.lower()
    if result.is_pair:
        volume_io.write_displacement(path, result.pairwise[0], spacing=result.data.spacing, affine=_affine(result))
        return [path]
    if name.endswith(".nii") or name.endswith(".nii.gz"):
        raise EchoInputError("a NIfTI vector image holds one field: write the sequence's fields as .npy or .npz, "
                             "or run on a pair (--frames i j)")
    if name.endswith(".npz"):
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, pairwise=result.pairwise, spacing=np.asarray(result.data.spacing))
    else:
        with atomic_write(path, "wb") as fh:
            np.save(fh, np.ascontiguousarray(result.pairwise))
    return [path]


def _trajectory32(result: EchoResult) -> np.ndarray:
    if result.trajectory.dtype == np.float32:
        return result.trajectory
    # recompose in float32 from the pairwise fields (the stored copy is float16)
    T = result.data.n_frames
    out = np.zeros((T, 3) + result.data.shape, np.float32)
    ref = result.reference
    cur = None
    for j in range(ref + 1, T):
        cur = result.pairwise[j - 1] if cur is None else _maps.compose(cur, result.pairwise[j - 1], device="cpu")
        out[j] = cur
    for j in range(ref - 1, -1, -1):
        out[j] = result.trajectory[j].astype(np.float32)      # backwards: only the stored copy
    return out


def write_trajectory(result: EchoResult, path) -> list[pathlib.Path]:
    """The fields from the reference frame to every frame, (T, 3, Z, Y, X)."""
    path = pathlib.Path(path)
    tr = _trajectory32(result)
    if path.name.lower().endswith(".npz"):
        with atomic_write(path, "wb") as fh:
            np.savez_compressed(fh, trajectory=tr, reference=np.int64(result.reference),
                                spacing=np.asarray(result.data.spacing))
    else:
        with atomic_write(path, "wb") as fh:
            np.save(fh, np.ascontiguousarray(tr))
    return [path]


def jacobian_volumes(result: EchoResult) -> np.ndarray:
    """A pair: det(I + grad u) (Z, Y, X); a sequence: that of every trajectory (T, Z, Y, X)."""
    if result.is_pair:
        return _maps.jacobian_determinant(result.pairwise[0])
    tr = result.trajectory
    return np.stack([_maps.jacobian_determinant(tr[t].astype(np.float32)) for t in range(len(tr))])


def write_jacobian(result: EchoResult, path) -> list[pathlib.Path]:
    path = pathlib.Path(path)
    J = jacobian_volumes(result).astype(np.float32)
    if path.name.lower().endswith(".npy"):
        with atomic_write(path, "wb") as fh:
            np.save(fh, J)
    else:
        volume_io.write_volume(path, J, spacing=result.data.spacing, affine=_affine(result))
    return [path]


def warped_volumes(result: EchoResult) -> np.ndarray:
    """A pair: the moving volume warped onto the fixed grid; a sequence: every frame warped
    onto the reference frame (which then looks still)."""
    d = result.data
    if result.is_pair:
        return _maps.warp_volume(d.frames[1].astype(np.float32), result.pairwise[0], device="cpu")
    return np.stack([_maps.warp_volume(d.frames[t].astype(np.float32), result.trajectory[t].astype(np.float32),
                                       device="cpu") for t in range(d.n_frames)])


def write_warped(result: EchoResult, path) -> list[pathlib.Path]:
    path = pathlib.Path(path)
    w = warped_volumes(result)
    if result.data.frames.dtype == np.uint8:
        w = np.clip(np.rint(w), 0, 255).astype(np.uint8)
    if path.name.lower().endswith(".npy"):
        with atomic_write(path, "wb") as fh:
            np.save(fh, w)
    else:
        volume_io.write_volume(path, w, spacing=result.data.spacing, affine=_affine(result))
    return [path]


def write_slices(result: EchoResult, path, **options) -> list[pathlib.Path]:
    """A picture of the three orthogonal slices with the overlays (PNG)."""
    render_slices(result, path, **options)
    return [pathlib.Path(path)]


EXPORTS = (
    Export("field", "Field", (".npy", ".npz", ".nii.gz", ".nii"), write_field, cli_option="-o"),
    Export("jacobian", "Jacobian", (".npy", ".nii.gz", ".nii"), write_jacobian, cli_option="--jacobian"),
    Export("trajectory", "Trajectories", (".npy", ".npz"), write_trajectory, cli_option="--trajectory"),
    Export("warped", "Warped", (".nii.gz", ".nii", ".npy", ".mha"), write_warped, cli_option="--warped"),
    Export("slices", "Slice picture", (".png",), write_slices, cli_option="--slices"),
)


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


# ----------------------------------------------------------------------------- samples, demo, batch
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


def demo(out_dir, *, device: Backend, progress: Progress | None = None) -> list[pathlib.Path]:
    """Run the bundled sequence: fields, Jacobian, slice picture and summary."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = samples()
    if not todo:
        raise InputError("the bundled echo sample is missing (resources/samples/echo)")
    data = load(todo[0])
    res = run(data, PARAMS.defaults(), device=device, progress=progress)
    written = write_field(res, out_dir / "echo-pairwise.npy")
    written += write_trajectory(res, out_dir / "echo-trajectory.npy")
    written += write_jacobian(res, out_dir / "echo-jacobian.nii.gz")
    written += write_slices(res, out_dir / "echo-slices.png", kind="Jacobian determinant")
    written.append(write_lines(out_dir / "echo-summary.txt", summary(res)))
    return written


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


def _headline(r: EchoResult) -> str:
    what = f"{r.data.names[0]} -> {r.data.names[1]}" if r.is_pair else f"{r.data.name} ({r.data.n_frames} frames)"
    extra = f"; EPE {r.metrics['epe_mean']:.3f} voxels" if r.metrics else ""
    return f"Motion of {what} in {fmt_seconds(r.elapsed)} on {r.device}{extra}"


TOOL = Tool(
    name="echo",
    title="Echo motion",
    key="echo",
    description="Dense 3-D motion of a volume sequence (volume-preserving CLG optical flow), with trajectories "
                "and Jacobian maps.",
    params=PARAMS,
    tab="app.tabs.echo_tab:EchoTab",
    command="app.commands.echo",
    stages=PIPELINE,
    load=load,
    run=run,
    summary=summary,
    exports=EXPORTS,
    input_extensions=INPUT_EXTENSIONS,
    input_kind="Volumes",
    input_noun="Volumes",
    headline=_headline,
    samples=samples,
    demo=demo,
    advise=advise,
    check=check,
    library=_motion.estimate_motion,
    default_output=lambda p: f"{p.name.split('.')[0]}-motion.npy",
    batch_items=batch_items,
    batch_load=batch_load,
    metrics=metrics,
)

