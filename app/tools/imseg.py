"""Image segmentation as a tool: parameters, loading, running, exports, samples, demo (the
summary lives in :mod:`app.tools.imseg_report`).

Two methods (:func:`gpu_kernels.imseg.api.segment`): ``contours`` (the default: SLIC
superpixels merged hierarchically by colour and by the strength of the edge between them,
one ``coarseness`` or an exact number of segments) and ``kmeans`` (the paper's pipeline:
CIELAB, an optional bilateral filter, k-means on the quantised colours, connected
components, small-region merging), with region features, on the GPU when there is one.
``gpulab imseg``, the Image segmentation tab, ``gpulab demo`` and ``gpulab batch`` all call
:data:`TOOL`.

Example
-------
>>> from app.tools import imseg                                            # doctest: +SKIP
>>> from gpu_kernels.backend import get_backend                            # doctest: +SKIP
>>> data = imseg.load(imseg.samples()[0])                                  # doctest: +SKIP
>>> res = imseg.run(data, {}, device=get_backend("cpu"), progress=None)    # doctest: +SKIP
>>> res.seg.n_regions                                                      # doctest: +SKIP
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.imseg import defaults as _dflt
from gpu_kernels.imseg.defaults import (
    MAX_BILATERAL_PASSES,
    MAX_BILATERAL_WINDOW,
    MAX_ITERATIONS,
    MAX_K,
    MAX_Q,
    MIN_Q,
)
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_function, lazy_module

from ..io import formats as _formats
from ..io.atomic import write_lines
from .base import Export, Tool, samples_in
from .imseg_report import STAGE_NAMES, advise, headline, stage_times, summary
from .params import Param, ParamSet
from .stages import Pipeline, Stage

# NumPy, SciPy, the kernels and the readers load on first use, not with the declaration
# (start-up, issue 18 case 19); the parameters' defaults come from gpu_kernels.imseg.defaults
if TYPE_CHECKING:
    import numpy as np

    import gpu_kernels.imseg.api  # noqa: F401  (the library entry point, reached lazily)
    from gpu_kernels.backend import Backend
    from gpu_kernels.imseg import deferred as _dfr
    from gpu_kernels.imseg import vis as _vis

    from ..io import image_io, labels_io
else:
    np = lazy_module("numpy")
    _dfr = lazy_module("gpu_kernels.imseg.deferred")   # the k-means stages (deferred: one CUDA graph)
    _vis = lazy_module("gpu_kernels.imseg.vis")
    image_io = lazy_module("app.io.image_io")
    labels_io = lazy_module("app.io.labels_io")

__all__ = ["PARAMS", "TOOL", "ImageData", "ImsegResult", "load", "run", "summary", "samples", "demo",
           "picture", "STAGE_NAMES", "stage_times", "headline"]

def _kmeans(v) -> bool:
    return v["method"] == "kmeans"


def _contours(v) -> bool:
    return v["method"] == "contours"


PARAMS = ParamSet([
    Param("method", str, "contours", "Method",
          "contours: superpixels merged hierarchically by colour and by the strength of the edge between them "
          "(follows the image's contours; the default). kmeans: the paper's pipeline (CIELAB k-means on the "
          "quantised colours, connected components, small-region merging).", choices=("contours", "kmeans"),
          metavar="{contours,kmeans}"),
    Param("merge", str, _dflt.DEFAULT_MERGE, "Merge", _dflt.MERGE_HELP, choices=_dflt.MERGES,
          metavar="{" + ",".join(_dflt.MERGES) + "}", used_when=_contours),
    Param("coarseness", float, _dflt.DEFAULT_COARSENESS, "Coarseness", _dflt.COARSENESS_HELP,
          minimum=_dflt.MIN_COARSENESS, maximum=_dflt.MAX_COARSENESS, step=0.1, decimals=2, metavar="C",
          used_when=lambda v: _contours(v) and not v["n_segments"]),
    Param("n_segments", int, _dflt.DEFAULT_N_SEGMENTS, "Segments",
          "Merge until exactly this many segments are left; auto (or 0): the coarseness decides.", minimum=0,
          maximum=_dflt.MAX_N_SEGMENTS, auto=True, auto_value=0, typical=30, metavar="N", used_when=_contours),
    Param("n_superpixels", int, _dflt.DEFAULT_N_SUPERPIXELS, "Superpixels",
          "SLIC grid cells, the finest level the merging starts from (whatever the image size).", minimum=1,
          maximum=_dflt.MAX_N_SUPERPIXELS, advanced=True, metavar="K", used_when=_contours),
    Param("compactness", float, _dflt.DEFAULT_COMPACTNESS, "Compactness",
          "SLIC's m: larger gives squarer superpixels, smaller ones that follow colour more closely.",
          minimum=0.0, maximum=1000.0, step=1.0, decimals=1, advanced=True, metavar="M", used_when=_contours),
    Param("sigma", float, _dflt.DEFAULT_SIGMA, "Blur σ",
          "Gaussian blur before the colour gradient and the superpixels.", minimum=0.1, maximum=20.0,
          step=0.1, decimals=2, unit="px", advanced=True, metavar="S", used_when=_contours),
    Param("k_max", int, _dflt.DEFAULT_K_MAX, "Clusters (k max)",
          "Most k-means clusters: colours are sampled on a grid of this many pixels and samples closer than "
          "the merge distance share a centre, so k is usually smaller. More clusters: more, smaller regions.",
          minimum=1, maximum=MAX_K, metavar="K", used_when=_kmeans),
    Param("q", int, _dflt.DEFAULT_Q, "Quantisation (Q bits)",
          "Bits per CIELAB channel of the quantised colour space k-means runs on (2^(3Q) colours; the "
          "paper's Q = 5). Fewer bits: coarser colours, faster k-means.",
          minimum=MIN_Q, maximum=MAX_Q, metavar="Q", used_when=_kmeans),
    Param("iterations", int, _dflt.DEFAULT_ITERATIONS, "k-means iterations",
          "Fixed number of k-means iterations on the quantised colours (no convergence test, so the GPU "
          "never waits for the host).", minimum=0, maximum=MAX_ITERATIONS, flag="--iters", metavar="N",
          used_when=_kmeans),
    Param("merge_distance", float, _dflt.DEFAULT_MERGE_DISTANCE, "Merge distance",
          "Initial colour samples closer than this CIELAB distance become one cluster centre. Larger: fewer "
          "clusters, larger regions.", minimum=0.0, maximum=200.0, step=1.0, decimals=1, unit="ΔE",
          metavar="D", used_when=_kmeans),
    Param("bilateral", int, _dflt.DEFAULT_BILATERAL, "Bilateral passes",
          "Passes of an edge-preserving bilateral filter in CIELAB before clustering (0: off; the paper uses "
          "5). Smooths noise and texture into fewer regions.", minimum=0, maximum=MAX_BILATERAL_PASSES,
          metavar="N", used_when=_kmeans),
    Param("bilateral_window", int, _dflt.DEFAULT_BILATERAL_WINDOW, "Filter window",
          "Side of the bilateral filter's window, odd.", minimum=3, maximum=MAX_BILATERAL_WINDOW, unit="px",
          step=2, advanced=True, metavar="W", used_when=_kmeans),
    Param("sigma_spatial", float, _dflt.DEFAULT_SIGMA_SPATIAL, "Filter σ (space)",
          "Spatial sigma of the bilateral filter.", minimum=0.0, maximum=50.0, min_open=True, unit="px",
          step=0.5, decimals=2, advanced=True, metavar="S", used_when=_kmeans),
    Param("sigma_color", float, _dflt.DEFAULT_SIGMA_COLOR, "Filter σ (colour)",
          "Colour sigma of the bilateral filter: colour differences well above it are edges the filter "
          "keeps.", minimum=0.0, maximum=200.0, min_open=True, unit="ΔE", step=1.0, decimals=1,
          advanced=True, metavar="S", used_when=_kmeans),
    Param("connectivity", int, _dflt.DEFAULT_CONNECTIVITY, "Connectivity",
          "Which neighbours join a region: 4 (edges only) or 8 (edges and corners).", choices=(4, 8),
          metavar="{4,8}", used_when=_kmeans),
    Param("min_size", int, _dflt.DEFAULT_MIN_SIZE, "Minimum region size",
          "Regions smaller than this merge into their most similar neighbour until none is left (0 or 1: "
          "off). Guaranteed unless the whole image is smaller.", minimum=0, maximum=100_000_000, unit="px",
          step=16, metavar="S", used_when=_kmeans),
    Param("picture_style", str, "boundaries", "Picture",
          "Which picture the Picture export writes: regions in random colours, in their mean colour, "
          "boundaries over the image, or the k-means clusters.",
          choices=_dflt.STYLES, display=True, flag="--vis", library_name=""),
])


@dataclass
class ImageData:
    """A loaded image and, for stepping through a folder, its siblings."""

    path: pathlib.Path | None
    image: np.ndarray
    folder_images: tuple[pathlib.Path, ...] = ()

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "image"

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.image.shape[0]), int(self.image.shape[1])

    def describe(self) -> str:
        a = self.image
        kind = {2: "grey"}.get(a.ndim) or {3: "RGB", 4: "RGBA"}.get(a.shape[2], f"{a.shape[2]}-channel")
        return f"{a.shape[1]} x {a.shape[0]} {kind}, {a.dtype}"


@dataclass
class ImsegResult:
    """A segmentation of ``data`` (``seg`` is a :class:`gpu_kernels.imseg.ImageSegmentation`)."""

    data: ImageData
    seg: object
    params: dict
    device: str
    elapsed: float

    def table(self) -> dict:
        """``regionprops_table``-style columns."""
        return self.seg.region_table()


# ----------------------------------------------------------------------------- load / run
def load(path, *, progress: Progress | None = None) -> ImageData:
    """Read an image (PNG, JPEG, TIFF, BMP; 8/16 bit; grey, RGB, RGBA, palette). A folder
    opens its first image, and the folder's images can then be stepped through."""
    progress = as_progress(progress)
    path = pathlib.Path(path)
    kind = TOOL.input   # what a folder of images is: the reader registry's "image" kind
    if path.is_dir():
        files = kind.files_in(path)
        if not files:
            raise InputError(f"{path}: the folder holds no images ({', '.join(kind.patterns)})")
        path = files[0]
    else:
        files = kind.files_in(path.parent) or [path]
    img = image_io.read_image(path, mode="keep")
    if img.ndim == 3 and img.shape[2] == 2:  # grey + alpha
        img = img[..., 0]
    progress.update(0.0, f"read {path.name}")
    return ImageData(path, img, tuple(files))


#: a GPU's full run (``deferred.full_run``, ~0.1 ms less host work) as one library call; off: the stages
DIRECT_RUN = True


def run(data: ImageData, params: dict, *, device: Backend, progress: Progress | None = None) -> ImsegResult:
    """Segment ``data`` with ``params`` on ``device`` (the window: ``PIPELINE``, cached). Raises ``InputError``
    (a bad image or parameter, e.g. an even bilateral window), ``TooLargeError`` (over the GPU's free memory)."""
    return PIPELINE.run(data, params, device=device, progress=progress)


def _whole(data: ImageData, p: dict, *, device: Backend, progress: Progress | None):
    """:meth:`Pipeline.run`'s one-step full run (``deferred.full_run``), a GPU's only."""
    if not (DIRECT_RUN and device.is_gpu):
        return None
    from gpu_kernels.imseg.deferred import full_run  # the module's, not the lazy proxy's (~2 us)

    return full_run(data.image, p, device=device, progress=progress)


_LAB_PARAMS = ("bilateral", "bilateral_window", "sigma_spatial", "sigma_color")
_KMEANS_PARAMS = ("k_max", "iterations", "merge_distance")
_REGION_PARAMS = ("connectivity", "min_size")


def _only(method):
    """A stage function that runs for ``method`` only (None for the other method)."""
    def wrap(fn):
        def stage(ctx):
            return fn(ctx) if ctx.p["method"] == method else None
        stage.__name__ = stage.__qualname__ = fn.__name__
        stage.__doc__ = fn.__doc__
        return stage
    return wrap


@_only("kmeans")
def _lab(ctx):
    """The paper's pipeline, stage 1: the image on the device, CIELAB, the bilateral filter."""
    return _dfr.lab(ctx.data.image, **{k: ctx.p[k] for k in _LAB_PARAMS}, device=ctx.device, progress=ctx.progress)


@_only("kmeans")
def _quantise(ctx):
    """Stage 2: the quantised colours (``q`` re-runs from here, not CIELAB or the filter)."""
    return _dfr.codes(ctx["lab"], q=ctx.p["q"], device=ctx.device)


@_only("kmeans")
def _kmeans(ctx):
    """Stage 3: k-means on the quantised colours."""
    return _dfr.kmeans(ctx["quantise"], **{k: ctx.p[k] for k in _KMEANS_PARAMS}, device=ctx.device,
                       progress=ctx.progress)


@_only("kmeans")
def _segment(ctx):
    """Stage 4: components, small-region merging, features (``connectivity`` and ``min_size``
    re-run this stage only, not k-means)."""
    return _dfr.regions(ctx["quantise"], ctx["kmeans"], **{k: ctx.p[k] for k in _REGION_PARAMS}, device=ctx.device,
                        progress=ctx.progress)


@_only("contours")
def _colour(ctx):
    return _dfr.colour(ctx.data.image, sigma=ctx.p["sigma"], device=ctx.device, progress=ctx.progress)


@_only("contours")
def _superpixels(ctx):
    return _dfr.superpixels(ctx["colour"], n_superpixels=ctx.p["n_superpixels"], compactness=ctx.p["compactness"],
                            device=ctx.device, progress=ctx.progress)


@_only("contours")
def _merge(ctx):
    return _dfr.merge(ctx["colour"], ctx["superpixels"], coarseness=ctx.p["coarseness"], merge=ctx.p["merge"],
                      n_segments=ctx.p["n_segments"], device=ctx.device, progress=ctx.progress)


def _regions(ctx):
    """The segmentation with its region features, on the host."""
    if ctx.p["method"] != "contours":
        return ctx["segment"]
    return _dfr.finish(ctx["colour"], ctx["superpixels"], ctx["merge"], device=ctx.device, progress=ctx.progress)


def _finish(data: ImageData, out: dict, p: dict, *, device: Backend, elapsed: float) -> ImsegResult:
    return ImsegResult(data, out["regions"], p, device.label, elapsed)


#: the stages of a run (:mod:`app.tools.stages`): the contours method (the default) as colour ->
#: superpixels -> merge -> regions, so changing the coarseness re-runs only the merge; the paper's
#: pipeline as lab -> quantise -> kmeans -> segment, so each parameter re-runs only from the stage
#: that reads it (q: not CIELAB or the filter; connectivity, min_size: not k-means). On a GPU the first
#: stages are deferred and a full run is one library call, its CUDA graph (gpu_kernels.imseg.deferred)
_K, _C = {"when": lambda v: v["method"] == "kmeans"}, {"when": _contours}   # each method's stages
PIPELINE = Pipeline([
    Stage("lab", _lab, params=("method",) + _LAB_PARAMS, after=(), inputs=("image",), label="CIELAB + bilateral",
          weight=0.3, **_K),
    Stage("quantise", _quantise, params=("method", "q"), after=("lab",), label="quantise", weight=0.2, **_K),
    Stage("kmeans", _kmeans, params=("method",) + _KMEANS_PARAMS, after=("quantise",), label="k-means", weight=0.3,
          **_K),
    Stage("segment", _segment, params=("method",) + _REGION_PARAMS, after=("quantise", "kmeans"),
          label="components + min size", **_K),
    Stage("colour", _colour, params=("method", "sigma"), after=(), inputs=("image",), label="colour + gradient",
          weight=0.5, **_C),
    Stage("superpixels", _superpixels, params=("method", "n_superpixels", "compactness"), after=("colour",),
          label="superpixels", **_C),
    Stage("merge", _merge, params=("method", "merge", "coarseness", "n_segments"), after=("colour", "superpixels"),
          label="region merging", weight=0.5, **_C),
    Stage("regions", _regions, params=("method",), after=("segment", "colour", "superpixels", "merge"),
          label="region features", weight=0.5),
], finish=_finish, params=PARAMS, whole=_whole)


# ----------------------------------------------------------------------------- exports
def picture(result: ImsegResult, style: str) -> np.ndarray:
    """The segmentation as an 8-bit RGB picture (:data:`gpu_kernels.imseg.vis.STYLES`)."""
    s = result.seg
    return _vis.render(style, result.data.image, s.labels, features=s.features, clusters=s.clusters,
                       centres=s.centres)


def write_labels(result: ImsegResult, path) -> list[pathlib.Path]:
    return [labels_io.write_labels(path, result.seg.labels)]


def write_regions(result: ImsegResult, path) -> list[pathlib.Path]:
    if not result.seg.features:
        raise InputError("this result has no region features to write")
    return [labels_io.write_region_table(path, result.seg.features)]


def write_picture(result: ImsegResult, path, *, style: str = "boundaries") -> list[pathlib.Path]:
    if style not in _vis.STYLES:
        raise InputError(f"unknown picture style {style!r}: use one of {', '.join(_vis.STYLES)}")
    return [image_io.write_image(path, picture(result, style))]


VIS_EXTENSIONS = (".png", ".jpg", ".tif")

EXPORTS = (
    Export("labels", "Label image", _formats.LABEL_EXTENSIONS, write_labels,
           cli_option="-o", check=lazy_function("app.io.labels_io:check_labels_output")),
    Export("regions", "Region table", (".csv",), write_regions, cli_option="--regions"),
    Export("picture", "Picture", VIS_EXTENSIONS, write_picture,
           cli_option="--vis-out", options={"style": "picture_style"}),
)


# ----------------------------------------------------------------------------- samples and demo
def samples() -> list[pathlib.Path]:
    """Bundled sample images, the default (``coffee``) first."""
    return samples_in("imseg", _formats.IMAGE_EXTENSIONS, first=("coffee", "astronaut"))


def demo(out_dir, *, device: Backend, progress: Progress | None = None,
         names: Sequence[str] = ("coffee", "astronaut")) -> list[pathlib.Path]:
    """Segment the bundled samples: labels (16-bit PNG), the region table, the pictures and
    the summary of each."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = [p for p in samples() if p.stem in names]
    if not todo:
        raise InputError("no bundled sample images found in resources/samples/imseg")
    written: list[pathlib.Path] = []
    for i, path in enumerate(todo):
        sub = progress.sub(i / len(todo), (i + 1) / len(todo), prefix=path.stem)
        res = run(load(path), PARAMS.defaults(), device=device, progress=sub)
        written += write_labels(res, out_dir / f"{path.stem}-labels.png")
        written += write_regions(res, out_dir / f"{path.stem}-regions.csv")
        for style in ("boundaries", "mean", "random"):
            written += write_picture(res, out_dir / f"{path.stem}-{style}.png", style=style)
        written.append(write_lines(out_dir / f"{path.stem}-summary.txt", summary(res)))
    return written


def metrics(result: ImsegResult) -> dict:
    return {"regions": int(result.seg.n_regions), "clusters": int(result.seg.n_clusters),
            "seconds": round(float(result.elapsed), 4)}


TOOL = Tool(
    name="imseg",
    title="Image segmentation",
    key="imseg",
    description="Split an image into regions that follow its contours (superpixels merged by colour and edge strength; or the paper's CIELAB k-means), with region features.",
    params=PARAMS,
    tab="app.tabs.imseg_tab:ImsegTab",
    command="app.commands.imseg",
    stages=PIPELINE,
    load=load,
    run=run,
    summary=summary,
    exports=EXPORTS,
    inputs="image",  # the reader registry's kind (app.io.registry): patterns, folders, pairs, truth
    input_noun="Image",
    headline=headline,
    advise=advise,
    samples=samples,
    demo=demo,
    library=lazy_function("gpu_kernels.imseg.api:segment"),
    default_output=lambda p: f"{p.stem}-labels.png",
    metrics=metrics,
)
