import sys, glob, json, numpy as np, imageio.v3 as iio
sys.path.insert(0, '/work/main')
from gpu_kernels.imseg.contours import segment_contours
imgs = sorted(glob.glob('/work/shared/data/bsds500/images/*.jpg'))[:20]
CO = [0.0, 1.0, 2.0, 3.0, 3.3, 4.0, 5.0, 6.0, 8.0, 10.0]
NS = [2, 10, 30, 150, 200, 300, 2000]
out = {}
for merge in ("hybrid", "contour"):
    mono_bad = 0; exact_bad = []
    rows = []
    for p in imgs:
        im = iio.imread(p)
        cnt = []
        for c in CO:
            r = segment_contours(im, coarseness=c, n_segments=0, merge=merge, features=False, device="cpu")
            lab = r.labels if hasattr(r, "labels") else r[0]
            cnt.append(int(np.unique(lab).size))
        if any(b > a for a, b in zip(cnt, cnt[1:])):
            mono_bad += 1
        rows.append(cnt)
        for n in NS:
            r = segment_contours(im, n_segments=n, merge=merge, features=False, device="cpu")
            lab = r.labels if hasattr(r, "labels") else r[0]
            k = int(np.unique(lab).size)
            if k != n:
                exact_bad.append((p.split('/')[-1], n, k))
    out[merge] = dict(counts=rows, non_monotone_images=mono_bad, n_segments_mismatch=exact_bad)
    print(merge, "non-monotone images:", mono_bad, "n_segments mismatches:", exact_bad[:10])
    print(" median counts per coarseness", dict(zip(CO, np.median(np.array(rows), 0).tolist())))
json.dump(out, open('/tmp/lead16/coarse.json', 'w'))
