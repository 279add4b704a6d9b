"""The MVS ``textures`` stage (issue 20): every view's textures are packed once per scene, so
a ``views`` or ``neighbors`` edit re-runs view selection (and what follows), not the packing,
and gives the same result as a fresh full run; where not every view fits under the share of
free memory, view selection packs its own views as before, with the same result. CPU only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gpu_kernels.backend import get_backend
from gpu_kernels.mvs import stereo

CPU = get_backend("cpu")
PRM = {"views": "0", "neighbors": 5, "min_views": 3, "max_iter": 6}


@pytest.fixture
def packs(monkeypatch):
    """The views each call of ``pack_views`` packed (every caller reads it from ``stereo``)."""
    calls: list[list[int]] = []
    real = stereo.pack_views

    def counting(images, *, device=None, views=None, **kw):
        calls.append(sorted(range(len(images)) if views is None else views))
        return real(images, device=device, views=views, **kw)

    monkeypatch.setattr(stereo, "pack_views", counting)
    return calls


def _same(a, b) -> None:
    """Two MVS runs, array by array."""
    assert [m.view for m in a.maps] == [m.view for m in b.maps]
    for ma, mb in zip(a.maps, b.maps, strict=True):
        assert list(ma.neighbors) == list(mb.neighbors)
        for f in ("depth", "normal", "conf", "iters"):
            np.testing.assert_array_equal(getattr(ma, f), getattr(mb, f), err_msg=f)
    assert (a.fused is None) == (b.fused is None)
    if a.fused is not None:
        for f in dataclasses.fields(a.fused):
            np.testing.assert_array_equal(getattr(a.fused, f.name), getattr(b.fused, f.name), err_msg=f.name)


@pytest.mark.slow
def test_a_views_edit_reuses_the_packed_textures(tiny_scene, packs):
    from app.tools import mvs
    from app.tools.stages import StageCache

    data = mvs.MVSData(tiny_scene.scene)
    cache = StageCache(cap_bytes=256 << 20)
    _, rep = mvs.TOOL.run_staged(data, PRM, device=CPU, cache=cache)
    assert rep.ran == ["seeds", "textures", "views", "depth", "fusion"]
    assert packs == [list(range(tiny_scene.scene.n_views))]  # every view, once
    for edit in ({"views": "1,2"}, {"neighbors": 4}, {"views": "3", "neighbors": 6}):
        packs.clear()
        live, rep = mvs.TOOL.run_staged(data, {**PRM, **edit}, device=CPU, cache=cache)
        assert rep.ran == ["views", "depth", "fusion"] and rep.reused == ["seeds", "textures"], (edit, rep)
        assert packs == [], edit  # the packing did not run again
        assert all(np.isfinite(m.depth).sum() > 100 for m in live.maps), edit  # grown maps, not empty ones
        _same(live, mvs.run(data, {**PRM, **edit}, device=CPU))


@pytest.mark.slow
def test_textures_that_do_not_fit_are_packed_per_selection(tiny_scene, packs, monkeypatch):
    from app.tools import mvs
    from app.tools.stages import StageCache

    data = mvs.MVSData(tiny_scene.scene)
    prm = {**PRM, "views": "0,1"}
    packed_all = mvs.run(data, prm, device=CPU)
    assert stereo.scene_textures(tiny_scene.scene, device=CPU) is not None
    monkeypatch.setattr(stereo, "DEFAULT_TEXTURE_SHARE", 1e-12)  # a tiny cap: nothing fits
    assert stereo.scene_textures(tiny_scene.scene, device=CPU) is None
    packs.clear()
    cache = StageCache(cap_bytes=256 << 20)
    r0, rep = mvs.TOOL.run_staged(data, prm, device=CPU, cache=cache)
    assert rep.ran == ["seeds", "textures", "views", "depth", "fusion"]
    # only the chosen views and their neighbours, packed by view selection (as before the stage)
    need = sorted({0, 1} | {n for m in r0.maps for n in m.neighbors})
    assert packs == [need] and len(need) < tiny_scene.scene.n_views
    _same(r0, packed_all)
    # a views edit re-packs the new selection's views, with the result of a full run
    r1, rep = mvs.TOOL.run_staged(data, {**prm, "views": "2", "neighbors": 4}, device=CPU, cache=cache)
    assert rep.ran == ["views", "depth", "fusion"]
    _same(r1, mvs.run(data, {**prm, "views": "2", "neighbors": 4}, device=CPU))
    monkeypatch.undo()
    _same(r1, mvs.run(data, {**prm, "views": "2", "neighbors": 4}, device=CPU))


def test_scene_textures_skip_a_scene_with_a_missing_image(tiny_scene):
    sc = tiny_scene.scene
    images = list(sc.images)
    images[3] = None
    assert stereo.scene_textures(dataclasses.replace(sc, images=images), device=CPU) is None
