"""What a staged run did (:class:`RunReport`), and the time texts the tabs and reports show (Qt-free).

Split from :mod:`app.tools.stages`, which re-exports every name here.

Example
-------
>>> from app.tools.run_report import RunReport, fmt_seconds, took_text
>>> fmt_seconds(0.85), fmt_seconds(2.312)
('850 ms', '2.31 s')
>>> r = RunReport(ran=["merge"], reused=["blur"], seconds={"merge": 0.012}, first_run=1, n_stages=2)
>>> r.describe()
're-ran from stage 2 of 2 (merge): merge 12 ms'
>>> took_text(RunReport(), 0.85)
'shown from the cache (computed in 850 ms)'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RunReport", "fmt_seconds", "took_text", "reused_note"]


@dataclass
class RunReport:
    """What a run did: the stages it ran and re-used, in order, with their times."""

    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    cached_seconds: dict[str, float] = field(default_factory=dict)   # re-used stages' own times
    labels: dict[str, str] = field(default_factory=dict)
    first_run: int | None = None      # index (0-based) of the first stage that ran
    total: float = 0.0
    n_stages: int = 0

    @property
    def full(self) -> bool:
        return self.first_run == 0

    def describe(self) -> str:
        """One line for the status bar."""
        if not self.ran:
            return "computed earlier: all stages re-used from the cache"
        first = self.ran[0]
        done = ", ".join(f"{self.labels.get(s, s)} {fmt_seconds(self.seconds.get(s, 0.0))}" for s in self.ran)
        if self.first_run == 0:
            return f"full run: {done}"
        return f"re-ran from stage {self.first_run + 1} of {self.n_stages} ({self.labels.get(first, first)}): {done}"


def fmt_seconds(t) -> str:
    """``850 ms`` below a second, ``2.31 s`` above."""
    try:
        t = float(t)
    except (TypeError, ValueError):
        return str(t)
    return f"{t * 1000:.0f} ms" if t < 1.0 else f"{t:.2f} s"


def took_text(report: RunReport | None, elapsed: float, *, prefix: str = "in ") -> str:
    """How long a shown result took, for the tabs' panels: ``in 850 ms``, or for a result
    shown again from the stage cache (Undo, History) ``shown from the cache (computed in 850
    ms)``, never "in 0 ms"."""
    if report is not None and not report.ran:
        return f"shown from the cache (computed in {fmt_seconds(elapsed)})"
    return f"{prefix}{fmt_seconds(elapsed)}"


def reused_note(report: RunReport | None) -> str:
    """For a live re-run, which stages came from the cache (their times in a panel are those
    of the run that made them); "" otherwise."""
    if report is None or not report.reused:
        return ""
    names = ", ".join(report.labels.get(n, n) for n in report.reused)
    return f"re-used from the cache: {names} (their times are from the run that made them)"
