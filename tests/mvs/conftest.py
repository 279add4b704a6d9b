"""Small synthetic scenes shared by the mvs tests (rendered once per session)."""

from __future__ import annotations

import functools

import pytest

from gpu_kernels.mvs.synth import render_synthetic_scene


@functools.cache
def _scene(kind: str):
    if kind == "plane":
        return render_synthetic_scene(n_views=12, width=128, height=96,
                                      objects=[{"kind": "plane", "z": 0.0, "tint": (0.9, 0.85, 0.8)}])
    if kind == "small":
        return render_synthetic_scene(n_views=12, width=128, height=96)
    raise KeyError(kind)


@pytest.fixture
def plane_scene():
    return _scene("plane")


@pytest.fixture
def small_scene():
    return _scene("small")
