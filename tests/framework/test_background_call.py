"""gpu_kernels.jobs.BackgroundCall: the one background-call helper (the mesh simplification and
the mesh nearest-face search both use it; each had its own copy in session 8)."""

from __future__ import annotations

import doctest
import threading

import pytest

from gpu_kernels import jobs
from gpu_kernels.jobs import BackgroundCall


def test_value_error_thread_and_example():
    seen = {}

    def work(a, b=0):
        seen["thread"] = threading.current_thread()
        return a + b

    job = BackgroundCall(work, 2, b=3, name="gpulab-test-call")
    assert job.result() == 5 and job.done()
    assert seen["thread"].name == "gpulab-test-call" and not seen["thread"].daemon
    assert seen["thread"] is not threading.current_thread()

    def fail():
        raise KeyError("from the thread")

    bad = BackgroundCall(fail)
    bad.join()                                    # join only waits: no error here
    with pytest.raises(KeyError, match="from the thread"):
        bad.result()                              # the error reaches the caller's thread
    res = doctest.testmod(jobs)
    assert res.failed == 0 and res.attempted > 0


def test_the_mesh_jobs_are_background_calls(monkeypatch):
    import numpy as np

    from gpu_kernels.mesh import segment, simplify

    monkeypatch.setattr(simplify, "BACKGROUND_FAST", True)
    job = simplify.simplify_in_background(np.zeros((3, 3)), np.array([[0, 1, 2]]), 4, method="fast",
                                          fn=lambda v, f, t, method=None: (v, f))
    near = segment._nearest_in_background(np.eye(3), np.eye(3))
    assert isinstance(job, BackgroundCall) and isinstance(near, BackgroundCall)
    assert job.result()[1].shape == (1, 3)
    np.testing.assert_array_equal(near.result(), [0, 1, 2])
