"""The contour-following segmentation on a GPU (CuPy) against its CPU path: the same labels,
stage by stage and end to end. Run with ``pytest -m gpu`` on a GPU host."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data, transform

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg.contours import segment_contours

pytestmark = pytest.mark.gpu


def natural(h, w, src=None):
    src = data.astronaut() if src is None else src
    img = transform.resize(src, (h, w), anti_aliasing=True, preserve_range=True)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def _same(img, **kw):
    g = segment_contours(img, device="cuda", **kw)
    c = segment_contours(img, device="cpu", **kw)
    np.testing.assert_array_equal(g.clusters, c.clusters)  # superpixel components
    np.testing.assert_array_equal(g.labels, c.labels)
    assert g.n_regions == c.n_regions and g.info["merge_rounds"] == c.info["merge_rounds"]
    return g, c


@pytest.mark.parametrize("shape", [(321, 481), (481, 321), (257, 300), (1080, 1920)])
def test_labels_equal_cpu_natural(shape):
    g, c = _same(natural(*shape, data.coffee() if shape[0] > 400 else None))
    assert 2 <= g.n_regions < 2000
    assert g.syncs == 2
    for k in ("area", "bbox", "label"):
        np.testing.assert_array_equal(g.features[k], c.features[k])
    np.testing.assert_allclose(g.features["centroid"], c.features["centroid"], rtol=1e-9)
    np.testing.assert_allclose(g.features["intensity_mean"], c.features["intensity_mean"], rtol=1e-9)


@pytest.mark.parametrize("kw", [dict(n_segments=12), dict(n_segments=1), dict(coarseness=2.0),
                                dict(coarseness=5.0, n_superpixels=200, compactness=20.0, sigma=2.0)])
def test_labels_equal_cpu_parameters(kw):
    g, _ = _same(natural(240, 320), **kw)
    if "n_segments" in kw:
        assert g.n_regions == kw["n_segments"]


def test_labels_equal_cpu_dtypes():
    img = natural(200, 260)
    grey = img[..., 0]
    rgba = np.dstack([img, np.full(img.shape[:2], 255, np.uint8)])
    u16 = img.astype(np.uint16) * 257
    fl = img.astype(np.float32) / 255
    for a in (grey, rgba, u16, fl):
        _same(a)


def test_stage_functions_match_cpu():
    img = natural(200, 300)
    lg, gg = C.colour_gradient(img, device="cuda")
    lc, gc = C.colour_gradient(img, device="cpu")
    np.testing.assert_array_equal(lg, lc)
    np.testing.assert_array_equal(gg, gc)
    sg, rg = C.superpixels(img, device="cuda")
    sc, rc = C.superpixels(img, device="cpu")
    assert rg == rc
    np.testing.assert_array_equal(sg, sc)


def test_region_features_deterministic_and_match_cpu():
    """Two GPU runs give bit-identical features, moments_central included (exact integer sums;
    float atomics made them differ between runs), and they match the CPU path."""
    import cupy as cp

    from gpu_kernels.backend import get_backend
    from gpu_kernels.imseg import features as F

    img = natural(1080, 1920, data.coffee())
    labels = segment_contours(img, device="cpu", features=False, n_superpixels=3000,
                              n_segments=400).labels
    be = get_backend("cuda")
    R = int(labels.max())
    runs = []
    for method in ("runs", "runs", "sort"):
        f = F.features_device(be, cp.asarray(labels).ravel(), R, *labels.shape, cp.asarray(img), 3, method, True)
        runs.append({k: cp.asnumpy(v) for k, v in f.items()})
    differ = []  # every key that differs, in one message
    for k in runs[0]:
        if k == "intensity_mean_lab":  # float sums of CIELAB: not exact
            continue
        for j, name in ((1, "second run"), (2, "sort method")):
            a, b = np.asarray(runs[0][k]), np.asarray(runs[j][k])
            if a.shape != b.shape:
                differ.append(f"{k} ({name}): shape {a.shape} against {b.shape}")
            elif not np.array_equal(a, b):
                bad = np.argwhere(a != b)
                differ.append(f"{k} ({name}): {len(bad)} entries differ, first at {bad[:3].tolist()}")
    ref = F.features_np(labels, R, img, moments=True)["moments_central"]
    scale = np.abs(ref).reshape(R, -1).max(axis=1)[:, None, None]
    err = np.abs(runs[0]["moments_central"] - ref) / (scale + 1.0)
    if not err.max() < 1e-9:
        differ.append(f"moments_central vs CPU: relative error {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}")
    assert not differ, "; ".join(differ)
