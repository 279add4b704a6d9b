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


@pytest.mark.parametrize(("method", "kw", "edit", "cached_step"), [
    ("contours", {}, {"coarseness": 2.5}, "CIELAB + gradient"),
    ("kmeans", {"bilateral": 1}, {"min_size": 300}, "bilateral"),
])
def test_live_rerun_marks_the_cached_stages_and_lists_only_this_runs_steps(method, kw, edit, cached_step):
    """A live re-run (session 9, the lead after reviewer B): a cached stage's row says "cached"
    (no time of an earlier run, which on a first run carried the first use: the rows add up to this
    run's total), and "of which the steps" lists only the library steps of the stages that ran."""
    from gpu_kernels.backend import get_backend

    res0, rep0, cache, p, img = _run(method, **kw)
    res, rep = imseg.TOOL.run_staged(imseg.ImageData(None, img), {**p, **edit},
                                     device=get_backend("cpu"), cache=cache)
    assert rep.reused and rep.ran
    text = ImsegTab._timings_text(res, rep)
    for name in rep.reused:
        label = rep.labels.get(name, name)
        assert re.search(rf"{re.escape(label)}</td><td[^>]*>cached</td>", text), (label, text)
        assert fmt_seconds(rep.cached_seconds[name]) not in text.split(label)[1].split("</tr>")[0]
    for name in rep.ran:
        label, sec = rep.labels.get(name, name), fmt_seconds(rep.seconds[name])
        assert f"<td>{label}</td><td align='right'>{sec}</td>" in text
    inside = text.split("of which the steps:")[1].split("</span>")[0]
    ran_steps = [k for k, _ in imseg.stage_times(res) if k in inside]
    assert ran_steps, inside
    assert cached_step in dict(imseg.stage_times(res))     # the library still times the cached stage's step
    assert cached_step not in inside, inside               # but it is not this run's
    assert "total, this run" in text and "first use" not in text
