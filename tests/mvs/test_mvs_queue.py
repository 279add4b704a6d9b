"""Region growing's queue (issue 24): candidate keys order by priority, buckets, the device's
batch order, batch sizes, and the tool's stages (a growing parameter keeps the view selection).
CPU only; the device queue is checked against this path in ``test_mvs_gpu.py``."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_kernels.backend import get_backend
from gpu_kernels.mvs.grow import LEVELS, SEED_CODE, batch_order, cand_key, cand_level
from gpu_kernels.mvs.stereo import reconstruct

CPU = get_backend("cpu")


def test_candidate_keys_order_by_priority_then_origin():
    rng = np.random.default_rng(1)
    f = np.concatenate([rng.uniform(-1, 1, 500), [-0.5, 0.0, 0.25, 0.999]]).astype(np.float32)
    codes = rng.integers(0, 4, len(f))
    k = cand_key(f, codes)
    assert k.dtype == np.uint32 and (k > 0).all()
    assert ((k & 7) == codes).all()
    # a clearly higher priority always gives a higher key (ties broken by the origin code)
    i, j = rng.integers(0, len(f), (2, 2000))
    far = np.abs(f[i] - f[j]) > 1e-5
    assert ((k[i] > k[j]) == (f[i] > f[j]))[far].all()
    assert cand_key(np.float32([0.7]), 3)[0] > cand_key(np.float32([0.7]), 1)[0]


def test_candidate_levels_are_buckets_over_the_accepted_range():
    lo = 0.6
    scale = float(np.float32(LEVELS / (1 - lo)))
    f = np.float32([0.6, 0.6 + 0.4 / LEVELS * 10.5, 0.999, 0.5, 1.0])
    lv = cand_level(cand_key(f, 0), lo, scale)
    assert lv.tolist() == [0, 10, 255, 0, 255]
    seed = cand_key(np.float32([10.0]), SEED_CODE)
    assert cand_level(seed, lo, scale).tolist() == [LEVELS]


def test_batch_order_is_a_permutation_per_block():
    p = np.arange(3 * 4096)
    o = batch_order(p)
    assert np.array_equal(np.sort(o), p)
    assert (o // 4096 == p // 4096).all()  # a block's pixels stay in the block
    # thread t's pixels (t, t + 256, ...) come together, in order
    assert np.array_equal(np.argsort(o[:4096])[:16], np.arange(16) * 256)


@pytest.mark.slow
def test_batch_size_changes_the_order_not_the_result(small_scene):
    """Small and large batches follow the priorities more or less strictly; the samples and their
    accuracy stay close (the queue is a bucket queue either way)."""
    syn = small_scene
    out = {}
    for b in (64, 4096):
        res = reconstruct(syn.scene, views=[0], neighbors=6, batch_size=b, device="cpu", fuse=False)
        m = res.maps[0]
        ok = np.isfinite(m.depth)
        rel = np.abs(m.depth[ok] - syn.depths[0][ok]) / syn.depths[0][ok]
        out[b] = (m.n_samples, (rel < 0.01).mean(), res.stats["batches"])
    (n1, a1, b1), (n2, a2, b2) = out[64], out[4096]
    assert b1 > 1.5 * b2  # the small batch really is smaller
    assert abs(n1 - n2) < 0.05 * n1, out
    assert a1 > 0.8 and a2 > 0.8, out


@pytest.mark.slow
def test_growing_parameters_keep_the_view_selection(tiny_scene):
    from app.tools import mvs
    from app.tools.stages import StageCache

    data = mvs.MVSData(tiny_scene.scene)
    cache = StageCache(cap_bytes=256 << 20)
    prm = {"views": "0", "neighbors": 5, "min_views": 3, "max_iter": 6}
    _, rep = mvs.TOOL.run_staged(data, prm, device=CPU, cache=cache)
    assert rep.ran == ["seeds", "textures", "views", "depth", "fusion"]
    for edit in ({"batch_size": 128}, {"views_together": 2}, {"ncc_accept": 0.5}):
        r, rep = mvs.TOOL.run_staged(data, {**prm, **edit}, device=CPU, cache=cache)
        assert rep.ran == ["depth", "fusion"] and rep.reused == ["seeds", "textures", "views"], (edit, rep)
    full = mvs.run(data, {**prm, "ncc_accept": 0.5}, device=CPU)
    assert np.isfinite(full.maps[0].depth).sum() > 300  # a grown map, not an empty one
    np.testing.assert_array_equal(r.maps[0].depth, full.maps[0].depth)
    # the view selection's own parameter re-runs it, not the seeds
    _, rep = mvs.TOOL.run_staged(data, {**prm, "neighbors": 4}, device=CPU, cache=cache)
    assert rep.ran == ["views", "depth", "fusion"] and rep.reused == ["seeds", "textures"]
