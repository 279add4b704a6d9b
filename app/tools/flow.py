"""2-D optical flow as a tool: inputs (two images, a video or a frame folder), parameters,
running, summary, exports, samples, demo and batch.

The compute layer is :mod:`gpu_kernels.flow` (NCC block matching, pyramidal Lucas-Kanade and
the TV-L1 refinement, on the GPU or the CPU). ``gpulab flow``, the Optical flow tab,
``gpulab demo`` and ``gpulab batch`` all call :data:`TOOL`.

Opening one image takes the next image of its folder (natural order) as the second frame, so
``frame10.png`` pairs with ``frame11.png``; a ground-truth flow lying beside them
(``flow10.flo``, ``flow_gt.png``, ...) is loaded too. A video file or a folder of frames is
stepped through pair by pair (:func:`with_pair`).

Example
-------
>>> from app.tools import flow                                           # doctest: +SKIP
>>> from gpu_kernels.backend import get_backend                          # doctest: +SKIP
>>> data = flow.load(flow.samples()[0])                                  # doctest: +SKIP
>>> res = flow.run(data, {}, device=get_backend("cpu"), progress=None)   # doctest: +SKIP
>>> round(res.metrics["aee"], 2)                                         # doctest: +SKIP
0.21
"""

from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.flow import defaults as _fd
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_function, lazy_module

from ..io import formats as _formats
from ..io.atomic import write_lines
from . import display_params as _display
from .base import BatchItem, Tool, ToolResult, fmt_seconds, samples_in
from .flow_data import (  # noqa: F401 - the input, re-exported: flow.load, flow.FlowData, ...
    FlowData,
    load,
    load_pair,
    with_ground_truth,
    with_mask,
    with_pair,
)
from .flow_progress import stage_weights
from .flow_report import (  # noqa: F401 - the report, re-exported
    EXPORTS,
    metrics,
    summary,
    write_color,
    write_flow,
    write_quality,
    write_warped,
)
from .params import Param, ParamSet
from .stages import Pipeline, Stage

# NumPy, SciPy, OpenCV, the kernels and the readers load on first use, not with the declaration
# (start-up, issue 18 case 19); the parameters' defaults come from gpu_kernels.flow.defaults.
# (The kernel modules by their sys.modules names: the package's names are functions.)
if TYPE_CHECKING:
    import numpy as np

    import gpu_kernels.flow.api as _api
    import gpu_kernels.flow.blockmatch as _bm
    import gpu_kernels.flow.metrics as _flow_metrics
    import gpu_kernels.flow.search as _search
    from gpu_kernels.backend import Backend

    from ..io import video_io
else:
    np = lazy_module("numpy")
    video_io = lazy_module("app.io.video_io")
    _api = lazy_module("gpu_kernels.flow.api")
    _bm = lazy_module("gpu_kernels.flow.blockmatch")
    _search = lazy_module("gpu_kernels.flow.search")
    _flow_metrics = lazy_module("gpu_kernels.flow.metrics")

__all__ = ["PARAMS", "TOOL", "FlowData", "FlowRun", "load", "load_pair", "with_pair", "with_ground_truth",
           "with_mask", "run", "summary", "samples", "demo", "warped_second", "INPUT_EXTENSIONS"]

INPUT_EXTENSIONS = _formats.IMAGE_EXTENSIONS + _formats.VIDEO_EXTENSIONS
#: pixels above which a CPU run of the refinement takes more than a few seconds
CPU_COMFORT_PIXELS = 1_000_000

def _uses_bm(v) -> bool:
    """Block size and search radius: block matching, or the refinement seeded by it."""
    return v["method"] == "bm" or (v["method"] == "refine" and v.get("seed") == "bm")


def _refine_only(v) -> bool:
    return v["method"] == "refine"


def _variational(v) -> bool:
    """TV-L1 parameters: the refinement and the default (search), which refines every level."""
    return v["method"] in ("refine", "search")


def _search_only(v) -> bool:
    return v["method"] == "search"


PARAMS = ParamSet([
    Param("method", str, _fd.DEFAULT_METHOD, "Method",
          "search: patch inverse search + TV-L1, motions from 0 to a fifth of the frame (the default); "
          "bm: NCC block matching (fast, one vector per block); lk: pyramidal Lucas-Kanade (fast, "
          "small motions); refine: TV-L1 variational refinement alone (small motions).",
          choices=_fd.METHODS,
          choice_help={"search": "DIS-style patch inverse search over a deep pyramid, densified, TV-L1 at "
                                 "every level (large and small motions)",
                       "bm": "multi-scale NCC block matching with a quality map",
                       "lk": "pyramidal Lucas-Kanade with warping and a reliability map",
                       "refine": "TV-L1 refinement, coarse to fine (optionally seeded by bm or lk)"}),
    Param("levels", int, None, "Pyramid levels",
          "Levels of the Gaussian pyramid; 'auto' is the method's default (search: down to about four "
          "patches across; 5 for bm and refine, 3 for lk). More levels follow larger motions.",
          minimum=1, maximum=12, auto=True, auto_value=None, typical=5, metavar="L"),
    Param("block", int, _fd.BM_BLOCK, "Block size",
          "Block matching: side of the blocks in pixels (4, 8 or 16); larger is steadier and coarser.",
          minimum=4, maximum=16, unit="px", metavar="B", used_when=_uses_bm),
    Param("radius", int, _fd.BM_RADIUS, "Search radius",
          "Block matching: shifts searched around the coarser level's prediction, pixels of each level.",
          minimum=1, maximum=_fd.BM_MAX_RADIUS, unit="px", metavar="R", used_when=_uses_bm),
    Param("window", int, _fd.LK_WINDOW, "LK window",
          "Lucas-Kanade: odd side of the window of the per-pixel 2 x 2 solve.",
          minimum=1, maximum=63, unit="px", metavar="W", used_when=lambda v: v["method"] == "lk"),
    Param("iters", int, None, "Iterations",
          "Lucas-Kanade: warp-and-refine iterations per level (auto 3); refinement and search: TV-L1 "
          "iterations per warp (auto 10 and 20).",
          minimum=1, maximum=500, auto=True, auto_value=None, typical=10, metavar="N",
          used_when=lambda v: v["method"] in ("lk", "refine", "search")),
    Param("seed", str, _fd.TV_SEED, "Seed",
          "Refinement: the local method whose quality-weighted, smoothed flow starts the coarsest "
          "level ('none': TV-L1 alone).", choices=_fd.TV_SEEDS, advanced=True, used_when=_refine_only),
    Param("warps", int, None, "Warps",
          "Refinement and search: re-linearisations of the data term per pyramid level (auto: 5 for "
          "refine; 5 at the search's finest level, 4 coarser).", minimum=1, maximum=50, auto=True,
          auto_value=None, typical=5, advanced=True, metavar="N", used_when=_variational),
    Param("patch", int, _fd.SEARCH_PATCH, "Patch size",
          "Search: side of the patches of the inverse search (4, 6, 8 or 12 pixels of each level); "
          "larger is steadier on weak texture, smaller follows small objects.",
          minimum=4, maximum=12, unit="px", advanced=True, metavar="P", used_when=_search_only),
    Param("search_level", int, _fd.SEARCH_FINEST_PATCH_LEVEL, "Finest search level",
          "Search: the finest pyramid level with a patch search, counted from the working level "
          "(0: down to it; 1 or 2: faster, fewer small fast objects found).",
          minimum=0, maximum=12, advanced=True, metavar="S", used_when=_search_only),
    Param("max_pixels", int, _fd.SEARCH_MAX_PIXELS, "Working size",
          "Search: the finest level solved has at most this many pixels; larger frames are solved at "
          "the first level that fits and the flow is upsampled (1080p at 960 x 540).",
          minimum=4096, maximum=1 << 28, advanced=True, metavar="N", used_when=_search_only),
    Param("lam", float, _fd.TV_LAMBDA, "Data weight λ",
          "Refinement: weight of the data term (intensities 0..1); larger follows the images more "
          "closely, smaller gives smoother flow.", minimum=0.0, min_open=True, maximum=10000.0, step=10.0,
          decimals=1, advanced=True, flag="--lambda", metavar="LAMBDA", used_when=_variational),
    Param("median", int, _fd.TV_MEDIAN, "Median filter",
          "Refinement: side of the median filter of the flow after each warp (5, 3, or 0 for none).",
          minimum=0, maximum=5, advanced=True, metavar="M", used_when=_variational),
    Param("quality_map", str, _fd.SEARCH_QUALITY, "Quality map",
          "Search: the quality map: fb (local NCC times forward-backward consistency, photometric "
          "residual and motion size) or ncc (local NCC alone, faster).", choices=_fd.SEARCH_QUALITIES,
          advanced=True, library_name="quality", used_when=_search_only),
    Param("fill", float, _fd.SEARCH_FILL, "Occlusion fill",
          "Search: poorly matched pixels more than this many px from forward-backward consistent "
          "(occlusions) get the flow of the pixels around them, spread along the image's edges (0: off).", minimum=0.0,
          maximum=1000.0, step=0.5, decimals=1, unit="px", advanced=True, used_when=_search_only),
    Param("tile_size", int, None, "Tiles",
          "Block matching: process in tiles of this many pixels a side (with halos; the same result "
          "as one piece). 'off' tiles only when the image does not fit the device.",
          minimum=64, maximum=1 << 20, optional=True, typical=4096, unit="px", advanced=True, metavar="T",
          used_when=lambda v: v["method"] == "bm"),
    *_display.FLOW,  # display only (app/tools/display_params.py): redrawn without a job
])


def _check_params(p: dict) -> None:
    from gpu_kernels.flow import FlowInputError

    if p["block"] not in _bm.BLOCK_SIZES:
        raise FlowInputError(f"block must be one of {', '.join(map(str, _bm.BLOCK_SIZES))}, got {p['block']}")
    if p["window"] % 2 == 0:
        raise FlowInputError(f"window must be odd, got {p['window']}")
    if p["median"] not in (0, 3, 5):
        raise FlowInputError(f"median must be 0, 3 or 5, got {p['median']}")
    if p["patch"] not in _search.PATCH_SIZES:
        raise FlowInputError(f"patch must be one of {', '.join(map(str, _search.PATCH_SIZES))}, got {p['patch']}")


# ----------------------------------------------------------------------------- run
@dataclass
class FlowRun(ToolResult):
    """A flow of ``data``: ``flow`` is the :class:`gpu_kernels.flow.FlowResult` on the host."""

    data: FlowData
    flow: object
    params: dict
    device: str
    elapsed: float
    metrics: dict | None = None

    def headline(self) -> str:
        return (f"Flow {self.data.name1} -> {self.data.name2} ({self.params['method']}) in "
                f"{fmt_seconds(self.elapsed)} on {self.device}"
                + (f"; AEE {self.metrics['aee']:.3f} px" if self.metrics else ""))

    @property
    def u(self) -> np.ndarray:
        return self.flow.u

    @property
    def v(self) -> np.ndarray:
        return self.flow.v

    @property
    def quality(self) -> np.ndarray:
        return self.flow.quality

    @property
    def valid(self) -> np.ndarray:
        m = self.data.mask
        return np.ones(self.data.shape, bool) if m is None else m


def check(params: dict, device: Backend) -> None:
    _check_params(PARAMS.validate(params))


def run(data: FlowData, params: dict, *, device: Backend, progress: Progress | None = None) -> FlowRun:
    """The flow from ``data.img1`` to ``data.img2`` with ``params`` on ``device``."""
    p = PARAMS.validate(params)
    _check_params(p)
    return PIPELINE.run(data, p, device=device, progress=progress)


def _search_kw(p: dict) -> dict:
    """The tool's parameters (those a stage has) as the search method's keywords."""
    names = {"levels": "levels", "iters": "tv_iters", "warps": "warps", "lam": "lam", "median": "median",
             "patch": "patch", "search_level": "finest_patch_level", "max_pixels": "max_pixels",
             "quality_map": "quality", "fill": "fill"}
    return _search.search_params(**{names[k]: v for k, v in p.items() if k in names and v is not None})


def _pyramids(ctx):
    """Stage 1 (search): the checked frames' pyramids; the other methods have none."""
    d, p = ctx.data, ctx.p
    if p["method"] != "search":
        return None
    return _search.stage_pyramids(d.img1, d.img2, _search_kw(p), mask=d.mask, device=ctx.device, progress=ctx.progress)


def _flow(ctx):
    """Stage 2: the flow: coarse matching, densification and TV-L1 per level (search), or the
    whole of another method."""
    d, p = ctx.data, ctx.p
    _check_params(p)
    if p["method"] == "search":
        return _search.stage_flow(ctx["pyramids"], _search_kw(p), device=ctx.device, progress=ctx.progress)
    res = _api.compute_flow(d.img1, d.img2, method=p["method"], levels=p["levels"], block=p["block"],
                            radius=p["radius"], window=p["window"], iters=p["iters"], seed=p["seed"],
                            warps=p["warps"], lam=p["lam"], median=p["median"], tile_size=p["tile_size"],
                            patch=p["patch"], search_level=p["search_level"], max_pixels=p["max_pixels"],
                            mask=d.mask, device=ctx.device, progress=ctx.progress)
    return res.to_numpy()


def _quality(ctx):
    """Stage 3 (search): the quality map of the flow, and the result (other methods: theirs)."""
    p = ctx.p
    if p["method"] != "search":
        return ctx["flow"]
    return _search.stage_quality(ctx["pyramids"], ctx["flow"], _search_kw(p), device=ctx.device,
                                 progress=ctx.progress).to_numpy()


def _metrics(ctx):
    d, res = ctx.data, ctx["quality"]
    if d.gt is None:
        return None
    gt, valid = d.gt
    return _flow_metrics.flow_metrics(res.u, res.v, gt, valid & (d.mask if d.mask is not None else True))


def _finish(data: FlowData, out: dict, p: dict, *, device: Backend, elapsed: float) -> FlowRun:
    return FlowRun(data, out["quality"], p, device.label, elapsed, out["metrics"])


#: the stages of a run (:mod:`app.tools.stages`): for the default search method the pyramids,
#: the flow (matching + TV-L1 per level), the quality map; then the errors against the ground
#: truth. A quality-map change re-runs only the quality map; a TV-L1 change keeps the pyramids.
#: Each stage's share of the progress bar follows the run's size (:mod:`.flow_progress`).
_PYRAMID_KEYS = ("method", "levels", "patch", "max_pixels")
_FLOW_KEYS = tuple(n for n in PARAMS.compute_names() if n not in ("quality_map", "fill"))
PIPELINE = Pipeline([
    Stage("pyramids", _pyramids, params=_PYRAMID_KEYS, inputs=("img1", "img2", "mask"), label="pyramids"),
    Stage("flow", _flow, params=_FLOW_KEYS, after=("pyramids",), inputs=("img1", "img2", "mask"), label="flow",
          weight=15.0),
    Stage("quality", _quality, params=("quality_map", "fill", *_FLOW_KEYS), after=("pyramids", "flow"),
          label="quality map", weight=3.0),
    Stage("metrics", _metrics, after=("quality",), inputs=("gt", "mask"), label="metrics"),
], finish=_finish, params=PARAMS, weights=stage_weights)


def advise(data: FlowData, params: dict, device: Backend):
    """A large pair on the CPU with the refinement: say it takes a while (no remedy parameter)."""
    return None


def warped_second(result: FlowRun) -> np.ndarray:
    """The second frame warped back by the flow (``IMG2(x + f(x))``, = IMG1 where the flow is right)."""
    from gpu_kernels.ops import warp_flow

    img = result.data.img2
    scale = 255.0 if img.dtype == np.uint8 else (65535.0 if img.dtype == np.uint16 else 1.0)
    f = img.astype(np.float32) / np.float32(scale)
    w = warp_flow(f, result.u, result.v, channel_axis=2 if f.ndim == 3 else None, device="cpu")
    return np.asarray(w)


# ----------------------------------------------------------------------------- samples, demo, batch
def samples() -> list[pathlib.Path]:
    """The bundled pair (its first frame; the second and the ground truth are found beside it)."""
    return [p for p in samples_in("flow", _formats.IMAGE_EXTENSIONS, first=("frame1",)) if p.stem == "frame1"]


def demo(out_dir, *, device: Backend, progress: Progress | None = None) -> list[pathlib.Path]:
    """Run every method on the bundled pair: flow, colour picture, quality map and summary."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = samples()
    if not todo:
        raise InputError("the bundled flow sample is missing (resources/samples/flow)")
    data = load(todo[0])
    written: list[pathlib.Path] = []
    methods = _api.METHODS
    lines = []
    for i, m in enumerate(methods):
        res = run(data, {"method": m}, device=device, progress=progress.sub(i / len(methods), (i + 1) / len(methods), m))
        written += write_flow(res, out_dir / f"flow-{m}.flo")
        written += write_color(res, out_dir / f"flow-{m}-color.png")
        written += write_quality(res, out_dir / f"flow-{m}-quality.png")
        lines += summary(res) + [""]
    written.append(write_lines(out_dir / "flow-summary.txt", lines))
    return written


def batch_items(paths: list[pathlib.Path]) -> list[BatchItem]:
    """Consecutive frame pairs of each video or frame folder; image files pair up in turn (what
    a folder, a video and an image are: the reader registry's ``frames`` kind)."""
    kind = TOOL.input
    items: list[BatchItem] = []
    for p in paths:
        if p.is_dir() or kind.is_sequence_file(p):
            seq = video_io.FrameSequence(p)
            for i in range(seq.n_pairs):
                items.append(BatchItem(f"{p.stem}-{i:05d}", (str(p),), {"pair": i}))
            seq.close()
    imgs = [p for p in paths if p.is_file() and kind.matches(p) and not kind.is_sequence_file(p)]
    for a, b in zip(imgs, imgs[1:], strict=False):
        items.append(BatchItem(f"{a.stem}-{b.stem}", (str(a), str(b))))
    return items


def batch_load(item: BatchItem, *, progress: Progress | None = None) -> FlowData:
    if len(item.inputs) == 2:
        return load_pair(*item.inputs, progress=progress)
    data = load(pathlib.Path(item.inputs[0]), progress=progress)
    return with_pair(data, int(item.meta.get("pair", 0)))


def metrics_json(m: dict) -> str:
    return json.dumps({k: (round(v, 6) if isinstance(v, float) else v) for k, v in m.items()})


TOOL = Tool(
    name="flow",
    title="Optical flow",
    key="flow",
    description="Dense motion between two frames, small or large (to ~200 px at 1080p): patch inverse search + "
                "TV-L1 (the default), NCC block matching, pyramidal Lucas-Kanade or TV-L1 refinement.",
    params=PARAMS,
    tab="app.tabs.flow_tab:FlowTab",
    command="app.commands.flow",
    stages=PIPELINE,
    load=load,
    run=run,
    summary=summary,
    exports=EXPORTS,
    inputs="frames",  # the reader registry's kind (app.io.registry): patterns, folders, pairs, truth
    input_noun="Frames",
    samples=samples,
    demo=demo,
    advise=advise,
    check=check,
    library=lazy_function("gpu_kernels.flow.api:compute_flow"),
    default_output=lambda p: f"{p.stem}.flo",
    batch_items=batch_items,
    batch_load=batch_load,
    metrics=metrics,
)
