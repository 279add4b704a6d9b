"""Issue 22 (session 8): the mesh tool does not blend the face colours twice. The cut stage's
colours are blended with the default shading; ``apply_display`` re-uses them for that shading
(a copy: the cached stage output stays as it was) and blends anew for any other, also after a
shading edit and back, and after the window's stable-colours recolouring."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from test_speed8_simplify import _sphere  # noqa: E402  (tests/mesh is on sys.path under pytest)

from app.tools import mesh_seg
from gpu_kernels.backend import get_backend
from gpu_kernels.mesh import colors as _colors
from gpu_kernels.mesh.defaults import DEFAULT_SHADING

CPU = get_backend("cpu")


@pytest.fixture(scope="module")
def raw():
    v, f = _sphere(16)   # a bumpy sphere: parts with soft boundaries (shared memberships)
    data = mesh_seg.from_arrays(v, f)
    # k = 4: the result keeps faces of shared memberships (6 of 960), which the shading blends. (Since session 26's
    # seven starts, k = 3's kept result comes from the 42-cluster start and has none, so a shading edit changes
    # nothing there; the test needs one it changes.)
    p = mesh_seg.PARAMS.validate({"k": 4})
    return data, p, mesh_seg.PIPELINE.run(data, p, device=CPU)


def _blend(seg, shading):
    return _colors.blend_face_colors(seg.memberships, seg.labels, seg.cluster_colors, shading=shading)


def test_default_shading_reuses_the_cut_stage_colours(raw, monkeypatch):
    data, p, res = raw
    assert p["shading"] == DEFAULT_SHADING
    calls = []
    real = _colors.blend_face_colors
    monkeypatch.setattr(_colors, "blend_face_colors", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    out = mesh_seg.apply_display(res, p)
    assert calls == []                                       # no second blend
    assert np.array_equal(out.seg.face_colors, _blend(res.seg, DEFAULT_SHADING))
    assert not np.shares_memory(out.seg.face_colors, res.seg.face_colors)  # the cached output is safe
    out.seg.face_colors[:] = 0
    assert res.seg.face_colors.any()


def test_shading_edits_there_and_back_blend_with_the_shading_asked_for(raw):
    data, p, res = raw
    a = mesh_seg.apply_display(res, {**p, "shading": 1.0})
    assert np.array_equal(a.seg.face_colors, _blend(res.seg, 1.0))
    assert not np.array_equal(a.seg.face_colors, res.seg.face_colors)
    b = mesh_seg.apply_display(a, {**p, "shading": DEFAULT_SHADING})   # back to the default
    assert np.array_equal(b.seg.face_colors, _blend(res.seg, DEFAULT_SHADING))
    c = mesh_seg.apply_display(b, {**p, "shading": 0.9})
    assert np.array_equal(c.seg.face_colors, _blend(res.seg, 0.9))


def test_after_a_recolouring_like_the_tabs(raw):
    """The tab's stable colours: a copy with other part colours, blended with the result's shading."""
    data, p, res = raw
    shown = mesh_seg.apply_display(res, {**p, "shading": 0.3})
    seg = copy.copy(shown.seg)
    seg.cluster_colors = seg.cluster_colors[::-1].copy()
    seg.face_colors = _blend(seg, shown.params["shading"])
    shown.seg = seg
    back = mesh_seg.apply_display(shown, {**p, "shading": DEFAULT_SHADING})
    assert np.array_equal(back.seg.face_colors, _blend(seg, DEFAULT_SHADING))
    same = mesh_seg.apply_display(shown, {**p, "shading": 0.3})
    assert np.array_equal(same.seg.face_colors, seg.face_colors)


def test_a_full_run_is_the_blend_of_its_memberships():
    v, f = _sphere(16)
    for shading in (DEFAULT_SHADING, 0.0, 0.7):
        r = mesh_seg.run(mesh_seg.from_arrays(v, f), {"k": 3, "shading": shading}, device=CPU)
        assert np.array_equal(r.seg.face_colors, _blend(r.seg, shading))
