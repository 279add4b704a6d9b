"""Issue 22 (session 8): the working resolution's simplification started on a thread of its
own (``simplify.simplify_in_background``) gives what ``simplify_mesh`` gives, re-raises its
errors on the caller's thread, and imports the simplifier on the calling thread first
(pymeshlab imported first from a worker thread corrupted the heap, session 6)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from gpu_kernels.mesh import simplify as simp


def _sphere(n_sub: int = 40):
    """A closed UV sphere of about 2 * n_sub**2 triangles."""
    th = np.linspace(0.0, np.pi, n_sub + 1)[1:-1]
    ph = np.linspace(0.0, 2 * np.pi, 2 * n_sub, endpoint=False)
    t, p = np.meshgrid(th, ph, indexing="ij")
    v = np.c_[np.sin(t).ravel() * np.cos(p).ravel(), np.sin(t).ravel() * np.sin(p).ravel(), np.cos(t).ravel()]
    v = np.vstack([v, [0, 0, 1], [0, 0, -1]]) * (1.0 + 0.05 * np.sin(5 * np.arange(len(v) + 2)))[:, None]
    rows, cols = len(th), len(ph)
    top, bot = rows * cols, rows * cols + 1
    f = []
    for i in range(rows - 1):
        for j in range(cols):
            a, b = i * cols + j, i * cols + (j + 1) % cols
            c, d = a + cols, b + cols
            f += [[a, c, b], [b, c, d]]
    for j in range(cols):
        f.append([top, j, (j + 1) % cols])
        f.append([bot, (rows - 1) * cols + (j + 1) % cols, (rows - 1) * cols + j])
    return v, np.asarray(f, dtype=np.int64)


@pytest.mark.parametrize("method", ["fast+pymeshlab", "fast", "pymeshlab"])
def test_background_result_is_simplify_mesh(method):
    if method not in simp.available_simplifiers():
        pytest.skip(f"{method} is not installed here")
    v, f = _sphere()
    target = 600
    assert f.shape[0] > simp.PRE_FACTOR * target * 1.2  # fast+pymeshlab takes both steps
    want = simp.simplify_mesh(v, f, target, method=method)
    got = simp.simplify_in_background(v, f, target, method).result()
    assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()
    assert got[0].dtype == np.float64 and got[1].dtype == np.int64


def test_background_runs_the_callers_function_on_another_thread_and_reraises(monkeypatch):
    monkeypatch.setattr(simp, "BACKGROUND_FAST", True)   # a thread whatever is installed
    seen = {}

    def fn(v, f, t):
        seen["thread"] = threading.current_thread()
        raise MemoryError(f"no room for {t}")

    job = simp.simplify_in_background(np.zeros((3, 3)), np.array([[0, 1, 2]]), 7, fn=fn)
    with pytest.raises(MemoryError, match="no room for 7"):
        job.result()
    assert seen["thread"] is not threading.current_thread()
    assert not seen["thread"].daemon and job.done()


def test_the_simplifier_is_imported_on_the_calling_thread_first(monkeypatch):
    if not simp.available_simplifiers():
        pytest.skip("no simplifier is installed here")
    imported = []
    real = simp.importlib.import_module

    def record(name, *a):
        imported.append((name, threading.current_thread()))
        return real(name, *a)

    monkeypatch.setattr(simp.importlib, "import_module", record)
    order = []
    job = simp.simplify_in_background(np.zeros((3, 3)), np.array([[0, 1, 2]]), 7,
                                      fn=lambda v, f, t: order.append(len(imported)))
    job.result()
    want = {simp._MODULES[p] for p in simp._resolve(None).split("+")}
    assert {n for n, _ in imported} == want
    assert all(th is threading.current_thread() for _, th in imported)
    assert order == [len(want)]  # the imports came before the call


def test_fast_alone_runs_at_once_on_the_calling_thread():
    """fast-simplification holds the GIL for its whole run: no thread for it alone."""
    if "fast" not in simp.available_simplifiers():
        pytest.skip("fast-simplification is not installed here")
    seen = []

    def fn(v, f, t, method=None):
        seen.append((threading.current_thread(), method))
        raise ValueError("bad mesh")

    job = simp.simplify_in_background(np.zeros((3, 3)), np.array([[0, 1, 2]]), 7, "fast", fn=fn)
    assert seen == [(threading.current_thread(), "fast")] and job.done()
    with pytest.raises(ValueError, match="bad mesh"):
        job.result()
    v, f = _sphere()
    got = simp.simplify_in_background(v, f, 600, "fast").result()
    want = simp.simplify_mesh(v, f, 600, method="fast")
    assert got[0].tobytes() == want[0].tobytes() and got[1].tobytes() == want[1].tobytes()


def test_unknown_simplifier_raises_at_the_call():
    with pytest.raises(ValueError, match="unknown simplifier"):
        simp.simplify_in_background(np.zeros((3, 3)), np.array([[0, 1, 2]]), 7, "nope")


def test_prepare_mesh_starts_the_simplification_before_the_dual_graph_and_uses_it(monkeypatch):
    """The automatic working resolution is simplified on a thread started before the full
    mesh's dual graph, once, and the segmentation is exactly the one without the early start."""
    from gpu_kernels.mesh import segment

    if not simp.available_simplifiers():
        pytest.skip("no simplifier is installed here")
    monkeypatch.setattr(segment, "WORKING_FACES", 1000)   # a small working resolution: a quick test
    monkeypatch.setattr(simp, "BACKGROUND_FAST", True)    # a thread also where only fast is installed
    v, f = _sphere(30)
    assert f.shape[0] > 3 * segment.WORKING_FACES
    events = []
    real_dual, real_simplify = segment.dual_graph, segment.simplify_mesh

    def dual(*a, **kw):
        events.append(("dual", len(a[1])))
        return real_dual(*a, **kw)

    def simplify(*a, **kw):
        events.append(("simplify", threading.current_thread() is threading.main_thread()))
        return real_simplify(*a, **kw)

    real_start = segment.simplify_in_background

    def start(*a, **kw):
        events.append(("start", len(a[1])))
        return real_start(*a, **kw)

    monkeypatch.setattr(segment, "dual_graph", dual)
    monkeypatch.setattr(segment, "simplify_mesh", simplify)
    monkeypatch.setattr(segment, "simplify_in_background", start)
    early = segment.segment_mesh(v, f, k=3, device="cpu")
    assert events.index(("start", f.shape[0])) < events.index(("dual", f.shape[0]))  # started first
    assert [e for e in events if e[0] == "simplify"] == [("simplify", False)]  # once, on its own thread
    events.clear()

    def no_thread(*a, **kw):
        raise RuntimeError("no early start")

    monkeypatch.setattr(segment, "simplify_in_background", no_thread)
    plain = segment.segment_mesh(v, f, k=3, device="cpu")
    assert [e for e in events if e[0] == "simplify"] == [("simplify", True)]
    assert early.labels.tobytes() == plain.labels.tobytes()
    assert early.memberships.tobytes() == plain.memberships.tobytes()
    assert early.face_colors.tobytes() == plain.face_colors.tobytes()
