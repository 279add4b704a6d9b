"""Issue 22, session 18 (helper mesh-q11): candidate X, starts that follow the concave creases
(``segment.CREASE_STARTS``: every over-segmentation's start boundaries re-cut once more by the full-resolution
re-cut's minimum cut, :func:`gpu_kernels.mesh.segment.recut_starts`), against the control C (the switch off, as
shipped). Both arms are recipe S (64 trees, depth <= 4, 21 columns), retrained per fold on THEIR OWN records of the
training draws s1421-1422 at 3,500 faces (the starts change the records), leave one category out, judged in the real
pipeline on new judging draws, each arm on its own ``prepare_mesh`` (the harness's switch sets). The pre-registered
rule: benchmarks/results/mesh_q11_session18.md. A thin script on the shared driver ``benchmarks/mesh_round.py``:

X FAILED its rule (criteria (2) and (4)), so ``CREASE_STARTS`` is not in the library: this script needs the rule
commit's library (2a8ca40, ``git archive`` as the run script restores it).

    python benchmarks/mesh_session18_q11.py round --data psb.npz --work W --out OUT --judge 1840,...,1855 \\
        [--jobs 16] [--device cuda] [--judge-end SECONDS] [--batch 4] [--ids 21,101]
    python benchmarks/mesh_session18_q11.py judge OUT/rows.jsonl [--json j] [--n-meshes 76] [--min-draws 12]
    python benchmarks/mesh_session18_q11.py timing 101.off 281.off [--rounds 41] [--rounds-50k 21] [--json t.json]
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

SWITCH = "gpu_kernels.mesh.segment.CREASE_STARTS"
#: the arms: C = recipe S with the switch off (as shipped), X = recipe S with the switch on; the "gain" order both
ARMS = [mr.Arm("C", ("y", 21), switches={SWITCH: False}), mr.Arm("X", ("y", 21), switches={SWITCH: True})]
#: the rule's criteria (benchmarks/results/mesh_q11_session18.md): (1) over 0.30 summed X <= C - 3 and X fewer on
#: more draws than more; (2) mean X <= C + 0.0005, every draw X <= C + 0.003; (3) k = "auto" (the shipped auto
#: model, both arms): X's mean <= C's + 0.002 and >= 80 % of k in the humans' range on every draw (auto_max 1.0: no
#: per-draw cap); (5) >= 12 complete draws
RULE = mr.Rule(over_margin=3, over_draws=True, mean_margin=0.0005, draw_margin=0.003, auto="criterion",
               auto_max=1.0, auto_in_range=80.0, auto_mean_margin=0.002, min_draws=12)
#: (4) end to end, k = "auto", paired median new - old <= these (ms): 17k (PSB 101), 50k (PSB 281)
TIME_MARGIN_17K_MS = 3.0
TIME_MARGIN_50K_MS = 10.0


def cmd_round(a) -> int:
    from gpu_kernels.mesh import segment as _sg

    if getattr(_sg, "CREASE_STARTS", None) is not False:
        raise SystemExit("the library must have segment.CREASE_STARTS = False (the shipped starts) by default")
    mr.round_from_args(ARMS, a)
    return 0


def cmd_judge(a) -> int:
    rule = mr.Rule(**{**RULE.__dict__, "min_draws": a.min_draws})
    mr.judge_file(a.rows, "C", "X", rule, a.n_meshes, label="X", json_out=a.json)
    return 0


def cmd_timing(a) -> int:
    meshes = {"17k": (a.mesh17, TIME_MARGIN_17K_MS), "50k": (a.mesh50, TIME_MARGIN_50K_MS)}
    rep = mr.timing_switch(meshes, {SWITCH: False}, {SWITCH: True}, a.device,
                           {"17k": a.rounds, "50k": a.rounds_50k}, label="X")
    if a.json:
        Path(a.json).write_text(json.dumps(rep, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    mr.add_round_args(sub)
    mr.add_judge_args(sub, RULE.min_draws)
    t = sub.add_parser("timing")
    t.add_argument("mesh17")
    t.add_argument("mesh50")
    t.add_argument("--device", default="cuda")
    t.add_argument("--rounds", type=int, default=41)
    t.add_argument("--rounds-50k", type=int, default=21)
    t.add_argument("--json", default="")
    a = ap.parse_args(argv)
    return {"round": cmd_round, "judge": cmd_judge, "timing": cmd_timing}[a.cmd](a)


if __name__ == "__main__":
    raise SystemExit(main())
