"""Mesh segmentation as a tool: parameters, loading, running, summary, exports, samples, demo.

Katz-Tal fuzzy clustering on the mesh's dual graph (:func:`gpu_kernels.mesh.segment_mesh`):
all-pairs shortest paths on the GPU (tiled Floyd-Warshall) or the CPU (Dijkstra), fuzzy
clustering, minimum-cut boundaries. ``gpulab mesh-seg``, the Mesh segmentation tab,
``gpulab demo`` and ``gpulab batch`` all call :data:`TOOL`.

Example
-------
>>> from app.tools import mesh_seg                                       # doctest: +SKIP
>>> from gpu_kernels.backend import get_backend                          # doctest: +SKIP
>>> data = mesh_seg.load(mesh_seg.samples()[0])                          # doctest: +SKIP
>>> res = mesh_seg.run(data, {"k": 2}, device=get_backend("cpu"), progress=None)  # doctest: +SKIP
>>> res.seg.k                                                             # doctest: +SKIP
2
"""

from __future__ import annotations

import copy
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError, TooLargeError
from gpu_kernels.jobs import Progress, as_progress
from gpu_kernels.lazy import lazy_function, lazy_module
from gpu_kernels.mesh import defaults as _defaults
from gpu_kernels.mesh.defaults import DEFAULT_SHADING

from ..io import formats as _formats
from ..io.atomic import write_lines
from .base import Tool, ToolResult, fmt_seconds, samples_in
from .mesh_seg_exports import (  # noqa: F401  (re-exported: the tab and the tests use them here)
    EXPORTS,
    STAGE_NAMES,
    SegmentsDirError,
    check_segments_dir,
    stage_times,
    summary,
    write_colored_ply,
    write_labels,
    write_segments,
)
from .mesh_seg_helpers import MIN_FACES_PER_PART, check_k, layout_line  # noqa: F401
from .params import Param, ParamSet
from .stages import Pipeline, Stage

# NumPy, SciPy, the kernels, the reader and the renderer load on first use, not with the
# declaration (start-up, issue 18 case 19); the parameters' defaults come from the light
# gpu_kernels.mesh.defaults and app.io.formats
if TYPE_CHECKING:
    import numpy as np

    from gpu_kernels import backend as _backend
    from gpu_kernels.backend import Backend
    from gpu_kernels.mesh import colors as _colors
    from gpu_kernels.mesh import segment as _seg

    from ..io import mesh_io
    from ..render import mesh as _render
else:
    np = lazy_module("numpy")
    _backend = lazy_module("gpu_kernels.backend")
    _colors = lazy_module("gpu_kernels.mesh.colors")
    _seg = lazy_module("gpu_kernels.mesh.segment")
    mesh_io = lazy_module("app.io.mesh_io")
    _render = lazy_module("app.render.mesh")

__all__ = ["PARAMS", "TOOL", "MeshData", "MeshSegResult", "load", "run", "summary", "advise",
           "samples", "demo", "WORKING_FACES", "APSP_CHOICES"]

#: the working resolution (the one number for the simplification advice): with ``max_faces``
#: at 'auto' a larger mesh is clustered at this many faces; asked for much more on the CPU,
#: the window offers it and the CLI suggests it
WORKING_FACES = _defaults.WORKING_FACES

APSP_CHOICES = ("auto", "gpu-sym", "gpu", "cpu", "cpu-mt")
GPU_APSP = ("gpu-sym", "gpu")

PARAMS = ParamSet([
    Param("k", int, "auto", "Parts (k)",
          "Number of parts; 'auto' over-segments, merges along the weakest boundaries while they are weak, "
          "and keeps the most typical of three such results.",
          minimum=1, maximum=_defaults.MAX_K, auto=True, typical=5, metavar="K"),
    Param("delta", float, None, "Delta",
          "Weight of geodesic against angular distance in the dual graph (0 = angles only, "
          "1 = geodesic only); 'auto' is the library's choice.",
          minimum=0.0, maximum=1.0, auto=True, auto_value=None, typical=_defaults.DEFAULT_DELTA,
          step=0.05, decimals=3, metavar="D"),
    Param("eta_convex", float, None, "Convex η",
          "Angular weight of convex edges relative to concave ones (concave = 1); 'auto' is the "
          "library's choice.",
          minimum=0.0, maximum=1.0, min_open=True, auto=True, auto_value=None,
          typical=_defaults.DEFAULT_ETA_CONVEX, step=0.01, decimals=3, metavar="E"),
    Param("epsilon", float, _defaults.DEFAULT_EPSILON, "Fuzzy band ε",
          "A face is fuzzy when its two best memberships p1 >= p2 satisfy (p1 - p2) / (p1 + p2) <= ε; "
          "a minimum cut decides fuzzy faces.",
          minimum=0.0, maximum=1.0, step=0.01, decimals=3, metavar="EPS"),
    Param("apsp", str, "auto", "APSP method",
          "All-pairs shortest-path method.",
          choices=APSP_CHOICES, library_name="apsp_method",
          choice_help={"auto": "the GPU when there is one, else the faster CPU method",
                       "gpu-sym": "GPU, tiled Floyd-Warshall on the lower triangle (half the memory)",
                       "gpu": "GPU, tiled Floyd-Warshall", "cpu": "CPU, Dijkstra",
                       "cpu-mt": "CPU, Dijkstra on all cores"}),
    Param("max_iter", int, _defaults.DEFAULT_MAX_ITER, "Iteration cap",
          "Maximum number of representative updates.", minimum=1, maximum=500, metavar="N"),
    Param("max_faces", int, _defaults.DEFAULT_MAX_FACES, "Working resolution",
          "Cluster a mesh with more faces than this on a simplified copy (quadric edge collapse); "
          "the parts are carried back to every face and their boundaries re-cut at full resolution. "
          f"'auto': {_defaults.WORKING_FACES:,} faces (the resolution the merge model was trained at, on every "
          "device); 'off': always the full resolution (slower; sharp creases then weigh more).",
          minimum=200, maximum=10_000_000, auto=True, auto_value=_defaults.DEFAULT_MAX_FACES, optional=True,
          typical=_defaults.WORKING_FACES, step=1000, unit="faces", metavar="N"),
    Param("consensus", bool, False, "Three resolutions",
          "With the automatic working resolution: also cluster at half and 1.5x it "
          f"({_defaults.WORKING_FACES // 2:,} and {_defaults.WORKING_FACES * 3 // 2:,} faces) and keep the result "
          "that agrees best with the other two (better parts on the PSB, about three times the work; the "
          "larger distance matrix is slow on a CPU).", advanced=True),
    Param("refine_boundaries", bool, _defaults.DEFAULT_REFINE_BOUNDARIES, "Refine boundaries",
          "After clustering at a working resolution, re-cut the parts' boundaries on the full mesh "
          "(smoother, along its creases); off: each face takes its nearest working face's part "
          "(slightly better Rand Index on the PSB, slightly quicker, jagged boundaries).", advanced=True),
    Param("auto_layout", str, _defaults.DEFAULT_AUTO_LAYOUT, "Auto-k layout",
          "With k = auto: 'concave' also lays the parts out by the fixed-k method at the k that auto chose and "
          "keeps the more concave boundaries (better parts on unseen PSB meshes, 0.152 against 0.161 Rand Index "
          "error; one fixed-k clustering more, about 15-80 ms on a GPU).", choices=("auto", "concave"),
          advanced=True, choice_help={"auto": "k = auto's own merges", "concave": "the more concave of the two"}),
    Param("simplifier", str, "auto", "Simplifier",
          "How the working resolution is made (quadric edge collapse).",
          choices=("auto", "fast+pymeshlab", "pymeshlab", "fast"), advanced=True,
          choice_help={"auto": "the first of the others that is installed",
                       "fast+pymeshlab": "fast-simplification to 3x the working resolution, then pymeshlab "
                                         "(the default's choice: pymeshlab's quality in a quarter of its time)",
                       "pymeshlab": "pymeshlab alone (about 1 s for 50k faces)",
                       "fast": "fast-simplification alone (quickest; worse parts on the PSB)"}),
    Param("shading", float, DEFAULT_SHADING, "Uncertainty shading",
          "How far faces near a boundary between parts fade towards white (0: flat part colours, "
          "1: white on the boundary). Only the picture and the coloured faces change.",
          minimum=0.0, maximum=1.0, step=0.05, decimals=2, metavar="S", display=True),
    Param("segments_format", str, "ply", "Part mesh format",
          "File format of the per-part meshes (the export 'One mesh per part'; PLY keeps the part colours).",
          choices=_formats.SEGMENT_FORMATS, display=True, library_name=""),
])


@dataclass
class MeshData:
    """A loaded mesh."""

    path: pathlib.Path | None
    vertices: np.ndarray
    faces: np.ndarray
    areas: np.ndarray
    warnings: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "mesh"


@dataclass
class MeshSegResult(ToolResult):
    """A segmentation of ``data`` (``seg`` is a :class:`gpu_kernels.mesh.MeshSegmentation`)."""

    def headline(self) -> str:
        return f"Segmented {self.data.name} into {self.seg.k} parts in {fmt_seconds(self.elapsed)} on {self.device}"

    data: MeshData
    seg: object
    params: dict
    device: str
    elapsed: float

    @property
    def warnings(self) -> list[str]:
        return list((getattr(self.seg, "info", {}) or {}).get("warnings", []) or [])

    def table(self) -> list[dict]:
        return self.seg.cluster_table(self.data.areas)


# ----------------------------------------------------------------------------- load / run
def from_arrays(vertices, faces, path=None) -> MeshData:
    v = np.asarray(vertices, dtype=np.float64)
    f = np.asarray(faces, dtype=np.int64)
    return MeshData(pathlib.Path(path) if path else None, v, f, mesh_io.face_areas(v, f))


def load(path, *, progress: Progress | None = None) -> MeshData:
    """Read a mesh file (anything pymeshlab reads); warnings about its content are kept."""
    progress = as_progress(progress)
    path = pathlib.Path(path)
    warnings: list[str] = []
    v, f = mesh_io.read_mesh(path, warnings=warnings)
    from gpu_kernels.mesh import warm

    # the merge loop's compile or cache load, on its own thread, before a run needs it; only once the file read
    # (a file that does not read must not leave the process waiting for a compile before it can exit)
    warm.warm_up_in_background()
    data = from_arrays(v, f, path)
    data.warnings = warnings
    progress.update(0.0, f"read {path.name}: {len(f):,} faces")
    return data


def check_device(params: dict, device: Backend) -> None:
    """A GPU APSP method needs a GPU; a simplifier asked for by name must be installed."""
    from gpu_kernels.mesh.simplify import available_simplifiers

    how = params.get("simplifier", "auto")
    if how not in (None, "auto") and how not in available_simplifiers():
        need = " and ".join({"fast": "fast-simplification"}.get(m, m) for m in how.split("+"))
        raise InputError(f"the {how} simplifier needs {need}, which is not installed here; "
                         "use simplifier 'auto'")
    method = params.get("apsp", "auto")
    if method in GPU_APSP and not device.is_gpu:
        why = _backend._no_cuda_reason() or "the CPU was selected"
        raise InputError(f"APSP method {method} runs on a CUDA GPU, but {why}; use cpu-mt (or cpu), "
                         "or a CUDA device")


def run(data: MeshData, params: dict, *, device: Backend, progress: Progress | None = None) -> MeshSegResult:
    """Segment ``data`` with ``params`` on ``device``.

    Raises
    ------
    gpu_kernels.errors.InputError
        Bad parameters for this mesh or device, or a mesh that cannot be segmented.
    gpu_kernels.mesh.MeshTooLargeError
        The distance matrix does not fit: a :class:`~gpu_kernels.errors.TooLargeError`
        whose remedy is ``max_faces``.
    """
    p = PARAMS.validate(params)
    check_device(p, device)
    check_k(p, len(data.faces))
    return apply_display(PIPELINE.run(data, p, device=device, progress=progress), p)


def _graph(ctx):
    """Stage 1: clean the mesh, its dual graph, the working resolution(s), their graphs and their
    all-pairs shortest paths (everything that k and epsilon do not change)."""
    p = ctx.p
    check_device(p, ctx.device)
    return _seg.prepare_mesh(
        ctx.data.vertices, ctx.data.faces, delta=p["delta"], eta_convex=p["eta_convex"],
        max_faces=p["max_faces"], consensus=p["consensus"], simplifier=p["simplifier"],
        apsp_method=p["apsp"], device=ctx.device, progress=ctx.progress)


def _cluster(ctx):
    """Stage 2: the fuzzy clusterings on stage 1's distances (a change of k or the iteration cap
    starts here). On a GPU the cuts for the last epsilon of stage 3 start on a host thread while
    the clusterings iterate; stage 3 takes them only for that epsilon (a guess, not a key)."""
    p = ctx.p
    check_device(p, ctx.device)
    check_k(p, len(ctx.data.faces))
    return _seg.clusterings_prepared(ctx["graph"], k=p["k"], apsp_method=p["apsp"], max_iter=p["max_iter"],
                                     device=ctx.device, progress=ctx.progress)


def _prefetch(ctx, cs):
    """After a live run: an integer k's extra starts clustered on a thread (a k edit then clusters nothing). The
    handle lets the pipeline cancel it when the graph stage runs again (the clustering is for the mesh replaced)."""
    return _seg.prefetch_k_starts(ctx["graph"], cs, device=ctx.device)


def _segment(ctx):
    """Stage 3: the clusterings' fuzzy faces cut, their clusters merged and chosen at the
    clustered resolution (a change of epsilon starts here: the clusterings are re-used)."""
    return _seg.settle_prepared(ctx["graph"], ctx["cluster"], epsilon=ctx.p["epsilon"], device=ctx.device,
                                progress=ctx.progress)


def _cut(ctx):
    """Stage 4: the boundaries re-cut at full resolution, the parts' memberships and colours (a
    change of refine_boundaries starts here: the clusterings, cuts and merges are re-used)."""
    cm = ctx["segment"]
    # (with k = auto and auto_layout "concave", the layout's extra run too: its clustering is kept on stage 3's
    # result, so a refine_boundaries edit does not cluster it again)
    seg = _seg.segment_mesh(
        ctx.data.vertices, ctx.data.faces, k=cm.kw["k"], epsilon=cm.kw["epsilon"], apsp_method=cm.apsp_method,
        max_iter=cm.kw["max_iter"], max_faces=cm.info["params"]["max_faces"], prepared=ctx["graph"], clustered=cm,
        refine_boundaries=ctx.p["refine_boundaries"], auto_layout=ctx.p["auto_layout"], device=ctx.device,
        progress=ctx.progress)
    seg.face_colors_shading = cm.kw["shading"]  # what its face colours were blended with (apply_display)
    return seg


def _finish(data: MeshData, out: dict, p: dict, *, device: Backend, elapsed: float) -> MeshSegResult:
    return MeshSegResult(data, out["cut"], p, device.label, elapsed)


def apply_display(result: MeshSegResult, params: dict) -> MeshSegResult:
    """The result with the display-only parameters (the uncertainty shading of the face colours)."""
    seg = result.seg
    shading = params["shading"]
    if getattr(seg, "face_colors_shading", None) == shading and seg.face_colors is not None:
        colors = seg.face_colors.copy()  # already blended with this shading (the default: every run)
    else:
        colors = _colors.blend_face_colors(seg.memberships, seg.labels, seg.cluster_colors, shading=shading)
    seg = copy.copy(seg)  # the cached segmentation stays as it was
    seg.face_colors = colors
    seg.face_colors_shading = shading
    return replace(result, seg=seg, params={**result.params, "shading": params["shading"]})


#: the stages of a run (:mod:`app.tools.stages`): the graphs and distances
#: (:func:`gpu_kernels.mesh.segment.prepare_mesh`: cleaning, dual graph, simplification to the
#: working resolution(s), APSP, the distances' farthest-point orders), the clusterings
#: (:func:`gpu_kernels.mesh.segment.clusterings_prepared`), their cuts and merges at the
#: clustered resolution (:func:`gpu_kernels.mesh.segment.settle_prepared`), then the
#: full-resolution cut (:func:`gpu_kernels.mesh.segment.cut_clustered`: re-cut, memberships, colours)
PIPELINE = Pipeline([
    Stage("graph", _graph, params=("delta", "eta_convex", "max_faces", "consensus", "simplifier", "apsp"),
          inputs=("vertices", "faces"), label="dual graph and distances"),
    Stage("cluster", _cluster, params=("k", "apsp", "max_iter", "max_faces"),
          inputs=("vertices", "faces"), label="clustering", prefetch=_prefetch),
    Stage("segment", _segment, params=("epsilon",), after=("graph", "cluster"), inputs=("vertices", "faces"),
          label="cuts and merges"),
    Stage("cut", _cut, params=("refine_boundaries", "auto_layout"), after=("graph", "segment"),
          inputs=("vertices", "faces"), label="boundary cut"),
], finish=_finish, params=PARAMS)


def advise(data: MeshData, params: dict, device: Backend) -> TooLargeError | None:
    """Working resolution turned off for a large mesh on the CPU: suggest the CPU's working
    resolution (the run would take minutes and gigabytes)."""
    p = PARAMS.validate(params)
    n = len(data.faces)
    limit = 2 * WORKING_FACES
    if not device.is_gpu and (p["max_faces"] is None or (isinstance(p["max_faces"], int) and p["max_faces"] > limit)) \
            and n > limit:
        return TooLargeError(
            n, WORKING_FACES, unit="faces", parameter="max_faces", where="the CPU in reasonable time",
            remedy="cluster at a working resolution; the parts are carried back to every face",
            message=(f"clustering {n:,} faces on the CPU can take many minutes (the shortest paths grow "
                     f"with the cube of the face count); the CPU's working resolution is "
                     f"{WORKING_FACES:,} faces, with the boundaries re-cut at full resolution"))
    return None


# ----------------------------------------------------------------------------- samples and demo
def samples() -> list[pathlib.Path]:
    """Bundled sample meshes, the default (``dumbbell``) first."""
    return samples_in("", _formats.MESH_EXTENSIONS, first=("dumbbell", "creature", "table"))


def demo(out_dir, *, device: Backend, progress: Progress | None = None,
         names: Sequence[str] = ("dumbbell", "creature")) -> list[pathlib.Path]:
    """Segment bundled samples: the coloured PLY, the .seg, a PNG and the summary of each."""
    progress = as_progress(progress)
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = [p for p in samples() if p.stem in names]
    if not todo:
        raise InputError("no bundled sample meshes found in resources/samples")
    written: list[pathlib.Path] = []
    for i, path in enumerate(todo):
        sub = progress.sub(i / len(todo), (i + 1) / len(todo), prefix=path.stem)
        data = load(path)
        res = run(data, PARAMS.defaults(), device=device, progress=sub)
        written += write_colored_ply(res, out_dir / f"{path.stem}-parts.ply")
        written += write_labels(res, out_dir / f"{path.stem}.seg")
        reps = np.asarray(res.seg.representatives, dtype=np.int64)
        markers = (data.vertices[data.faces[reps]].mean(axis=1), [str(j) for j in range(len(reps))],
                   res.seg.cluster_colors)
        written.append(_render.render_png(out_dir / f"{path.stem}-parts.png", data.vertices, data.faces,
                                  res.seg.face_colors, title=f"{path.stem}: {res.seg.k} parts, {len(data.faces):,} faces",
                                  markers=markers))
        written.append(write_lines(out_dir / f"{path.stem}-summary.txt", summary(res)))
    return written


TOOL = Tool(
    name="mesh-seg",
    title="Mesh segmentation",
    key="mesh",
    description="Split a triangle mesh into meaningful parts (Katz-Tal fuzzy clustering on the dual graph).",
    params=PARAMS,
    tab="app.tabs.mesh_tab:MeshTab",
    cli_description=(
        "Segment a triangle mesh into meaningful parts: a weighted dual graph, all-pairs "
        "shortest paths (on the GPU when there is one), fuzzy clustering and minimum-cut "
        "boundaries. Writes a PLY whose faces are coloured by part, and optionally the "
        "labels in the Princeton Segmentation Benchmark format and one mesh per part."),
    input_help="input mesh: anything pymeshlab reads (PLY, OBJ, OFF, STL, 3MF, ...)",
    cli_epilog=("example: gpulab mesh-seg bunny.off -o bunny-parts.ply --labels bunny.seg --k auto\n"
                "Parameters left at 'auto' are chosen per mesh by the library."),
    stages=PIPELINE,
    display=apply_display,
    load=load,
    run=run,
    summary=summary,
    exports=EXPORTS,
    inputs="mesh",  # the reader registry's kind (app.io.registry): patterns, folders, pairs, truth
    input_noun="Mesh",
    samples=samples,
    demo=demo,
    advise=advise,
    check=check_device,
    library=lazy_function("gpu_kernels.mesh.segment:segment_mesh"),
    default_output=lambda p: f"{p.stem}-parts.ply",
)
