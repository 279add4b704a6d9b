"""Mesh segmentation by fuzzy clustering of faces (Katz & Tal 2003; Marras et al.).

Public API::

    from gpu_kernels.mesh import segment_mesh, MeshSegmentation, MeshTooLargeError, MeshInputError
    seg = segment_mesh(vertices, faces, k="auto", device="cuda")
    seg.labels, seg.face_colors, seg.cluster_table(face_areas(vertices, faces))

Modules: :mod:`~gpu_kernels.mesh.dualgraph` (cleaning, weighted dual graph),
:mod:`~gpu_kernels.mesh.cluster` (fuzzy clustering on the APSP matrix),
:mod:`~gpu_kernels.mesh.boundary` (minimum cuts, connected labels),
:mod:`~gpu_kernels.mesh.colors`, :mod:`~gpu_kernels.mesh.simplify`,
:mod:`~gpu_kernels.mesh.metrics` (Princeton benchmark metrics), and ``apsp`` (all-pairs
shortest paths, CPU and GPU).
"""

from gpu_kernels.mesh.colors import blend_face_colors, palette
from gpu_kernels.mesh.dualgraph import DualGraph, MeshInputError, clean_mesh, dual_graph, face_areas
from gpu_kernels.mesh.segment import (
    DEFAULT_DELTA,
    DEFAULT_EPSILON,
    DEFAULT_ETA_CONVEX,
    MeshSegmentation,
    MeshTooLargeError,
    max_faces_for_device,
    segment_mesh,
)

__all__ = [
    "DEFAULT_DELTA",
    "DEFAULT_EPSILON",
    "DEFAULT_ETA_CONVEX",
    "DualGraph",
    "MeshInputError",
    "MeshSegmentation",
    "MeshTooLargeError",
    "blend_face_colors",
    "clean_mesh",
    "dual_graph",
    "face_areas",
    "max_faces_for_device",
    "palette",
    "segment_mesh",
]
