"""The optical-flow tool's report of a run: the summary lines, the metrics and the exports
(:mod:`app.tools.flow` re-exports them)."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from gpu_kernels.lazy import lazy_module

from .base import Export, fmt_seconds

if TYPE_CHECKING:
    import numpy as np

    import gpu_kernels.flow.colorwheel as _colorwheel

    from ..io import flow_io, image_io
    from .flow import FlowRun
else:
    np = lazy_module("numpy")
    flow_io = lazy_module("app.io.flow_io")
    image_io = lazy_module("app.io.image_io")
    _colorwheel = lazy_module("gpu_kernels.flow.colorwheel")

__all__ = ["summary", "metrics", "write_flow", "write_quality", "write_color", "write_warped", "EXPORTS"]


# ----------------------------------------------------------------------------- summary
def _metrics_line(m: dict) -> str:
    return (f"  against the ground truth: AEE {m['aee']:.3f} px, AAE {m['aae']:.2f} deg, "
            f"EPE > 1 px {m['r1']:.1f} %, > 3 px {m['r3']:.1f} % ({m['n']:,} pixels)")


def summary(result: FlowRun) -> list[str]:
    d, f, p = result.data, result.flow, result.params
    H, W = d.shape
    lines = [f"{d.name1} -> {d.name2}: {W} x {H}" + (f" (pair {d.index + 1} of {d.n_pairs} of {d.path.name})"
                                                    if d.sequence is not None else "")]
    lines += [f"  warning: {w}" for w in d.warnings]
    shown = ", ".join(f"{k} = {v}" for k, v in f.params.items() if k not in ("eig_min", "eig_tau"))
    lines.append(f"  method: {p['method']} ({shown})")
    if d.mask is not None:
        lines.append(f"  mask: {d.mask_path.name if d.mask_path else 'given'}, {100 * d.mask.mean():.1f} % of the pixels")
    lines.append(f"  device: {result.device}; time {fmt_seconds(result.elapsed)}")
    valid = result.valid
    mag = np.hypot(result.u, result.v)[valid]
    q = result.quality[valid]
    lines.append(f"  flow: mean {mag.mean():.2f} px, largest {mag.max():.2f} px; quality: mean {q.mean():.2f}, "
                 f"{100 * (q >= 0.5).mean():.0f} % of the pixels at 0.5 or more")
    if result.metrics is not None:
        lines.append(_metrics_line(result.metrics))
    return lines


def metrics(result: FlowRun) -> dict:
    out = {"mean_flow_px": float(np.hypot(result.u, result.v).mean()), "mean_quality": float(result.quality.mean()),
           "seconds": float(result.elapsed)}
    if result.metrics is not None:
        out.update({k: float(v) for k, v in result.metrics.items()})
    return out


# ----------------------------------------------------------------------------- exports
def _unknown_outside(result: FlowRun):
    return result.valid


def write_flow(result: FlowRun, path) -> list[pathlib.Path]:
    """The flow as .flo (Middlebury) or .png (KITTI); pixels outside the mask are unknown."""
    return [flow_io.write_flow(path, (result.u, result.v), _unknown_outside(result))]


def write_quality(result: FlowRun, path) -> list[pathlib.Path]:
    """The quality map as an 8-bit grey PNG (0..1 -> 0..255)."""
    q = np.clip(np.rint(result.quality * 255), 0, 255).astype(np.uint8)
    return [pathlib.Path(image_io.write_image(path, q))]


def write_color(result: FlowRun, path, *, max_flow: float | None = None) -> list[pathlib.Path]:
    """The flow in Middlebury's colour coding (normalised by the largest magnitude, or max_flow)."""
    img = _colorwheel.flow_to_color(result.u, result.v, max_flow=max_flow, valid=_unknown_outside(result))
    return [pathlib.Path(image_io.write_image(path, img))]


def write_warped(result: FlowRun, path) -> list[pathlib.Path]:
    from .flow import warped_second

    w = warped_second(result)
    return [pathlib.Path(image_io.write_image(path, np.clip(np.rint(w * 255), 0, 255).astype(np.uint8)))]


EXPORTS = (
    Export("flow", "Flow", (".flo", ".png"), write_flow, cli_option="-o"),
    Export("quality", "Quality map", (".png",), write_quality, cli_option="--quality"),
    Export("color", "Colour-coded flow", (".png",), write_color, cli_option="--color"),
    Export("warped", "Second frame warped by the flow", (".png",), write_warped, cli_option="--warped"),
)
