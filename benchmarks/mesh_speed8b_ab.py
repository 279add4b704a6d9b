"""Issue 22 (session 8b): A/B of the 17k speed changes in one process, end to end from the file
with the defaults, configurations interleaved round by round (separate processes on the device
host drift by tens of ms, so only a one-process A/B isolates a change):

- ``head``: the code at the session's start (``segment.NEAREST_EARLY = False``: the path of
  before, unchanged);
- ``new``: the early nearest-face search on (a GPU backend only), today's default.

(Session 8b also timed a fused GPU kernel for the thickness search, ``fused`` / ``new`` with it:
no gain, removed after the session's last call; its runs are in
``benchmarks/results/mesh_speed_session8b*``, its code at commit a0d2612.)

The labels' and colours' SHA-1 must be the same in every configuration. After the rounds, one
profiled run of ``head`` and of ``new`` per mesh prints perf_counter pieces (inclusive wall
times of the wrapped functions; the nearest search's thread time is its own line).

Example (device call of session 8b)::

    python benchmarks/mesh_speed8b_ab.py 101.off 281.off --rounds 7
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import timed_segmentation  # noqa: E402

from gpu_kernels.mesh import segment, thickness  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402

CONFIGS = {
    "head": {"near": False},
    "new": {"near": "gpu"},
}
REAL_NEAR = segment.NEAREST_EARLY
# (module, attribute) timed in the profiled runs
WRAP = [(segment, "prepare_mesh"), (segment, "clean_mesh"), (segment, "dual_graph"), (segment, "working_graph"),
        (segment, "with_thickness"), (thickness, "face_thickness"), (segment, "graph_distances"),
        (segment, "distance_orders"), (segment, "kd_nearest"), (segment, "cluster_prepared"), (segment, "_settle"),
        (segment, "cut_clustered"), (segment, "_recut_full"), (segment._bd, "part_memberships"),
        (segment, "blend_face_colors")]


def _setup(c: dict) -> None:
    segment.NEAREST_EARLY = c["near"]


def _once(path: str, dev: str, cfg: str, shas: dict) -> float:
    _setup(CONFIGS[cfg])
    dt, shas[cfg] = timed_segmentation(path, dev)
    return dt


def _profiled(path: str, dev: str, cfg: str) -> dict:
    acc: dict = defaultdict(float)
    saved = []
    for mod, name in WRAP:
        fn = getattr(mod, name)
        saved.append((mod, name, fn))

        def wrapped(*a, _fn=fn, _name=name, **kw):
            t = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                acc[_name] += time.perf_counter() - t
        setattr(mod, name, functools.wraps(fn)(wrapped))
    try:
        acc["total"] = _once(path, dev, cfg, {})
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)
    return acc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("small")
    ap.add_argument("large")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--simplifier", default="fast+pymeshlab")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of " + ", ".join(CONFIGS))
    ap.add_argument("--profiles", type=int, default=3, help="profiled runs of head and new (best kept; 0: none)")
    args = ap.parse_args(argv)
    simp.SIMPLIFIER = args.simplifier
    cfgs = args.configs.split(",")
    try:
        for path in (args.small, args.large):
            times: dict = {c: [] for c in cfgs}
            shas: dict = {}
            for c in cfgs:
                _once(path, args.device, c, shas)  # warm-up (the kernel's compile, the caches)
            for r in range(args.rounds):
                for c in (cfgs if r % 2 == 0 else cfgs[::-1]):
                    times[c].append(_once(path, args.device, c, shas))
            for c in cfgs:
                t = times[c]
                print(f"ab8b {args.device} {Path(path).name} {args.simplifier} {c:8s} min {1e3 * min(t):6.1f} ms  "
                      f"median {1e3 * statistics.median(t):6.1f} ms  max {1e3 * max(t):6.1f} ms  sha {shas[c]}  "
                      f"runs {' '.join(f'{1e3 * x:.1f}' for x in t)}", flush=True)
            for c in ("head", "new") if args.profiles > 0 else ():
                best = None
                for _ in range(args.profiles):
                    acc = _profiled(path, args.device, c)
                    if best is None or acc["total"] < best["total"]:
                        best = acc
                print(f"prof8b {Path(path).name} {c:5s} " + "  ".join(f"{k} {1e3 * v:.1f}" for k, v in best.items()),
                      flush=True)
    finally:
        _setup({"near": REAL_NEAR})
    return 0


if __name__ == "__main__":
    sys.exit(main())
