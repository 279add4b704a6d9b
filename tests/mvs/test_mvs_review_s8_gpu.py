"""Session 8 on the GPU: the grower check-in race session 7's review left. A grower went back to its
cache at the first wait for its maps' download, possibly while reconstruct's fusion still read its
maps on the device; a second run of the same inputs could then reset it under the fusion. It now
goes back after the fusion (finish_maps), and its next reset waits on the device for an event
recorded behind the fusion's reads. Needs CuPy and a CUDA device."""

from __future__ import annotations

import threading
import traceback

import pytest
from test_mvs_setup_gpu import _same

from gpu_kernels.mvs import grow, memo, stereo

pytestmark = pytest.mark.gpu

KW = {"views": "all", "neighbors": 5, "min_views": 3, "device": "cuda", "batch_size": 1024}


def _fresh(sc, monkeypatch, **kw):
    """A run with nothing kept (no set-up, no grower)."""
    monkeypatch.setattr(grow, "GROWER_CACHE", False)
    try:
        return stereo.reconstruct(sc, reuse_setup=False, **{**KW, **kw})
    finally:
        monkeypatch.setattr(grow, "GROWER_CACHE", True)


def test_a_run_of_the_same_inputs_during_the_fusion_does_not_reset_the_grower_under_it(small_scene, monkeypatch):
    """Thread A fuses; its maps are read on another thread meanwhile (the download waited for:
    session 7 gave the grower back then), and thread B runs the same inputs with another NCC
    threshold (the same grower, retuned and reset) while A's fusion still has views to read. A's
    cloud and B's result must be those of fresh runs; a third run, which resets A's grower behind
    A's reads, too."""
    sc = small_scene.scene
    memo.release()
    want_a = _fresh(sc, monkeypatch)
    want_b = _fresh(sc, monkeypatch, ncc_accept=0.9)
    stereo.reconstruct(sc, **KW)  # the set-up and the grower kept
    assert len(grow._GROWERS) == 1
    grown = []
    real = stereo.grow_views
    monkeypatch.setattr(stereo, "grow_views", lambda *a, **k: grown.append(real(*a, **k)) or grown[-1])
    got_b, fired = [], []

    def progress(fraction, stage):
        if "fusing view 2/" in stage and not fired:  # A's fusion has views left to read
            fired.append(stage)
            assert grown[0][0][0].depth.shape  # A's map read elsewhere: waits for A's download
            t = threading.Thread(target=lambda: got_b.append(stereo.reconstruct(sc, ncc_accept=0.9, **KW)))
            t.start()
            t.join()

    got_a = stereo.reconstruct(sc, progress=progress, **KW)
    assert fired and len(got_b) == 1 and got_a.stats["setup_reused"]
    _same(got_b[0], want_b)
    _same(got_a, want_a)
    _same(stereo.reconstruct(sc, **KW), want_a)  # a grower given back after the fusion, reset behind it
    grown.clear()  # the results the progress closure holds (its Progress root is a reference cycle)
    got_b.clear()
    memo.release()


def test_back_to_back_runs_on_two_threads_give_a_fresh_runs_result(small_scene, monkeypatch):
    """Two threads running the same inputs (with fusion) back to back, sharing the kept set-up and
    growers: every result is a fresh run's, bit for bit."""
    sc = small_scene.scene
    memo.release()
    want = _fresh(sc, monkeypatch)
    got, errors = [], []

    def worker():
        try:
            for _ in range(4):
                got.append(stereo.reconstruct(sc, **KW))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, "".join(traceback.format_exception(errors[0]))  # where it failed (session 9 saw only the message)
    assert len(got) == 8
    for g in got:
        _same(g, want)
    memo.release()


def test_a_stale_setup_noticed_while_the_device_grows_gives_a_fresh_runs_result(small_scene):
    """An image changed in place after the set-up was kept: the content check answers while the
    device grows (it starts after the first batches), the growing stops at its next report (its
    queued batches land first) and the call is made again: the result of a fresh set-up, and the
    callback never saw the discarded maps."""
    import dataclasses

    import numpy as np

    sc = dataclasses.replace(small_scene.scene, images=[np.array(im) for im in small_scene.scene.images])
    kw = {**KW, "views": [0, 1, 2]}
    memo.release()
    stereo.reconstruct(sc, **kw)
    im = sc.images[stereo.prepare_views(sc, views=[0], neighbors=5, min_views=3, device="cuda",
                                        pack=False).neighbors[0][0]]
    im[...] = np.roll(im, 7, axis=1)
    stale = memo.SETUP.stale
    shown = []
    got = stereo.reconstruct(sc, callback=lambda maps, info: shown.append(maps), **kw)
    assert memo.SETUP.stale == stale + 1 and not got.stats["setup_reused"]
    # one growing's previews (one list of preview maps per growing): the redo's alone
    assert shown and len({id(maps) for maps in shown}) == 1
    memo.release()
    _same(got, stereo.reconstruct(sc, reuse_setup=False, **kw))
    memo.release()
