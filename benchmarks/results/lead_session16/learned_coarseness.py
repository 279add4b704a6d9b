"""Lead, session 16: the learned and hybrid merges' segment counts over the coarseness range on the 20 shared BSDS
images (CPU), after the τ map below the default became τ₀ c / 3.3: monotone? what range? Writes learned_coarseness.json."""
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
CO = [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.3, 4.0, 5.0, 6.0, 8.0, 10.0]


def main() -> None:
    out = {}
    for merge in sys.argv[1:] or ("learned", "hybrid"):
        rows = []
        for p in IMGS:
            im = iio.imread(p)
            rows.append([int(np.unique(segment_contours(im, coarseness=c, merge=merge, features=False,
                                                        device="cpu").labels).size) for c in CO])
        bad = [i for i, r in enumerate(rows) if any(b > a for a, b in zip(r, r[1:], strict=False))]
        out[merge] = dict(coarseness=CO, counts=rows, non_monotone=[IMGS[i].split("/")[-1] for i in bad])
        a = np.array(rows)
        print(merge, "non-monotone:", out[merge]["non_monotone"], flush=True)
        print("  median", dict(zip(CO, np.median(a, 0).tolist(), strict=True)))
        print("  min   ", a.min(0).tolist(), "\n  max   ", a.max(0).tolist(), flush=True)
    json.dump(out, open(pathlib.Path(__file__).with_suffix(".json"), "w"))


if __name__ == "__main__":
    main()
