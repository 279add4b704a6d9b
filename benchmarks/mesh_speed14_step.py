"""Issue 22 (session 14): is pymeshlab's step (the 17k mesh's 12k intermediate → 4k, alone, on the calling thread) slow
in some runs because of the step, or because the host runs everything slower then?

Per round: the step, then a fixed pure-Python loop, then a fixed NumPy random gather over 64 MB (memory-bound, like a
decimation's pointer chasing); each one's wall and thread CPU time. Printed: best / median / max of each, the
rank correlation of the step's time with the two fixed loads' over the rounds, and the process's huge pages
(``AnonHugePages`` of ``/proc/self/smaps_rollup``) after the rounds. Run it under different settings (the run script:
plain, ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1``, pinned to one core by ``taskset``) in alternating processes.

Example (device)::

    python benchmarks/mesh_speed14_step.py 101.off --rounds 20 --label plain
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app.io.mesh_io import read_mesh  # noqa: E402
from gpu_kernels.mesh import simplify as simp  # noqa: E402
from gpu_kernels.mesh.dualgraph import clean_mesh  # noqa: E402


def _rank(x) -> np.ndarray:
    return np.argsort(np.argsort(np.asarray(x)))


def _spearman(a, b) -> float:
    return float(np.corrcoef(_rank(a), _rank(b))[0, 1])


def _huge_kb() -> int:
    try:
        for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return -1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mesh")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--label", default="plain")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    v, f = read_mesh(args.mesh)
    v, f, _, _ = clean_mesh(v, f)
    vm, fm = simp._simplify_fast(v, f, int(simp.PRE_FACTOR * 4000))
    vm, fm, _, _ = clean_mesh(vm, fm)
    rng = np.random.default_rng(0)
    big = rng.random(8 << 20)                      # 64 MB
    idx = rng.integers(0, big.size, 2 << 20)

    def step():
        simp._simplify_pymeshlab(vm, fm, 4000)

    def loop():
        s = 0
        for i in range(600_000):
            s += i
        return s

    def gather():
        return float(big[idx].sum())

    kinds = {"step": step, "loop": loop, "gather": gather}
    out: dict = {k: [] for k in kinds}
    for r in range(args.rounds + 1):
        for k, fn in kinds.items():
            t, c = time.perf_counter(), time.thread_time()
            fn()
            if r:
                out[k].append((1e3 * (time.perf_counter() - t), 1e3 * (time.thread_time() - c)))
    res = {"label": args.label, "huge_kb": _huge_kb(), "runs": out}
    for k, xs in out.items():
        w = [x[0] for x in xs]
        print(f"step14 {args.label:8s} {k:6s} wall best {min(w):6.1f} median {statistics.median(w):6.1f} "
              f"max {max(w):6.1f}  cpu median {statistics.median(x[1] for x in xs):6.1f}  "
              f"runs {' '.join(f'{x:.0f}' for x in w)}", flush=True)
    step_w = [x[0] for x in out["step"]]
    print(f"step14 {args.label:8s} rank correlation of the step with loop {_spearman(step_w, [x[0] for x in out['loop']]):+.2f}"
          f", with gather {_spearman(step_w, [x[0] for x in out['gather']]):+.2f}; AnonHugePages {res['huge_kb']} kB",
          flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
