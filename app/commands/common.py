"""Helpers shared by every ``gpulab`` subcommand: the tool parser, ``--device``, output
checks before any work, atomic multi-file output, progress and the run itself.

A tool's command module only maps its positional inputs and output options onto the
tool (``app.tools.<tool>``); everything else is here.
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import shutil
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from gpu_kernels.env import ENV_VAR
from gpu_kernels.errors import TooLargeError
from gpu_kernels.jobs import Progress
from gpu_kernels.lazy import lazy_module

from ..errors import UserError
from ..io.atomic import OutputPathError, check_not_an_input, check_output_file
from ..io.registry import check_input
from ..tools.base import Export, Tool

if TYPE_CHECKING:
    from gpu_kernels.backend import Backend

__all__ = [
    "ToolCommand",
    "add_device_arg",
    "add_tool_parser",
    "cli_progress",
    "select_device",
    "end_progress_line",
    "check_outputs",
    "write_outputs",
    "run_tool",
    "prepare",
    "finish",
    "DEVICE_HELP",
]

log = logging.getLogger(__name__)

DEVICE_HELP = (
    "compute device: cpu, cuda, cuda:N or auto (default: auto = CUDA when CuPy finds a "
    f"device, else CPU; the {ENV_VAR} environment variable sets the default)"
)


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports a bad argument as one line, ``gpulab: error: ...`` (exit 2),
    without the usage block; ``--help`` still shows the usage."""

    def error(self, message: str):  # noqa: D102
        words = (self.prog or "gpulab").split()
        where = f"{' '.join(words[1:])}: " if len(words) > 1 else ""
        raise UserError(f"{where}{message} (see '{' '.join(words)} --help')")


def add_device_arg(parser: argparse.ArgumentParser) -> None:
    """Add ``--device cpu|cuda|cuda:N|auto`` to ``parser`` (stored in ``args.device``)."""
    parser.add_argument("--device", metavar="DEVICE", default=None, help=DEVICE_HELP)


def add_tool_parser(subparsers, tool: Tool, *, help: str, description: str, epilog: str = ""):
    """A subcommand for ``tool``: its description, every parameter flag from the tool's
    :class:`~app.tools.params.ParamSet` (and ``--params FILE``), ``--save-params``,
    ``--device`` and ``--quiet``. The command adds its inputs and outputs."""
    p = subparsers.add_parser(
        tool.name, help=help, description=textwrap.fill(description, 78), epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    tool.params.add_arguments(p)
    p.add_argument("--save-params", metavar="FILE", type=pathlib.Path, default=None,
                   help="also write the parameters used as a JSON preset (for --params, the window, batch)")
    add_device_arg(p)
    p.add_argument("--quiet", "-q", action="store_true", help="do not print progress")
    return p


def prepare(tool: Tool, args: argparse.Namespace) -> tuple[dict, Backend]:
    """The validated parameters (defaults, ``--params``, flags) and the device, after the
    tool's fast checks: everything that can fail before the input is read."""
    params = tool.params.from_args(args, tool=tool.name)
    be = select_device(args)
    if tool.check is not None:
        tool.check(params, be)
    return params, be


def select_device(args: argparse.Namespace) -> Backend:
    """The device asked for on the command line: ``args.device`` (the subcommand's
    ``--device``), then the global ``gpulab --device``, then ``GPULAB_DEVICE``, then auto.

    Raises :class:`~gpu_kernels.backend.BackendError` (one clear line) if it cannot be used.
    The backend is passed to the tool explicitly; the process default is left alone.
    """
    spec = getattr(args, "device", None) or getattr(args, "global_device", None)
    be = lazy_module("gpu_kernels.backend").get_backend(spec)
    log.info("compute device: %s", be.label)
    return be


# --------------------------------------------------------------------------- outputs
def check_outputs(inputs: Sequence[pathlib.Path], outputs: Sequence[tuple[str, pathlib.Path, Export]]) -> None:
    """Check every output before any work: the extension fits the export, the folder exists
    and is writable, no two outputs share a name, no output overwrites an input.

    ``outputs`` holds ``(option, path, export)``; raises :class:`UserError` naming the option.
    """
    seen: dict[pathlib.Path, str] = {}
    for opt, path, exp in outputs:
        path = pathlib.Path(path)
        if not exp.folder:
            if not any(path.name.lower().endswith(e) for e in exp.extensions):
                raise UserError(f"{opt} {path}: {exp.label.lower()} is written as "
                                f"{' or '.join(exp.extensions)}; give a name ending in {exp.extensions[0]}")
            try:
                check_output_file(path)
            except OutputPathError as exc:
                raise UserError(f"{opt} {exc}") from None
        if exp.check is not None:
            try:
                exp.check(path)
            except Exception as exc:  # noqa: BLE001
                from ..errors import user_message

                raise UserError(f"{opt}: {user_message(exc)}") from None
        r = path.resolve()
        if r in seen:
            raise UserError(f"{seen[r]} and {opt} name the same file ({path}); give two different names")
        try:
            check_not_an_input(path, inputs, lead=opt)     # the window's Save / Export use the same rule
        except OutputPathError as exc:
            raise UserError(str(exc)) from None
        seen[r] = opt


def write_outputs(result, outputs: Sequence[tuple[pathlib.Path, Export, dict]]) -> list[pathlib.Path]:
    """Write every output (each atomically); if one fails, remove those this call created."""
    created: list[tuple[pathlib.Path, bool]] = []
    written: list[pathlib.Path] = []
    try:
        for path, exp, opts in outputs:
            path = pathlib.Path(path)
            created.append((path, path.exists()))
            written += exp.write(result, path, **opts)
    except BaseException:
        for p, existed in created:
            if existed:
                continue
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
        raise
    return written


def run_tool(tool: Tool, data, params: dict, *, device: Backend, progress: Progress, quiet: bool = False):
    """Run ``tool`` headless: print its size advice as a note, and turn a
    :class:`TooLargeError` into one line that names the flag that fixes it."""
    if tool.advise is not None and not quiet:
        adv = tool.advise(data, params, device)
        if adv is not None:
            hint = ""
            if adv.parameter and adv.parameter in tool.params:
                hint = f" ({tool.params[adv.parameter].option} {adv.suggested_size})"
            end_progress_line()
            print(f"gpulab: note: {adv.user_message}{hint}", file=sys.stderr)
    try:
        return tool.run(data, params, device=device, progress=progress)
    except TooLargeError as exc:
        end_progress_line()
        msg = exc.user_message
        if exc.parameter and exc.parameter in tool.params and exc.max_size > 0:
            flag = tool.params[exc.parameter].option
            if flag not in msg:
                msg += f"; rerun with {flag} {exc.suggested_size}"
        raise UserError(msg) from None


def run_command(tool: Tool, args: argparse.Namespace, *, inputs: Sequence[pathlib.Path],
                outputs: Sequence[tuple[str, pathlib.Path, Export, dict]], load, load_share: float = 0.0):
    """The steps every tool command takes, in order: check every output before any work, read
    the parameters and the device, ``load(progress)`` the input, run the tool, write the outputs.

    ``outputs`` holds ``(option, path, export, writer options)``; ``load_share`` is the part of
    the progress bar that loading takes. Returns ``(result, written paths)``.
    """
    check_outputs(inputs, [(o, p, e) for o, p, e, _ in outputs])
    if getattr(args, "save_params", None) is not None:
        # checked before the work, not after it (a bad --save-params lost a finished run)
        try:
            check_output_file(args.save_params)
        except OutputPathError as exc:
            raise UserError(f"--save-params {exc.user_message}") from None
    params, be = prepare(tool, args)
    outputs = [(o, p, e, {**e.writer_options(params), **opts}) for o, p, e, opts in outputs]
    progress = cli_progress(quiet=args.quiet)
    if inputs:  # the main input is one the tool takes (the reader registry decides: a file, a folder)
        check_input(tool.inputs, inputs[0])
    if load_share > 0:
        data = load(progress.sub(0, load_share))
        progress = progress.sub(load_share, 1.0)
    else:
        data = load(progress)
    result = run_tool(tool, data, params, device=be, progress=progress, quiet=args.quiet)
    end_progress_line()
    return result, write_outputs(result, [(p, e, o) for _, p, e, o in outputs])


def finish(tool: Tool, result, written: Sequence[pathlib.Path], args) -> int:
    """Print the summary and what was written; save ``--save-params``."""
    lines = list(tool.summary(result))
    if getattr(args, "save_params", None) is not None:
        tool.params.save_json(args.save_params, result.params, tool=tool.name)
        written = [*written, args.save_params]
    lines += [f"wrote {p}" for p in written]
    print("\n".join(lines))
    sys.stdout.flush()
    return 0


# --------------------------------------------------------------------------- generated commands
class ToolCommand:
    """The subcommand of a tool, generated from its declaration: ``gpulab NAME INPUT -o OUT``
    with one flag per parameter (:func:`add_tool_parser`) and one per :class:`Export` that has a
    ``cli_option`` (the export whose option is the tool's ``output_option`` is the required
    main output; the others are optional extra outputs).
    """

    def __init__(self, tool: Tool):
        self.TOOL = tool

    def _exports(self) -> tuple[Export | None, list[Export]]:
        t = self.TOOL
        main = next((e for e in t.exports if e.cli_option == t.output_option), None)
        extra = [e for e in t.exports if e.cli_option and e is not main]
        return main, extra

    def register(self, subparsers) -> None:
        t = self.TOOL
        p = add_tool_parser(subparsers, t, help=t.description[:1].lower() + t.description[1:].rstrip("."),
                            description=t.cli_description or t.description, epilog=t.cli_epilog)
        p.add_argument("input", metavar=t.input_noun.upper().replace(" ", "_"), type=pathlib.Path,
                       help=t.input_help or f"input {t.input.describe()}")  # from the reader registry
        main, extra = self._exports()
        if main is not None:
            opts = [main.cli_option] + (["--output"] if main.cli_option == "-o" else [])
            p.add_argument(*opts, dest="output", metavar="OUT" + main.extensions[0], type=pathlib.Path,
                           required=True, help=main.cli_help or f"output {main.label.lower()} "
                           f"({' or '.join(main.extensions)})")
        for e in extra:
            p.add_argument(e.cli_option, dest=f"export_{e.key}", type=pathlib.Path, default=None,
                           metavar="DIR" if e.folder else "OUT" + e.extensions[0],
                           help=e.cli_help or f"also write the {e.label.lower()}"
                           + ("" if e.folder else f" ({' or '.join(e.extensions)})"))
        p.set_defaults(func=self.run)

    def run(self, args: argparse.Namespace) -> int:
        t = self.TOOL
        main, extra = self._exports()
        outputs = []
        if main is not None:
            outputs.append((main.cli_option, args.output, main, {}))
        for e in extra:
            path = getattr(args, f"export_{e.key}", None)
            if path is not None:
                outputs.append((e.cli_option, path, e, {}))
        result, written = run_command(t, args, inputs=[args.input], outputs=outputs,
                                      load=lambda progress: t.load(args.input, progress=progress))
        return finish(t, result, written, args)


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
        self.last_head: str | None = None
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
                # in a log: a line per 10 %, and one when the top-level stage (the text before
                # its first ':') changes, so a long run or a demo writes a few dozen lines, not
                # one per sub-stage
                decile = pct // 10
                head = stage.split(":", 1)[0]
                if head != self.last_head or decile > self.last_decile:
                    self.stream.write(f"[{pct:3d}%] {stage}\n")
                    self.stream.flush()
                    self.last_decile = decile
                    self.last_head = head
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
