"""``gpulab flow``: argument mapping for :mod:`app.tools.flow`.

::

    gpulab flow IMG1 [IMG2] -o OUT.flo [--method bm|lk|refine] [--levels L] [--block B] [--radius R]
                [--window W] [--iters N] [--mask MASK.png] [--quality OUT_Q.png] [--color OUT_C.png]
                [--warped OUT_W.png] [--gt GT.flo] [--pair N] [--params FILE] [--save-params FILE]
                [--device cpu|cuda] [--quiet]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

from ..errors import UserError
from ..tools import flow
from .common import (
    add_tool_parser,
    finish,
    run_command,
)

__all__ = ["TOOL", "register", "run"]

TOOL = flow.TOOL


def register(subparsers) -> None:
    p = add_tool_parser(
        subparsers, TOOL,
        help="optical flow between two frames (block matching, Lucas-Kanade or TV-L1 refinement)",
        description=(
            "Dense motion from IMG1 to IMG2 (IMG2(x + f(x)) = IMG1(x), u along columns, v along rows). "
            "IMG1 alone may be a video file or a folder of frames (--pair picks the pair), or an image "
            "whose folder holds the next frame. Writes the flow (.flo, or KITTI 16-bit .png) and, on "
            "request, the quality map, the colour-coded flow and the warped second frame; with --gt it "
            "prints the endpoint and angular errors as one JSON line."),
        epilog=("example: gpulab flow frame10.png frame11.png -o flow.flo --color flow.png --gt flow10.flo\n"
                "         gpulab flow clip.mp4 --pair 12 -o pair12.flo --method bm"),
    )
    p.add_argument("img1", metavar="IMG1", type=pathlib.Path, help="first frame (or a video / frame folder)")
    p.add_argument("img2", metavar="IMG2", type=pathlib.Path, nargs="?", default=None,
                   help="second frame (default: the next image in IMG1's folder)")
    p.add_argument("-o", "--output", metavar="OUT.flo", type=pathlib.Path, required=True,
                   help="output flow: .flo (Middlebury) or .png (KITTI 16-bit)")
    p.add_argument("--quality", metavar="OUT_Q.png", type=pathlib.Path, default=None,
                   help="also write the quality map (8-bit grey, 0..1 as 0..255)")
    p.add_argument("--color", metavar="OUT_C.png", type=pathlib.Path, default=None,
                   help="also write the flow in Middlebury's colour coding")
    p.add_argument("--max-flow", metavar="PX", type=float, default=None,
                   help="normalise the colour coding by this magnitude (default: the largest)")
    p.add_argument("--warped", metavar="OUT_W.png", type=pathlib.Path, default=None,
                   help="also write IMG2 warped back by the flow (equals IMG1 where the flow is right)")
    p.add_argument("--mask", metavar="MASK.png", type=pathlib.Path, default=None,
                   help="region of interest: pixels where the mask is 0 neither contribute nor receive flow")
    p.add_argument("--gt", metavar="GT.flo", type=pathlib.Path, default=None,
                   help="ground-truth flow (.flo or KITTI .png): print AEE, AAE, >1 px and >3 px as JSON")
    p.add_argument("--pair", metavar="N", type=int, default=0,
                   help="for a video or frame folder: the pair of frames N and N+1 (default 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    outputs = [("-o", args.output, TOOL.export("flow"), {})]
    if args.quality is not None:
        outputs.append(("--quality", args.quality, TOOL.export("quality"), {}))
    if args.color is not None:
        if args.max_flow is not None and not args.max_flow > 0:
            raise UserError(f"--max-flow must be a positive number of pixels, not {args.max_flow}")
        outputs.append(("--color", args.color, TOOL.export("color"), {"max_flow": args.max_flow}))
    if args.warped is not None:
        outputs.append(("--warped", args.warped, TOOL.export("warped"), {}))

    def load(progress):
        if args.img2 is not None:
            if args.pair:
                raise UserError("--pair applies to a video or a frame folder, not to two images")
            data = flow.load_pair(args.img1, args.img2, progress=progress)
        else:
            data = TOOL.load(args.img1, progress=progress)
            if args.pair:
                data = flow.with_pair(data, args.pair)
        if args.gt is not None:
            data = flow.with_ground_truth(data, args.gt)
        if args.mask is not None:
            data = flow.with_mask(data, args.mask)
        return data

    inputs = [p for p in (args.img1, args.img2, args.mask, args.gt) if p is not None]
    result, written = run_command(TOOL, args, inputs=inputs, outputs=outputs, load=load)
    code = finish(TOOL, result, written, args)
    if args.gt is not None and result.metrics is not None:
        print(flow.metrics_json(result.metrics))
        sys.stdout.flush()
    return code
