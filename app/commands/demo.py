"""``gpulab demo --out DIR``: run every tool's pipeline headless on the bundled samples.

Writes ``DIR/device_report.txt`` and, for every demo in :data:`DEMOS`, its results and a
PNG picture of them. Each tool's command module contributes one function::

    def demo(out_dir: pathlib.Path, progress: gpu_kernels.jobs.Progress) -> list[pathlib.Path]:
        '''Run on the bundled sample(s); write results + a PNG into out_dir; return the paths.'''

and names it here as ``"module:function"``. A module that does not exist yet is skipped.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

from gpu_kernels.backend import device_report
from gpu_kernels.jobs import Cancelled, Progress

from ..errors import UserError, is_user_error, user_message
from ..io.atomic import atomic_write
from . import import_optional
from .common import add_device_arg, cli_progress, end_progress_line, select_device

__all__ = ["DEMOS", "register", "run", "resolve_demos", "run_demos"]

log = logging.getLogger(__name__)

#: ``"module:function"`` of every demo, in tab order.
DEMOS: list[str] = [
    "app.commands.mesh_seg:demo",
]

DemoFn = Callable[[Path, Progress], list[Path]]


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run every tool headless on the bundled samples and write the results",
        description=(
            "Run every tool's pipeline on the bundled samples. Writes the device report "
            "(device_report.txt) and each tool's results plus a PNG picture of them to DIR."
        ),
    )
    parser.add_argument("--out", "-o", metavar="DIR", type=Path, default=Path("demo-out"),
                        help="output folder, created if missing (default: ./demo-out)")
    parser.add_argument("--only", metavar="NAME", action="append", default=None,
                        help="run only demos whose name contains NAME (repeatable)")
    parser.add_argument("--quiet", "-q", action="store_true", help="do not print progress")
    add_device_arg(parser)
    parser.set_defaults(func=run)


def resolve_demos(names: list[str] | None = None) -> tuple[list[tuple[str, DemoFn]], list[str]]:
    """Import the demo functions. Returns ``(available, skipped)``."""
    available, skipped = [], []
    for spec in DEMOS if names is None else names:
        mod_name, _, fn_name = spec.partition(":")
        mod = import_optional(mod_name)
        fn = getattr(mod, fn_name or "demo", None) if mod is not None else None
        if fn is None:
            skipped.append(spec)
        else:
            available.append((spec, fn))
    return available, skipped


def run_demos(out_dir: Path, progress: Progress, *, only: list[str] | None = None,
              device=None, log_line: Callable[[str], None] = print) -> tuple[list[Path], list[str]]:
    """Write the device report and run the demos. Returns ``(written, failures)``."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out {out_dir}: a file has that name; give a folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    report = out_dir / "device_report.txt"
    with atomic_write(report, "w") as f:
        f.write(device_report(device) + "\n")
    written.append(report)
    log_line(f"wrote {report}")

    demos, skipped = resolve_demos()
    if only:
        demos = [(s, fn) for s, fn in demos if any(o in s for o in only)]
    for spec in skipped:
        log_line(f"skipped {spec}: not available yet")
    failures: list[str] = []
    n = max(len(demos), 1)
    for i, (spec, fn) in enumerate(demos):
        sub = progress.sub(i / n, (i + 1) / n, prefix=spec.split(":")[0].rsplit(".", 1)[-1])
        t0 = time.perf_counter()
        try:
            paths = fn(out_dir, sub) or []
        except Cancelled:
            raise
        except Exception as exc:  # keep going: one broken demo must not hide the others
            end_progress_line()
            msg = user_message(exc) if is_user_error(exc) else f"{type(exc).__name__}: {exc}"
            failures.append(f"{spec}: {msg}")
            log.exception("demo %s failed", spec)
            log_line(f"FAILED {spec}: {msg}")
            continue
        end_progress_line()
        for p in paths:
            written.append(Path(p))
            log_line(f"wrote {p}")
        log_line(f"{spec}: {len(paths)} file(s) in {time.perf_counter() - t0:.1f} s")
    return written, failures


def run(args: argparse.Namespace) -> int:
    be = select_device(args)
    progress = cli_progress(quiet=args.quiet)
    written, failures = run_demos(args.out, progress, only=args.only, device=be)
    end_progress_line()
    if failures:
        print(f"gpulab demo: {len(failures)} demo(s) failed:", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    print(f"gpulab demo: {len(written)} file(s) written to {args.out}")
    return 0
