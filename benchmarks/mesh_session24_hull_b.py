"""Issue 22, session 24 (the lead, round hull24b): the integer-k merges with the union's hull depth AND its excess over
the deeper cluster's own depth (``learned.HULL_FEATURE`` and ``learned.HULL_EXCESS``: 23 columns), after round hull24
(the depth alone) failed its rule by 0.0001 on the mean and by four meshes over 0.30 (chairs: parts already deep on
their own). The CPU pilot's best row was this pair (per-mesh AUC 0.805 against the depth alone's 0.795). Arm H (the
depth alone) runs again on the new draws as a replication, report-only. The rule:
benchmarks/results/mesh_hull24b_session24.md.

A record of round hull24b, which ran at the commit benchmarks/results/mesh_hull24b_session24.md names. Since session
26 ``HULL_EXCESS`` is gone, and mesh_round refuses the switch.

    python benchmarks/mesh_session24_hull_b.py round --data psb.npz --work W --out OUT --judge 2216,...
    python benchmarks/mesh_session24_hull_b.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
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

EXCESS = "gpu_kernels.mesh.learned.HULL_EXCESS"


def arms() -> list:
    """C (recipe S retrained: its ALL must equal the shipped model), H2 (23 columns: depth and excess) and H (22
    columns, round hull24's candidate, report-only): three switch sets, listed working meshes as in round hull24."""
    return [mr.Arm("C", ("y", mm.NF), switches={mm.CANON: False}),
            mr.Arm("H2", ("y", mm.NF + 2), switches={mm.CANON: False, HULL: True, EXCESS: True}),
            mr.Arm("H", ("y", mm.NF + 1), switches={mm.CANON: False, HULL: True})]


#: the rule (benchmarks/results/mesh_hull24b_session24.md): H2 against C, as round hull24's: (1) protocol mean
#: H2 <= C - 0.0010 and lower on more draws than higher; (2) meshes over 0.30 summed H2 <= C; (3) k = "auto" a harness
#: check; (5) >= 16 complete draws, 2 x 76 records per switch set and 3 x 20 folds without error, C's ALL = shipped
def judge_round() -> mr.MarginRound:
    return mr.MarginRound("hull24b", arms(), ("H2",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=2)


def replication() -> mr.MarginRound:
    """H against C on the same draws: report-only (round hull24's candidate again; never a verdict)."""
    return mr.MarginRound("hull24b-replication-report-only", arms(), ("H",), mean_margin=0.0010, need_better=True,
                          over_allow=0, min_draws=MIN_DRAWS, train_draws=2)


def main(argv=None) -> int:
    """(The replication's JSON lies beside ``--json`` as ``<stem>_<its round's name>.json``; the round's own call, run
    before :func:`mesh_round.margin_main` existed, wrote it as ``judged_replication.json``.)"""
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS, reports=(replication(),))


if __name__ == "__main__":
    raise SystemExit(main())
