"""The margin rounds' judge (``benchmarks/mesh_round.judge_rows``) reports the mean difference without the category
that moves most (session 29, round seeds29: one fold's held-out score can swing with the training alone). Report-only:
the verdict does not read it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def mr(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import mesh_round

    yield mesh_round
    sys.modules.pop("mesh_round", None)


def _rows(swing: float) -> list:
    """Two draws of four meshes in two categories: B beats A by 0.001 on "cup", and by ``swing`` on "bearing"."""
    rows = []
    for d in ("s1", "s2"):
        for m, cat, delta in ((1, "cup", -0.001), (2, "cup", -0.001), (3, "bearing", swing), (4, "bearing", swing)):
            rows.append({"mesh": m, "draw": d, "category": cat, "A": 0.1, "B": 0.1 + delta,
                         "A_auto": 0.1, "B_auto": 0.1, "A_auto_k": 3, "B_auto_k": 3, "A_in_range": 1, "B_in_range": 1})
    return rows


def test_the_mean_without_the_category_that_moves_most(mr):
    j = mr.judge_rows(_rows(+0.05), [], "A", "B", mr.Rule(min_draws=1), n_meshes=4)
    assert j["largest_category"] == "bearing"
    assert j["mean_diff_without_largest"] == pytest.approx(-0.001)
    assert j["mean"]["B"] - j["mean"]["A"] == pytest.approx((0.05 - 0.001) / 2)


def test_it_does_not_change_the_verdict(mr):
    rule = mr.Rule(min_draws=1, over_margin=0, over_draws=False)
    assert mr.judge_rows(_rows(+0.05), [], "A", "B", rule, n_meshes=4)["criteria"]["2_mean"] is False
    assert mr.judge_rows(_rows(-0.05), [], "A", "B", rule, n_meshes=4)["criteria"]["2_mean"] is True
