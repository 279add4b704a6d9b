"""Issue 22 (session 7): each candidate simplifier's working meshes of the 76 PSB meshes, stored
for a host without pymeshlab (the GPU machines), keyed as ``benchmarks/mesh_psb.py``'s
``stored=`` files (the cleaned mesh and the target, 4,000 faces: ``segment.WORKING_FACES``).

    python benchmarks/mesh_simplify_session7_stores.py pf3,pf1.5,pf2 --out .carry-msimp
    python benchmarks/mesh_simplify_session7_stores.py pf3s5,pf3s6,pf1.5n0s5,pf1.5n0s6 \
        --out .carry-msimp --grid .carry-msimp/draws.json     # + a --cv grid over the stores

Candidate names as in ``mesh_simplify_session7_time.py`` (``pf3`` is today's fast+pymeshlab); a
suffix ``s<seed>`` (``pf3s1``) simplifies the same mesh with its vertices and faces in a random
order (the same geometry: what an equally good simplifier could give, to see how much the PSB
scores move by such a change alone); a base ending in ``c`` (``pf3n0cs7``, session 22) simplifies it in the
library's canonical order salted by the seed (``simplify.CANONICAL_SALT``; ``h``: the same without the Z-order before
pymeshlab, ``simplify.CANONICAL_ZORDER`` off). Prints the simplification's process time over the 76 meshes.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_psb as mp  # noqa: E402
from mesh_simplify_session7_time import simplify_with  # noqa: E402

from gpu_kernels.mesh.dualgraph import clean_mesh  # noqa: E402
from gpu_kernels.mesh.segment import WORKING_FACES  # noqa: E402


def shuffled(v, f, seed: int, with_order: bool = False):
    """The same mesh with its vertices and faces in a random order (and each face's corners
    rotated). ``with_order``: also return, for each new face, its index in ``f`` (to carry labels back)."""
    rng = np.random.default_rng(seed)
    pv = rng.permutation(v.shape[0])
    inv = np.empty_like(pv)
    inv[pv] = np.arange(pv.size)
    pf = rng.permutation(f.shape[0])
    f2 = np.roll(inv[f][pf], int(rng.integers(3)), axis=1)
    return (v[pv], f2, pf) if with_order else (v[pv], f2)


def store_entries(name: str, v, f, target: int) -> dict:
    """The ``stored=`` entries of one mesh for candidate ``name``: ``{}`` for a mesh the
    pipeline does not simplify (at most ``target`` faces after cleaning)."""
    vc, fc, _, _ = clean_mesh(v, f)
    if fc.shape[0] <= target:
        return {}
    key = mp._simplify_key(vc, fc, target)
    m = re.fullmatch(r"(.+?)s(\d+)", name)
    base, seed = (m.group(1), m.group(2)) if m else (name, "")
    if base[-1] in "ch":  # session 22: the canonical order salted by the seed (the listing does not matter); "h":
        if not seed:      # the hashed order alone (CANONICAL_ZORDER off)
            raise SystemExit(f"candidate {name!r}: a canonical-order draw needs s<salt>")
        vs, fs = simplify_with(base[:-1], vc, fc, target, salt=int(seed), zorder=base[-1] == "c")
        return {f"v_{key}": vs, f"f_{key}": fs.astype(np.int32)}
    vi, fi = (vc, fc) if not seed else shuffled(vc, fc, int(seed))
    vs, fs = simplify_with(base, vi, fi, target)
    return {f"v_{key}": vs, f"f_{key}": fs.astype(np.int32)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cands")
    ap.add_argument("--data", type=Path, default=mp.DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=ROOT / ".carry-msimp")
    ap.add_argument("--grid", type=Path, default=None, metavar="GRID.json",
                    help="also write a benchmarks/mesh_psb.py --cv grid that scores each store (both modes)")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    target = int(WORKING_FACES)
    for name in a.cands.split(","):
        store, ts, t0 = {}, 0.0, time.perf_counter()
        for i in mp.mesh_ids(a.data):
            v, f = mp.load_mesh(a.data, i)
            t = time.process_time()
            store.update(store_entries(name, v, f, target))
            ts += time.process_time() - t
        np.savez_compressed(a.out / f"{name}.npz", **store)
        print(f"{name}: {len(store) // 2} meshes, clean + simplify CPU {ts:.2f} s, total {time.perf_counter() - t0:.1f} s",
              flush=True)
    if a.grid:
        rel = a.out.resolve().relative_to(ROOT) if a.out.resolve().is_relative_to(ROOT) else a.out.resolve()
        grid = [{"name": name, "set": [f"stored={rel / (name + '.npz')}"], "what": "both", "pools": ["all"]}
                for name in a.cands.split(",")]
        a.grid.write_text(json.dumps(grid, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
