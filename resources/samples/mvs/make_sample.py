"""Regenerate the bundled multi-view stereo sample (a small synthetic scene, Middlebury format).

    python resources/samples/mvs/make_sample.py

Writes ``synth_par.txt`` (first line: the number of images), ``view000.png`` ... and
``README.txt`` (with the scene's bounding box, as the Middlebury sets state it) next to
this script. The same renderer makes bigger scenes with ground truth: ``gpulab mvs-synth``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from app.io.image_io import write_image  # noqa: E402
from app.io.scene_io import write_middlebury_par  # noqa: E402
from gpu_kernels.mvs.synth import render_synthetic_scene  # noqa: E402

N_VIEWS, WIDTH, HEIGHT = 12, 160, 120


def main() -> None:
    syn = render_synthetic_scene(n_views=N_VIEWS, width=WIDTH, height=HEIGHT, supersample=2)
    names = [f"{n}.jpg" for n in syn.scene.names]
    for n, img in zip(names, syn.scene.images, strict=True):
        write_image(HERE / n, img)
    write_middlebury_par(HERE / "synth_par.txt", names, syn.scene.cameras)
    lo, hi = syn.bbox
    (HERE / "README.txt").write_text(
        "gpulab synthetic multi-view stereo sample: textured spheres, boxes and a ground plane seen by a ring of\n"
        f"{N_VIEWS} cameras ({WIDTH} x {HEIGHT}), rendered by resources/samples/mvs/make_sample.py.\n\n"
        "The bounding box of the objects (the ground plane extends beyond it) is\n"
        f"({lo[0]:.6f} {lo[1]:.6f} {lo[2]:.6f})\n({hi[0]:.6f} {hi[1]:.6f} {hi[2]:.6f})\n\n"
        "synth_par.txt: 'name k11 .. k33 r11 .. r33 t1 t2 t3' per image (projection K [R | t]), as in the\n"
        "Middlebury MVS data sets.\n")


if __name__ == "__main__":
    main()
