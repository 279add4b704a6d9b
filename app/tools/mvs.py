"""Multi-view stereo as a tool: scenes (Middlebury par files, COLMAP models), parameters,
running, summary, exports, samples and demo.

The compute layer is :func:`gpu_kernels.mvs.stereo.reconstruct` (Goesele-style region-growing
depth and normal maps, a batch of top-priority pixels per GPU launch, fusion into a point
cloud). ``gpulab mvs``, the Multi-view stereo tab, ``gpulab demo`` and ``gpulab batch`` all
call :data:`TOOL`.

A loaded scene can carry a live-preview sink: :attr:`MVSData.preview` (set by the tab) is
called from the worker thread after every batch with the growing depth maps, so the window
can show the region filling in.

Example
-------
>>> from app.tools import mvs                                              # doctest: +SKIP
>>> from gpu_kernels.backend import get_backend                           # doctest: +SKIP
>>> data = mvs.load(mvs.samples()[0])                                     # doctest: +SKIP
>>> res = mvs.run(data, {"views": "0,1"}, device=get_backend("cpu"))      # doctest: +SKIP
>>> res.result.maps[0].n_samples > 0                                      # doctest: +SKIP
True
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError, TooLargeError
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_function, lazy_module
from gpu_kernels.mvs import defaults as _md

from ..io.atomic import write_lines
from . import display_params as _display
from .base import Tool, ToolResult, fmt_seconds, resources_dir
from .mvs_batch import batch_finish, batch_items, batch_write, item_params
from .mvs_exports import (
    EXPORTS,
    colorize,
    normals_rgb,
    write_fused,
    write_outdir,
    write_view_depth,
    write_view_files,
)
from .params import Param, ParamSet
from .stages import Pipeline, Stage

# NumPy, SciPy, the kernels and the readers load on first use, not with the declaration
# (start-up, issue 18 case 19); the parameters' defaults come from gpu_kernels.mvs.defaults
if TYPE_CHECKING:
    import numpy as np

    from gpu_kernels.backend import Backend
    from gpu_kernels.mvs import fusion as _fu
    from gpu_kernels.mvs import stereo as _st
    from gpu_kernels.mvs.camera import MVSScene

    from ..io import scene_io
else:
    np = lazy_module("numpy")
    _fu = lazy_module("gpu_kernels.mvs.fusion")
    _st = lazy_module("gpu_kernels.mvs.stereo")
    scene_io = lazy_module("app.io.scene_io")

__all__ = ["PARAMS", "TOOL", "MVSData", "MVSRun", "load", "run", "summary", "samples", "demo", "write_outdir",
           "write_fused", "write_view_depth", "write_view_files", "colorize", "normals_rgb", "batch_items",
           "item_params", "batch_write", "batch_finish", "INPUT_EXTENSIONS", "CPU_COMFORT_PIXELS"]

INPUT_EXTENSIONS = ("_par.txt", "cameras.txt", "cameras.bin", "images.txt", "images.bin")
#: pixels (views x width x height) above which a CPU run takes minutes
CPU_COMFORT_PIXELS = 2 * 640 * 480

PARAMS = ParamSet([
    Param("views", str, "all", "Views",
          "Reference views to reconstruct: 'all', or image names / 0-based indices separated by commas.",
          metavar="all|i,j,.."),
    Param("window", int, _md.WINDOW, "Window",
          "Side of the n x n matching window in pixels (odd); larger is steadier on weak texture and "
          "rounder at depth edges.", minimum=3, maximum=11, step=2, unit="px", metavar="N"),
    Param("neighbors", int, _md.NEIGHBORS, "Neighbour views",
          "Views chosen per reference view by Goesele's global view selection (shared seeds, parallax, "
          "scale); the optimiser uses them all, dropping those that do not match.",
          minimum=1, maximum=_md.MAX_NEIGHBORS, metavar="K"),
    Param("min_views", int, _md.MIN_VIEWS, "Min. views",
          "A pixel fails when fewer neighbour views than this still match (NCC above the threshold).",
          minimum=1, maximum=_md.MAX_NEIGHBORS, metavar="M"),
    Param("ncc_accept", float, _md.NCC_ACCEPT, "NCC threshold",
          "A neighbour view whose NCC falls below this leaves the pixel's active set; the confidence "
          "(mean NCC of the active views) must reach it too.", minimum=0.0, maximum=0.99, step=0.05,
          decimals=2, metavar="NCC"),
    Param("batch_size", int, None, "Batch",
          "Pixels optimised per launch (the top of the priority queue); 'auto' is 65536 on the GPU and "
          "2048 on the CPU. Larger is faster on the GPU and follows the priority order less strictly.",
          minimum=1, maximum=1 << 22, auto=True, auto_value=None, typical=_md.BATCH_GPU,
          flag="--batch", unit="px", metavar="N"),
    Param("max_iter", int, _md.MAX_ITER, "Iterations",
          "Most iterations per pixel (every fifth a joint depth and normal step).",
          minimum=1, maximum=200, advanced=True, metavar="N"),
    Param("views_together", int, None, "Views together",
          "Reference views grown in one shared batch ('auto': 16 on the GPU, 1 on the CPU); more use the "
          "GPU better and need more device memory for the textures.",
          minimum=1, maximum=10_000, auto=True, auto_value=None, typical=_md.VIEWS_TOGETHER_GPU,
          advanced=True, metavar="N"),
    Param("max_attempts", int, _md.MAX_ATTEMPTS, "Attempts per pixel",
          "How often a failed pixel is tried again from another neighbour's start.",
          minimum=1, maximum=10, advanced=True, metavar="N"),
    Param("fuse", bool, True, "Fuse",
          "Fuse the views' depth maps into one point cloud (needs two or more views).", advanced=True),
    Param("fuse_min_views", int, _md.FUSE_MIN_VIEWS, "Fusion: views that agree",
          "A fused point needs this many views (its own included) that agree on its depth.",
          minimum=1, maximum=64, advanced=True, metavar="N"),
    Param("fuse_tol", float, _md.FUSE_TOL, "Fusion: depth tolerance",
          "Relative depth difference within which two views agree.", minimum=0.0, min_open=True,
          maximum=0.5, step=0.005, decimals=3, advanced=True, metavar="TOL"),
    *_display.MVS,  # display only (app/tools/display_params.py): redrawn without a job
])


# ----------------------------------------------------------------------------- data
@dataclass
class MVSData:
    """A loaded scene and what belongs to it.

    ``preview`` (optional) is called as ``preview(maps, info)`` from the worker thread after
    every batch (see :func:`gpu_kernels.mvs.grow.grow_depth_maps`); it must not touch widgets.
    """

    scene: MVSScene
    path: pathlib.Path | None = None
    mask_dir: pathlib.Path | None = None
    preview: Callable | None = field(default=None, repr=False)
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.path is None:
            return "scene"
        return self.path.parent.name + "/" + self.path.name if self.path.is_file() else self.path.name

    @property
    def n_views(self) -> int:
        return self.scene.n_views


def load(path, *, progress: Progress | None = None, mask_dir=None, image_dir=None) -> MVSData:
    """Read a scene: a Middlebury ``*_par.txt`` (images beside it), a COLMAP model folder (or one
    of its ``cameras``/``images`` files) with its image folder, or a folder holding either."""
    progress = as_progress(progress)
    path = pathlib.Path(path)
    scene = scene_io.read_scene(path, image_dir=image_dir, mask_dir=mask_dir, progress=progress)
    data = MVSData(scene, path, pathlib.Path(mask_dir) if mask_dir else None)
    if scene.meta.get("undistorted"):
        data.warnings.append(f"{scene.meta['undistorted']} image(s) undistorted to a pinhole camera")
    return data


def with_masks(data: MVSData, mask_dir, *, progress: Progress | None = None) -> MVSData:
    """The scene re-read with per-image masks from ``mask_dir`` (``None``: without masks)."""
    return load(data.path, mask_dir=mask_dir, progress=progress)


# ----------------------------------------------------------------------------- run
@dataclass
class MVSRun(ToolResult):
    """A reconstruction of ``data``: ``result`` is the :class:`gpu_kernels.mvs.MVSResult`."""

    def headline(self) -> str:
        return (f"{self.result.stats['samples']:,} samples in {len(self.maps)} view(s) in "
                f"{fmt_seconds(self.elapsed)} on {self.device}"
                + (f"; {len(self.fused.points):,} fused points" if self.fused is not None else ""))

    data: MVSData
    result: object
    params: dict
    device: str
    elapsed: float

    @property
    def maps(self):
        return self.result.maps

    @property
    def fused(self):
        return self.result.fused

    def view_map(self, view: int):
        """The :class:`DepthMap` of scene view ``view``, or None if it was not processed."""
        return next((m for m in self.result.maps if m.view == view), None)


def check(params: dict, device: Backend) -> None:
    p = PARAMS.validate(params)
    if p["window"] % 2 == 0:
        raise InputError(f"window must be odd, got {p['window']}")
    if p["min_views"] > p["neighbors"]:
        raise InputError(f"min_views ({p['min_views']}) cannot exceed neighbors ({p['neighbors']})")


def _seeds(ctx) -> tuple:
    """The scene's sparse points, or SIFT features matched and triangulated between neighbouring
    views (seconds on a CPU; they depend on the scene alone)."""
    t0 = time.perf_counter()
    pts, pvis, src = _st.scene_seeds(ctx.data.scene, progress=ctx.progress)
    if len(pts) == 0:
        raise InputError("the scene has no seeds: no sparse points and no SIFT feature could be matched "
                         "and triangulated between neighbouring views")
    return pts, pvis, src, time.perf_counter() - t0


def _textures(ctx) -> object:
    """Every view's textures on the device (:func:`gpu_kernels.mvs.stereo.scene_textures`), or
    None where they do not fit under :data:`gpu_kernels.mvs.defaults.TEXTURE_SHARE` of the free
    memory: they depend on the scene alone, so a ``views`` or ``neighbors`` edit re-uses them."""
    return _st.scene_textures(ctx.data.scene, device=ctx.device, progress=ctx.progress)


def _views(ctx) -> object:
    """View selection and each view's seeds (:func:`gpu_kernels.mvs.stereo.prepare_views`):
    what no growing parameter changes; and the textures of the views it needs where the
    ``textures`` stage could not pack every view."""
    pts, pvis, src, t_seeds = ctx["seeds"]
    prep = _st.prepare_views(ctx.data.scene, views=ctx.p["views"], neighbors=ctx.p["neighbors"], min_views=1,
                             device=ctx.device, progress=ctx.progress, seeds=(pts, pvis, src),
                             pack=ctx["textures"] is None)
    return replace(prep, seeds_s=t_seeds)


def _depth(ctx) -> object:
    """Growing every chosen view's depth map (no fusion)."""
    p, prep = ctx.p, ctx["views"]
    if prep.textures is None and ctx["textures"] is not None:
        prep = replace(prep, textures=ctx["textures"])  # every view's, packed once per scene
    maps, stats = _st.grow_views(
        ctx.data.scene, prep, window=p["window"], min_views=p["min_views"], ncc_accept=p["ncc_accept"],
        max_iter=p["max_iter"], batch_size=p["batch_size"], views_together=p["views_together"],
        max_attempts=p["max_attempts"], device=ctx.device, progress=ctx.progress, callback=ctx.data.preview)
    return _st.MVSResult(maps, list(prep.views), None, prep.points, prep.point_views, stats)


def _fusion(ctx):
    """The fused cloud of the depth maps (None when fusion is off or one view was grown)."""
    res, p = ctx["depth"], ctx.p
    if not p["fuse"] or len(res.views) < 2:
        return None, 0.0
    t0 = time.perf_counter()
    scene = ctx.data.scene
    fused = _fu.fuse_depth_maps(
        scene.cameras, [m.depth for m in res.maps], views=res.views, normals=[m.normal for m in res.maps],
        confidences=[m.conf for m in res.maps],
        images=[scene.images[v] if np.asarray(scene.images[v]).dtype == np.uint8 else None for v in res.views],
        rel_tol=p["fuse_tol"], min_views=p["fuse_min_views"], device=ctx.device, progress=ctx.progress)
    return fused, time.perf_counter() - t0


def _finish(data: MVSData, out: dict, p: dict, *, device: Backend, elapsed: float) -> MVSRun:
    res = out["depth"]
    fused, t_fuse = out["fusion"]
    stats = {**res.stats, "fuse_s": t_fuse}
    return MVSRun(data, replace(res, fused=fused, stats=stats), p, device.label, elapsed)


#: the stages of a run (:mod:`app.tools.stages`): the seeds and every view's images on the device
#: (the scene's alone; the images of the chosen views are packed by view selection instead where
#: not all fit); view selection; growing the depth maps; fusing them. A ``views`` or
#: ``neighbors`` edit re-runs view selection and what follows, a growing parameter (NCC
#: threshold, window, batch, views together, ...) the growing and the fusion only
PIPELINE = Pipeline([
    Stage("seeds", _seeds, inputs=("scene",), label="seeds", weight=2.0),
    Stage("textures", _textures, after=(), inputs=("scene",), label="textures", weight=1.0),
    Stage("views", _views, params=("views", "neighbors"), after=("seeds", "textures"), inputs=("scene",),
          label="view selection", weight=1.0),
    Stage("depth", _depth, params=("window", "min_views", "ncc_accept", "batch_size", "max_iter", "views_together",
                                   "max_attempts"),
          after=("views", "textures"), inputs=("scene",), label="growing", weight=40.0),  # fusion: ~2 % (CPU)
    Stage("fusion", _fusion, params=("fuse", "fuse_min_views", "fuse_tol"), inputs=("scene",), label="fusion"),
], finish=_finish, params=PARAMS)


def run(data: MVSData, params: dict, *, device: Backend, progress: Progress | None = None) -> MVSRun:
    """Depth, normal and confidence maps of the chosen views, and their fused cloud."""
    p = PARAMS.validate(params)
    check(p, device)
    return PIPELINE.run(data, p, device=device, progress=progress)


def advise(data: MVSData, params: dict, device: Backend) -> TooLargeError | None:
    """Many views on the CPU take minutes (about 1 ms per reconstructed pixel): say so."""
    if device.is_gpu:
        return None
    p = PARAMS.validate(params)
    try:
        n = len(_st.parse_views(p["views"], data.scene))
    except InputError:
        return None
    px = n * max(c.width * c.height for c in data.scene.cameras)
    if px > CPU_COMFORT_PIXELS:
        return TooLargeError(px, CPU_COMFORT_PIXELS, unit="pixels", where="the CPU in reasonable time",
                             message=(f"{n} view(s) of {px // n:,} pixels on the CPU take minutes (about a "
                                      f"millisecond per reconstructed pixel); choose fewer views or a CUDA device"))
    return None


# ----------------------------------------------------------------------------- summary
def summary(result: MVSRun) -> list[str]:
    d, r = result.data, result.result
    sc = d.scene
    st = r.stats
    w, h = sc.cameras[0].width, sc.cameras[0].height
    lines = [f"{d.name}: {sc.n_views} views, {w} x {h}"
             + (f", {sum(m is not None for m in sc.masks)} masks" if any(m is not None for m in sc.masks) else "")]
    lines += [f"  warning: {x}" for x in d.warnings]
    lines.append(f"  seeds: {st['seed_points']:,} points ({'from the model' if st['seed_source'] == 'model' else 'SIFT, triangulated'})")
    p = result.params
    lines.append(f"  parameters: window {p['window']}, {p['neighbors']} neighbours, min views {p['min_views']}, "
                 f"NCC {p['ncc_accept']:g}, batch {p['batch_size'] or 'auto'}")
    lines.append(f"  device: {st['device']}; time {fmt_seconds(result.elapsed)} (seeds {fmt_seconds(st['seeds_s'])}, "
                 f"depth maps {fmt_seconds(st['grow_s'])}, fusion {fmt_seconds(st['fuse_s'])})")
    n = max(len(r.maps), 1)
    lines.append(f"  samples: {st['samples']:,} in {len(r.maps)} view(s), {st['samples'] / n:,.0f} per view, "
                 f"{1e6 * st['grow_s'] / max(st['samples'], 1):.2f} us per sample; host share of the growing "
                 f"{100 * st['queue_s'] / max(st['grow_s'], 1e-9):.0f} %")
    for m in r.maps[:20]:
        ok = np.isfinite(m.depth)
        extra = f", depth {np.nanmin(m.depth):.4g}..{np.nanmax(m.depth):.4g}" if ok.any() else ""
        conf = f", mean confidence {m.conf[ok].mean():.3f}" if ok.any() else ""
        lines.append(f"  {sc.names[m.view]}: {m.n_samples:,} samples ({100 * ok.mean():.1f} %){extra}{conf}; "
                     f"neighbours {', '.join(sc.names[v] for v in m.neighbors)}")
    if len(r.maps) > 20:
        lines.append(f"  ... {len(r.maps) - 20} more views")
    if r.fused is not None:
        f = r.fused
        line = f"  fused: {len(f.points):,} points"
        if len(f.points) and sc.bbox is not None:
            inside = np.all((f.points >= sc.bbox[0]) & (f.points <= sc.bbox[1]), axis=1).mean()
            line += f", {100 * inside:.1f} % inside the scene's bounding box"
        lines.append(line)
    return lines


def metrics(result: MVSRun) -> dict:
    st = result.result.stats
    return {"views": len(result.result.maps), "samples": int(st["samples"]), "seconds": float(result.elapsed),
            "fused_points": 0 if result.fused is None else len(result.fused.points)}


# ----------------------------------------------------------------------------- samples, demo
def samples() -> list[pathlib.Path]:
    """The bundled synthetic scene (``resources/samples/mvs/synth_par.txt``)."""
    p = resources_dir() / "samples" / "mvs" / "synth_par.txt"
    return [p] if p.is_file() else []


def demo(out_dir, *, device: Backend, progress: Progress | None = None) -> list[pathlib.Path]:
    """Reconstruct the bundled scene (all views on the GPU, three on the CPU): maps, fused cloud,
    colour-mapped depth pictures and the summary."""
    from ..io.image_io import write_image

    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = samples()
    if not todo:
        raise InputError("the bundled multi-view stereo sample is missing (resources/samples/mvs)")
    data = load(todo[0], progress=progress.sub(0, 0.1, "reading"))
    views = "all" if device.is_gpu else "0,1,2"
    res = run(data, {"views": views}, device=device, progress=progress.sub(0.1, 0.95, "mvs"))
    written = write_outdir(res, out_dir / "mvs-maps")
    for m in res.maps[:3]:
        written.append(pathlib.Path(write_image(out_dir / f"mvs-{data.scene.names[m.view]}-depth.png",
                                                colorize(m.depth))))
    written.append(write_lines(out_dir / "mvs-summary.txt", summary(res)))
    return written


TOOL = Tool(
    name="mvs",
    title="Multi-view stereo",
    key="mvs",
    description="Depth and normal maps of calibrated views by region growing (Goesele et al.), fused into a point cloud.",
    params=PARAMS,
    tab="app.tabs.mvs_tab:MvsTab",
    command="app.commands.mvs",
    load=load,
    run=run,
    summary=summary,
    exports=EXPORTS,
    inputs="scene",  # the reader registry's kind (app.io.registry): patterns, folders, pairs, truth
    input_noun="Scene",
    samples=samples,
    demo=demo,
    advise=advise,
    check=check,
    stages=PIPELINE,
    library=lazy_function("gpu_kernels.mvs.stereo:reconstruct"),
    output_option="-o",
    default_output=lambda p: f"{p.stem.replace('_par', '')}-mvs",
    metrics=metrics,
    batch_items=batch_items,
    item_params=item_params,
    batch_write=batch_write,
    batch_finish=batch_finish,
)
