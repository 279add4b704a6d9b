"""The learned-merge tests' one set-up (issue 22; tests/mesh/test_quality1[123]_*.py): the fish of the thin-part
tests (4,000 faces: clustered as it is, ``max_faces=None``: the working resolution these tests were written at; since
session 16 ``WORKING_FACES`` is 3,500, so ``"auto"`` would simplify it), its prepared mesh on the CPU, and a seeded
over-segmentation. A test module
takes the fixtures by name: ``fish, prep = fx.fish, fx.prep`` (``prep`` asks for ``fish``, so both go in); the
other fish tests (tool runs, layouts) take ``fish`` or build on :func:`fish_arrays`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import boundary as bd
from gpu_kernels.mesh import segment as sg

STORED = Path(__file__).with_name("data") / "fish4000.npz"
KW = {"device": "cpu", "apsp_method": "cpu"}


def fish_arrays():
    """The stored fish's vertices (float64) and faces (int64), read afresh (for modules that wrap them)."""
    z = np.load(STORED)
    return z["vertices"].astype(np.float64), z["faces"].astype(np.int64)


@pytest.fixture(scope="module")
def fish():
    return fish_arrays()


@pytest.fixture(scope="module")
def prep(fish):
    return sg.prepare_mesh(*fish, max_faces=None, **KW)   # (clustered as it is: 4,000 faces)


def overseg(graph, n=30, seed=0):
    """``n`` clusters: each face takes its nearest of ``n`` random faces' centroids, made connected."""
    rng = np.random.default_rng(seed)
    seeds = rng.choice(graph.n, n, replace=False)
    d = ((graph.centroids[:, None, :] - graph.centroids[seeds][None]) ** 2).sum(axis=2)
    lab = np.argmin(d, axis=1).astype(np.int32)
    lab, _ = bd.merge_islands(graph, lab)
    return np.unique(lab, return_inverse=True)[1].astype(np.int32)


def spy_predictions(monkeypatch) -> list:
    """Record every ``(features, predictions)`` the learned merges' model gives (``TreeModel.predict`` wrapped for
    the test): the list fills as the merges run."""
    from gpu_kernels.mesh import learned as ln

    seen: list = []
    orig = ln.TreeModel.predict

    def spy(self, X):
        p = orig(self, X)
        seen.append((np.asarray(X).copy(), p))
        return p

    monkeypatch.setattr(ln.TreeModel, "predict", spy)
    return seen
