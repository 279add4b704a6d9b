"""Session 9: a stale set-up's grower (session 8's review left it in the 2-entry grower cache until
evicted: device memory only, never a wrong result, since its key names the stale set-up's textures
by object and no later call can take it). It now goes when its set-up goes stale, and one still in
use is not given back. CPU only: the device loop runs on the test suite's CUDA emulator (the GPU
run of the same: test_mvs_review_s9_gpu.py)."""

from __future__ import annotations

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


def _emu():
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    return {"device": cuda_emu.emu_backend("numpy"), "batch_size": 1024}


def _kept_textures():
    """The textures of the set-ups the memo keeps now."""
    with memo.SETUP._lock:
        return [e.prep.textures for e in memo.SETUP._d.values()]


def _cached_textures():
    with grow._GROWERS_LOCK:
        return [gr.tx for gr in grow._GROWERS.values()]


@pytest.mark.slow
def test_a_stale_setups_grower_leaves_the_cache_with_it(monkeypatch):
    """The content check answers 'changed' after the growing ended (the grower went back at the
    end of its run); the set-up is made again. Session 8 kept the stale set-up's grower in the
    cache beside the new one's; now only growers of kept set-ups stay."""
    # 3 growing iterations, not the default 20 (~1 s against ~2.8 s a call in the emulator): the test follows which
    # set-ups, textures and growers are kept, and the check's answer comes after the growing whatever its length
    kw = {**KW, **_emu(), "max_iter": 3}
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **kw)
    (old_tx,) = _kept_textures()
    assert [t is old_tx for t in _cached_textures()] == [True]
    _roll_first_neighbour(sc)
    monkeypatch.setattr(memo, "_background", lambda: _LazyPool())  # answered after the growing
    stale = memo.SETUP.stale
    got = stereo.reconstruct(sc, reuse_setup=True, **kw)
    assert memo.SETUP.stale == stale + 1 and not got.stats["setup_reused"]
    (new_tx,) = _kept_textures()
    cached = _cached_textures()
    assert not any(t is old_tx for t in cached)
    assert len(cached) == 1 and cached[0] is new_tx
    # and the redone set-up's grower is still the one used next time
    again = stereo.reconstruct(sc, reuse_setup=True, **kw)
    assert again.stats["setup_reused"] and _cached_textures()[0] is new_tx


def test_the_redo_keeps_its_results_and_the_cpu_path_too():
    """The CPU path (no grower cache) is unchanged: the redo gives a fresh set-up's maps."""
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **KW)
    _roll_first_neighbour(sc)
    _made_again(sc)


class _Grower:
    """What the cache reads of a grower."""

    def __init__(self, tx, key):
        self.tx, self.cache_key = tx, key


class _Tx:
    pass


def test_a_grower_in_use_when_its_setup_goes_stale_is_not_given_back():
    """Another thread's run of the same set-up still has its grower when the set-up goes stale:
    it is not given back at the end of that run; other growers are."""
    stale, fresh = _Tx(), _Tx()
    grow._checkin(_Grower(stale, "a"))
    busy = _Grower(stale, "b")
    grow.drop_growers_of(stale)
    assert grow._GROWERS == {}
    grow._checkin(busy)
    grow._checkin(_Grower(fresh, "c"))
    assert list(grow._GROWERS) == ["c"]
    # the mark goes with its textures (an id taken again by another object is not stale)
    i = id(stale)
    assert i in grow._STALE
    del stale, busy
    assert i not in grow._STALE


def test_forget_leaves_a_setup_another_thread_has_made_again():
    """Two runs found the same set-up stale: the first one's redo keeps a new set-up under the same
    key; the second one's forget drops its own (stale) set-up's growers, not the new set-up."""
    seen = []
    memo.on_stale(seen.append)
    try:
        memo.SETUP.put("k", "new", (), lambda: [])
        memo.SETUP.forget("k", "old")
        assert len(memo.SETUP) == 1 and seen == ["old"]
        memo.SETUP.forget("k", "new")
        assert len(memo.SETUP) == 0 and seen == ["old", "new"]
    finally:
        memo._STALE_HOOKS.remove(seen.append)
