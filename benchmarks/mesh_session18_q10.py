"""Issue 22, session 18 (helper mesh-q10): candidate Q, the shipped integer-k recipe S plus ONE column,
``log_cut_over_thickness`` (learned.FEATURES' 22nd: log(the pair's boundary length / (pi x the smaller cluster's
thickness)), NumPy features and the compiled loop), against the control C (recipe S as shipped, its 21 columns), both
retrained per fold on the same records (working-mesh draws s1421-1422 at 3,500 faces), leave one category out, judged
in the real pipeline on new judging draws. The pre-registered rule: benchmarks/results/mesh_q10_session18.md. A thin
script on the shared driver ``benchmarks/mesh_round.py``:

    python benchmarks/mesh_session18_q10.py round --data psb.npz --work W --out OUT --judge 1800,...,1815 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session18_q10.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
    python benchmarks/mesh_session18_q10.py timing 101.off --old OLD_NUMBA_MERGE.py --model W/models/Q/ALL.npz \\
        [--rounds 41] [--rounds-k 11] [--k 6] [--json t.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import mesh_round as mr  # noqa: E402

COL = "log_cut_over_thickness"
#: the arms: C = recipe S as shipped (21 columns), Q = recipe S on the first 22 columns; both the "gain" order
ARMS = [mr.Arm("C", ("y", 21)), mr.Arm("Q", ("y", 22))]
#: the rule's criteria (benchmarks/results/mesh_q10_session18.md): (1) over 0.30 summed Q <= C - 3 and Q fewer on more
#: draws than more; (2) mean Q <= C + 0.0005, every draw Q <= C + 0.003; (3) k = "auto" equal in both arms on every
#: row (a harness check: both under the shipped auto model, which reads 20 columns); (5) >= 12 complete draws
RULE = mr.Rule(over_margin=3, over_draws=True, mean_margin=0.0005, draw_margin=0.003, auto="equal", min_draws=12)
#: (4) 17k end to end, k = "auto", paired median new - old <= this (ms)
TIME_MARGIN_MS = 3.0


def cmd_round(a) -> int:
    from gpu_kernels.mesh import learned as _ln

    if len(_ln.FEATURES) != 22 or _ln.FEATURES[21] != COL:
        raise SystemExit(f"the library's FEATURES must end with {COL!r} as its 22nd column")
    mr.round_from_args(ARMS, a)
    return 0


def cmd_judge(a) -> int:
    rule = mr.Rule(**{**RULE.__dict__, "min_draws": a.min_draws})
    mr.judge_file(a.rows, "C", "Q", rule, a.n_meshes, label="Q", json_out=a.json)
    return 0


def cmd_timing(a) -> int:
    rep = mr.timing(a.mesh, a.old, 21, a.model, a.device, a.rounds, a.rounds_k, a.k, margin_ms=TIME_MARGIN_MS,
                    label="Q")
    if a.json:
        Path(a.json).write_text(json.dumps(rep, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mr.add_round_args(sub)
    mr.add_judge_args(sub, RULE.min_draws)
    t = sub.add_parser("timing")
    t.add_argument("mesh")
    t.add_argument("--old", type=Path, required=True)
    t.add_argument("--model", type=Path, default=None)
    t.add_argument("--device", default="cuda")
    t.add_argument("--rounds", type=int, default=41)
    t.add_argument("--rounds-k", type=int, default=11)
    t.add_argument("--k", type=int, default=6)
    t.add_argument("--json", default="")
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge, "timing": cmd_timing}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
