"""The file formats gpulab reads and writes, by extension (standard library only).

The readers (:mod:`app.io.mesh_io`, :mod:`app.io.image_io`, ...) import these lists and
re-export them under the same names; the tool declarations take them from here, so that
declaring a tool (``gpulab COMMAND --help``, the window's tab list) loads no reader and no
NumPy (start-up, issue 18 case 19).
"""

from __future__ import annotations

__all__ = ["MESH_EXTENSIONS", "SEGMENT_FORMATS", "IMAGE_EXTENSIONS", "VIDEO_EXTENSIONS", "VOLUME_EXTENSIONS",
           "LABEL_EXTENSIONS", "SEQUENCE_NAMES"]

#: Extensions of the mesh formats :func:`app.io.mesh_io.read_mesh` reads (lower case, with the
#: dot): PLY, OBJ, OFF and STL with our own readers (:mod:`app.io.mesh_formats`), the rest with
#: pymeshlab.
MESH_EXTENSIONS: tuple[str, ...] = (
    ".ply", ".obj", ".off", ".stl", ".3mf", ".gltf", ".glb", ".dae", ".3ds",
    ".ctm", ".wrl", ".x3d", ".vmi", ".tri",
)

#: Formats :func:`app.io.mesh_io.write_segments` and ``write_mesh`` can write.
SEGMENT_FORMATS: tuple[str, ...] = ("ply", "obj", "off", "stl")

#: Still images :mod:`app.io.image_io` reads.
IMAGE_EXTENSIONS: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")

#: Videos :mod:`app.io.video_io` reads (frames through imageio).
VIDEO_EXTENSIONS: tuple[str, ...] = (".mp4", ".avi", ".mov", ".mkv", ".m4v", ".webm", ".mpg", ".mpeg", ".wmv",
                                     ".gif")

#: Volumes :mod:`app.io.volume_io` reads.
VOLUME_EXTENSIONS: tuple[str, ...] = (".nii", ".nii.gz", ".mha", ".mhd", ".nrrd", ".nhdr", ".dcm", ".npy", ".npz")

#: Label images :mod:`app.io.labels_io` reads and writes.
LABEL_EXTENSIONS: tuple[str, ...] = (".png", ".tif", ".tiff", ".npy")

#: The 4-D file of a folder written by ``gpulab echo-synth`` (ground truth beside it).
SEQUENCE_NAMES: tuple[str, ...] = ("sequence.nii.gz", "sequence.nii", "sequence.npz", "sequence.mha", "sequence.nrrd")
