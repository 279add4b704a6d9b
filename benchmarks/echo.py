"""3-D echo motion benchmark: our CLG + divergence estimator against the peers, on synthetic
3-D echo pairs with exact motion (64^3 .. 256^3), kernel bandwidth and memory, a tuning
sweep, and the real cardiac MRI pair (ACDC, ED -> ES).

Rows (each degrades to a note when its package or device is missing):

* ``ours-gpu-cache`` / ``ours-gpu-smem``: the two kernel variants (SOR), and
  ``ours-gpu-jacobi`` (the paper's Jacobi with the same sweep budget); CuPy arrays in and
  out, so transfers are excluded (as in the paper);
* ``ours-cpu``: the NumPy/SciPy path (sizes up to ``--cpu-max``);
* ``skimage-ilk`` / ``skimage-tvl1``: scikit-image 3-D, CPU (up to ``--skimage-max``: slow);
* ``cucim-ilk`` / ``cucim-tvl1``: the same on the GPU through cuCIM;
* ``of3d-farneback`` / ``of3d-lk``: ``opticalflow3d`` (CuPy), its default settings;
* ``sitk-demons``: SimpleITK's FastSymmetricForcesDemonsRegistrationFilter (CPU).

Pair: frames 2 -> 3 of the default 10-frame synthetic cycle (mid-systole, the largest
motion), rendered by :func:`gpu_kernels.echo.synthetic.make_sequence`. Errors: mean and
95th-percentile endpoint error (voxels) over the volume and mean EPE in the myocardium,
and the mean |det(I + grad u) - 1| in the myocardium (eroded by one voxel), where the true
motion preserves volume (its own value is below 0.001).

Usage::

    python benchmarks/echo.py --out $OUT/echo                     # everything there is
    python benchmarks/echo.py --sizes 64,128 --only ours,cucim
    python benchmarks/echo.py --only sitk --sizes 64,128          # SimpleITK here (CPU)
    python benchmarks/echo.py --only tune --sizes 128             # the tuning sweep
"""

# ruff: noqa: B023  (every closure below is called in the iteration that makes it)
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, device_name, format_table, host_description  # noqa: E402

if os.environ.get("ECHO_BENCH_KERNELS"):
    # another gpu_kernels tree (e.g. `git archive` of an older commit): a baseline in the same run
    sys.path.insert(0, os.environ["ECHO_BENCH_KERNELS"])

from gpu_kernels.echo import (  # noqa: E402
    estimate_motion,
    jacobian_determinant,
    mean_squared_difference,
    ncc,
    warp_volume,
)
from gpu_kernels.echo.synthetic import make_sequence  # noqa: E402

PAIR = (2, 3)
RESULTS: dict = {"rows": [], "notes": [], "bandwidth": [], "memory": [], "tuning": [], "acdc": [], "kernels": [],
                 "residual": [], "live": [], "persist": []}
T_START = time.perf_counter()


# --------------------------------------------------------------------------- helpers
def note(msg):
    print(f"# {msg}", flush=True)
    RESULTS["notes"].append(msg)


def left(budget):
    return budget - (time.perf_counter() - T_START)


def have_gpu() -> bool:
    try:
        import cupy as cp

        return cp.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def sync():
    import cupy as cp

    cp.cuda.get_current_stream().synchronize()


def gpu_time(fn, repeat=3, warmup=1, max_s=20.0):
    """Median seconds of fn() with CUDA events; returns (seconds, last result)."""
    import cupy as cp

    out = None
    for _ in range(warmup):
        out = fn()
    sync()
    ts = []
    spent = 0.0
    for _ in range(repeat):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        out = fn()
        b.record()
        b.synchronize()
        t = cp.cuda.get_elapsed_time(a, b) / 1e3
        ts.append(t)
        spent += t
        if spent > max_s:
            break
    return float(np.median(ts)), out


def cpu_time(fn, repeat=1):
    ts, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)), out


class Case:
    """One synthetic pair with its truth, on the host and (when there is one) on the GPU."""

    def __init__(self, size, device, seed=0):
        t0 = time.perf_counter()
        seq = make_sequence(size, frames=4, cycles=0.4, seed=seed, device=device)   # = frames 0..3 of 10
        i, j = PAIR
        self.size = size
        self.fixed = seq.frames[i]
        self.moving = seq.frames[j]
        self.gt = seq.displacement(i, j)
        from scipy import ndimage as ndi

        self.myo = ndi.binary_erosion(seq.myocardium_mask(i), iterations=1)
        self.seconds = time.perf_counter() - t0
        self.gpu = None

    def on_gpu(self):
        import cupy as cp

        if self.gpu is None:
            self.gpu = dict(fixed=cp.asarray(self.fixed), moving=cp.asarray(self.moving),
                            fixed32=cp.asarray(self.fixed, dtype=cp.float32) / 255.0,
                            moving32=cp.asarray(self.moving, dtype=cp.float32) / 255.0,
                            fixed255=cp.asarray(self.fixed, dtype=cp.float32),
                            moving255=cp.asarray(self.moving, dtype=cp.float32),
                            gt=cp.asarray(self.gt), myo=cp.asarray(self.myo))
        return self.gpu


def metrics(u, case):
    """EPE and Jacobian metrics (computed on the device the field is on)."""
    if hasattr(u, "__cuda_array_interface__"):
        import cupy as xp

        g = case.on_gpu()
        gt, myo = g["gt"], g["myo"]
    else:
        xp = np
        gt, myo = case.gt, case.myo
        u = np.asarray(u, dtype=np.float32)
    e = xp.sqrt(((u - gt) ** 2).sum(axis=0))
    det = jacobian_determinant(u)
    return {
        "epe": round(float(e.mean()), 4),
        "epe_p95": round(float(xp.percentile(e, 95)), 4),
        "epe_myo": round(float(e[myo].mean()), 4),
        "det_err_myo": round(float(xp.abs(det[myo] - 1).mean()), 4),
    }


def add_row(method, case, seconds, u, **extra):
    row = {"method": method, "size": case.size, "ms": round(seconds * 1e3, 2)}
    try:
        row.update(metrics(u, case))
    except Exception as exc:  # noqa: BLE001
        row["error"] = f"metrics: {type(exc).__name__}: {exc}"
    row.update(extra)
    RESULTS["rows"].append(row)
    print(json.dumps(row), flush=True)
    return row


def flush(out):
    if out is None:
        return
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = dict(RESULTS, device=device_name(), host=host_description(),
                   date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), command=" ".join(sys.argv))
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1, default=str))
    out.with_suffix(".md").write_text(render_md(payload))


def render_md(p):
    parts = [f"Device: {p['device']}; host: {p['host']}; {p['date']}\n\nCommand: `{p['command']}`\n"]
    if p["rows"]:
        cols = [("method", "method"), ("size", "size"), ("ms", "time (ms)"), ("epe", "EPE"),
                ("epe_p95", "EPE p95"), ("epe_myo", "EPE myo"), ("det_err_myo", "|det-1| myo"), ("sweeps", "sweeps"),
                ("note", "note")]
        parts.append(format_table(sorted(p["rows"], key=lambda r: (r["size"], r["method"])), cols))
    if p["bandwidth"]:
        parts.append("\nSweep bandwidth\n\n" + format_table(p["bandwidth"], [(k, k) for k in p["bandwidth"][0]]))
    if p["kernels"]:
        parts.append("\nKernels\n\n" + format_table(p["kernels"], [(k, k) for k in p["kernels"][0]]))
    if p["memory"]:
        parts.append("\nPeak device memory\n\n" + format_table(p["memory"], [(k, k) for k in p["memory"][0]]))
    if p["tuning"]:
        keys = list(dict.fromkeys(k for r in p["tuning"] for k in r))
        parts.append("\nTuning\n\n" + format_table(p["tuning"], [(k, k) for k in keys]))
    if p["acdc"]:
        keys = list(dict.fromkeys(k for r in p["acdc"] for k in r))
        parts.append("\nACDC ED -> ES\n\n" + format_table(p["acdc"], [(k, k) for k in keys]))
    for key, title in (("persist", "A warp's sweeps in one launch (levels up to N voxels) against 4 launches a sweep"),
                       ("residual", "Sweeps to reach a residual (finest level, first warp)"),
                       ("live", "Live re-run, compute only (tool.run_staged)")):
        if p.get(key):
            keys = list(dict.fromkeys(k for r in p[key] for k in r))
            parts.append(f"\n{title}\n\n" + format_table(p[key], [(k, k) for k in keys]))
    if p["notes"]:
        parts.append("\nNotes\n\n" + "\n".join(f"- {n}" for n in p["notes"]))
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- sections
def copy_bandwidth():
    import cupy as cp

    n = 256 * 1024 * 1024 // 4 * 4       # 1 GiB of float32
    a = cp.ones(n // 4, dtype=cp.float32)
    b = cp.empty_like(a)
    t, _ = gpu_time(lambda: cp.copyto(b, a), repeat=10, warmup=2)
    bw = 2 * a.nbytes / t
    RESULTS["copy_bandwidth_GBps"] = round(bw / 1e9, 1)
    print(f"device-to-device copy: {bw / 1e9:.0f} GB/s (read + write)", flush=True)
    a = b = None
    cp.get_default_memory_pool().free_all_blocks()
    return bw


def run_ours(cases, params, only, budget):
    import cupy as cp

    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    for case in cases:
        g = case.on_gpu()
        for variant in ("cache", "smem"):
            if left(budget) < 20:
                note(f"ours-{variant} at {case.size}^3 skipped: out of time")
                continue
            try:
                t, (u, info) = gpu_time(lambda v=variant: estimate_motion(
                    g["fixed"], g["moving"], device=be, variant=v, return_info=True, **params), repeat=5)
                add_row(f"ours-gpu-{variant}", case, t, u, sweeps=info.sweeps)
            except Exception as exc:  # noqa: BLE001
                note(f"ours-{variant} at {case.size}^3 failed: {type(exc).__name__}: {exc}")
                traceback.print_exc()
        try:
            t, (u, info) = gpu_time(lambda: estimate_motion(
                g["fixed"], g["moving"], device=be, solver="jacobi", return_info=True, **params), repeat=3)
            add_row("ours-gpu-jacobi", case, t, u, sweeps=info.sweeps, note="same sweep cap as SOR")
        except Exception as exc:  # noqa: BLE001
            note(f"ours-jacobi at {case.size}^3 failed: {type(exc).__name__}: {exc}")
        cp.get_default_memory_pool().free_all_blocks()


def run_ours_cpu(cases, params, cpu_max, budget):
    for case in cases:
        if case.size > cpu_max or left(budget) < 60:
            note(f"ours-cpu at {case.size}^3 not run (cap {cpu_max}^3 or out of time)")
            continue
        t, u = cpu_time(lambda c=case: estimate_motion(c.fixed, c.moving, device="cpu", **params))
        add_row("ours-cpu", case, t, u)


def run_skimage(cases, sk_max, budget):
    try:
        from skimage.registration import optical_flow_ilk, optical_flow_tvl1
    except ImportError as exc:
        note(f"scikit-image missing: {exc}")
        return
    for case in cases:
        if case.size > sk_max:
            note(f"skimage at {case.size}^3 not run: 3-D iLK/TV-L1 on the CPU take minutes there (cap {sk_max}^3)")
            continue
        f = case.fixed.astype(np.float32) / 255
        m = case.moving.astype(np.float32) / 255
        for name, fn in (("skimage-ilk", optical_flow_ilk), ("skimage-tvl1", optical_flow_tvl1)):
            if left(budget) < 60:
                note(f"{name} at {case.size}^3 skipped: out of time")
                continue
            t, u = cpu_time(lambda fn=fn: np.stack(fn(f, m)))
            add_row(name, case, t, u, note="CPU, scikit-image defaults")


def run_cucim(cases, budget, tvl1_max=10**9):
    try:
        from cucim.skimage.registration import optical_flow_ilk, optical_flow_tvl1
    except Exception as exc:  # noqa: BLE001
        note(f"cuCIM not available: {type(exc).__name__}: {exc}")
        return
    import cupy as cp

    for case in cases:
        g = case.on_gpu()
        for name, fn in (("cucim-ilk", optical_flow_ilk), ("cucim-tvl1", optical_flow_tvl1)):
            if name == "cucim-tvl1" and case.size > tvl1_max:
                note(f"cucim-tvl1 at {case.size}^3 not run in this run (cap {tvl1_max}^3)")
                continue
            if left(budget) < 30:
                note(f"{name} at {case.size}^3 skipped: out of time")
                continue
            try:
                t, u = gpu_time(lambda fn=fn: cp.stack(fn(g["fixed32"], g["moving32"])), repeat=3, max_s=10)
                add_row(name, case, t, u, note="cuCIM defaults")
            except Exception as exc:  # noqa: BLE001
                note(f"{name} at {case.size}^3 failed: {type(exc).__name__}: {exc}")
        cp.get_default_memory_pool().free_all_blocks()


def run_of3d(cases, budget):
    np.row_stack = np.vstack      # opticalflow3d 0.3.2 calls np.row_stack, gone in NumPy 2
    try:
        from opticalflow3D.helpers.farneback_functions import farneback_3d
        from opticalflow3D.helpers.pyrlk_functions import pyrlk_3d
    except Exception as exc:  # noqa: BLE001
        note(f"opticalflow3d not available: {type(exc).__name__}: {exc}")
        return
    import cupy as cp

    sign = {}
    for case in cases:
        g = case.on_gpu()
        # intensities 0..255: LK's regularisation (alpha^2 = 0.01) and eigenvalue threshold (tau = 0.1)
        # are absolute, and with [0, 1] intensities they reject every displacement
        runs = (("of3d-farneback", lambda: farneback_3d(g["fixed255"], g["moving255"], iters=5, num_levels=5, scale=0.5,
                                                        spatial_size=9, sigma_k=0.15, filter_type="box",
                                                        filter_size=21, presmoothing=None)[:3]),
                ("of3d-lk", lambda: pyrlk_3d(g["fixed255"], g["moving255"], iters=15, num_levels=5, scale=0.5, tau=0.1,
                                             alpha=0.1, filter_type="gaussian", filter_size=21,
                                             presmoothing=None)))
        for name, fn in runs:
            if left(budget) < 30:
                note(f"{name} at {case.size}^3 skipped: out of time")
                continue
            try:
                t, (vx, vy, vz) = gpu_time(fn, repeat=3, max_s=10)
                u = cp.stack([vz, vy, vx]).astype(cp.float32)
                if name not in sign:     # decide the sign convention once, on the first size
                    e_pos = float(cp.sqrt(((u - g["gt"]) ** 2).sum(0)).mean())
                    e_neg = float(cp.sqrt(((-u - g["gt"]) ** 2).sum(0)).mean())
                    sign[name] = 1.0 if e_pos <= e_neg else -1.0
                    note(f"{name}: field sign {sign[name]:+.0f} matches our convention (EPE {e_pos:.3f} vs {e_neg:.3f})")
                add_row(name, case, t, sign[name] * u, note="opticalflow3d 0.3.2 defaults, intensities 0..255")
            except Exception as exc:  # noqa: BLE001
                note(f"{name} at {case.size}^3 failed: {type(exc).__name__}: {exc}")
        cp.get_default_memory_pool().free_all_blocks()


def run_sitk(cases, budget):
    try:
        import SimpleITK as sitk
    except ImportError as exc:
        note(f"SimpleITK not available: {exc}")
        return
    for case in cases:
        if left(budget) < 60:
            note(f"sitk-demons at {case.size}^3 skipped: out of time")
            continue
        f = sitk.GetImageFromArray(case.fixed.astype(np.float32))
        m = sitk.GetImageFromArray(case.moving.astype(np.float32))
        flt = sitk.FastSymmetricForcesDemonsRegistrationFilter()
        flt.SetNumberOfIterations(50)
        flt.SetStandardDeviations(1.5)
        flt.SetSmoothDisplacementField(True)

        def go():
            # a three-level pyramid, as ITK's multi-resolution demons examples do
            disp = None
            for shrink in (4, 2, 1):
                fs = sitk.Shrink(f, [shrink] * 3) if shrink > 1 else f
                ms = sitk.Shrink(m, [shrink] * 3) if shrink > 1 else m
                if disp is not None:
                    disp = sitk.Resample(disp, fs, sitk.Transform(), sitk.sitkLinear, 0.0, disp.GetPixelID())
                out = flt.Execute(fs, ms, disp) if disp is not None else flt.Execute(fs, ms)
                disp = out
            return disp

        t, disp = cpu_time(go)
        arr = sitk.GetArrayFromImage(disp)          # (Z, Y, X, 3) with (x, y, z) components, mm = voxels
        u = np.ascontiguousarray(np.moveaxis(arr[..., ::-1], -1, 0), dtype=np.float32)
        add_row("sitk-demons", case, t, u, note=f"CPU {os.cpu_count()} cores, 3 levels x 50 iterations, sigma 1.5")


def sweep_bandwidth(sizes, copy_bw, budget):
    """Time relaxation sweeps alone and compare their minimal traffic with the copy bandwidth."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo._gpu import GpuOps

    be = get_backend("cuda")
    for size in sizes:
        if left(budget) < 20:
            note(f"sweep bandwidth at {size}^3 skipped: out of time")
            continue
        shape = (size,) * 3
        n = size ** 3
        rng = cp.random.default_rng(0)
        f = rng.random(shape, dtype=cp.float32)
        m = rng.random(shape, dtype=cp.float32)
        u = cp.zeros((3,) + shape, dtype=cp.float32)
        for variant, extra in (("cache", {}), ("smem", {}), ("cache", {"ECHO_MINB": 2}), ("cache", {"ECHO_MINB": 4}),
                               ("smem", {"ECHO_MINB": 4})):
            ops = GpuOps(be, variant, solve_defines=extra)
            label = variant + "".join(f" {k[5:].lower()}={v}" for k, v in extra.items())
            t_tensor, T = gpu_time(lambda ops=ops: ops.tensor(f, m, u, "central"), repeat=10)
            t_smooth, _ = gpu_time(lambda ops=ops: ops.smooth_channels(T, 2.5), repeat=5)
            t_finish, Tc = gpu_time(lambda ops=ops: ops.finish(T, u, 0.02, 0.02), repeat=5)
            nc = Tc.size // 9
            RESULTS["kernels"].append({
                "size": size, "variant": label, "tensor_ms": round(t_tensor * 1e3, 3),
                "tensor_GBps": round((2 * 4 * n + 3 * 4 * n + 9 * 4 * n) / t_tensor / 1e9, 1),
                "smooth9_ms": round(t_smooth * 1e3, 3),
                "smooth9_GBps": round(9 * 3 * 2 * 4 * n / t_smooth / 1e9, 1),
                "finish_ms": round(t_finish * 1e3, 3)})
            print(json.dumps(RESULTS["kernels"][-1]), flush=True)
            v = (cp.random.default_rng(1).standard_normal((3,) + shape, dtype=cp.float32) * 0.1)
            w = cp.empty_like(v)
            reps = 20

            def sor(ops=ops):
                for _ in range(reps):
                    for c in range(4):
                        ops.sweep(Tc, v, v, c, 1.8, 0.02, 0.02)

            def jac(ops=ops):
                a, b = v, w
                for _ in range(reps):
                    ops.sweep(Tc, a, b, -1, 1.0, 0.02, 0.02)
                    a, b = b, a

            bytes_min = 9 * 4 * nc + 2 * 3 * 4 * n    # system read once, field read + written once
            for solver, fn in (("sor", sor), ("jacobi", jac)):
                t, _ = gpu_time(fn, repeat=3)
                ts = t / reps
                RESULTS["bandwidth"].append({
                    "size": size, "variant": label, "solver": solver, "sweep_ms": round(ts * 1e3, 4),
                    "MB_min": round(bytes_min / 1e6, 1), "GBps": round(bytes_min / ts / 1e9, 1),
                    "of_copy": round(bytes_min / ts / copy_bw, 3)})
                print(json.dumps(RESULTS["bandwidth"][-1]), flush=True)
            Tc = T = None
            cp.get_default_memory_pool().free_all_blocks()


def peak_memory(cases, params):
    import cupy as cp

    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    pool = cp.get_default_memory_pool()
    for case in cases:
        for solver in ("sor", "jacobi"):
            g = case.on_gpu()
            pool.free_all_blocks()
            base = pool.total_bytes()
            u = estimate_motion(g["fixed"], g["moving"], device=be, solver=solver, **params)
            sync()
            peak = pool.total_bytes() - base
            n = case.size ** 3
            RESULTS["memory"].append({"size": case.size, "solver": solver, "peak_MiB": round(peak / 2**20, 1),
                                      "floats_per_voxel": round(peak / 4 / n, 2),
                                      "note": "pool growth during the call (inputs are uint8, on the device before)"})
            print(json.dumps(RESULTS["memory"][-1]), flush=True)
            del u
            pool.free_all_blocks()


def tune(cases, base, budget):
    """A speed grid (warps x iters x tol) and an accuracy grid (rho x beta x alpha) around ``base``,
    at each size of ``cases``; EPE averaged over the pairs of one size."""
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    speed = [{"warps": w, "iters": it, "tol": tol} for w in (2, 3) for it in (5, 10, 20) for tol in (0.0, 1e-3)]
    accuracy = [{"rho": r, "beta": b, "alpha": a} for r in (3.0, 3.5, 4.0, 5.0) for b in (0.0, 0.005, 0.01, 0.02, 0.05)
                for a in (0.015, 0.02, 0.03)]
    accuracy += [{"levels": lv} for lv in (2, 3, 4, 5)] + [{"solver": "jacobi", "iters": k} for k in (10, 20, 40)]
    by_size: dict = {}
    for c in cases:
        by_size.setdefault(c.size, []).append(c)
    for size, group in sorted(by_size.items()):
        for change in [dict()] + speed + accuracy:
            if left(budget) < 15:
                note(f"tuning at {size}^3 stopped early: out of time")
                break
            params = dict(base, **change)
            rows = []
            for case in group:
                g = case.on_gpu()
                try:
                    t, (u, info) = gpu_time(lambda p=params, g=g: estimate_motion(
                        g["fixed"], g["moving"], device=be, return_info=True, **p), repeat=2)
                    rows.append((t, metrics(u, case), info.sweeps))
                except Exception as exc:  # noqa: BLE001
                    note(f"tuning {change} failed: {type(exc).__name__}: {exc}")
                    rows = []
                    break
            if not rows:
                continue
            rec = {"size": size, "change": json.dumps(change) if change else "base",
                   "ms": round(float(np.mean([r[0] for r in rows])) * 1e3, 2),
                   "epe": round(float(np.mean([r[1]["epe"] for r in rows])), 4),
                   "epe_p95": round(float(np.mean([r[1]["epe_p95"] for r in rows])), 4),
                   "epe_myo": round(float(np.mean([r[1]["epe_myo"] for r in rows])), 4),
                   "det_err_myo": round(float(np.mean([r[1]["det_err_myo"] for r in rows])), 4),
                   "sweeps": int(np.mean([r[2] for r in rows]))}
            RESULTS["tuning"].append(rec)
            print(json.dumps(rec), flush=True)


def acdc(data_dir, params, budget):
    from app.io.volume_io import read_volume

    d = Path(data_dir) / "cardiac-mri" / "acdc"
    if not d.is_dir():
        note(f"ACDC not found at {d}")
        return
    ed, es = read_volume(d / "sax_ed.nii.gz"), read_volume(d / "sax_es.nii.gz")
    f, m = ed.data.astype(np.float32), es.data.astype(np.float32)
    roi = acdc_heart_roi(f.shape)
    devices = ["cuda", "cpu"] if have_gpu() else ["cpu"]
    for dev in devices:
        if left(budget) < 20:
            note("ACDC skipped: out of time")
            break
        t0 = time.perf_counter()
        u = estimate_motion(f, m, device=dev, spacing=ed.spacing, **params)
        t = time.perf_counter() - t0
        if dev == "cuda":
            t, u = cpu_time(lambda: estimate_motion(f, m, device=dev, spacing=ed.spacing, **params))
        w = warp_volume(m, u, device="cpu")
        det = jacobian_determinant(u)[roi]
        mag = np.sqrt(((u * np.asarray(ed.spacing, np.float32).reshape(3, 1, 1, 1)) ** 2).sum(0))[roi]
        rec = {"device": dev, "s": round(t, 3),
               "ncc_before": round(ncc(f, m, roi), 4), "ncc_after": round(ncc(f, w, roi), 4),
               "msd_before": round(mean_squared_difference(f, m, roi), 1),
               "msd_after": round(mean_squared_difference(f, w, roi), 1),
               "ncc_all_before": round(ncc(f, m), 4), "ncc_all_after": round(ncc(f, w), 4),
               "det_min": round(float(det.min()), 3), "det_p1": round(float(np.percentile(det, 1)), 3),
               "det_p99": round(float(np.percentile(det, 99)), 3), "det_max": round(float(det.max()), 3),
               "motion_mm_p99": round(float(np.percentile(mag, 99)), 2)}
        RESULTS["acdc"].append(rec)
        print(json.dumps(rec), flush=True)


def jacobi_table(out):
    """Recompute the table of the largest block-Jacobi eigenvalue with the border (CPU, minutes)."""
    import scipy.linalg as sl

    from gpu_kernels.echo import _cpu

    def lam(shape, alpha, beta):
        nv = int(np.prod(shape))
        n = 3 * nv
        T = np.zeros((9,) + shape, np.float32)
        _cpu.finish(T, None, alpha, beta)
        cnt = _cpu.neighbour_counts(shape)
        ntot = cnt.sum(0)
        w = _cpu.mixed_weights(shape)
        g0 = [np.broadcast_to(w[a][0][1], shape) for a in range(3)]
        K = np.zeros(shape + (3, 3))
        for i in range(3):
            K[..., i, i] = alpha * ntot + beta * cnt[i]
        for i, k in ((0, 1), (0, 2), (1, 2)):
            K[..., i, k] = K[..., k, i] = 0.25 * beta * g0[i] * g0[k]
        cols = []
        for j in range(n):
            e = np.zeros(n, np.float32)
            e[j] = 1
            uu = e.reshape((3,) + shape)
            vv = np.empty_like(uu)
            _cpu.sweep(T, uu, vv, -1, 1.0, alpha, beta)
            d = np.moveaxis(uu - vv, 0, -1)
            cols.append(np.moveaxis(np.einsum("...ij,...j->...i", K, d), -1, 0).ravel())
        A = np.array(cols).T.astype(np.float64)
        Kb = np.zeros((n, n))
        idx = np.arange(nv)
        Kr = K.reshape(nv, 3, 3)
        for i in range(3):
            for k in range(3):
                Kb[i * nv + idx, k * nv + idx] = Kr[:, i, k]
        return float(sl.eigh((A + A.T) / 2, Kb, eigvals_only=True).max())

    rows = []
    for r in (0, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 50, 100, 1000):
        v = max(lam(s, 1.0, float(r)) for s in ((4, 4, 4), (5, 5, 5), (6, 6, 6), (5, 6, 7), (4, 5, 8)))
        rows.append({"beta_over_alpha": r, "lambda_max": round(v, 5)})
        print(rows[-1], flush=True)
    RESULTS["jacobi_table"] = rows


# --------------------------------------------------------------------------- issue 24
def acdc_heart_roi(shape):
    """The ACDC pair's heart: a cylinder of radius 50 voxels around the left ventricle through
    every slice (centre picked by eye), where the NCC before and after warping is measured."""
    _, Y, X = shape
    yy, xx = np.mgrid[:Y, :X]
    return np.broadcast_to((yy - 95) ** 2 + (xx - 100) ** 2 <= 50 ** 2, shape)


def _acdc_pair(data_dir, acdc_npz):
    """The ACDC ED/ES pair and its spacing, from a .npz (``ed``, ``es``, ``spacing``) or the NIfTI files."""
    if acdc_npz and Path(acdc_npz).is_file():
        z = np.load(acdc_npz)
        return z["ed"].astype(np.float32), z["es"].astype(np.float32), tuple(float(v) for v in z["spacing"])
    from app.io.volume_io import read_volume

    d = Path(data_dir) / "cardiac-mri" / "acdc"
    ed, es = read_volume(d / "sax_ed.nii.gz"), read_volume(d / "sax_es.nii.gz")
    return ed.data.astype(np.float32), es.data.astype(np.float32), tuple(ed.spacing)


class solver_knobs:
    """A parameter set with the solver's module-level knobs in it (keys that start with "_":
    ``_coarse`` = motion._COARSE_ITERS_FACTOR, ``_wave``/``_wave_m``/``_wave_min`` = _gpu.WAVE_D/
    WAVE_M/WAVE_MIN_VOXELS, ``_march`` = _gpu.MARCH_BLOCKS_PER_SM, ``_persist`` =
    _gpu.PERSIST_MAX_VOXELS): set while the block runs, the rest are estimate_motion's keywords."""

    NAMES = {"_coarse": ("gpu_kernels.echo.motion", "_COARSE_ITERS_FACTOR"),
             "_wave": ("gpu_kernels.echo._gpu", "WAVE_D"),
             "_wave_m": ("gpu_kernels.echo._gpu", "WAVE_M"),
             "_wave_min": ("gpu_kernels.echo._gpu", "WAVE_MIN_VOXELS"),
             "_march": ("gpu_kernels.echo._gpu", "MARCH_BLOCKS_PER_SM"),
             "_persist": ("gpu_kernels.echo._gpu", "PERSIST_MAX_VOXELS"),
             "_minb": ("gpu_kernels.echo._gpu", "SOR_MIN_BLOCKS")}

    def __init__(self, cfg):
        self.kw = {k: v for k, v in cfg.items() if not k.startswith("_")}
        self.knobs = {k: v for k, v in cfg.items() if k.startswith("_")}
        self.saved = []

    def __enter__(self):
        import importlib

        for k, v in self.knobs.items():
            mod, attr = self.NAMES[k]
            m = importlib.import_module(mod)
            self.saved.append((m, attr, getattr(m, attr)))
            setattr(m, attr, v)
        return self.kw

    def __exit__(self, *exc):
        for m, attr, v in reversed(self.saved):
            setattr(m, attr, v)
        self.saved = []


def e2e(sizes, configs, label, data_dir, acdc_npz, budget, repeat=7):
    """End to end (CuPy in and out, CUDA events around the call, median of ``repeat``) on the
    synthetic pairs, and the ACDC pair's registration quality, for each parameter set. Uses
    only ``estimate_motion``'s long-standing keywords (runs on older trees too)."""
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    for size in sizes:
        case = Case(size, "cuda")
        g = case.on_gpu()
        for cfg in configs:
            if left(budget) < 10:
                note(f"e2e {label} {cfg} at {size}^3 skipped: out of time")
                continue
            name = f"{label}" + ("" if not cfg else " " + json.dumps(cfg, sort_keys=True))
            try:
                with solver_knobs(cfg) as kw:
                    t, (u, info) = gpu_time(lambda c=kw: estimate_motion(g["fixed"], g["moving"], device=be,
                                                                         return_info=True, **c), repeat=repeat, warmup=2)
                add_row(name, case, t, u, sweeps=info.sweeps)
                if size == max(sizes):   # peak device memory: the pool's growth during one call
                    import cupy as cp

                    u = None
                    pool = cp.get_default_memory_pool()
                    pool.free_all_blocks()
                    base = pool.total_bytes()
                    with solver_knobs(cfg) as kw:
                        u = estimate_motion(g["fixed"], g["moving"], device=be, **kw)
                    sync()
                    peak = pool.total_bytes() - base
                    RESULTS["memory"].append({"method": name, "size": size, "peak_MiB": round(peak / 2 ** 20, 1),
                                              "floats_per_voxel": round(peak / 4 / size ** 3, 2)})
                    print(json.dumps(RESULTS["memory"][-1]), flush=True)
                    u = None
            except Exception as exc:  # noqa: BLE001
                note(f"e2e {name} at {size}^3 failed: {type(exc).__name__}: {exc}")
                traceback.print_exc()
        case.gpu = None
    try:
        f, m, sp = _acdc_pair(data_dir, acdc_npz)
    except Exception as exc:  # noqa: BLE001
        note(f"ACDC not available: {type(exc).__name__}: {exc}")
        return
    import cupy as cp

    roi = acdc_heart_roi(f.shape)
    fg, mg = cp.asarray(f), cp.asarray(m)
    for cfg in configs:
        name = f"{label}" + ("" if not cfg else " " + json.dumps(cfg, sort_keys=True))
        with solver_knobs(cfg) as kw:
            t, u = gpu_time(lambda c=kw: estimate_motion(fg, mg, device=be, spacing=sp, **c), repeat=5)
        u = cp.asnumpy(u)
        w = warp_volume(m, u, device="cpu")
        det = jacobian_determinant(u)[roi]
        rec = {"method": name, "ms": round(t * 1e3, 2), "ncc_before": round(ncc(f, m, roi), 4),
               "ncc_after": round(ncc(f, w, roi), 4), "msd_after": round(mean_squared_difference(f, w, roi), 1),
               "ncc_all_after": round(ncc(f, w), 4), "det_p1": round(float(np.percentile(det, 1)), 3),
               "det_p99": round(float(np.percentile(det, 99)), 3)}
        RESULTS["acdc"].append(rec)
        print(json.dumps(rec), flush=True)


def _finest_system(case, be, ops, params):
    """The finest level's system of a real pair at its first warp: the coarse levels solved, the
    field upsampled (what the solver starts from)."""
    from gpu_kernels.echo import motion

    g = case.on_gpu()
    prep = motion.prepare_motion(g["fixed"], g["moving"], device=be)
    shape, fac = prep.pyr[0][0], prep.pyr[1][1]
    coarse = motion.Prepared(prep.pyr[1][0], prep.pyr[1:], prep.fixed[1:], prep.moving[1:], prep.tensors[1:],
                             prep.scale, prep.rho, prep.derivative, prep.variant, be, True)
    uc = motion.solve_motion(coarse, **params)
    u0 = motion._upsample_flow(ops, uc, shape, fac)
    J = prep.tensors[0]
    Tc = ops.system(J, params.get("alpha", motion.DEFAULT_ALPHA), params.get("beta", motion.DEFAULT_BETA))
    B = ops.tensor(prep.fixed[0], prep.moving[0], u0, "central", parts=2)
    ops.smooth_channels(B, prep.rho)
    ops.rhs(Tc, J, B, u0)
    return prep, J, B, Tc, u0


def issue24(sizes, copy_bw, budget):
    """Per sweep: time, bytes, share of the copy rate (float32 and float16 systems); the
    kernels of a warp and of a level; sweeps to reach a residual; for issue 24."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo import _gpu, motion
    from gpu_kernels.echo._gpu import GpuOps, bytes_per_sweep

    be = get_backend("cuda")
    a, b = motion.DEFAULT_ALPHA, motion.DEFAULT_BETA
    for size in sizes:
        if left(budget) < 20:
            note(f"issue24 at {size}^3 skipped: out of time")
            continue
        case = Case(size, "cuda")
        g = case.on_gpu()
        # a warp's sweeps in one launch (echo_sor_persistent) up to a level size, against the
        # four launches per sweep; the same field?
        ref = None
        keep = _gpu.PERSIST_MAX_VOXELS
        for cap in (0, 64 ** 3, 128 ** 3):
            _gpu.PERSIST_MAX_VOXELS = cap
            t, (u, info) = gpu_time(lambda: estimate_motion(g["fixed"], g["moving"], device=be, return_info=True),
                                    repeat=7, warmup=2)
            u = cp.asnumpy(u)
            ref = u if ref is None else ref
            rec = {"size": size, "persistent_up_to": cap, "ms": round(t * 1e3, 2), "sweeps": info.sweeps,
                   "max_diff_vs_queued": float(np.abs(u - ref).max()), **metrics(u, case)}
            RESULTS["persist"].append(rec)
            print(json.dumps(rec), flush=True)
        _gpu.PERSIST_MAX_VOXELS = keep
        if size == min(sizes) and os.environ.get("OUT"):
            import cProfile
            import io
            import pstats

            pr = cProfile.Profile()
            pr.enable()
            for _ in range(5):
                estimate_motion(g["fixed"], g["moving"], device=be)
            sync()
            pr.disable()
            buf = io.StringIO()
            pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(30)
            Path(os.environ["OUT"], f"echo_profile_{size}.txt").write_text(buf.getvalue())
        n = size ** 3
        for half in (False, True):
            ops = GpuOps(be, "cache", half=half)
            prep, J, B, Tc, u0 = _finest_system(case, be, ops, {})
            f, m = prep.fixed[0], prep.moving[0]
            if not half:   # on copies: the system (Tc) must stay as built for the sweeps below
                J, B, Tc2 = J.copy(), B.copy(), ops.new_system(J.shape[1:])
                k = {"size": size}
                t, _ = gpu_time(lambda: ops.tensor(f, m, u0, "central", parts=2), repeat=10)
                k["b_products_ms"] = round(t * 1e3, 3)
                t, _ = gpu_time(lambda: ops.smooth_channels(B, prep.rho), repeat=10)
                k["smooth3_ms"], k["smooth3_GBps"] = round(t * 1e3, 3), round(3 * 3 * 2 * 4 * n / t / 1e9, 1)
                t, _ = gpu_time(lambda: ops.rhs(Tc2, J, B, u0), repeat=10)
                k["rhs_ms"] = round(t * 1e3, 3)
                t, _ = gpu_time(lambda: ops.tensor(f, None, None, "central", parts=1), repeat=10)
                k["J_products_ms"] = round(t * 1e3, 3)
                t, _ = gpu_time(lambda: ops.smooth_channels(J, prep.rho), repeat=5)
                k["smooth6_ms"], k["smooth6_GBps"] = round(t * 1e3, 3), round(6 * 3 * 2 * 4 * n / t / 1e9, 1)
                t, _ = gpu_time(lambda: ops.system(J, a, b), repeat=10)
                k["system_ms"] = round(t * 1e3, 3)
                t, T9 = gpu_time(lambda: ops.tensor(f, m, u0, "central"), repeat=5)
                k["old_tensor9_ms"] = round(t * 1e3, 3)
                t, _ = gpu_time(lambda: ops.smooth_channels(T9, prep.rho), repeat=5)
                k["old_smooth9_ms"] = round(t * 1e3, 3)
                t, _ = gpu_time(lambda: ops.finish(T9, u0, a, b), repeat=5)
                k["old_finish_ms"] = round(t * 1e3, 3)
                T9 = Tc2 = None
                RESULTS["kernels"].append(k)
                print(json.dumps(k), flush=True)
            v = u0.copy()
            reps = 20

            def sor(ops=ops, v=v, Tc=Tc):
                for _ in range(reps):
                    for c in range(4):
                        ops.sweep(Tc, v, v, c, 1.8, a, b)

            t, _ = gpu_time(sor, repeat=5)
            ts = t / reps
            # the same sweeps in one launch (grid-wide barriers between the colours)
            keep, _gpu.PERSIST_MAX_VOXELS = _gpu.PERSIST_MAX_VOXELS, 1 << 40
            done, log = ops.new_control(1)
            st = ops.new_stats()
            tp, _ = gpu_time(lambda ops=ops, v=v, Tc=Tc: ops.relax_sor(Tc, v, 1.8, a, b, reps, 5, 0.0, n, st, done,
                                                                      log, 0), repeat=5)
            _gpu.PERSIST_MAX_VOXELS = keep
            bmin = bytes_per_sweep((size,) * 3, "sor", half=half)
            sysb = Tc.nbytes
            dram = sysb + 4 * (12 * n) + 12 * n     # 4 passes: the system once, the field read 4x, written once
            rec = {"size": size, "system": "float16" if half else "float32", "sweep_ms": round(ts * 1e3, 4),
                   "MB_min": round(bmin / 1e6, 1), "GBps_min": round(bmin / ts / 1e9, 1),
                   "of_copy_min": round(bmin / ts / copy_bw, 3), "MB_4pass": round(dram / 1e6, 1),
                   "of_copy_4pass": round(dram / ts / copy_bw, 3),
                   "MB_min_float32": round(bytes_per_sweep((size,) * 3, "sor") / 1e6, 1),
                   "one_launch_sweep_ms": round(tp / reps * 1e3, 4),
                   "one_launch_of_copy_min": round(bmin / (tp / reps) / copy_bw, 3)}
            RESULTS["bandwidth"].append(rec)
            print(json.dumps(rec), flush=True)
            # sweeps to reach a residual, from the real start of the finest level
            for om in ((1.5, 1.8, 1.9) if not half else (1.8,)):
                w = u0.copy()
                st = ops.new_stats()
                hist = []
                for _it in range(60):
                    for c in range(4):
                        ops.sweep(Tc, w, w, c, om, a, b, st)
                    hist.append(float(np.sqrt(max(ops.read_stats(st), 0.0) / n)))
                r = {"size": size, "system": rec["system"], "omega": om, "res_1": round(hist[0], 5)}
                for thr in (1e-2, 3e-3, 1e-3, 3e-4, 1e-4):
                    hit = next((i + 1 for i, h in enumerate(hist) if h < thr), None)
                    r[f"to_{thr:g}"] = hit if hit is not None else ">60"
                r["res_10"], r["res_60"] = round(hist[9], 6), round(hist[-1], 6)
                RESULTS["residual"].append(r)
                print(json.dumps(r), flush=True)
            prep = J = B = Tc = u0 = v = None
            cp.get_default_memory_pool().free_all_blocks()
        case.gpu = None


def live_alpha(budget, sizes=(128,)):
    """Issue 20: an alpha edit at 128^3 through the tool's stage cache (compute only: no Qt on
    the GPU host), with the stages that re-ran and their times."""
    from app.tools import echo as tool
    from app.tools.stages import StageCache
    from gpu_kernels.backend import get_backend
    from gpu_kernels.echo.synthetic import make_pair

    be = get_backend("cuda")
    for size in sizes:
        f, mv, gt = make_pair(size, shift=(0.5, -0.5, 1.0), seed=2)
        data = tool.EchoData(np.stack([f, mv]).astype(np.float32), (1.0, 1.0, 1.0), ["f", "m"], truth={(0, 1): gt})
        cache = StageCache()
        base = tool.PARAMS.validate({"levels": 3})
        tool.TOOL.run_staged(data, base, device=be, cache=cache)
        for k, (name, value) in enumerate((("reference", 1), ("alpha", 0.5), ("alpha", 0.03), ("alpha", 0.02),
                                           ("beta", 0.05), ("precision", "float32"))):
            p = tool.PARAMS.validate({**base, name: value})
            t0 = time.perf_counter()
            res, rep = tool.TOOL.run_staged(data, p, device=be, cache=cache)
            t = time.perf_counter() - t0
            rec = {"size": size, "edit": f"{name}={value}", "ms": round(t * 1e3, 1), "ran": "+".join(rep.ran),
                   **{f"{s}_ms": round(v * 1e3, 1) for s, v in rep.seconds.items()}}
            if k == 1:
                full = tool.run(data, p, device=be)
                rec["same_as_full_run"] = bool(np.array_equal(res.pairwise, full.pairwise)
                                               and np.array_equal(res.trajectory, full.trajectory))
            RESULTS["live"].append(rec)
            print(json.dumps(rec), flush=True)
            base = p


# --------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="64,128,192,256")
    ap.add_argument("--only", default="ours,cpu,skimage,cucim,of3d,sitk,bandwidth,memory,tune,acdc",
                    help="comma-separated sections")
    ap.add_argument("--cpu-max", type=int, default=64, help="largest size for our CPU path")
    ap.add_argument("--skimage-max", type=int, default=64, help="largest size for scikit-image (slow)")
    ap.add_argument("--tune-sizes", default="128,256")
    ap.add_argument("--tvl1-max", type=int, default=10**9, help="largest size for cuCIM TV-L1")
    ap.add_argument("--budget", type=float, default=1e9, help="seconds; later sections are skipped past it")
    ap.add_argument("--params", default="{}", help="JSON dict of estimate_motion parameters")
    ap.add_argument("--data", default=os.environ.get("GPULAB_SHARED_DATA", str(ROOT / ".." / "shared" / "data")))
    ap.add_argument("--out", default=None, help="write OUT.json and OUT.md")
    ap.add_argument("--configs", default="[{}]", help="JSON list of parameter sets for the e2e section")
    ap.add_argument("--label", default="ours", help="row label of the e2e section")
    ap.add_argument("--acdc-npz", default=None, help="the ACDC pair as .npz (ed, es, spacing): no NIfTI reader needed")
    args = ap.parse_args(argv)
    only = set(s.strip() for s in args.only.split(","))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    params = json.loads(args.params)
    RESULTS["params"] = params
    gpu = have_gpu()
    print(f"device: {device_name()}; host: {host_description()}", flush=True)
    if "jacobi-table" in only:
        jacobi_table(args.out)
        flush(args.out)
        return
    need_cases = only & {"ours", "cpu", "skimage", "cucim", "of3d", "sitk", "memory"}
    cases = []
    if need_cases:
        for s in sizes:
            c = Case(s, "cuda" if gpu else "cpu")
            print(f"case {s}^3: generated in {c.seconds:.1f} s; |gt| max {np.abs(c.gt).max():.2f}", flush=True)
            cases.append(c)
    sections = [
        ("e2e", lambda: e2e(sizes, json.loads(args.configs), args.label, args.data, args.acdc_npz, args.budget), True),
        ("issue24", lambda: issue24([s for s in (128, 256) if s in sizes] or sizes[-1:], copy_bandwidth(),
                                    args.budget), True),
        ("live", lambda: live_alpha(args.budget), True),
        ("ours", lambda: run_ours(cases, params, only, args.budget), True),
        ("bandwidth", lambda: sweep_bandwidth([s for s in (128, 256) if s in sizes] or sizes[-1:],
                                               copy_bandwidth(), args.budget), True),
        ("memory", lambda: peak_memory([c for c in cases if c.size == max(sizes)], params), True),
        ("cucim", lambda: run_cucim(cases, args.budget, args.tvl1_max), True),
        ("of3d", lambda: run_of3d(cases, args.budget), True),
        ("tune", lambda: tune([Case(int(z), "cuda", seed=s) for z in args.tune_sizes.split(",") if z.strip()
                               for s in ((0, 1) if int(z) <= 128 else (0,))], params, args.budget), True),
        ("acdc", lambda: acdc(args.data, params, args.budget), False),
        ("cpu", lambda: run_ours_cpu(cases, params, args.cpu_max, args.budget), False),
        ("skimage", lambda: run_skimage(cases, args.skimage_max, args.budget), False),
        ("sitk", lambda: run_sitk(cases, args.budget), False),
    ]
    for name, fn, needs_gpu in sections:
        if name not in only:
            continue
        if needs_gpu and not gpu:
            note(f"{name}: no CUDA device here")
            continue
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # noqa: BLE001
            note(f"section {name} failed: {type(exc).__name__}: {exc}")
            traceback.print_exc()
        print(f"## section {name}: {time.perf_counter() - t0:.1f} s", flush=True)
        flush(args.out)
    flush(args.out)
    if RESULTS["rows"]:
        print(render_md(dict(RESULTS, device=device_name(), host=host_description(), date="", command="")))


if __name__ == "__main__":
    main()
