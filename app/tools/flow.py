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
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.flow import defaults as _fd
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_function, lazy_module

from ..io import formats as _formats
from ..io.atomic import write_lines
from .base import BatchItem, Export, Tool, fmt_seconds, samples_in
from .params import Param, ParamSet
from .stages import Pipeline, Stage

# NumPy, SciPy, OpenCV, the kernels and the readers load on first use, not with the declaration
# (start-up, issue 18 case 19); the parameters' defaults come from gpu_kernels.flow.defaults.
# (The kernel modules by their sys.modules names: the package's names are functions.)
if TYPE_CHECKING:
    import numpy as np

    import gpu_kernels.flow.api as _api
    import gpu_kernels.flow.blockmatch as _bm
    import gpu_kernels.flow.colorwheel as _colorwheel
    import gpu_kernels.flow.lucas_kanade as _lk
    import gpu_kernels.flow.metrics as _flow_metrics
    import gpu_kernels.flow.refine as _tv
    import gpu_kernels.flow.search as _search
    from gpu_kernels.backend import Backend

    from ..io import flow_io, image_io, video_io
else:
    np = lazy_module("numpy")
    flow_io = lazy_module("app.io.flow_io")
    image_io = lazy_module("app.io.image_io")
    video_io = lazy_module("app.io.video_io")
    _api = lazy_module("gpu_kernels.flow.api")
    _bm = lazy_module("gpu_kernels.flow.blockmatch")
    _lk = lazy_module("gpu_kernels.flow.lucas_kanade")
    _tv = lazy_module("gpu_kernels.flow.refine")
    _search = lazy_module("gpu_kernels.flow.search")
    _colorwheel = lazy_module("gpu_kernels.flow.colorwheel")
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
          "refine, 8 for search).", minimum=1, maximum=50, auto=True, auto_value=None, typical=5,
          advanced=True, metavar="N", used_when=_variational),
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
    Param("tile_size", int, None, "Tiles",
          "Block matching: process in tiles of this many pixels a side (with halos; the same result "
          "as one piece). 'off' tiles only when the image does not fit the device.",
          minimum=64, maximum=1 << 20, optional=True, typical=4096, unit="px", advanced=True, metavar="T",
          used_when=lambda v: v["method"] == "bm"),
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


# ----------------------------------------------------------------------------- data
@dataclass
class FlowData:
    """A pair of frames, and what belongs to them.

    ``sequence`` is set for a video or a frame folder (``index`` is the pair shown);
    ``gt`` is ``(flow (H, W, 2), valid (H, W))`` when a ground truth is known; ``mask`` the
    region of interest (bool (H, W)) when one was given.
    """

    img1: np.ndarray
    img2: np.ndarray
    name1: str
    name2: str
    path: pathlib.Path | None = None
    sequence: video_io.FrameSequence | None = None
    index: int = 0
    gt: tuple | None = None
    gt_path: pathlib.Path | None = None
    mask: np.ndarray | None = None
    mask_path: pathlib.Path | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else self.name1

    @property
    def shape(self) -> tuple[int, int]:
        return tuple(self.img1.shape[:2])

    @property
    def n_pairs(self) -> int:
        return self.sequence.n_pairs if self.sequence is not None else 1


_GT_PATTERNS = ("flow*.flo", "*flow_gt*.png", "*_gt.flo", "gt*.flo", "*flow*gt*.flo")


def _find_ground_truth(folder: pathlib.Path, shape) -> tuple[pathlib.Path, tuple] | None:
    """A flow file in ``folder`` that fits ``shape`` (Middlebury's flow10.flo, flow_gt.png, ...)."""
    cands = []
    for pat in _GT_PATTERNS:
        cands += [p for p in folder.glob(pat) if p.is_file()]
    for p in sorted(set(cands)):
        try:
            f, v = flow_io.read_flow(p)
        except InputError:
            continue
        if f.shape[:2] == tuple(shape):
            return p, (f, v)
    return None


def _partner(path: pathlib.Path) -> pathlib.Path:
    files = image_io.list_images(path.parent)
    names = [f.resolve() for f in files]
    i = names.index(path.resolve())
    # skip files that are flow ground truths (flow_gt.png)
    rest = [f for f in files[i + 1:] if not re.search(r"flow", f.stem, re.I)]
    if not rest:
        raise InputError(f"{path.name} has no next image in its folder to pair with: open the second frame too "
                         f"(gpulab flow IMG1 IMG2)")
    return rest[0]


def load_pair(path1, path2, *, progress: Progress | None = None) -> FlowData:
    """Two image files as a pair (a ground truth beside the first is picked up)."""
    progress = as_progress(progress)
    p1, p2 = pathlib.Path(path1), pathlib.Path(path2)
    a = image_io.read_image(p1)
    b = image_io.read_image(p2)
    if a.shape[:2] != b.shape[:2]:
        raise InputError(f"{p1.name} is {a.shape[1]} x {a.shape[0]} but {p2.name} is {b.shape[1]} x {b.shape[0]}: "
                         "both frames must be the same size")
    data = FlowData(a, b, p1.name, p2.name, p1)
    found = _find_ground_truth(p1.parent, a.shape[:2])
    if found is not None and found[0].resolve() not in (p1.resolve(), p2.resolve()):
        data.gt_path, data.gt = found
    progress.update(1.0, f"read {p1.name} and {p2.name}")
    return data


def load(path, *, progress: Progress | None = None) -> FlowData:
    """An image (paired with the next image of its folder), a video file or a frame folder."""
    progress = as_progress(progress)
    path = pathlib.Path(path)
    if path.is_dir() or path.suffix.lower() in video_io.VIDEO_EXTENSIONS:
        seq = video_io.FrameSequence(path)
        a, b = seq.pair(0)
        if a.shape != b.shape:
            raise InputError(f"{path.name}: the frames differ in size or channels")
        data = FlowData(a, b, seq.name(0), seq.name(1), path, seq, 0)
        progress.update(1.0, f"opened {path.name}: {len(seq)} frames")
        return data
    if not path.exists():
        raise InputError(f"no such file: {path}")
    return load_pair(path, _partner(path), progress=progress)


def with_pair(data: FlowData, index: int) -> FlowData:
    """The same sequence at pair ``index`` (frames ``index`` and ``index + 1``)."""
    if data.sequence is None:
        raise InputError("only a video or a frame folder has more than one pair")
    a, b = data.sequence.pair(int(index))
    return replace(data, img1=a, img2=b, name1=data.sequence.name(index), name2=data.sequence.name(index + 1),
                   index=int(index), gt=None, gt_path=None)


def with_ground_truth(data: FlowData, path) -> FlowData:
    path = pathlib.Path(path)
    f, v = flow_io.read_flow(path)
    if f.shape[:2] != data.shape:
        raise InputError(f"{path.name} is {f.shape[1]} x {f.shape[0]} but the frames are "
                         f"{data.shape[1]} x {data.shape[0]}")
    return replace(data, gt=(f, v), gt_path=path)


def with_mask(data: FlowData, path) -> FlowData:
    """A mask image (non-zero = region of interest; the alpha channel where there is one)."""
    if path is None:
        return replace(data, mask=None, mask_path=None)
    path = pathlib.Path(path)
    m = image_io.read_image(path)
    if m.ndim == 3:
        m = m[..., -1] if m.shape[2] in (2, 4) else m.max(axis=2)
    if m.shape[:2] != data.shape:
        raise InputError(f"the mask {path.name} is {m.shape[1]} x {m.shape[0]} but the frames are "
                         f"{data.shape[1]} x {data.shape[0]}: give a mask of the frames' size")
    mask = m > 0
    if not mask.any():
        raise InputError(f"the mask {path.name} selects no pixel (it is all zero)")
    return replace(data, mask=mask, mask_path=path)


# ----------------------------------------------------------------------------- run
@dataclass
class FlowRun:
    """A flow of ``data``: ``flow`` is the :class:`gpu_kernels.flow.FlowResult` on the host."""

    data: FlowData
    flow: object
    params: dict
    device: str
    elapsed: float
    metrics: dict | None = None

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


def _flow(ctx):
    d, p = ctx.data, ctx.p
    _check_params(p)
    res = _api.compute_flow(d.img1, d.img2, method=p["method"], levels=p["levels"], block=p["block"],
                            radius=p["radius"], window=p["window"], iters=p["iters"], seed=p["seed"],
                            warps=p["warps"], lam=p["lam"], median=p["median"], tile_size=p["tile_size"],
                            patch=p["patch"], search_level=p["search_level"], max_pixels=p["max_pixels"],
                            mask=d.mask, device=ctx.device, progress=ctx.progress)
    return res.to_numpy()


def _metrics(ctx):
    d, res = ctx.data, ctx["flow"]
    if d.gt is None:
        return None
    gt, valid = d.gt
    return _flow_metrics.flow_metrics(res.u, res.v, gt, valid & (d.mask if d.mask is not None else True))


def _finish(data: FlowData, out: dict, p: dict, *, device: Backend, elapsed: float) -> FlowRun:
    return FlowRun(data, out["flow"], p, device.label, elapsed, out["metrics"])


#: the stages of a run (:mod:`app.tools.stages`): the flow, then its errors against the ground
#: truth. The default method's steps (pyramids, then per level coarse matching, densification and
#: TV-L1, then the quality map: gpu_kernels.flow.search) stay one stage: each level's matching
#: starts from the level above's refinement, so no step can be re-used alone when a parameter
#: changes, and on a GPU the whole pipeline is one captured CUDA graph.
PIPELINE = Pipeline([
    Stage("flow", _flow, params=tuple(PARAMS.compute_names()), inputs=("img1", "img2", "mask"), label="flow",
          weight=15.0),  # measured: the metrics take ~6 % of a CPU run
    Stage("metrics", _metrics, inputs=("gt", "mask"), label="metrics"),
], finish=_finish, params=PARAMS)


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


# ----------------------------------------------------------------------------- summary
def _metrics_line(m: dict) -> str:
    return (f"  against the ground truth: AEE {m['aee']:.3f} px, AAE {m['aae']:.2f} deg, "
            f"EPE > 1 px {m['r1']:.1f} %, > 3 px {m['r3']:.1f} % ({m['n']:,} pixels)")


def summary(result: FlowRun) -> list[str]:
    d, f, p = result.data, result.flow, result.params
    H, W = d.shape
    lines = [f"{d.name1} -> {d.name2}: {W} x {H}" + (f" (pair {d.index + 1} of {d.n_pairs} of {d.path.name})"
                                                    if d.sequence is not None else "")]
    lines += [f"  warning: {w}" for w in d.warnings]
    shown = ", ".join(f"{k} = {v}" for k, v in f.params.items() if k not in ("eig_min", "eig_tau"))
    lines.append(f"  method: {p['method']} ({shown})")
    if d.mask is not None:
        lines.append(f"  mask: {d.mask_path.name if d.mask_path else 'given'}, {100 * d.mask.mean():.1f} % of the pixels")
    lines.append(f"  device: {result.device}; time {fmt_seconds(result.elapsed)}")
    valid = result.valid
    mag = np.hypot(result.u, result.v)[valid]
    q = result.quality[valid]
    lines.append(f"  flow: mean {mag.mean():.2f} px, largest {mag.max():.2f} px; quality: mean {q.mean():.2f}, "
                 f"{100 * (q >= 0.5).mean():.0f} % of the pixels at 0.5 or more")
    if result.metrics is not None:
        lines.append(_metrics_line(result.metrics))
    return lines


def metrics(result: FlowRun) -> dict:
    out = {"mean_flow_px": float(np.hypot(result.u, result.v).mean()), "mean_quality": float(result.quality.mean()),
           "seconds": float(result.elapsed)}
    if result.metrics is not None:
        out.update({k: float(v) for k, v in result.metrics.items()})
    return out


# ----------------------------------------------------------------------------- exports
def _unknown_outside(result: FlowRun):
    return result.valid


def write_flow(result: FlowRun, path) -> list[pathlib.Path]:
    """The flow as .flo (Middlebury) or .png (KITTI); pixels outside the mask are unknown."""
    return [flow_io.write_flow(path, (result.u, result.v), _unknown_outside(result))]


def write_quality(result: FlowRun, path) -> list[pathlib.Path]:
    """The quality map as an 8-bit grey PNG (0..1 -> 0..255)."""
    q = np.clip(np.rint(result.quality * 255), 0, 255).astype(np.uint8)
    return [pathlib.Path(image_io.write_image(path, q))]


def write_color(result: FlowRun, path, *, max_flow: float | None = None) -> list[pathlib.Path]:
    """The flow in Middlebury's colour coding (normalised by the largest magnitude, or max_flow)."""
    img = _colorwheel.flow_to_color(result.u, result.v, max_flow=max_flow, valid=_unknown_outside(result))
    return [pathlib.Path(image_io.write_image(path, img))]


def write_warped(result: FlowRun, path) -> list[pathlib.Path]:
    w = warped_second(result)
    return [pathlib.Path(image_io.write_image(path, np.clip(np.rint(w * 255), 0, 255).astype(np.uint8)))]


EXPORTS = (
    Export("flow", "Flow", (".flo", ".png"), write_flow, cli_option="-o"),
    Export("quality", "Quality map", (".png",), write_quality, cli_option="--quality"),
    Export("color", "Colour-coded flow", (".png",), write_color, cli_option="--color"),
    Export("warped", "Second frame warped by the flow", (".png",), write_warped, cli_option="--warped"),
)


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
    """Consecutive frame pairs of each video or frame folder; image files pair up in turn."""
    items: list[BatchItem] = []
    for p in paths:
        if p.is_dir() or p.suffix.lower() in video_io.VIDEO_EXTENSIONS:
            seq = video_io.FrameSequence(p)
            for i in range(seq.n_pairs):
                items.append(BatchItem(f"{p.stem}-{i:05d}", (str(p),), {"pair": i}))
            seq.close()
    imgs = [p for p in paths if p.is_file() and p.suffix.lower() in image_io.IMAGE_EXTENSIONS]
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
    headline=lambda r: (f"Flow {r.data.name1} -> {r.data.name2} ({r.params['method']}) in {fmt_seconds(r.elapsed)} "
                        f"on {r.device}" + (f"; AEE {r.metrics['aee']:.3f} px" if r.metrics else "")),
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
