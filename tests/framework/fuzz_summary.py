"""The fuzz harness's totals in the terminal summary and in a JSON file
(``$GPULAB_FUZZ_REPORT``, default ``<rootdir>/.pytest_cache/gpulab-fuzz-report.json``).

A pytest plugin, registered by ``tests/conftest.py`` in every process of a run. Under pytest-xdist the
cases are recorded in the worker processes (``fuzz_report.CASES`` of each): each worker hands its cases
to the controller when it ends (``config.workeroutput``), and the controller, which runs no test,
prints and writes the totals of all of them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import fuzz_report
import pytest

_KEY = "gpulab_fuzz_report"


def pytest_sessionfinish(session):
    out = getattr(session.config, "workeroutput", None)   # set in an xdist worker only
    if out is not None:
        out[_KEY] = json.dumps({"cases": fuzz_report.CASES, "skipped": fuzz_report.SKIPPED})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    data = getattr(node, "workeroutput", {}).get(_KEY)
    if data:
        d = json.loads(data)
        fuzz_report.CASES.extend(d["cases"])
        fuzz_report.SKIPPED.extend(s for s in d["skipped"] if s not in fuzz_report.SKIPPED)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not fuzz_report.CASES:
        return
    t = fuzz_report.totals()
    tr = terminalreporter
    tr.write_sep("=", "gpulab fuzz harness")
    tr.write_line(f"cases {t['cases']} ({', '.join(f'{k}: {v}' for k, v in t['by suite'].items())}): "
                  f"ok {t['ok']}, clear errors {t['clear errors']}, cancelled {t['cancelled']}, "
                  f"tracebacks {t['tracebacks']}, hangs {t['hangs']}, crashes {t['crashes']}, "
                  f"other failures {t['other failures']}, data loss {t['data loss']}; "
                  f"not as expected {t['unexpected']}")
    for s in t["skipped"]:
        tr.write_line(f"  skipped: {s}")
    path = Path(os.environ.get("GPULAB_FUZZ_REPORT") or Path(str(config.rootpath)) / ".pytest_cache"
                / "gpulab-fuzz-report.json")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"totals": t, "cases": fuzz_report.CASES}, indent=1))
        tr.write_line(f"  report: {path}")
    except OSError as exc:
        tr.write_line(f"  report not written ({exc})")
