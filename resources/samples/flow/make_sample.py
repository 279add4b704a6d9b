"""Make the flow tool's bundled sample: scikit-image's "coffee" picture (RGB, 320 x 240) and a
copy warped by a smooth vortex of up to 6 px, with the exact flow as a KITTI 16-bit PNG.

IMG2(x + f(x)) = IMG1(x) (Middlebury's convention); pixels whose target leaves the frame are
marked invalid in the ground truth. Run from the repository root:

    python resources/samples/flow/make_sample.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))


def main() -> None:
    from app.io.flow_io import write_kitti_png
    from app.io.image_io import write_image
    from gpu_kernels.flow.synthetic import synthetic_pair

    p = synthetic_pair("vortex", size=(240, 320), magnitude=6.0, image="coffee", gray=False)
    to8 = lambda x: np.clip(np.rint(x * 255), 0, 255).astype(np.uint8)  # noqa: E731
    write_image(HERE / "frame1.png", to8(p.img1))
    write_image(HERE / "frame2.png", to8(p.img2))
    write_kitti_png(HERE / "flow_gt.png", p.flow, p.valid)
    for f in ("frame1.png", "frame2.png", "flow_gt.png"):
        print(f, (HERE / f).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
