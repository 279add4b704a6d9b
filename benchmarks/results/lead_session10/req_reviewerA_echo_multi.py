"""reviewer A (session 10): echo's kept device fields (0e3f745) on more than two frames, on the GPU:
the trajectories from every reference, the summary and the metrics from the kept fields equal the
host-field path (the code before 0e3f745), and the kept fields stay equal to the host copies after use."""
import os
import sys

import numpy as np

from app.tools import echo
from app.tools.stages import StageCache
from gpu_kernels.backend import get_backend
from gpu_kernels.echo import maps, sequence
from gpu_kernels.echo.synthetic import make_sequence

be = get_backend(os.environ.get("DEV", "cuda"))
KW = {"levels": 2, "warps": 1, "iters": 5}
s = make_sequence(32, frames=5, seed=11)
T = s.frames.shape[0]
shape = s.frames.shape[1:]
rng = np.random.default_rng(5)
truth = {(0, 1): rng.normal(size=(3,) + shape).astype(np.float32), (2, 3): rng.normal(size=(3,) + shape).astype(np.float32)}
masks = {0: rng.random(shape) > 0.5, 2: rng.random(shape) > 0.3}
data = echo.EchoData(s.frames, tuple(s.spacing), [f"f{i}" for i in range(T)], truth=truth, masks=masks)
fails = []

def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        fails.append(what)

# 1) the library: kept fields, trajectories from each reference, against the host-field path
pairs = sequence.estimate_pairs(s.frames, device=be, **KW)
host_only = sequence.PairFields(pairs.host.copy(), list(pairs.info), False, None, None)
if be.is_gpu:
    check(pairs.on_device is not None and len(pairs.on_device) == T - 1, "fields kept on the device")
for ref in (0, 1, 2, 4):
    a = sequence.trajectories(pairs, ref, device=be)
    b = sequence.trajectories(host_only, ref, device=be)
    check(a.dtype == b.dtype and np.array_equal(a, b), f"trajectories ref {ref}: kept fields == host fields")
    if be.is_gpu:
        check(all(np.array_equal(pairs.on_device[k].get(), pairs.host[k]) for k in range(T - 1)),
              f"kept fields unchanged after ref {ref}")
        check(np.array_equal(pairs.summary_grid.get(), pairs.host[maps.SUMMARY_GRID]), "summary grid == host grid")
    st1 = maps.motion_stats(pairs.host, a, data.spacing, device=be, pair_grid=pairs.summary_grid)
    st0 = maps.motion_stats(pairs.host, a, data.spacing, device=be)
    check(st1 == st0, f"summary from the kept grid == host path (ref {ref})")
ref_seq = sequence.estimate_sequence(s.frames, reference=2, trajectory_dtype=np.float16, device=be, **KW)
check(np.array_equal(ref_seq.pairwise, pairs.host), "pairs == estimate_sequence's")
check(np.array_equal(ref_seq.trajectory, sequence.trajectories(pairs, 2, device=be)), "ref 2 == estimate_sequence's")

# 2) the tool, live: alpha edit then reference edits, each against a fresh full run and the host path
cache = StageCache()
p = echo.PARAMS.validate(KW)
echo.TOOL.run_staged(data, p, device=be, cache=cache)
for edit in ({"alpha": 0.05}, {"reference": 3}, {"reference": -1}, {"reference": 0}, {"alpha": 0.07, "reference": 2}):
    p = {**p, **edit}
    res, rep = echo.TOOL.run_staged(data, p, device=be, cache=cache)
    full = echo.run(data, p, device=be)
    same = (np.array_equal(res.pairwise, full.pairwise) and np.array_equal(res.trajectory, full.trajectory)
            and res.stats == full.stats and res.metrics == full.metrics)
    check(same, f"edit {edit} (ran {rep.ran}) == fresh full run")
    r = p["reference"] % T
    want = sequence.trajectories(sequence.PairFields(res.pairwise.copy(), [], False, None, None), r, device=be)
    check(np.array_equal(res.trajectory, want), f"edit {edit}: trajectory == host-field path")
    check(res.stats == maps.motion_stats(res.pairwise, res.trajectory, data.spacing, device=be),
          f"edit {edit}: stats == host path")
    per = [maps.pair_metrics(res.pairwise[i], gt, masks.get(i), data.spacing, device=be)
           for (i, j), gt in sorted(truth.items())]
    keys = [k for k in per[0] if k != "mask_voxels"]
    ok = all(res.metrics[k] == round(float(np.mean([m[k] for m in per])), 5) for k in keys if k in res.metrics)
    check(ok, f"edit {edit}: metrics == host path")
print("RESULT", "PASS" if not fails else f"FAIL {len(fails)}: {fails}")
sys.exit(1 if fails else 0)
