"""Issue 22, session 21: with ``simplify.CANONICAL_ORDER`` the working mesh, and so the parts, do not depend on the
order in which a file lists the vertices and faces. Without it, PSB bust 303 in six shuffled listings went from 0.336
to 0.434 on the protocol, its k = 2 parts from head / body to body / a band across the face. On by default since
session 22's held-out round canon22c (``GPULAB_MESH_CANONICAL_ORDER=0`` turns it off)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh import simplify as simp
from gpu_kernels.mesh.metrics import rand_index_error
from tests.mesh._quality_fixtures import fish_arrays

KW = {"device": "cpu", "apsp_method": "cpu"}
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from mesh_simplify_session7_stores import shuffled  # noqa: E402  (the quality rounds' relisting of a mesh)

needs_simplifier = pytest.mark.skipif(not simp.available_simplifiers(),
                                      reason="neither fast-simplification nor pymeshlab is installed")


def triangles(v, f):
    """The mesh as a sorted list of oriented triangles (their corners' coordinates, each started at its
    lexicographically smallest corner)."""
    out = []
    for tri in np.asarray(v)[np.asarray(f)]:
        corners = [tuple(p) for p in tri.tolist()]
        s = corners.index(min(corners))
        out.append(tuple(corners[s:] + corners[:s]))
    return sorted(out)


def test_canonical_order_is_the_same_for_any_listing():
    v, f = fish_arrays()
    v0, f0 = simp.canonical_order(v, f)
    assert triangles(v0, f0) == triangles(v, f)  # the same mesh, orientation kept
    assert not np.array_equal(f0, f)
    for seed in (1, 2, 3):
        v2, f2 = shuffled(v, f, seed)
        v1, f1 = simp.canonical_order(v2, f2)
        assert np.array_equal(v1, v0) and np.array_equal(f1, f0)


def test_canonical_order_spreads_like_a_shuffle():
    """The order is a hash, not a sort by position: the first tenth of the faces lies all over the mesh (a sort by
    x would put it in one slab)."""
    v, f = fish_arrays()
    v0, f0 = simp.canonical_order(v, f)
    c = v0[f0].mean(axis=1)
    head = c[: len(c) // 10]
    for axis in range(3):
        lo, hi = np.quantile(c[:, axis], [0.1, 0.9])
        assert head[:, axis].min() < lo and head[:, axis].max() > hi


def test_spatial_order_keeps_the_mesh_and_neighbours_near():
    """What the steps after the first simplification get: the same mesh, with consecutive vertices near each other
    (a Z-order curve), where the hashed canonical order scatters them."""
    v, f = simp.canonical_order(*fish_arrays())
    v1, f1 = simp.spatial_order(v, f)
    assert triangles(v1, f1) == triangles(v, f)

    def step(x):
        return float(np.linalg.norm(np.diff(x, axis=0), axis=1).mean())
    assert step(v1) < 0.2 * step(v)
    c, c1 = v[f].mean(axis=1), v1[f1].mean(axis=1)
    assert step(c1) < 0.2 * step(c)
    assert all(np.array_equal(a, b) for a, b in zip(simp.spatial_order(v, f), (v1, f1), strict=True))  # deterministic


def test_canonical_order_empty_and_edge_cases():
    for fn in (simp.canonical_order, simp.spatial_order):
        v, f = fn(np.zeros((0, 3)), np.zeros((0, 3), np.int64))
        assert v.shape == (0, 3) and f.shape == (0, 3)
    v = np.array([[0.0, 0, 0], [-0.0, 1, 0], [1, 0, 0]])
    w = v.copy()
    w[1, 0] = 0.0  # -0.0 and 0.0 are the same point
    assert np.array_equal(simp.canonical_order(v, [[0, 1, 2]])[1], simp.canonical_order(w, [[0, 1, 2]])[1])


@needs_simplifier
@pytest.mark.parametrize("on", [True, False])
def test_working_mesh_follows_the_switch(monkeypatch, on):
    """With the switch on (the default since session 22), a relisted mesh gets the same working mesh, float for
    float; off (sessions 1-21), the simplifiers' result follows the listing (which is what makes this test able to
    fail)."""
    monkeypatch.setattr(simp, "CANONICAL_ORDER", on)
    v, f = fish_arrays()
    base = sg.prepare_mesh(v, f, **KW).working[0][1]
    assert base is not None and base.n < len(f)
    same = []
    for seed in (1, 2):
        g = sg.prepare_mesh(*shuffled(v, f, seed), **KW).working[0][1]
        same.append(g.n == base.n and np.array_equal(g.centroids, base.centroids))
    assert all(same) if on else not any(same)


def test_on_by_default_and_the_environment_turns_it_off():
    code = "from gpu_kernels.mesh import simplify; print(simplify.CANONICAL_ORDER)"
    for env, want in (({}, "True"), ({"GPULAB_MESH_CANONICAL_ORDER": "0"}, "False"),
                      ({"GPULAB_MESH_CANONICAL_ORDER": "off"}, "False"), ({"GPULAB_MESH_CANONICAL_ORDER": "1"}, "True")):
        e = {k: v for k, v in os.environ.items() if k != "GPULAB_MESH_CANONICAL_ORDER"}
        out = subprocess.run([sys.executable, "-c", code], env={**e, **env}, capture_output=True, text=True,
                             check=True, cwd=ROOT)
        assert out.stdout.strip() == want, (env, out.stdout, out.stderr)


@needs_simplifier
@pytest.mark.parametrize("k", [5, "auto"])
def test_parts_do_not_depend_on_the_listing(k, monkeypatch):
    monkeypatch.setattr(simp, "CANONICAL_ORDER", True)
    v, f = fish_arrays()
    base = sg.segment_mesh(v, f, k=k, **KW)
    for seed in (3,):
        v2, f2, fp = shuffled(v, f, seed, with_order=True)
        r = sg.segment_mesh(v2, f2, k=k, **KW)
        back = np.empty_like(r.labels)
        back[fp] = r.labels
        assert r.k == base.k
        assert rand_index_error(back, base.labels) == 0.0
