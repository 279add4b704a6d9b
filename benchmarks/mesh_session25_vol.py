"""Issue 22, session 25 (the lead, round vol25): the integer-k merges with one more hull column, the union's hull
volume that neither cluster's own hull fills (``learned.HULL_VOLUME``: ``1 - (V_a + V_b) / V_union``, 23 columns),
against the shipped merges (round hull24c's winner, shipped this session: the exact hull's depth, 22 columns). A CPU
pilot on the pairs of today's default at 42 clusters: per-mesh AUC 0.7969 -> 0.8048 with it. The rule:
benchmarks/results/mesh_vol25_session25.md.

A record of round vol25, which ran at the commit benchmarks/results/mesh_vol25_session25.md names. Since session 26
``HULL_EXACT`` and ``HULL_VOLUME`` are gone, and mesh_round refuses the switches.

    python benchmarks/mesh_session25_vol.py round --data psb.npz --work W --out OUT --judge 2264,...
    python benchmarks/mesh_session25_vol.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
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
from mesh_session24_hull_c import EXACT  # noqa: E402

VOLUME = "gpu_kernels.mesh.learned.HULL_VOLUME"


def arms() -> list:
    """C (the shipped recipe: round hull24c's HX, 22 columns; its ALL must be the shipped model's trees) and HV (23
    columns, the volume gain too; records and merges with the three switches on)."""
    return [mr.Arm("C", ("y", mm.NF + 1), switches={mm.CANON: False, HULL: True, EXACT: True}),
            mr.Arm("HV", ("y", mm.NF + 2), switches={mm.CANON: False, HULL: True, EXACT: True, VOLUME: True})]


#: the rule (benchmarks/results/mesh_vol25_session25.md): HV against C as rounds hull24-hull24c: (1) protocol mean HV
#: <= C - 0.0010 and lower on more draws than higher; (2) meshes over 0.30 summed HV <= C; (3) k = "auto" a harness
#: check; (5) >= 16 complete draws, 2 x 76 records per switch set and 2 x 20 folds without error, C's ALL = the shipped
#: model's trees (to rounding: its records' depth column now comes from the compiled hull, Qhull's to rounding)
def judge_round() -> mr.MarginRound:
    return mr.MarginRound("vol25", arms(), ("HV",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=2, shipped_close_ok=True)


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
