"""One entry point for the optical-flow methods.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.flow import optical_flow
>>> from gpu_kernels.flow.synthetic import synthetic_pair
>>> p = synthetic_pair("translation", size=(64, 96), magnitude=3.0)
>>> res = optical_flow(p.img1, p.img2, method="bm", levels=3, device="cpu")
>>> res.method, res.u.shape
('bm', (64, 96))
"""

from __future__ import annotations

from ._common import FlowInputError, FlowResult
from .blockmatch import DEFAULT_BLOCK as _BLOCK
from .blockmatch import DEFAULT_RADIUS as _RADIUS
from .lucas_kanade import DEFAULT_WINDOW as _WINDOW
from .refine import DEFAULT_LAMBDA as _LAMBDA
from .refine import DEFAULT_MEDIAN as _MEDIAN
from .refine import DEFAULT_SEED as _SEED
from .search import DEFAULT_FINEST_PATCH_LEVEL as _SEARCH_LEVEL
from .search import DEFAULT_MAX_PIXELS as _MAX_PIXELS
from .search import DEFAULT_PATCH as _PATCH

__all__ = ["METHODS", "DEFAULT_METHOD", "optical_flow", "compute_flow", "backward_flow"]

from gpu_kernels.flow import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: the methods and the default (see gpu_kernels.flow.defaults)
METHODS = _d.METHODS
DEFAULT_METHOD = _d.DEFAULT_METHOD


def optical_flow(img1, img2, *, method: str = DEFAULT_METHOD, mask=None, device=None, progress=None,
                 **params) -> FlowResult:
    """Flow from ``img1`` to ``img2`` by ``method`` (``search``, ``bm``, ``lk`` or ``refine``).

    ``params`` go to :func:`~gpu_kernels.flow.search.inverse_search_flow`,
    :func:`~gpu_kernels.flow.block_matching`, :func:`~gpu_kernels.flow.lucas_kanade` or
    :func:`~gpu_kernels.flow.tvl1_refine`.
    """
    from .blockmatch import block_matching
    from .lucas_kanade import lucas_kanade
    from .refine import tvl1_refine
    from .search import inverse_search_flow

    fn = {"bm": block_matching, "lk": lucas_kanade, "refine": tvl1_refine, "search": inverse_search_flow}.get(method)
    if fn is None:
        raise FlowInputError(f"unknown flow method {method!r}: use one of {', '.join(METHODS)}")
    try:
        return fn(img1, img2, mask=mask, device=device, progress=progress, **params)
    except TypeError as exc:
        if "unexpected keyword" in str(exc):
            bad = str(exc).split("'")[1] if "'" in str(exc) else str(exc)
            raise FlowInputError(f"the {method} method has no parameter {bad!r}") from None
        raise


def backward_flow(img1, img2, **kw) -> FlowResult:
    """The flow from ``img2`` back to ``img1`` (for forward-backward checks)."""
    mask = kw.pop("mask", None)
    if mask is not None:
        raise FlowInputError("backward_flow takes no mask")
    return optical_flow(img2, img1, **kw)


def compute_flow(img1, img2, *, method: str = DEFAULT_METHOD, levels: int | None = None, block: int = _BLOCK,
                 radius: int = _RADIUS, window: int = _WINDOW, iters: int | None = None, seed: str = _SEED,
                 warps: int | None = None, lam: float = _LAMBDA, median: int = _MEDIAN, tile_size: int | None = None,
                 patch: int = _PATCH, search_level: int = _SEARCH_LEVEL, max_pixels: int = _MAX_PIXELS,
                 quality: str = _d.SEARCH_QUALITY, fill: float = _d.SEARCH_FILL, mask=None, device=None,
                 progress=None) -> FlowResult:
    """Every method behind one signature with explicit keywords (what the tool layer calls).

    ``levels=None``/``iters=None``/``warps=None`` mean the chosen method's own default (``levels``:
    5 for ``bm`` and ``refine``, 3 for ``lk``, automatic for ``search``; ``iters``: 3 for ``lk``,
    10 for ``refine``, 20 TV-L1 iterations per warp for ``search``; ``warps``: 5 for ``refine``, 8
    for ``search``). Keywords that do not apply to the method are ignored (``block`` for ``lk``,
    ``window`` for ``bm``, ``radius`` for ``search``); ``block``, ``radius`` and ``levels`` of
    ``bm`` also shape the seed of ``refine`` when ``seed="bm"``, ``window`` and ``iters`` of
    ``lk`` are not passed to an ``lk`` seed. ``patch``, ``search_level`` (finest level of the
    patch search, from the working level), ``max_pixels``, ``quality`` (the quality map, "fb"
    or "ncc") and ``fill`` (the forward-backward fill, px; 0: off) are the ``search`` method's.

    Example
    -------
    >>> from gpu_kernels.flow.synthetic import synthetic_pair
    >>> p = synthetic_pair("zoom", size=(64, 80), magnitude=2.0)
    >>> compute_flow(p.img1, p.img2, method="lk", window=7, device="cpu").params["window"]
    7
    """
    if method not in METHODS:
        raise FlowInputError(f"unknown flow method {method!r}: use one of {', '.join(METHODS)}")
    if method == "search":
        kw = dict(levels=levels, tv_iters=iters, warps=warps, lam=lam, median=median, patch=patch,
                  finest_patch_level=search_level, max_pixels=max_pixels, quality=quality, fill=fill)
        kw = {k: v for k, v in kw.items() if v is not None}
        return optical_flow(img1, img2, method=method, mask=mask, device=device, progress=progress, **kw)
    given = dict(levels=levels, block=block, radius=radius, window=window, iters=iters, seed=seed, warps=warps,
                 lam=lam, median=median, tile_size=tile_size)
    wanted = {"bm": ("levels", "block", "radius", "tile_size"), "lk": ("levels", "window", "iters"),
              "refine": ("levels", "iters", "seed", "warps", "lam", "median")}[method]
    kw = {k: v for k, v in given.items() if k in wanted and v is not None}
    if method == "refine" and kw.get("seed", "none") == "bm":
        kw["seed_params"] = {"block": block, "radius": radius}
    return optical_flow(img1, img2, method=method, mask=mask, device=device, progress=progress, **kw)
