import sys, glob, numpy as np, imageio.v3 as iio
sys.path.insert(0, '/work/main')
from gpu_kernels.imseg.contours import segment_contours
p = sorted(glob.glob('/work/shared/data/bsds500/images/*.jpg'))[9]
im = iio.imread(p); print(p)
for merge in ("hybrid", "learned"):
    cs = np.round(np.arange(2.8, 3.6, 0.05), 2)
    print(merge, [(float(c), int(np.unique(segment_contours(im, coarseness=float(c), merge=merge, features=False, device="cpu").labels).size)) for c in cs])
