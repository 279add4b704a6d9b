"""Regenerate the bundled sample meshes for the Mesh segmentation tab.

Each sample is a signed-distance field built from simple primitives (rounded boxes,
capsules, ellipsoids), joined with a hard union so that the parts meet at concave
creases, the cue Katz-Tal segmentation looks for. The surface is extracted with marching
cubes (scikit-image), cleaned and decimated to a few thousand faces with pymeshlab's
quadric edge collapse, and written as binary PLY next to this script.

Run from the repository root::

    .venv/bin/python resources/samples/make_samples.py

The output is deterministic; every file stays well under 500 KB.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- SDF primitives
def sd_box(p, center, half, radius=0.0):
    """Rounded box: half extents ``half`` (the rounding radius is inside them)."""
    q = np.abs(p - np.asarray(center)) - (np.asarray(half) - radius)
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
    inside = np.minimum(np.max(q, axis=-1), 0.0)
    return outside + inside - radius


def sd_capsule(p, a, b, r):
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    pa = p - a
    ba = b - a
    h = np.clip((pa @ ba) / (ba @ ba), 0.0, 1.0)
    return np.linalg.norm(pa - h[..., None] * ba, axis=-1) - r


def sd_ellipsoid(p, center, radii):
    """Approximate (bound-corrected) SDF of an ellipsoid."""
    q = (p - np.asarray(center)) / np.asarray(radii)
    k0 = np.linalg.norm(q, axis=-1)
    k1 = np.linalg.norm(q / np.asarray(radii), axis=-1)
    return k0 * (k0 - 1.0) / np.maximum(k1, 1e-12)


def sd_cylinder_y(p, center, r, half_h):
    """Capped cylinder along y."""
    d = p - np.asarray(center)
    dr = np.hypot(d[..., 0], d[..., 2]) - r
    dy = np.abs(d[..., 1]) - half_h
    outside = np.hypot(np.maximum(dr, 0), np.maximum(dy, 0))
    return outside + np.minimum(np.maximum(dr, dy), 0.0)


# ----------------------------------------------------------------------------- the samples
def dumbbell(p):
    """Two rounded boxes joined by a thin bar along x."""
    left = sd_box(p, (-1.0, 0, 0), (0.45, 0.5, 0.5), 0.06)
    right = sd_box(p, (1.0, 0, 0), (0.45, 0.5, 0.5), 0.06)
    bar = sd_capsule(p, (-0.6, 0, 0), (0.6, 0, 0), 0.14)
    return np.minimum(np.minimum(left, right), bar)


def creature(p):
    """An ellipsoid body with a head, four legs and a tail."""
    body = sd_ellipsoid(p, (0, 0.55, 0), (0.85, 0.38, 0.42))
    head = sd_ellipsoid(p, (1.05, 0.95, 0), (0.3, 0.26, 0.26))
    neck = sd_capsule(p, (0.6, 0.7, 0), (0.95, 0.9, 0), 0.13)
    d = np.minimum(np.minimum(body, head), neck)
    for x in (-0.5, 0.5):
        for z in (-0.25, 0.25):
            leg = sd_capsule(p, (x, 0.45, z), (x * 1.1, -0.45, z * 1.25), 0.1)
            d = np.minimum(d, leg)
    tail = sd_capsule(p, (-0.75, 0.6, 0), (-1.35, 0.95, 0), 0.06)
    return np.minimum(d, tail)


def table(p):
    """A table top on four cylindrical legs."""
    top = sd_box(p, (0, 0.9, 0), (1.0, 0.07, 0.6), 0.03)
    d = top
    for x in (-0.82, 0.82):
        for z in (-0.44, 0.44):
            d = np.minimum(d, sd_cylinder_y(p, (x, 0.42, z), 0.07, 0.45))
    return d


SAMPLES = {
    # name: (sdf, bounding box lo, hi, voxel size, target faces)
    "dumbbell": (dumbbell, (-1.6, -0.7, -0.7), (1.6, 0.7, 0.7), 0.025, 3000),
    "creature": (creature, (-1.5, -0.65, -0.75), (1.45, 1.3, 0.75), 0.02, 5000),
    "table": (table, (-1.15, -0.15, -0.75), (1.15, 1.1, 0.75), 0.015, 3000),
}


def build(name: str) -> tuple[np.ndarray, np.ndarray]:
    import pymeshlab
    from skimage.measure import marching_cubes

    sdf, lo, hi, h, target = SAMPLES[name]
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    axes = [np.arange(a - 2 * h, b + 2 * h, h) for a, b in zip(lo, hi, strict=True)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    vol = sdf(grid)
    verts, faces, _, _ = marching_cubes(vol, level=0.0, spacing=(h, h, h))
    verts = verts + np.array([ax[0] for ax in axes])
    ms = pymeshlab.MeshSet()
    ms.add_mesh(pymeshlab.Mesh(verts.astype(np.float64), faces.astype(np.int32)))
    ms.meshing_merge_close_vertices()
    ms.meshing_remove_duplicate_faces()
    ms.meshing_remove_null_faces()
    ms.meshing_decimation_quadric_edge_collapse(
        targetfacenum=target, preservenormal=True, preservetopology=True, qualitythr=0.5,
        optimalplacement=True, planarquadric=True,
    )
    ms.meshing_remove_unreferenced_vertices()
    ms.meshing_repair_non_manifold_edges()
    m = ms.current_mesh()
    v = m.vertex_matrix().astype(np.float64)
    f = m.face_matrix().astype(np.int64)
    # the samples sit on y = 0 and are scaled so their longest side is 2 units
    v -= [(v[:, 0].max() + v[:, 0].min()) / 2, v[:, 1].min(), (v[:, 2].max() + v[:, 2].min()) / 2]
    v *= 2.0 / np.ptp(v, axis=0).max()
    return np.round(v, 6), f


def main(argv: list[str] | None = None) -> int:
    root = HERE.parent.parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from app.io.mesh_io import write_mesh

    names = argv or list(SAMPLES)
    for name in names:
        v, f = build(name)
        out = HERE / f"{name}.ply"
        if out.exists():
            out.unlink()
        write_mesh(out, v, f)
        print(f"{out.relative_to(root)}: {len(v)} vertices, {len(f)} faces, {out.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
