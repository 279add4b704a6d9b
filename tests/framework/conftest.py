"""The fuzz harness's totals in the terminal summary and in a JSON file
(``$GPULAB_FUZZ_REPORT``, default ``<rootdir>/.pytest_cache/gpulab-fuzz-report.json``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import fuzz_report


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
