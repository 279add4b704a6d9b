"""Issue 22 (session 12): session 10's end-to-end A/B (``benchmarks/mesh_e2e_session10.py``: from the file,
read + ``segment_mesh``, configurations interleaved in one process after a warm-up each, the labels' and colours'
SHA-1s, pymeshlab's own time per run, ``--profile``) with this session's working-mesh candidates
(benchmarks/results/mesh_speed_session12.md):

- ``pf3`` / ``base``: today's working mesh (fast-simplification to 3 x 4,000 faces, then pymeshlab with
  ``preservenormal`` on);
- ``pf3n0``: pymeshlab's ``preservenormal`` off (``simplify.PRESERVE_NORMAL = False``);
- ``pf2n0``: fast-simplification to 2 x 4,000 faces, then pymeshlab with ``preservenormal`` off;
- ``pf3n1``: ``preservenormal`` forced on (the working mesh before session 12's change);
- ``nocsr``: the full graph's weight matrix neither cached nor built beside the simplification
  (``dualgraph.CACHE_CSR = segment.PREBUILD_CSR = False``: before 0725e49);
- ``hostoff``: every switchable bit-identical host change of session 12 off (``nocsr``, and clean_mesh's row hash
  and quick checks: ``dualgraph.HASH_ROWS = QUICK_CHECKS = False``); the cross products (0b836d6) have no switch.

Session 13 removed the four switches that ``nocsr`` and ``hostoff`` turn off (the GPU SHA-1 checks had passed;
the code is always on), so those two configurations now stop with an AttributeError: they record session 12's runs.

Example (device)::

    python benchmarks/mesh_speed12_ab.py 101.off 281.off --rounds 9 --configs base,pf3n0,pf2n0 --json out.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_e2e_session10 as e2e  # noqa: E402

e2e.CONFIGS.update({
    "pf3": {},
    "pf3n0": {"gpu_kernels.mesh.simplify.PRESERVE_NORMAL": False},
    "pf2n0": {"gpu_kernels.mesh.simplify.PRESERVE_NORMAL": False, "gpu_kernels.mesh.simplify.PRE_FACTOR": 2.0},
    "pf3n1": {"gpu_kernels.mesh.simplify.PRESERVE_NORMAL": True, "gpu_kernels.mesh.simplify.PRE_FACTOR": 3.0},
    "nocsr": {"gpu_kernels.mesh.dualgraph.CACHE_CSR": False, "gpu_kernels.mesh.segment.PREBUILD_CSR": False},
    "hostoff": {"gpu_kernels.mesh.dualgraph.CACHE_CSR": False, "gpu_kernels.mesh.segment.PREBUILD_CSR": False,
                "gpu_kernels.mesh.dualgraph.HASH_ROWS": False, "gpu_kernels.mesh.dualgraph.QUICK_CHECKS": False},
})

if __name__ == "__main__":
    sys.exit(e2e.main())
