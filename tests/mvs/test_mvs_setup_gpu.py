"""Session 7 (issue 24) on the GPU: the set-up kept between reconstructions (memo of the prepared
views, the seeds' pixels and the device grower, reset and replayed) gives the maps and the cloud of
a fresh set-up, bit for bit; a stale set-up is noticed; the page-locked result blocks are capped
and the pinned pool's free blocks given back. Needs CuPy and a CUDA device."""

from __future__ import annotations

import dataclasses
import gc

import numpy as np
import pytest

from gpu_kernels import pinned
from gpu_kernels.mvs import grow, memo, stereo
from gpu_kernels.mvs.transfer import is_pinned

pytestmark = pytest.mark.gpu

FIELDS = ("depth", "normal", "conf", "iters", "hs", "ht")


def _same(a, b):
    assert a.stats["samples"] == b.stats["samples"]
    for x, y in zip(a.maps, b.maps, strict=True):
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(x, f), getattr(y, f), err_msg=f)
    if a.fused is not None or b.fused is not None:
        for f in dataclasses.fields(a.fused):
            np.testing.assert_array_equal(getattr(a.fused, f.name), getattr(b.fused, f.name), err_msg=f.name)


@pytest.mark.parametrize("kw", [{"views": [0], "fuse": False, "views_together": 1},
                                {"views": "all", "batch_size": 1024}], ids=["one view", "scene fused"])
def test_a_kept_setup_and_grower_give_the_maps_and_cloud_of_a_fresh_one(small_scene, monkeypatch, kw):
    """Three calls with the set-up kept (the second and third reuse the prepared views and reset
    the cached grower, whose captured batch is replayed) against a call with nothing kept."""
    sc = small_scene.scene
    kw = {"neighbors": 5, "min_views": 3, "device": "cuda", **kw}
    memo.release()
    monkeypatch.setattr(grow, "GROWER_CACHE", False)
    want = stereo.reconstruct(sc, reuse_setup=False, **kw)
    monkeypatch.setattr(grow, "GROWER_CACHE", True)
    got = [stereo.reconstruct(sc, **kw) for _ in range(3)]
    assert [g.stats["setup_reused"] for g in got] == [False, True, True]
    assert len(grow._GROWERS) == 1
    for g in got:
        _same(g, want)
    memo.release()


def test_an_image_changed_in_place_gives_the_fresh_result_on_the_gpu(small_scene):
    sc = dataclasses.replace(small_scene.scene, images=[np.array(im) for im in small_scene.scene.images])
    kw = {"views": [0], "neighbors": 5, "min_views": 3, "fuse": False, "device": "cuda"}
    memo.release()
    first = stereo.reconstruct(sc, **kw)
    nb = first.maps[0].neighbors
    sc.images[nb[0]][...] = np.roll(sc.images[nb[0]], 5, axis=1)
    stale = memo.SETUP.stale
    got = stereo.reconstruct(sc, **kw)
    assert memo.SETUP.stale == stale + 1
    _same(got, stereo.reconstruct(sc, reuse_setup=False, **kw))
    memo.release()


def test_the_live_pinned_bytes_are_capped_and_the_pool_given_back(small_scene, monkeypatch):
    """Maps past ``GPULAB_MVS_PINNED_MAX`` (live page-locked bytes) come down into ordinary arrays,
    equal to the page-locked ones; once the results are dropped the blocks are no longer counted,
    and releasing the device gives the pinned pool's free blocks back."""
    import cupy as cp

    sc = small_scene.scene
    kw = {"views": [0, 1], "neighbors": 5, "min_views": 3, "fuse": False, "device": "cuda"}
    gc.collect()  # earlier tests' results held in reference cycles (a Progress root refers to itself)
    base = pinned.held_bytes()
    a = stereo.reconstruct(sc, **kw)
    assert is_pinned(a.maps[0].depth) and pinned.held_bytes() > base
    monkeypatch.setenv("GPULAB_MVS_PINNED_MAX", str(pinned.held_bytes() + 1024))
    b = stereo.reconstruct(sc, **kw)
    assert not is_pinned(b.maps[0].depth)
    _same(a, b)
    del a, b
    gc.collect()
    assert pinned.held_bytes() == base
    stereo.release_device(stereo.get_backend("cuda"))
    assert cp.get_default_pinned_memory_pool().n_free_blocks() == 0
