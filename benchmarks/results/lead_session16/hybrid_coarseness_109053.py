"""Lead, session 16: the segment count of image 109053 over coarseness 2.8-3.6 with the hybrid and learned merges (CPU)."""
import glob
import pathlib
import sys

import imageio.v3 as iio
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from gpu_kernels.imseg.contours import segment_contours  # noqa: E402

p = sorted(glob.glob(str(ROOT.parent / "shared/data/bsds500/images/*.jpg")))[9]
im = iio.imread(p)
print(p)
for merge in ("hybrid", "learned"):
    cs = np.round(np.arange(2.8, 3.6, 0.05), 2)
    print(merge, [(float(c), int(np.unique(segment_contours(im, coarseness=float(c), merge=merge, features=False,
                                                            device="cpu").labels).size)) for c in cs])
