"""Helpers shared by every ``gpulab`` subcommand: ``--device``, progress output."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from typing import TextIO

from gpu_kernels.backend import ENV_VAR, Backend, set_default_device
from gpu_kernels.jobs import Progress

__all__ = ["add_device_arg", "cli_progress", "select_device", "end_progress_line", "DEVICE_HELP"]

log = logging.getLogger(__name__)

DEVICE_HELP = (
    "compute device: cpu, cuda, cuda:N or auto (default: auto = CUDA when CuPy finds a "
    f"device, else CPU; the {ENV_VAR} environment variable sets the default)"
)


def add_device_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--device cpu|cuda|cuda:N|auto`` to ``parser`` (stored in ``args.device``)."""
    parser.add_argument("--device", metavar="DEVICE", default=None, help=DEVICE_HELP)


def select_device(args: argparse.Namespace) -> Backend:
    """Make the device asked for on the command line the process default.

    Looks at ``args.device`` (the subcommand's ``--device``), then the global
    ``gpulab --device``, then ``GPULAB_DEVICE``, then auto. Raises
    :class:`~gpu_kernels.backend.BackendError` (one clear line) if it cannot be used.
    """
    spec = getattr(args, "device", None) or getattr(args, "global_device", None)
    be = set_default_device(spec)
    log.info("compute device: %s", be.label)
    return be


# --------------------------------------------------------------------------- progress
class _Printer:
    """Writes progress to a stream: one line rewritten in place on a terminal,
    plain lines (at stage changes and every 10 %) otherwise."""

    lock = threading.Lock()
    open_line: _Printer | None = None

    def __init__(self, stream: TextIO):
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.last_stage: str | None = None
        self.last_decile = -1
        self.last_len = 0
        self.start = time.monotonic()

    def __call__(self, fraction: float, stage: str) -> None:
        pct = int(round(100 * fraction))
        with _Printer.lock:
            if self.tty:
                text = f"[{pct:3d}%] {stage}"
                width = _terminal_width() - 1
                text = text[:width]
                pad = max(0, self.last_len - len(text))
                self.stream.write("\r" + text + " " * pad)
                self.last_len = len(text)
                _Printer.open_line = self
                if fraction >= 1.0:
                    self._newline()
                self.stream.flush()
            else:
                decile = pct // 10
                if stage != self.last_stage or decile > self.last_decile:
                    self.stream.write(f"[{pct:3d}%] {stage}\n")
                    self.stream.flush()
                    self.last_decile = decile
            self.last_stage = stage

    def _newline(self) -> None:
        if _Printer.open_line is self:
            self.stream.write("\n")
            _Printer.open_line = None
            self.last_len = 0


def _terminal_width() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except (OSError, ValueError):
        return 100


def end_progress_line() -> None:
    """End a progress line left open on the terminal (call before printing)."""
    with _Printer.lock:
        p = _Printer.open_line
        if p is not None:
            p._newline()
            p.stream.flush()


def cli_progress(quiet: bool = False, stream: TextIO | None = None) -> Progress:
    """A :class:`~gpu_kernels.jobs.Progress` that prints stage and percentage to stderr.

    ``quiet`` reports nothing (cancellation still works). On a terminal the line is
    updated in place at most ten times a second; in a log or pipe one plain line is
    printed per stage change and per 10 %.
    """
    if quiet:
        return Progress()
    printer = _Printer(stream if stream is not None else sys.stderr)
    return Progress(printer, min_interval=0.1 if printer.tty else 0.0)
