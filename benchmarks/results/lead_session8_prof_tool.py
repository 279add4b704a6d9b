"""The lead's session-8 device check: the imseg tool's run against the library call at 512², both
methods, 5 rounds of 200 calls each, medians in ms (run from the repository root on a CUDA host:
``python benchmarks/results/lead_session8_prof_tool.py``)."""

import sys
import time
from statistics import median

import cupy as cp

sys.path.insert(0, ".")
sys.path.insert(0, "benchmarks")

from imseg_profile import natural_image  # noqa: E402

from app.tools import imseg  # noqa: E402
from gpu_kernels.backend import get_backend  # noqa: E402
from gpu_kernels.imseg.api import segment  # noqa: E402


def timed(fn, n=200):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        cp.cuda.get_current_stream().synchronize()
        ts.append(time.perf_counter() - t0)
    return 1e3 * median(ts)


def main():
    be = get_backend("cuda")
    img = natural_image(512, 512)
    data = imseg.ImageData(None, img)
    for m in ("kmeans", "contours"):
        p = imseg.PARAMS.validate({"method": m})

        def lib(m=m):
            return segment(img, method=m, device=be)

        def tool(p=p):
            return imseg.run(data, p, device=be)

        for f in (lib, tool):
            for _ in range(20):
                f()
        for r in range(5):
            print(m, "round", r, f"library ms {timed(lib):.3f}", f"tool ms {timed(tool):.3f}", flush=True)


if __name__ == "__main__":
    main()
