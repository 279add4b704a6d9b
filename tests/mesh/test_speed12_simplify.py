"""Issue 22 (session 12): pymeshlab's step runs with ``preservenormal`` off by default
(``simplify.PRESERVE_NORMAL = False``, accepted by the rule of benchmarks/results/mesh_speed_session12.md), the
other options as before, and the switch still turns the check back on; on the default path (fast-simplification
first, pymeshlab's step on the thread) too."""

from __future__ import annotations

import numpy as np
import pytest
from _pymeshlab_stand_in import stand_in_pymeshlab  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import simplify as simp

#: pymeshlab's options other than preservenormal, as they were before the change
_OTHERS = {"preservetopology": False, "optimalplacement": True, "planarquadric": True, "qualitythr": 0.3,
           "autoclean": True}


def _fake_pymeshlab(monkeypatch) -> list:
    """A stand-in ``pymeshlab`` module that records the decimation's options and returns the mesh unchanged."""
    calls: list = []
    stand_in_pymeshlab(monkeypatch, calls.append)
    return calls


def _tetra():
    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    f = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    return v, f


def test_preservenormal_is_off_by_default():
    assert simp.PRESERVE_NORMAL is False


def test_pymeshlabs_step_runs_without_the_normal_check_and_the_other_options_as_before(monkeypatch):
    calls = _fake_pymeshlab(monkeypatch)
    v, f = _tetra()
    vo, fo = simp._simplify_pymeshlab(v, f, 2)
    assert len(calls) == 1
    assert calls[0] == {"targetfacenum": 2, "preservenormal": False, **_OTHERS}
    assert vo.dtype == np.float64 and fo.dtype == np.int64 and fo.tolist() == f.tolist()


def test_the_switch_turns_the_check_back_on(monkeypatch):
    calls = _fake_pymeshlab(monkeypatch)
    monkeypatch.setattr(simp, "PRESERVE_NORMAL", True)
    simp._simplify_pymeshlab(*_tetra(), 3)
    assert calls[0] == {"targetfacenum": 3, "preservenormal": True, **_OTHERS}


@pytest.mark.skipif("fast+pymeshlab" not in simp.available_simplifiers(),
                    reason="fast-simplification and pymeshlab are not both installed")
@pytest.mark.parametrize("split", [True, False])
def test_the_default_path_runs_pymeshlab_without_the_check(monkeypatch, split):
    """The default path (fast-simplification to PRE_FACTOR x the target, then pymeshlab's step on the thread):
    pymeshlab is called with preservenormal off, and the working mesh is the one pymeshlab gives with it off."""
    from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

    v, f = _sphere(60)
    target = 700
    seen = []
    real = simp._simplify_pymeshlab

    def spy(*a):
        seen.append(simp.PRESERVE_NORMAL)
        return real(*a)

    monkeypatch.setattr(simp, "SPLIT_PRE", split)
    monkeypatch.setattr(simp, "_simplify_pymeshlab", spy)
    got = simp.simplify_in_background(v, f, target).result()
    assert seen == [False]
    monkeypatch.setattr(simp, "PRESERVE_NORMAL", True)
    on = simp.simplify_in_background(v, f, target).result()
    monkeypatch.setattr(simp, "PRESERVE_NORMAL", False)
    off = simp.simplify_mesh(v, f, target, method="fast+pymeshlab")
    assert got[1].tobytes() == off[1].tobytes() and got[0].tobytes() == off[0].tobytes()
    # (on this bumpy sphere the check blocks some collapses, so the two working meshes differ)
    assert on[1].shape[0] > 0 and not (on[1].shape == got[1].shape and np.array_equal(on[1], got[1]))
