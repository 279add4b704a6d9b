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

from gpu_kernels.lazy import lazy_exports as _lazy_exports

# the names load their submodule on first use (NumPy, SciPy): importing the package, or its
# light gpu_kernels.mesh.defaults, stays cheap (start-up, issue 18 case 19)
__getattr__, __dir__ = _lazy_exports(__name__, {
    "blend_face_colors": "colors", "palette": "colors",
    "DualGraph": "dualgraph", "MeshInputError": "dualgraph", "clean_mesh": "dualgraph", "dual_graph": "dualgraph",
    "face_areas": "dualgraph",
    "DEFAULT_DELTA": "defaults", "DEFAULT_EPSILON": "defaults", "DEFAULT_ETA_CONVEX": "defaults",
    "MeshSegmentation": "segment", "MeshTooLargeError": "segment", "max_faces_for_device": "segment",
    "segment_mesh": "segment",
})

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
