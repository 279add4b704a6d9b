"""benchmarks/mesh_autok.py: the k = "auto" stop-rule replay used by issue 22's session-3
cross-validation (one clustering per mesh, every stop rule scored from its merge sequence)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from test_mesh_cluster import box_bar_box  # noqa: E402  (tests/mesh is on sys.path under pytest)

from gpu_kernels.mesh import boundary
from gpu_kernels.mesh import segment as segmod

ROOT = Path(__file__).resolve().parents[2]


def _autok():
    for name in ("mesh_psb", "mesh_autok"):
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
            mod = importlib.util.module_from_spec(spec)
            sys.modules[name] = mod
            spec.loader.exec_module(mod)
    return sys.modules["mesh_autok"]


def test_default_rule_is_the_pipelines_stop():
    ak = _autok()
    # threshold max(1.5, 0.4 * 3.0) = 1.5: the merges before index 2 are kept
    assert ak.rule_default([0.5, 1.0, 1.6, 0.9, 3.0]) == 2
    # a very strong boundary raises the threshold to 0.4 * 10 = 4: index 3 stops
    assert ak.rule_default([1.0, 2.0, 1.8, 10.0]) == 3
    assert ak.rule_default([0.2, 0.3]) == 2 and ak.rule_default([]) == 0
    # the library's constants are what the replay's default reproduces
    assert (segmod.AUTO_K_STRENGTH, segmod.AUTO_K_RELATIVE) == (1.5, 0.4)


def test_sliver_rule_ignores_small_parts_for_the_relative_threshold():
    ak = _autok()
    st = [1.0, 2.0, 9.0, 2.5]
    small = [0.1, 0.1, 0.005, 0.1]
    # default: threshold 0.4 * 9 = 3.6, first reached at index 2 (the 0.5 % part)
    assert ak.rule_default(st) == 2
    # blind to the 0.5 % part: threshold max(1.5, 0.4 * 2.5) = 1.5 -> stops at index 1
    assert ak.rule_sliver(st, small=small, a=0.02, b=0.0) == 1


def test_rank_rule_takes_the_relative_threshold_of_a_lower_rank():
    ak = _autok()
    st = [1.0, 2.0, 9.0, 8.0, 2.5]
    assert ak.rule_default(st) == 2  # 0.4 * 9 = 3.6
    assert ak.rule_rank(st, rank=1) == ak.rule_default(st)
    assert ak.rule_rank(st, rank=3) == 1  # 0.4 * 2.5 = 1.0 -> the floor 1.5 -> index 1


def test_replay_reproduces_the_pipeline_on_a_small_mesh(tmp_path, monkeypatch):
    """The cached merge sequence, replayed at the default rule, gives the pipeline's k and
    Rand Index exactly when there is no working resolution (a small mesh)."""
    from gpu_kernels.mesh import defaults

    # (the replay is of the hand-made stop rule: k = "auto" by it, not by the learned merges, the default since
    # session 12)
    monkeypatch.setattr(defaults, "DEFAULT_AUTO_MERGE", "hand")
    ak = _autok()
    v, f, truth = box_bar_box()
    data = tmp_path / "psb.npz"
    # mesh id 1 (category "human"): one human segmentation, the construction's three parts
    np.savez(data, v_1=v, f_1=f, s_1_0=truth)
    out = tmp_path / "cache"
    out.mkdir()
    before = boundary.merge_weakest_boundaries
    rec = ak.cache_mesh(data, 1, out)
    assert boundary.merge_weakest_boundaries is before  # the spy is removed
    assert (out / "1.pkl").exists()
    assert len(rec["merges"]) == len(rec["strengths"]) > 0
    rp = ak.Replay(rec, [truth])
    ri, k = ak.apply_rule(rp, ak.rule_default, {})
    assert k == rec["k_default"]
    assert ri == pytest.approx(rec["RI_default"], abs=1e-9)
    # every merge kept -> the component's floor of 2 parts; none kept -> the over-segmentation
    c = rp.auto[0]
    assert rp.score({c: len(rp.seq(c))})[1] == 2
    assert rp.score({c: 0})[1] == np.unique(rec["labels"]).size
    # level distances: symmetric, zero on the diagonal, growing away from it
    D = rp.level_distances(c)
    assert np.allclose(D, D.T) and np.allclose(np.diag(D), 0)
    assert D[0, -1] >= D[0, 1] > 0
    # merge-criterion variants re-merge the cached clusters: no change reproduces the pipeline,
    # and the module constant is restored afterwards
    from gpu_kernels.mesh import dualgraph

    sdf = dualgraph.SDF_MERGE
    table = tmp_path / "variants.json"
    args = type("A", (), {"cache": out, "data": data, "json": table,
                          "variants": '{"ref": {}, "flat": {"boundary.MERGE_CRITERION": "concavity"}}'})()
    assert ak.cmd_variants(args) == 0
    assert dualgraph.SDF_MERGE == sdf and boundary.MERGE_CRITERION == "contrast"
    rows = __import__("json").loads(table.read_text())
    assert rows["ref"]["1"][2] == rec["k_default"]
    assert rows["ref"]["1"][0] == pytest.approx(rec["RI_default"], abs=1e-9)


def test_loco_over_rules_chooses_on_the_other_categories():
    ak = _autok()
    # rule A is better on human and cup, B on glasses (as in test_loco_chooses_...)
    table = {"A": {}, "B": {}}
    cats = {}
    for m in (1, 2, 21, 22, 41, 42):
        cats[m] = {1: "human", 2: "human", 21: "cup", 22: "cup", 41: "glasses", 42: "glasses"}[m]
        table["A"][m] = (0.1 if m < 40 else 0.5, True, 3)
        table["B"][m] = (0.3 if m < 40 else 0.0, False, 3)
    out = ak.loco(table, sorted(cats), cats, ["A", "B"])
    chosen = {r["category"]: r["chosen"] for r in out}
    assert chosen == {"human": "B", "cup": "B", "glasses": "A"}
    assert [r["held_out"] for r in out] == pytest.approx([0.3, 0.3, 0.5])
    assert [r["in_range"] for r in out] == [0, 0, 2]
