"""``gpulab mesh-seg``: argument mapping for :mod:`app.tools.mesh_seg`.

::

    gpulab mesh-seg IN -o OUT.ply [--labels OUT.seg] [--segments-dir DIR] [--segments-format ply|obj|off|stl]
                    [--k K|auto] [--delta D|auto] [--eta-convex E|auto] [--epsilon EPS]
                    [--apsp gpu-sym|gpu|cpu|cpu-mt|auto] [--max-iter N] [--max-faces N|off]
                    [--params FILE] [--save-params FILE] [--device DEVICE] [--quiet]
"""

from __future__ import annotations

import argparse
import pathlib

from ..io import mesh_io
from ..tools import mesh_seg
from .common import (
    add_tool_parser,
    finish,
    run_command,
)

__all__ = ["TOOL", "register", "run"]

TOOL = mesh_seg.TOOL


def register(subparsers) -> None:
    p = add_tool_parser(
        subparsers, TOOL,
        help="segment a mesh into parts (Katz-Tal fuzzy clustering on the dual graph)",
        description=(
            "Segment a triangle mesh into meaningful parts: a weighted dual graph, all-pairs "
            "shortest paths (on the GPU when there is one), fuzzy clustering and minimum-cut "
            "boundaries. Writes a PLY whose faces are coloured by part, and optionally the "
            "labels in the Princeton Segmentation Benchmark format and one mesh per part."),
        epilog=("example: gpulab mesh-seg bunny.off -o bunny-parts.ply --labels bunny.seg --k auto\n"
                "Parameters left at 'auto' are chosen per mesh by the library."),
    )
    p.add_argument("input", metavar="IN", type=pathlib.Path,
                   help="input mesh: anything pymeshlab reads (PLY, OBJ, OFF, STL, 3MF, ...)")
    p.add_argument("-o", "--output", metavar="OUT.ply", type=pathlib.Path, required=True,
                   help="output PLY with per-face colours by part")
    p.add_argument("--labels", metavar="OUT.seg", type=pathlib.Path, default=None,
                   help="also write the labels, one integer per line, line i for face i (PSB format)")
    p.add_argument("--segments-dir", metavar="DIR", type=pathlib.Path, default=None,
                   help="also write each part as its own mesh, DIR/segment_000.ply and so on")
    p.add_argument("--segments-format", choices=mesh_io.SEGMENT_FORMATS, default="ply",
                   help="file format of --segments-dir (default: ply, coloured by part)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    outputs = [("-o", args.output, TOOL.export("mesh"), {})]
    if args.labels is not None:
        outputs.append(("--labels", args.labels, TOOL.export("labels"), {}))
    if args.segments_dir is not None:
        outputs.append(("--segments-dir", args.segments_dir, TOOL.export("segments"), {"fmt": args.segments_format}))
    result, written = run_command(TOOL, args, inputs=[args.input], outputs=outputs,
                                  load=lambda progress: TOOL.load(args.input, progress=progress))
    return finish(TOOL, result, written, args)
