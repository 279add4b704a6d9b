"""Lead, session 28: the cost of ``segment.MEMO_FIXED_BATCHES`` end to end from the file, one process, arms off / on
alternating each round (the first WARM rounds dropped): an integer k fresh (it now clusters its seven starts as two
batches, 24/30/36 and 20/42/50/60, instead of one) and the default k = "auto" (the same batch as before). Prints each
arm's median and the labels' SHA-1s (the same in both arms expected).

    python benchmarks/results/lead_session28/memo_speed.py 101.off 281.off --k 6 --rounds 13 --device cuda
"""

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import segment  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--k", default="6")
    ap.add_argument("--rounds", type=int, default=13)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    for path in a.meshes:
        for k in (int(a.k), "auto"):
            t = {0: [], 1: []}
            shas = {0: set(), 1: set()}
            for r in range(a.rounds + a.warm):
                for arm in ((0, 1) if r % 2 == 0 else (1, 0)):
                    segment.MEMO_FIXED_BATCHES = bool(arm)
                    t0 = time.perf_counter()
                    v, f = read_mesh(path)
                    seg = segment.segment_mesh(v, f, k=k, device=a.device)
                    dt = time.perf_counter() - t0
                    shas[arm].add(hashlib.sha1(np.asarray(seg.labels, np.int64).tobytes()).hexdigest()[:12])
                    if r >= a.warm:
                        t[arm].append(dt)
            d = np.array(t[1]) - np.array(t[0])
            print(f"memo28 {Path(path).name} {seg.labels.size} faces k={k}: off {1e3 * np.median(t[0]):.1f} ms, on "
                  f"{1e3 * np.median(t[1]):.1f} ms median ({len(t[0])} rounds), paired {1e3 * np.median(d):+.1f} ms; "
                  f"labels off {sorted(shas[0])} on {sorted(shas[1])}", flush=True)
    segment.MEMO_FIXED_BATCHES = True
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
