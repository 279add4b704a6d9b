"""Session 10 (issue 21, 4K speed): on the path that reads the region count first (images over
``segment.UNREAD_COUNT_MAX_PIXELS``, e.g. 4K), the k-means clusters and then the merged labels are
copied to the host on a side stream while the device goes on (``_util.EarlyDownload``); the final
read brings only the centres and the features. The same results; a cancel or an error waits for
the copies already started before their memory goes back. And features_method "auto" takes the
sorted method above ``features.SORT_ABOVE_PIXELS`` (the same features). Emulated CUDA (where the
copies are made at the end, as before) and ``pytest -m gpu``."""

from __future__ import annotations

import numpy as np
import pytest
from cuda_emu import available, emu_backend
from test_imseg_session6 import _natural, _same

from gpu_kernels.imseg import _util as U
from gpu_kernels.imseg import features as F
from gpu_kernels.imseg import segment as SG
from gpu_kernels.jobs import Cancelled, Progress

needs_emu = pytest.mark.skipif(bool(available()), reason=f"CUDA emulator unavailable: {available()}")


def _cancel_at(stage: str) -> Progress:
    """A Progress whose run is cancelled when it reports ``stage``."""
    holder = {}

    def cb(_fraction, text):
        if stage in (text or ""):
            holder["p"].cancel()

    holder["p"] = p = Progress(cb, min_interval=0.0)
    return p


def _spy_downloads(monkeypatch) -> list:
    seen: list = []
    real = U.download

    def spy(be, arrays):
        seen.append(sorted(arrays))
        return real(be, arrays)

    monkeypatch.setattr(U, "download", spy)
    return seen


@needs_emu
@pytest.mark.parametrize("early", [False, True])
def test_emulated_count_first_path_equals_the_cpu(early, monkeypatch):
    """The count-first path (UNREAD_COUNT_MAX_PIXELS 0) with the early copies on or off (off a
    CuPy device they are made at the end): the CPU path's labels and clusters."""
    monkeypatch.setattr(SG, "UNREAD_COUNT_MAX_PIXELS", 0)
    monkeypatch.setattr(U, "EARLY_DOWNLOAD", early)
    img = _natural(40, 56)
    gpu = SG.segment_image(img, device=emu_backend(), min_size=16)
    cpu = SG.segment_image(img, device="cpu", min_size=16)
    np.testing.assert_array_equal(gpu.labels, cpu.labels)
    np.testing.assert_array_equal(gpu.clusters, cpu.clusters)
    assert gpu.n_regions == cpu.n_regions


@needs_emu
def test_emulated_cancel_after_the_merge_is_clean(monkeypatch):
    monkeypatch.setattr(SG, "UNREAD_COUNT_MAX_PIXELS", 0)
    img = _natural(40, 56)
    with pytest.raises(Cancelled):
        SG.segment_image(img, device=emu_backend(), min_size=16, progress=_cancel_at("merging small regions"))


def test_auto_features_method_by_image_size(monkeypatch):
    assert F.auto_method(512 * 512) == F.auto_method(1920 * 1080) == F.DEFAULT_METHOD == "runs"
    assert F.auto_method(3840 * 2160) == "sort"
    monkeypatch.setattr(F, "SORT_ABOVE_PIXELS", 0)
    assert F.auto_method(3840 * 2160) == "runs"


@needs_emu
def test_emulated_auto_features_above_the_size_are_sorted_and_the_same(monkeypatch):
    """Above SORT_ABOVE_PIXELS "auto" runs the sorted kernels (the run's params say so) and gives
    the raster method's features bit for bit (uint8 image: integer sums)."""
    be = emu_backend()
    img = _natural(40, 56)
    runs = SG.segment_image(img, device=be, min_size=16, features_method="runs")
    monkeypatch.setattr(F, "SORT_ABOVE_PIXELS", 1000)
    auto = SG.segment_image(img, device=be, min_size=16)
    assert (runs.info["params"]["features_method"], auto.info["params"]["features_method"]) == ("runs", "sort")
    _same(runs, auto)


@pytest.mark.gpu
def test_gpu_early_copies_leave_the_final_read_and_give_the_same_result(monkeypatch):
    """With EARLY_DOWNLOAD the last read brings neither the labels nor the clusters (they came
    on the side stream; fails on the code before session 10, whose one read brought them), and
    every output equals the one-read run's and the CPU's labels and clusters."""
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    monkeypatch.setattr(SG, "UNREAD_COUNT_MAX_PIXELS", 0)   # the 4K path at 384 x 512 (no graph)
    img = _natural(384, 512)
    seen = _spy_downloads(monkeypatch)
    monkeypatch.setattr(U, "EARLY_DOWNLOAD", False)
    one = SG.segment_image(img, device=be)
    assert seen and "__labels" in seen[-1] and "__clusters" in seen[-1]
    seen.clear()
    monkeypatch.setattr(U, "EARLY_DOWNLOAD", True)
    for _ in range(3):
        early = SG.segment_image(img, device=be)
        _same(one, early)
        assert not early.info.get("graph")
    assert seen and all("__labels" not in s and "__clusters" not in s for s in seen)
    cpu = SG.segment_image(img, device="cpu")
    np.testing.assert_array_equal(early.labels, cpu.labels)
    np.testing.assert_array_equal(early.clusters, cpu.clusters)


@pytest.mark.gpu
def test_gpu_cancel_after_the_early_copies_waits_for_them(monkeypatch):
    """A cancel reported with the merge (raised at the next report, after both early copies
    started): Cancelled, the copies waited for (abandon), and the next run gives the same result
    as an undisturbed one."""
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    monkeypatch.setattr(SG, "UNREAD_COUNT_MAX_PIXELS", 0)
    monkeypatch.setattr(U, "EARLY_DOWNLOAD", True)
    img = _natural(384, 512)
    ref = SG.segment_image(img, device=be)
    waited = []
    real = U.EarlyDownload.abandon

    def abandon(self):
        waited.append(len(self.parts))
        real(self)
        assert self.parts == []

    monkeypatch.setattr(U.EarlyDownload, "abandon", abandon)
    with pytest.raises(Cancelled):
        SG.segment_image(img, device=be, progress=_cancel_at("merging small regions"))
    assert waited == [2]
    _same(ref, SG.segment_image(img, device=be))


@pytest.mark.gpu
def test_gpu_4k_early_copies_equal_one_read(monkeypatch):
    """At 4K (the path the change is for): every output with the early copies and the sorted
    features ("auto" at 4K) equals the one read's with the raster features."""
    from gpu_kernels.backend import get_backend

    be = get_backend("cuda")
    rng = np.random.default_rng(10)
    img = np.clip(_natural(540, 960).repeat(4, 0).repeat(4, 1).astype(np.int16)
                  + rng.integers(-3, 4, size=(2160, 3840, 3)), 0, 255).astype(np.uint8)
    monkeypatch.setattr(U, "EARLY_DOWNLOAD", False)
    one = SG.segment_image(img, device=be, features_method="runs")
    monkeypatch.setattr(U, "EARLY_DOWNLOAD", True)
    auto = SG.segment_image(img, device=be)
    assert auto.info["params"]["features_method"] == "sort"
    _same(one, auto)
