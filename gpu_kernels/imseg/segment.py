"""Unsupervised colour image segmentation after "Fully GPU-based unsupervised colour image
segmentation" (``../shared/papers/004_9bb65ce6ae077898.txt``): CIELAB, optional bilateral
filter, k-means on the quantised colour space, connected components, small-region merging,
region features.

:func:`segment_image` is the one entry point for the app and the CLI. On the GPU the stages
run back to back with no host round-trip, except reading the number of regions (to size the
feature arrays: one synchronisation) and, with ``min_size > 1``, one check per merging round;
``ImageSegmentation.syncs`` counts them and ``info["sync_reasons"]`` says what each was.

Defaults: see the README's Image segmentation section and ``benchmarks/results/imseg.md``
for how they were chosen on BSDS500.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg import segment_image
>>> img = np.zeros((32, 32, 3), np.uint8); img[:, 16:] = (200, 30, 30)
>>> seg = segment_image(img, device="cpu")
>>> seg.n_regions, seg.features["area"].tolist()
(2, [512, 512])
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.imseg import color as _color
from gpu_kernels.imseg import features as _feat
from gpu_kernels.imseg import graphs as _graphs
from gpu_kernels.imseg import kmeans as _km
from gpu_kernels.imseg import label as _label
from gpu_kernels.imseg import merge as _merge
from gpu_kernels.imseg._util import (
    EarlyDownload,
    ImsegInputError,
    StageTimer,
    SyncCounter,
    activated,
    as_image,
    check_fits,
    download,
    is_cupy,
    quiet_synchronize,
    upload,
)
from gpu_kernels.jobs import as_progress

__all__ = [
    "DEFAULT_K_MAX",
    "DEFAULT_Q",
    "DEFAULT_ITERATIONS",
    "DEFAULT_MERGE_DISTANCE",
    "DEFAULT_BILATERAL",
    "DEFAULT_BILATERAL_WINDOW",
    "DEFAULT_SIGMA_SPATIAL",
    "DEFAULT_SIGMA_COLOR",
    "DEFAULT_CONNECTIVITY",
    "DEFAULT_MIN_SIZE",
    "ImageSegmentation",
    "ImsegInputError",
    "segment_image",
    "stage_lab",
    "stage_codes",
    "stage_quantise",
    "stage_kmeans",
    "stage_regions",
    "device_bytes_estimate",
]

DEFAULT_K_MAX = _km.DEFAULT_K_MAX
DEFAULT_Q = _color.DEFAULT_Q
DEFAULT_ITERATIONS = _km.DEFAULT_ITERATIONS
DEFAULT_MERGE_DISTANCE = _km.DEFAULT_MERGE_DISTANCE
from gpu_kernels.imseg import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

#: bilateral passes (0 = off); the paper's filter is optional, 5 passes when used
DEFAULT_BILATERAL = _d.DEFAULT_BILATERAL
DEFAULT_BILATERAL_WINDOW = _color.DEFAULT_BILATERAL_WINDOW
DEFAULT_SIGMA_SPATIAL = _color.DEFAULT_SIGMA_SPATIAL
DEFAULT_SIGMA_COLOR = _color.DEFAULT_SIGMA_COLOR
DEFAULT_CONNECTIVITY = _d.DEFAULT_CONNECTIVITY
DEFAULT_MIN_SIZE = _merge.DEFAULT_MIN_SIZE

#: up to this many pixels the min-size merge is queued without reading the labelling's region
#: count first (its arrays sized for one region a pixel: 44 bytes a pixel): one host
#: synchronisation fewer; larger images read the count and size the arrays by it
UNREAD_COUNT_MAX_PIXELS = 1 << 20

STAGES = ("upload", "bilateral", "quantise", "kmeans", "labelling", "min_size", "features", "download")


@dataclass
class ImageSegmentation:
    """The result of :func:`segment_image` (host arrays).

    Attributes
    ----------
    labels : (H, W) int32
        Regions 1..R, numbered in raster order of their first pixel.
    clusters : (H, W) int32
        k-means cluster of each pixel, 0..k-1.
    n_regions, n_clusters : int
    centres : (k, 3) float64
        Cluster centres in CIELAB.
    features : dict
        ``regionprops`` names (see :mod:`gpu_kernels.imseg.features`), one row per region;
        empty when features were not asked for.
    timings : dict
        Seconds per stage (``STAGES``) and ``total``; CUDA events on the GPU.
    syncs : int
        Host synchronisations between the upload and the download.
    info : dict
        ``device``, ``params``, ``n_colours`` (occupied quantised colours), ``merge_rounds``,
        ``sync_reasons``.
    """

    labels: np.ndarray
    clusters: np.ndarray
    n_regions: int
    n_clusters: int
    centres: np.ndarray
    features: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    syncs: int = 0
    info: dict = field(default_factory=dict)

    def region_table(self) -> dict:
        """``regionprops_table``-style columns (``bbox-0``, ``moments_central-0-2``, ...)."""
        return _feat.features_table(self.features)


def device_bytes_estimate(h: int, w: int, channels: int = 3, itemsize: int = 1, *, bilateral: int = 0,
                          q: int = DEFAULT_Q, weights: str = _km.DEFAULT_WEIGHTS,
                          features_method: str = _feat.DEFAULT_METHOD) -> int:
    """Upper estimate of the device memory :func:`segment_image` needs for an H x W image
    (regions assumed at most one per 16 pixels for the per-region arrays)."""
    n = h * w
    per_px = channels * itemsize + 12  # image, codes/clusters, parent, labels
    if bilateral:
        per_px += 24
    if weights == "sort":
        per_px += 8
    if features_method == "sort":
        per_px += 16
    F = 1 << (3 * q)
    per_region = 4 + 16 + 16 + 24 + 24 + 128 + 16
    return int(n * per_px + F * 20 + (n // 16 + 1) * per_region + (8 << 20))


def _check_params(k_max, q, iterations, merge_distance, bilateral, bilateral_window, sigma_spatial,
                  sigma_color, connectivity, min_size, label_method, weights, features_method):
    q = _color.check_q(q)
    k_max, iterations, merge_distance = _km.check_kmeans(k_max, iterations, merge_distance)
    win, ss, sr, passes = _color.check_bilateral(bilateral_window, sigma_spatial, sigma_color, bilateral)
    conn = _label.check_connectivity(connectivity)
    S = _merge.check_min_size(min_size)
    if label_method not in _label.METHODS and label_method != "auto":
        raise ImsegInputError(f"unknown labelling method {label_method!r}: use one of "
                              f"{', '.join(_label.METHODS)} or auto")
    if weights not in _km.WEIGHT_METHODS:
        raise ImsegInputError(f"weights must be one of {', '.join(_km.WEIGHT_METHODS)}, got {weights!r}")
    if features_method not in _feat.METHODS and features_method != "auto":
        raise ImsegInputError(f"unknown features method {features_method!r}")
    return dict(k_max=k_max, q=q, iterations=iterations, merge_distance=merge_distance, bilateral=passes,
                bilateral_window=win, sigma_spatial=ss, sigma_color=sr, connectivity=conn, min_size=S)


def segment_image(image, *, k_max: int = DEFAULT_K_MAX, q: int = DEFAULT_Q, iterations: int = DEFAULT_ITERATIONS,
                  merge_distance: float = DEFAULT_MERGE_DISTANCE, bilateral: int = DEFAULT_BILATERAL,
                  bilateral_window: int = DEFAULT_BILATERAL_WINDOW, sigma_spatial: float = DEFAULT_SIGMA_SPATIAL,
                  sigma_color: float = DEFAULT_SIGMA_COLOR, connectivity: int = DEFAULT_CONNECTIVITY,
                  min_size: int = DEFAULT_MIN_SIZE, features: bool = True, moments: bool = True,
                  label_method: str = "auto", global_step: str = _label.DEFAULT_GLOBAL_STEP,
                  weights: str = _km.DEFAULT_WEIGHTS, features_method: str = "auto",
                  device=None, progress=None) -> ImageSegmentation:
    """Segment a colour (or grey) image into regions of similar colour.

    Parameters
    ----------
    image : (H, W), (H, W, 3) or (H, W, 4) array
        uint8, uint16, bool or float in [0, 1]; alpha is ignored, grey is lightness only.
    k_max : int
        Most k-means clusters (initial samples on a grid), 1..1024.
    q : int
        Bits per CIELAB channel of the quantised colour space (2..7; F = 2^(3q) colours).
    iterations : int
        k-means iterations on the quantised colours.
    merge_distance : float
        Initial samples closer than this (CIELAB units) are merged into one centre.
    bilateral : int
        Bilateral filter passes in CIELAB before clustering (0: off).
    bilateral_window, sigma_spatial, sigma_color
        The filter's odd window side (pixels) and its sigmas (pixels, CIELAB units).
    connectivity : {4, 8}
    min_size : int
        Regions smaller than this many pixels merge into their most similar neighbour
        (0 or 1: off). Guaranteed unless the image itself is smaller.
    features, moments : bool
        Compute the region features (and their central moments).
    label_method : {"auto", "unionfind", "equivalence", "scipy"}
    global_step : {"levels", "single"}
        Union-find border merging (see :mod:`gpu_kernels.imseg.label`).
    weights : {"histogram", "sort"}
        How the k-means colour weights are counted.
    features_method : {"auto", "runs", "sort"}
    device : str or Backend, optional
    progress : callable or Progress, optional

    Returns
    -------
    ImageSegmentation

    Raises
    ------
    ImsegInputError
        A bad image or parameter (one line saying what to change).
    TooLargeError
        The image does not fit the GPU's free memory.
    """
    progress = as_progress(progress)
    be = get_backend(device)
    img, h, w, c = as_image(image)
    p = _check_params(k_max, q, iterations, merge_distance, bilateral, bilateral_window, sigma_spatial,
                      sigma_color, connectivity, min_size, label_method, weights, features_method)
    if label_method == "auto":
        label_method = _label.DEFAULT_METHOD_GPU if be.is_gpu else "scipy"
    if features_method == "auto":
        features_method = _feat.auto_method(h * w)
    if label_method != "scipy" and not be.is_gpu:
        raise ImsegInputError(f"label_method {label_method!r} needs a GPU; use 'auto' or 'scipy' on the CPU")
    if label_method == "scipy" and be.is_gpu:
        raise ImsegInputError("label_method 'scipy' is the CPU path; use 'unionfind' or 'equivalence' on a GPU")
    params = dict(p, label_method=label_method, global_step=global_step, weights=weights,
                  features_method=features_method)
    fopts = (bool(features), bool(moments), features_method)
    if _graphs.usable(be, img, p, label_method, weights, UNREAD_COUNT_MAX_PIXELS):
        graph = _graphs.lookup(be, img, p, global_step, fopts)
        if graph is not None:
            return _segment_graph(be, graph, img, features, moments, features_method, progress, params)
    seg = _segment_stages(img, be, p, q, bilateral, bilateral_window, sigma_spatial, sigma_color, weights,
                          features_method, k_max, iterations, merge_distance, connectivity, min_size, features,
                          moments, label_method, global_step, progress, params)
    if _graphs.usable(be, img, p, label_method, weights, UNREAD_COUNT_MAX_PIXELS):
        with activated(be):  # the next call of this shape and these parameters replays it
            _graphs.capture(be, img, p, global_step, fopts)
    return seg


def _segment_stages(img, be, p, q, bilateral, bilateral_window, sigma_spatial, sigma_color, weights,
                    features_method, k_max, iterations, merge_distance, connectivity, min_size, features,
                    moments, label_method, global_step, progress, params) -> ImageSegmentation:
    progress.update(0.0, "segmenting")
    qt = stage_quantise(img, q=q, bilateral=bilateral, bilateral_window=bilateral_window, sigma_spatial=sigma_spatial,
                        sigma_color=sigma_color, weights=weights, features_method=features_method, device=be,
                        progress=progress.sub(0.0, 0.2))
    # qt is this call's own: k-means may overwrite its codes and histogram (no copies)
    km = stage_kmeans(qt, k_max=k_max, iterations=iterations, merge_distance=merge_distance, device=be,
                      progress=progress.sub(0.2, 0.3), _inplace=True)
    return stage_regions(qt, k_max=k_max, iterations=iterations, merge_distance=merge_distance,
                         connectivity=connectivity, min_size=min_size, features=features, moments=moments,
                         label_method=label_method, global_step=global_step, features_method=features_method,
                         km=km, device=be, progress=progress.sub(0.3, 1.0), _params=params)


# --------------------------------------------------------------------------- stages
# The pipeline in four stages, so that the window re-runs only from the stage that reads a
# changed parameter (issue 20): stage_lab (upload, CIELAB, the bilateral filter), stage_codes
# (the quantised codes and their histogram: q), stage_kmeans (k_max, iterations,
# merge_distance) and stage_regions (connected components, small-region merging, features,
# download: connectivity, min_size). stage_quantise is stage_lab then stage_codes. No stage
# changes its input: the stage cache may hand the same output to many runs.
def stage_lab(image, *, bilateral: int = DEFAULT_BILATERAL, bilateral_window: int = DEFAULT_BILATERAL_WINDOW,
              sigma_spatial: float = DEFAULT_SIGMA_SPATIAL, sigma_color: float = DEFAULT_SIGMA_COLOR,
              q: int = DEFAULT_Q, weights: str = _km.DEFAULT_WEIGHTS, features_method: str = "auto", device=None,
              progress=None) -> dict:
    """Stage 1 of :func:`segment_image`: the checked image on the device (when there is one)
    and, when ``bilateral``, its bilateral-filtered CIELAB (on the CPU: CIELAB either way).
    ``q``, ``weights`` and ``features_method`` only size the memory check."""
    progress = as_progress(progress)
    be = get_backend(device)
    img, h, w, c = as_image(image)
    win, ss, sr, passes = _color.check_bilateral(bilateral_window, sigma_spatial, sigma_color, bilateral)
    out = {"img": img, "h": h, "w": w, "c": c, "bilateral": passes, "device": be.label}
    if not be.is_gpu:
        t0 = time.perf_counter()
        lab = _color.lab_np(img, progress.sub(0.0, 0.1 if passes else 1.0, "colour"))
        t_lab = time.perf_counter() - t0
        t0 = time.perf_counter()
        lab_f = lab
        if passes:
            lab_f = _color.bilateral_np(lab, win, ss, sr, passes, progress.sub(0.0, 0.9, "bilateral"))
        out.update(lab=lab, lab_f=lab_f, t={"bilateral": time.perf_counter() - t0}, t_lab=t_lab)
        return out
    fm = _feat.auto_method(h * w) if features_method == "auto" else features_method
    need = device_bytes_estimate(h, w, c, img.dtype.itemsize, bilateral=passes, q=_color.check_q(q),
                                 weights=weights if weights in _km.WEIGHT_METHODS else _km.DEFAULT_WEIGHTS,
                                 features_method=fm)
    check_fits(be, h, w, need)
    with activated(be):
        timer = StageTimer(be)
        img_d = upload(be, img)
        timer.mark("upload")
        lab_d = None
        if passes:
            progress.update(0.1, "bilateral filter")
            lab0 = _color.lab_device(be, img_d, h * w, c)
            lab_d = _color.bilateral_device(be, lab0, h, w, win, ss, sr, passes)
            del lab0
        timer.mark("bilateral")
        out.update(img_d=img_d, lab_d=lab_d, timer=timer)
    return out


def stage_codes(lt: dict, *, q: int = DEFAULT_Q, weights: str = _km.DEFAULT_WEIGHTS, device=None) -> dict:
    """Stage 2 of :func:`segment_image` on a :func:`stage_lab` output: the quantised colour
    codes (``q`` bits a channel) and, for ``weights="histogram"``, their histogram."""
    be = get_backend(device)
    q = _color.check_q(q)
    if weights not in _km.WEIGHT_METHODS:
        raise ImsegInputError(f"weights must be one of {', '.join(_km.WEIGHT_METHODS)}, got {weights!r}")
    out = {k: v for k, v in lt.items() if k not in ("timer", "t", "t_lab")}
    out.update(q=q, weights=weights)
    h, w, c = lt["h"], lt["w"], lt["c"]
    if not be.is_gpu:
        t0 = time.perf_counter()
        codes = _color.codes_np(lt["lab_f"], q)
        out.update(codes=codes, t={**lt["t"], "quantise": time.perf_counter() - t0 + lt["t_lab"]})
        return out
    with activated(be):
        xp = be.xp
        timer = StageTimer(be)
        hist = xp.zeros(1 << (3 * q), dtype=xp.uint32) if weights == "histogram" else None
        codes = _color.codes_device(be, lt["img_d"], h * w, c, q, hist=hist, lab_d=lt["lab_d"])
        timer.mark("quantise")
        out.update(codes=codes, hist=hist, timers=[lt["timer"], timer])
    return out


def stage_quantise(image, *, q: int = DEFAULT_Q, bilateral: int = DEFAULT_BILATERAL,
                   bilateral_window: int = DEFAULT_BILATERAL_WINDOW, sigma_spatial: float = DEFAULT_SIGMA_SPATIAL,
                   sigma_color: float = DEFAULT_SIGMA_COLOR, weights: str = _km.DEFAULT_WEIGHTS,
                   features_method: str = "auto", device=None, progress=None) -> dict:
    """Stages 1 and 2 of :func:`segment_image`: the checked image, CIELAB (bilateral-filtered
    when ``bilateral``) and the quantised colour codes, on the device when there is one."""
    q = _color.check_q(q)
    if weights not in _km.WEIGHT_METHODS:
        raise ImsegInputError(f"weights must be one of {', '.join(_km.WEIGHT_METHODS)}, got {weights!r}")
    lt = stage_lab(image, bilateral=bilateral, bilateral_window=bilateral_window, sigma_spatial=sigma_spatial,
                   sigma_color=sigma_color, q=q, weights=weights, features_method=features_method, device=device,
                   progress=progress)
    return stage_codes(lt, q=q, weights=weights, device=device)


def stage_kmeans(qt: dict, *, k_max: int = DEFAULT_K_MAX, iterations: int = DEFAULT_ITERATIONS,
                 merge_distance: float = DEFAULT_MERGE_DISTANCE, device=None, progress=None,
                 _inplace: bool = False) -> dict:
    """Stage 3 of :func:`segment_image` on a :func:`stage_codes` output: k-means on the
    quantised colours (the cluster of every pixel, the centres; on the device when there is one).
    ``_inplace``: the caller owns ``qt`` (k-means then overwrites its codes and histogram)."""
    progress = as_progress(progress)
    be = get_backend(device)
    k_max, iterations, merge_distance = _km.check_kmeans(k_max, iterations, merge_distance)
    h, w = qt["h"], qt["w"]
    out = {"k_max": k_max, "iterations": iterations, "merge_distance": merge_distance}
    progress.update(0.0, "k-means")
    if not be.is_gpu:
        t0 = time.perf_counter()
        clusters, centres, n_colours = _km.kmeans_np(qt["codes"], h, w, qt["q"], k_max, iterations, merge_distance,
                                                     qt["weights"])
        out.update(clusters=clusters.reshape(h, w), centres=centres, n_colours=int(n_colours),
                   t={"kmeans": time.perf_counter() - t0})
        return out
    with activated(be):
        timer = StageTimer(be)
        # k-means replaces the codes by cluster ids in place: a copy, unless the caller owns qt
        # (the stage cache keeps it); the histogram is only read
        hist = qt["hist"]
        codes = qt["codes"] if _inplace else qt["codes"].copy()
        clusters, centres, k_d, m_d = _km.kmeans_device(be, codes, h, w, qt["q"], k_max, iterations,
                                                        merge_distance, hist, qt["weights"])
        timer.mark("kmeans")
        out.update(clusters=clusters, centres=centres, k_d=k_d, m_d=m_d, timer=timer)
    return out


def stage_regions(qt: dict, *, k_max: int = DEFAULT_K_MAX, iterations: int = DEFAULT_ITERATIONS,
                  merge_distance: float = DEFAULT_MERGE_DISTANCE, connectivity: int = DEFAULT_CONNECTIVITY,
                  min_size: int = DEFAULT_MIN_SIZE, features: bool = True, moments: bool = True,
                  label_method: str = "auto", global_step: str = _label.DEFAULT_GLOBAL_STEP,
                  features_method: str = "auto", km: dict | None = None, device=None, progress=None,
                  _params=None) -> ImageSegmentation:
    """Stage 4 of :func:`segment_image` on a :func:`stage_codes` (or :func:`stage_quantise`)
    output and, when given, its :func:`stage_kmeans` output ``km`` (else k-means runs here with
    ``k_max``, ``iterations``, ``merge_distance``): connected components, small-region
    merging and the region features, brought to the host."""
    progress = as_progress(progress)
    be = get_backend(device)
    if km is None:
        km = stage_kmeans(qt, k_max=k_max, iterations=iterations, merge_distance=merge_distance, device=be,
                          progress=progress.sub(0.0, 0.2))
    conn = _label.check_connectivity(connectivity)
    S = _merge.check_min_size(min_size)
    if label_method == "auto":
        label_method = _label.DEFAULT_METHOD_GPU if be.is_gpu else "scipy"
    if features_method == "auto":
        features_method = _feat.auto_method(qt["h"] * qt["w"])
    p = dict(k_max=km["k_max"], q=qt["q"], iterations=km["iterations"], merge_distance=km["merge_distance"],
             bilateral=qt["bilateral"], connectivity=conn, min_size=S)
    params = _params or dict(p, label_method=label_method, global_step=global_step, weights=qt["weights"],
                             features_method=features_method)
    if not be.is_gpu:
        return _segment_cpu(qt, km, p, features, moments, progress, params)
    with activated(be):
        return _segment_gpu(be, qt, km, p, features, moments, label_method, global_step, features_method, progress,
                            params)


def _segment_graph(be, g, img, features, moments, features_method, progress, params) -> ImageSegmentation:
    """A call replayed from its CUDA graph (:mod:`gpu_kernels.imseg.graphs`): the graph runs
    everything up to the merge's first rounds; the rest as in :func:`_segment_gpu`."""
    progress.update(0.0, "segmenting (replayed CUDA graph)")
    with activated(be), g.lock:
        try:
            return _replay(be, g, img, features, moments, features_method, progress, params)
        except BaseException:
            # the graph's kernels (or the merge's rounds after it) may still be writing into the
            # graph's memory: wait for them before the lock lets the next call replay it
            quiet_synchronize(be)
            raise


def _replay(be, g, img, features, moments, features_method, progress, params) -> ImageSegmentation:
    """The body of :func:`_segment_graph`, under the graph's lock."""
    h, w, c = g.h, g.w, g.c
    syncs = SyncCounter()
    timer = StageTimer(be)
    g.launch(be, img)
    timer.mark("graph")
    if g.feats is not None:  # the graph ran everything: one read brings the results
        host = download(be, {"__st": g.state["st"], "__km": g.k_d, "__m": g.m_d, "__labels": g.labels_d,
                             "__clusters": g.clusters, "__centres": g.centres, **g.feats})
        syncs.count += 1
        syncs.reasons.append("the graph's results (the merge's done flag, counts, labels, features)")
        done, rounds, R = (int(v) for v in host["__st"][:3])
        if done == 1:
            timer.mark("download")
            timings = timer.result()
            k, n_colours = int(host["__km"][0]), int(host["__m"][0])
            feats = {key: v[:R] for key, v in host.items() if not key.startswith("__")}
            progress.update(1.0, "done")
            return ImageSegmentation(
                labels=host["__labels"].reshape(h, w), clusters=host["__clusters"].reshape(h, w), n_regions=R,
                n_clusters=k, centres=host["__centres"][:k], features=feats, timings=timings,
                syncs=syncs.count, info={"device": be.label, "params": params, "n_colours": n_colours,
                                         "merge_rounds": rounds, "sync_reasons": list(syncs.reasons),
                                         "graph": True})
        if done == 2:
            raise RuntimeError(f"small-region merging did not finish in {_merge.MAX_ROUNDS} rounds")
        # the rounds need more than the graph queued: go on as below (the graph's
        # renumbering left the labels as they were)
    out: dict = {}
    R, rounds = _merge.merge_finish(be, g.state, syncs=syncs, also=(g.k_d, g.m_d), out=out)
    k, n_colours = out["also"]
    timer.mark("min_size")
    feats_d = {}
    if features:
        progress.update(0.7, "region features")
        feats_d = _feat.features_device(be, g.labels_d, R, h, w, g.img_d, c, features_method, moments)
    timer.mark("features")
    host = download(be, {"__labels": g.labels_d, "__clusters": g.clusters, "__centres": g.centres, **feats_d})
    timer.mark("download")
    timings = timer.result()
    labels = host.pop("__labels").reshape(h, w)
    clusters_h = host.pop("__clusters").reshape(h, w)
    centres_h = host.pop("__centres")[:k]
    progress.update(1.0, "done")
    return ImageSegmentation(labels=labels, clusters=clusters_h, n_regions=R, n_clusters=k, centres=centres_h,
                             features=host, timings=timings, syncs=syncs.count,
                             info={"device": be.label, "params": params, "n_colours": n_colours,
                                   "merge_rounds": rounds, "sync_reasons": list(syncs.reasons), "graph": True})


def _segment_cpu(qt, km, p, features, moments, progress, params) -> ImageSegmentation:
    img = qt["img"]
    t = {**qt["t"], **km["t"]}
    clusters, centres, n_colours = km["clusters"], km["centres"], km["n_colours"]
    progress.update(0.3, "connected components")
    t0 = time.perf_counter()
    labels, R = _label.label_np(clusters, p["connectivity"])
    t["labelling"] = time.perf_counter() - t0
    rounds = 0
    t0 = time.perf_counter()
    if p["min_size"] > 1:
        progress.update(0.5, "merging small regions")
        labels, R, rounds = _merge.merge_np(labels, R, qt["lab_f"], p["min_size"], p["connectivity"])
    t["min_size"] = time.perf_counter() - t0
    feats = {}
    t0 = time.perf_counter()
    if features:
        progress.update(0.7, "region features")
        feats = _feat.features_np(labels, R, img, lab=qt["lab"], moments=moments, progress=progress.sub(0.7, 1.0))
    t["features"] = time.perf_counter() - t0
    t["total"] = sum(t.values())
    progress.update(1.0, "done")
    return ImageSegmentation(labels=labels.astype(np.int32), clusters=clusters.astype(np.int32), n_regions=int(R),
                             n_clusters=len(centres), centres=centres, features=feats, timings=t, syncs=0,
                             info={"device": "cpu", "params": params, "n_colours": int(n_colours),
                                   "merge_rounds": rounds, "sync_reasons": []})


def _segment_gpu(be, qt, km, p, features, moments, label_method, global_step, features_method, progress,
                 params) -> ImageSegmentation:
    h, w, c, img_d = qt["h"], qt["w"], qt["c"], qt["img_d"]
    clusters, centres, k_d, m_d = km["clusters"], km["centres"], km["k_d"], km["m_d"]
    timer = StageTimer(be)
    syncs = SyncCounter()
    # the clusters (final now), then the merged labels, go to the host on a side stream while
    # the device goes on (_util.EARLY_DOWNLOAD; 4K on the H100: 6.2-6.6 -> 4.9-5.2 ms)
    early = EarlyDownload(be)
    try:
        early.start({"__clusters": clusters})
        progress.update(0.2, "connected components")
        if label_method == "unionfind":
            labels_d, total = _label.unionfind_device(be, clusters, h, w, p["connectivity"], None, global_step)
        else:
            labels_d, total = _label.equivalence_device(be, clusters, h, w, p["connectivity"], None, syncs)
        timer.mark("labelling")
        rounds = 0
        if p["min_size"] > 1 and h * w <= UNREAD_COUNT_MAX_PIXELS:
            # the merge is sized for one region a pixel and reads the labelling's count on the
            # device: the host queues it without waiting, and reads the count, k and the number
            # of colours with the merge's done flag
            progress.update(0.4, "merging small regions")
            out: dict = {}
            R, rounds = _merge.merge_device(be, labels_d, h * w, h, w, p["min_size"], p["connectivity"], img_d, c,
                                            lab_d=qt["lab_d"], syncs=syncs, count_dev=total, also=(k_d, m_d),
                                            out=out)
            k, n_colours = out["also"]
        else:
            meta = syncs.read_many(be, (total, k_d, m_d), "number of regions (sizes the feature arrays)")
            R, k, n_colours = (int(v) for v in meta)
            if p["min_size"] > 1:
                progress.update(0.4, "merging small regions")
                R, rounds = _merge.merge_device(be, labels_d, R, h, w, p["min_size"], p["connectivity"], img_d, c,
                                                lab_d=qt["lab_d"], syncs=syncs)
        timer.mark("min_size")
        early.start({"__labels": labels_d})
        feats_d = {}
        if features:
            progress.update(0.7, "region features")
            feats_d = _feat.features_device(be, labels_d, R, h, w, img_d, c, features_method, moments)
        timer.mark("features")
        if is_cupy(be):
            host = early.download({"__centres": centres, **feats_d})
            labels = host.pop("__labels").reshape(h, w)
            clusters_h = host.pop("__clusters").reshape(h, w)
            centres_h = host.pop("__centres")[:k]
            feats = host
        else:
            labels = asnumpy(labels_d).reshape(h, w).copy()
            clusters_h = asnumpy(clusters).reshape(h, w).copy()
            centres_h = asnumpy(centres)[:k].copy()
            feats = {key: np.array(asnumpy(v)) for key, v in feats_d.items()}
    except BaseException:
        early.abandon()
        raise
    timer.mark("download")
    timings = {}
    for tm in (*qt["timers"], km["timer"], timer):
        timings.update(tm.result())
    timings["total"] = float(sum(v for k2, v in timings.items() if k2 != "total"))
    progress.update(1.0, "done")
    return ImageSegmentation(labels=labels, clusters=clusters_h, n_regions=R, n_clusters=k, centres=centres_h,
                             features=feats, timings=timings, syncs=syncs.count,
                             info={"device": be.label, "params": params, "n_colours": n_colours,
                                   "merge_rounds": rounds, "sync_reasons": list(syncs.reasons)})
