"""Session 9 (issue 21, speed half): the deferred stages' counters are changed under a lock
(the window's worker, batch threads and tests count at once)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from cuda_emu import available, emu_backend

from gpu_kernels.imseg import deferred as D
from gpu_kernels.imseg import segment as SG

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


class _Guarded(dict):
    """A counters dict that records every write made without ``deferred._STATS_LOCK`` held."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.unlocked: list[str] = []

    def __setitem__(self, k, v):
        if not D._STATS_LOCK.locked():
            self.unlocked.append(k)
        super().__setitem__(k, v)


@pytest.fixture
def guarded(monkeypatch):
    g = _Guarded(D._STATS)
    monkeypatch.setattr(D, "_STATS", g)
    return g


def test_forced_counts_from_many_threads_are_all_kept_and_locked(guarded):
    """Eight threads force 2000 deferred outputs each: every count lands, and each under the
    lock (fails where ``forced`` is counted with a bare ``+=``)."""
    before = D.stats()["forced"]
    outs = [[D.Deferred("lab", lambda: 1, {}) for _ in range(2000)] for _ in range(8)]

    def force(chunk):
        for d in chunk:
            d.value()

    threads = [threading.Thread(target=force, args=(c,)) for c in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert D.stats()["forced"] == before + 16000
    assert guarded.unlocked == []


@needs_emu
def test_chain_and_direct_counts_are_locked(guarded, monkeypatch):
    """The stages' chain count and full_run's chain/direct counts are made under the lock
    (the library call itself is a stand-in here: only the counting is under test)."""
    be = emu_backend()
    monkeypatch.setattr(D, "GRAPH_AFTER", 1)
    monkeypatch.setattr(D, "_SEEN", type(D._SEEN)())
    sentinel = object()
    monkeypatch.setattr(SG, "segment_image", lambda *a, **kw: sentinel)
    img = np.zeros((8, 8, 3), np.uint8)
    s0 = D.stats()
    lt = D.lab(img, bilateral=0, bilateral_window=5, sigma_spatial=2.0, sigma_color=6.0, device=be)
    qt = D.codes(lt, q=5, device=be)
    km = D.kmeans(qt, k_max=8, iterations=2, merge_distance=18.0, device=be)
    assert D.regions(qt, km, connectivity=8, min_size=4, device=be) is sentinel
    p = {"method": "kmeans", "bilateral": 0, "bilateral_window": 5, "sigma_spatial": 2.0, "sigma_color": 6.0,
         "q": 5, "k_max": 8, "iterations": 2, "merge_distance": 18.0, "connectivity": 8, "min_size": 4}
    assert D.full_run(img, p, device=be) is sentinel
    s1 = D.stats()
    assert (s1["chains"] - s0["chains"], s1["direct"] - s0["direct"]) == (2, 1)
    assert guarded.unlocked == []
