"""Issue 22, session 20 (the lead, round q16): an integer k's consensus from five starts. Control C (as shipped after
round q16: ``segment.K_STARTS_ONLY`` True, ``segment.K_STARTS`` None = the auto-k starts 24/30/36) against F
(``K_STARTS`` = (20, 24, 30, 36, 42): the medoid of five starts' results; an integer k up to 20 takes them, above it the
factors alone). Each arm its own switch set (its own records of s1421-1422 and its own folds: recipe S, leave one
category out), judged in the real pipeline on new draws from s2024-2047. The pre-registered rule:
benchmarks/results/mesh_q16_session20.md. A thin script on ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session20_q16.py round --data psb.npz --work W --out OUT --judge 2024,...,2047 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session20_q16.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402

STARTS = "gpu_kernels.mesh.segment.K_STARTS"
ONLY = "gpu_kernels.mesh.segment.K_STARTS_ONLY"
#: C = as shipped (the three auto-k starts); F = five starts; recipe S, "gain"
ARMS = [mr.Arm("C", ("y", 21), switches={STARTS: None, ONLY: True}),
        mr.Arm("F", ("y", 21), switches={STARTS: (20, 24, 30, 36, 42), ONLY: True})]
CANDIDATES = ("F",)
#: the rule (benchmarks/results/mesh_q16_session20.md), F against C over the complete draws:
#: (1) protocol mean F <= C - 0.0010 AND F's per-draw mean lower than C's on more draws than higher;
#: (2) meshes over 0.30 summed F <= C; (3) k = "auto": the switch is not read there, so report-only while k = "auto"
#: is equal to C's on every row; if any row differs: >= 80 % in range on every complete draw and mean F <= C + 0.002;
#: (4) report-only (the rows' seconds per switch set); (5) >= 12 complete draws, 2 x 2 x 76 records and 40 folds
#: without error, C's ALL = the shipped model.
MIN_DRAWS = 12
#: the judge (criteria and reports): :class:`mesh_round.MarginRound` (shared by rounds q14, q15 and q16)
ROUND = mr.MarginRound("q16", ARMS, CANDIDATES, min_draws=MIN_DRAWS)


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _sg

    if (_ln.GAIN_POWER != 0.5 or _sg.K_SDF_MERGE != 2.0 or _ln.POLICY != "gain" or _ln.AUTO_POLICY != "learned"
            or _sg.K_STARTS_ONLY is not True or _sg.K_STARTS is not None or _sg.K_FROM_AUTO_STARTS is not True):
        raise SystemExit("the library must be as shipped (GAIN_POWER 0.5, K_SDF_MERGE 2.0, POLICY gain, "
                         "AUTO_POLICY learned, K_STARTS_ONLY True, K_STARTS None, K_FROM_AUTO_STARTS True)")
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
