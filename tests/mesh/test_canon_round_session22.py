"""Issue 22, session 22: the pieces of the held-out round of ``simplify.CANONICAL_ORDER`` (round canon22): the salt of
the canonical order (``simplify.CANONICAL_SALT``, 0 for users), the rounds' store of a canonical draw
(``mesh_simplify_session7_stores`` candidate ``pf3n0cs<salt>``), per-arm stores and k = "auto" folds in
``mesh_round`` and the non-inferiority form of ``mesh_round.MarginRound``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from gpu_kernels.mesh import simplify as simp
from gpu_kernels.mesh.dualgraph import clean_mesh
from tests.mesh._quality_fixtures import fish_arrays

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import mesh_round as mr  # noqa: E402
from mesh_simplify_session7_stores import shuffled, store_entries  # noqa: E402

needs_simplifier = pytest.mark.skipif(not simp.available_simplifiers(),
                                      reason="neither fast-simplification nor pymeshlab is installed")


def test_a_salt_gives_another_canonical_order_still_free_of_the_listing(monkeypatch):
    v, f = fish_arrays()
    v0, f0 = simp.canonical_order(v, f)
    monkeypatch.setattr(simp, "CANONICAL_SALT", 7)
    v7, f7 = simp.canonical_order(v, f)
    assert not np.array_equal(v7, v0)  # another order ...
    assert sorted(map(tuple, v7.tolist())) == sorted(map(tuple, v0.tolist()))  # ... of the same vertices
    v2, f2 = shuffled(v, f, 3)
    v3, f3 = simp.canonical_order(v2, f2)
    assert np.array_equal(v3, v7) and np.array_equal(f3, f7)
    monkeypatch.setattr(simp, "CANONICAL_SALT", 0)
    v4, f4 = simp.canonical_order(v2, f2)
    assert np.array_equal(v4, v0) and np.array_equal(f4, f0)


@needs_simplifier
@pytest.mark.parametrize(("suffix", "zorder"), [("c", True), ("h", False)])
def test_the_stores_canonical_draw_is_the_library_with_that_salt(monkeypatch, suffix, zorder):
    """``pf3n0cs<salt>`` (``pf3n0hs<salt>``: without the Z-order before pymeshlab) is what a user's ``simplify_mesh``
    gives with the canonical order and that salt (and the library's switches are put back after)."""
    v, f = fish_arrays()
    vc, fc, _, _ = clean_mesh(v, f)
    target = max(fc.shape[0] // 3, 100)
    before = simp.CANONICAL_ORDER, simp.CANONICAL_SALT, simp.CANONICAL_ZORDER, simp.PRESERVE_NORMAL
    ent = store_entries(f"pf3n0{suffix}s5", v, f, target)
    assert (simp.CANONICAL_ORDER, simp.CANONICAL_SALT, simp.CANONICAL_ZORDER, simp.PRESERVE_NORMAL) == before
    (key_v,) = [k for k in ent if k.startswith("v_")]
    monkeypatch.setattr(simp, "PRESERVE_NORMAL", False)
    monkeypatch.setattr(simp, "PRE_FACTOR", 3.0)
    monkeypatch.setattr(simp, "CANONICAL_ORDER", True)
    monkeypatch.setattr(simp, "CANONICAL_SALT", 5)
    monkeypatch.setattr(simp, "CANONICAL_ZORDER", zorder)
    vs, fs = simp.simplify_mesh(vc, fc, target, method="fast+pymeshlab")
    assert np.array_equal(ent[key_v], vs) and np.array_equal(ent["f" + key_v[1:]], fs)
    other = store_entries(f"pf3n0{suffix}s6", v, f, target)
    assert not np.array_equal(other[key_v], ent[key_v])  # another salt, another working mesh
    with pytest.raises(SystemExit, match="needs s<salt>"):
        store_entries(f"pf3n0{suffix}", v, f, target)


def test_arms_with_other_stores_or_auto_models_are_other_switch_sets():
    specs = [mr.Arm("C").spec(), mr.Arm("K", store="pf3n0c").spec(), mr.Arm("A", models_auto="/x").spec(),
             mr.Arm("D").spec()]
    sets, set_of = mr.switch_sets(specs)
    assert [names for _, _, names in sets] == [["C", "D"], ["K"], ["A"]]
    assert set_of["K"] != set_of["C"] == set_of["D"]


def _rows(delta_mean: float, over_k: int, auto_delta: float, draws: int = 12, n: int = 4) -> list:
    """``draws`` complete draws of ``n`` meshes: K = C + ``delta_mean`` everywhere, ``over_k`` more meshes over
    0.30 in K in all, k = "auto" K = C + ``auto_delta``, every k in range."""
    rows, extra = [], over_k
    for d in range(draws):
        for m in range(n):
            c = 0.299 if m == n - 1 else 0.10 + 0.01 * m  # (the last mesh just under 0.30 in C)
            k = c + delta_mean
            if extra > 0 and m == n - 1:
                k, extra = 0.301, extra - 1
            rows.append({"draw": f"s{d}", "mesh": m, "category": "x", "C": c, "K": k, "C_auto": 0.12,
                         "K_auto": 0.12 + auto_delta, "C_auto_k": 3, "K_auto_k": 4, "C_in_range": True,
                         "K_in_range": True})
    return rows


@pytest.mark.parametrize(("delta", "over", "auto", "verdict"), [
    (0.0008, 2, 0.0015, True),      # within every margin
    (0.0012, 0, 0.0, False),        # (1) the protocol mean too high
    (0.0, 3, 0.0, False),           # (2) three more meshes over 0.30
    (0.0, 0, 0.0025, False),        # (3) k = "auto" too high
])
def test_the_non_inferiority_rule(delta, over, auto, verdict):
    rnd = mr.MarginRound("t", [mr.Arm("C"), mr.Arm("K")], ("K",), mean_margin=-0.0010, need_better=False,
                         over_allow=2, round_checks=("auto_folds_ok",))
    j = rnd.judge_one(_rows(delta, over, auto), [], "K", 4, 12, True)
    assert j["pass_t"] is verdict
    # the superiority form (session 20) fails every one of them: K is never better than C here
    strict = mr.MarginRound("t", [mr.Arm("C"), mr.Arm("K")], ("K",))
    assert strict.judge_one(_rows(delta, over, auto), [], "K", 4, 12, True)["pass_t"] is False


def test_the_judge_gives_canon22s_recorded_verdict(tmp_path, monkeypatch):
    """Round canon22 (H100, 24 draws): K fails on k = "auto" alone, and nothing ships."""
    import gzip
    import io
    import json
    import tarfile
    from contextlib import redirect_stdout

    import mesh_session22_canon as c22

    src = ROOT / "benchmarks" / "results" / "mesh_canon22_session22_call1"
    (tmp_path / "rows.jsonl").write_bytes(gzip.decompress((src / "rows.jsonl.gz").read_bytes()))
    with tarfile.open(src / "meta.tar.gz") as t:
        (tmp_path / "round.json").write_bytes(t.extractfile("o/round.json").read())
    out = io.StringIO()
    with redirect_stdout(out):
        assert c22.main(["judge", str(tmp_path / "rows.jsonl"), "--json", str(tmp_path / "j.json")]) == 0
    rep = json.loads((tmp_path / "j.json").read_text())
    assert rep["K"]["criteria_canon22"] == {"1_mean": True, "2_over_030": True, "3_auto": False, "5_complete": True}
    assert rep["ships"] is None and rep["round_checks_ok"] is True
    assert rep["K"]["auto_mean"]["K"] - rep["K"]["auto_mean"]["C"] > 0.002
    recorded = json.loads((src / "judged.json").read_text())
    assert recorded["K"]["pass_canon22"] is False
    assert "SHIPS: none (C stays)" in out.getvalue()
