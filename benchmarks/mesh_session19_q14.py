"""Issue 22, session 19 (helper mesh-q14): a consolidation round under the new shipped integer-k merge order
(``learned.GAIN_POWER`` 0.5, shipped by mesh-q13 in d26e853). Control C (as shipped: g 0.5, ``segment.K_SDF_MERGE``
2.0) against two candidates, each its own switch set: G75 (g 0.75, the best mean of mesh-q13's round) and T
(``K_SDF_MERGE`` None: an integer k's merges see ``dualgraph.SDF_MERGE`` 0.5, the alternative mesh-q12 judged under
g 1.0 and the value the fish test compares; None and 0.5 take the same code path, ``segment.k_merge_graph``). Recipe
S retrained per fold (leave one category out) on each arm's OWN records of s1421-1422, judged in the real pipeline on
new draws from 1924-1947. The pre-registered rule: benchmarks/results/mesh_q14_session19.md. A thin script on the
shared driver ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session19_q14.py round --data psb.npz --work W --out OUT --judge 1924,...,1947 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session19_q14.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402

POWER = "gpu_kernels.mesh.learned.GAIN_POWER"
CONTRAST = "gpu_kernels.mesh.segment.K_SDF_MERGE"
SHIPPED = {POWER: 0.5, CONTRAST: 2.0}
#: C = as shipped; G75 = the area product to the power 0.75; T = K_SDF_MERGE None (SDF_MERGE 0.5); recipe S, "gain"
ARMS = [mr.Arm("C", ("y", 21), switches=dict(SHIPPED)),
        mr.Arm("G75", ("y", 21), switches={**SHIPPED, POWER: 0.75}),
        mr.Arm("T", ("y", 21), switches={**SHIPPED, CONTRAST: None})]
CANDIDATES = ("G75", "T")
#: the rule (benchmarks/results/mesh_q14_session19.md), each candidate against C over the complete draws:
#: (1) protocol mean cand <= C - 0.0010 AND cand's per-draw mean lower than C's on more draws than higher;
#: (2) meshes over 0.30 summed cand <= C; (3) k = "auto": neither switch is read there (checked in the md), so
#: report-only while k = "auto" is equal to C's on every row; if any row differs, the criterion applies: >= 80 % in
#: range on every complete draw and mean cand <= C + 0.002; (4) report-only (the default path, k = "auto", reads
#: neither switch); (5) >= 12 complete draws, 3 x 2 x 76 records and 60 folds without error, C's ALL = the shipped
#: model. Both pass: the lower protocol mean ships.
MIN_DRAWS = 12
#: the judge (criteria and reports): :class:`mesh_round.MarginRound` (shared by rounds q14, q15 and q16)
ROUND = mr.MarginRound("q14", ARMS, CANDIDATES, min_draws=MIN_DRAWS)


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln
    from gpu_kernels.mesh import segment as _sg

    if (_ln.GAIN_POWER != 0.5 or _sg.K_SDF_MERGE != 2.0 or _ln.POLICY != "gain" or _ln.AUTO_POLICY != "learned"):
        raise SystemExit("the library must be as shipped (GAIN_POWER 0.5, K_SDF_MERGE 2.0, POLICY gain, "
                         "AUTO_POLICY learned)")
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
