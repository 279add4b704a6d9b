"""Issue 22, session 23 (the lead, round cap23): the integer-k merge model with MORE TREES.

Recipe S (64 trees of depth <= 4, rate 0.1) predicts the held-out categories' p no better with monotone constraints
(round mono23) or with all examples instead of its 200,000 cap (CPU pilot), so the data do not bound it. A CPU pilot
of its size (records of s1421-1422, six held-out folds: bust, fourleg, airplane, chair, fish, plier) gave the held-out
MSE S 0.05347, 64 trees of depth 6 0.05273, **128 trees of depth 4 0.05236**, 128 of depth 6 at rate 0.05 0.05206.
Candidate T is recipe S with 128 trees (the same depth, rate, seed, examples): twice the model's work per candidate
pair, the smallest change of the three. The rule: benchmarks/results/mesh_cap23_session23.md.

    python benchmarks/mesh_session23_cap.py round --data psb.npz --work W --out OUT --judge 2168,...
    python benchmarks/mesh_session23_cap.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402
import mesh_session23_mono as mm  # noqa: E402

MIN_DRAWS = 16


def train_t(rec_dir, models, cat) -> dict:
    """:class:`mesh_round.Arm`'s ``train`` hook of arm T: recipe S with 128 trees."""
    return mm.train_recipe(rec_dir, models, cat, "T", trees=128)


def arms() -> list:
    """C (recipe S retrained: its ALL must equal the shipped model) and T, one switch set, on the shipped model's
    training meshes (listed, ``CANONICAL_ORDER`` off), as round mono23."""
    sw = {mm.CANON: False}
    return [mr.Arm("C", ("y", mm.NF), switches=dict(sw)),
            mr.Arm("T", ("y", mm.NF), train="mesh_session23_cap:train_t", switches=dict(sw))]


#: the rule (benchmarks/results/mesh_cap23_session23.md): T against C over the complete draws: (1) protocol mean
#: T <= C - 0.0010 and lower on more draws than higher; (2) meshes over 0.30 summed T <= C; (3) k = "auto" a harness
#: check; (5) >= 16 complete draws, 2 x 76 records (one switch set, two training draws) and 2 x 20 folds without
#: error, C's ALL = the shipped model
def judge_round() -> mr.MarginRound:
    return mr.MarginRound("cap23", arms(), ("T",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=2)


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
