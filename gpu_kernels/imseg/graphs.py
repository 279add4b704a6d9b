"""CUDA graphs of the k-means pipeline (issue 21): its fixed-size part, captured once per image
shape and parameter set, then replayed with one launch.

Up to ``segment.UNREAD_COUNT_MAX_PIXELS`` pixels everything the GPU does before the host's
first read depends only on the image's shape and the parameters (the merge is sized for one
region a pixel and reads the labelling's count on the device): the upload from a page-locked
buffer, CIELAB (and the bilateral filter), the quantised codes, every k-means step, the
union-find labelling, the merge's sums and its first ``ROUNDS_PER_CHECK`` rounds, about 40
launches. :func:`segment_image` captures them into one CUDA graph on the first call for a
shape and parameter set (after running that call the ordinary way) and replays the graph on
later calls: the host copies the image into the graph's page-locked input, launches the
graph, and goes on with what depends on the number of regions (the rest of the merge, the
features and the download) as before. The same kernels on the same data, so the same labels,
clusters, centres and features.

Every device allocation made during the capture is kept with the graph (a replay writes into
the same memory: about 60 bytes a pixel, 16 MB at 512^2, so ``MAX_GRAPHS`` graphs of 1 Mpx
hold up to about 0.5 GB of device memory; :func:`clear` gives it back), and a graph serves one
call at a time (a lock from the launch to the end of the download). The stage functions
(``stage_lab`` ... ``stage_regions``) never use graphs; the tool's staged pipeline reaches them
through :mod:`gpu_kernels.imseg.deferred`, which runs a full run as one library call.

The contours method has one too (:class:`ContourGraph`, session 7): its fixed-size first stages
(upload, colour, SLIC, superpixel components), replayed by :func:`contours.segment_contours`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gpu_kernels import backend as _backend
from gpu_kernels.imseg import color as _color
from gpu_kernels.imseg import features as _feat
from gpu_kernels.imseg import kmeans as _km
from gpu_kernels.imseg import label as _label
from gpu_kernels.imseg import merge as _merge
from gpu_kernels.imseg._util import device_stream, is_cupy

__all__ = ["ENABLED", "MAX_GRAPHS", "GRID_ROUNDS", "FEATURE_ROWS_MAX", "PrefixGraph", "usable", "lookup", "capture", "clear",
           "stats", "feature_rows", "ContourGraph", "contour_usable", "contour_lookup", "contour_capture"]

#: use graphs at all (the pipeline's result is the same either way)
ENABLED = True
#: graphs kept (one per device, image shape, pixel type and parameter set; the least recently
#: used goes first)
MAX_GRAPHS = 8

_GRAPHS: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
_CAPTURE_LOCK = threading.Lock()
_STATS = {"captures": 0, "replays": 0}
_FAILED: set = set()


def usable(be, img, p: dict, label_method: str, weights: str, max_pixels: int) -> bool:
    """Whether a call can run from a graph: a host image on a CuPy device, the union-find
    labelling, histogram weights, and the merge queued without reading the region count."""
    h, w = img.shape[:2]
    return (ENABLED and is_cupy(be) and isinstance(img, np.ndarray) and label_method == "unionfind"
            and weights == "histogram" and p["min_size"] > 1 and h * w <= max_pixels)


#: the graph's merge rounds as grid kernels (md_link, md_settle, md_compress, md_check: four
#: launches a round, cheap inside a graph) rather than one block (md_round): k-means 512^2 on
#: the H100 0.79-0.80 ms against 0.87 end to end (benchmarks/results/imseg_session6.md)
GRID_ROUNDS = True
#: the region features run inside the graph when the merge bounds the regions to at most this
#: many (one per ``min_size`` pixels); the graph then ends with everything but the download
FEATURE_ROWS_MAX = 16384


def feature_rows(h: int, w: int, min_size: int) -> int:
    """Most regions a finished merge can leave (each has ``min_size`` pixels, or one is left)."""
    return max(1, (h * w) // max(int(min_size), 1))


def _key(be, img, p: dict, global_step: str, fopts: tuple) -> tuple:
    return (be.label, img.shape, img.dtype.str, global_step, tuple(sorted(p.items())), fopts)


def lookup(be, img, p: dict, global_step: str, fopts: tuple = ()):
    """The graph for this call, or None (not captured yet). ``fopts``: (features, moments,
    features method), which the graph's features depend on."""
    k = _key(be, img, p, global_step, fopts)
    with _LOCK:
        g = _GRAPHS.get(k)
        if g is not None:
            _GRAPHS.move_to_end(k)
        return g


def capture(be, img, p: dict, global_step: str, fopts: tuple = ()) -> PrefixGraph | None:
    """Capture (and keep) the graph for this call's shape and parameters; None where capturing
    failed (then that shape and parameter set keep running the ordinary way, with a warning)."""
    return _keep(_key(be, img, p, global_step, fopts), lambda: PrefixGraph(be, img, p, global_step, fopts),
                 img.shape)


def _keep(k: tuple, make, shape):
    if k in _FAILED:
        return None
    try:
        with _CAPTURE_LOCK:  # one capture at a time
            g = make()
    except Exception as exc:  # noqa: BLE001 - a driver without capture support: the ordinary path
        import warnings

        _FAILED.add(k)
        warnings.warn(f"imseg: no CUDA graph for {shape} ({exc}); segmenting without one", stacklevel=3)
        return None
    with _LOCK:
        _GRAPHS[k] = g
        while len(_GRAPHS) > MAX_GRAPHS:
            _GRAPHS.popitem(last=False)
        _STATS["captures"] += 1
    return g


def clear(_backend=None) -> None:
    """Drop every kept graph (and forget the shapes whose capture failed: a capture may have
    failed for want of memory). Called after an out-of-memory error (``Backend.release_caches``)."""
    with _LOCK:
        _GRAPHS.clear()
        _FAILED.clear()


_backend.on_release(clear)


def stats() -> dict:
    """``captures`` and ``replays`` since the process started (for tests and benchmarks)."""
    return dict(_STATS, graphs=len(_GRAPHS))


_STREAMS: dict = {}


def _capture_stream(be):
    """One capturing stream a device (the memory pool keeps its blocks per stream)."""
    return device_stream(_STREAMS, be)


def _record(be, img: np.ndarray, body):
    """Capture ``body(img_d)`` (``img_d``: the device image, filled from a new page-locked
    input by the graph's first node) into a CUDA graph on this device's capturing stream.
    Returns ``(graph, host_in, in_mem, held, img_d, body's result)``; ``held`` keeps every
    allocation made during the capture (a replay writes into the same memory)."""
    xp = be.xp
    rt = xp.cuda.runtime
    in_mem = xp.cuda.alloc_pinned_memory(max(img.nbytes, 1))
    host_in = np.frombuffer(in_mem, img.dtype, img.size).reshape(img.shape)
    held = []
    old_alloc = xp.cuda.get_allocator()

    def alloc(size):
        mp = old_alloc(size)
        held.append(mp)
        return mp

    stream = _capture_stream(be)
    # this thread's allocations only (as flow's plans do): set_allocator is process-wide, so
    # another tab's worker allocating during a capture would have its blocks held by the graph
    with xp.cuda.using_allocator(alloc):
        with stream:
            img_d = xp.empty(img.shape, img.dtype)
            stream.begin_capture()
            try:
                rt.memcpyAsync(img_d.data.ptr, host_in.ctypes.data, img.nbytes, rt.memcpyHostToDevice, stream.ptr)
                out = body(img_d)
            finally:
                graph = stream.end_capture()
    return graph, host_in, in_mem, held, img_d, out


class _Replayable:
    """A captured graph and its page-locked input; one call at a time (``lock``)."""

    graph = host_in = None

    def launch(self, be, img: np.ndarray) -> None:
        """Copy ``img`` into the page-locked input and replay the graph on the current stream
        (hold ``self.lock`` until the results are on the host)."""
        np.copyto(self.host_in, img)
        self.graph.launch(stream=be.xp.cuda.get_current_stream())
        with _LOCK:
            _STATS["replays"] += 1


class PrefixGraph(_Replayable):
    """The captured k-means graph, its page-locked input, and every array its nodes use."""

    def __init__(self, be, img: np.ndarray, p: dict, global_step: str, fopts: tuple = ()):
        xp = be.xp
        h, w = img.shape[:2]
        c = 1 if img.ndim == 2 else img.shape[2]
        n = h * w
        self.h, self.w, self.c = h, w, c
        self.lock = threading.Lock()

        def body(img_d):
            lab_d = None
            if p["bilateral"]:
                lab0 = _color.lab_device(be, img_d, n, c)
                lab_d = _color.bilateral_device(be, lab0, h, w, p["bilateral_window"], p["sigma_spatial"],
                                                p["sigma_color"], p["bilateral"])
            hist = xp.zeros(1 << (3 * p["q"]), dtype=xp.uint32)
            codes = _color.codes_device(be, img_d, n, c, p["q"], hist=hist, lab_d=lab_d)
            clusters, centres, k_d, m_d = _km.kmeans_device(be, codes, h, w, p["q"], p["k_max"], p["iterations"],
                                                            p["merge_distance"], hist, "histogram")
            labels_d, total = _label.unionfind_device(be, clusters, h, w, p["connectivity"], None, global_step)
            state = _merge.merge_queue(be, labels_d, n, h, w, p["min_size"], p["connectivity"], img_d, c,
                                       lab_d=lab_d, count_dev=total, one_block=not GRID_ROUNDS)
            feats = None
            rows = feature_rows(h, w, p["min_size"])
            if fopts and rows <= FEATURE_ROWS_MAX:
                # renumbering and features too: valid when the rounds finished in the graph
                # (the host checks the done flag it reads with the results)
                _merge.queue_renumber(be, state)
                features, moments, method = fopts
                feats = {}
                if features:
                    feats = _feat.features_device(be, labels_d, rows, h, w, img_d, c, method, moments)
            return lab_d, clusters, centres, k_d, m_d, labels_d, state, feats

        self.graph, self.host_in, self._in_mem, self._held, self.img_d, out = _record(be, img, body)
        self.lab_d, self.clusters, self.centres, self.k_d, self.m_d, self.labels_d, self.state, feats = out
        #: the features of up to ``feature_rows`` regions computed in the graph (None: not in it)
        self.feats = feats

    def launch(self, be, img: np.ndarray) -> None:
        super().launch(be, img)
        self.state["queued"] = self.state["per_check"]


# ----------------------------------------------------------------------------- contours
#: graphs of the contours method's first stages (upload, colour, SLIC, superpixel components)
#: for images of up to this many pixels (about 70 bytes a pixel held per graph)
CONTOUR_MAX_PIXELS = 1 << 20
CONTOURS = True


class ContourGraph(_Replayable):
    """The contours method's fixed-size part, captured per shape and (sigma, n_superpixels,
    compactness): the upload of the 8-bit image, blurred CIELAB, the gradient, the SLIC
    iterations and the superpixel components, about 30 launches. What follows reads the
    number of components on the host (it sizes the region graph), as before."""

    def __init__(self, be, u8: np.ndarray, p: dict):
        from gpu_kernels.imseg import contours as _ct

        h, w = u8.shape[:2]
        c8 = 1 if u8.ndim == 2 else u8.shape[2]
        self.h, self.w, self.c8 = h, w, c8
        self.lock = threading.Lock()
        S = _ct.slic_step(h, w, p["n_superpixels"])

        def body(img_d):
            sm, gq, q = _ct.colour_device(be, img_d, h, w, c8, p["sigma"])
            cells = _ct.slic_device(be, sm, q, h, w, S, p["compactness"], _ct.SLIC_ITERATIONS)
            comps, total = _label.unionfind_device(be, cells, h, w, 4)
            return sm, gq, q, comps, total

        self.graph, self.host_in, self._in_mem, self._held, self.img_d, out = _record(be, u8, body)
        self.sm, self.gq, self.q, self.comps, self.total = out
        self.S = S


def contour_usable(be, img) -> bool:
    return (ENABLED and CONTOURS and is_cupy(be) and isinstance(img, np.ndarray)
            and img.shape[0] * img.shape[1] <= CONTOUR_MAX_PIXELS)


def _contour_key(be, u8: np.ndarray, p: dict) -> tuple:
    return ("contours", be.label, u8.shape, u8.dtype.str, tuple(sorted(p.items())))


def contour_lookup(be, u8: np.ndarray, p: dict):
    """The contours graph for this shape and ``p`` (sigma, n_superpixels, compactness), or None."""
    k = _contour_key(be, u8, p)
    with _LOCK:
        g = _GRAPHS.get(k)
        if g is not None:
            _GRAPHS.move_to_end(k)
        return g


def contour_capture(be, u8: np.ndarray, p: dict):
    """Capture (and keep) the contours graph; None where capturing failed (with a warning)."""
    return _keep(_contour_key(be, u8, p), lambda: ContourGraph(be, u8, p), u8.shape)
