"""Issue 22, session 29 (the lead, round seeds29): a MEASUREMENT, not a candidate. How much does the held-out protocol
mean of one recipe move when only its training is redone?

Round memo29 ran round starts27's two arms again on new draws: C (the shipped recipe) went from 0.1069 (starts27,
s2312-s2335) to 0.1108 (s2336-s2359) and K9 from 0.1095 to 0.1085, so K9 - C turned from +0.0026 to -0.0023. The
code differed in one thing: session 28's fixed memo batches (``segment.MEMO_FIXED_BATCHES``), which change the GPU
clusterings' rounding, hence a few training records (C's examples 985,199 -> 985,245) and every retrained fold model
(C's ALL no longer equals the shipped model's trees). Every judging draw of a round uses the same fold models, so the
rounds' "lower on 24 of 24 draws" cannot show this source of variation. This round measures it, with arms that differ
only in how the same recipe is trained:

- **C**: the shipped recipe as round starts27's C (today's code: fixed memo batches);
- **C1, C2, C3**: the same records, the same recipe, the 200,000-example training subsample drawn with seeds 1, 2, 3
  instead of 0 (``mesh_round.Arm.cap_seed``; the round ran at 75662a9 with three train functions that patched
  ``mesh_session12_q._cap`` to the same effect);
- **Cold**: the same recipe with ``MEMO_FIXED_BATCHES`` off (the code of sessions 20-27): its ALL must be the shipped
  model's trees (fcb2985a), which shows that the batches alone changed the records.

The rule: benchmarks/results/lead_session29_seeds29.md.

    python benchmarks/mesh_session29_seeds.py round --data psb.npz --work W --out OUT --judge 2360,...
    python benchmarks/mesh_session29_seeds.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 8]
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

MEMO = "gpu_kernels.mesh.segment.MEMO_FIXED_BATCHES"
MIN_DRAWS = 8


def arms() -> list:
    """C as round starts27's; C1-C3 the same arm with the subsample's seed 1-3 (``mesh_round.Arm.cap_seed``); Cold with
    the memo's old batches (its own switch set, so its own records)."""
    c = s27.arms()[0]
    assert c.name == "C"
    return [c] + [dataclasses.replace(c, name=f"C{i}", cap_seed=i) for i in (1, 2, 3)] + [
        dataclasses.replace(c, name="Cold", switches={**c.switches, MEMO: False})]


def judge_round() -> mr.MarginRound:
    """starts27's judge over this round's arms: the harness's report of every arm against C (its verdicts are not
    decisions: nothing here is a candidate)."""
    return dataclasses.replace(s27.judge_round(), name="seeds29", arms=arms(), candidates=("C1", "C2", "C3", "Cold"),
                               min_draws=MIN_DRAWS)


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
