"""Issue 22 (session 11): session 10's end-to-end A/B (``benchmarks/mesh_e2e_session10.py``: from the
file, read + ``segment_mesh``, configurations interleaved in one process, labels' and colours' SHA-1s,
``--profile``) with this session's switches:

- ``s10``: the code of session 10's end: the settle's merge loop in NumPy
  (``boundary.COMPILED_MERGE = False``), the representatives' nearest faces per point in NumPy
  (``segment.COMPILED_NEAREST = False``) and the parts' memberships by SciPy's searches one by one
  (``boundary.COMPILED_DIJKSTRA = False``) and the whole simplification on the thread
  (``simplify.SPLIT_PRE = False``);
- ``nomerge`` / ``nonear`` / ``nodij`` / ``nosplit``: one of the four only.

Example (device)::

    python benchmarks/mesh_speed11_ab.py 101.off 281.off --rounds 9 --configs base,s10 --json out.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mesh_e2e_session10 as e2e  # noqa: E402

e2e.CONFIGS.update({
    "s10": {"gpu_kernels.mesh.boundary.COMPILED_MERGE": False, "gpu_kernels.mesh.segment.COMPILED_NEAREST": False,
            "gpu_kernels.mesh.boundary.COMPILED_DIJKSTRA": False, "gpu_kernels.mesh.simplify.SPLIT_PRE": False},
    "nosplit": {"gpu_kernels.mesh.simplify.SPLIT_PRE": False},
    "nodij": {"gpu_kernels.mesh.boundary.COMPILED_DIJKSTRA": False},
    "nomerge": {"gpu_kernels.mesh.boundary.COMPILED_MERGE": False},
    "nonear": {"gpu_kernels.mesh.segment.COMPILED_NEAREST": False},
})

if __name__ == "__main__":
    sys.exit(e2e.main())
