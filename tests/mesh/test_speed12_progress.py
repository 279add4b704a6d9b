"""Issue 22 (session 12; mesh-auto's cancel gap): the row's Progress reaches the merge loops that
``segment._merge_to_targets`` runs (the hand-made, the learned integer-k and the learned k = "auto" merges, and
k = "auto"'s small-part absorption), so a cancel during the merges ends them there, not only at the next stage."""

from __future__ import annotations

import threading

import pytest
from test_speed8_simplify import _sphere  # (tests/mesh is on sys.path under pytest)

from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.mesh import boundary as _bd
from gpu_kernels.mesh import defaults as _defaults
from gpu_kernels.mesh import learned as _learned
from gpu_kernels.mesh import segment

CASES = [  # (k, DEFAULT_K_MERGE, DEFAULT_AUTO_MERGE, the function the merges run in)
    (4, "hand", "hand", (_bd, "merge_weakest_boundaries")),
    (4, "learned", "hand", (_learned, "k_merge")),
    ("auto", "learned", "hand", (_bd, "merge_weakest_boundaries")),
    ("auto", "learned", "learned", (_learned, "auto_merge")),
]


def _mesh():
    return _sphere(24)


@pytest.mark.parametrize(("k", "k_merge", "auto_merge", "where"), CASES)
def test_a_cancel_in_the_merges_ends_them_there(monkeypatch, k, k_merge, auto_merge, where):
    monkeypatch.setattr(_defaults, "DEFAULT_K_MERGE", k_merge)
    monkeypatch.setattr(_defaults, "DEFAULT_AUTO_MERGE", auto_merge)
    event = threading.Event()
    seen = {"calls": 0, "raised_here": False}
    mod, name = where
    real = getattr(mod, name)

    def spy(*a, **kw):
        if kw.get("progress") is not None and not event.is_set():
            seen["calls"] += 1
            event.set()   # the user presses Cancel as the merges start
            try:
                return real(*a, **kw)
            except Cancelled:
                seen["raised_here"] = True
                raise
        return real(*a, **kw)

    monkeypatch.setattr(mod, name, spy)
    v, f = _mesh()
    with pytest.raises(Cancelled):
        segment.segment_mesh(v, f, k=k, device="cpu", progress=Progress(cancel_event=event))
    assert seen["calls"] == 1 and seen["raised_here"]


def test_the_absorption_gets_the_progress_and_no_merge_loop_runs_without_it(monkeypatch):
    monkeypatch.setattr(_defaults, "DEFAULT_AUTO_MERGE", "hand")
    got = {"absorb": [], "merge": []}
    real_absorb, real_merge = segment.absorb_small_parts, _bd.merge_weakest_boundaries

    def absorb(*a, **kw):
        got["absorb"].append(kw.get("progress"))
        return real_absorb(*a, **kw)

    def merge(*a, **kw):
        got["merge"].append(kw.get("progress"))
        return real_merge(*a, **kw)

    monkeypatch.setattr(segment, "absorb_small_parts", absorb)
    monkeypatch.setattr(_bd, "merge_weakest_boundaries", merge)
    v, f = _mesh()
    prog = Progress()
    segment.segment_mesh(v, f, k="auto", device="cpu", progress=prog)
    assert got["absorb"] and all(isinstance(p, Progress) for p in got["absorb"])
    assert got["merge"] and all(isinstance(p, Progress) for p in got["merge"])
    assert not hasattr(segment, "_MERGE_PROGRESS")   # (session 13: a keyword, no thread-local)


def test_the_progress_reaches_merge_to_targets_as_a_keyword(monkeypatch):
    """Session 13: ``_merge_to_targets(..., progress=)`` (was a thread-local); a wrapper that passes ``**kw`` on
    keeps working, and the merges see the row's Progress, never the stage's None."""
    got = []
    real = segment._merge_to_targets

    def wrapper(*a, **kw):
        got.append(kw.get("progress"))
        return real(*a, **kw)

    monkeypatch.setattr(segment, "_merge_to_targets", wrapper)
    v, f = _mesh()
    segment.segment_mesh(v, f, k=4, device="cpu", progress=Progress())
    assert got and all(isinstance(p, Progress) for p in got)


def test_the_learned_auto_absorption_gets_the_progress_too(monkeypatch):
    """k = auto's default (the learned merges) absorbs its small parts with the job's progress as well
    (session 12's reviewer: learned.auto_merge called absorb_small_parts without it)."""
    monkeypatch.setattr(_defaults, "DEFAULT_AUTO_MERGE", "learned")
    got = []
    real_absorb = segment.absorb_small_parts

    def absorb(*a, **kw):
        got.append(kw.get("progress"))
        return real_absorb(*a, **kw)

    monkeypatch.setattr(segment, "absorb_small_parts", absorb)
    v, f = _mesh()
    segment.segment_mesh(v, f, k="auto", device="cpu", progress=Progress())
    assert got and all(isinstance(p, Progress) for p in got)
