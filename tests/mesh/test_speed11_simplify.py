"""Issue 22 (session 11): with "fast+pymeshlab", ``simplify_in_background`` runs fast-simplification's
step and its clean-up on the calling thread and only pymeshlab's step on the thread
(``simplify.SPLIT_PRE``): the same working mesh bit for bit, an error of the first step raised by
``result()`` as before, and the whole call on the thread where it is switched off."""

from __future__ import annotations

import threading

import pytest
from test_speed8_simplify import _sphere  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import simplify as simp

pytestmark = pytest.mark.skipif("fast+pymeshlab" not in simp.available_simplifiers(),
                                reason="fast-simplification and pymeshlab are not both installed")


def _threads(monkeypatch):
    seen = {}
    for name in ("_simplify_fast", "_simplify_pymeshlab"):
        real = getattr(simp, name)

        def spy(*a, _real=real, _name=name, **kw):
            seen[_name] = threading.current_thread().name
            return _real(*a, **kw)

        monkeypatch.setattr(simp, name, spy)
    return seen


@pytest.mark.parametrize("split", [True, False])
def test_the_split_gives_simplify_meshs_working_mesh_and_threads(monkeypatch, split):
    v, f = _sphere(60)
    target = 700
    want = simp.simplify_mesh(v, f, target, method="fast+pymeshlab")
    monkeypatch.setattr(simp, "SPLIT_PRE", split)
    seen = _threads(monkeypatch)
    for method in ("fast+pymeshlab", None):
        got = simp.simplify_in_background(v, f, target, method).result()
        assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
        here = threading.current_thread().name
        assert seen["_simplify_pymeshlab"] == "gpulab-simplify"
        assert (seen["_simplify_fast"] == here) == split


def test_a_small_mesh_goes_to_pymeshlab_alone_on_the_thread(monkeypatch):
    v, f = _sphere(20)
    target = 600
    assert f.shape[0] <= simp.PRE_FACTOR * target * 1.2
    want = simp.simplify_mesh(v, f, target, method="fast+pymeshlab")
    seen = _threads(monkeypatch)
    got = simp.simplify_in_background(v, f, target, "fast+pymeshlab").result()
    assert got[1].tobytes() == want[1].tobytes()
    assert "_simplify_fast" not in seen and seen["_simplify_pymeshlab"] == "gpulab-simplify"


def test_an_error_of_the_first_step_is_raised_by_result(monkeypatch):
    def boom(v, f, t):
        raise MemoryError(f"no room for {t}")

    monkeypatch.setattr(simp, "_simplify_fast", boom)
    v, f = _sphere(60)
    job = simp.simplify_in_background(v, f, 700, "fast+pymeshlab")
    with pytest.raises(MemoryError, match="no room for 2100"):
        job.result()
