"""Session 9 on the GPU: a stale set-up's grower leaves the grower cache with its set-up (session 8
kept it until evicted). The device path with the fusion: the grower goes back after the fusion
(finish_maps), then the content check says 'changed' and the set-up is made again. Needs CuPy and
a CUDA device (the same on the CPU's CUDA emulator: test_mvs_review_s9.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_mvs_review_s7 import _LazyPool
from test_mvs_setup_gpu import _same

from gpu_kernels.mvs import grow, memo, stereo

pytestmark = pytest.mark.gpu

KW = {"views": "all", "neighbors": 5, "min_views": 3, "device": "cuda", "batch_size": 1024}


def test_a_stale_setups_grower_leaves_the_cache_on_the_device(small_scene, monkeypatch):
    sc = small_scene.scene
    sc = dataclasses.replace(sc, images=[np.array(im) for im in sc.images])  # changed in place below
    memo.release()
    try:
        stereo.reconstruct(sc, **KW)
        assert len(grow._GROWERS) == 1
        old_tx = next(iter(grow._GROWERS.values())).tx
        sc.images[1][...] = np.roll(sc.images[1], 7, axis=1)
        monkeypatch.setattr(memo, "_background", lambda: _LazyPool())  # answered after the growing
        stale = memo.SETUP.stale
        got = stereo.reconstruct(sc, **KW)
        assert memo.SETUP.stale == stale + 1 and not got.stats["setup_reused"]
        cached = [gr.tx for gr in grow._GROWERS.values()]
        assert len(cached) == 1 and cached[0] is not old_tx
        monkeypatch.setattr(grow, "GROWER_CACHE", False)
        _same(got, stereo.reconstruct(sc, reuse_setup=False, **KW))
    finally:
        memo.release()
