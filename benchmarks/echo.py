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

from gpu_kernels.echo import (  # noqa: E402
    estimate_motion,
    jacobian_determinant,
    mean_squared_difference,
    ncc,
    warp_volume,
)
from gpu_kernels.echo.synthetic import make_sequence  # noqa: E402

PAIR = (2, 3)
RESULTS: dict = {"rows": [], "notes": [], "bandwidth": [], "memory": [], "tuning": [], "acdc": [], "kernels": []}
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
                ("epe_p95", "EPE p95"), ("epe_myo", "EPE myo"), ("det_err_myo", "|det-1| myo"), ("note", "note")]
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
    Z, Y, X = f.shape
    yy, xx = np.mgrid[:Y, :X]
    # the heart: a cylinder of radius 50 mm around the left ventricle, centre picked by eye
    roi2 = (yy - 95) ** 2 + (xx - 100) ** 2 <= 50 ** 2
    roi = np.broadcast_to(roi2, f.shape)
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
