"""The flow tool's progress bar: each stage's share of it from the size of the run (Qt-free, no
NumPy at import).

A fixed share per stage (flow 15, quality map 3) put the bar at 80 % when the quality map
started, whatever the size: on a 12 Mpx pair on the CPU that is ~20 % of the run (the quality
map works at full resolution, the flow at the working level of at most ``max_pixels``): the bar
said 80 % with most of the run to go. :func:`stage_weights` estimates each
stage's CPU seconds from the full-resolution and working-level pixels (fitted to
benchmarks/results/ux2_session7.md's timings: 0.24-12 Mpx, 2 cores); the pipeline
(``Pipeline(weights=stage_weights)``) gives the stages those shares for the run at hand.

Example
-------
A 12 Mpx pair with the staged search: the quality map at full resolution is most of the run, the
flow at its working level a tenth; at 0.3 Mpx the flow is the larger share.

>>> from types import SimpleNamespace
>>> from app.tools.flow_progress import stage_weights
>>> def shares(h, w):
...     weights = stage_weights(SimpleNamespace(img1=SimpleNamespace(shape=(h, w, 3))), {"method": "search"})
...     return {k: round(v / sum(weights.values()), 2) for k, v in weights.items()}
>>> shares(3000, 4000)
{'pyramids': 0.11, 'flow': 0.1, 'quality': 0.79, 'metrics': 0.0}
>>> shares(480, 640)
{'pyramids': 0.01, 'flow': 0.55, 'quality': 0.43, 'metrics': 0.01}
>>> stage_weights(SimpleNamespace(img1=None), {"method": "search"}) is None  # size unknown
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["stage_weights"]


def stage_weights(data, params: Mapping[str, Any]) -> dict[str, float] | None:
    """Each stage's expected CPU seconds for ``data`` with the (validated) ``params``; None
    where the size is unknown (the pipeline's own weights then)."""
    shape = getattr(getattr(data, "img1", None), "shape", None)
    if shape is None or len(shape) < 2:
        return None
    if params.get("method") != "search":      # one stage does the work
        return {"pyramids": 0.0, "flow": 1.0, "quality": 0.0, "metrics": 0.0}
    from gpu_kernels.flow import search as _search

    H, W = int(shape[0]), int(shape[1])
    L = _search.coarsest_level((H, W), params.get("patch") or _search.DEFAULT_PATCH)
    if params.get("levels"):
        L = min(L, int(params["levels"]) - 1)
    lev = _search.working_level((H, W), int(params.get("max_pixels") or _search.DEFAULT_MAX_PIXELS), L)
    full = H * W / 1e6
    work = full / 4 ** lev                    # Mpx at the working level
    return {"pyramids": 0.05 * full, "flow": 0.3 + 1.4 * work,
            "quality": 0.1 + 0.35 * full + 1.2 * work, "metrics": 0.01}
