"""``gpulab imseg``: argument mapping for :mod:`app.tools.imseg`.

::

    gpulab imseg IMG -o LABELS.png|.tif|.npy [--regions OUT.csv] [--vis random|mean|boundaries|clusters]
                 [--vis-out OUT.png] [--k-max K] [--q Q] [--iters N] [--merge-distance D] [--bilateral N]
                 [--connectivity 4|8] [--min-size S] [--params FILE] [--save-params FILE] [--device DEVICE]
                 [--quiet]
"""

from __future__ import annotations

import argparse
import pathlib

from gpu_kernels.imseg.defaults import MERGE_WORDS

from ..tools import imseg
from .common import (
    add_tool_parser,
    finish,
    run_command,
)

__all__ = ["TOOL", "register", "run"]

TOOL = imseg.TOOL

def _merges_text(param=None) -> str:
    """The merges in the help: the default and the choices from the tool's ``merge`` parameter (what the parser
    applies), their words from defaults.MERGE_WORDS (the only place that has them)."""
    param = param or imseg.PARAMS["merge"]
    others = [m for m in param.choices if m != param.default]
    return f"{MERGE_WORDS[param.default]} (--merge {param.default}), the default" + "".join(
        f", or {MERGE_WORDS[m]} (--merge {m})" for m in others)


def register(subparsers) -> None:
    p = add_tool_parser(
        subparsers, TOOL,
        help="segment an image into regions that follow its contours (GPU superpixels merged hierarchically)",
        description=(
            "Unsupervised image segmentation. The default method (contours): SLIC superpixels on the "
            f"blurred CIELAB image, merged hierarchically {_merges_text()}; "
            "--coarseness sets how far merging goes, --n-segments the exact count. The paper's method "
            "(--method kmeans): CIELAB, an optional bilateral filter, k-means on the quantised colour space, "
            "connected components (parallel union-find) and small regions merged into their most similar "
            "neighbour. Both end with region features (area, box, centroid, mean RGB and CIELAB colour, "
            "central moments). Runs on the GPU when there is one. Writes the label image (regions 1..R), "
            "optionally the region table and a picture."),
        epilog=("example: gpulab imseg photo.jpg -o photo-labels.png --regions photo.csv --vis boundaries "
                "--vis-out photo-regions.png --min-size 256\n"
                "Label images: .png is 16-bit (at most 65,535 regions), .tif 32-bit, .npy int32."),
    )
    p.add_argument("input", metavar="IMG", type=pathlib.Path,
                   help="input image: PNG, JPEG, TIFF or BMP; 8 or 16 bit; grey, RGB or RGBA (alpha ignored)")
    p.add_argument("-o", "--output", metavar="LABELS", type=pathlib.Path, required=True,
                   help="output label image: .png (16-bit), .tif (32-bit) or .npy")
    p.add_argument("--regions", metavar="OUT.csv", type=pathlib.Path, default=None,
                   help="also write the region table (one row per region, regionprops_table columns)")
    p.add_argument("--vis-out", metavar="OUT.png", type=pathlib.Path, default=None,
                   help="also write a picture of the segmentation (default name with --vis: LABELS-STYLE.png)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    outputs = [("-o", args.output, TOOL.export("labels"), {})]
    if args.regions is not None:
        outputs.append(("--regions", args.regions, TOOL.export("regions"), {}))
    vis_out = args.vis_out
    style = getattr(args, "picture_style", None)  # --vis: the picture_style Param's flag
    if vis_out is None and style is not None:
        vis_out = args.output.with_name(f"{args.output.stem}-{style}.png")
    if vis_out is not None:
        outputs.append(("--vis-out", vis_out, TOOL.export("picture"), {}))  # its style comes from the params
    result, written = run_command(TOOL, args, inputs=[args.input], outputs=outputs,
                                  load=lambda progress: TOOL.load(args.input, progress=progress))
    return finish(TOOL, result, written, args)
