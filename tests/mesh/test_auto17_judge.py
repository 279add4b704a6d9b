"""The judge of session 17's k = "auto" round (benchmarks/mesh_session17_auto.py, rule in
benchmarks/results/mesh_auto8_session17.md) on made-up rows: each criterion fails where it should."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_session17_auto as m17  # noqa: E402

N = 4  # meshes a draw (the rule's run: 76)


def _rows(n_draws=6, a40=0.12, a35=0.12):
    rows = []
    for d in range(n_draws):
        for i in range(N):
            r = {"draw": f"s{d}", "mesh": i, "category": f"c{i % 2}", "hk": [3, 5]}
            for a, x in (("A40", a40), ("A35", a35), ("A11", a40)):
                r[a + "_auto"], r[a + "_auto_k"], r[a + "_in_range"] = x, 4, True
            for a in ("A40", "A35"):
                r[a], r[a + "_per_k"] = 0.1, {"3": 0.1, "5": 0.1}
            rows.append(r)
    return rows


def _judge(rows, bad=()):
    return m17.judge_rows(rows, list(bad), n_meshes=N)


def test_equal_arms_pass():
    j = _judge(_rows())
    assert j["pass"], j["criteria"]
    assert j["auto_mean"]["A35"] == j["auto_mean"]["A40"]


def test_worse_mean_and_a_bad_draw_fail_1():
    rows = _rows()
    for r in rows:
        if r["draw"] == "s2":
            r["A35_auto"] = 0.12 + 0.004  # over the per-draw margin 0.003
    c = _judge(rows)["criteria"]
    assert not c["1_mean"] and not c["1_every_draw"]


def test_in_range_fails_2_on_one_draw_or_in_sum():
    rows = _rows()
    rows[0]["A35_in_range"] = False  # 3 of 4 = 75 % < 80 % on s0, and 1 mesh-draw down in all: allowed in the sum
    c = _judge(rows)["criteria"]
    assert not c["2_in_range_every_draw"] and c["2_in_range_sum"]
    rows[N]["A35_in_range"] = False  # two down in all
    assert not _judge(rows)["criteria"]["2_in_range_sum"]


def test_more_meshes_over_030_fail_3():
    rows = _rows()
    rows[1]["A35_auto"] = 0.31
    assert not _judge(rows)["criteria"]["3_over_030"]


def test_a_changed_protocol_fails_4():
    rows = _rows()
    rows[3]["A35_per_k"] = {"3": 0.1, "5": 0.1000001}
    assert not _judge(rows)["criteria"]["4_protocol_unchanged"]


def test_incomplete_draws_are_left_out_and_six_are_needed():
    rows = _rows(n_draws=7)
    bad = [{"draw": "s6", "mesh": 0, "error": "x"}]
    rows = [r for r in rows if not (r["draw"] == "s6" and r["mesh"] == 0)]
    j = _judge(copy.deepcopy(rows), bad)
    assert j["complete"] == [f"s{d}" for d in range(6)] and j["pass"]
    j = _judge([r for r in rows if r["draw"] != "s5"], bad)
    assert not j["criteria"]["complete"]
