"""The judge of session 19's held-out k = "auto" measurement (benchmarks/mesh_session19_auto.py, plan in
benchmarks/results/mesh_auto19_session19.md) on made-up rows: the issue's criterion (every complete draw <= 0.13
with >= 80 % of k in the humans' range, arm H) is met or not where it should be, and the optimism is H - S."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_session19_auto as m19  # noqa: E402

N = 5  # meshes a draw (the measurement's: 76)


def _rows(n_draws=12, h=0.12, s=0.11, h_in=5, s_in=5):
    rows = []
    for d in range(n_draws):
        for i in range(N):
            r = {"draw": f"s{d}", "mesh": i, "category": f"c{i % 2}", "hk": [3, 5]}
            for a, x, k_in in (("H", h, h_in), ("S", s, s_in)):
                r[a + "_auto"], r[a + "_auto_k"], r[a + "_in_range"] = x, (4 if i < k_in else 9), i < k_in
            rows.append(r)
    return rows


def _judge(rows, bad=(), min_draws=12, folds_ok=True):
    return m19.judge_rows(rows, list(bad), n_meshes=N, min_draws=min_draws, folds_ok=folds_ok)


def test_met_when_every_draw_is_under_the_bar_and_in_range():
    j = _judge(_rows())
    assert j["verdict"] == "met" and j["criterion_met"]
    assert abs(j["optimism"]["mean"] - 0.01) < 1e-12  # H - S: the shipped model's optimism
    assert j["optimism"]["draws_H_worse"] == 12 and j["optimism"]["rows_k_differ"] == 0


def test_one_draw_over_013_is_not_met():
    rows = _rows()
    for r in rows:
        if r["draw"] == "s3":
            r["H_auto"] = 0.1301
    j = _judge(rows)
    assert j["verdict"] == "not met" and not j["criterion"]["every_draw_H_le_0.13"]
    assert j["criterion"]["every_draw_H_in_range_ge_80"]


def test_exactly_013_and_80_percent_is_met():
    j = _judge(_rows(h=0.13, h_in=4))  # 4 of 5 = 80 %
    assert j["verdict"] == "met", j["criterion"]


def test_under_80_percent_in_range_is_not_met():
    j = _judge(_rows(h_in=3))  # 60 %
    assert j["verdict"] == "not met" and not j["criterion"]["every_draw_H_in_range_ge_80"]
    assert j["in_range"]["H"] == 60.0 and j["in_range"]["S"] == 100.0


def test_the_shipped_arm_does_not_decide():
    j = _judge(_rows(h=0.14, s=0.10))
    assert j["verdict"] == "not met"
    j = _judge(_rows(h=0.10, s=0.14))
    assert j["verdict"] == "met"


def test_incomplete_draws_are_left_out_and_too_few_give_no_verdict():
    rows = _rows()
    rows = [r for r in rows if not (r["draw"] == "s0" and r["mesh"] == 0)]  # s0 incomplete
    j = _judge(rows)
    assert "s0" not in j["complete"] and len(j["complete"]) == 11
    assert j["verdict"].startswith("no verdict") and not j["criterion_met"]
    bad = [{"draw": "s1", "mesh": 9, "error": "boom"}]
    j = _judge(_rows(n_draws=13), bad)
    assert "s1" not in j["complete"] and len(j["complete"]) == 12 and j["verdict"] == "met"


def test_a_failed_recipe_check_is_said_in_the_verdict():
    j = _judge(_rows(), folds_ok=False)
    assert j["verdict"].startswith("met") and "caveat" in j["verdict"]


def test_worst_meshes_and_categories():
    rows = _rows()
    for r in rows:
        if r["mesh"] == 2:
            r["H_auto"], r["H_auto_k"] = 0.5, 2
    j = _judge(rows)
    assert j["worst"][0]["mesh"] == 2 and j["worst"][0]["H_over"] == 12 and j["worst"][0]["H_k"] == [2]
    assert j["over_030"]["H"] == 12 and j["over_030"]["S"] == 0
    assert j["per_category"]["c0"]["H"] > j["per_category"]["c1"]["H"]
    assert j["verdict"] == "not met"  # 0.5 on one of 5 meshes lifts every draw's mean over 0.13
