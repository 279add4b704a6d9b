"""Write the bundled 3-D echo sample: a small synthetic sequence of a beating left ventricle.

``lv_synthetic.npz`` holds ``frames`` (T, Z, Y, X) uint8 (frame 0 end-diastole), ``spacing``
(z, y, x) in mm, ``params`` (the generator's settings as JSON), and the exact ground truth:
``gt_III_JJJ`` (3, Z, Y, X) for every consecutive pair (float16: 1e-3 voxel is far below any
error measured with it) and the myocardium masks ``myocardium_III`` (Z, Y, X) bool. The
loader (:func:`app.io.volume_io.read_sequence`) reads them; it never runs the generator.

Run from the repository root::

    python resources/samples/echo/make_sample.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from gpu_kernels.echo.synthetic import make_sequence  # noqa: E402

SIZE = 48
FRAMES = 4
SEED = 2024
SPACING = (0.8, 0.8, 0.8)
PARAMS = dict(size=SIZE, frames=FRAMES, seed=SEED, spacing=SPACING)


def regenerate(device=None):
    """The sample's :class:`~gpu_kernels.echo.synthetic.SyntheticEcho` (with ``displacement``)."""
    return make_sequence(SIZE, frames=FRAMES, seed=SEED, spacing=SPACING, device=device)


def main(out: Path = HERE / "lv_synthetic.npz") -> Path:
    seq = regenerate("cpu")
    truth = {f"gt_{k:03d}_{k + 1:03d}": seq.displacement(k, k + 1, device="cpu").astype(np.float16)
             for k in range(FRAMES - 1)}
    masks = {f"myocardium_{t:03d}": np.asarray(seq.myocardium_mask(t, device="cpu"), bool) for t in range(FRAMES)}
    np.savez_compressed(out, frames=seq.frames, spacing=np.asarray(SPACING), params=json.dumps(PARAMS), **truth,
                        **masks)
    print(f"{out}: {out.stat().st_size / 1024:.0f} KiB, frames {seq.frames.shape}")
    return out


if __name__ == "__main__":
    main()
