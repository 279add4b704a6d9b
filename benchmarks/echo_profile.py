"""Where the time of one echo estimate goes on the GPU (issue 24): each facade call of
:class:`gpu_kernels.echo._gpu.GpuOps` bracketed by CUDA events and summed by kind and level,
against the end-to-end time and the host's enqueue time, and an accuracy grid of solver
settings over several synthetic pairs and the ACDC pair (EPE / NCC against time).

Usage::

    python benchmarks/echo_profile.py --sizes 128,256 --out $OUT/echo_profile
    python benchmarks/echo_profile.py --only grid --configs '[{}, {"iters": 7}]' --seeds 0,1,2
"""

# ruff: noqa: B023  (every closure below is called in the iteration that makes it)
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import echo as bench  # noqa: E402  (benchmarks/echo.py: the cases, metrics and timing helpers)

OUT: dict = {"profile": [], "grid": [], "acdc": [], "sweeps": []}

WRAPPED = ("gaussian", "resample", "tensor", "smooth_channels", "system", "rhs", "sweep", "sor_sweep", "relax_sor",
           "check")


def profile(sizes, cfg, repeat=5, wave=None):
    """Per facade call: GPU ms (events around it) by (kind, level shape), for one estimate."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo import estimate_motion, motion

    be = get_backend("cuda")
    for size in sizes:
        case = bench.Case(size, "cuda")
        g = case.on_gpu()
        knobs = bench.solver_knobs(cfg)
        kw = knobs.__enter__()
        run = lambda: estimate_motion(g["fixed"], g["moving"], device=be, **kw)  # noqa: E731
        t_e2e, _ = bench.gpu_time(run, repeat=repeat, warmup=2)
        # host wall time of the call (it ends with one read of the device's convergence log)
        hs = []
        for _ in range(repeat):
            bench.sync()
            t0 = time.perf_counter()
            run()
            hs.append(time.perf_counter() - t0)
        t_host = float(np.median(hs))
        ops = motion._ops_for(be, kw.get("variant", "cache"), half=kw.get("precision", "float16") == "float16")
        events: list = []
        saved = {}
        for name in WRAPPED:
            fn = getattr(ops, name, None)
            if fn is None:
                continue
            saved[name] = fn

            def wrapped(*a, _fn=fn, _name=name, **k):
                shape = None
                for x in a:
                    if hasattr(x, "shape") and len(x.shape) >= 3:
                        shape = tuple(x.shape[-3:])
                        break
                e0 = cp.cuda.Event()
                e0.record()
                out = _fn(*a, **k)
                e1 = cp.cuda.Event()
                e1.record()
                events.append((_name, shape, e0, e1))
                return out

            setattr(ops, name, wrapped)
        try:
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record()
            run()
            b.record()
            b.synchronize()
            total = cp.cuda.get_elapsed_time(a, b)
        finally:
            for name in saved:
                delattr(ops, name)
        acc = defaultdict(lambda: [0.0, 0])
        for name, shape, e0, e1 in events:
            k = (name, "x".join(map(str, shape)) if shape else "-")
            acc[k][0] += cp.cuda.get_elapsed_time(e0, e1)
            acc[k][1] += 1
        # sor_sweep's time holds the passes it queues (sweep): count them once
        nested = any(n == "sor_sweep" for n, _ in acc)
        inside = sum(v[0] for (n, _), v in acc.items() if not (nested and n == "sweep"))
        rec = {"size": size, "config": json.dumps(cfg), "wave_D": wave, "e2e_ms": round(t_e2e * 1e3, 2),
               "host_wall_ms": round(t_host * 1e3, 2), "instrumented_ms": round(total, 2),
               "in_facade_ms": round(inside, 2),
               "calls": {f"{n}@{s}": [round(v[0], 3), v[1]] for (n, s), v in sorted(acc.items(), key=lambda kv: -kv[1][0])}}
        knobs.__exit__()
        OUT["profile"].append(rec)
        print(json.dumps(rec), flush=True)
        case.gpu = None


def sweeps(sizes, modes, reps=20):
    """ms per SOR sweep on the real finest system (first warp) for each kernel mode (a dict of
    solver knobs, see benchmarks/echo.py solver_knobs): the plain four passes, the marching
    passes, the wavefront; the same field as the first mode?"""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo._gpu import GpuOps, bytes_per_sweep

    be = get_backend("cuda")
    copy_bw = bench.copy_bandwidth()
    a, b = 0.02, 0.02
    for size in sizes:
        case = bench.Case(size, "cuda")
        ops = GpuOps(be, "cache", half=True)
        sysd = bench._finest_system(case, be, ops, {})
        Tc, u0 = sysd[3], sysd[4]
        ref = None
        for mode in modes:
            cfg = dict(mode)
            defs = cfg.pop("_defs", None)
            if cfg.get("_wave"):
                cfg.setdefault("_wave_min", 0)
            with bench.solver_knobs(cfg):
                # the kernels compiled with other launch bounds or defines, for this mode only
                mops = GpuOps(be, "cache", half=True, solve_defines=defs) if "_minb" in cfg or defs else ops
                mops._plans.clear()
                v = u0.copy()
                t, _ = bench.gpu_time(lambda v=v, o=mops: [o.sor_sweep(Tc, v, 1.8, a, b) for _ in range(reps)],
                                      repeat=5)
                w = u0.copy()
                for _ in range(3):
                    mops.sor_sweep(Tc, w, 1.8, a, b)
                w = cp.asnumpy(w)
            ref = w if ref is None else ref
            bmin = bytes_per_sweep((size,) * 3, "sor", half=True)
            ms = t / reps * 1e3
            rec = {"size": size, "mode": json.dumps(mode, sort_keys=True), "sweep_ms": round(ms, 4),
                   "GBps_min": round(bmin / (ms / 1e3) / 1e9, 1), "of_copy_min": round(bmin / (ms / 1e3) / copy_bw, 3),
                   "max_diff_vs_first": float(np.abs(w - ref).max())}
            OUT["sweeps"].append(rec)
            print(json.dumps(rec), flush=True)
        ops._plans.clear()
        sysd = None
        case.gpu = None
        cp.get_default_memory_pool().free_all_blocks()


def grid(sizes, seeds, configs, acdc_npz, data_dir):
    """EPE of each solver setting on several synthetic pairs (sizes x seeds) and the ACDC pair."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo import estimate_motion

    be = get_backend("cuda")
    for size in sizes:
        for seed in seeds:
            case = bench.Case(size, "cuda", seed=seed)
            g = case.on_gpu()
            for cfg in configs:
                with bench.solver_knobs(cfg) as kw:
                    t, (u, info) = bench.gpu_time(lambda c=kw: estimate_motion(g["fixed"], g["moving"], device=be,
                                                                               return_info=True, **c), repeat=3)
                rec = {"size": size, "seed": seed, "config": json.dumps(cfg, sort_keys=True),
                       "ms": round(t * 1e3, 2), "sweeps": info.sweeps, **bench.metrics(u, case)}
                OUT["grid"].append(rec)
                print(json.dumps(rec), flush=True)
            case.gpu = None
    try:
        f, m, sp = bench._acdc_pair(data_dir, acdc_npz)
    except Exception as exc:  # noqa: BLE001
        print(f"# ACDC not available: {exc}", flush=True)
        return
    from gpu_kernels.echo import ncc, warp_volume

    roi = bench.acdc_heart_roi(f.shape)
    fg, mg = cp.asarray(f), cp.asarray(m)
    for cfg in configs:
        with bench.solver_knobs(cfg) as kw:
            t, u = bench.gpu_time(lambda c=kw: estimate_motion(fg, mg, device=be, spacing=sp, **c), repeat=3)
        w = warp_volume(m, cp.asnumpy(u), device="cpu")
        rec = {"config": json.dumps(cfg, sort_keys=True), "ms": round(t * 1e3, 2), "ncc_after": round(ncc(f, w, roi), 4)}
        OUT["acdc"].append(rec)
        print(json.dumps(rec), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="128,256")
    ap.add_argument("--only", default="profile,grid")
    ap.add_argument("--configs", default="[{}]")
    ap.add_argument("--grid-sizes", default="96,128")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--acdc-npz", default=None)
    ap.add_argument("--data", default=str(bench.ROOT / ".." / "shared" / "data"))
    ap.add_argument("--out", default=None)
    ap.add_argument("--waves", default="0", help="wavefront slab depths to profile with --profile-waves")
    ap.add_argument("--modes", default='[{"_march": 0}, {"_march": 8}, {"_wave": 8, "_march": 0}]',
                    help="JSON list of sweep kernel modes (solver knobs) for the sweeps section")
    ap.add_argument("--profile-waves", action="store_true", help="profile each of --waves")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    configs = json.loads(args.configs)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"device: {bench.device_name()}", flush=True)
    from gpu_kernels.echo import _gpu

    if "sweeps" in only:
        sweeps(sizes, json.loads(args.modes))
    if "profile" in only:
        for D in [int(d) for d in args.waves.split(",")] if args.profile_waves else [_gpu.WAVE_D]:
            _gpu.WAVE_D = D
            for cfg in configs:
                profile(sizes, dict(cfg), wave=D)
    if "grid" in only:
        grid([int(s) for s in args.grid_sizes.split(",") if s], [int(s) for s in args.seeds.split(",") if s],
             configs, args.acdc_npz, args.data)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).with_suffix(".json").write_text(json.dumps(dict(OUT, device=bench.device_name(),
                                                                       command=" ".join(sys.argv)), indent=1))


if __name__ == "__main__":
    main()
