"""Lead, session 16: the coarseness control of merge="hybrid" and "contour" on the 20 shared BSDS images (CPU):
segment counts over a coarseness sweep (monotone?) and exact n_segments. Writes hybrid_coarseness.json."""
import glob
import json
import pathlib
import sys

import imageio.v3 as iio
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from gpu_kernels.imseg.contours import segment_contours  # noqa: E402

IMGS = sorted(glob.glob(str(ROOT.parent / "shared/data/bsds500/images/*.jpg")))[:20]
CO = [0.0, 1.0, 2.0, 3.0, 3.3, 4.0, 5.0, 6.0, 8.0, 10.0]
NS = [2, 10, 30, 150, 200, 300, 2000]


def count(im, **kw) -> int:
    return int(np.unique(segment_contours(im, features=False, device="cpu", **kw).labels).size)


def main() -> None:
    out = {}
    for merge in ("hybrid", "contour"):
        mono_bad, exact_bad, rows = 0, [], []
        for p in IMGS:
            im = iio.imread(p)
            cnt = [count(im, coarseness=c, n_segments=0, merge=merge) for c in CO]
            mono_bad += any(b > a for a, b in zip(cnt, cnt[1:], strict=False))
            rows.append(cnt)
            exact_bad += [(p.split("/")[-1], n, k) for n in NS if (k := count(im, n_segments=n, merge=merge)) != n]
        out[merge] = dict(counts=rows, non_monotone_images=mono_bad, n_segments_mismatch=exact_bad)
        print(merge, "non-monotone images:", mono_bad, "n_segments mismatches:", exact_bad[:10])
        print(" median counts per coarseness", dict(zip(CO, np.median(np.array(rows), 0).tolist(), strict=True)))
    json.dump(out, open(pathlib.Path(__file__).with_suffix(".json"), "w"))


if __name__ == "__main__":
    main()
