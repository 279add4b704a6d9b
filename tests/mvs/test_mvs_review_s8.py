"""Session 8: the items session 7's review left in MVS. The grower goes back to its cache only once
the caller has let go of its device maps (the race itself is a GPU test:
test_mvs_review_s8_gpu.py); a stale set-up's redo shows nothing of the discarded run; seeds.py's
module example runs. CPU only."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np
import pytest
from test_mvs_review_s7 import _LazyPool
from test_mvs_setup_memo import (  # noqa: F401 - _fresh_memo: autouse fixture
    KW,
    _fresh_memo,
    _made_again,
    _roll_first_neighbour,
    _scene,
)

from gpu_kernels.mvs import grow, memo, stereo


# ----------------------------------------------------------------------------- the grower's hold
def _done(counts):
    f = Future()
    f.set_result(counts)
    return f


def _pending_maps(n=2):
    maps = [grow.DepthMap(v, *(np.zeros((2, 2)) for _ in range(6)), neighbors=[]) for v in range(n)]
    back = []
    pend = grow._Pending(_done([1] * n), maps, on_done=back.append, record=lambda: "after the reads")
    for m in maps:
        m.pending = m.hold = pend
        m.device = ("on the device",)
    return maps, back


def test_a_map_read_elsewhere_does_not_give_the_grower_back_while_the_caller_reads_its_device_maps():
    """Session 7 gave the grower back to its cache at the first wait for its download: a map read
    on another thread (the window) while reconstruct still fused from the device's maps let a
    second run of the same inputs reset the grower under the fusion. It goes back once the
    download has ended *and* the caller let go of the device's maps, with an event behind its reads
    for the next reset to wait on."""
    maps, back = _pending_maps()
    assert maps[1].depth.shape == (2, 2)  # another thread's read: waits for the download
    assert maps[0].device is None and back == []  # the download is over, the grower still held
    grow.release_device_reads(maps)
    assert back == ["after the reads"] and all(m.hold is None for m in maps)
    grow.release_device_reads(maps)  # once only
    assert back == ["after the reads"]


def test_a_release_before_the_download_ends_gives_the_grower_back_at_the_wait():
    maps, back = _pending_maps()
    grow.release_device_reads(maps)
    assert back == []
    maps[0].wait()
    assert back == ["after the reads"]


def test_finish_maps_lets_go_of_the_device_maps():
    """reconstruct's finish_maps (after the fusion) is what lets go."""
    maps, back = _pending_maps()
    stats = {}
    stereo.finish_maps(maps, stats)
    assert back == ["after the reads"] and stats["samples"] == 2


# ----------------------------------------------------------------------------- a stale set-up's redo
class _NowPool:
    """A background pool that runs each job at once (the content check is answered at its start)."""

    def submit(self, fn, *args):
        f = Future()
        f.set_result(fn(*args))
        return f


@pytest.mark.parametrize("answered", ["while it grows", "after it grew"])
@pytest.mark.slow
def test_a_stale_setups_redo_shows_only_the_redone_maps_and_the_bar_never_goes_back(monkeypatch, answered):
    """An input changed in place after the set-up was kept: the call grows from the kept set-up,
    the content check says 'changed', and the call is made again. Session 7 showed the discarded
    growing's maps in the callback and started the bar again from 0; now the growing's reports wait
    for the check's answer: the callback only ever gets the returned maps, the bar only goes
    forward, and the redo says why. Where the answer comes while it grows, the discarded growing
    stops there."""
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **KW)
    _roll_first_neighbour(sc)
    monkeypatch.setattr(memo, "_background", lambda: _NowPool() if answered == "while it grows" else _LazyPool())
    started, grown = [], []
    real = stereo.grow_views

    def counted(*a, **k):
        started.append(1)
        grown.append(real(*a, **k))
        return grown[-1]

    monkeypatch.setattr(stereo, "grow_views", counted)
    shown, bar = [], []
    res = _made_again(sc, callback=lambda maps, info: shown.append(list(maps)),
                      progress=lambda f, s: bar.append((f, s)))
    assert shown and all(m is r for maps in shown for m, r in zip(maps, res.maps, strict=True))
    fractions = [f for f, _ in bar]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any("inputs changed" in s for _, s in bar)
    # three growings (the kept set-up's, the redo, the fresh one compared with): the first stopped
    # at its first report where the answer came while it grew, else grown to its end
    assert len(started) == 3 and len(grown) == (2 if answered == "while it grows" else 3)


@pytest.mark.slow
def test_on_the_emulated_device_a_stale_setup_stops_the_growing_in_its_loop(monkeypatch):
    """The device loop (the test suite's CUDA emulator): the check starts after the first batches
    are queued, answers 'changed', and the next report stops the growing there (the GPU waits for
    the queued batches first); the result is a fresh set-up's, and the callback only ever got the
    redo's preview maps (one list per growing)."""
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    dev = cuda_emu.emu_backend("numpy")
    kw = {"device": dev, "batch_size": 32}
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **{**KW, **kw})
    _roll_first_neighbour(sc)
    monkeypatch.setattr(memo, "_background", lambda: _NowPool())
    loops = []
    real = grow._DeviceGrower.launch
    monkeypatch.setattr(grow._DeviceGrower, "launch", lambda self, g: loops.append(1) or real(self, g))
    at_redo = []
    real_prepare = stereo.prepare_views
    monkeypatch.setattr(stereo, "prepare_views", lambda *a, **k: at_redo.append(len(loops)) or real_prepare(*a, **k))
    shown = []
    stale = memo.SETUP.stale
    got = stereo.reconstruct(sc, reuse_setup=True, callback=lambda maps, info: shown.append(maps), **{**KW, **kw})
    assert memo.SETUP.stale == stale + 1 and not got.stats["setup_reused"]
    assert len({id(maps) for maps in shown}) == 1
    # the discarded growing stopped at the first report after the check's answer: the batches
    # queued before it (the redo grows all of its own, over 30)
    assert at_redo == [grow._AHEAD] and got.stats["batches"] > 30
    monkeypatch.setattr(grow, "GROWER_CACHE", False)
    want = stereo.reconstruct(sc, reuse_setup=False, **{**KW, **kw})
    for x, y in zip(got.maps, want.maps, strict=True):
        np.testing.assert_array_equal(x.depth, y.depth)


def test_a_fresh_setup_still_reports_while_it_grows(monkeypatch):
    """The held reports are only a kept set-up's, until its check answers: the same inputs again
    give every report of the growing after the answer."""
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **KW)
    monkeypatch.setattr(memo, "_background", lambda: _NowPool())
    shown, bar = [], []
    res = stereo.reconstruct(sc, reuse_setup=True, callback=lambda maps, info: shown.append(info["batch"]),
                             progress=lambda f, s: bar.append(f), **KW)
    assert res.stats["setup_reused"] and shown == list(range(1, res.stats["batches"] + 1))
    assert bar == sorted(bar) and bar[-1] == 1.0


# ----------------------------------------------------------------------------- module examples
@pytest.mark.parametrize("module", ["gpu_kernels.mvs.seeds"])
@pytest.mark.slow
def test_module_examples_run(module):
    """seeds.py's example failed since session 6 (4 views of 160 x 120 give no SIFT seed at all:
    ``min()`` of nothing). flow_progress.py's example runs in tests/flow/test_flow_doctests.py."""
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0
