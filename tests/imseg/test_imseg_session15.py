"""Session 15 (imseg-gpu3): the segmentation's info says where the learned merge kept its regions, after any
fallback of the grid kernel (it said False whenever the default kernel was the grid one, also when the merge had
fallen back to the one-block kernel with its regions in shared memory)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cuda_emu import available as emu_available
from cuda_emu import emu_backend

from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import learned as LM
from gpu_kernels.imseg.contours import segment_contours

needs_emu = pytest.mark.skipif(bool(emu_available()), reason="no C++ compiler for the kernel emulator")


def _image():
    from skimage import data, transform

    return (transform.resize(data.astronaut(), (40, 56), anti_aliasing=True) * 255).astype(np.uint8)


@needs_emu
def test_the_info_says_where_the_learned_merge_kept_its_regions(monkeypatch):
    img = _image()
    want = segment_contours(img, merge="learned", device="cpu", n_superpixels=50)
    be = emu_backend()
    grid = segment_contours(img, merge="learned", device=be, n_superpixels=50)
    assert grid.info["merge_in_shared_memory"] is False   # the grid kernel: every array in global memory

    class CUDADriverError(RuntimeError):
        pass

    def refuse(*a, **kw):
        raise CUDADriverError("CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: too many blocks in cooperative launch")

    monkeypatch.setattr(LM, "_merge_grid", refuse)
    fell = segment_contours(img, merge="learned", device=be, n_superpixels=50)
    assert fell.info["merge_in_shared_memory"] == "regions"   # the one-block kernel, its regions in shared memory
    monkeypatch.setattr(LM, "uses_region_smem", lambda be, R: False)
    big = segment_contours(img, merge="learned", device=be, n_superpixels=50)
    assert big.info["merge_in_shared_memory"] is False        # ... where they do not fit: in global memory
    for seg in (grid, fell, big):
        np.testing.assert_array_equal(seg.labels, want.labels)


@needs_emu
@pytest.mark.parametrize("kernel, smem, want", [("grid", None, ("grid", False)), ("block", None, ("block", "regions")),
                                                ("block", False, ("block", False))])
def test_merge_device_reports_the_kernel_that_ran(kernel, smem, want):
    img = _image()
    col = C.stage_colour(img, device="cpu")
    sp = C.stage_superpixels(col, n_superpixels=50, device="cpu")
    h, w = img.shape[:2]
    be = emu_backend()
    xp = be.xp
    info: dict = {}
    into, state = LM.merge_device(be, xp.asarray(sp["comps"].ravel().astype(np.int32)), sp["R"], h, w,
                                  xp.asarray(col["gq"].ravel()), xp.asarray(col["q"].reshape(3, -1).ravel()), 0,
                                  0.39, 1 / math.sqrt(h * w), kernel=kernel, smem=smem, info=info)
    assert (info["kernel"], info["smem"]) == want and int(state.get()[3]) == 0
