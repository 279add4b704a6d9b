"""Issue 22 (session 8): A/B of the mesh speed changes in one process, end to end from the file
with the defaults, configurations interleaved round by round (a process's own speed drifts by
tens of ms between processes on the device host, so separate processes are no A/B):

- ``new``: this tree;
- ``no-early``: without the early simplification thread (``segment.simplify_in_background`` refused);
- ``fast-thread``: fast-simplification alone on a thread too (``simplify.BACKGROUND_FAST``);
- ``old-cut``: the boundary cut's maximum flow as one problem (``_numba_cut._dinic_side``).

The labels' and colours' SHA-1 must be the same in every configuration.

Example (the device call 3 of session 8)::

    python benchmarks/mesh_speed8_ab.py 101.off 281.off cuda 5
    taskset -c 0,1 python benchmarks/mesh_speed8_ab.py 101.off 281.off cpu 3
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import timed_segmentation  # noqa: E402

from gpu_kernels.mesh import _numba_cut as nc  # noqa: E402
from gpu_kernels.mesh import segment  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402

REAL_START, REAL_CUT = segment.simplify_in_background, nc.min_cut_source_side


def _no_early(*a, **kw):
    raise RuntimeError("off")


CONFIGS = {
    "new": {},
    "no-early": {"start": _no_early},
    "fast-thread": {"bg_fast": True},
    "old-cut": {"cut": nc._dinic_side},
}


def _setup(c: dict) -> None:
    segment.simplify_in_background = c.get("start", REAL_START)
    simp.BACKGROUND_FAST = c.get("bg_fast", False)
    nc.min_cut_source_side = c.get("cut", REAL_CUT)


def _once(path: str, dev: str, cfg: str, shas: dict) -> float:
    _setup(CONFIGS[cfg])
    dt, shas[cfg] = timed_segmentation(path, dev)
    return dt


def main(argv: list[str]) -> int:
    small, large = argv[0], argv[1]
    dev = argv[2] if len(argv) > 2 else "cuda"
    rounds = int(argv[3]) if len(argv) > 3 else 5
    jobs = ([("fast", small), ("fast+pymeshlab", small), ("fast+pymeshlab", large)] if dev == "cuda"
            else [("fast+pymeshlab", large)])
    try:
        for sname, path in jobs:
            simp.SIMPLIFIER = sname
            cfgs = [c for c in CONFIGS if c != "fast-thread" or sname == "fast"]
            if dev != "cuda":
                cfgs = ["new", "no-early"]
            times: dict = {c: [] for c in cfgs}
            shas: dict = {}
            for c in cfgs:
                _once(path, dev, c, shas)  # warm-up
            for r in range(rounds):
                for c in (cfgs if r % 2 == 0 else cfgs[::-1]):
                    times[c].append(_once(path, dev, c, shas))
            for c in cfgs:
                print(f"ab3 {dev} {Path(path).name} {sname:15s} {c:12s} min {1e3 * min(times[c]):6.1f} ms  "
                      f"median {1e3 * statistics.median(times[c]):6.1f} ms  sha {shas[c]}", flush=True)
    finally:
        _setup({})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
