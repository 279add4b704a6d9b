"""The image segmentation tool's summary: the lines ``gpulab imseg`` prints and the window's
summary pane shows, the headline, the stage times, and the size advice for the CPU (split
from :mod:`app.tools.imseg`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpu_kernels.errors import TooLargeError
from gpu_kernels.lazy import lazy_module

from .base import fmt_seconds

if TYPE_CHECKING:
    import numpy as np

    from .imseg import ImsegResult
else:
    np = lazy_module("numpy")

__all__ = ["STAGE_NAMES", "STEP_STAGE", "stage_times", "summary", "headline", "advise", "CPU_COMFORT_PIXELS"]

STAGE_NAMES = {"upload": "upload", "bilateral": "bilateral", "quantise": "CIELAB + quantise", "kmeans": "k-means",
               "labelling": "components", "min_size": "min size", "features": "features", "download": "download",
               "colour": "CIELAB + gradient", "superpixels": "superpixels", "graph": "region graph",
               "merge": "merging", "prefix": "upload + colour + superpixels (CUDA graph)"}


#: which of the tool's stages (:data:`app.tools.imseg.PIPELINE`) computes each of the library's
#: timed steps (``ImageSegmentation.timings``), per method
STEP_STAGE = {
    "contours": {"upload": "colour", "colour": "colour", "superpixels": "superpixels", "graph": "merge",
                 "merge": "merge", "prefix": "merge", "features": "regions", "download": "regions"},
    "kmeans": {"upload": "lab", "bilateral": "lab", "quantise": "quantise", "kmeans": "kmeans",
               "labelling": "segment", "min_size": "segment", "features": "segment", "download": "segment",
               "graph": "segment"},
}


def stage_times(result: ImsegResult, *, except_stages=()) -> list[tuple[str, float]]:
    """(stage, seconds) of the stages that ran (the bilateral filter only when it was on).
    ``except_stages``: leave out the steps the tool's stages of these names compute
    (:data:`STEP_STAGE`; a live re-run's cached stages, whose steps are not this run's)."""
    t = getattr(result.seg, "timings", {}) or {}
    skip = {"total"} | ({"bilateral"} if not result.params.get("bilateral") else set())
    names = STAGE_NAMES
    method = result.params.get("method")
    if method == "kmeans":  # the k-means pipeline replayed from its CUDA graph
        names = {**STAGE_NAMES, "graph": "pipeline (CUDA graph)"}
    drop, owner = set(except_stages), STEP_STAGE.get(method, {})
    return [(names.get(k, k), float(v)) for k, v in t.items()
            if k not in skip and v > 0 and not (drop and owner.get(k) in drop)]


def summary(result: ImsegResult) -> list[str]:
    """Image, regions, clusters, parameters, device, time per stage, the largest regions."""
    d, s = result.data, result.seg
    info = s.info or {}
    lines = [f"{d.name}: {d.describe()}"]
    p = result.params
    if p.get("method", "kmeans") == "contours":
        lines.append(f"  regions: {s.n_regions:,}, merged from {info.get('superpixels', 0):,} superpixel pieces "
                     f"in {info.get('merge_rounds', 0)} round(s)")
        target = f"{p['n_segments']} segments" if p["n_segments"] else f"coarseness {p['coarseness']:g}"
        lines.append(f"  parameters: contours, {target}, {p['n_superpixels']} superpixels, compactness "
                     f"{p['compactness']:g}, blur σ {p['sigma']:g} px")
        return lines + _summary_tail(result)
    lines.append(f"  regions: {s.n_regions:,}; clusters: {s.n_clusters} of at most {result.params['k_max']}; "
                 f"occupied quantised colours: {info.get('n_colours', '?'):,}")
    shown = [f"Q = {p['q']}", f"iterations = {p['iterations']}", f"merge distance = {p['merge_distance']:g}",
             f"{p['connectivity']}-connectivity", f"min size = {p['min_size']} px"]
    if p["bilateral"]:
        shown.append(f"bilateral {p['bilateral']} x (window {p['bilateral_window']}, σ {p['sigma_spatial']:g} px, "
                     f"{p['sigma_color']:g} ΔE)")
    lines.append("  parameters: " + ", ".join(shown))
    if p["min_size"] > 1:
        lines.append(f"  small-region merging: {info.get('merge_rounds', 0)} round(s)")
    return lines + _summary_tail(result)


def _summary_tail(result: ImsegResult) -> list[str]:
    s = result.seg
    info = s.info or {}
    lines = []
    dev = info.get("device", result.device)
    syncs = f"; host synchronisations: {s.syncs}" if dev != "cpu" else ""
    lines.append(f"  device: {dev}{syncs}")
    st = stage_times(result)
    lines.append("  time: " + (", ".join(f"{k} {fmt_seconds(v)}" for k, v in st) + "; total " if st else "")
                 + fmt_seconds(result.elapsed))
    f = s.features
    if f and len(f.get("area", [])):
        order = np.argsort(-np.asarray(f["area"]), kind="stable")[:8]
        total = float(np.sum(f["area"]))
        lines.append("  largest regions: label  area %  centroid (row, col)  mean colour")
        for i in order:
            mc = np.asarray(f["intensity_mean"][i]).ravel()
            col = " ".join(f"{v:.0f}" for v in mc)
            cy, cx = f["centroid"][i]
            lines.append(f"    {int(f['label'][i]):6d}  {100 * f['area'][i] / total:5.1f}  ({cy:7.1f}, {cx:7.1f})  {col}")
    return lines


def headline(result: ImsegResult) -> str:
    what = "superpixel pieces" if result.params.get("method") == "contours" else "clusters"
    return (f"Segmented {result.data.name} into {result.seg.n_regions:,} regions ({result.seg.n_clusters} {what}) "
            f"in {fmt_seconds(result.elapsed)} on {result.device}")


#: images above this many pixels take more than about 20 s on the CPU path (the contours method
#: ran at about 5 s a megapixel on the 2-core development machine, session 7): the tool says so
#: before it starts (the GPU takes milliseconds)
CPU_COMFORT_PIXELS = 4_000_000
CPU_SECONDS_PER_MPX = 5.0


def advise(data, params: dict, device) -> TooLargeError | None:
    """A large image on the CPU: say how long it will take, and what to do instead (no
    parameter sets a working size, so the window runs it as it is and the CLI prints a note)."""
    h, w = data.shape
    n = h * w
    if device.is_gpu or n <= CPU_COMFORT_PIXELS:
        return None
    secs = n / 1e6 * CPU_SECONDS_PER_MPX
    return TooLargeError(n, CPU_COMFORT_PIXELS, unit="pixels", where="the CPU in reasonable time",
                         message=(f"{w} x {h} pixels ({n / 1e6:.0f} Mpx) on the CPU take about "
                                  f"{fmt_seconds(secs) if secs < 60 else f'{secs / 60:.0f} minutes'} (a CUDA GPU: "
                                  "well under a second); downscale the image for a quick look, or use a GPU"))
