"""Issue 22, session 24 (the lead, round hull24): the integer-k merge model with a 22nd feature, the depth of the
pair's union under its convex hull (``learned.HULL_FEATURE``, ``"hull_depth_union"``: the k-DOP of 26 directions, 64
kept centroids a cluster, over the square root of the component's area).

Why: the merges' 21 features see the boundary (concavity, length, normals) and the parts' sizes and thickness, not the
shape of the union. CPU pilot (``results/mesh_hull24_session24.md``): on the default result at 42 clusters of all 76
shared meshes, every adjacent pair labelled "same part" by each human, leave one category out, a 64-tree model on six
features of the kind the merges have reaches a per-mesh AUC of 0.759, and 0.795 with the exact hull's union depth
(bust 303 0.754 -> 0.817, fourleg 381 0.774 -> 0.811). Only a held-out segmentation round can say whether the merges
gain. The rule: benchmarks/results/mesh_hull24_session24.md.

A record of round hull24, which ran at the commit benchmarks/results/mesh_hull24_session24.md names. Since session 26
the k-DOP depth it judged is gone: ``HULL_FEATURE`` now means the exact hull, so this script run today would judge
that, not the k-DOP.

    python benchmarks/mesh_session24_hull.py round --data psb.npz --work W --out OUT --judge 2192,...
    python benchmarks/mesh_session24_hull.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 16]
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
HULL = "gpu_kernels.mesh.learned.HULL_FEATURE"


def arms() -> list:
    """C (recipe S retrained on its records: its ALL must equal the shipped model) and H (recipe S on 22 columns,
    its records and merges with the hull feature on): two switch sets, on the shipped model's training meshes
    (listed, ``CANONICAL_ORDER`` off), as rounds mono23 / cap23."""
    return [mr.Arm("C", ("y", mm.NF), switches={mm.CANON: False}),
            mr.Arm("H", ("y", mm.NF + 1), switches={mm.CANON: False, HULL: True})]


#: the rule (benchmarks/results/mesh_hull24_session24.md): H against C over the complete draws: (1) protocol mean
#: H <= C - 0.0010 and lower on more draws than higher; (2) meshes over 0.30 summed H <= C; (3) k = "auto" a harness
#: check; (5) >= 16 complete draws, 2 x 76 records per switch set and 2 x 20 folds without error, C's ALL = the shipped
#: model
def judge_round() -> mr.MarginRound:
    return mr.MarginRound("hull24", arms(), ("H",), mean_margin=0.0010, need_better=True, over_allow=0,
                          min_draws=MIN_DRAWS, train_draws=2)


def main(argv=None) -> int:
    return mr.margin_main(__doc__, arms(), judge_round(), argv, min_draws=MIN_DRAWS)


if __name__ == "__main__":
    raise SystemExit(main())
