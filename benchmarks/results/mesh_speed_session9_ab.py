"""(A record of session 9: it runs on that session's code, e.g. ``git worktree add /tmp/s9 20114c9``;
session 10 removed ``thickness.FUSED_NEAREST`` and the CuPy product path it switched to.)

Issue 22 (session 9): A/B of the 17k speed changes in one process, end to end from the file
with the defaults, configurations interleaved round by round (separate processes on the device
host drift by tens of ms, so only a one-process A/B isolates a change):

- ``head``: the code at the session's start (``thickness.FUSED_NEAREST = False``,
  ``thickness.LOOP_ON_DEVICE = False``);
- ``fused``: the thickness's nearest-sample search in one kernel per chunk and step;
- ``new``: the thickness's whole shrinking-ball loop in one kernel (today's default).

Calls 1 and 2 of session 9 (commits 1b8dc27 and 62d2f91) also ran session 8b's early nearest-face
search off (``segment.NEAREST_EARLY = False``; configurations ``nearoff``, ``new_nearoff``) and,
in call 1, the working thickness on a thread beside the APSP. Neither gained; both were removed.
Their runs are in benchmarks/results/mesh_speed_session9_call{1,2}_log.txt.

The labels' and colours' SHA-1 must be the same in every configuration. After the rounds, one
profiled run per configuration named in ``--profile`` prints perf_counter pieces (inclusive
wall times of the wrapped functions, summed over threads).

Example (device call of session 9)::

    python benchmarks/results/mesh_speed_session9_ab.py (session 9 code only) 101.off 281.off --rounds 7
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import segment, thickness  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402

CONFIGS = {
    "head": {"fused": False, "loop": False},
    "fused": {"fused": True, "loop": False},
    "new": {"fused": True, "loop": True},
}
REAL = {"fused": thickness.FUSED_NEAREST, "loop": thickness.LOOP_ON_DEVICE}
# (module, attribute) timed in the profiled runs
WRAP = [(segment, "prepare_mesh"), (segment, "working_graph"), (segment, "with_thickness"),
        (thickness, "face_thickness"), (segment, "graph_distances"), (segment, "distance_orders"),
        (segment, "kd_nearest"), (segment, "cluster_prepared"), (segment, "_settle"), (segment, "cut_clustered"),
        (segment, "_recut_full"), (segment._bd, "part_memberships"), (segment, "blend_face_colors")]


def _setup(c: dict) -> None:
    thickness.FUSED_NEAREST = c["fused"]
    thickness.LOOP_ON_DEVICE = c["loop"]


def _once(path: str, dev: str, cfg: str, shas: dict) -> float:
    _setup(CONFIGS[cfg])
    t0 = time.perf_counter()
    v, f = read_mesh(path)
    seg = segment.segment_mesh(v, f, device=dev)
    dt = time.perf_counter() - t0
    shas[cfg] = hashlib.sha1(seg.labels.tobytes() + seg.face_colors.tobytes()).hexdigest()[:12]
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
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--simplifier", default="auto")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of " + ", ".join(CONFIGS))
    ap.add_argument("--profile", default="head,new", help="configurations profiled once after the rounds ('': none)")
    args = ap.parse_args(argv)
    simp.SIMPLIFIER = args.simplifier
    cfgs = args.configs.split(",")
    print(f"ab9 simplifiers available {simp.available_simplifiers()} used {args.simplifier}", flush=True)
    try:
        for path in args.meshes:
            times: dict = {c: [] for c in cfgs}
            shas: dict = {}
            for c in cfgs:
                _once(path, args.device, c, shas)  # warm-up (the kernel's compile, the caches)
            for r in range(args.rounds):
                for c in (cfgs if r % 2 == 0 else cfgs[::-1]):
                    times[c].append(_once(path, args.device, c, shas))
            for c in cfgs:
                t = times[c]
                print(f"ab9 {args.device} {Path(path).name} {c:11s} min {1e3 * min(t):6.1f} ms  "
                      f"median {1e3 * statistics.median(t):6.1f} ms  max {1e3 * max(t):6.1f} ms  sha {shas[c]}  "
                      f"runs {' '.join(f'{1e3 * x:.1f}' for x in t)}", flush=True)
            print(f"ab9 {Path(path).name} same labels and colours in every configuration: "
                  f"{len(set(shas.values())) == 1}", flush=True)
            for c in filter(None, args.profile.split(",")):
                acc = _profiled(path, args.device, c)
                print(f"prof9 {Path(path).name} {c:11s} " + "  ".join(f"{k} {1e3 * v:.1f}" for k, v in acc.items()),
                      flush=True)
    finally:
        _setup(REAL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
