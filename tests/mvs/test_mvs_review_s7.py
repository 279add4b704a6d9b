"""Review of session 7's MVS set-up memo (reviewer A): hazards of the kept set-up that its own
tests do not reach. CPU only (``reuse_setup=True``)."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
from test_mvs_setup_memo import (  # noqa: F401 - _fresh_memo: autouse fixture
    KW,
    _fresh_memo,
    _made_again,
    _roll_first_neighbour,
    _same,
    _scene,
)

from gpu_kernels.mvs import memo, stereo


class _Lazy(Future):
    """A future whose work runs only when someone asks for its result (a background thread that
    has not got to it yet, made deterministic)."""

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def _run(self):
        if not self.done():
            try:
                self.set_result(self._fn())
            except Exception as exc:  # noqa: BLE001 - handed to whoever asks
                self.set_exception(exc)

    def result(self, timeout=None):
        self._run()
        return super().result(timeout)

    def exception(self, timeout=None):
        self._run()
        return super().exception(timeout)


class _LazyPool:
    def submit(self, fn, *args):
        return _Lazy(lambda: fn(*args))


def test_an_input_changed_right_after_the_call_is_noticed_even_if_the_hash_was_late(monkeypatch):
    """The kept set-up's hash is taken in the background: where it had not been taken by the time
    the call returned, a caller's in-place change right after the call went into the hash, and the
    next call's check found the changed image 'the same' (a stale set-up, old matches). The call
    now waits for that hash before it returns."""
    monkeypatch.setattr(memo, "_background", lambda: _LazyPool())
    sc = _scene()
    first = stereo.reconstruct(sc, reuse_setup=True, **KW)
    assert first.stats["setup_hash_wait_s"] >= 0.0  # the wait is recorded
    _roll_first_neighbour(sc)
    _made_again(sc)


def test_a_cancelled_call_still_hashes_the_inputs_it_was_set_up_from(monkeypatch):
    """The same where the growing is cancelled (the set-up stays kept)."""
    monkeypatch.setattr(memo, "_background", lambda: _LazyPool())
    sc = _scene()

    def cancelled(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(stereo, "grow_views", cancelled)
    with pytest.raises(KeyboardInterrupt):
        stereo.reconstruct(sc, reuse_setup=True, **KW)
    monkeypatch.undo()
    monkeypatch.setattr(memo, "_background", lambda: _LazyPool())
    _roll_first_neighbour(sc)
    _made_again(sc)


def test_an_out_of_memory_release_frees_the_pinned_pool_without_the_mvs_module(monkeypatch):
    """gpu_kernels.pinned says the pinned pool's free blocks go back after an out-of-memory error
    (Backend.release_caches); only the MVS module registered that, so an imseg-only session kept
    them. The pinned module now registers it itself (the MVS module's own call is disabled here)."""
    import sys
    import types

    from gpu_kernels.backend import get_backend

    class Pool:
        freed = 0

        def n_free_blocks(self):
            return 0

        def free_all_blocks(self):
            self.freed += 1

    pool = Pool()
    cp = types.ModuleType("cupy")
    cp.get_default_pinned_memory_pool = lambda: pool
    monkeypatch.setitem(sys.modules, "cupy", cp)
    monkeypatch.setattr(stereo, "free_pinned_pool", lambda: 0)  # only the pinned module's own hook counts
    get_backend("cpu").release_caches()
    assert pool.freed == 1


@pytest.mark.parametrize("module", ["gpu_kernels.pinned", "gpu_kernels.mvs.memo"])
def test_session7_module_examples_run(module):
    """The examples in session 7's new modules' docstrings (pinned's said a 100 MiB request was its
    own size class: it is 104 MiB, classes of 1/8 of 64 MiB there; nothing ran it)."""
    import doctest
    import importlib

    res = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0 and res.failed == 0


def test_a_setup_whose_inputs_cannot_be_hashed_is_not_kept(monkeypatch):
    """Inputs the content check cannot hash count as changed (d3c7e9f): a set-up kept with them made
    every later call run twice (a hit, then 'changed', then again from scratch). It is not kept:
    each call runs once."""
    sc = _scene()
    grows = []
    real = stereo.grow_views
    monkeypatch.setattr(stereo, "grow_views", lambda *a, **k: grows.append(1) or real(*a, **k))

    def cannot():
        raise TypeError("an object array")

    real_put = memo.SETUP.put
    monkeypatch.setattr(memo.SETUP, "put", lambda key, prep, held, content: real_put(key, prep, held, cannot))
    a = stereo.reconstruct(sc, reuse_setup=True, **KW)
    b = stereo.reconstruct(sc, reuse_setup=True, **KW)
    assert len(grows) == 2 and not b.stats["setup_reused"]  # was 3: the second call grew twice
    _same(a, b)


def test_a_cancelled_hit_leaves_no_check_for_the_next_call(monkeypatch):
    """A hit defers its content check to the grower's first batches; cancelled before them, the check
    stayed queued in the thread and the next call's grower started it (hashing for nobody)."""
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **KW)

    def cancelled(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(stereo, "grow_views", cancelled)
    with pytest.raises(KeyboardInterrupt):
        stereo.reconstruct(sc, reuse_setup=True, **KW)
    assert not getattr(memo._local, "fns", None)
