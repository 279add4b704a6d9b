import time, cProfile, pstats, sys
from statistics import median
import numpy as np, cupy as cp
sys.path.insert(0, ".")
from app.tools import imseg
from gpu_kernels.backend import get_backend
from gpu_kernels.imseg.api import segment
sys.path.insert(0, "benchmarks")
from imseg_profile import natural_image
be = get_backend("cuda")
img = natural_image(512, 512)
data = imseg.ImageData(None, img)
for m in ("kmeans", "contours"):
    p = imseg.PARAMS.validate({"method": m})
    lib = lambda: segment(img, method=m, device=be)
    tool = lambda: imseg.run(data, p, device=be)
    for f in (lib, tool): 
        for _ in range(20): f()
    def tm(f, n=200):
        ts=[]
        for _ in range(n):
            t0=time.perf_counter(); f(); cp.cuda.get_current_stream().synchronize(); ts.append(time.perf_counter()-t0)
        return 1e3*median(ts)
    for r in range(5):
        print(m, "round", r, "library ms %.3f" % tm(lib), "tool ms %.3f" % tm(tool), flush=True)
