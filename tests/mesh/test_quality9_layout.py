"""k = "auto" laid out again at its k (issue 22, session 9: ``autok.relayout``, ``auto_layout="concave"``):
the integer-k pipeline's result at auto's k replaces auto's own only where its boundaries are strictly more
concave and it splits k between the components as auto did; ``"auto"`` runs nothing more."""

from __future__ import annotations

import _quality_fixtures as fx  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

from gpu_kernels.mesh import autok
from gpu_kernels.mesh import segment as sg
from gpu_kernels.mesh.dualgraph import MeshInputError

# the stored fish and its prepared mesh on the CPU (one copy: tests/mesh/_quality_fixtures.py)
fish, prep = fx.fish, fx.prep


@pytest.fixture(scope="module")
def fish_prep(fish, prep):
    return (*fish, prep)


def _auto(prep):
    return sg.segment_prepared(prep, k="auto", device="cpu", apsp_method="cpu", auto_layout="auto")


def _integer(prep, calls=None):
    def run(kk):
        if calls is not None:
            calls.append(kk)
        return sg.segment_prepared(prep, k=kk, device="cpu", apsp_method="cpu")
    return run


def test_check_layout():
    assert autok.check_layout(None) == "auto"
    assert autok.check_layout("concave") == "concave"
    for bad in ("Concave", "", 1, "medoid"):
        with pytest.raises(MeshInputError, match="auto_layout must be one of"):
            autok.check_layout(bad)


def test_auto_layout_runs_nothing(fish_prep):
    _, _, prep = fish_prep
    seg = _auto(prep)
    calls = []
    assert autok.relayout(prep, seg, _integer(prep, calls), "auto") is seg
    assert calls == [] and "auto_layout" not in seg.info


def test_concave_keeps_the_more_concave_result(fish_prep):
    """The real pipeline on the fish: the kept result is auto's own or the integer k's at auto's k, whichever
    has the more concave boundaries (ties to auto's own), with the same k."""
    _, _, prep = fish_prep
    seg = _auto(prep)
    calls = []
    out = autok.relayout(prep, seg, _integer(prep, calls), "concave")
    assert calls == [seg.k]
    alt = _integer(prep)(seg.k)
    kept = prep.kept
    ca = sg.boundary_concavity(prep.graph, seg.labels[kept])
    ck = sg.boundary_concavity(prep.graph, alt.labels[kept])
    note = out.info["auto_layout"]
    assert note["concavity_auto"] == pytest.approx(ca) and note["concavity_k"] == pytest.approx(ck)
    if ck > ca:
        assert note["kept"] == "integer k" and np.array_equal(out.labels, alt.labels)
    else:
        assert note["kept"] == "auto" and out is seg
    assert out.k == seg.k


@pytest.mark.parametrize("auto_wins", [True, False])
def test_the_rule_follows_the_concavity(fish_prep, monkeypatch, auto_wins):
    """With the concavity forced either way, the other result is kept (fails if the comparison is inverted
    or if the integer k's result is always or never taken)."""
    _, _, prep = fish_prep
    seg = _auto(prep)
    alt = _integer(prep)(seg.k)
    if np.array_equal(alt.labels, seg.labels):
        pytest.fail("the fish's integer-k layout equals auto's own: pick another test mesh")
    auto_labels = seg.labels[prep.kept]

    def fake(graph, labels):
        same = np.array_equal(labels, auto_labels)
        return (0.9 if same else 0.1) if auto_wins else (0.1 if same else 0.9)

    monkeypatch.setattr(sg, "boundary_concavity", fake)
    out = autok.relayout(prep, seg, lambda kk: alt, "concave")
    if auto_wins:
        assert out is seg and out.info["auto_layout"]["kept"] == "auto"
    else:
        assert out is alt and out.info["auto_layout"]["kept"] == "integer k"
        assert out.info["auto_layout"]["why"] == "more concave boundaries"


def test_a_tie_keeps_auto(fish_prep, monkeypatch):
    _, _, prep = fish_prep
    seg = _auto(prep)
    alt = _integer(prep)(seg.k)
    monkeypatch.setattr(sg, "boundary_concavity", lambda graph, labels: 0.5)
    assert autok.relayout(prep, seg, lambda kk: alt, "concave") is seg


def test_another_component_split_keeps_auto(fish_prep, monkeypatch):
    _, _, prep = fish_prep
    seg = _auto(prep)
    alt = _integer(prep)(seg.k)
    alt.info["k_per_component"] = list(seg.info["k_per_component"]) + [1]
    monkeypatch.setattr(sg, "boundary_concavity", lambda graph, labels: 1.0 - float(np.array_equal(
        labels, seg.labels[prep.kept])))  # the integer k would win on concavity
    out = autok.relayout(prep, seg, lambda kk: alt, "concave")
    assert out is seg and "components" in out.info["auto_layout"]["why"]


def test_one_part_runs_nothing(fish_prep):
    _, _, prep = fish_prep
    seg = _auto(prep)
    seg.k = 1
    calls = []
    out = autok.relayout(prep, seg, _integer(prep, calls), "concave")
    assert out is seg and calls == [] and out.info["auto_layout"]["why"] == "one part"


@pytest.mark.gpu
def test_concave_on_the_gpu_matches_its_own_integer_k(fish_prep):
    """On the GPU: the kept result is the GPU's integer-k result or the GPU's auto result, by the same rule."""
    _, _, prep_cpu = fish_prep
    v, f = prep_cpu.vertices_in, prep_cpu.faces_in
    prep = sg.prepare_mesh(v, f, device="cuda")
    seg = sg.segment_prepared(prep, k="auto", device="cuda", auto_layout="auto")
    alt = sg.segment_prepared(prep, k=int(seg.k), device="cuda")
    out = autok.relayout(prep, seg, lambda kk: sg.segment_prepared(prep, k=kk, device="cuda"), "concave")
    ca = sg.boundary_concavity(prep.graph, seg.labels[prep.kept])
    ck = sg.boundary_concavity(prep.graph, alt.labels[prep.kept])
    assert np.array_equal(out.labels, alt.labels if ck > ca else seg.labels)
    assert out.k == seg.k


def test_fish_keeps_its_fins_with_the_concave_layout(fish_prep):
    """The issue's thin-part test under ``auto_layout="concave"``: every fin stays a part of its own."""
    from tests.mesh.test_mesh_thin_parts import _fins_kept

    _, _, prep = fish_prep
    truth = np.load(fx.STORED)["truth"].astype(np.int64)
    out = autok.relayout(prep, _auto(prep), _integer(prep), "concave")
    kept = _fins_kept(out.labels, truth)
    for name, (share, purity, own) in kept.items():
        assert own and share > 0.7 and purity > 0.6, f"the {name} fin is lost (k = {out.k}): {kept}"
