"""Session 18's review (F2): the shipped learned models are decoded once per process, and a first use from two threads
at once (two segment calls in one process: ``gpulab batch`` with a multi-thread dask worker) hands each caller its own
model — never the integer k's model where k = "auto"'s is asked for. Before, both loaders appended to one list and
``shipped_auto_model`` returned whatever sat at index 1."""

from __future__ import annotations

import threading
import time

from gpu_kernels.mesh import learned


def test_a_first_use_from_two_threads_at_once_gives_each_its_own_model(monkeypatch):
    monkeypatch.setattr(learned, "_SHIPPED", {})
    real = learned.TreeModel.from_npz
    decoded = []

    def slow(src):   # a slow decode widens the window in which the other thread comes in
        decoded.append(1)
        time.sleep(0.05)
        return real(src)

    monkeypatch.setattr(learned.TreeModel, "from_npz", staticmethod(slow))
    start = threading.Barrier(4)
    got: dict = {}

    def load(name, fn):
        start.wait()
        got[name] = fn()

    ts = [threading.Thread(target=load, args=(f"{n}{i}", fn)) for i in range(2)
          for n, fn in (("k", learned.shipped_model), ("auto", learned.shipped_auto_model))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(10)
    assert got["k0"] is got["k1"] and got["auto0"] is got["auto1"]
    assert got["k0"] is not got["auto0"]
    assert len(decoded) == 2            # each model decoded once
    # the right ones: the k = "auto" model reads the first 20 columns, the integer k's 21 (their trees differ)
    monkeypatch.setattr(learned, "_SHIPPED", {})
    monkeypatch.setattr(learned.TreeModel, "from_npz", staticmethod(real))
    assert _same(got["auto0"], learned.shipped_auto_model()) and _same(got["k0"], learned.shipped_model())
    assert not _same(got["k0"], got["auto0"])


def _same(a, b) -> bool:
    import numpy as np

    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("feature", "threshold", "value"))
