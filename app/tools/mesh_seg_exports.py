"""The mesh segmentation tool's summary and exports: the coloured mesh, the PSB labels and one
mesh per part (:data:`app.tools.mesh_seg.TOOL` declares them)."""

from __future__ import annotations

import os
import pathlib
from typing import TYPE_CHECKING

from gpu_kernels.errors import InputError
from gpu_kernels.lazy import lazy_module

from ..io import formats as _formats
from .base import Export, fmt_seconds
from .mesh_seg_helpers import with_layout_line

if TYPE_CHECKING:
    import numpy as np

    from gpu_kernels.mesh import colors as _colors

    from ..io import mesh_io
    from .mesh_seg import MeshSegResult
else:  # loaded on first use (start-up, issue 18 case 19)
    np = lazy_module("numpy")
    _colors = lazy_module("gpu_kernels.mesh.colors")
    mesh_io = lazy_module("app.io.mesh_io")

__all__ = ["EXPORTS", "STAGE_NAMES", "SegmentsDirError", "check_segments_dir", "stage_times", "summary",
           "write_colored_ply", "write_labels", "write_segments"]


# ----------------------------------------------------------------------------- summary
STAGE_NAMES = {"clean": "clean-up", "dual_graph": "dual graph", "simplify": "simplify", "apsp": "APSP",
               "clustering": "clustering", "cut": "cut", "transfer": "transfer"}


def stage_times(result: MeshSegResult) -> list[tuple[str, float]]:
    info = getattr(result.seg, "info", {}) or {}
    return [(STAGE_NAMES.get(k, k), float(t)) for k, t in (info.get("timings") or {}).items()
            if k != "total" and t]


def summary(result: MeshSegResult) -> list[str]:
    """The human-readable summary: mesh, k, the auto-k layout kept (:func:`.mesh_seg_helpers.layout_line`),
    parameters used, device, time per stage, parts. The tool's one summary (CLI, exported *-summary.txt)."""
    data, seg = result.data, result.seg
    info = dict(getattr(seg, "info", {}) or {})
    params = dict(info.get("params", {}) or {})
    lines = [f"{data.name}: {len(data.vertices):,} vertices, {len(data.faces):,} faces"]
    lines += [f"  warning: {w}" for w in data.warnings]
    if info.get("simplified"):
        lines.append(f"  working resolution: {int(info.get('n_faces_segmented', 0)):,} faces "
                     f"(boundaries re-cut on all {len(data.faces):,})")
    k_req = result.params.get("k", "auto")
    lines.append(f"  parts (k): {int(seg.k)}" + (" (auto)" if str(k_req) == "auto" else f" (asked for {k_req})"))
    shown = []
    for key in ("delta", "eta_convex"):
        val = params.get(key)
        if val is not None:
            shown.append(f"{key} = {float(val):.3g}{' (auto)' if params.get(f'{key}_auto') else ''}")
    if params.get("epsilon") is not None:
        shown.append(f"epsilon = {float(params['epsilon']):.3g}")
    its = info.get("iterations")
    if its:
        its = its if isinstance(its, list | tuple) else [its]
        conv = "" if info.get("converged", True) else f", stopped at the cap of {params.get('max_iter')}"
        shown.append(f"iterations = {max(its)}{conv}")
    if shown:
        lines.append("  parameters: " + ", ".join(shown))
    lines.append(f"  device: {info.get('device', result.device)}; APSP: {info.get('method') or params.get('apsp_method')}")
    st = stage_times(result)
    lines.append("  time: " + (", ".join(f"{k} {fmt_seconds(v)}" for k, v in st) + "; total " if st else "")
                 + fmt_seconds(result.elapsed))
    lines.append(f"  fuzzy faces resolved by minimum cut: {int(np.count_nonzero(seg.fuzzy)):,}")
    table = result.table()
    if table:
        lines.append("  part  faces     area %  colour")
        for row in table:
            hexcol = "#" + "".join(f"{int(c):02x}" for c in row["color"])
            lines.append(f"  {row['label']:4d}  {row['faces']:8,}  {100 * row['area_fraction']:6.1f}  {hexcol}")
    lines += [f"  warning: {w}" for w in result.warnings]
    return with_layout_line(lines, seg)


# ----------------------------------------------------------------------------- exports
def write_colored_ply(result: MeshSegResult, path) -> list[pathlib.Path]:
    """The mesh with one flat colour per part and the certainty as face quality."""
    d, seg = result.data, result.seg
    colors = np.asarray(seg.cluster_colors, dtype=np.uint8)[np.asarray(seg.labels)]
    return [mesh_io.write_colored_ply(
        path, d.vertices, d.faces, colors, face_quality=_colors.certainty(seg.memberships),
        comments=("faces coloured by part",
                  "quality = certainty of the face's part, 0 (on a boundary) to 1"))]


def write_labels(result: MeshSegResult, path) -> list[pathlib.Path]:
    return [mesh_io.write_seg(path, result.seg.labels, n_faces=len(result.data.faces))]


class SegmentsDirError(InputError):
    """The folder for the part meshes cannot be written."""


def check_segments_dir(path) -> pathlib.Path:
    """Before any work: :func:`mesh_io.check_segments_dir`, then a real try at creating a
    folder next to it (permissions as root, read-only or special file systems)."""
    import tempfile

    from ..io.atomic import hidden_prefix

    path = mesh_io.check_segments_dir(path)
    parent = path.parent if str(path.parent) else pathlib.Path(".")
    try:   # the probe's name cut as atomic's temporary names are: a long valid name stays within NAME_MAX
        probe = tempfile.mkdtemp(prefix=f"{hidden_prefix(path.name)}check-", dir=parent)
    except OSError as exc:
        raise SegmentsDirError(f"{path}: cannot create a folder in {parent} ({exc.strerror or exc})") from None
    try:
        os.rmdir(probe)
    except OSError:
        pass
    return path


def write_segments(result: MeshSegResult, path, *, fmt: str = "ply") -> list[pathlib.Path]:
    d = result.data
    try:
        return mesh_io.write_segments(path, d.vertices, d.faces, result.seg.labels, fmt=fmt,
                                      colors=result.seg.cluster_colors)
    except OSError as exc:  # name the folder asked for, not a temporary one
        raise SegmentsDirError(f"{path}: cannot write the part meshes ({exc.strerror or exc})") from None


EXPORTS = (
    Export("mesh", "Coloured mesh", (".ply",), write_colored_ply, cli_option="-o",
           cli_help="output PLY with per-face colours by part"),
    Export("labels", "Segment labels, PSB format", (".seg",), write_labels, cli_option="--labels",
           cli_help="also write the labels, one integer per line, line i for face i (PSB format)"),
    Export("segments", "One mesh per part (folder)", tuple(f".{e}" for e in _formats.SEGMENT_FORMATS),
           write_segments, folder=True, cli_option="--segments-dir", check=check_segments_dir,
           cli_help="also write each part as its own mesh, DIR/segment_000.ply and so on "
                    "(in the format of --segments-format)",
           options={"fmt": "segments_format"}),
)
