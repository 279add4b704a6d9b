"""``gpulab echo`` and ``gpulab echo-synth``: argument mapping for :mod:`app.tools.echo`.

::

    gpulab echo FIXED [MOVING] -o OUT.npy [--frames I J] [--jacobian OUT_J.npy] [--warped OUT_W.nii.gz]
                [--trajectory OUT_T.npy] [--slices OUT.png] [--gt GT.npy [--mask MASK.nii.gz]]
                [--alpha A] [--beta B] [--rho R] [--levels L] [--warps W] [--iters N] [--tol T]
                [--solver sor|jacobi] [--params FILE] [--save-params FILE] [--device cpu|cuda] [--quiet]
    gpulab echo-synth -o DIR [--size 128] [--frames 10] [--noise X] [--decorrelation X] [--seed S] ...
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from gpu_kernels.lazy import lazy_module

from ..errors import UserError
from ..tools import echo
from ..tools.echo_data import SYNTH_PARAMS
from .common import (
    add_device_arg,
    add_tool_parser,
    cli_progress,
    end_progress_line,
    finish,
    run_command,
    select_device,
)

__all__ = ["TOOL", "register", "run", "run_synth"]

volume_io = lazy_module("app.io.volume_io")   # reads the study: folders, pairs, truth (NumPy on first use)

TOOL = echo.TOOL


def register(subparsers) -> None:
    p = add_tool_parser(
        subparsers, TOOL,
        help="3-D motion between volumes (volume-preserving CLG optical flow)",
        description=(
            "Dense 3-D motion from FIXED to MOVING (MOVING(x + u(x)) = FIXED(x); u is (3, Z, Y, X), component i "
            "along array axis i, in voxels). FIXED alone may be a 4-D file (with --frames I J), a folder of 3-D "
            "frames, a DICOM series folder or a folder written by 'gpulab echo-synth'; a 4-D input without "
            "--frames gives the motion of every consecutive pair (-o then holds (T-1, 3, Z, Y, X)). Reads "
            "NIfTI, MetaImage, NRRD, DICOM and .npy/.npz; writes the field as .npy/.npz or a NIfTI vector "
            "image. With --gt it prints the errors as one JSON line."),
        epilog=("example: gpulab echo ed.nii.gz es.nii.gz -o motion.npy --jacobian jac.nii.gz\n"
                "         gpulab echo cine.nii.gz --frames 0 9 -o ed_es.nii.gz\n"
                "         gpulab echo synth/sequence.nii.gz --frames 2 3 -o u.npy --gt synth/gt_002_003.npy "
                "--mask synth/myocardium_002.nii.gz"),
    )
    p.add_argument("fixed", metavar="FIXED", type=pathlib.Path,
                   help="fixed volume (or a 4-D file, a folder of frames, a DICOM folder)")
    p.add_argument("moving", metavar="MOVING", type=pathlib.Path, nargs="?", default=None,
                   help="moving volume (3-D, same grid as FIXED)")
    p.add_argument("-o", "--output", metavar="OUT.npy", type=pathlib.Path, required=True,
                   help="output displacement field: .npy (voxels), .npz (with the spacing) or .nii/.nii.gz "
                        "(NIfTI vector image, mm along the file's axes)")
    p.add_argument("--frames", metavar=("I", "J"), type=int, nargs=2, default=None,
                   help="with a 4-D input: estimate frame I -> frame J only")
    p.add_argument("--jacobian", metavar="OUT_J.npy", type=pathlib.Path, default=None,
                   help="also write the Jacobian determinant det(I + grad u) (.npy, .nii.gz)")
    p.add_argument("--trajectory", metavar="OUT_T.npy", type=pathlib.Path, default=None,
                   help="also write the fields from the reference frame to every frame (T, 3, Z, Y, X)")
    p.add_argument("--warped", metavar="OUT_W.nii.gz", type=pathlib.Path, default=None,
                   help="also write MOVING warped onto FIXED (a sequence: every frame onto the reference)")
    p.add_argument("--slices", metavar="OUT.png", type=pathlib.Path, default=None,
                   help="also write a picture of the three orthogonal slices with the motion overlaid")
    p.add_argument("--gt", metavar="GT.npy", type=pathlib.Path, default=None,
                   help="ground-truth field (3, Z, Y, X) of the pair: print the endpoint errors as JSON")
    p.add_argument("--mask", metavar="MASK.nii.gz", type=pathlib.Path, default=None,
                   help="with --gt: a mask (non-zero inside) for the Jacobian-determinant error")
    p.set_defaults(func=run)

    s = subparsers.add_parser(
        "echo-synth", help="write a synthetic 3-D echo sequence with its exact motion",
        description=("A beating left ventricle in synthetic 3-D ultrasound: speckle from random scatterers and an "
                     "anisotropic point-spread function, envelope and log compression; the myocardium contracts, "
                     "shortens and twists with volume-preserving wall motion. Writes DIR/sequence.<fmt> (4-D, "
                     "uint8), DIR/gt_III_JJJ.npy (exact fields for every consecutive pair and from frame 0), "
                     "DIR/myocardium_III.nii.gz masks and DIR/params.json."),
        epilog="example: gpulab echo-synth -o synth --size 128 --frames 10 && gpulab echo synth -o motion.npy",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("-o", "--output", metavar="DIR", type=pathlib.Path, required=True, help="output folder (new)")
    SYNTH_PARAMS.add_arguments(s, title="the synthetic sequence", preset=False)  # one flag per declared Param
    add_device_arg(s)
    s.add_argument("--quiet", "-q", action="store_true", help="do not print progress")
    s.set_defaults(func=run_synth)


def run(args: argparse.Namespace) -> int:
    outputs = [("-o", args.output, TOOL.export("field"), {})]
    for opt, key in (("--jacobian", "jacobian"), ("--trajectory", "trajectory"), ("--warped", "warped"),
                     ("--slices", "slices")):
        path = getattr(args, opt[2:])
        if path is not None:
            outputs.append((opt, path, TOOL.export(key), {}))
    if args.mask is not None and args.gt is None:
        raise UserError("--mask goes with --gt (the Jacobian error is measured inside it)")

    def load(progress):
        if args.moving is not None and args.frames is not None:
            raise UserError("--frames picks two frames of one 4-D input; with two volumes leave it out")
        data = volume_io.read_sequence(args.fixed, moving=args.moving, frames=args.frames, truth=args.gt,
                                       mask=args.mask, progress=progress)
        if args.moving is None and args.frames is None and data.n_frames < 2:
            raise UserError(f"{args.fixed.name} is a single 3-D volume: give MOVING too, or a 4-D input")
        if data.n_frames > 2 and str(args.output).lower().endswith((".nii", ".nii.gz")):
            raise UserError(f"-o {args.output}: a NIfTI vector image holds one field; {data.name} has "
                            f"{data.n_frames} frames: write .npy/.npz, or pick a pair with --frames I J")
        return data

    inputs = [p for p in (args.fixed, args.moving, args.gt, args.mask) if p is not None]
    result, written = run_command(TOOL, args, inputs=inputs, outputs=outputs, load=load)
    code = finish(TOOL, result, written, args)
    if args.gt is not None and result.metrics is not None:
        m = {k: v for k, v in result.metrics.items() if k != "pairs"}
        print(json.dumps(m))
        sys.stdout.flush()
    return code


def run_synth(args: argparse.Namespace) -> int:
    out = pathlib.Path(args.output)
    if out.exists():
        raise UserError(f"-o {out}: already exists; give a new folder name")
    parent = out.parent if str(out.parent) else pathlib.Path(".")
    if not parent.is_dir():
        raise UserError(f"-o {out}: the folder {parent} does not exist")
    prm = SYNTH_PARAMS.from_args(args)       # validated (ranges) by the declared Params
    be = select_device(args)
    progress = cli_progress(quiet=args.quiet)
    fmt = prm.pop("format")
    prm["spacing"] = (prm["spacing"],) * 3
    seq = lazy_module("gpu_kernels.echo.synthetic").make_sequence(device=be, progress=progress.sub(0.0, 0.5, "render"),
                                                                  **prm)
    written = echo.write_synthetic(out, seq, fmt=fmt, progress=progress.sub(0.5, 1.0, "truth"))
    end_progress_line()
    print(f"synthetic sequence: {prm['frames']} frames of {prm['size']}^3 voxels, seed {prm['seed']}")
    print(f"wrote {out}/ ({len(written)} files: sequence.{fmt}, "
          f"{sum(1 for w in written if w.name.startswith('gt_'))} ground-truth fields, masks, params.json)")
    sys.stdout.flush()
    return 0

