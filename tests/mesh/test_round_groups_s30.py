"""Session 30's round harness (round beta30, ``benchmarks/mesh_session30_beta.py``): ``MarginRound`` judges the means
of groups of arms (``groups``; the control's group keeps the name "C"), with two more criteria: (6) the mean
difference without the category that moves most, (7) the candidate better in most of its same-fold-set pairs; and
``Arm.gain_beta`` sets ``learned.GAIN_BETA`` for that arm's integer k only, on a ``prepare_mesh`` the arms share."""

from __future__ import annotations

import json
from argparse import Namespace

import _round_fixtures as rf  # noqa: E402  (tests/mesh is on sys.path under pytest)
import numpy as np
import pytest

mr = rf.mr


def _row(m, d, cat, vals):
    r = {"mesh": m, "draw": d, "category": cat}
    for a, v in vals.items():
        r.update({a: v, a + "_auto": 0.1, a + "_auto_k": 3, a + "_in_range": True})
    return r


def _rows(cand_cup, cand_bearing):
    """Two draws, two categories of two meshes; three fold sets ("", "1", "2") of a control C* and a candidate B*:
    B's arms differ from C's by ``cand_cup`` / ``cand_bearing``."""
    rows = []
    for d in ("s1", "s2"):
        for m, cat in ((1, "cup"), (2, "cup"), (3, "bearing"), (4, "bearing")):
            vals = {}
            for s in ("", "1", "2"):
                base = 0.10 + 0.01 * len(s)
                vals["C" + s] = base
                vals["B" + s] = base + (cand_cup if cat == "cup" else cand_bearing)
            rows.append(_row(m, d, cat, vals))
    return rows


def _judge(mr, rows, tmp_path, **kw):
    arms = [mr.Arm(n, folds="x") for n in ("C", "C1", "C2", "B", "B1", "B2")]
    rnd = mr.MarginRound("t30", arms, ("B6",), min_draws=1, train_draws=0,
                         groups=(("C", ("C", "C1", "C2")), ("B6", ("B", "B1", "B2"))),
                         pairs=tuple(("B6", "C" + s, "B" + s) for s in ("", "1", "2")), **kw)
    p = tmp_path / "rows.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "round.json").write_text(json.dumps({"shipped_equal": True, "records": 0, "record_errors": 0,
                                                     "folds": 6 * 3, "fold_errors": 0}))
    out = tmp_path / "j.json"
    rnd.cmd_judge(Namespace(rows=p, json=str(out), n_meshes=4, min_draws=1))
    return json.loads(out.read_text()) if out.exists() else None


def test_a_group_may_keep_its_own_arms_name(mr):
    rows = [_row(1, "s1", "cup", {"C": 0.1, "C1": 0.2, "B": 0.3})]
    avg = mr.average_arms(rows, {"C": ["C", "C1"]})
    assert avg[0]["C"] == pytest.approx(0.15) and rows[0]["C"] == 0.1   # (the raw rows are not changed)
    with pytest.raises(ValueError, match="arms outside them"):
        mr.average_arms(rows, {"C": ["C1"]})


def test_the_means_are_judged_with_both_new_criteria(mr, tmp_path, capsys):
    j = _judge(mr, _rows(-0.002, -0.002), tmp_path, without_largest_max=0.0)
    c = j["B6"]["criteria_t30"]
    assert j["B6"]["mean"]["B6"] - j["B6"]["mean"]["C"] == pytest.approx(-0.002)
    assert c["1_mean"] and c["6_without_largest"] and c["7_pairs"] and j["B6"]["pass_t30"]
    assert "judged on the means" in capsys.readouterr().out


def test_a_gain_of_one_category_at_a_cost_elsewhere_fails_6(mr, tmp_path):
    j = _judge(mr, _rows(+0.001, -0.02), tmp_path, without_largest_max=0.0)
    c = j["B6"]["criteria_t30"]
    assert c["1_mean"] and not c["6_without_largest"] and not j["B6"]["pass_t30"]
    assert j["B6"]["largest_category"] == "bearing"


def test_a_mean_carried_by_one_pair_fails_7(mr, tmp_path):
    # one fold set gains a lot, the two others lose a little: the mean passes (1), the pairs do not
    rows = _rows(+0.01, +0.01)
    for r in rows:
        r["B"] -= 0.05
    j = _judge(mr, rows, tmp_path)
    c = j["B6"]["criteria_t30"]
    assert c["1_mean"] and not c["7_pairs"] and not j["B6"]["pass_t30"]
    assert j["B6"]["pairs"]["B-C"] < 0 < j["B6"]["pairs"]["B1-C1"]
    assert "6_without_largest" not in c   # (not asked)


def test_an_arms_gain_beta_is_set_for_its_integer_k_only(mr, monkeypatch, tmp_path):
    import mesh_psb as mp
    import mesh_session13_q as q13

    from gpu_kernels.mesh import learned as ln

    hum = [np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])]
    for name in ("MODEL", "MODEL_AUTO", "POLICY"):   # (confirm_mesh sets them: restored after the test)
        monkeypatch.setattr(ln, name, getattr(ln, name))
    monkeypatch.setattr(mp, "judging_draw", lambda *a: (None, None, hum, [2, 2], "cup", 0.0, "prep"))
    monkeypatch.setattr(ln.TreeModel, "from_npz", staticmethod(lambda p: p))
    seen = []

    class _Seg:
        labels, k = np.array([0, 0, 1, 1]), 2

    def seg(prep, k, device=None):
        seen.append((k, ln.GAIN_BETA))
        return _Seg()

    monkeypatch.setattr(q13._segment, "segment_prepared", seg)
    monkeypatch.setattr(ln, "GAIN_BETA", 0.0)
    specs = [mr.Arm("C", gain_beta=0.0).spec(), mr.Arm("B", gain_beta=0.06).spec(), mr.Arm("L").spec()]
    assert specs[2]["gain_beta"] is None
    sets = {s["name"]: (tmp_path / s["name"], s["policy"], s["gain_beta"]) for s in specs}
    out = q13.confirm_mesh(tmp_path, "x", 1, sets, tmp_path)
    assert seen == [(2, 0.0), ("auto", 0.0), (2, 0.06), ("auto", 0.0), (2, 0.0), ("auto", 0.0)]
    assert ln.GAIN_BETA == 0.0 and out["B"] == out["C"]
    # a 2-tuple (every round before session 30) takes the library's value
    seen.clear()
    monkeypatch.setattr(ln, "GAIN_BETA", 0.03)
    q13.confirm_mesh(tmp_path, "x", 1, {"C": (tmp_path, "gain")}, tmp_path)
    assert seen == [(2, 0.03), ("auto", 0.03)]
