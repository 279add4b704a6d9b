"""Thin parts survive k = auto: a synthetic fish (an ellipsoid body with a thin dorsal fin,
two thin pectoral fins and a thin tail fin, united as signed distances the way
resources/samples/make_samples.py builds the samples) must come out with every fin a part
of its own, not merged into the body or lost as a sliver."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment_mesh
from gpu_kernels.mesh.defaults import WORKING_FACES


def _ellipsoid(p, center, radii):
    q = (p - np.asarray(center)) / np.asarray(radii)
    k0 = np.linalg.norm(q, axis=-1)
    k1 = np.linalg.norm(q / np.asarray(radii), axis=-1)
    return k0 * (k0 - 1.0) / np.maximum(k1, 1e-12)


#: the fish's primitives: body first, then the fins (thin flattened ellipsoids)
FISH = (
    ("body", (0.0, 0.0, 0.0), (0.9, 0.32, 0.22)),
    ("dorsal", (0.05, 0.36, 0.0), (0.32, 0.16, 0.035)),
    ("tail", (-1.02, 0.0, 0.0), (0.22, 0.36, 0.035)),
    ("left", (0.25, -0.12, 0.3), (0.2, 0.035, 0.16)),
    ("right", (0.25, -0.12, -0.3), (0.2, 0.035, 0.16)),
)


def fish_mesh(faces: int = 6000):
    """(vertices, faces, truth): truth is the primitive nearest each face (0 = body)."""
    from skimage.measure import marching_cubes  # only for writing STORED again

    from gpu_kernels.mesh.simplify import simplify_mesh

    h = 0.012
    lo, hi = np.array([-1.3, -0.6, -0.55]), np.array([1.0, 0.6, 0.55])
    axes = [np.arange(a, b, h) for a, b in zip(lo, hi, strict=True)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1)
    d = np.stack([_ellipsoid(grid, c, r) for _, c, r in FISH])
    verts, tris, _, _ = marching_cubes(d.min(axis=0), level=0.0, spacing=(h, h, h))
    verts = verts + lo
    v, f = simplify_mesh(verts, tris, faces)
    from gpu_kernels.mesh.dualgraph import clean_mesh

    v, f, _, _ = clean_mesh(v, f)
    cen = v[f].mean(axis=1)
    truth = np.argmin(np.stack([np.abs(_ellipsoid(cen, c, r)) for _, c, r in FISH]), axis=0)
    return v, f, truth


#: the fish at the working resolution (4,000 faces, so that segment_mesh clusters it as it is,
#: with or without a simplifier installed): fish_mesh(4000) as float32, written by
#: ``python tests/mesh/test_mesh_thin_parts.py``
STORED = Path(__file__).with_name("data") / "fish4000.npz"


@pytest.fixture(scope="module")
def fish():
    z = np.load(STORED)
    return z["vertices"].astype(np.float64), z["faces"].astype(np.int64), z["truth"].astype(np.int64)


def _fins_kept(labels, truth) -> dict:
    """Per fin: the share of its faces in its majority part, and whether that part is
    different from the body's majority part and mostly made of that fin."""
    body = np.bincount(labels[truth == 0]).argmax()
    out = {}
    for i, (name, _, _) in enumerate(FISH[1:], start=1):
        lab = labels[truth == i]
        part = np.bincount(lab).argmax()
        share = float(np.mean(lab == part))
        purity = float(np.mean(truth[labels == part] == i))
        out[name] = (share, purity, bool(part != body))
    return out


def test_stored_fish_is_clustered_as_it_is(fish):
    """No simplifier is needed: the stored fish has 4,000 faces, the working resolution up to session 15, and the
    tests cluster it as it is (``max_faces=None``); since session 16 ``WORKING_FACES`` (3,500) is below it."""
    v, f, truth = fish
    assert len(f) == 4000 > WORKING_FACES and np.bincount(truth).min() > 200


@pytest.mark.parametrize("max_faces", [None, "auto"])
@pytest.mark.slow
def test_fish_keeps_its_fins_at_auto_k(fish, max_faces):
    """As it is (``None``, the computation the test was written for) and at the default working resolution
    (``"auto"``: simplified to ``WORKING_FACES`` since session 16; review s16 #12)."""
    v, f, truth = fish
    seg = segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu", max_faces=max_faces)
    assert seg.info["simplified"] == (max_faces == "auto")
    kept = _fins_kept(seg.labels, truth)
    for name, (share, purity, own) in kept.items():
        assert own, f"the {name} fin was merged into the body (k = {seg.k}): {kept}"
        assert share > 0.7 and purity > 0.6, f"the {name} fin is not one part (k = {seg.k}): {kept}"
    assert 5 <= seg.k <= 8


@pytest.mark.gpu
def test_fish_keeps_its_fins_at_auto_k_on_the_gpu(fish):
    """The GPU path gives the same parts as the CPU path on the fish."""
    from gpu_kernels.mesh.metrics import rand_index_error

    v, f, truth = fish
    cpu = segment_mesh(v, f, k="auto", device="cpu", apsp_method="cpu")
    gpu = segment_mesh(v, f, k="auto", device="cuda")
    assert gpu.k == cpu.k
    assert rand_index_error(gpu.labels, cpu.labels) < 0.01
    assert all(own for _, _, own in _fins_kept(gpu.labels, truth).values())


def test_the_tools_resolution_help_follows_the_library():
    """The tool's help names the consensus's resolutions from ``WORKING_FACES`` and ``CONSENSUS_RESOLUTIONS``
    (review s16 #10: it said 2,000 / 6,000 after the working mesh became 3,500)."""
    from app.tools import mesh_seg
    from gpu_kernels.mesh.segment import CONSENSUS_RESOLUTIONS

    text = next(p.help for p in mesh_seg.PARAMS if p.name == "consensus")
    for r in CONSENSUS_RESOLUTIONS:
        assert f"{int(WORKING_FACES * r):,} " in text, text


if __name__ == "__main__":
    v, f, truth = fish_mesh(4000)
    STORED.parent.mkdir(exist_ok=True)
    np.savez_compressed(STORED, vertices=v.astype(np.float32), faces=f.astype(np.int32), truth=truth.astype(np.int8))
