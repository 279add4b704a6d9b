"""L15 (session 7): the CPU path of a large image reports progress and stops soon after Cancel
in its long steps (CIELAB, the blur, the gradient, SLIC's passes, the region features), and
the tool warns before a large image runs on the CPU. The long steps run in row bands
(``_util.CPU_BAND_PIXELS``), made small here so that small images have several bands; the
banded steps give the same values bit for bit (checked against whole-image references)."""

from __future__ import annotations

import numpy as np
import pytest
from imseg_masks import piecewise_image

from app.cli import main
from app.tools import imseg
from app.tools import imseg_report as R
from gpu_kernels.backend import get_backend
from gpu_kernels.imseg import _util as U
from gpu_kernels.imseg import color as L
from gpu_kernels.imseg import contours as C
from gpu_kernels.imseg import features as F
from gpu_kernels.imseg.segment import stage_lab
from gpu_kernels.jobs import Cancelled, Progress


@pytest.fixture
def small_bands(monkeypatch):
    monkeypatch.setattr(U, "CPU_BAND_PIXELS", 600)


def _image(h=48, w=64):
    img, _ = piecewise_image(np.random.default_rng(5), h, w, noise=6.0, shading=True)
    return img


def _recording():
    texts: list[str] = []
    return Progress(lambda f, s: texts.append(s), min_interval=0.0), texts


def test_colour_step_reports_each_part_in_bands(small_bands):
    prog, texts = _recording()
    C.stage_colour(_image(), device="cpu", progress=prog)
    for part in ("CIELAB", "blur", "gradient"):
        assert sum(part in t for t in texts) >= 3, (part, texts)


def test_cancel_during_cielab_stops_before_the_blur(small_bands, monkeypatch):
    blurred = []
    monkeypatch.setattr(C, "blur_np", lambda *a, **k: blurred.append(1))
    prog = Progress(lambda f, s: prog.cancel() if "CIELAB" in s else None)
    with pytest.raises(Cancelled):
        C.stage_colour(_image(), device="cpu", progress=prog)
    assert not blurred


def test_tool_colour_stage_hears_cancel(small_bands):
    """Through the tool's staged pipeline (what the window and CLI run on the CPU)."""
    prog = Progress(lambda f, s: prog.cancel() if "CIELAB" in (s or "") else None)
    with pytest.raises(Cancelled):
        imseg.run(imseg.ImageData(None, _image()), {}, device=get_backend("cpu"), progress=prog)


class _Counting(Progress):
    checks = 0

    def check(self):
        type(self).checks += 1
        super().check()


def test_slic_checks_for_cancel_within_each_iteration():
    img = _image()
    sm = C.blur_np(C.lab_planes_np(C.to_u8(img)), C.DEFAULT_SIGMA)
    _, _, q = C.gradient_np(sm)
    _Counting.checks = 0
    C.slic_np(sm, q, 8, C.DEFAULT_COMPACTNESS, 3, _Counting())
    assert _Counting.checks >= 9 * 4  # nine passes an iteration, four assignments


def test_features_report_and_cancel():
    img = _image()
    labels = (np.arange(48 * 64).reshape(48, 64) // 97 + 1).astype(np.int32)
    prog, texts = _recording()
    ref = F.features_np(labels, int(labels.max()), img, moments=True)
    got = F.features_np(labels, int(labels.max()), img, moments=True, progress=prog)
    assert any("central moments" in t for t in texts) and any("mean colours" in t for t in texts)
    for k in ref:
        np.testing.assert_array_equal(ref[k], got[k])
    stop = Progress(lambda f, s: stop.cancel() if "centroids" in s else None)
    with pytest.raises(Cancelled):
        F.features_np(labels, int(labels.max()), img, moments=True, progress=stop)


def test_kmeans_cpu_cielab_hears_cancel(small_bands):
    prog = Progress(lambda f, s: prog.cancel() if "CIELAB" in (s or "") else None)
    with pytest.raises(Cancelled):
        stage_lab(_image(), device="cpu", progress=prog)


@pytest.mark.parametrize("band", [600, 1 << 20])
def test_banded_steps_equal_whole_image_formulas(band, monkeypatch):
    """The bands change where the loop stops, not the arithmetic: the same float32 values as
    the whole-image formulas (written out here as the code before session 7 had them)."""
    monkeypatch.setattr(U, "CPU_BAND_PIXELS", band)
    img = _image(37, 53)
    u8 = C.to_u8(img)
    lab = C.lab_planes_np(u8)
    np.testing.assert_array_equal(lab, C._lab_planes_rows(u8))
    sigma = 1.3
    wts = C.gauss_weights(sigma)
    r = len(wts) // 2
    _, h, w = lab.shape
    xi, yi = np.arange(w), np.arange(h)
    ref = np.empty_like(lab)
    for c in range(3):
        acc = np.zeros_like(lab[c])
        for k in range(len(wts)):
            acc = acc + wts[k] * lab[c][:, np.clip(xi + k - r, 0, w - 1)]
        acc2 = np.zeros_like(acc)
        for k in range(len(wts)):
            acc2 = acc2 + wts[k] * acc[np.clip(yi + k - r, 0, h - 1), :]
        ref[c] = acc2
    sm = C.blur_np(lab, sigma)
    np.testing.assert_array_equal(sm, ref)
    xp, xm = np.minimum(xi + 1, w - 1), np.maximum(xi - 1, 0)
    yp, ym = np.minimum(yi + 1, h - 1), np.maximum(yi - 1, 0)
    g = np.zeros((h, w), np.float32)
    for c in range(3):
        gx = sm[c][:, xp] - sm[c][:, xm]
        gy = sm[c][yp, :] - sm[c][ym, :]
        g = g + (gx * gx + gy * gy)
    G, gq, q = C.gradient_np(sm)
    np.testing.assert_array_equal(G, np.sqrt(g))
    np.testing.assert_array_equal(gq, np.minimum(np.rint(np.sqrt(g) * np.float32(C.GSCALE)),
                                                 np.float32(C.GMAX)).astype(np.int32))
    np.testing.assert_array_equal(q, np.rint(sm * np.float32(16.0)).astype(np.int32))
    np.testing.assert_array_equal(L.lab_np(img), L._lab_rows(img))


# ----------------------------------------------------------------------------- size advice
class _Data:
    def __init__(self, h, w):
        self.shape = (h, w)


def test_advice_for_a_large_image_on_the_cpu_only():
    cpu = get_backend("cpu")

    class Gpu:
        is_gpu = True

    big = _Data(7000, 9000)
    adv = R.advise(big, {}, cpu)
    assert adv is not None and "63 Mpx" in adv.user_message and "GPU" in adv.user_message
    assert "\n" not in adv.user_message and "minutes" in adv.user_message
    assert R.advise(big, {}, Gpu()) is None
    assert R.advise(_Data(1000, 1000), {}, cpu) is None
    assert imseg.TOOL.advise is R.advise


def test_cli_prints_the_advice_as_a_note(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(R, "CPU_COMFORT_PIXELS", 1000)
    rc = main(["imseg", str(imseg.samples()[0]), "-o", str(tmp_path / "l.png"), "--device", "cpu"])
    err = capsys.readouterr().err
    assert rc == 0 and "note:" in err and "on the CPU take about" in err
