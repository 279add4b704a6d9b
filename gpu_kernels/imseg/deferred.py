"""The tool's stages of both methods, deferred so that a full run of the tool replays the
library's CUDA graph (issue 21): the k-means pipeline's here first, the contours method's
(the default) at the end of the module, the same way.

The tool (``app/tools/imseg.py``) runs the paper's pipeline as four stages, lab -> quantise ->
kmeans -> segment, so that the window re-runs only from the stage a changed parameter reads.
Run one by one (each its own launches, each ended by the pipeline's synchronisation) they
took 1.25-1.78 ms at 512^2 on the H100, where :func:`~gpu_kernels.imseg.segment_image`
replays one CUDA graph of the whole pipeline (:mod:`gpu_kernels.imseg.graphs`) in 0.8 ms.

Here, on a GPU, the first three stages return a :class:`Deferred`: the checked input and the
stage's own checked parameters, nothing computed (bad input still fails in the stage that
reads it). The segment stage (:func:`regions`), handed a chain of deferred outputs that no
run has consumed yet (a full run: the CLI, batch, a new image or a first-stage edit in the
window), runs the chain as one :func:`segment_image` call, the graph. Any stage handed a
deferred output that an earlier run already consumed (a live re-run from a later stage,
reading the full run's cached outputs) computes it then, once (:meth:`Deferred.value`), and
goes on eagerly: a later-stage edit still re-runs only the later stages, and from then on
the earlier stages' arrays are kept. Both ways run the same kernels on the same data, so the
labels, clusters, centres and features are the same (tests).

A shape and parameter set runs through the graph from its ``GRAPH_AFTER``-th full run on
(the library captures the graph on its first call there); earlier full runs go stage by
stage, so a slider that tries a new first-stage value on every run never pays a capture.

Memory: a deferred output that is computed later holds its arrays, which the stage cache
counted when it stored the (then empty) output; at most the eager stages' arrays of one
image of up to ``segment.UNREAD_COUNT_MAX_PIXELS`` pixels (about 20 bytes a pixel).

Example
-------
A deferred output computes its stage once, on first use; :func:`value` hands anything else
on unchanged:

>>> from gpu_kernels.imseg.deferred import Deferred, value
>>> calls = []
>>> out = Deferred("colour", lambda: calls.append(1) or {"sm": 0}, {"sigma": 1.0})
>>> out.computed, out.held
(False, None)
>>> value(out), value(out), len(calls)
({'sm': 0}, {'sm': 0}, 1)
>>> value({"sm": 0})
{'sm': 0}

The contours method's four stages as the tool chains them. On the CPU every stage runs at
once; on a GPU (``device="cuda"``) :func:`colour` and :func:`superpixels` return
:class:`Deferred` outputs and, from the ``GRAPH_AFTER``-th full run of a shape and parameter
set on, :func:`merge` runs the chain as one :func:`~gpu_kernels.imseg.segment_contours` call
(its CUDA graph). Either way the labels are the library call's:

>>> import numpy as np
>>> from gpu_kernels.imseg import deferred, segment_contours
>>> img = np.zeros((64, 64, 3), np.uint8); img[:, 32:] = (200, 30, 30)
>>> col = deferred.colour(img, sigma=1.0, device="cpu")
>>> sp = deferred.superpixels(col, n_superpixels=600, compactness=10.0, device="cpu")
>>> mg = deferred.merge(col, sp, coarseness=3.3, n_segments=2, device="cpu")
>>> seg = deferred.finish(col, sp, mg, device="cpu")
>>> isinstance(col, Deferred), seg.n_regions
(False, 2)
>>> bool((seg.labels == segment_contours(img, n_segments=2, device="cpu").labels).all())
True
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gpu_kernels.backend import get_backend
from gpu_kernels.imseg import color as _color
from gpu_kernels.imseg import kmeans as _km
from gpu_kernels.imseg import label as _label
from gpu_kernels.imseg import merge as _merge
from gpu_kernels.imseg import segment as _seg
from gpu_kernels.imseg._util import ImsegInputError, as_image

__all__ = ["ENABLED", "GRAPH_AFTER", "Deferred", "lab", "codes", "kmeans", "regions", "colour", "superpixels", "merge",
           "finish", "value", "stats", "full_run"]

#: defer at all (off: every stage runs eagerly, as before session 7)
ENABLED = True
#: the full run of a shape and parameter set from which on the chain runs as one library call
#: (its CUDA graph); 1: from the first
GRAPH_AFTER = 2
_SEEN: OrderedDict = OrderedDict()   # full runs seen per (device, shape, dtype, parameters)
_SEEN_MAX = 256
_SEEN_LOCK = threading.Lock()
_STATS = {"chains": 0, "eager_chains": 0, "forced": 0, "direct": 0}
#: the counters' lock: the window's worker, batch threads and tests bump them at once (a bare
#: ``+=`` on a dict entry is a read and a write that another thread's may fall between)
_STATS_LOCK = threading.Lock()


def _count(*names: str) -> None:
    """Add one to each of the ``_STATS`` counters ``names``, under their lock."""
    with _STATS_LOCK:
        for k in names:
            _STATS[k] += 1


class Deferred:
    """A stage output not computed yet: ``stage``, its checked ``params``, the ``upstream``
    outputs it reads (and, for the first stage, the checked host ``image``)."""

    #: the stage that returned it queued nothing on the device: the pipeline does not wait for
    #: the device after it (``app.tools.stages``)
    queues_no_work = True

    def __init__(self, stage: str, fn, params: dict, upstream: tuple = (), image=None):
        self.stage = stage
        self.params = params
        self.upstream = upstream
        self.image = image
        self.consumed = False   # a run used it through the graph (a later run computes it)
        self._fn = fn
        self._value = None
        self._lock = threading.Lock()

    def value(self):
        """The stage's output, computed on first use (once, whichever thread asks)."""
        with self._lock:
            if self._value is None:
                self._value = self._fn()
                _count("forced")
            return self._value

    @property
    def computed(self) -> bool:
        return self._value is not None

    @property
    def held(self):
        """What this output holds of its own: its computed value, or None before it is computed
        (the input image and the upstream outputs belong to others). The stage cache counts this,
        and counts it again when a later run has computed it (``app.tools.stage_cache``)."""
        return self._value


def value(out):
    """``out`` itself, or a :class:`Deferred`'s computed output."""
    return out.value() if isinstance(out, Deferred) else out


def stats() -> dict:
    """``chains`` run as one library call, ``eager_chains`` (full runs before ``GRAPH_AFTER``),
    ``forced`` deferred outputs computed later, ``direct`` full runs made by :func:`full_run`
    (also counted in ``chains``) (for tests and benchmarks)."""
    with _STATS_LOCK:
        return dict(_STATS)


def _fresh(out) -> bool:
    return isinstance(out, Deferred) and not out.consumed and not out.computed


def lab(image, *, bilateral: int, bilateral_window: int, sigma_spatial: float, sigma_color: float, device=None,
        progress=None):
    """Stage 1 (:func:`segment.stage_lab`); deferred on a GPU for a host image of up to
    ``segment.UNREAD_COUNT_MAX_PIXELS`` pixels."""
    be = get_backend(device)
    kw = dict(bilateral=bilateral, bilateral_window=bilateral_window, sigma_spatial=sigma_spatial,
              sigma_color=sigma_color)
    img, h, w, _ = as_image(image)
    win, ss, sr, passes = _color.check_bilateral(bilateral_window, sigma_spatial, sigma_color, bilateral)
    if not (ENABLED and be.is_gpu and isinstance(img, np.ndarray) and h * w <= _seg.UNREAD_COUNT_MAX_PIXELS):
        return _seg.stage_lab(image, **kw, device=be, progress=progress)
    params = dict(bilateral=passes, bilateral_window=win, sigma_spatial=ss, sigma_color=sr)
    return Deferred("lab", lambda: _seg.stage_lab(img, **kw, device=be), params, image=img)


def codes(lt, *, q: int, device=None):
    """Stage 2 (:func:`segment.stage_codes`) on stage 1's output."""
    be = get_backend(device)
    q = _color.check_q(q)
    if _fresh(lt):
        return Deferred("quantise", lambda: _seg.stage_codes(lt.value(), q=q, device=be), {"q": q}, (lt,))
    return _seg.stage_codes(value(lt), q=q, device=be)


def kmeans(qt, *, k_max: int, iterations: int, merge_distance: float, device=None, progress=None):
    """Stage 3 (:func:`segment.stage_kmeans`) on stage 2's output."""
    be = get_backend(device)
    k_max, iterations, merge_distance = _km.check_kmeans(k_max, iterations, merge_distance)
    kw = dict(k_max=k_max, iterations=iterations, merge_distance=merge_distance)
    if _fresh(qt):
        return Deferred("kmeans", lambda: _seg.stage_kmeans(qt.value(), **kw, device=be), kw, (qt,))
    return _seg.stage_kmeans(value(qt), **kw, device=be, progress=progress)


def regions(qt, km, *, connectivity: int, min_size: int, device=None, progress=None):
    """Stage 4 (:func:`segment.stage_regions`): components, small-region merging, features,
    on the host. A fresh deferred chain runs as one :func:`segment_image` call."""
    be = get_backend(device)
    conn = _label.check_connectivity(connectivity)
    S = _merge.check_min_size(min_size)
    chain = _chain(qt, km)
    if chain is not None:
        lt = chain[0]
        p = {**lt.params, **qt.params, **km.params, "connectivity": conn, "min_size": S}
        if _sighting(be, lt.image, p) >= GRAPH_AFTER:
            seg = _seg.segment_image(lt.image, **p, device=be, progress=progress)
            for d in chain:
                d.consumed = True
            _count("chains")
            return seg
        _count("eager_chains")
    return _seg.stage_regions(value(qt), km=value(km), connectivity=conn, min_size=S, device=be,
                              progress=progress)


def _chain(qt, km):
    """(lab, quantise, kmeans) when ``qt`` and ``km`` are one fresh deferred chain, else None."""
    if not (_fresh(qt) and _fresh(km) and km.upstream == (qt,)):
        return None
    lt = qt.upstream[0]
    return (lt, qt, km) if _fresh(lt) else None


def _sighting(be, img, p: dict, *, counted_from: int = 0) -> int:
    """How many full runs of this shape and parameter set this process has seen (this one
    included). Below ``counted_from`` this run is not recorded (:func:`full_run` asks before it
    knows that it makes the run: where it does not, the stages it hands the run to count it)."""
    key = (be.label, img.shape, img.dtype.str, tuple(sorted(p.items())))
    with _SEEN_LOCK:
        n = _SEEN.get(key, 0) + 1
        if n < counted_from:
            return n
        _SEEN.pop(key, None)
        _SEEN[key] = n
        while len(_SEEN) > _SEEN_MAX:
            _SEEN.popitem(last=False)
    return n


# ----------------------------------------------------------------------------- contours
# The contours method's stages, colour -> superpixels -> merge -> regions, the same way: a fresh
# deferred chain makes the merge stage run :func:`contours.segment_contours` (its CUDA graph of
# the first stages, :class:`graphs.ContourGraph`) and hand the finished segmentation to the
# regions stage; a live re-run (a coarseness edit) computes the cached colour and superpixel
# outputs once and goes on stage by stage.
def colour(image, *, sigma: float, device=None, progress=None):
    """Stage 1 (:func:`contours.stage_colour`); deferred on a GPU for a host image."""
    from gpu_kernels.imseg import contours as _ct

    be = get_backend(device)
    img, h, w, _ = as_image(image)
    p = _ct.check_params(_ct.DEFAULT_COARSENESS, 0, _ct.DEFAULT_N_SUPERPIXELS, _ct.DEFAULT_COMPACTNESS, sigma)
    if not (ENABLED and be.is_gpu and isinstance(img, np.ndarray) and h * w <= _seg.UNREAD_COUNT_MAX_PIXELS):
        return _ct.stage_colour(image, sigma=sigma, device=be, progress=progress)
    return Deferred("colour", lambda: _ct.stage_colour(img, sigma=sigma, device=be), {"sigma": p["sigma"]}, image=img)


def superpixels(col, *, n_superpixels: int, compactness: float, device=None, progress=None):
    """Stage 2 (:func:`contours.stage_superpixels`) on stage 1's output."""
    from gpu_kernels.imseg import contours as _ct

    be = get_backend(device)
    p = _ct.check_params(_ct.DEFAULT_COARSENESS, 0, n_superpixels, compactness, _ct.DEFAULT_SIGMA)
    kw = {"n_superpixels": p["n_superpixels"], "compactness": p["compactness"]}
    if _fresh(col):
        return Deferred("superpixels", lambda: _ct.stage_superpixels(col.value(), **kw, device=be), kw, (col,))
    return _ct.stage_superpixels(value(col), **kw, device=be, progress=progress)


def merge(col, sp, *, coarseness: float, n_segments: int, merge: str = "contour", device=None, progress=None):
    """Stage 3 (:func:`contours.stage_merge`); a fresh deferred chain runs as one
    :func:`contours.segment_contours` call, whose finished segmentation is the output
    (``{"finished": ImageSegmentation}``, which :func:`finish` hands on)."""
    from gpu_kernels.imseg import contours as _ct

    be = get_backend(device)
    p = _ct.check_params(coarseness, n_segments, _ct.DEFAULT_N_SUPERPIXELS, _ct.DEFAULT_COMPACTNESS,
                         _ct.DEFAULT_SIGMA)
    kw = {"coarseness": p["coarseness"], "n_segments": p["n_segments"], "merge": _ct.check_merge(merge)}
    if _fresh(col) and _fresh(sp) and sp.upstream == (col,):
        allp = {**col.params, **sp.params, **kw}
        if _sighting(be, col.image, {"method": "contours", **allp}) >= GRAPH_AFTER:
            seg = _ct.segment_contours(col.image, **allp, device=be, progress=progress)
            col.consumed = sp.consumed = True
            _count("chains")
            return {"finished": seg}
        _count("eager_chains")
    return _ct.stage_merge(value(col), value(sp), **kw, device=be, progress=progress)


def finish(col, sp, mg, *, device=None, progress=None):
    """Stage 4 (:func:`contours.stage_finish`), or the segmentation :func:`merge` finished."""
    from gpu_kernels.imseg import contours as _ct

    if "finished" in mg:
        return mg["finished"]
    return _ct.stage_finish(value(col), value(sp), mg, device=device, progress=progress)


# ----------------------------------------------------------------------------- a whole run
#: the tool's parameters each method's library call reads (their validated values pass its checks
#: unchanged, so they key the full runs as the stages' checked values do)
_KMEANS_KEYS = ("bilateral", "bilateral_window", "sigma_spatial", "sigma_color", "q", "k_max", "iterations",
                "merge_distance", "connectivity", "min_size")
_CONTOUR_KEYS = ("sigma", "n_superpixels", "compactness", "coarseness", "n_segments", "merge")


def full_run(image, p: dict, *, device=None, progress=None):
    """A full run of the tool's stages without a stage cache (the CLI, batch, the demo: the
    tool's ``run``), made the way the stages make it, minus the stages: where on this device,
    image and parameter set the stages would defer and their fresh chain would run as one
    library call (from the ``GRAPH_AFTER``-th full run on), that one call; ``None`` anywhere
    else (the CPU, a device image, one over ``segment.UNREAD_COUNT_MAX_PIXELS`` pixels, a run
    before ``GRAPH_AFTER``, a bad image or parameter), and the caller runs the stages, which
    then also raise the error a bad input gets, from the stage that reads it.

    ``p``: the tool's parameters (``method`` and both methods' keywords, validated, as the
    stages read them). The result is the stages' own (the same call with the same values),
    without five stage calls, their deferred outputs, their checks (the call makes them) and
    the pipeline's waits around it: 0.10-0.12 ms less host time a call at 512^2 on the H100's
    host (session 8).
    """
    be = get_backend(device)
    if not (ENABLED and be.is_gpu):
        return None
    method = p["method"]
    try:
        img, h, w, _ = as_image(image)
    except ImsegInputError:
        return None   # the first stage raises it
    if not (isinstance(img, np.ndarray) and h * w <= _seg.UNREAD_COUNT_MAX_PIXELS):
        return None
    if method == "kmeans":
        kw = {k: p[k] for k in _KMEANS_KEYS}
        key, call = kw, _seg.segment_image
    elif method == "contours":
        from gpu_kernels.imseg import contours as _ct

        # "merge" always in the key (the default where p lacks it), as :func:`merge` counts it: one set, one count
        kw = {**{k: p[k] for k in _CONTOUR_KEYS if k != "merge" and k in p}, "merge": _ct.check_merge(p.get("merge", _ct.DEFAULT_MERGE))}
        key, call = {"method": "contours", **kw}, _ct.segment_contours
    else:
        return None
    if _sighting(be, img, key, counted_from=GRAPH_AFTER) < GRAPH_AFTER:
        return None   # an early run of this set: stage by stage, as the stages decide (and count)
    try:
        seg = call(img, **kw, device=be, progress=progress)
    except ImsegInputError:
        # a value the call's checks (made before any work) refuse: the stages raise it, from the
        # stage that reads it, with its message
        return None
    _count("chains", "direct")
    return seg
