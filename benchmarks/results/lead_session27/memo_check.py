"""Lead, session 27: does k = "auto" on a prepared mesh depend on what ran on it before? (Rounds starts26 and starts27
saw 7 / 9 of 1,824 k = "auto" rows differ between switch sets whose integer-k runs differ.) Per mesh: k = "auto" on a
fresh prepared mesh, k = "auto" after integer k 2, 6, 9 on another, and the one-shot call; the labels' SHA-1s.
The library already guarantees this (``segment.STARTS_OWN_BATCH``: the auto starts are clustered in a batch of their
own) and ``tests/mesh/test_quality7_batches.py`` asserts it on a synthetic mesh, CPU and GPU (``-m gpu``); this record
only repeats the check on the PSB meshes whose round rows differed. Run that test rather than this script.

    python benchmarks/results/lead_session27/memo_check.py OFF_DIR 384,64 [--device cuda] [--starts 20,24,...]
"""

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import segment  # noqa: E402


def sha(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(np.asarray(a, dtype=np.int64)).tobytes()).hexdigest()[:10]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("off_dir")
    ap.add_argument("ids")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--starts", default="")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    if a.starts:
        segment.K_STARTS = tuple(int(x) for x in a.starts.split(","))
    bad = 0
    for mid in (int(x) for x in a.ids.split(",")):
        v, f = read_mesh(Path(a.off_dir) / f"{mid}.off")
        for r in range(a.repeat):
            p1 = segment.prepare_mesh(v, f, device=a.device)
            a1 = sha(segment.segment_mesh(v, f, device=a.device, prepared=p1).labels)
            p2 = segment.prepare_mesh(v, f, device=a.device)
            for k in (2, 6, 9):
                segment.segment_mesh(v, f, k=k, device=a.device, prepared=p2)
            a2 = sha(segment.segment_mesh(v, f, device=a.device, prepared=p2).labels)
            a3 = sha(segment.segment_mesh(v, f, device=a.device).labels)
            same = a1 == a2 == a3
            bad += not same
            print(f"memo27 {a.device} {mid} rep {r} fresh {a1} after-integer-k {a2} one-shot {a3} "
                  f"{'same' if same else 'DIFFER'}", flush=True)
    print(f"memo27 {a.device} differing {bad}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
