"""Issue 22, session 30 (the lead, round beta30): the "gain" order's caution, ``learned.GAIN_BETA`` 0.06 against 0
(the shipped order), held out by category, judged over five trainings of the shipped recipe at once.

The integer-k merges take the pair of the lowest ``(2 p - 1 + beta) x weight`` first. With beta > 0 a large pair whose
p is near 0.5 stays apart: a model that has never seen a shape gives its largest pairs p near 0.5 (session 29: bearing
343's two largest parts, 0.48 under one fold model and merged, 0.51 under another and kept), where beta 0 leaves the
largest stake to noise. Session 29's CPU pilot (shipped models, NOT held out) found it neutral in-sample (0.1040 ->
0.1038 at 0.06); session 30's CPU pilot held out (one draw, round seeds29's five fold sets) found 0.1104 -> 0.1082 at
0.06 and 0.1092 at 0.03, with the five trainings' spread 0.0038 -> 0.0022 (benchmarks/results/lead_session30_beta30.md).

The records use the hand-made order, so beta changes no training example: every arm takes READY fold models (no
records, no training) and the arms differ only in the judging. The fold sets are round seeds29's (carried in
``.carry-s30/folds``): Cold (its ALL is the shipped model, fcb2985a), C, C1, C2 and C3 (the recipe retrained at
today's code with subsample seeds 0-3). Arms: C / C0 / C1 / C2 / C3 (beta 0) and B / B0 / B1 / B2 / B3 (beta 0.06),
the same fold set in each pair; the judge compares the mean of the five trainings, B6 = mean(B*) against C = mean(C*).

The rule (committed with this script before its device call; results/lead_session30_beta30.md):
(1) protocol mean B6 <= C - 0.0010, and B6 lower than C on more complete draws than higher;
(2) meshes over 0.30 (of the means) summed over the complete draws, B6 <= C;
(3) k = "auto": a harness check (GAIN_BETA is an integer k's only: equal on every row expected);
(5) >= 6 complete draws; 10 x 20 ready folds; C's ALL = the shipped model;
(6) B6 - C without the category that moves most <= 0 (the gain may not be one fold's alone at a cost elsewhere);
(7) B lower than C with the same fold set in at least 3 of the 5 pairs.
Passing: GAIN_BETA = 0.06 ships.

    python benchmarks/mesh_session30_beta.py round --data psb.npz --work W --out OUT --train "" --judge 2376,...
    python benchmarks/mesh_session30_beta.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 6]
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402
import mesh_session27_starts as s27  # noqa: E402

MIN_DRAWS = 6
BETA = 0.06
#: round seeds29's fold sets (``lead_session29_seeds29/models.tar.xz``), by this round's pair suffix
FOLDS = {"": "Cold", "0": "C", "1": "C1", "2": "C2", "3": "C3"}
CARRY = ROOT / ".carry-s30" / "folds"


def arms() -> list:
    """Ten arms: starts27's C (the shipped recipe's switches) on each of the five ready fold sets, at beta 0 (C*)
    and at :data:`BETA` (B*). C is the Cold fold set (its ALL is the shipped model)."""
    c = s27.arms()[0]
    assert c.name == "C"
    out = []
    for beta, head in ((0.0, "C"), (BETA, "B")):
        for suffix, folder in FOLDS.items():
            out.append(dataclasses.replace(c, name=head + suffix, folds=str(CARRY / folder), gain_beta=beta))
    return out


def judge_round() -> mr.MarginRound:
    names = [a.name for a in arms()]
    cs, bs = tuple(n for n in names if n.startswith("C")), tuple(n for n in names if n.startswith("B"))
    return mr.MarginRound("beta30", arms(), ("B6",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=0, shipped_close_ok=False,
                          groups=(("C", cs), ("B6", bs)), without_largest_max=0.0,
                          pairs=tuple(("B6", "C" + s, "B" + s) for s in FOLDS))


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
