"""gpu_kernels.jobs.BackgroundCall: the one background-call helper (the mesh simplification uses
it; session 8's nearest-face search, removed in session 9, was its other user)."""

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


def test_the_mesh_simplification_job_is_a_background_call(monkeypatch):
    import numpy as np

    from gpu_kernels.mesh import simplify

    monkeypatch.setattr(simplify, "BACKGROUND_FAST", True)
    job = simplify.simplify_in_background(np.zeros((3, 3)), np.array([[0, 1, 2]]), 4, method="fast",
                                          fn=lambda v, f, t, method=None: (v, f))
    assert isinstance(job, BackgroundCall)
    assert job.result()[1].shape == (1, 3)
