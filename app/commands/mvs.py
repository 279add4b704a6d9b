"""``gpulab mvs`` and ``gpulab mvs-synth``: argument mapping for :mod:`app.tools.mvs` and the
synthetic scene generator.

::

    gpulab mvs SCENE -o OUTDIR [--views all|i,j,..] [--window 5] [--neighbors 8] [--min-views 4]
               [--ncc-accept 0.6] [--batch N|auto] [--mask-dir DIR] [--image-dir DIR] [--fused OUT.ply]
               [--params FILE] [--save-params FILE] [--device cpu|cuda] [--quiet]
    gpulab mvs-synth -o DIR [--views 12] [--size 320x240] [--noise 0] [--seed 7] [--depth-format npy|pfm]
"""

from __future__ import annotations

import argparse
import pathlib

from ..errors import UserError
from ..tools import mvs
from .common import (
    add_tool_parser,
    cli_progress,
    end_progress_line,
    finish,
    run_command,
)

__all__ = ["TOOL", "register", "run", "run_synth"]

TOOL = mvs.TOOL


def register(subparsers) -> None:
    p = add_tool_parser(
        subparsers, TOOL,
        help="depth maps and a point cloud from calibrated images (region-growing multi-view stereo)",
        description=(
            "Multi-view stereo after Goesele et al. (2007), ported to the GPU: per reference view, depth "
            "and normal are grown from sparse seeds in order of confidence, a batch of pixels per GPU "
            "launch, matching an n x n window in up to 8 neighbour views by NCC. SCENE is a Middlebury "
            "*_par.txt file (images beside it) or a COLMAP sparse model (text or binary) with its images. "
            "OUTDIR gets, per view, NAME.depth.npy / .normal.npy / .conf.npy / .iters.npy, NAME.depth.pfm "
            "and a COLMAP-style NAME.depth.bin, and fused.ply (x y z nx ny nz red green blue confidence)."),
        epilog=("example: gpulab mvs templeSparseRing/templeSR_par.txt -o temple-mvs --views 0,1,2\n"
                "         gpulab mvs project/sparse/0 --image-dir project/images -o out --mask-dir masks"),
    )
    p.add_argument("input", metavar="SCENE", type=pathlib.Path,
                   help="a Middlebury *_par.txt, or a COLMAP model folder (cameras, images, points3D)")
    p.add_argument("-o", "--output", metavar="OUTDIR", type=pathlib.Path, required=True,
                   help="output folder (created; replaced atomically if it exists)")
    p.add_argument("--mask-dir", metavar="DIR", type=pathlib.Path, default=None,
                   help="per-image masks: DIR/<image file name>.png or DIR/<name>.<ext>; 0 = do not reconstruct")
    p.add_argument("--image-dir", metavar="DIR", type=pathlib.Path, default=None,
                   help="the images (default: beside the par file, or images/ next to the COLMAP model)")
    p.add_argument("--fused", metavar="OUT.ply", type=pathlib.Path, default=None,
                   help="also write the fused cloud to this file (it is always in OUTDIR/fused.ply)")
    p.set_defaults(func=run)

    s = subparsers.add_parser(
        "mvs-synth", help="render a synthetic multi-view stereo scene with exact depth maps",
        description=("Render textured spheres, boxes and a ground plane seen by a ring of cameras, with "
                     "exact depth and normal maps, into DIR in the Middlebury format (synth_par.txt, "
                     "viewNNN.png, README.txt with the bounding box) plus ground truth in DIR/gt "
                     "(viewNNN.depth.npy or .pfm, viewNNN.normal.npy)."),
        epilog="example: gpulab mvs-synth -o synth --views 16 --size 640x480 && gpulab mvs synth/synth_par.txt -o synth-out")
    s.add_argument("-o", "--output", metavar="DIR", type=pathlib.Path, required=True,
                   help="output folder (created; must not exist or be empty)")
    s.add_argument("--views", type=int, default=12, help="number of cameras on the ring (default 12)")
    s.add_argument("--size", default="320x240", help="image size WxH (default 320x240)")
    s.add_argument("--noise", type=float, default=0.0, help="Gaussian image noise, standard deviation in [0, 1]")
    s.add_argument("--seed", type=int, default=7, help="texture seed (default 7)")
    s.add_argument("--depth-format", choices=("npy", "pfm"), default="npy", help="ground-truth depth format")
    s.add_argument("--quiet", "-q", action="store_true", help="do not print progress")
    s.set_defaults(func=run_synth)


def run(args: argparse.Namespace) -> int:
    outputs = [("-o", args.output, TOOL.export("outdir"), {})]
    if args.fused is not None:
        outputs.append(("--fused", args.fused, TOOL.export("fused"), {}))
    if args.mask_dir is not None and not args.mask_dir.is_dir():
        raise UserError(f"--mask-dir {args.mask_dir}: no such folder")
    result, written = run_command(
        TOOL, args, inputs=[args.input], outputs=outputs, load_share=0.1,
        load=lambda progress: mvs.load(args.input, mask_dir=args.mask_dir, image_dir=args.image_dir,
                                       progress=progress))
    shown = [w for w in written if w.name == "fused.ply" or w.suffix == ".ply"][:2]
    if len(written) > len(shown):
        shown.append(pathlib.Path(f"{args.output}/ ({len(written)} files)"))
    return finish(TOOL, result, shown, args)


def run_synth(args: argparse.Namespace) -> int:
    from gpu_kernels.mvs.synth import render_synthetic_scene

    from ..io import depth_io
    from ..io.atomic import atomic_output_dir, atomic_write
    from ..io.image_io import write_image
    from ..io.scene_io import write_middlebury_par

    try:
        w, h = (int(x) for x in str(args.size).lower().split("x"))
    except ValueError:
        raise UserError(f"--size {args.size}: give WIDTHxHEIGHT, e.g. 320x240") from None
    out = pathlib.Path(args.output)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"-o {out}: exists and is not an empty folder; choose a new name")
    if not out.parent.is_dir() and str(out.parent):
        raise UserError(f"-o {out}: the folder {out.parent} does not exist")
    if not 2 <= args.views <= 360:
        raise UserError(f"--views must be 2..360, not {args.views}")
    progress = cli_progress(quiet=args.quiet)
    syn = render_synthetic_scene(n_views=args.views, width=w, height=h, noise=args.noise, seed=args.seed,
                                 progress=progress.sub(0, 0.9, "rendering"))
    names = [f"{n}.png" for n in syn.scene.names]
    with atomic_output_dir(out) as tmp:
        (tmp / "gt").mkdir()
        for n, img, d, nrm in zip(names, syn.scene.images, syn.depths, syn.normals, strict=True):
            write_image(tmp / n, img)
            stem = n[:-4]
            depth_io.write_depth(tmp / "gt" / f"{stem}.depth.{args.depth_format}", d)
            depth_io.write_npy(tmp / "gt" / f"{stem}.normal.npy", nrm)
        write_middlebury_par(tmp / "synth_par.txt", names, syn.scene.cameras)
        lo, hi = syn.bbox
        with atomic_write(tmp / "README.txt", "w") as fh:
            fh.write(f"gpulab mvs-synth: {args.views} views, {w} x {h}, seed {args.seed}, noise {args.noise}\n\n"
                     "The bounding box of the objects (the ground plane extends beyond it) is\n"
                     f"({lo[0]:.6f} {lo[1]:.6f} {lo[2]:.6f})\n({hi[0]:.6f} {hi[1]:.6f} {hi[2]:.6f})\n\n"
                     "synth_par.txt: 'name k11 .. k33 r11 .. r33 t1 t2 t3' per image (projection K [R | t]).\n"
                     "gt/: exact z-depth (NaN: background) and camera-frame normal maps per view.\n")
    end_progress_line()
    print(f"wrote {out}/synth_par.txt, {len(names)} images and their ground truth in {out}/gt")
    return 0
