"""``segment_mesh(..., auto_layout=...)`` (issue 22, session 9): "auto" is today's k = "auto" exactly;
"concave" is :func:`gpu_kernels.mesh.autok.relayout` after it (the integer k's result at auto's k where its
boundaries are more concave); an integer k ignores it; a bad value is one line before any work."""

from __future__ import annotations

import dataclasses
import inspect

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import autok
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.defaults import DEFAULT_AUTO_LAYOUT
from gpu_kernels.mesh.dualgraph import MeshInputError

fish = fx.fish  # the stored fish (one copy: tests/mesh/_quality_fixtures.py)


@pytest.fixture(scope="module")
def fish_prep(fish):
    """segment_mesh's first stage of the fish on the CPU (prepare_mesh with segment_mesh's defaults), built once;
    every call gets a copy with empty memos (_fresh), so each is segment_mesh's fresh run."""
    return sg.prepare_mesh(*fish, device="cpu", apsp_method="cpu")


def _fresh(prep):
    return dataclasses.replace(prep, memo={}, cuts={})


def test_the_keyword_defaults_to_defaults_py():
    assert DEFAULT_AUTO_LAYOUT in autok.AUTO_LAYOUTS
    for fn in (sg.segment_mesh, sg.segment_prepared):
        assert inspect.signature(fn).parameters["auto_layout"].default == DEFAULT_AUTO_LAYOUT


def test_concave_is_relayout(fish, fish_prep):
    v, f = fish
    kw = dict(device="cpu", apsp_method="cpu")
    plain = sg.segment_mesh(v, f, k="auto", auto_layout="auto", prepared=_fresh(fish_prep), **kw)
    assert "auto_layout" not in plain.info
    on = sg.segment_mesh(v, f, k="auto", auto_layout="concave", prepared=_fresh(fish_prep), **kw)
    note = on.info["auto_layout"]
    assert on.k == plain.k and note["k"] == plain.k
    if note["kept"] == "integer k":
        ref = sg.segment_mesh(v, f, k=int(plain.k), prepared=_fresh(fish_prep), **kw)
        assert np.array_equal(on.labels, ref.labels)
        assert note["concavity_k"] > note["concavity_auto"]
    else:
        assert np.array_equal(on.labels, plain.labels)


def test_integer_k_ignores_it(fish, fish_prep):
    v, f = fish
    a = sg.segment_mesh(v, f, k=4, device="cpu", apsp_method="cpu", prepared=_fresh(fish_prep))
    b = sg.segment_mesh(v, f, k=4, device="cpu", apsp_method="cpu", auto_layout="concave", prepared=_fresh(fish_prep))
    assert np.array_equal(a.labels, b.labels) and "auto_layout" not in b.info


def test_a_bad_value_is_one_line_before_any_work(fish, monkeypatch):
    v, f = fish

    def no(*a, **k):
        raise AssertionError("prepare_mesh ran")

    monkeypatch.setattr(sg, "prepare_mesh", no)
    with pytest.raises(MeshInputError, match="auto_layout must be one of") as e:
        sg.segment_mesh(v, f, k="auto", auto_layout="convex")
    assert "\n" not in str(e.value)


@pytest.mark.gpu
def test_concave_on_the_gpu(fish):
    v, f = fish
    plain = sg.segment_mesh(v, f, k="auto", device="cuda", auto_layout="auto")
    on = sg.segment_mesh(v, f, k="auto", device="cuda", auto_layout="concave")
    prep = sg.prepare_mesh(v, f, device="cuda")
    ref = autok.relayout(prep, sg.segment_prepared(prep, k="auto", device="cuda", auto_layout="auto"),
                         lambda kk: sg.segment_prepared(prep, k=kk, device="cuda"), "concave")
    assert on.k == plain.k and np.array_equal(on.labels, ref.labels)


def test_a_bad_value_is_one_line_with_a_clustered_result_too(fish, fish_prep):
    """Reviewer A (Q2): the check runs before the ``clustered=`` early return."""
    v, f = fish
    prep = _fresh(fish_prep)
    cm = sg.cluster_prepared(prep, k=3, device="cpu", apsp_method="cpu")
    with pytest.raises(MeshInputError, match="auto_layout must be one of"):
        sg.segment_mesh(v, f, prepared=prep, clustered=cm, auto_layout="convex")
