"""The mesh tool's "Auto-k layout" (``auto_layout``, issue 22 session 9): the tool's staged run equals the
library's ``segment_mesh(..., auto_layout=...)``, an edit of it re-runs only the boundary-cut stage and gives
what a fresh run gives, the default is the library's (off), and an integer k ignores it."""

from __future__ import annotations

import dataclasses

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from app.tools import mesh_seg
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.defaults import DEFAULT_AUTO_LAYOUT

CPU = get_backend("cpu")


@pytest.fixture(scope="module")
def fish():
    return mesh_seg.from_arrays(*fx.fish_arrays())


@pytest.fixture(scope="module")
def tool_runs(fish):
    """The tool's fresh full runs of the fish at k = "auto" with each layout (``mesh_seg.run``: no cache), made
    once for the module; the tests only read them (labels, k, info, face colours)."""
    return {lay: mesh_seg.run(fish, {"apsp": "cpu", "auto_layout": lay}, device=CPU) for lay in ("concave", "auto")}


def _p(**kw):
    return mesh_seg.PARAMS.validate({"apsp": "cpu", **kw})


def test_the_default_is_defaults_py_s_and_the_library_s():
    import inspect

    assert mesh_seg.PARAMS.defaults()["auto_layout"] == DEFAULT_AUTO_LAYOUT
    assert inspect.signature(sg.segment_mesh).parameters["auto_layout"].default == DEFAULT_AUTO_LAYOUT


@pytest.mark.slow
def test_the_tool_equals_the_library(fish, tool_runs):
    # the library's two runs share its first stage (prepare_mesh with segment_mesh's defaults; the layout acts
    # in the cuts only): each gets a copy with empty memos, so each is segment_mesh's fresh result
    prep = sg.prepare_mesh(fish.vertices, fish.faces, device="cpu", apsp_method="cpu")
    on = tool_runs["concave"]
    lib = sg.segment_mesh(fish.vertices, fish.faces, k="auto", apsp_method="cpu", device="cpu",
                          auto_layout="concave", prepared=dataclasses.replace(prep, memo={}, cuts={}))
    assert np.array_equal(on.seg.labels, lib.labels) and on.seg.k == lib.k
    assert on.seg.info["auto_layout"]["kept"] == lib.info["auto_layout"]["kept"]
    off = tool_runs["auto"]
    plain = sg.segment_mesh(fish.vertices, fish.faces, k="auto", apsp_method="cpu", device="cpu",
                            auto_layout="auto", prepared=dataclasses.replace(prep, memo={}, cuts={}))
    assert np.array_equal(off.seg.labels, plain.labels) and "auto_layout" not in off.seg.info


def test_an_edit_reruns_the_cut_stage_only_and_equals_a_fresh_run(fish, tool_runs):
    cache = StageCache(cap_bytes=1 << 30)
    first, _ = mesh_seg.PIPELINE.execute(fish, _p(auto_layout="auto"), device=CPU, cache=cache, scope="t")
    live, rep = mesh_seg.PIPELINE.execute(fish, _p(auto_layout="concave"), device=CPU, cache=cache, scope="t")
    assert rep.ran == ["cut"], rep
    # the fresh run: the tool's full run without a cache (mesh_seg.run is PIPELINE.execute of every stage and,
    # at the default shading, a copy of the same face colours)
    fresh = tool_runs["concave"]
    assert np.array_equal(live.seg.labels, fresh.seg.labels)
    assert np.array_equal(live.seg.face_colors, fresh.seg.face_colors)
    back, rep = mesh_seg.PIPELINE.execute(fish, _p(auto_layout="auto"), device=CPU, cache=cache, scope="t")
    assert rep.ran == [] and np.array_equal(back.seg.labels, first.seg.labels)


def test_an_integer_k_ignores_it(fish):
    # at a 1,500-face working resolution (max_faces): the same stages, the cut stage still given "concave"
    small = {"apsp": "cpu", "k": 4, "max_faces": 1500}
    a = mesh_seg.run(fish, {**small, "auto_layout": "auto"}, device=CPU)
    b = mesh_seg.run(fish, {**small, "auto_layout": "concave"}, device=CPU)
    assert np.array_equal(a.seg.labels, b.seg.labels) and "auto_layout" not in b.seg.info


def test_a_bad_value_is_refused():
    with pytest.raises(Exception, match="auto-layout must be one of auto, concave"):
        mesh_seg.PARAMS.validate({"auto_layout": "convex"})


@pytest.mark.gpu
def test_the_tool_equals_the_library_on_the_gpu(fish):
    gpu = get_backend("cuda")
    on = mesh_seg.run(fish, {"auto_layout": "concave"}, device=gpu)
    lib = sg.segment_mesh(fish.vertices, fish.faces, k="auto", device="cuda", auto_layout="concave")
    assert np.array_equal(on.seg.labels, lib.labels) and on.seg.k == lib.k
    cache = StageCache(cap_bytes=1 << 30)
    mesh_seg.PIPELINE.execute(fish, mesh_seg.PARAMS.validate({"auto_layout": "auto"}), device=gpu, cache=cache,
                              scope="g")
    live, rep = mesh_seg.PIPELINE.execute(fish, mesh_seg.PARAMS.validate({"auto_layout": "concave"}), device=gpu,
                                          cache=cache, scope="g")
    assert rep.ran == ["cut"] and np.array_equal(live.seg.labels, lib.labels)
