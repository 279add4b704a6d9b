"""Simplification of meshes too large for the N x N distance matrix, and the transfer of
the simplified mesh's memberships back onto every original face.

* :func:`simplify_mesh` runs pymeshlab's quadric edge collapse
  (``meshing_decimation_quadric_edge_collapse``) to a target face count. pymeshlab is
  imported lazily: it is a dependency of the desktop app, not of a bare GPU host.
* :func:`transfer_memberships` gives each original face the memberships of the simplified
  face whose centroid is nearest (scipy ``cKDTree``). The caller then re-runs the boundary
  cut on the original mesh's dual graph for the faces near label changes, so boundaries
  follow the full-resolution creases instead of the coarse triangles.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

__all__ = ["simplify_mesh", "transfer_memberships"]


def simplify_mesh(vertices, faces, target_faces: int):
    """Quadric edge collapse to about ``target_faces`` faces.

    Returns ``(vertices, faces)`` (float64, int64). Raises ``RuntimeError`` with a clear
    message if pymeshlab is not installed.
    """
    try:
        import pymeshlab
    except ImportError as exc:  # pragma: no cover - depends on the host
        raise RuntimeError(
            "simplifying a large mesh needs pymeshlab (pip install pymeshlab); "
            f"it could not be imported: {exc}") from None
    target = int(max(target_faces, 4))
    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(vertex_matrix=np.asarray(vertices, dtype=np.float64),
                               face_matrix=np.asarray(faces, dtype=np.int32)))
    ms.meshing_decimation_quadric_edge_collapse(
        targetfacenum=target, preservenormal=True, preservetopology=False,
        optimalplacement=True, planarquadric=True, qualitythr=0.3, autoclean=True)
    m = ms.current_mesh()
    v = np.asarray(m.vertex_matrix(), dtype=np.float64)
    f = np.asarray(m.face_matrix(), dtype=np.int64)
    return v, f


def transfer_memberships(src_centroids, src_P, dst_centroids) -> tuple[np.ndarray, np.ndarray]:
    """Memberships of the nearest source face (by centroid) for every destination face.

    Returns ``(P, nearest)``: (F_dst, K) float32 and the (F_dst,) source face index.
    """
    tree = cKDTree(np.asarray(src_centroids, dtype=np.float64))
    _, nearest = tree.query(np.asarray(dst_centroids, dtype=np.float64), k=1)
    nearest = np.asarray(nearest, dtype=np.int64)
    return np.asarray(src_P, dtype=np.float32)[nearest], nearest
