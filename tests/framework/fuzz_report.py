"""Totals of the fuzz harness (readers and commands), for the pytest terminal summary and a
JSON report (``tests/framework/conftest.py`` prints and writes them)."""

from __future__ import annotations

from collections import Counter

#: one entry per case: {"suite", "command", "family", "outcome", "expect", "data_loss", "passed"}
CASES: list[dict] = []
#: families or commands not run here, with the reason
SKIPPED: list[str] = []

#: outcome -> the column of the totals it counts in
COLUMNS = {"ok": "ok", "clear": "clear errors", "input_error": "clear errors", "cancelled": "cancelled",
           "items": "clear errors", "traceback": "tracebacks", "other": "tracebacks", "hang": "hangs",
           "timeout": "hangs", "crash": "crashes"}


def record(suite: str, command: str, family: str, outcome: str, expect: str, data_loss=(), passed=True,
           message: str = "") -> None:
    CASES.append({"suite": suite, "command": command, "family": family, "outcome": outcome, "expect": expect,
                  "data_loss": list(data_loss), "passed": bool(passed), "message": message.strip()[-300:]})


def totals() -> dict:
    cols = Counter(COLUMNS.get(c["outcome"], "other failures") for c in CASES)
    return {
        "cases": len(CASES),
        "ok": cols["ok"],
        "clear errors": cols["clear errors"],
        "cancelled": cols["cancelled"],
        "tracebacks": cols["tracebacks"],
        "hangs": cols["hangs"],
        "crashes": cols["crashes"],
        "other failures": cols["other failures"],
        "data loss": sum(1 for c in CASES if c["data_loss"]),
        "unexpected": sum(1 for c in CASES if not c["passed"]),
        "by suite": dict(Counter(c["suite"] for c in CASES)),
        "skipped": list(SKIPPED),
    }
