"""Session 9, reviewer B: the imseg Stages panel's first-run label (7f0a7ac) seen from the tab."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pytestqt")

from _gui_helpers import loaded_tab  # noqa: E402

pytestmark = pytest.mark.gui

IMSEG_SAMPLE = Path(__file__).resolve().parents[2] / "resources" / "samples" / "imseg" / "coffee.jpg"


def test_the_first_runs_stages_panel_stays_the_first_runs_when_shown_again(qtbot, open_tab, tab_runner,
                                                                          monkeypatch):
    """The imseg Stages panel names the rest of the tab's first run 'first use (loading the
    libraries)'. Showing that same run again (a display-only change, a pin, which redraw the live
    result) must not turn it into a later run's 'around the steps'; the next run is a later run."""
    from app.tabs.imseg_tab import ImsegTab

    seen = []
    orig = ImsegTab._timings_text

    def spy(result, report=None, first_run=False):
        seen.append((report, first_run))
        return orig(result, report, first_run=first_run)

    monkeypatch.setattr(ImsegTab, "_timings_text", staticmethod(spy))
    tab = loaded_tab(open_tab, tab_runner, ImsegTab, IMSEG_SAMPLE, (1300, 800))
    assert tab_runner.run(tab, method="contours") is not None
    first = tab.last_report
    assert seen[-1] == (first, True)
    text = tab.timings.text()
    seen.clear()
    tab._redisplay({**tab._shown_params, "picture_style": "regions"}, ["picture_style"])
    assert tab.pin()
    assert seen and all(r is first and f for r, f in seen), seen
    assert tab.timings.text() == text
    seen.clear()
    assert tab_runner.run(tab, method="contours", coarseness=2.5) is not None
    assert tab.last_report is not first and seen[-1][1] is False


def test_the_first_run_on_another_device_is_a_first_run_there(qtbot, open_tab, tab_runner, monkeypatch):
    """The first run on a GPU pays CuPy's start and the kernels' compiling even after CPU runs:
    its panel names that first use too (and says it compiled); a second run there does not."""
    import dataclasses

    from app.tabs.imseg_tab import ImsegTab

    seen = []
    orig = ImsegTab._timings_text

    def spy(result, report=None, first_run=False):
        seen.append(first_run)
        return orig(result, report, first_run=first_run)

    monkeypatch.setattr(ImsegTab, "_timings_text", staticmethod(spy))
    tab = loaded_tab(open_tab, tab_runner, ImsegTab, IMSEG_SAMPLE, (1300, 800))
    assert tab_runner.run(tab, method="contours") is not None
    assert tab_runner.run(tab, method="contours", coarseness=2.5) is not None
    assert seen[0] is True and seen[-1] is False
    report = tab.last_report

    def shown_on(device):        # a run of the window on ``device`` (the report of a fresh full run)
        rep = dataclasses.replace(report, ran=list(report.ran) + list(report.reused), reused=[], first_run=0)
        res = dataclasses.replace(tab.result, device=device)
        tab.result, tab.last_report = res, rep
        seen.clear()
        tab.show_result(res)
        return seen[-1]

    assert shown_on("cuda:0") is True
    assert shown_on("cuda:0") is False
    rep = dataclasses.replace(report, ran=list(report.ran) + list(report.reused), reused=[], first_run=0)
    # the stages' seconds set so that 0.4 s is left beyond the library's steps, whatever the host's load made the
    # steps and stages of the runs above take (their own times are not comparable: some stages of the second run
    # came from the cache, so their steps were timed in the first)
    from app.tools import imseg

    steps = sum(v for _, v in imseg.stage_times(tab.result))
    rep.seconds = {**{n: 0.0 for n in rep.ran}, rep.ran[0]: steps + 0.4}
    assert "first use" not in orig(dataclasses.replace(tab.result, device="cuda:0"), rep, first_run=False)
    text = orig(dataclasses.replace(tab.result, device="cuda:0"), rep, first_run=True)
    assert "first use (loading the libraries, compiling the kernels)" in text
