"""The echo tool's summary lines and batch metrics (:mod:`app.tools.echo` re-exports them).

Light at import (no NumPy): the kernels' helpers load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpu_kernels.lazy import lazy_module

from .base import fmt_seconds

if TYPE_CHECKING:
    from gpu_kernels.echo import maps as _maps
    from gpu_kernels.echo import motion as _motion
else:
    _maps = lazy_module("gpu_kernels.echo.maps")
    _motion = lazy_module("gpu_kernels.echo.motion")

__all__ = ["summary", "metrics"]


def summary(result) -> list[str]:
    """The lines of a run's summary (the CLI prints them; the tab shows them)."""
    d, p = result.data, result.params
    Z, Y, X = d.shape
    sp = d.spacing
    lines = [f"{d.name}: {d.n_frames} frames of {Z} x {Y} x {X} voxels ({sp[0]:.3g} x {sp[1]:.3g} x {sp[2]:.3g} mm, "
             "[z, y, x])"]
    lines += [f"  warning: {w}" for w in d.warnings]
    lev = _motion.pyramid_shapes(d.shape, p["levels"] or _motion.auto_levels(d.shape, d.spacing), d.spacing)
    lines.append(f"  parameters: alpha {p['alpha']:g}, beta {p['beta']:g}, rho {p['rho']:g}, sigma {p['sigma']:g}, "
                 f"{len(lev)} levels, {p['warps']} warps, {p['solver']} (cap {p['iters']}, tol {p['tol']:g}, "
                 f"{p.get('precision', 'float32')} system)")
    sweeps = sum(int(i.get("sweeps", 0)) for i in result.infos)
    npairs = len(result.pairwise)
    # the pairs' own solve time: a live re-run that took them from the stage cache is shorter
    t_pairs = sum(float(i.get("seconds", 0.0)) for i in result.infos[:npairs])
    how = (f"; this run took {fmt_seconds(result.elapsed)}, the pair fields from the cache" if result.elapsed < t_pairs
           else f"; {fmt_seconds(result.elapsed)} in all")
    lines.append(f"  device: {result.device}; {npairs} pair(s) solved in {fmt_seconds(t_pairs)} "
                 f"({fmt_seconds(t_pairs / max(npairs, 1))} each, {sweeps} sweeps in all){how}")
    st = result.stats or _maps.motion_stats(result.pairwise, result.trajectory, sp)
    lines.append(f"  frame-to-frame motion: mean {st['mean_vox']:.2f} voxels ({st['mean_mm']:.2f} mm), "
                 f"99th percentile {st['p99_vox']:.2f} voxels ({st['p99_mm']:.2f} mm)")
    if "traj_frame" in st:
        lines.append(f"  trajectories from frame {result.reference}: largest at frame {st['traj_frame']} "
                     f"(99th percentile {st['traj_p99_mm']:.2f} mm)")
    lines.append(f"  volume change det(I + grad u) of the first pair: 1st-99th percentile "
                 f"{st['det_p1']:.3f} .. {st['det_p99']:.3f}")
    if result.metrics:
        m = result.metrics
        line = (f"  against the truth ({d.truth_source or 'given'}, {m.get('pairs', 1)} pair(s)): EPE mean "
                f"{m['epe_mean']:.3f} voxels ({m['epe_mean_mm']:.3f} mm), 95th percentile {m['epe_p95']:.3f}")
        if "jacobian_error_mask" in m:
            line += f"; in the mask: EPE {m['epe_mean_mask']:.3f}, |det error| {m['jacobian_error_mask']:.4f}"
        lines.append(line)
    return lines


def metrics(result) -> dict:
    """The numbers batch writes per item."""
    out = {"seconds": float(result.elapsed), "pairs": len(result.pairwise),
           "mean_motion_voxels": float((result.stats or {}).get("mean_vox", float("nan")))}
    if result.metrics:
        out.update({k: float(v) for k, v in result.metrics.items()})
    return out
