"""Issue 22 (session 7): time of the simplification step alone, per candidate, on this CPU.

For each mesh (read and cleaned as segment_mesh does) and each candidate, the process time of
``simplify_mesh`` + the clean that follows it, min of ``--repeat`` runs; also pymeshlab's share.
Candidates (``--cands``): ``fast``, ``pf<X>`` (fast to X x the target, then pymeshlab; ``pf3`` is
today's ``fast+pymeshlab``), ``pf<X>n0`` (the same with pymeshlab's preservenormal off); a suffix
``@<agg>`` sets fast-simplification's aggressiveness (``fast@1``, ``pf1.5@1``; default ``FAST_AGG``).

    python benchmarks/mesh_simplify_session7_time.py .carry-ms6/101.off .carry-ms6/281.off --repeat 5
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import simplify as S  # noqa: E402
from gpu_kernels.mesh.dualgraph import clean_mesh  # noqa: E402


def candidate(name: str):
    """``(method, PRE_FACTOR, PRESERVE_NORMAL)`` of a candidate name."""
    if name == "fast":
        return "fast", S.PRE_FACTOR, S.PRESERVE_NORMAL
    if name == "pymeshlab":
        return "pymeshlab", S.PRE_FACTOR, S.PRESERVE_NORMAL
    if name.startswith("pf"):
        body = name[2:]
        pn = not body.endswith("n0")
        return "fast+pymeshlab", float(body.removesuffix("n0")), pn
    raise SystemExit(f"unknown candidate {name!r}")


def simplify_with(name, v, f, target, salt=None, zorder=True):
    """``simplify_mesh`` with a candidate's settings (the module's constants restored after), in the order the
    arrays list the mesh (``CANONICAL_ORDER`` off, as sessions 1-20: the quality rounds' judging draws are the
    mesh in a seeded shuffled order, each standing for another listing of an unseen mesh). ``salt`` (session 22): an
    int turns ``CANONICAL_ORDER`` on with ``CANONICAL_SALT`` = salt (a draw of the canonical order) and
    ``CANONICAL_ZORDER`` = ``zorder``."""
    name, _, agg = name.partition("@")
    method, pf, pn = candidate(name)
    old = S.PRE_FACTOR, S.PRESERVE_NORMAL, S.FAST_AGG, S.CANONICAL_ORDER, S.CANONICAL_SALT, S.CANONICAL_ZORDER
    S.PRE_FACTOR, S.PRESERVE_NORMAL, S.CANONICAL_ZORDER = pf, pn, bool(zorder)
    S.CANONICAL_ORDER, S.CANONICAL_SALT = (False, 0) if salt is None else (True, int(salt))
    if agg:
        S.FAST_AGG = float(agg)
    try:
        return S.simplify_mesh(v, f, target, method=method)
    finally:
        S.PRE_FACTOR, S.PRESERVE_NORMAL, S.FAST_AGG, S.CANONICAL_ORDER, S.CANONICAL_SALT, S.CANONICAL_ZORDER = old


def time_one(name, v, f, target, repeat):
    parts = {"total": [], "pymeshlab": []}
    orig = S._simplify_pymeshlab

    def timed(*a):
        t = time.process_time()
        r = orig(*a)
        parts["pymeshlab"][-1] += time.process_time() - t
        return r

    S._simplify_pymeshlab = timed
    try:
        for _ in range(repeat):
            parts["pymeshlab"].append(0.0)
            t = time.process_time()
            vs, fs = simplify_with(name, v, f, target)
            vs, fs, _, _ = clean_mesh(vs, fs)
            parts["total"].append(time.process_time() - t)
    finally:
        S._simplify_pymeshlab = orig
    return {"cand": name, "faces_out": int(fs.shape[0]), "total_ms": 1e3 * min(parts["total"]),
            "pymeshlab_ms": 1e3 * min(parts["pymeshlab"]), "all_ms": [round(1e3 * x, 1) for x in parts["total"]]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("meshes", nargs="+", type=Path)
    ap.add_argument("--cands", default="fast,pf1.5,pf2,pf3")
    ap.add_argument("--target", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    rows = []
    for p in a.meshes:
        v, f = read_mesh(p)
        v, f, _, _ = clean_mesh(v, f)
        for name in a.cands.split(","):
            r = {"mesh": p.name, "faces": int(f.shape[0]), **time_one(name, v, f, a.target, a.repeat)}
            rows.append(r)
            print(f"{p.name} {r['faces']} faces  {name:<10} -> {r['faces_out']} faces  "
                  f"{r['total_ms']:7.1f} ms (pymeshlab {r['pymeshlab_ms']:6.1f})  runs {r['all_ms']}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
