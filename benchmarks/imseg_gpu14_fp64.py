"""Issue 21, session 14: the latency of the float64 steps the learned merge's rounds chain (helper imseg-gpu2).

The grid kernel's checkpoints say that one warp's ``lm_log(count / R)`` takes ~0.95 µs: this measures, with
clock64 in one warp (and with 16 warps a block on every SM, as the merge runs), the cycles of a dependent
chain of float64 adds, multiplies, divisions, ``lm_log`` calls (imseg_learned.cu's, --fmad=false) and of the
trees' leaf sum (a shuffle and an add a tree).

    python benchmarks/imseg_gpu14_fp64.py [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SRC = r'''
#include "imseg_learned.cu"
extern "C" __global__ void fp64_chains(const double* in, double* out, long long* cyc, int n) {
    const int lane = threadIdx.x & 31;
    double y = in[0], x = in[1] + lane;
    long long t0 = clock64();
    for (int i = 0; i < n; ++i) x = x + y;            // 0: add
    long long t1 = clock64();
    for (int i = 0; i < n; ++i) x = x * y;            // 1: multiply
    long long t2 = clock64();
    for (int i = 0; i < n / 8; ++i) x = y / x;        // 2: divide
    long long t3 = clock64();
    for (int i = 0; i < n / 8; ++i) x = lm_log(x) + 2.0;  // 3: lm_log (and an add)
    long long t4 = clock64();
    double acc = x;
    for (int i = 0; i < n; ++i) acc += __shfl_sync(0xffffffffu, y + lane, i & 31);  // 4: the leaf sum's step
    long long t5 = clock64();
    out[blockIdx.x * blockDim.x + threadIdx.x] = x + acc;
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        cyc[0] = t1 - t0; cyc[1] = t2 - t1; cyc[2] = t3 - t2; cyc[3] = t4 - t3; cyc[4] = t5 - t4;
    }
}
'''


def main(argv=None) -> int:
    import cupy as cp

    from gpu_kernels.backend import cuda_include_dir

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--out", default="")
    a = ap.parse_args(argv)
    mod = cp.RawModule(code=SRC, options=("-std=c++17", f"-I{cuda_include_dir()}", "--fmad=false"))
    fn = mod.get_function("fp64_chains")
    sm = cp.cuda.Device().attributes["MultiProcessorCount"]
    inp = cp.asarray([1.0000001, 1.5])
    names = ("add", "multiply", "divide", "lm_log + add", "shuffle + add")
    per = (a.n, a.n, a.n // 8, a.n // 8, a.n)
    res = {}
    for label, grid, block in (("one warp", 1, 32), (f"{sm} blocks x 512", sm, 512)):
        out = cp.zeros(grid * block)
        cyc = cp.zeros(5, dtype=cp.int64)
        for _ in range(3):
            fn((grid,), (block,), (inp, out, cyc, cp.int32(a.n)))
        cp.cuda.Device().synchronize()
        c = cyc.get().tolist()
        res[label] = {nm: round(c[i] / per[i], 1) for i, nm in enumerate(names)}
        print(label, "cycles per dependent step:", res[label], flush=True)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
