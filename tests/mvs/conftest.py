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
    if kind == "tiny":  # the small scene at half the size: ~8x less CPU growing, for tests of the stages' bookkeeping
        return render_synthetic_scene(n_views=12, width=64, height=48)
    raise KeyError(kind)


@pytest.fixture
def plane_scene():
    return _scene("plane")


@pytest.fixture
def small_scene():
    return _scene("small")


@pytest.fixture
def tiny_scene():
    """The small scene at 64 x 48 (a CPU run of one view: ~1 s against ~7 on the small one, on the
    shared 2-core machine), where a test checks which stages ran and that results equal a fresh
    run, not the growing's quality."""
    return _scene("tiny")
