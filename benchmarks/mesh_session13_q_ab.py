"""Session 13 (mesh-q, issue 22): a one-process A/B, end to end from the file (read + ``segment_mesh``), of an
integer k's learned merges ordered by the model's prediction (``learned``, session 11's order) and by the expected
change of the Rand Index (``gain``, today's :data:`gpu_kernels.mesh.learned.POLICY`), the shipped model in both;
configurations interleaved round by round (the order alternates), best and median of the rounds after a warm-up of
each. k = "auto" is untouched by the policy (its labels must be equal).

    python benchmarks/mesh_session13_q_ab.py A.off B.off --device cuda --k auto,6,12 --rounds 5 --json OUT.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import learned as _ln  # noqa: E402
from gpu_kernels.mesh import segment as sg  # noqa: E402

CONFIGS = ("learned", "gain")


def once(path: str, cfg: str, k, device: str):
    old = _ln.POLICY
    _ln.POLICY = cfg
    try:
        t0 = time.perf_counter()
        v, f = read_mesh(path)
        seg = sg.segment_mesh(v, f, k=k, device=device)
        return time.perf_counter() - t0, seg
    finally:
        _ln.POLICY = old


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--k", default="auto,6,12")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    _ln.MODEL = None  # the shipped model
    rows = []
    for path in args.files:
        for kk in args.k.split(","):
            k = kk if kk == "auto" else int(kk)
            times = {c: [] for c in CONFIGS}
            labels = {c: once(path, c, k, args.device)[1].labels for c in CONFIGS}  # warm-up
            for r in range(args.rounds):
                for c in (CONFIGS if r % 2 == 0 else CONFIGS[::-1]):
                    times[c].append(once(path, c, k, args.device)[0])
            row = {"file": Path(path).name, "k": kk, "device": args.device,
                   "labels_equal": bool(labels["learned"].shape == labels["gain"].shape
                                        and (labels["learned"] == labels["gain"]).all()),
                   **{f"{c}_best_ms": 1e3 * min(t) for c, t in times.items()},
                   **{f"{c}_median_ms": 1e3 * statistics.median(t) for c, t in times.items()}}
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
