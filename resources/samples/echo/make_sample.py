"""Write the bundled 3-D echo sample: a small synthetic sequence of a beating left ventricle.

``lv_synthetic.npz`` holds ``frames`` (T, Z, Y, X) uint8 (frame 0 end-diastole), ``spacing``
(z, y, x) in mm and ``params`` (the generator's settings as JSON). The exact ground-truth
motion is not stored: :func:`regenerate` rebuilds the sequence (deterministic) and gives it.

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
    np.savez_compressed(out, frames=seq.frames, spacing=np.asarray(SPACING), params=json.dumps(PARAMS))
    print(f"{out}: {out.stat().st_size / 1024:.0f} KiB, frames {seq.frames.shape}")
    return out


if __name__ == "__main__":
    main()
