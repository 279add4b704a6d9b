"""Issue 22, session 27 (the lead, round starts27): an integer k from nine starts instead of seven: the
over-segmentations of 20, 24, 30, 36, 42, 50, 60, 72 and 84 clusters (``segment.K_STARTS``), each merged down to k,
their medoid kept, against the shipped seven (20-60). Round starts26 (session 26) took five starts to seven and passed
held out (0.1103 -> 0.1072, lower on 24 of 24 draws; fourleg 381 over 0.30 on 19 -> 8 draws). A CPU pilot (the shipped
models, not held out, one draw): benchmarks/results/mesh_starts27_session27.md. The rule is there.

    python benchmarks/mesh_session27_starts.py round --data psb.npz --work W --out OUT --judge 2312,...
    python benchmarks/mesh_session27_starts.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402
import mesh_session23_mono as mm  # noqa: E402
from mesh_session24_hull import HULL, MIN_DRAWS  # noqa: E402

STARTS = "gpu_kernels.mesh.segment.K_STARTS"
NINE = (20, 24, 30, 36, 42, 50, 60, 72, 84)


def arms() -> list:
    """C (the shipped recipe: 22 columns, the exact hull's depth, seven starts; its ALL must be the shipped model's
    trees) and K9 (the same recipe, its records and merges with the nine starts): two switch sets."""
    return [mr.Arm("C", ("y", mm.NF + 1), switches={mm.CANON: False, HULL: True}),
            mr.Arm("K9", ("y", mm.NF + 1), switches={mm.CANON: False, HULL: True, STARTS: NINE})]


#: the rule (benchmarks/results/mesh_starts27_session27.md): K9 against C, as rounds hull24-starts26: (1) protocol mean
#: K9 <= C - 0.0010 and lower on more draws than higher; (2) meshes over 0.30 summed K9 <= C; (3) k = "auto" a harness
#: check (K_STARTS is an integer k's only); (5) >= 16 complete draws, 2 x 76 records per switch set and 2 x 20 folds
#: without error, C's ALL = the shipped model's trees (SHA-1 or mesh_round.same_trees)
def judge_round() -> mr.MarginRound:
    return mr.MarginRound("starts27", arms(), ("K9",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=2, shipped_close_ok=True)


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
