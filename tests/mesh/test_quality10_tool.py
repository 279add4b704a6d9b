"""The mesh tool and ``auto_layout="concave"`` (issue 22, session 10): the summary says which layout was kept
and why; an edit of ``refine_boundaries`` re-runs the boundary cut without clustering the integer k again
(the clustering is kept on the cuts-and-merges stage's result), and equals a fresh run."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from app.tools import mesh_seg
from app.tools.mesh_seg_helpers import layout_line, with_layout_line
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh import simplify as simp

CPU = get_backend("cpu")
if not simp.available_simplifiers():  # (max_faces 2000: a simplified working copy)
    pytest.skip("no simplifier installed (fast-simplification or pymeshlab)", allow_module_level=True)


@pytest.fixture(scope="module")
def fish():
    return mesh_seg.from_arrays(*fx.fish_arrays())


def _p(**kw):
    return mesh_seg.PARAMS.validate({"apsp": "cpu", "max_faces": 2000, **kw})


def test_the_summary_names_the_kept_layout(fish):
    res = mesh_seg.run(fish, _p(auto_layout="concave"), device=CPU)
    note = res.seg.info["auto_layout"]
    lines = mesh_seg.summary(res)
    at = [i for i, line in enumerate(lines) if line.startswith("  auto-k layout: ")]
    assert len(at) == 1 and lines[at[0] - 1].startswith("  parts (k): ")
    want = "the fixed-k layout" if note["kept"] == "integer k" else "k = auto's own layout"
    assert want in lines[at[0]] and f"{note['concavity_k']:.3f}" in lines[at[0]]
    off = mesh_seg.run(fish, _p(auto_layout="auto"), device=CPU)
    assert not any("auto-k layout" in line for line in mesh_seg.summary(off))


@pytest.mark.parametrize("note, want", [
    ({"kept": "integer k", "concavity_auto": 0.2, "concavity_k": 0.35},
     "  auto-k layout: the fixed-k layout at the same k (more concave boundaries: 0.350 against 0.200)"),
    ({"kept": "auto", "concavity_auto": 0.3, "concavity_k": 0.3},
     "  auto-k layout: k = auto's own layout (not less concave boundaries: 0.300 against 0.300)"),
    ({"kept": "auto", "why": "one part"}, "  auto-k layout: k = auto's own layout (one part)"),
])
def test_the_layout_line(note, want):
    class Seg:
        info = {"auto_layout": note}

    assert layout_line(Seg()) == want
    assert with_layout_line(["a", "  parts (k): 3 (auto)", "b"], Seg()) == ["a", "  parts (k): 3 (auto)", want, "b"]
    assert with_layout_line(["a"], object()) == ["a"]


def test_a_refine_edit_does_not_cluster_the_integer_k_again(fish, monkeypatch):
    cache = StageCache(cap_bytes=1 << 30)
    mesh_seg.PIPELINE.execute(fish, _p(auto_layout="concave"), device=CPU, cache=cache, scope="t")
    calls = []
    cp = sg.cluster_prepared
    monkeypatch.setattr(sg, "cluster_prepared", lambda *a, **k: (calls.append(k.get("k")), cp(*a, **k))[1])
    live, rep = mesh_seg.PIPELINE.execute(fish, _p(auto_layout="concave", refine_boundaries=False), device=CPU,
                                          cache=cache, scope="t")
    assert rep.ran == ["cut"] and calls == []
    monkeypatch.setattr(sg, "cluster_prepared", cp)
    fresh = mesh_seg.run(fish, _p(auto_layout="concave", refine_boundaries=False), device=CPU)
    assert np.array_equal(live.seg.labels, fresh.seg.labels)
    assert np.array_equal(live.seg.face_colors, fresh.seg.face_colors)
    assert live.seg.info["auto_layout"] == fresh.seg.info["auto_layout"]
