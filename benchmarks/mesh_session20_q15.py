"""Issue 22, session 20 (the lead, round q15): an integer k's consensus from the auto-k starts alone. Control C (as
shipped: ``segment.K_STARTS_ONLY`` False, the medoid of the over-segmentation factors' AND the starts' results)
against S (``K_STARTS_ONLY`` True: where k is at most the smallest start, the medoid of the starts' results alone; the
factors are not clustered, merged or cut). Each arm its own switch set (its own records of s1421-1422 and its own
folds: recipe S, leave one category out), judged in the real pipeline on new draws from s2000-2023. The
pre-registered rule: benchmarks/results/mesh_q15_session20.md. A thin script on ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session20_q15.py round --data psb.npz --work W --out OUT --judge 2000,...,2023 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session20_q15.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402

ONLY = "gpu_kernels.mesh.segment.K_STARTS_ONLY"
#: C = as shipped (the factors' and the starts' results); S = the starts' results alone; recipe S, "gain"
ARMS = [mr.Arm("C", ("y", 21), switches={ONLY: False}),
        mr.Arm("S", ("y", 21), switches={ONLY: True})]
CANDIDATES = ("S",)
#: the rule (benchmarks/results/mesh_q15_session20.md), S against C over the complete draws:
#: (1) protocol mean S <= C - 0.0010 AND S's per-draw mean lower than C's on more draws than higher;
#: (2) meshes over 0.30 summed S <= C; (3) k = "auto": the switch is not read there, so report-only while k = "auto"
#: is equal to C's on every row; if any row differs: >= 80 % in range on every complete draw and mean S <= C + 0.002;
#: (4) report-only (the rows' seconds per switch set); (5) >= 12 complete draws, 2 x 2 x 76 records and 40 folds
#: without error, C's ALL = the shipped model.
MIN_DRAWS = 12
#: the judge (criteria and reports): :class:`mesh_round.MarginRound` (shared by rounds q14, q15 and q16)
ROUND = mr.MarginRound("q15", ARMS, CANDIDATES, min_draws=MIN_DRAWS)


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _sg

    if (_ln.GAIN_POWER != 0.5 or _sg.K_SDF_MERGE != 2.0 or _ln.POLICY != "gain" or _ln.AUTO_POLICY != "learned"
            or _sg.K_STARTS_ONLY is not False or _sg.K_FROM_AUTO_STARTS is not True):
        raise SystemExit("the library must be as shipped (GAIN_POWER 0.5, K_SDF_MERGE 2.0, POLICY gain, "
                         "AUTO_POLICY learned, K_STARTS_ONLY False, K_FROM_AUTO_STARTS True)")
    mr.round_from_args(ARMS, a)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mr.add_round_args(sub)
    mr.add_judge_args(sub, MIN_DRAWS)
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": ROUND.cmd_judge}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
