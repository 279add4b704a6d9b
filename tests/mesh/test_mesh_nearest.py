"""gpu_kernels.mesh.nearest.kd_nearest: SciPy's nearest-point answer on several threads,
and no search thread outlives an interrupted call (a Ctrl+C during the thickness left
SciPy's daemon query threads running into the interpreter's exit: SIGSEGV)."""

from __future__ import annotations

import doctest
import threading
import time

import numpy as np
import pytest
from scipy.spatial import cKDTree

from gpu_kernels.mesh import nearest
from gpu_kernels.mesh.nearest import kd_nearest


def test_doctest():
    assert doctest.testmod(nearest).failed == 0


@pytest.mark.parametrize("n", [0, 1, 700, 5000])
@pytest.mark.parametrize("workers", [None, 1, 2, 5])
def test_same_answer_as_scipy(n, workers):
    rng = np.random.default_rng(n)
    tree = cKDTree(rng.random((3000, 3)))
    q = rng.random((n, 3))
    d, j = kd_nearest(tree, q, workers=workers)
    d0, j0 = tree.query(q, k=1)
    assert d.shape == (n,) and j.shape == (n,)
    assert np.array_equal(j, j0) and np.allclose(d, d0)


class _SlowTree:
    """A tree whose search takes a while on the helper threads and raises ``exc`` on the
    caller's thread (as a KeyboardInterrupt lands there)."""

    def __init__(self, exc_main=None, exc_worker=None):
        self.main = threading.get_ident()
        self.exc_main, self.exc_worker = exc_main, exc_worker
        self.finished = []

    def query(self, x, k=1):
        if threading.get_ident() == self.main:
            if self.exc_main is not None:
                raise self.exc_main
        else:
            time.sleep(0.2)
            if self.exc_worker is not None:
                raise self.exc_worker
            self.finished.append(len(x))
        return np.zeros(len(x)), np.zeros(len(x), dtype=np.intp)


def _search_threads():
    return [t for t in threading.enumerate() if t.name == "gpulab-kd-nearest"]


def test_interrupt_waits_for_every_search_thread():
    tree = _SlowTree(exc_main=KeyboardInterrupt())
    q = np.zeros((4 * nearest.MIN_ROWS_PER_THREAD, 3))
    with pytest.raises(KeyboardInterrupt):
        kd_nearest(tree, q, workers=4)
    assert len(tree.finished) == 3           # the three helper blocks ran to their end
    assert _search_threads() == []


def test_error_on_a_search_thread_reaches_the_caller():
    tree = _SlowTree(exc_worker=MemoryError("boom"))
    q = np.zeros((2 * nearest.MIN_ROWS_PER_THREAD, 3))
    with pytest.raises(MemoryError, match="boom"):
        kd_nearest(tree, q, workers=2)
    assert _search_threads() == []


def test_search_threads_are_not_daemons():
    seen = []

    class Tree:
        def query(self, x, k=1):
            seen.append(threading.current_thread().daemon)
            return np.zeros(len(x)), np.zeros(len(x), dtype=np.intp)

    kd_nearest(Tree(), np.zeros((3 * nearest.MIN_ROWS_PER_THREAD, 3)), workers=3)
    assert seen.count(False) == 3
