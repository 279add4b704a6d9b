"""The mesh tool's checks (split from :mod:`app.tools.mesh_seg`, which re-exports them)."""

from __future__ import annotations

from gpu_kernels.errors import InputError

#: a part needs at least this many faces of the clustered mesh on average
MIN_FACES_PER_PART = 10


def check_k(params: dict, n_faces: int) -> None:
    """k must leave the parts a few faces each (of the mesh actually clustered)."""
    k = params.get("k", "auto")
    if k == "auto":
        return
    mf = params.get("max_faces")
    n = min(n_faces, mf) if isinstance(mf, int) and not isinstance(mf, bool) else n_faces
    if k * MIN_FACES_PER_PART > n:
        raise InputError(f"k = {k} asks for more parts than make sense for {n:,} faces (at most "
                         f"{max(1, n // MIN_FACES_PER_PART):,}, {MIN_FACES_PER_PART} faces per part)")

