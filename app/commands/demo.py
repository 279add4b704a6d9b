"""``gpulab demo --out DIR``: run every tool headless on its bundled samples.

Writes ``DIR/device_report.txt`` and, per tool in :data:`app.tools.TOOLS`, its results and
a PNG picture of them under ``DIR/<tool key>/`` (each tool's ``demo`` function).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from gpu_kernels.jobs import Cancelled, Progress
from gpu_kernels.lazy import lazy_module

from ..errors import UserError, classify
from ..io.atomic import OutputPathError, atomic_write, check_output_dir, marker_names, write_output_marker
from ..tools import TOOLS
from .common import add_device_arg, cli_progress, end_progress_line, select_device

if TYPE_CHECKING:
    from gpu_kernels.backend import Backend

_backend = lazy_module("gpu_kernels.backend")  # NumPy on first use (start-up)

__all__ = ["register", "run", "run_demos"]

log = logging.getLogger(__name__)


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
                        help="run only the tools whose name contains NAME (repeatable): "
                             + ", ".join(t.name for t in TOOLS))
    parser.add_argument("--quiet", "-q", action="store_true", help="do not print progress")
    add_device_arg(parser)
    parser.set_defaults(func=run)


def run_demos(out_dir: Path, progress: Progress, *, device: Backend, only: list[str] | None = None,
              log_line: Callable[[str], None] = print) -> tuple[list[Path], list[str]]:
    """Write the device report and run each tool's demo on ``device``.
    Returns ``(written, failures)``; one failing demo does not stop the others."""
    out_dir = Path(out_dir)
    try:  # a new, empty or earlier demo folder: never a folder of the user's files
        check_output_dir(out_dir, option="--out")
    except OutputPathError as exc:
        raise UserError(exc.user_message) from None
    tools = [t for t in TOOLS if t.demo is not None and (not only or any(o in t.name for o in only))]
    created = not out_dir.exists()
    written: list[Path] = []
    report = out_dir / "device_report.txt"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        write_output_marker(out_dir, (marker_names(out_dir) or set()) | {"device_report.txt"}
                            | {t.key for t in tools})
        with atomic_write(report, "w") as f:
            f.write(_backend.device_report(device) + "\n")
    except BaseException:
        if created:   # made by this run and holding nothing yet (a full disk): leave nothing behind
            shutil.rmtree(out_dir, ignore_errors=True)
        raise
    written.append(report)
    log_line(f"wrote {report}")
    failures: list[str] = []
    n = max(len(tools), 1)
    for i, tool in enumerate(tools):
        sub = progress.sub(i / n, (i + 1) / n, prefix=tool.name)
        t0 = time.perf_counter()
        try:
            paths = tool.demo(out_dir / tool.key, device=device, progress=sub) or []
        except Cancelled:
            raise
        except Exception as exc:  # keep going: one broken demo must not hide the others
            end_progress_line()
            kind, msg = classify(exc, f"the {tool.name} demo")
            failures.append(f"{tool.name}: {msg}")
            if kind == "bug":
                log.exception("demo %s failed", tool.name)
            log_line(f"FAILED {tool.name}: {msg}")
            continue
        end_progress_line()
        for p in paths:
            written.append(Path(p))
            log_line(f"wrote {p}")
        log_line(f"{tool.name}: {len(paths)} file(s) in {time.perf_counter() - t0:.1f} s")
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
