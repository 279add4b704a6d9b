"""Issue 22 (session 18, helper mesh-q11): ``segment.CREASE_STARTS``, the starts' boundaries re-cut along the concave
creases by the full-resolution re-cut's minimum cut (:func:`gpu_kernels.mesh.segment.recut_starts`).

- on a valley (one concave crease), a start boundary two or three face rings off the crease moves onto it, from
  either side, and one on it stays (the compiled and the SciPy cut alike);
- the switch changes the starts of a real mesh's over-segmentation (k = "auto" and an integer k), and the prepared
  mesh's cut cache never hands one switch's starts to the other;
- the GPU gives the labels the CPU gives with the switch on.
"""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.dualgraph import dual_graph

fish = fx.fish
N = 20  # columns of quads across the valley (2 triangles each): a column is two face rings


def _valley(n=N):
    """A strip z = |x| over [-1, 1] x [0, 2], faces up: one concave crease at x = 0."""
    xs = np.linspace(-1, 1, n + 1)
    ys = np.linspace(0, 2, 2 * n + 1)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    V = np.stack([X.ravel(), Y.ravel(), np.abs(X.ravel())], 1)
    m = 2 * n + 1
    F = []
    for i in range(n):
        for j in range(2 * n):
            a, b, c, d = i * m + j, (i + 1) * m + j, (i + 1) * m + j + 1, i * m + j + 1
            F += [[a, b, c], [a, c, d]]
    return dual_graph(V, np.asarray(F), delta=sg.DEFAULT_DELTA, eta_convex=sg.DEFAULT_ETA_CONVEX)


def _start(g, columns: float):
    """Two clusters split ``columns`` columns right (+) or left (-) of the crease, soft memberships."""
    cx = g.centroids[:, 0]
    off = columns * 2.0 / N + 1e-9
    lab = (cx > off).astype(np.int64)
    p1 = 1.0 / (1.0 + np.exp(-(cx - off) / 0.2))
    return np.stack([1 - p1, p1], 1).astype(np.float32), lab


@pytest.fixture(scope="module")
def valley():
    return _valley()


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("columns", [1, -1, 1.5, -1.5])
def test_a_start_boundary_near_a_concave_crease_moves_onto_it(valley, columns, compiled, monkeypatch):
    monkeypatch.setattr(bd, "COMPILED", compiled)
    g = valley
    crease = np.sign(g.centroids[g.src, 0]) != np.sign(g.centroids[g.dst, 0])
    assert g.concavity[crease].min() > 0.5 and g.concavity[~crease].max() < 1e-9  # (the valley is as meant)
    P, lab = _start(g, columns)
    assert not (lab[g.src] != lab[g.dst])[crease].any()       # the start boundary is off the crease
    new, st = sg.recut_starts(g, P, lab)
    cut = new[g.src] != new[g.dst]
    assert st["n_cuts"] >= 1
    assert np.array_equal(cut, crease)                          # ... and the re-cut's boundary is the crease
    assert sg.boundary_concavity(g, new) > sg.boundary_concavity(g, lab)


def test_a_start_boundary_on_the_crease_stays(valley):
    P, lab = _start(valley, 0)
    new, _ = sg.recut_starts(valley, P, lab)
    assert np.array_equal(new, lab)


def test_the_compiled_and_the_scipy_recut_agree_on_a_real_start(fish, monkeypatch):
    """The fish's 30-cluster start, with its own memberships (a seeded over-segmentation's nearest-seed softness)."""
    prep = sg.prepare_mesh(*fish, max_faces=None, **fx.KW)
    g = prep.graph
    lab = fx.overseg(g, 30, seed=3).astype(np.int64)
    K = int(lab.max()) + 1
    cen = np.stack([g.centroids[lab == j].mean(axis=0) for j in range(K)])
    d = np.sqrt(((g.centroids[:, None, :] - cen[None]) ** 2).sum(axis=2)) + 1e-6
    P = (1 / d) / (1 / d).sum(axis=1, keepdims=True)
    a, _ = sg.recut_starts(g, P.astype(np.float32), lab)
    monkeypatch.setattr(bd, "COMPILED", False)
    b, _ = sg.recut_starts(g, P.astype(np.float32), lab)
    assert np.array_equal(a, b)
    assert 0 < np.mean(a != lab) < 0.3


def _starts(prep, k, on, monkeypatch):
    """The start labels the merges begin from (``_merge_to_targets``' input) and the final labels."""
    seen = []
    orig = sg._merge_to_targets

    def spy(graph, labels, *a, **kw):
        seen.append(np.asarray(labels).copy())
        return orig(graph, labels, *a, **kw)

    monkeypatch.setattr(sg, "_merge_to_targets", spy)
    monkeypatch.setattr(sg, "CREASE_STARTS", on)
    seg = sg.segment_prepared(prep, k=k, device="cpu")
    monkeypatch.setattr(sg, "_merge_to_targets", orig)
    return seen, seg.labels.copy()


@pytest.mark.parametrize("k", ["auto", 5])
def test_the_switch_changes_the_starts_and_the_cache_keeps_them_apart(fish, k, monkeypatch):
    prep = sg.prepare_mesh(*fish, max_faces=None, **fx.KW)
    off1, lab_off1 = _starts(prep, k, False, monkeypatch)
    on, lab_on = _starts(prep, k, True, monkeypatch)       # (the same prepared mesh: its cut cache is warm)
    off2, lab_off2 = _starts(prep, k, False, monkeypatch)
    assert len(off1) == len(on) >= 1
    changed = [float(np.mean(a != b)) for a, b in zip(off1, on, strict=True)]
    assert max(changed) > 0.005 and max(changed) < 0.3        # the re-cut moves some start faces, not most
    assert all(np.array_equal(a, b) for a, b in zip(off1, off2, strict=True)) and np.array_equal(lab_off1, lab_off2)
    fresh = sg.prepare_mesh(*fish, max_faces=None, **fx.KW)
    on_fresh, lab_on_fresh = _starts(fresh, k, True, monkeypatch)
    assert all(np.array_equal(a, b) for a, b in zip(on, on_fresh, strict=True)) and np.array_equal(lab_on, lab_on_fresh)


def test_the_switch_is_off_by_default():
    assert sg.CREASE_STARTS is False


@pytest.mark.gpu
@pytest.mark.parametrize("k", ["auto", 5])
def test_the_crease_starts_give_the_same_labels_on_the_gpu(fish, k, monkeypatch):
    pytest.importorskip("cupy")
    monkeypatch.setattr(sg, "CREASE_STARTS", True)
    cpu = sg.segment_mesh(*fish, k=k, max_faces=None, **fx.KW)
    gpu = sg.segment_mesh(*fish, k=k, max_faces=None, device="cuda")
    assert np.array_equal(cpu.labels, gpu.labels)
    monkeypatch.setattr(sg, "CREASE_STARTS", False)
    off = sg.segment_mesh(*fish, k=k, max_faces=None, device="cuda")
    assert not np.array_equal(off.labels, gpu.labels)
