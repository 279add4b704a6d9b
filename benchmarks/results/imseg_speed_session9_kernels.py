"""Record (session 9; moved here in session 10 from benchmarks/): it toggles the old-kernel switches
that session 10 removed, so it runs only in a checkout of 75fe3a8, as benchmarks/imseg_speed9_kernels.py.

Session 9: GPU time of single k-means-pipeline kernels (CUDA events, ``--rep`` launches queued
back to back, median of 3 batches; functions of several launches, with allocations, are host-bound
at 512^2), to find what bounds them: the feature sums (old kernels, block-table kernels by pixels a
thread), the codes kernels by pixels a thread, and k-means by iterations. Session 9's calls 2 and 4
also timed a first 64-bit table kernel (feat_moments_smem) and diagnostic builds of it (FS_DIAG):
both removed after (code at 798ed1f); their rows are in benchmarks/results/imseg_speed_session9.md.

    python benchmarks/imseg_speed9_kernels.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import median

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.imseg_profile import natural_image  # noqa: E402


def gpu_us(fn, rep: int) -> float:
    """GPU microseconds a call: ``rep`` calls queued back to back between two events (the
    host queues ahead of the GPU), the median of 3 such batches."""
    import cupy as cp

    fn()
    ts = []
    for _ in range(3):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        for _ in range(rep):
            fn()
        b.record()
        b.synchronize()
        ts.append(1e3 * cp.cuda.get_elapsed_time(a, b) / rep)
    return median(ts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rep", type=int, default=50)
    ap.add_argument("--size", default="512x512")
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)

    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import color as C
    from gpu_kernels.imseg import features as F
    from gpu_kernels.imseg import kmeans as K
    from gpu_kernels.imseg._util import NULL, grid, kernel
    from gpu_kernels.imseg.api import segment

    be = get_backend("cuda")
    w, h = (int(v) for v in a.size.split("x"))
    n = h * w
    img = natural_image(h, w)
    seg = segment(img, method="kmeans", device=be, features=False)
    R = seg.n_regions
    labels_d = cp.asarray(seg.labels.astype(np.int32)).ravel()
    img_d = cp.asarray(img)
    out: dict = {"size": a.size, "regions": R}

    def row(name, us):
        out[name] = us
        print(f"== {name:44s} {us:8.1f} us", flush=True)

    # ---- features: the whole features_device, old and new, by chunk
    for smem, chunks in ((False, (16,)), (True, (2, 4, 8, 16, 32))):
        for ch in chunks:
            F.SMEM, F.SMEM_CHUNK = smem, ch
            row(f"features_device smem={smem} chunk={ch}",
                gpu_us(lambda: F.features_device(be, labels_d, R, h, w, img_d, 3, "runs", True), a.rep))
    # ---- pass 1 alone (all flags) and the merge's form (FT_LAB)
    for smem, chunks in ((False, (16,)), (True, (2, 4, 8, 16))):
        for ch in chunks:
            F.SMEM, F.SMEM_CHUNK = smem, ch
            row(f"pass1 all smem={smem} chunk={ch}", gpu_us(
                lambda: F.pass1_device(be, labels_d, R, h, w, img_d, 3, F.FT_BBOX | F.FT_RAW | F.FT_LAB), a.rep))
            row(f"pass1 lab (merge, R0=n) smem={smem} chunk={ch}", gpu_us(
                lambda: F.pass1_device(be, labels_d, n, h, w, img_d, 3, F.FT_LAB), a.rep))
    # ---- moments kernels alone
    F.SMEM, F.SMEM_CHUNK = True, 8
    anchor = cp.zeros(2 * R, cp.int64)
    anchor[:] = cp.asarray(np.repeat(np.array([[h // 2, w // 2]]), R, 0).ravel())
    macc = cp.zeros(32 * R, cp.uint64)
    f_old = kernel(be, "imseg_features.cu", "feat_moments_exact", options=C.CUDA_OPTIONS)
    row("moments_exact (old) chunk 16", gpu_us(
        lambda: f_old(grid(-(-n // 16), 256), (256,), (labels_d, np.int64(n), np.int32(w), NULL, anchor, macc)),
        a.rep))
    fd = kernel(be, "imseg_features.cu", "feat_moments_digits", options=C.CUDA_OPTIONS)
    for ch in (4, 8, 16):
        row(f"moments_digits chunk={ch}", gpu_us(
            lambda ch=ch: fd(grid(-(-n // ch), 256), (256,),
                             (labels_d, np.int64(n), np.int32(w), np.int32(ch), anchor, macc)), a.rep))
    # ---- codes
    hist = cp.zeros(1 << 15, cp.uint32)
    C.CODES_SMEM = False
    row("codes old (8 a thread)", gpu_us(lambda: C.codes_device(be, img_d, n, 3, 5, hist=hist), a.rep))
    C.CODES_SMEM = True
    for ch in (1, 2, 4, 8):
        C.CODES_CHUNK = ch
        row(f"codes smem chunk={ch}", gpu_us(lambda: C.codes_device(be, img_d, n, 3, 5, hist=hist), a.rep))
    C.CODES_CHUNK = 2
    # ---- k-means by iterations (codes kept, k-means on copies)
    hist.fill(0)
    codes = C.codes_device(be, img_d, n, 3, 5, hist=hist)
    for f32 in (False, True):
        K.FUSED32 = f32
        for it in (0, 1, 3):
            row(f"kmeans_device fused32={f32} iterations={it}", gpu_us(
                lambda it=it: K.kmeans_device(be, codes.copy(), h, w, 5, 64, it, 18.0, hist, "histogram"), a.rep))
    row("codes.copy() alone", gpu_us(lambda: codes.copy(), a.rep))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
