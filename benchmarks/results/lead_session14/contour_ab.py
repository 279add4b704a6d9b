"""Lead, session 14: the default (contour) merge's kernel with its new bounds (06180d1) against the kernel before
(7b834d8's imseg_contours.cu, copied in as imseg_contours_s13.cu), one process, end to end (labels and features)
through segment_contours on benchmarks/imseg.py's images, alternating; labels must be equal.
Run from the repo root on the device: python benchmarks/results/lead_session14/contour_ab.py OLD.cu ROUNDS"""
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from imseg import natural_image  # noqa: E402

from gpu_kernels.imseg import contours as C  # noqa: E402

old_src = Path(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
dst = Path("gpu_kernels/cuda") / old_src.name
shutil.copy(old_src, dst)
try:
    import cupy as cp

    res = {}
    for h, w in ((512, 512), (1080, 1920)):
        img = natural_image(h, w)
        arms = {"new": "imseg_contours.cu", "old": old_src.name}
        for src in arms.values():   # warm up (compiles) and check the labels
            C._SRC = src
            C.segment_contours(img, device="cuda")
        C._SRC = arms["new"]
        a = C.segment_contours(img, device="cuda")
        C._SRC = arms["old"]
        b = C.segment_contours(img, device="cuda")
        same = np.array_equal(np.asarray(a.labels), np.asarray(b.labels))
        t = {k: [] for k in arms}
        for _ in range(rounds):
            for k, src in arms.items():
                C._SRC = src
                cp.cuda.Device().synchronize()
                t0 = time.perf_counter()
                C.segment_contours(img, device="cuda")
                cp.cuda.Device().synchronize()
                t[k].append((time.perf_counter() - t0) * 1e3)
        res[f"{h}x{w}"] = {k: (float(np.median(v)), float(np.min(v))) for k, v in t.items()}
        print(f"{h}x{w}: labels equal {same}; median / best ms: new {res[f'{h}x{w}']['new'][0]:.2f} / "
              f"{res[f'{h}x{w}']['new'][1]:.2f}, old {res[f'{h}x{w}']['old'][0]:.2f} / {res[f'{h}x{w}']['old'][1]:.2f}",
              flush=True)
finally:
    C._SRC = "imseg_contours.cu"
    dst.unlink(missing_ok=True)
