"""Issue 22 (session 25): an integer k's speed end to end from the file, before and after the ship of round hull24c's
model (the exact hull's union depth, a 22nd merge feature), in one process, arms alternating.

Arms:
- ``s20``: session 20's model (``--old-model``, the .npz of SHA-1 58288ec3...), the hull's columns off;
- ``s25``: the shipped model (f02e52a9... in session 25; fcb2985a... since session 26, with the seven starts of
  ``segment.K_STARTS``), ``HULL_FEATURE`` on (the exact hull), the compiled merge loop (the
  compiled hull fills the new pairs' depths between its rounds, Qhull where it cannot say);
- ``s25-numpy``: the same in the NumPy merge loop (what round hull24c ran): the same labels, its time for comparison;
- ``s25-five`` (session 26, with ``--five-model``): session 25's model (f02e52a9...) on the five starts 20-42, the
  compiled loop: what the seven starts cost. The ``s20`` arm takes the five starts too (its own configuration).

Each arm reads the file and runs :func:`gpu_kernels.mesh.segment_mesh` at ``--k``. The first ``--warm`` rounds of
every arm are not counted. Printed per mesh and arm: min, median and max ms, the labels' SHA-1 (one per arm, or the
test fails), and the exact depths' share: how many pairs Qhull filled and their ms (median over the rounds).

    python benchmarks/mesh_k_speed_session25.py 101.off 281.off --k 6 --old-model model_58288ec3.npz --device gpu
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import boundary as bd  # noqa: E402
from gpu_kernels.mesh import learned as ln  # noqa: E402
from gpu_kernels.mesh import segment  # noqa: E402

ARMS = ("s20", "s25", "s25-numpy", "s25-five")
#: the library's starts (read at import: the shipped seven since session 26) and session 20-25's five
SHIPPED_STARTS = segment.K_STARTS
FIVE_STARTS = (20, 24, 30, 36, 42)


class _FillClock:
    """Counts the exact depths the merges compute and their time: the pairs of the compiled loop's
    :meth:`gpu_kernels.mesh.learned._Hull.fill` calls and the NumPy loop's :meth:`~gpu_kernels.mesh.learned._Hull.
    pair_depth` calls (not those made inside a fill). Summed over the rows' threads. (Session 25's call 4 wrapped a
    ``pair_depth`` that the NumPy loop no longer called then, so its s25-numpy rows say 0 pairs; session 26 made
    ``pair_depth`` the one per-pair depth again.)"""

    def __init__(self):
        self.pairs = 0
        self.seconds = 0.0
        self._local = threading.local()

    def install(self):
        clock, real_pd, real_fill = self, ln._Hull.pair_depth, ln._Hull.fill

        def pair_depth(hull, p, q):
            if getattr(clock._local, "in_fill", False):
                return real_pd(hull, p, q)
            t = time.perf_counter()
            try:
                return real_pd(hull, p, q)
            finally:
                clock.pairs += 1
                clock.seconds += time.perf_counter() - t

        def fill(hull, table, need, *rest):
            t = time.perf_counter()
            clock._local.in_fill = True
            try:
                return real_fill(hull, table, need, *rest)
            finally:
                clock._local.in_fill = False
                clock.pairs += len(need)
                clock.seconds += time.perf_counter() - t

        ln._Hull.pair_depth = pair_depth
        ln._Hull.fill = fill

    def reset(self):
        self.pairs, self.seconds = 0, 0.0


def _arm(name: str, old, shipped, five=None) -> None:
    if name == "s20":
        ln._SHIPPED["k"] = old
        ln.HULL_FEATURE, bd.COMPILED_MERGE, segment.K_STARTS = False, True, FIVE_STARTS
    elif name == "s25-five":
        ln._SHIPPED["k"] = five
        ln.HULL_FEATURE, bd.COMPILED_MERGE, segment.K_STARTS = True, True, FIVE_STARTS
    else:
        ln._SHIPPED["k"] = shipped
        ln.HULL_FEATURE, bd.COMPILED_MERGE, segment.K_STARTS = True, name == "s25", SHIPPED_STARTS


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--k", type=int, default=6)
    ap.add_argument("--old-model", required=True, help="session 20's model (.npz, SHA-1 58288ec3...)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--five-model", default="", help="session 25's model (.npz, SHA-1 f02e52a9...): arm s25-five")
    ap.add_argument("--arms", default="")
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)
    arms = [x for x in (a.arms or ",".join(ARMS[:3] + (ARMS[3:] if a.five_model else ()))).split(",") if x]
    if "s25-five" in arms and not a.five_model:
        ap.error("arm s25-five needs --five-model")
    bad = [x for x in arms if x not in ARMS]
    if bad:
        ap.error(f"unknown arm(s) {bad}; the arms are {', '.join(ARMS)}")
    sha_old = hashlib.sha1(Path(a.old_model).read_bytes()).hexdigest()
    old = ln.TreeModel.from_npz(a.old_model)
    shipped = ln.shipped_model()
    five = ln.TreeModel.from_npz(a.five_model) if a.five_model else None
    print(f"k-speed25 old model {sha_old[:8]} device {a.device} k {a.k} rounds {a.rounds} (warm {a.warm}) arms {arms}",
          flush=True)
    clock = _FillClock()
    clock.install()
    out = {"k": a.k, "device": a.device, "old_model": sha_old, "meshes": {}}
    ok = True
    for path in a.meshes:
        rows = {x: {"ms": [], "sha": set(), "pairs": [], "fill_ms": []} for x in arms}
        for r in range(a.rounds + a.warm):
            for name in arms:
                _arm(name, old, shipped, five)
                clock.reset()
                t = time.perf_counter()
                v, f = read_mesh(path)
                seg = segment.segment_mesh(v, f, k=a.k, device=a.device)
                dt = time.perf_counter() - t
                if r >= a.warm:
                    row = rows[name]
                    row["ms"].append(1000.0 * dt)
                    row["sha"].add(hashlib.sha1(np.asarray(seg.labels, np.int32).tobytes()).hexdigest()[:12])
                    row["pairs"].append(clock.pairs)
                    row["fill_ms"].append(1000.0 * clock.seconds)
        name_m = Path(path).name
        out["meshes"][name_m] = {}
        for name in arms:
            row = rows[name]
            ms = row["ms"]
            print(f"k-speed25 {name_m} {name:10s} min {min(ms):7.1f} median {statistics.median(ms):7.1f} "
                  f"max {max(ms):7.1f} ms  sha {','.join(sorted(row['sha']))}  exact depths: "
                  f"{statistics.median(row['pairs']):.0f} pairs {statistics.median(row['fill_ms']):.1f} ms", flush=True)
            out["meshes"][name_m][name] = {"ms": ms, "sha": sorted(row["sha"]), "pairs": row["pairs"],
                                           "fill_ms": row["fill_ms"]}
            ok = ok and len(row["sha"]) == 1
        if "s25" in rows and "s25-numpy" in rows:
            same = rows["s25"]["sha"] == rows["s25-numpy"]["sha"]
            print(f"k-speed25 {name_m} compiled and NumPy loops, the same labels: {same}", flush=True)
            ok = ok and same
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    print(f"k-speed25 {'ok' if ok else 'FAILED: labels differ between rounds or loops'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
