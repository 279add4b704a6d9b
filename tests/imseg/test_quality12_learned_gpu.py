"""The learned merge (gpu_kernels/imseg/learned.py) on a GPU: the same labels as the CPU path on
BSDS500 images (the shared data's, where present) and on synthetic scenes, in coarseness mode and
with n_segments; the regions' arrays in shared memory or not; nothing read back but the two counts.
Run with ``pytest -m gpu`` on a GPU host."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from test_imseg_contours import shaded_regions

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import learned as LM
from gpu_kernels.imseg.contours import segment_contours

pytestmark = pytest.mark.gpu

BSDS = Path(os.environ.get("IMSEG_BSDS_IMAGES") or
            Path(__file__).resolve().parents[2].parent / "shared" / "data" / "bsds500" / "images")


def _images():
    out = [("shaded", shaded_regions(1210, cells=7)[0]), ("shaded-big", shaded_regions(1211, 540, 720, 8)[0])]
    if BSDS.is_dir():
        import cv2

        for p in sorted(BSDS.glob("*.jpg"))[:4]:
            out.append((p.stem, cv2.cvtColor(cv2.imread(str(p)), cv2.COLOR_BGR2RGB)))
    return out


@pytest.fixture(scope="module")
def gpu():
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("no CUDA device")
    from gpu_kernels.backend import get_backend

    return get_backend("cuda:0")


@pytest.mark.parametrize("kw", [dict(), dict(n_segments=12), dict(coarseness=2.0), dict(coarseness=0.0)])
def test_gpu_labels_equal_the_cpu_labels(gpu, kw):
    for name, img in _images():
        g = segment_contours(img, merge="learned", device=gpu, **kw)
        c = segment_contours(img, merge="learned", device="cpu", **kw)
        np.testing.assert_array_equal(g.clusters, c.clusters, err_msg=name)
        np.testing.assert_array_equal(g.labels, c.labels, err_msg=name)
        assert g.n_regions == c.n_regions and g.info["merge_rounds"] == c.info["merge_rounds"], name
        assert g.syncs == 2, g.info["sync_reasons"]
        if kw.get("n_segments"):
            assert g.n_regions == kw["n_segments"]
        np.testing.assert_array_equal(g.features["area"], c.features["area"])


def test_every_kernel_and_setting_the_same_merge(gpu):
    """Session 12's one-block kernel (regions in shared memory or not) and session 13's grid kernel (512
    or 1024 threads a block) give the CPU merge, with and without a target count."""
    from test_quality12_learned import KERNEL_SETTINGS, merge_with

    img = shaded_regions(1212, 300, 400, 8)[0]
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, device="cpu")
    g = C.region_graph_np(sp["comps"], sp["R"], col["gq"], col["q"], boundary=True)
    g.update(LM.graph_extras_np(sp["comps"], sp["R"], col["gq"], col["q"], g))
    h, w = img.shape[:2]
    inv = 1 / math.sqrt(h * w)
    xp = gpu.xp
    for target, ma in ((0, C.min_region_area(sp["S"])), (7, 0)):
        want, _ = C._resolve(LM.merge_learned_np(g, target, 0.39, inv, min_area=ma)[0])
        for kernel, setting in KERNEL_SETTINGS:
            into, state = merge_with(gpu, kernel, setting, xp.asarray(sp["comps"].ravel().astype(np.int32)), sp["R"],
                                     h, w, xp.asarray(col["gq"].ravel()), xp.asarray(col["q"].reshape(3, -1).ravel()),
                                     target, 0.39, inv, min_area=ma)
            got, n = C._resolve(xp.asnumpy(into).astype(np.int64))
            np.testing.assert_array_equal(got, want, err_msg=f"{target} {kernel} {setting}")
            assert int(xp.asnumpy(state)[0]) == n


@pytest.mark.parametrize("nlab, bit", [(12, 2), (40, 1)])
def test_labels_beyond_the_graphs_bounds_are_a_clear_error_on_the_gpu(gpu, nlab, bit):
    """As the emulator test: the grid kernel on many blocks reports an overflow instead of corrupting
    memory or hanging."""
    rng = np.random.default_rng(1311 + nlab)
    h, w = 48, 64
    labels = rng.integers(1, nlab + 1, size=(h, w)).astype(np.int32)
    q = rng.integers(0, 1000, size=(3, h * w)).astype(np.int32)
    gq = rng.integers(0, 50, size=h * w).astype(np.int32)
    xp = gpu.xp
    into, state = LM.merge_device(gpu, xp.asarray(labels.ravel()), nlab, h, w, xp.asarray(gq), xp.asarray(q.ravel()),
                                  0, 0.39, 1 / math.sqrt(h * w), kernel="grid")
    st = xp.asnumpy(state)
    assert st[3] & bit
    with pytest.raises(ValueError, match="overflowed"):
        C.check_merge_state(st, 3)


def test_the_tools_live_edits_with_the_learned_merge(gpu):
    """The window's way on a GPU: a full run, then a coarseness edit and an n_segments edit re-run only
    the merge and regions stages; each result is segment_contours' (the GPU labels = the CPU's above)."""
    from app.tools import imseg
    from app.tools.stages import StageCache

    img = shaded_regions(1213, 240, 320, 7)[0]
    data = imseg.ImageData(None, img)
    cache = StageCache(cap_bytes=1 << 30)
    for i, change in enumerate(({}, {"coarseness": 5.0}, {"n_segments": 9}, {"merge": "contour"})):
        p = imseg.PARAMS.validate({"merge": "learned", **change})
        r, rep = imseg.PIPELINE.execute(data, p, device=gpu, cache=cache, scope="l12gpu")
        assert rep.ran == (["colour", "superpixels", "merge", "regions"] if i == 0 else ["merge", "regions"])
        kw = {k: p[k] for k in ("merge", "coarseness", "n_segments")}
        np.testing.assert_array_equal(r.seg.labels, segment_contours(img, device=gpu, **kw).labels, err_msg=str(change))
