"""Issue 22, session 29 (the lead, round memo29): a MEASUREMENT, not a candidate. Session 28 fixed the memo's batches
(``segment.MEMO_FIXED_BATCHES``): the auto-k starts are clustered in a batch of their own whatever integer k ran before
on the same prepared mesh. Rounds starts26 and starts27 had 7 and 9 of 1,824 k = "auto" rows differ between arms whose
integer-k starts differ (and whose k = "auto" is the same code). Session 28's prediction: with the fix, none differ.
This round runs starts27's two arms again (C, the shipped recipe, and K9, nine integer-k starts: it failed in session
27 and is not a candidate here) on new judging draws, to test that prediction and to measure the shipped default
held out once more. The rule: benchmarks/results/lead_session29_memo29.md.

    python benchmarks/mesh_session29_memo.py round --data psb.npz --work W --out OUT --judge 2336,...
    python benchmarks/mesh_session29_memo.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
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
from mesh_session24_hull import MIN_DRAWS  # noqa: E402


def judge_round() -> mr.MarginRound:
    """starts27's judge under this round's name: the prediction is read from its ``auto_equal_all_rows``; its K9
    verdict is not a decision (K9 is not a candidate)."""
    return dataclasses.replace(s27.judge_round(), name="memo29")


def main(argv=None) -> int:
    return mr.margin_main(__doc__, s27.arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
