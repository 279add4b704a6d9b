"""Stage 2: connected components of pixels with equal values (4- or 8-connectivity).

Methods (all give the same labels: consecutive from 1 in raster order of each component's
first pixel, which is :func:`scipy.ndimage.label`'s numbering on a binary image):

``unionfind`` (GPU, the production path)
    The paper's parallel union-find (Algorithm 4): merges along column seams and then row
    seams with doubling strides; a local step does the levels inside 32 x 32 tiles in shared
    memory, a global step launches one kernel per remaining level and direction
    (``global_step="levels"``) or merges every tile border in one launch per direction
    (``global_step="single"``). Unions are lock-free (atomicMin on the larger root) instead
    of the paper's "try east to west, then west to east", which can lose a merge when two
    seams race for one root.
``equivalence`` (GPU)
    Label equivalence (Kalentev et al. 2011), the iterative scheme ``cupyx.scipy.ndimage
    .label`` is usually compared with: one host check per iteration.
``scipy`` (CPU)
    :func:`scipy.ndimage.label` once per value (inside that value's bounding box), then one
    renumbering.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.label import label_components
>>> img = np.array([[1, 1, 2], [2, 1, 2], [2, 2, 1]])
>>> labels, n = label_components(img, connectivity=4, device="cpu")
>>> n, labels.tolist()
(4, [[1, 1, 2], [3, 1, 2], [3, 3, 4]])
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage as ndi

from gpu_kernels.backend import asnumpy, get_backend
from gpu_kernels.imseg._util import ImsegInputError, SyncCounter, activated, grid, is_cupy, kernel
from gpu_kernels.jobs import as_progress

__all__ = [
    "METHODS",
    "DEFAULT_METHOD_GPU",
    "DEFAULT_GLOBAL_STEP",
    "TILE",
    "check_connectivity",
    "seam_schedule",
    "label_components",
]

METHODS = ("unionfind", "equivalence", "scipy")
#: the GPU method ``auto`` picks (the faster in benchmarks/results/imseg.md)
DEFAULT_METHOD_GPU = "unionfind"
#: how the union-find merges the tile borders: one launch per doubling level (the paper's
#: "levels") or all borders at once ("single"). "single" measured 10-15% faster on an H100
#: (4K masks: 0.44 vs 0.50 ms blocky 4-connected, 1.41 vs 1.60 ms multi-value 8-connected;
#: benchmarks/results/imseg_h100.md); both are tested against scipy on the GPU.
DEFAULT_GLOBAL_STEP = "single"
GLOBAL_STEPS = ("levels", "single")
TILE = 32           # must match UF_T in imseg_label.cu
RL_BLOCK = 256 * 16  # pixels per block of the relabelling kernels (RL_THREADS * RL_ITEMS)
MAX_EQUIVALENCE_ITERATIONS = 10_000

_SRC = "imseg_label.cu"


def check_connectivity(connectivity) -> int:
    """4 or 8 (1 and 2 are accepted as scikit-image's names for them)."""
    aliases = {1: 4, 2: 8, 4: 4, 8: 8}
    try:
        c = aliases.get(int(connectivity))
    except (TypeError, ValueError):
        c = None
    if c is None or int(connectivity) != connectivity:
        raise ImsegInputError(f"connectivity must be 4 or 8, got {connectivity!r}")
    return c


def seam_schedule(extent: int, tile: int = TILE, global_step: str = DEFAULT_GLOBAL_STEP) -> list[tuple[int, int, int]]:
    """The global step's launches along one axis: ``(first, step, nseams)`` per launch.

    Level ``i`` (``i = tile, 2 tile, ...``) merges the seams ``x = i - 1 (mod 2 i)``, i.e. the
    seams between blocks of ``i`` columns; the local step has done every level below
    ``tile``. Seam ``x`` joins ``x`` and ``x + 1``, so only ``x <= extent - 2`` count.
    """
    out = []
    if global_step == "single":
        first, step = tile - 1, tile
        if extent - 2 >= first:
            out.append((first, step, (extent - 2 - first) // step + 1))
        return out
    i = tile
    while i < extent:
        first, step = i - 1, 2 * i
        if extent - 2 >= first:
            out.append((first, step, (extent - 2 - first) // step + 1))
        i *= 2
    return out


# --------------------------------------------------------------------------- CPU path
def label_np(img: np.ndarray, connectivity: int, background=None) -> tuple[np.ndarray, int]:
    """Labels with scipy.ndimage.label, one value at a time, renumbered in raster order."""
    h, w = img.shape
    structure = ndi.generate_binary_structure(2, 1 if connectivity == 4 else 2)
    vals = img.astype(np.int64, copy=False)
    uniq = np.unique(vals)
    if background is not None:
        uniq = uniq[uniq != background]
    if len(uniq) == 0:
        return np.zeros((h, w), np.int32), 0
    if len(uniq) == 1 and background is None:
        lab, n = ndi.label(np.ones((h, w), bool), structure=structure)
        return lab.astype(np.int32), int(n)
    shifted = np.searchsorted(uniq, vals) + 1  # 1..len(uniq)
    if background is not None:
        shifted[vals == background] = 0
    boxes = ndi.find_objects(shifted)
    tmp = np.zeros((h, w), np.int64)
    total = 0
    for v, box in enumerate(boxes, start=1):
        if box is None:
            continue
        mask = shifted[box] == v
        lab, n = ndi.label(mask, structure=structure)
        if n:
            sub = tmp[box]
            sub[mask] = lab[mask] + total
            total += int(n)
    if total == 0:
        return np.zeros((h, w), np.int32), 0
    # renumber in raster order of each component's first pixel
    flat = tmp.ravel()
    first = np.full(total + 1, flat.size, np.int64)
    fg = np.flatnonzero(flat)
    np.minimum.at(first, flat[fg], fg)
    order = np.argsort(first[1:], kind="stable")
    newid = np.zeros(total + 1, np.int32)
    newid[1 + order] = np.arange(1, total + 1, dtype=np.int32)
    return newid[tmp], total


# --------------------------------------------------------------------------- GPU path
def _suffix(dtype) -> str:
    return "u8" if np.dtype(dtype) == np.uint8 else "i32"


def relabel_device(be, parent, n: int, labels, nptr=None):
    """Number the roots of a union-find forest 1..R in raster order; fills ``labels`` (every
    item: its root's number, 0 for background) and returns R as a (1,) device array."""
    xp = be.xp
    nb = max(1, -(-n // RL_BLOCK))
    bc = xp.empty(nb, dtype=xp.int32)
    offs = xp.empty(nb, dtype=xp.int32)
    total = xp.zeros(1, dtype=xp.int32)
    from gpu_kernels.imseg._util import NULL

    nptr = nptr if nptr is not None else NULL
    kernel(be, _SRC, "flatten_count")((nb,), (256,), (parent, np.int64(n), nptr, bc))
    kernel(be, _SRC, "scan_blocks")((1,), (1024,), (bc, np.int32(nb), offs, total))
    kernel(be, _SRC, "write_root_labels")((nb,), (256,), (parent, np.int64(n), nptr, offs, labels))
    kernel(be, _SRC, "finalize_labels")(grid(n, 256), (256,), (parent, np.int64(n), nptr, labels))
    return total


def unionfind_device(be, img_d, h: int, w: int, connectivity: int, background=None,
                     global_step: str = DEFAULT_GLOBAL_STEP, labels=None, parent=None):
    """GPU union-find labelling of a device image (uint8 or int32, (h * w,)); no host
    synchronisation. Returns ``(labels (n,) int32, R (1,) int32)`` on the device."""
    xp = be.xp
    n = h * w
    sfx = _suffix(img_d.dtype)
    parent = parent if parent is not None else xp.empty(n, dtype=xp.int32)
    labels = labels if labels is not None else xp.empty(n, dtype=xp.int32)
    conn8 = np.int32(connectivity == 8)
    has_bg = np.int32(background is not None)
    bg = np.int32(background if background is not None else 0)
    W, H = np.int32(w), np.int32(h)
    kernel(be, _SRC, f"uf_local_{sfx}")((-(-w // TILE), -(-h // TILE)), (TILE, 8),
                                        (img_d, parent, W, H, conn8, has_bg, bg))
    fc = kernel(be, _SRC, f"uf_cols_{sfx}")
    fr = kernel(be, _SRC, f"uf_rows_{sfx}")
    cols, rows = seam_schedule(w, TILE, global_step), seam_schedule(h, TILE, global_step)
    for lvl in range(max(len(cols), len(rows))):
        if lvl < len(cols):
            first, step, ns = cols[lvl]
            fc(grid(ns * h, 256), (256,), (img_d, parent, W, H, np.int32(first), np.int32(step), np.int32(ns),
                                           conn8, has_bg, bg))
        if lvl < len(rows):
            first, step, ns = rows[lvl]
            fr(grid(ns * w, 256), (256,), (img_d, parent, W, H, np.int32(first), np.int32(step), np.int32(ns),
                                           conn8, has_bg, bg))
    total = relabel_device(be, parent, n, labels)
    return labels, total


def equivalence_device(be, img_d, h: int, w: int, connectivity: int, background=None, syncs: SyncCounter | None = None,
                       labels=None):
    """GPU label equivalence; one host check per iteration (counted in ``syncs``)."""
    xp = be.xp
    n = h * w
    sfx = _suffix(img_d.dtype)
    lab = xp.empty(n, dtype=xp.int32)
    labels = labels if labels is not None else xp.empty(n, dtype=xp.int32)
    conn8 = np.int32(connectivity == 8)
    has_bg = np.int32(background is not None)
    bg = np.int32(background if background is not None else 0)
    g = grid(n, 256)
    kernel(be, _SRC, f"le_init_{sfx}")(g, (256,), (img_d, lab, np.int64(n), has_bg, bg))
    changed = xp.zeros(1, dtype=xp.int32)
    syncs = syncs if syncs is not None else SyncCounter()
    f_scan = kernel(be, _SRC, f"le_scan_{sfx}")
    f_an = kernel(be, _SRC, "le_analysis")
    for _ in range(MAX_EQUIVALENCE_ITERATIONS):
        changed.fill(0)
        f_scan(g, (256,), (img_d, lab, np.int32(w), np.int32(h), conn8, has_bg, bg, changed))
        f_an(g, (256,), (lab, np.int64(n)))
        if int(syncs.read(be, changed, "label equivalence: changed?")[0]) == 0:
            break
    total = relabel_device(be, lab, n, labels)
    return labels, total


def device_values(be, img):
    """The image as a device array the label kernels read: uint8 as is, others as int32."""
    xp = be.xp
    a = img if hasattr(img, "__cuda_array_interface__") and is_cupy(be) else img
    if np.dtype(a.dtype) == np.uint8:
        return xp.ascontiguousarray(xp.asarray(a)).reshape(-1)
    if np.dtype(a.dtype).kind not in "iub":
        raise ImsegInputError(f"label_components needs an integer or bool image, got {a.dtype}")
    if np.dtype(a.dtype) == np.bool_:
        return xp.asarray(a).astype(xp.uint8).reshape(-1)
    mn, mx = (int(v) for v in (a.min(), a.max())) if a.size else (0, 0)
    if mn < -(2**31) or mx >= 2**31:
        raise ImsegInputError("label values must fit in 32-bit integers")
    return xp.asarray(a).astype(xp.int32).reshape(-1)


def label_components(image, *, connectivity: int = 8, background=None, method: str = "auto",
                     global_step: str = DEFAULT_GLOBAL_STEP, device=None, progress=None):
    """Label the connected components of equal-valued pixels.

    Parameters
    ----------
    image : (H, W) integer or bool array
        Cluster ids, a mask, any integer image.
    connectivity : {4, 8}
    background : int, optional
        Pixels of this value get label 0 and are never merged (``0`` for a binary mask, as
        in :func:`scipy.ndimage.label`); None labels every pixel.
    method : {"auto", "unionfind", "equivalence", "scipy"}
        ``auto``: union-find on a GPU, scipy on the CPU.
    global_step : {"levels", "single"}
        Union-find only: see the module docstring.

    Returns
    -------
    labels : (H, W) int32 ndarray
        0 for background, else 1..n in raster order of each component's first pixel.
    n : int

    Example
    -------
    >>> import numpy as np
    >>> from gpu_kernels.imseg.label import label_components
    >>> mask = np.array([[1, 0, 1], [0, 1, 0]], np.uint8)
    >>> label_components(mask, connectivity=8, background=0, device="cpu")[1]
    1
    """
    progress = as_progress(progress)
    be = get_backend(device)
    conn = check_connectivity(connectivity)
    if method not in METHODS and method != "auto":
        raise ImsegInputError(f"unknown labelling method {method!r}: use one of {', '.join(METHODS)} or auto")
    if global_step not in GLOBAL_STEPS:
        raise ImsegInputError(f"global_step must be one of {', '.join(GLOBAL_STEPS)}, got {global_step!r}")
    shape = tuple(image.shape)
    if len(shape) != 2 or 0 in shape:
        raise ImsegInputError(f"expected a non-empty 2-D image, got shape {shape}")
    h, w = shape
    if method == "auto":
        method = DEFAULT_METHOD_GPU if be.is_gpu else "scipy"
    if method != "scipy" and not be.is_gpu:
        raise ImsegInputError(f"method {method!r} runs on a GPU; use method='scipy' (or 'auto') on the CPU")
    progress.update(0.0, "labelling")
    if method == "scipy":
        img = np.asarray(asnumpy(image))
        if img.dtype.kind not in "iub":
            raise ImsegInputError(f"label_components needs an integer or bool image, got {img.dtype}")
        labels, n = label_np(img, conn, background)
        progress.update(1.0, "labelling")
        return labels, n
    with activated(be):
        vals = device_values(be, image)
        if method == "unionfind":
            labels, total = unionfind_device(be, vals, h, w, conn, background, global_step)
        else:
            labels, total = equivalence_device(be, vals, h, w, conn, background)
        n = int(asnumpy(total)[0])
        out = asnumpy(labels).reshape(h, w)
    progress.update(1.0, "labelling")
    return out, n
