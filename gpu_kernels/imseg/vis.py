"""Pictures of a segmentation (NumPy arrays in, uint8 RGB out): regions in random colours or
in their mean colour, boundaries drawn over the image, clusters in false colour, one region
highlighted.

Example
-------
>>> import numpy as np
>>> from gpu_kernels.imseg.vis import boundaries, random_colors
>>> labels = np.array([[1, 1, 2], [1, 1, 2]])
>>> random_colors(labels).shape, boundaries(np.zeros((2, 3, 3), np.uint8), labels)[0, 1].tolist()
((2, 3, 3), [255, 255, 0])
"""

from __future__ import annotations

import numpy as np

__all__ = ["STYLES", "label_palette", "random_colors", "mean_colors", "boundary_mask", "boundaries", "boundaries_over",
           "cluster_colors", "highlight", "to_rgb8", "render"]

from gpu_kernels.imseg import defaults as _d  # noqa: E402 - the declared defaults (no NumPy there)

STYLES = _d.STYLES
BOUNDARY_COLOR = (255, 255, 0)


def label_palette(n: int, seed: int = 7) -> np.ndarray:
    """``(n + 1, 3)`` uint8 colours for labels 0..n: 0 black, the others random but bright
    enough to tell apart (the same labels get the same colours every time)."""
    rng = np.random.default_rng(seed)
    pal = rng.integers(40, 256, size=(n + 1, 3)).astype(np.uint8)
    pal[0] = 0
    return pal


def random_colors(labels) -> np.ndarray:
    lab = np.asarray(labels)
    return label_palette(int(lab.max()) if lab.size else 0)[lab]


def to_rgb8(image) -> np.ndarray:
    """The image as 8-bit RGB for display (grey repeated, alpha dropped, 16 bit / float scaled)."""
    a = np.asarray(image)
    if a.dtype == np.uint16:
        a = (a >> 8).astype(np.uint8)
    elif a.dtype == np.bool_:
        a = a.astype(np.uint8) * 255
    elif a.dtype.kind == "f":
        a = np.clip(np.rint(a * 255.0), 0, 255).astype(np.uint8)
    elif a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    return np.ascontiguousarray(a[..., :3])


def mean_colors(labels, features: dict, image=None) -> np.ndarray:
    """Each region in its mean colour (``features["intensity_mean"]``, in the image's units;
    scaled to 8 bit with the image's dtype when given)."""
    lab = np.asarray(labels)
    mean = np.asarray(features["intensity_mean"], dtype=np.float64)
    if mean.ndim == 1:
        mean = mean[:, None]
    dt = np.asarray(image).dtype if image is not None else np.dtype(np.uint8)
    scale = 255.0 / 65535.0 if dt == np.uint16 else (255.0 if dt.kind == "f" else 1.0)
    pal = np.zeros((len(mean) + 1, 3), np.uint8)
    vals = np.clip(np.rint(mean * scale), 0, 255).astype(np.uint8)
    pal[1:] = vals if vals.shape[1] == 3 else np.repeat(vals, 3, axis=1)
    return pal[lab]


def boundary_mask(labels) -> np.ndarray:
    """Pixels with a 4-neighbour of another label (both sides of each border)."""
    lab = np.asarray(labels)
    m = np.zeros(lab.shape, bool)
    dx = lab[:, 1:] != lab[:, :-1]
    dy = lab[1:, :] != lab[:-1, :]
    m[:, 1:] |= dx
    m[:, :-1] |= dx
    m[1:, :] |= dy
    m[:-1, :] |= dy
    return m


def boundaries(image, labels, color=BOUNDARY_COLOR) -> np.ndarray:
    """``image`` as 8-bit RGB with every pixel of :func:`boundary_mask` in ``color``."""
    return boundaries_over(to_rgb8(image), labels, color)


def boundaries_over(base: np.ndarray, labels, color=BOUNDARY_COLOR, *, scratch: np.ndarray | None = None
                    ) -> np.ndarray:
    """A copy of ``base`` (8-bit RGB, H x W x 3, as :func:`to_rgb8` gives it) with every pixel of
    :func:`boundary_mask` in ``color``; ``base`` is not changed. The boundary pixels are found as
    flat indices from two contiguous comparisons of the label map (no full mask, no boolean
    index over three channels: about 5x faster at 1080p, which a live edit redraws each time).
    ``scratch``: a boolean array of at least H * W - 1 elements to compare into, kept by a caller
    that draws often (two fresh 2 MB arrays a picture were page faults).

    >>> base = np.zeros((2, 3, 3), np.uint8)
    >>> boundaries_over(base, [[0, 0, 1], [0, 0, 1]])[..., 0]
    array([[  0, 255, 255],
           [  0, 255, 255]], dtype=uint8)
    """
    lab = np.ascontiguousarray(labels)
    h, w = lab.shape
    if base.shape[:2] != (h, w):
        raise ValueError(f"the labels ({h} x {w}) do not match the picture ({base.shape[0]} x {base.shape[1]})")
    out = np.array(base, dtype=np.uint8, order="C")   # a C-ordered copy: px below is a view of it
    n = lab.size
    if n < 2:
        return out
    flat = lab.ravel()
    if scratch is None or scratch.size < n - 1 or scratch.dtype != np.bool_:
        scratch = np.empty(n - 1, np.bool_)
    px = out.reshape(-1)                   # R, G, B of pixel k at 3k, 3k + 1, 3k + 2
    idx = []
    if w > 1:
        d = np.not_equal(flat[1:], flat[:-1], out=scratch[:n - 1])   # each pixel and its right neighbour,
        d[w - 1::w] = False                # but a row's last pixel and the next row's first are not neighbours
        i = np.flatnonzero(d)
        idx += [i, i + 1]
    if h > 1:
        i = np.flatnonzero(np.not_equal(flat[w:], flat[:-w], out=scratch[:n - w]))   # each pixel and the one below
        idx += [i, i + w]
    if idx:
        k = np.concatenate(idx) * 3
        for c, v in enumerate(np.asarray(color, dtype=np.uint8)):
            px[k + c] = v
    return out


def cluster_colors(clusters, centres_lab=None) -> np.ndarray:
    """Clusters in false colour: each cluster its centre's colour pushed to full saturation
    when centres are given (so similar clusters look related), random colours otherwise."""
    cl = np.asarray(clusters)
    k = int(cl.max()) + 1 if cl.size else 1
    if centres_lab is None or len(centres_lab) < k:
        return label_palette(k, seed=11)[cl + 1]
    from skimage.color import lab2rgb

    c = np.asarray(centres_lab, dtype=np.float64).copy()
    c[:, 0] = 35.0 + 0.5 * c[:, 0]          # keep it readable: mid lightness
    c[:, 1:] *= 1.6                          # stronger colours than the real ones
    rgb = np.clip(lab2rgb(c[None])[0], 0, 1)
    pal = np.rint(rgb * 255).astype(np.uint8)
    return pal[cl]


def highlight(rgb, labels, label: int, color=(255, 0, 255)) -> np.ndarray:
    """Dim everything but region ``label`` and outline it in ``color``."""
    lab = np.asarray(labels)
    out = np.asarray(rgb).astype(np.float32)
    inside = lab == label
    out[~inside] *= 0.45
    out = np.clip(out, 0, 255).astype(np.uint8)
    edge = boundary_mask(inside) & inside
    out[edge] = color
    return out


def render(style: str, image, labels, *, features: dict | None = None, clusters=None, centres=None) -> np.ndarray:
    """One of :data:`STYLES` as 8-bit RGB."""
    if style == "random":
        return random_colors(labels)
    if style == "mean":
        if features is None:
            raise ValueError("the mean-colour picture needs the region features")
        return mean_colors(labels, features, image)
    if style == "boundaries":
        return boundaries(image, labels)
    if style == "clusters":
        if clusters is None:
            raise ValueError("the cluster picture needs the clusters")
        return cluster_colors(clusters, centres)
    raise ValueError(f"unknown picture style {style!r}: use one of {', '.join(STYLES)}")
