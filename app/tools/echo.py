"""3-D echo motion as a tool: inputs (a 4-D sequence, two volumes, a folder of volumes, a
synthetic sequence with its truth), parameters, running, summary, exports, samples, demo and
batch.

The compute layer is :mod:`gpu_kernels.echo` (volume-preserving 3-D CLG motion on the GPU or
the CPU). ``gpulab echo``, ``gpulab echo-synth``, the 3-D echo motion tab, ``gpulab demo``
and ``gpulab batch`` all call this module.

A run estimates the motion of every consecutive frame pair and, for more than two frames,
the trajectory of every voxel from the reference frame (end-diastole by default), by
composing the pairwise fields (inverted for the frames before the reference).

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

import pathlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpu_kernels.echo import defaults as _echo_defaults
from gpu_kernels.echo.errors import EchoInputError
from gpu_kernels.errors import InputError, TooLargeError
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_function, lazy_module

from ..io.atomic import write_lines
from . import display_params as _display
from .base import Export, Tool, ToolResult, fmt_seconds
from .echo_data import (  # noqa: F401 - the inputs, re-exported: echo.load, echo.EchoData, ...
    ACDC_ED,
    INPUT_EXTENSIONS,
    batch_items,
    batch_load,
    load,
    load_pair,
    samples,
    with_frames,
    with_truth,
    write_synthetic,
)
from .echo_exports import (  # noqa: F401 - re-exported
    jacobian_volumes,
    warped_volumes,
    write_field,
    write_jacobian,
    write_slices,
    write_trajectory,
    write_warped,
)
from .echo_report import metrics, summary  # noqa: F401 - the summary lines and batch metrics
from .params import Param, ParamSet
from .stages import Pipeline, Stage

# NumPy, SciPy, the kernels and the renderer load on first use, not with the declaration
# (start-up, issue 18 case 19)
if TYPE_CHECKING:
    import numpy as np

    from gpu_kernels.backend import Backend
    from gpu_kernels.echo import maps as _maps
    from gpu_kernels.echo import sequence as _sequence

    from ..io.echo_study import EchoStudy as EchoData
    from ..render import echo as _render
    from ..render.echo import COLORMAPS, MAP_KINDS, render_slices, slice_maps  # noqa: F401 - see __getattr__
else:
    np = lazy_module("numpy")
    _maps = lazy_module("gpu_kernels.echo.maps")
    _sequence = lazy_module("gpu_kernels.echo.sequence")
    _render = lazy_module("app.render.echo")

#: the pictures, re-exported for the tab and the tests (echo.render_slices, ...), loaded on first use
_RENDER_NAMES = ("COLORMAPS", "MAP_KINDS", "MAP_RANGES", "arrow_grid", "colorize", "map_range", "render_slices",
                 "slice_maps")


def __getattr__(name: str):
    if name in _RENDER_NAMES:
        return getattr(_render, name)
    if name in ("EchoData", "EchoStudy"):  # the study, read by app.io.volume_io.read_sequence (NumPy: on first use)
        from ..io.echo_study import EchoStudy

        return EchoStudy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["PARAMS", "TOOL", "EchoData", "EchoResult", "load", "load_pair", "with_frames", "with_truth",
           "run", "summary", "samples", "demo", "slice_maps", "render_slices", "write_synthetic",
           "pair_metrics", "MAP_KINDS", "COLORMAPS"]

#: voxels x pairs above which a CPU run takes minutes (the tab and the CLI say so)
CPU_COMFORT_VOXELS = 64 ** 3 * 4

_M = _echo_defaults   # the parameters' defaults and choices (light: no NumPy)
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
    Param("precision", str, _M.DEFAULT_PRECISION, "System precision",
          "Storage of the per-voxel system every sweep reads: float16 halves its bytes (the arithmetic "
          "stays float32).", choices=_M.PRECISIONS, advanced=True),
    Param("reference", int, 0, "Reference",
          "Frame the trajectories start from (end-diastole), counted from 0; negative counts from the end.",
          minimum=-10000, maximum=10000, library_name="", metavar="R"),
    *_display.ECHO,  # display only (app/tools/display_params.py): redrawn without a job
])

LIBRARY_KEYS = ("alpha", "beta", "rho", "sigma", "levels", "warps", "iters", "tol", "solver", "omega", "variant",
                "derivative", "precision")
#: what the pyramids and structure tensors depend on (the solver's parameters, the kernel variant
#: included, do not change them)
PREPARE_KEYS = _M.PREPARE_KEYS
#: the tensors' own parameters: an edit of one re-makes the tensors and keeps the pyramids
TENSOR_KEYS = _M.TENSOR_KEYS
PYRAMID_KEYS = tuple(k for k in PREPARE_KEYS if k not in TENSOR_KEYS)



# ----------------------------------------------------------------------------- run
@dataclass
class EchoResult(ToolResult):
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

    def headline(self) -> str:
        d = self.data
        what = f"{d.names[0]} -> {d.names[1]}" if self.is_pair else f"{d.name} ({d.n_frames} frames)"
        extra = f"; EPE {self.metrics['epe_mean']:.3f} voxels" if self.metrics else ""
        return f"Motion of {what} in {fmt_seconds(self.elapsed)} on {self.device}{extra}"

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


def pair_metrics(u, gt, mask=None, spacing=None, device=None) -> dict:
    """EPE (mean, 95th percentile; voxels and mm) and, inside ``mask``, the mean absolute
    error of the Jacobian determinant (the issue's ``--gt`` metrics)."""
    return _maps.pair_metrics(u, gt, mask, spacing, device=device)


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


def _prepare(ctx):
    """Stage 1: per pair, the normalised pyramids (sigma, levels), which neither the tensors'
    parameters nor the solver's change: kept on the device."""
    d = ctx.data
    _reference(d, 0)
    return _sequence.prepare_pairs(d.frames, spacing=d.spacing, device=ctx.device, progress=ctx.progress,
                                   tensors=False, **ctx.p)


def _tensors(ctx):
    """Stage 2: the spatial structure tensors of every pair's fixed pyramid (rho, derivative)."""
    return _sequence.add_tensors(ctx["prepare"], device=ctx.device, progress=ctx.progress, **ctx.p)


def _pairs(ctx):
    """Stage 3: the motion of every consecutive pair (the solver on every level), kept on the
    device too while it fits (:func:`gpu_kernels.echo.sequence.estimate_pairs`)."""
    d = ctx.data
    return _sequence.estimate_pairs(d.frames, spacing=d.spacing, device=ctx.device, progress=ctx.progress,
                                    prepared=ctx["tensors"], **ctx.p)


def _trajectory(ctx):
    """Stage 3: the trajectories from the reference frame, composed from the pair fields:
    forwards as they are, backwards each pair field inverted (:func:`gpu_kernels.echo.maps.invert`,
    as accurate as a new estimate with the frames swapped and no solve:
    benchmarks/results/echo_session3_backward.md), so a reference edit only composes; and
    the summary's numbers."""
    d, be, pairs = ctx.data, ctx.device, ctx["pairs"]
    traj = _sequence.trajectories(pairs, _reference(d, ctx.p["reference"]), device=be, progress=ctx.progress)
    return traj, _maps.motion_stats(pairs.host, traj, d.spacing, device=be, pair_grid=pairs.summary_grid)


def _metrics(ctx):
    """Stage 3: the errors against the ground truth, where there is one (the truth and the
    masks uploaded once, the fields not at all where the pairs stage kept them on the device)."""
    d, be, pairs = ctx.data, ctx.device, ctx["pairs"]
    if not d.truth:
        return None
    per = []
    for (i, j), gt in sorted(d.truth.items()):
        if j == i + 1 and i < len(pairs.host):
            u = pairs.on_device[i] if pairs.on_device is not None else pairs.host[i]
            per.append(pair_metrics(u, _sequence.on_device(gt, be), _sequence.on_device(d.masks.get(i), be),
                                    d.spacing, device=be))
    if not per:
        return None
    metrics = {k: (int(sum(m[k] for m in per)) if k == "mask_voxels" else round(float(np.mean([m[k] for m in per])), 5))
               for k in per[0] if all(k in m for m in per)}
    metrics["pairs"] = len(per)
    return metrics


def _finish(data: EchoData, out: dict, p: dict, *, device: Backend, elapsed: float) -> EchoResult:
    pairs = out["pairs"]
    traj, stats = out["trajectory"]
    ref = _reference(data, p["reference"])
    return EchoResult(data, pairs.host, traj, ref, p, device.label, elapsed, list(pairs.info), out["metrics"],
                      stats=dict(stats))


#: the stages of a run (:mod:`app.tools.stages`)
PIPELINE = Pipeline([
    Stage("prepare", _prepare, params=PYRAMID_KEYS, inputs=("frames", "spacing"), label="pyramids", weight=8.0),
    Stage("tensors", _tensors, params=TENSOR_KEYS, after=("prepare",), inputs=("frames", "spacing"),
          label="structure tensors", weight=7.0),
    Stage("pairs", _pairs, params=LIBRARY_KEYS, inputs=("frames", "spacing"), label="pairwise motion", weight=85.0),
    # the reference alone: the backward fields are the pair fields inverted, not new estimates
    Stage("trajectory", _trajectory, params=("reference",), after=("pairs",), inputs=("frames", "spacing"),
          label="trajectories"),
    Stage("metrics", _metrics, after=("pairs",), inputs=("truth", "masks", "spacing"), label="metrics",
          weight=0.2),
], finish=_finish, params=PARAMS)


def run(data: EchoData, params: dict, *, device: Backend, progress: Progress | None = None) -> EchoResult:
    """Motion of every consecutive pair of ``data`` and trajectories from the reference frame."""
    p = PARAMS.validate(params)
    _reference(data, p["reference"])
    return PIPELINE.run(data, p, device=device, progress=progress)


def motion_stats(pair: np.ndarray, traj: np.ndarray, spacing, reference: int = 0, device=None) -> dict:
    """The numbers of the summary (:func:`gpu_kernels.echo.maps.motion_stats`)."""
    return _maps.motion_stats(pair, traj, spacing, device=device)


def advise(data: EchoData, params: dict, device: Backend) -> TooLargeError | None:
    """A long CPU run: say so (the GPU does a 128^3 pair in tens of milliseconds)."""
    n = int(np.prod(data.shape)) * max(1, data.n_frames - 1)
    if not device.is_gpu and n > CPU_COMFORT_VOXELS:
        minutes = n / (128 ** 3) * 1.0
        return TooLargeError(n, CPU_COMFORT_VOXELS, unit="voxel pairs", where="the CPU in reasonable time",
                             message=(f"{data.n_frames - 1} pair(s) of {'x'.join(map(str, data.shape))} voxels on the "
                                      f"CPU take about {max(1, round(minutes))} minute(s); a CUDA GPU takes seconds"))
    return None


# ----------------------------------------------------------------------------- exports
EXPORTS = (
    Export("field", "Field", (".npy", ".npz", ".nii.gz", ".nii"), write_field, cli_option="-o"),
    Export("jacobian", "Jacobian", (".npy", ".nii.gz", ".nii"), write_jacobian, cli_option="--jacobian"),
    Export("trajectory", "Trajectories", (".npy", ".npz"), write_trajectory, cli_option="--trajectory"),
    Export("warped", "Warped", (".nii.gz", ".nii", ".npy", ".mha"), write_warped, cli_option="--warped"),
    Export("slices", "Slice picture", (".png",), write_slices, cli_option="--slices"),
)


# ----------------------------------------------------------------------------- samples, demo, batch
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
    inputs="volumes",  # the reader registry's kind (app.io.registry): patterns, folders, pairs, truth
    input_noun="Volumes",
    samples=samples,
    demo=demo,
    advise=advise,
    check=check,
    library=lazy_function("gpu_kernels.echo.motion:estimate_motion"),
    default_output=lambda p: f"{p.name.split('.')[0]}-motion.npy",
    batch_items=batch_items,
    batch_load=batch_load,
    metrics=metrics,
)

