"""The MVS ``textures`` stage on the GPU (issue 20/24): every view packed once on the device
gives the same maps as packing the chosen views per selection, a ``views`` edit re-uses the
packed textures and equals a fresh full run, and the packed arrays equal the CPU packing.
Needs CuPy and a CUDA device."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpu_kernels.backend import get_backend
from gpu_kernels.mvs import stereo

pytestmark = pytest.mark.gpu

PRM = {"views": "0", "neighbors": 5, "min_views": 3, "max_iter": 6, "batch_size": 512}


def _same(a, b) -> None:
    assert [m.view for m in a.maps] == [m.view for m in b.maps]
    for ma, mb in zip(a.maps, b.maps, strict=True):
        assert list(ma.neighbors) == list(mb.neighbors)
        for f in ("depth", "normal", "conf", "iters", "hs", "ht"):
            np.testing.assert_array_equal(getattr(ma, f), getattr(mb, f), err_msg=f)
    assert (a.fused is None) == (b.fused is None)
    if a.fused is not None:
        for f in dataclasses.fields(a.fused):
            np.testing.assert_array_equal(getattr(a.fused, f.name), getattr(b.fused, f.name), err_msg=f.name)


def test_scene_textures_on_the_gpu_equal_the_cpu_packing(small_scene):
    gpu = get_backend("cuda")
    tex = stereo.scene_textures(small_scene.scene, device=gpu)
    assert tex is not None and tex.backend.is_gpu
    cpu = stereo.scene_textures(small_scene.scene, device="cpu")
    flat = gpu.asnumpy(tex.flat)
    assert flat.shape == (cpu.flat.shape[0], 12)
    # three float4 per pixel: RGB, d/dx, d/dy (the fourth lane of each is zero)
    np.testing.assert_array_equal(flat[:, [0, 1, 2, 4, 5, 6, 8, 9, 10]], cpu.flat)
    assert not flat[:, [3, 7, 11]].any()
    np.testing.assert_array_equal(tex.pix_offset, cpu.pix_offset)
    np.testing.assert_array_equal(gpu.asnumpy(tex.dev_ofs), cpu.pix_offset * 3)


def test_a_views_edit_on_the_gpu_reuses_the_packed_textures(small_scene, monkeypatch):
    from app.tools import mvs
    from app.tools.stages import StageCache

    gpu = get_backend("cuda")
    packs: list = []
    real = stereo.pack_views

    def counting(images, *, device=None, views=None):
        packs.append(sorted(range(len(images)) if views is None else views))
        return real(images, device=device, views=views)

    monkeypatch.setattr(stereo, "pack_views", counting)
    data = mvs.MVSData(small_scene.scene)
    cache = StageCache(cap_bytes=256 << 20)
    first, rep = mvs.TOOL.run_staged(data, PRM, device=gpu, cache=cache)
    assert rep.ran == ["seeds", "textures", "views", "depth", "fusion"]
    assert packs == [list(range(small_scene.scene.n_views))]
    assert first.result.maps[0].n_samples > 1000
    for edit in ({"views": "1,2"}, {"neighbors": 4}, {"views": "3", "neighbors": 6}, {"ncc_accept": 0.5}):
        packs.clear()
        live, rep = mvs.TOOL.run_staged(data, {**PRM, **edit}, device=gpu, cache=cache)
        assert "textures" in rep.reused and "textures" not in rep.ran, (edit, rep)
        assert packs == [], edit
        fresh = mvs.run(data, {**PRM, **edit}, device=gpu)
        _same(live.result, fresh.result)


def test_gpu_maps_do_not_depend_on_which_views_were_packed(small_scene):
    """All views packed once (the stage) against the chosen views packed per selection."""
    sc = small_scene.scene
    gpu = get_backend("cuda")
    kw = {"views": [0, 1], "neighbors": 5, "min_views": 3, "batch_size": 512, "views_together": 2}
    own = stereo.reconstruct(sc, device=gpu, **kw)
    prep = stereo.prepare_views(sc, views=[0, 1], neighbors=5, min_views=3, device=gpu, pack=False)
    assert prep.textures is None
    prep = dataclasses.replace(prep, textures=stereo.scene_textures(sc, device=gpu))
    maps, _ = stereo.grow_views(sc, prep, min_views=3, batch_size=512, views_together=2, device=gpu)
    for a, b in zip(own.maps, maps, strict=True):
        for f in ("depth", "normal", "conf", "iters"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
        assert a.n_samples > 1000
