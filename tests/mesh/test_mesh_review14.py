"""Session 14's review (the lead's mends, /work/team/s14/review.md #7, #12): the compiled merge loop fills the
learned features' columns by number, so a FEATURES edit that it does not follow stops at its import with one
message, and the optional-module loader lets that error through (it turned every exception into "numba
missing", which silently ran the NumPy loop and skipped the compiled = NumPy tests)."""
from __future__ import annotations

import sys

import pytest

pytest.importorskip("numba")


def test_a_features_edit_the_compiled_loop_does_not_follow_is_one_clear_error(monkeypatch):
    from gpu_kernels.mesh import boundary as bd
    from gpu_kernels.mesh import learned

    monkeypatch.setattr(bd, "_MERGE_KERNEL", [])
    n = len(learned.FEATURES)
    monkeypatch.setattr(learned, "FEATURES", (*learned.FEATURES, "one feature more"))
    monkeypatch.delitem(sys.modules, "gpu_kernels.mesh._numba_merge", raising=False)
    with pytest.raises(learned.FeatureColumnsError, match=f"columns 0-{n - 1} by number") as e:
        bd.compiled_merge()
    assert "\n" not in str(e.value)


def test_a_broken_numba_still_falls_back_to_the_numpy_loop(monkeypatch):
    import importlib

    from gpu_kernels.mesh import boundary as bd

    monkeypatch.setattr(bd, "_MERGE_KERNEL", [])
    real = importlib.import_module

    def broken(name, *a, **kw):
        if name == "gpu_kernels.mesh._numba_merge":
            raise ImportError("numba is broken here")
        return real(name, *a, **kw)

    monkeypatch.setattr(importlib, "import_module", broken)
    assert bd.compiled_merge() is None
