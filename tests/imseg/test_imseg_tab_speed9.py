"""Session 9 (issue 21): the imseg tab's Stages panel gives each step the number the status
line gives it (the window's stages), names the segmentation's own steps as what those stages
spent computing, and names the rest of a first run's time as the libraries' first use."""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("PySide6")

from app.tabs.imseg_tab import ImsegTab  # noqa: E402
from app.tools import imseg  # noqa: E402
from app.tools.stages import StageCache, fmt_seconds  # noqa: E402

pytestmark = pytest.mark.gui


def _run(method, **kw):
    from gpu_kernels.backend import get_backend

    img = np.zeros((48, 64, 3), np.uint8)
    img[:, 32:] = 200
    cache = StageCache()
    p = imseg.PARAMS.validate({"method": method, **kw})
    res, rep = imseg.TOOL.run_staged(imseg.ImageData(None, img), p, device=get_backend("cpu"), cache=cache)
    return res, rep, cache, p, img


@pytest.mark.parametrize("method", ["contours", "kmeans"])
def test_panel_rows_are_the_status_lines_stages_with_its_numbers(method):
    res, rep, *_ = _run(method)
    text = ImsegTab._timings_text(res, rep, first_run=False)
    status = rep.describe()     # what the status line shows after "—"
    for name in rep.ran:
        label, sec = rep.labels.get(name, name), fmt_seconds(rep.seconds[name])
        assert f"{label} {sec}" in status
        assert f"<td>{label}</td><td align='right'>{sec}</td>" in text, (label, sec)
    for k, v in imseg.stage_times(res):   # the library's own steps, named as what the stages computed
        assert f"{k} {fmt_seconds(v)}" in text
    assert "of which the steps:" in text and "first use" not in text


def test_first_run_names_the_first_use_cost(monkeypatch):
    res, rep, *_ = _run("contours")
    first = rep.ran[0]
    rep.seconds[first] += 0.35   # as a first run's imports add to its first stage
    text = ImsegTab._timings_text(res, rep, first_run=True)
    gap = sum(rep.seconds[n] for n in rep.ran) - sum(v for _, v in imseg.stage_times(res))
    assert f"first use (loading the libraries) {fmt_seconds(gap)}" in text
    later = ImsegTab._timings_text(res, rep, first_run=False)
    assert "first use" not in later and f"around the steps {fmt_seconds(gap)}" in later


def test_live_rerun_marks_the_cached_stages_with_their_own_times():
    from gpu_kernels.backend import get_backend

    res0, rep0, cache, p, img = _run("contours")
    res, rep = imseg.TOOL.run_staged(imseg.ImageData(None, img), {**p, "coarseness": 2.5},
                                     device=get_backend("cpu"), cache=cache)
    assert rep.reused
    text = ImsegTab._timings_text(res, rep)
    for name in rep.reused:
        label = rep.labels.get(name, name)
        assert re.search(rf"{re.escape(label)} \(cached\)</td><td[^>]*>{fmt_seconds(rep.cached_seconds[name])}<", text)
    assert "total, this run" in text and "re-used from the cache" in text and "first use" not in text
