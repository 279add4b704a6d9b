"""Lead, session 21 (issue 22): the mesh tool from the file with the defaults, the working mesh simplified from the
file's own listing ("listed": ``simplify.CANONICAL_ORDER`` off, sessions 1-20) against the canonical order
("shipped"), in one process, interleaved and reversed every other round after a warm-up each
(``mesh_speed15_ab.py``'s A/B; its arguments)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path.cwd() / "benchmarks"))

import mesh_speed15_ab as m  # noqa: E402

m.e2e.CONFIGS["listed"] = {"gpu_kernels.mesh.simplify.CANONICAL_ORDER": False}

if __name__ == "__main__":
    sys.exit(m.main())
