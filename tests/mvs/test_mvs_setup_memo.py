"""The set-up kept between reconstructions (session 7, issue 24: one view re-run without its 5 ms of
Python set-up): the memo of :func:`reconstruct`'s prepared views, the seeds' pixels and the device
grower, and the shared page-locked blocks (gpu_kernels/pinned.py). No GPU needed: the CPU path with
``reuse_setup=True`` and the test suite's CUDA emulator for the grower."""

from __future__ import annotations

import functools
import gc
import sys
import types

import numpy as np
import pytest

from gpu_kernels import pinned
from gpu_kernels.mvs import grow, memo, stereo
from gpu_kernels.mvs.synth import render_synthetic_scene

KW = {"views": [0], "neighbors": 4, "min_views": 3, "fuse": False, "device": "cpu"}
FIELDS = ("depth", "normal", "conf", "iters", "hs", "ht")


@functools.cache
def _syn():
    return render_synthetic_scene(n_views=6, width=64, height=48)


def _scene():
    """A fresh copy of a small synthetic scene (its own image, camera, point and track arrays,
    which the tests change in place), with sparse points taken from the true depths."""
    import dataclasses

    syn = _syn()
    sc = syn.scene
    pts = []
    for v in range(sc.n_views):
        ys, xs = np.mgrid[6:42:5, 6:58:5]
        d = syn.depths[v][ys, xs]
        ok = np.isfinite(d) & (d > 0)
        pts.append(sc.cameras[v].backproject(np.stack([xs[ok], ys[ok]], 1).astype(np.float64), d[ok]))
    pts = np.concatenate(pts)
    return dataclasses.replace(sc, images=[np.array(im) for im in sc.images],
                               cameras=[dataclasses.replace(c, K=c.K.copy(), R=c.R.copy(), t=c.t.copy())
                                        for c in sc.cameras],
                               points=pts, point_views=[np.arange(sc.n_views) for _ in range(len(pts))])


def _same(a, b):
    for x, y in zip(a.maps, b.maps, strict=True):
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)


def _made_again(sc, **kw):
    """A call with the kept set-up after an in-place change of its inputs: the set-up counted stale
    once, and the maps of a fresh set-up (``kw``: the call's other keywords). Returns the result."""
    stale_before = memo.SETUP.stale
    got = stereo.reconstruct(sc, reuse_setup=True, **KW, **kw)
    want = stereo.reconstruct(sc, reuse_setup=False, **KW)
    assert memo.SETUP.stale == stale_before + 1
    _same(got, want)
    return got


def _first_neighbour(sc) -> int:
    """View 0's first neighbour (whose image the set-up packed)."""
    return int(stereo.prepare_views(sc, views=[0], neighbors=4, min_views=3, device="cpu", pack=False).neighbors[0][0])


def _roll_first_neighbour(sc) -> None:
    """Move view 0's first neighbour's pixels in place (other matches, same objects, same key)."""
    im = sc.images[_first_neighbour(sc)]
    im[...] = np.roll(im, 7, axis=1)


@pytest.fixture(autouse=True)
def _fresh_memo():
    memo.release()
    yield
    memo.release()


def test_a_second_call_reuses_the_setup_and_gives_the_same_maps(monkeypatch):
    sc = _scene()
    prepares = []
    real = stereo.prepare_views
    monkeypatch.setattr(stereo, "prepare_views", lambda *a, **k: prepares.append(1) or real(*a, **k))
    a = stereo.reconstruct(sc, reuse_setup=True, **KW)
    b = stereo.reconstruct(sc, reuse_setup=True, **KW)
    assert len(prepares) == 1 and not a.stats["setup_reused"] and b.stats["setup_reused"]
    assert a.maps[0].n_samples > 300
    _same(a, b)
    # other parameters of the set-up, or none kept: made again
    stereo.reconstruct(sc, reuse_setup=True, **{**KW, "neighbors": 5})
    stereo.reconstruct(sc, reuse_setup=False, **KW)
    assert len(prepares) == 3


@pytest.mark.parametrize("change", ["image", "points", "tracks"])
def test_an_input_changed_in_place_is_noticed_and_the_result_made_again(change):
    """The kept set-up is used at once, and its inputs' content is checked meanwhile: an image, the
    points or a track changed in place (same objects, so the same key) gives the result of a fresh
    set-up, not the kept one's."""
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **KW)
    nb0 = _first_neighbour(sc)
    if change == "image":
        _roll_first_neighbour(sc)  # a neighbour's pixels move: other matches
    elif change == "points":
        sc.points[...] = sc.points * 1.02  # the seeds move off the surface
    else:
        for v in sc.point_views:  # every track loses the first neighbour (view 0 stands in)
            v[v == nb0] = 0
    _made_again(sc)


def test_the_kept_setup_would_be_stale_without_the_check(monkeypatch):
    """The test above can fail: with the content check answering 'same', the changed image gives
    the old set-up's maps."""
    sc = _scene()
    monkeypatch.setattr(memo, "digest", lambda arrays: b"same")
    stereo.reconstruct(sc, reuse_setup=True, **KW)
    _roll_first_neighbour(sc)
    got = stereo.reconstruct(sc, reuse_setup=True, **KW)
    want = stereo.reconstruct(sc, reuse_setup=False, **KW)
    with pytest.raises(AssertionError):
        _same(got, want)


def test_a_camera_changed_in_place_misses_the_memo():
    """Cameras are in the key by value: moving one in place is a new set-up."""
    sc = _scene()
    stereo.reconstruct(sc, reuse_setup=True, **KW)
    sc.cameras[0].t[...] = sc.cameras[0].t + np.array([0.01, 0, 0])
    hits = memo.SETUP.hits
    got = stereo.reconstruct(sc, reuse_setup=True, **KW)
    assert memo.SETUP.hits == hits and not got.stats["setup_reused"]
    _same(got, stereo.reconstruct(sc, reuse_setup=False, **KW))


def test_the_memo_keeps_the_last_entries_and_holds_their_inputs():
    m = memo.SetupMemo(size=2)
    arrays = [np.arange(4)]
    for k in "abc":
        m.put(k, k.upper(), arrays, lambda: arrays)
    assert len(m) == 2 and m.get("a") == (None, None)
    prep, check = m.get("c")
    assert prep == "C" and check.result() is True
    arrays[0][0] = 9
    assert m.get("c")[1].result() is False


def test_inputs_that_cannot_be_hashed_count_as_changed():
    """A content check that fails (an input hashlib cannot read) answers 'changed' (the call is made
    again from scratch) instead of raising after the work."""
    from concurrent.futures import Future

    token = Future()
    token.set_result(b"x")

    def content():
        raise TypeError("not an array")

    assert memo.Check(token, content).result() is False


def test_the_seeds_pixels_are_kept_by_value():
    """The seeds' projection (grow._group): the same inputs give the same group; the seeds or a
    parameter it reads changed give a new one."""
    from gpu_kernels.mvs.optimize import OptimizeParams

    sc = _scene()
    prm = OptimizeParams(min_views=3)
    seeds = [np.array(sc.points)]
    g1 = grow._group(sc.cameras, [0], [[1, 2, 3]], seeds, prm, 80.0, None, 15)
    assert grow._group(sc.cameras, [0], [[1, 2, 3]], [np.array(sc.points)], prm, 80.0, None, 15) is g1
    seeds[0][:5] += 0.5
    g2 = grow._group(sc.cameras, [0], [[1, 2, 3]], seeds, prm, 80.0, None, 15)
    assert g2 is not g1 and not np.array_equal(g2.seed_z, g1.seed_z)
    # a growing parameter: a new group around the same seeds' pixels (projected once)
    g3 = grow._group(sc.cameras, [0], [[1, 2, 3]], seeds, OptimizeParams(min_views=3, ncc_accept=0.5), 80.0, None,
                     15)
    assert g3 is not g2 and g3.seed_key is g2.seed_key and g3.ncc_accept == np.float32(0.5)
    # a depth range: projected again
    g4 = grow._group(sc.cameras, [0], [[1, 2, 3]], seeds, prm, 80.0, [(0.0, 3.0)], 15)
    assert g4.seed_key is not g2.seed_key and len(g4.seed_key) < len(g2.seed_key)


@pytest.mark.slow
def test_an_emulated_device_grower_reset_grows_the_same_maps():
    """The device path (test suite's CUDA emulator): a grower taken from the cache and reset gives
    the maps of a new one, bit for bit, and a parameter change takes a new one."""
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    sc = _scene()
    dev = cuda_emu.emu_backend("numpy")
    # 3 growing iterations, not the default 20 (0.95 s against 2.8 s a call in the emulator; 845 against 960 pixels
    # grown): a reset that kept anything of the last run shows in the first iterations, and 3 against the edit's 1
    # still gives different maps (checked below)
    kw = {**KW, "device": dev, "batch_size": 1024, "max_iter": 3}
    grow.drop_growers()
    a = stereo.reconstruct(sc, reuse_setup=True, **kw)
    assert len(grow._GROWERS) == 1
    kept = next(iter(grow._GROWERS.values()))
    b = stereo.reconstruct(sc, reuse_setup=True, **kw)
    assert next(iter(grow._GROWERS.values())) is kept  # taken, reset, given back
    _same(a, b)
    # a growing parameter's edit (iterations): the same grower, retuned; back to the first value: the same maps
    grow.GROWER_CACHE = False
    try:
        want = stereo.reconstruct(sc, reuse_setup=True, **{**kw, "max_iter": 1})
    finally:
        grow.GROWER_CACHE = True
    edit = stereo.reconstruct(sc, reuse_setup=True, **{**kw, "max_iter": 1})
    assert list(grow._GROWERS.values()) == [kept]
    _same(edit, want)
    with pytest.raises(AssertionError):
        _same(edit, a)
    _same(stereo.reconstruct(sc, reuse_setup=True, **kw), a)
    grow.drop_growers()
    c = stereo.reconstruct(sc, reuse_setup=True, **kw)
    _same(a, c)


def test_release_pool_drops_the_kept_setups_and_the_pinned_pool_s_free_blocks(monkeypatch):
    """When reconstruct gives CuPy's device pool back, the set-ups it kept (textures, growers) go
    first and the pinned pool's free blocks with them; below the pool's share nothing goes."""
    from test_mvs_pool import _Backend, _Pool

    freed = []
    monkeypatch.setattr(stereo, "free_pinned_pool", lambda: freed.append(1) or 0)
    monkeypatch.setattr(stereo, "_device_bytes", {})
    monkeypatch.delenv("GPULAB_MVS_POOL_KEEP", raising=False)
    memo.SETUP.put("k", "prep", [], list)
    grow._GROWERS["g"] = object()
    gib = 1 << 30
    stereo.release_pool(_Backend(_Pool(1 * gib), 80 * gib))
    assert len(memo.SETUP) == 1 and len(grow._GROWERS) == 1 and not freed
    big = _Pool(30 * gib)
    stereo.release_pool(_Backend(big, 80 * gib))
    assert big.freed == 1 and len(memo.SETUP) == 0 and len(grow._GROWERS) == 0 and freed == [1]


def test_an_out_of_memory_release_drops_the_kept_setups(monkeypatch):
    from gpu_kernels.backend import get_backend

    monkeypatch.setattr(stereo, "free_pinned_pool", lambda: 0)
    memo.SETUP.put("k", "prep", [], list)
    grow._GROWERS["g"] = object()
    get_backend("cpu").release_caches()
    assert len(memo.SETUP) == 0 and len(grow._GROWERS) == 0


# ----------------------------------------------------------------------------- pinned blocks
def _fake_cupy(alloc, pool=None):
    cp = types.ModuleType("cupy")
    cp.cuda = types.SimpleNamespace(alloc_pinned_memory=alloc)
    if pool is not None:
        cp.get_default_pinned_memory_pool = lambda: pool
    return cp


def test_pinned_sizes_fall_in_classes_the_pool_can_reuse():
    assert pinned.size_class(1) == 1 << 16
    for n in (70_000, 147_456_000, 9_216_001, (1 << 30) + 1):
        c = pinned.size_class(n)
        assert n <= c <= n * 1.125 + (1 << 16)
        assert pinned.size_class(c) == c  # a class is its own class
    # nearby sizes share a class (the pool gives a block again only for the exact size)
    assert pinned.size_class(147_456_000) == pinned.size_class(147_456_000 + 4096)


def test_live_pinned_bytes_are_capped_and_counted_until_the_last_view_goes():
    got = []
    xp = _fake_cupy(lambda size: got.append(size) or bytearray(size))
    base = pinned.held_bytes()
    a = pinned.pinned_block(xp, 100_000, cap=base + 300_000)
    view = a[10:20].view(np.uint16)
    assert a is not None and pinned.held_bytes() == base + a.size
    assert pinned.pinned_block(xp, 250_000, cap=base + 300_000) is None  # past the cap: ordinary memory
    del a
    gc.collect()
    assert pinned.held_bytes() == base + pinned.size_class(100_000)  # a view keeps the block
    del view
    gc.collect()
    assert pinned.held_bytes() == base
    b = pinned.pinned_block(xp, 250_000, cap=base + 300_000)
    assert b is not None and got == [pinned.size_class(100_000), pinned.size_class(250_000)]


def test_pinned_memory_running_out_gives_none_and_counts_nothing():
    def no_memory(size):
        raise RuntimeError("cudaErrorMemoryAllocation: out of memory")

    base = pinned.held_bytes()
    assert pinned.pinned_block(_fake_cupy(no_memory), 1000) is None
    assert pinned.held_bytes() == base


def test_the_maps_pinned_arrays_stay_under_the_cap(monkeypatch):
    """transfer.pinned_arrays (the maps' and the cloud's host arrays): page-locked while the live
    blocks stay under ``GPULAB_MVS_PINNED_MAX``, ordinary arrays past it, page-locked again once
    the earlier results are gone."""
    from gpu_kernels.mvs import transfer

    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda size: bytearray(size)))
    monkeypatch.setenv("GPULAB_MVS_PINNED_MAX", str(pinned.held_bytes() + (3 << 20)))
    specs = [((512, 1024), np.float32)]  # 2 MiB
    first = transfer.pinned_arrays(specs)
    assert first is not None and first[0].shape == (512, 1024)
    assert transfer.pinned_arrays(specs) is None  # two would pass 3 MiB
    del first
    gc.collect()
    assert transfer.pinned_arrays(specs) is not None


def test_free_pinned_pool_gives_the_free_blocks_back(monkeypatch):
    class Pool:
        def __init__(self):
            self.free = 3

        def n_free_blocks(self):
            return self.free

        def free_all_blocks(self):
            self.free = 0

    pool = Pool()
    monkeypatch.setitem(sys.modules, "cupy", _fake_cupy(lambda size: bytearray(size), pool))
    assert pinned.free_pinned_pool() == 3 and pool.free == 0


@pytest.mark.slow
def test_the_content_check_starts_once_the_device_has_its_first_batches(monkeypatch):
    """The kept set-up's content check (hashing threads) starts after the grower has queued its
    first batches, not during the set-up's Python (GIL contention); without a device loop (the CPU)
    it starts at the end; either way the result is checked."""
    import cuda_emu

    if cuda_emu.available():
        pytest.skip(cuda_emu.available())
    sc = _scene()
    dev = cuda_emu.emu_backend("numpy")
    kw = {**KW, "device": dev, "batch_size": 32}
    launches, started = [0], []
    real_launch, real_start = grow._DeviceGrower.launch, memo.Check.start
    monkeypatch.setattr(grow._DeviceGrower, "launch", lambda self, g: launches.__setitem__(0, launches[0] + 1)
                        or real_launch(self, g))
    monkeypatch.setattr(memo.Check, "start", lambda self: started.append(launches[0]) or real_start(self))
    stereo.reconstruct(sc, reuse_setup=True, **kw)
    launches[0] = 0
    res = stereo.reconstruct(sc, reuse_setup=True, **kw)
    assert res.stats["setup_reused"] and res.stats["batches"] > grow._AHEAD
    assert started[0] == grow._AHEAD  # after the first batches were queued
    started.clear()
    stereo.reconstruct(sc, reuse_setup=True, **{**KW, "batch_size": 32})  # the CPU: no device loop
    stereo.reconstruct(sc, reuse_setup=True, **{**KW, "batch_size": 32})
    assert len(started) >= 1
