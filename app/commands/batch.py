"""``gpulab batch TASK INPUT... --out DIR``: a tool over many inputs on Dask (see :mod:`app.batch`).

Each TASK takes the same parameter flags and ``--params`` preset as its single-item command.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from .. import batch as _batch
from ..tools import TOOLS
from .common import _terminal_width

__all__ = ["register", "run"]


def _count(least: int):
    """An argparse type: a whole number of at least ``least`` (``--workers 0`` and
    ``--retries -1`` were accepted)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if n < least:
            raise argparse.ArgumentTypeError(f"must be {least} or more, got {n}")
        return n

    parse.__name__ = "count"
    return parse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "batch", help="run a tool over many inputs, on every GPU or CPU core (Dask), or on a cluster",
        description=("Run TASK over every item of the INPUTs (files or folders): mesh files for "
                     "mesh-seg, consecutive frame pairs for flow, consecutive volume pairs for echo, "
                     "reference views for mvs, images for imseg. Each item is processed as the "
                     "single-item command would, with the same parameters; outputs and "
                     "manifest.jsonl go to DIR. Running it again skips finished items."),
        epilog="example: gpulab batch imseg photos/ --out seg/ --params preset.json --gpus all")
    sub = p.add_subparsers(dest="task", metavar="TASK", title="tasks", required=True)
    for tool in TOOLS:
        tp = sub.add_parser(tool.name, help=tool.description,
                            description=f"{tool.description} Batch over many inputs.")
        tp.add_argument("inputs", nargs="+", metavar="INPUT", type=pathlib.Path,
                        help=f"{tool.input_kind.lower()} or folders of them")
        tp.add_argument("--out", "-o", metavar="DIR", type=pathlib.Path, required=True,
                        help="output folder (created); gets the results and manifest.jsonl")
        tp.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="an existing Dask scheduler (tcp://host:port); default: a local cluster")
        tp.add_argument("--workers", type=_count(1), default=None, metavar="N",
                        help="CPU worker processes of the local cluster (default: one per core)")
        tp.add_argument("--gpus", default="all", metavar="all|N|none",
                        help="GPUs of the local cluster, one worker each (default: all; none: CPU workers)")
        tp.add_argument("--retries", type=_count(0), default=2, metavar="N",
                        help="reschedule an item whose worker died up to N times (default: 2)")
        tp.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
        tool.params.add_arguments(tp)
        tp.set_defaults(func=run, tool=tool)


class _Bar:
    """One progress line: items done/failed, items per second, time left, the dashboard."""

    def __init__(self, stream, total: int):
        self.stream, self.total = stream, total
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last = 0.0

    def start(self, s: _batch.BatchSummary, client=None) -> None:
        where = f"{s.workers} worker(s)" + (f"; dashboard {s.dashboard}" if s.dashboard else "")
        self.stream.write(f"gpulab batch: {self.total} item(s) on {where}\n")
        self.stream.flush()

    def __call__(self, s: _batch.BatchSummary, rec: dict) -> None:
        n = s.done + s.failed + s.skipped
        rate = s.items_per_second
        left = (self.total - n) / rate if rate > 0 else float("nan")
        width = 24
        fill = int(width * n / max(self.total, 1))
        eta = f"{left:.0f} s left" if left == left else "…"
        text = (f"[{'#' * fill}{'.' * (width - fill)}] {n}/{self.total}  done {s.done}, failed {s.failed}, "
                f"skipped {s.skipped}  {rate:.2f} items/s  {eta}")
        if rec.get("status") == "failed":
            self.stream.write(("\r" if self.tty else "") + f"failed {rec['key']}: {rec.get('error', '')}"[:300]
                              + " " * 10 + "\n")
        if self.tty:
            self.stream.write("\r" + text[:_terminal_width() - 1])
        elif time.monotonic() - self.last > 2 or n == self.total:
            self.stream.write(text + "\n")
            self.last = time.monotonic()
        self.stream.flush()

    def end(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def run(args: argparse.Namespace) -> int:
    tool = args.tool
    params = tool.params.from_args(args, tool=tool.name)
    todo, _skipped = _batch.plan(tool, args.inputs, args.out) if args.out.is_dir() else (tool.items(args.inputs), [])
    bar = None if args.quiet else _Bar(sys.stderr, len(todo) + len(_skipped))
    try:
        summary = _batch.run_batch(
            tool, args.inputs, args.out, params=params, scheduler=args.scheduler, workers=args.workers,
            gpus=args.gpus, retries=args.retries, device=getattr(args, "global_device", None),
            on_record=bar, on_start=bar.start if bar else None)
    finally:
        if bar:
            bar.end()
    print(f"gpulab batch {tool.name}: {summary.done} done, {summary.failed} failed, {summary.skipped} skipped "
          f"in {summary.seconds:.1f} s ({summary.items_per_second:.2f} items/s on {summary.workers} worker(s)"
          f"{', ' + ', '.join(summary.devices) if summary.devices else ''}); manifest: "
          f"{args.out / _batch.MANIFEST}")
    return 1 if summary.failed else 0
