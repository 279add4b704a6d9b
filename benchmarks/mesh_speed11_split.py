"""Issue 22 (session 11): ``simplify.SPLIT_PRE`` alone: what ``prepare_mesh`` does up to the working mesh
(clean, the simplification started, the full dual graph built meanwhile, the working mesh waited for), with
fast-simplification's step and its clean-up on the calling thread (split) or the whole simplification on the
thread (whole). Per round: when pymeshlab's step started and when the working mesh was ready, after the start
(ms); best and median of ``--rounds``, the two alternated; the working meshes compared.

Example::

    python benchmarks/mesh_speed11_split.py 101.off 281.off --rounds 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.dualgraph import clean_mesh, dual_graph  # noqa: E402

_real = simp._simplify_pymeshlab
_T: dict = {}


def _timed(*a, **kw):
    _T["pml_start"] = time.perf_counter()
    out = _real(*a, **kw)
    _T["pml_end"] = time.perf_counter()
    return out


simp._simplify_pymeshlab = _timed


def once(v, f, split: bool):
    simp.SPLIT_PRE = split
    t0 = time.perf_counter()
    job = simp.simplify_in_background(v, f, 4000, None, fn=simp.simplify_mesh)
    t_main = time.perf_counter()
    dual_graph(v, f, delta=0.5, eta_convex=0.2, thickness=False)
    t_graph = time.perf_counter()
    vs, fs = job.result()
    t1 = time.perf_counter()
    simp.SPLIT_PRE = True
    return ({"pml_start": _T["pml_start"] - t0, "pml": _T["pml_end"] - _T["pml_start"], "ready": t1 - t0,
             "graph_done": t_graph - t0, "returned": t_main - t0}, vs.tobytes() + fs.tobytes())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meshes", nargs="+")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args(argv)
    for path in args.meshes:
        v, f = read_mesh(path)
        v, f, _, _ = clean_mesh(v, f)
        once(v, f, True)
        once(v, f, False)
        rows = {True: [], False: []}
        meshes = set()
        for r in range(args.rounds):
            for split in ((True, False) if r % 2 == 0 else (False, True)):
                t, m = once(v, f, split)
                rows[split].append(t)
                meshes.add(m)
        for split in (True, False):
            rs = rows[split]
            line = "  ".join(f"{key} {1e3 * min(x[key] for x in rs):6.1f} / {1e3 * statistics.median(x[key] for x in rs):6.1f}"
                             for key in ("returned", "pml_start", "graph_done", "pml", "ready"))
            print(f"split11 {Path(path).name} {'split' if split else 'whole'}  {line}  (ms, best / median of {args.rounds})")
        print(f"split11 {Path(path).name} one working mesh in every run: {len(meshes) == 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
