"""Issue 22, session 24 (the lead, round hull24c): the integer-k merges with the union's depth under its EXACT convex
hull (``learned.HULL_FEATURE`` and ``learned.HULL_EXACT``: 22 columns), after rounds hull24 (the 26-direction k-DOP's
depth: mean -0.0009, over 0.30 +4) and hull24b (with the excess: -0.0003) failed, and a CPU pilot found that the k-DOP
keeps about half of the exact hull's information (per-mesh AUC 0.776 against 0.795), losing most on the categories
that lost in both rounds. The rule: benchmarks/results/mesh_hull24c_session24.md.

A record of round hull24c, which ran at the commit benchmarks/results/mesh_hull24c_session24.md names. Since session
26 ``HULL_EXACT`` is gone (the exact hull is the only one), and mesh_round refuses the switch.

    python benchmarks/mesh_session24_hull_c.py round --data psb.npz --work W --out OUT --judge 2240,...
    python benchmarks/mesh_session24_hull_c.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
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

EXACT = "gpu_kernels.mesh.learned.HULL_EXACT"


def arms() -> list:
    """C (recipe S retrained: its ALL must equal the shipped model) and HX (22 columns, the exact hull's depth; its
    records and merges with both switches on, the merges in the NumPy loop): two switch sets, as round hull24."""
    return [mr.Arm("C", ("y", mm.NF), switches={mm.CANON: False}),
            mr.Arm("HX", ("y", mm.NF + 1), switches={mm.CANON: False, HULL: True, EXACT: True})]


#: the rule (benchmarks/results/mesh_hull24c_session24.md): HX against C, as rounds hull24 / hull24b: (1) protocol
#: mean HX <= C - 0.0010 and lower on more draws than higher; (2) meshes over 0.30 summed HX <= C; (3) k = "auto" a
#: harness check; (5) >= 16 complete draws, 2 x 76 records per switch set and 2 x 20 folds without error, C's ALL =
#: the shipped model
def judge_round() -> mr.MarginRound:
    return mr.MarginRound("hull24c", arms(), ("HX",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=2)


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
