"""Stage 3: region features with scikit-image's ``regionprops`` names.

For labels ``1..R`` (0 = no region) and the image the labels came from:

``label``, ``area``
    pixel count;
``bbox``
    ``(min_row, min_col, max_row, max_col)``, half-open as in ``regionprops``;
``centroid``
    ``(row, col)``;
``intensity_mean``
    mean of the image's channels in its own units (0..255 for 8 bit; alpha ignored);
``intensity_mean_lab``
    mean CIELAB colour (of :func:`gpu_kernels.imseg.color.rgb2lab`);
``moments_central``
    ``mu[i, j] = sum (row - row_c)^i (col - col_c)^j`` for i, j = 0..3 (``regionprops``'
    ``moments_central``, shape (R, 4, 4)).

On the GPU the features are segmented reductions over the pixels (the paper's Stage 3):
``method="runs"`` walks the pixels in raster order, each run of equal labels in a thread's
chunk being one segment; ``method="sort"`` first sorts the pixels by label (the paper's
Bitonic Sort + Segmented Scan). Two passes: area, box, sums; then the central moments about
the centroid (no cancellation from raw moments). The run that ends each thread's chunk is
first summed across the warp's lanes that end in the same region, so a large region takes
one set of atomics per warp, not per thread. The CIELAB sums are exact fixed-point integers
(``LAB_SCALE``) and the moments exact 128-bit integers, so neither depends on the order the
atomics land in. On the CPU: ``numpy.bincount`` and ``scipy.ndimage.find_objects``.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.features import region_features
>>> labels = np.array([[1, 1, 2], [1, 1, 2]], np.int32)
>>> img = np.array([[10, 10, 200], [10, 10, 200]], np.uint8)
>>> f = region_features(labels, img, device="cpu")
>>> f["area"].tolist(), f["bbox"].tolist(), f["intensity_mean"][:, 0].tolist()
([4, 2], [[0, 0, 2, 2], [0, 2, 2, 3]], [10.0, 200.0])
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.imseg import color as _color
from gpu_kernels.imseg._util import NULL, PIXEL_SUFFIX, ImsegInputError, activated, as_image, grid, kernel
from gpu_kernels.jobs import as_progress

__all__ = ["METHODS", "DEFAULT_METHOD", "PROPERTIES", "CHUNK", "region_features", "features_table"]

METHODS = ("runs", "sort")
#: the GPU method (the faster in benchmarks/results/imseg.md) up to SORT_ABOVE_PIXELS
DEFAULT_METHOD = "runs"
#: "auto" takes the sorted method above this many pixels (0: never): the k-means pipeline at 4K
#: on the H100 (session 10, one process, 5 rounds of 30 calls): 4.79-5.28 -> 4.38-4.66 ms round
#: medians, its features' share 1.17 -> 0.53 ms (sorting 8.3 Mpx costs less than the raster
#: kernels' runs there). Timed at 4K only: smaller images keep DEFAULT_METHOD
SORT_ABOVE_PIXELS = 4 << 20
PROPERTIES = ("label", "area", "bbox", "centroid", "intensity_mean", "intensity_mean_lab", "moments_central")
#: items per thread of the sorted-order kernels (method "sort": feat_pass1_*, feat_moments_exact;
#: FT_CHUNK)
CHUNK = 16
#: pixels a thread of the raster-order kernels (method "runs", and the merge's sums:
#: feat_pass1_smem_*, feat_moments_digits: a run's sums go through a block-private table of
#: regions in shared memory, one set of global atomics per region a block saw, not per run; the
#: session-4 raster kernels they replaced were removed in session 10)
SMEM_CHUNK = 8
#: pixels a thread above SMEM_BIG_PIXELS pixels (H100, session 9: features at 4K 1.24 ms at 32,
#: 1.42 at 16, 1.58 at 8, against 1.36 for the old kernels; at 512^2 the moments take 56 us at 4
#: or 8 a thread, 100 at 16)
SMEM_CHUNK_BIG = 32
SMEM_BIG_PIXELS = 1 << 20
_SMEM_THREADS = 256

FT_BBOX, FT_RAW, FT_LAB = 1, 2, 4
#: the GPU's CIELAB sums are exact integers, rint(v * LAB_SCALE) a pixel (FT_LAB_SCALE): order-
#: independent (float atomics were not), and merge.py's CPU rounds add the same integers
LAB_SCALE = 16384.0
_SRC = "imseg_features.cu"


# --------------------------------------------------------------------------- CPU path
def features_np(labels: np.ndarray, n_regions: int, img: np.ndarray | None, lab: np.ndarray | None = None,
                moments: bool = True, progress=None) -> dict:
    """All the features on the CPU (``img``: the checked image or None; ``lab``: its CIELAB);
    ``progress`` hears of each group of sums (and checks for cancel: a 63 Mpx image takes
    tens of seconds)."""
    progress = as_progress(progress)
    progress.update(0.0, "features: areas and boxes")
    h, w = labels.shape
    R = int(n_regions)
    flat = labels.ravel()
    area = np.bincount(flat, minlength=R + 1)[1:R + 1].astype(np.int64)
    out = {"label": np.arange(1, R + 1, dtype=np.int32), "area": area}
    bbox = np.zeros((R, 4), np.int64)
    for i, sl in enumerate(ndi.find_objects(labels, max_label=R)):
        if sl is not None:
            bbox[i] = (sl[0].start, sl[1].start, sl[0].stop, sl[1].stop)
    out["bbox"] = bbox
    progress.update(0.15, "features: centroids")
    rows = np.repeat(np.arange(h, dtype=np.float64), w)
    cols = np.tile(np.arange(w, dtype=np.float64), h)
    safe = np.maximum(area, 1).astype(np.float64)
    cr = np.bincount(flat, weights=rows, minlength=R + 1)[1:R + 1] / safe
    cc = np.bincount(flat, weights=cols, minlength=R + 1)[1:R + 1] / safe
    out["centroid"] = np.stack([cr, cc], axis=1)
    if img is not None:
        progress.update(0.3, "features: mean colours")
        chans = [img[..., i] for i in range(3)] if img.ndim == 3 else [img]
        out["intensity_mean"] = np.stack(
            [np.bincount(flat, weights=ch.ravel().astype(np.float64), minlength=R + 1)[1:R + 1] / safe
             for ch in chans], axis=1)
        if lab is None:
            lab = _color.lab_np(img, progress.sub(0.35, 0.5, "features"))
    if lab is not None:
        out["intensity_mean_lab"] = np.stack(
            [np.bincount(flat, weights=lab[..., i].ravel().astype(np.float64), minlength=R + 1)[1:R + 1] / safe
             for i in range(3)], axis=1)
    if moments:
        crp = np.r_[0.0, cr]
        ccp = np.r_[0.0, cc]
        dr = rows - crp[flat]
        dc = cols - ccp[flat]
        mu = np.zeros((R, 4, 4), np.float64)
        pr = [np.ones_like(dr), dr, dr * dr, dr * dr * dr]
        pc = [np.ones_like(dc), dc, dc * dc, dc * dc * dc]
        for i in range(4):
            for j in range(4):
                progress.update(0.6 + 0.4 * (4 * i + j) / 16, "features: central moments")
                if i == 0 and j == 0:
                    mu[:, 0, 0] = area
                    continue
                mu[:, i, j] = np.bincount(flat, weights=pr[i] * pc[j], minlength=R + 1)[1:R + 1]
        out["moments_central"] = mu
    return out


# --------------------------------------------------------------------------- GPU path
def auto_method(n_pixels: int) -> str:
    """The GPU method "auto" stands for with an image of ``n_pixels`` pixels (the same features
    either way: integer sums)."""
    return "sort" if SORT_ABOVE_PIXELS and int(n_pixels) > SORT_ABOVE_PIXELS else DEFAULT_METHOD


def _smem_chunk(n: int) -> int:
    """Pixels a thread of the table kernels for ``n`` pixels (1..32: the tables' digits are
    bounded for runs of at most 32 lanes x 32 pixels)."""
    return max(1, min(32, int(SMEM_CHUNK_BIG if n > SMEM_BIG_PIXELS else SMEM_CHUNK)))


def _defines():
    return None if CHUNK == 16 else {"FT_CHUNK": CHUNK}


def pass1_device(be, labels_d, R: int, h: int, w: int, img_d, c: int, flags: int, lab_d=None, order=None,
                 out: dict | None = None, extra_u64: int = 0, more: tuple = ()) -> dict:
    """Pass 1 accumulators on the device (no synchronisation). ``img_d`` may be None when
    only the area and a given ``lab_d`` are wanted. A fresh call zeroes all its accumulators
    (and ``extra_u64`` more 64-bit words, ``acc["extra"]``) with one memset. ``more``: further
    ``(name, dtype, count)`` arrays placed in the same block (the features' outputs, so that
    they come back to the host with one copy)."""
    xp = be.xp
    n = h * w
    R1 = max(R, 1)
    nc = 3 if c >= 3 else 1
    acc = out if out is not None else {}
    bbox = sum_rc = raw = labsum = NULL
    if out is None:
        parts = [("area", xp.int32, R1)]
        if flags & FT_BBOX:
            parts.append(("sum_rc", xp.uint64, 2 * R1))
            parts.append(("bbox", xp.int32, 4 * R1))  # set by feat_init_bbox below
        if flags & FT_RAW:
            parts.append(("raw_sum", xp.float64, nc * R1))
        if flags & FT_LAB:
            parts.append(("lab_sum", xp.int64, 3 * R1))
        if extra_u64:
            parts.append(("extra", xp.uint64, int(extra_u64)))
        parts.extend(more)
        offs, total = [], 0
        for _, dt, cnt in parts:
            offs.append(total)
            total += -(-cnt * np.dtype(dt).itemsize // 8) * 8
        buf = xp.zeros(total, dtype=xp.uint8)
        for (name, dt, cnt), o in zip(parts, offs, strict=True):
            acc[name] = buf[o:o + cnt * np.dtype(dt).itemsize].view(dt)
        area = acc["area"]
        sum_rc = acc.get("sum_rc", NULL)
        raw = acc.get("raw_sum", NULL)
        labsum = acc.get("lab_sum", NULL)
    else:
        area = acc.get("area")
        if area is None:
            area = acc["area"] = xp.zeros(R1, dtype=xp.int32)
        else:
            area.fill(0)
        if flags & FT_BBOX:
            sum_rc = acc["sum_rc"] = xp.zeros(2 * R1, dtype=xp.uint64)
        if flags & FT_RAW:
            raw = acc["raw_sum"] = xp.zeros(nc * R1, dtype=xp.float64)
        if flags & FT_LAB:
            labsum = acc.get("lab_sum")
            if labsum is None:
                labsum = acc["lab_sum"] = xp.zeros(3 * R1, dtype=xp.int64)
            else:
                labsum.fill(0)
    if flags & FT_BBOX:
        if out is None:
            bbox = acc["bbox"]
        else:
            bbox = acc["bbox"] = xp.empty(4 * R1, dtype=xp.int32)
        kernel(be, _SRC, "feat_init_bbox", options=_color.CUDA_OPTIONS)(grid(R1, 256), (256,), (bbox, np.int64(R1)))
    if img_d is None:
        img_arg, sfx, c = NULL, "f32", 3
    else:
        img_arg, sfx = img_d, PIXEL_SUFFIX[np.dtype(img_d.dtype)]
    if order is None:
        ch = _smem_chunk(n)
        kernel(be, _SRC, f"feat_pass1_smem_{sfx}", options=_color.CUDA_OPTIONS)(
            grid(-(-n // ch), _SMEM_THREADS), (_SMEM_THREADS,),
            (labels_d, np.int64(n), np.int32(w), np.int32(ch), img_arg, np.int32(c),
             lab_d if lab_d is not None else NULL, np.int32(flags), area, bbox, sum_rc, raw, labsum))
        return acc
    fn = kernel(be, _SRC, f"feat_pass1_{sfx}", options=_color.CUDA_OPTIONS, defines=_defines())
    fn(grid(-(-n // CHUNK), 256), (256,),
       (labels_d, np.int64(n), np.int32(w), order, img_arg, np.int32(c), lab_d if lab_d is not None else NULL,
        np.int32(flags), area, bbox, sum_rc, raw, labsum))
    return acc


def features_device(be, labels_d, R: int, h: int, w: int, img_d, c: int, method: str = DEFAULT_METHOD,
                    moments: bool = True) -> dict:
    """All the features on the device (dict of device arrays; no synchronisation)."""
    xp = be.xp
    n = h * w
    order = None
    if method == "sort":
        order = xp.argsort(labels_d).astype(xp.int32)
    R1 = max(R, 1)
    nc = 3 if c >= 3 else 1
    # the outputs share the accumulators' block: one allocation, and one copy to the host
    outs = [("label", xp.int32, R1), ("centroid", xp.float64, 2 * R1), ("mean", xp.float64, nc * R1),
            ("lab_mean", xp.float64, 3 * R1), ("anchor", xp.int64, 2 * R1)]
    if moments:
        outs.append(("mu", xp.float64, 16 * R1))
    acc = pass1_device(be, labels_d, R, h, w, img_d, c, FT_BBOX | FT_RAW | FT_LAB, order=order,
                       extra_u64=32 * R1 if moments else 0, more=tuple(outs))
    label = acc["label"]
    centroid = acc["centroid"].reshape(R1, 2)
    mean = acc["mean"].reshape(R1, nc)
    lab_mean = acc["lab_mean"].reshape(R1, 3)
    anchor = acc["anchor"].reshape(R1, 2)
    kernel(be, _SRC, "feat_finish", options=_color.CUDA_OPTIONS)(
        grid(R1, 256), (256,), (np.int32(R1), np.int32(nc), acc["area"], acc["sum_rc"], acc["raw_sum"],
                                acc["lab_sum"], label, centroid, mean, lab_mean, anchor))
    out = {
        "label": label[:R],
        "area": acc["area"][:R],
        "bbox": acc["bbox"].reshape(-1, 4)[:R],
        "centroid": centroid[:R],
        "intensity_mean": mean[:R],
        "intensity_mean_lab": lab_mean[:R],
    }
    if moments:
        # exact integer sums about the rounded-down centroid (the same on every run; float
        # atomics were not), then shifted to the centroid
        macc = acc["extra"]  # zeroed with the pass-1 sums
        if order is None:
            ch = _smem_chunk(n)
            kernel(be, _SRC, "feat_moments_digits", options=_color.CUDA_OPTIONS)(
                grid(-(-n // ch), _SMEM_THREADS), (_SMEM_THREADS,),
                (labels_d, np.int64(n), np.int32(w), np.int32(ch), anchor, macc))
        else:
            kernel(be, _SRC, "feat_moments_exact", options=_color.CUDA_OPTIONS, defines=_defines())(
                grid(-(-n // CHUNK), 256), (256,), (labels_d, np.int64(n), np.int32(w), order, anchor, macc))
        mu = acc["mu"]
        kernel(be, _SRC, "feat_moments_finish", options=_color.CUDA_OPTIONS)(
            grid(R1, 256), (256,), (np.int32(R), macc, acc["area"], anchor, centroid, mu))
        out["moments_central"] = mu.reshape(-1, 4, 4)[:R]
    return out


def features_table(features: dict) -> dict:
    """Flatten a feature dict into ``regionprops_table`` columns (``bbox-0``, ...,
    ``moments_central-1-2``, ``intensity_mean-0``, ...), host arrays."""
    cols = {}
    for name, v in features.items():
        v = np.asarray(asnumpy(v))
        if v.ndim == 1:
            cols[name] = v
        elif v.ndim == 2:
            for i in range(v.shape[1]):
                cols[f"{name}-{i}"] = v[:, i]
        else:
            for i in range(v.shape[1]):
                for j in range(v.shape[2]):
                    cols[f"{name}-{i}-{j}"] = v[:, i, j]
    return cols


# --------------------------------------------------------------------------- public
def region_features(labels, image, *, n_regions: int | None = None, method: str = "auto", moments: bool = True,
                    device=None, progress=None) -> dict:
    """Features of the regions of a label image (see the module docstring for the names).

    Parameters
    ----------
    labels : (H, W) int array
        0 = no region, else 1..R.
    image : (H, W), (H, W, 3) or (H, W, 4) array
        The image the features are measured on (uint8, uint16, bool or float in [0, 1]).
    n_regions : int, optional
        R (default: ``labels.max()``).
    method : {"auto", "runs", "sort"}
        GPU reduction order (``auto``: :func:`auto_method` of the image's size); ignored on the CPU.
    moments : bool
        Compute ``moments_central`` (a second pass).

    Returns
    -------
    dict of host arrays, one row per label 1..R.

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.features import region_features
    >>> f = region_features(np.ones((3, 3), np.int32), np.zeros((3, 3), np.uint8), device="cpu")
    >>> f["centroid"].tolist(), float(f["moments_central"][0, 2, 0])
    ([[1.0, 1.0]], 6.0)
    """
    progress = as_progress(progress)
    be = get_backend(device)
    img, h, w, c = as_image(image)
    lab_img = np.asarray(asnumpy(labels))
    if lab_img.shape != (h, w):
        raise ImsegInputError(f"labels have shape {lab_img.shape} but the image is {h} x {w}")
    if lab_img.dtype.kind not in "iu":
        raise ImsegInputError(f"labels must be integers, got {lab_img.dtype}")
    if lab_img.size and lab_img.min() < 0:
        raise ImsegInputError("labels must be >= 0 (0 = no region)")
    R = int(lab_img.max()) if n_regions is None else int(n_regions)
    if method == "auto":
        method = auto_method(h * w)
    if method not in METHODS:
        raise ImsegInputError(f"unknown features method {method!r}: use one of {', '.join(METHODS)} or auto")
    progress.update(0.0, "region features")
    if not be.is_gpu:
        out = features_np(lab_img.astype(np.int64, copy=False), R, img, moments=moments)
        progress.update(1.0, "region features")
        return out
    with activated(be):
        xp = be.xp
        labels_d = xp.asarray(lab_img.astype(np.int32, copy=False)).reshape(-1)
        img_d = xp.asarray(img)
        out = features_device(be, labels_d, R, h, w, img_d, c, method, moments)
        res = {k: asnumpy(v) for k, v in out.items()}
    progress.update(1.0, "region features")
    return res
