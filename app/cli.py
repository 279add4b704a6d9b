"""The ``gpulab`` command.

``gpulab`` opens the window; ``gpulab FILE ...`` opens each file in the tab that
handles it; ``gpulab COMMAND ...`` runs a tool headless (``gpulab --help`` lists
them). ``--device cpu|cuda|cuda:N|auto`` works everywhere.

Errors the user can fix (a missing file, a bad value, no CUDA device, an unreadable
mesh) are printed as one line, ``gpulab: error: ...``, with exit status 2
(:func:`app.errors.classify` decides, as it does for the window). A bug prints a message
and the traceback, exit status 3. A cancelled run (Ctrl+C) exits with 130. Set
``GPULAB_DEBUG=1`` to get the traceback of any error.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from pathlib import Path

# Start-up (issue 18, case 19): this module imports only the standard library, so that
# ``gpulab --version`` never loads NumPy, SciPy, Qt or a tool; the commands, the device and
# the error classification are imported when they are needed (tests/framework/test_fuzz_cases.py
# checks sys.modules after --version).

__all__ = ["main", "build_parser", "build_gui_parser", "check_display"]

log = logging.getLogger("app")

USAGE = "gpulab [--device DEVICE] [FILE ...]\n       gpulab [--device DEVICE] COMMAND [options]"


def _add_global_options(parser: argparse.ArgumentParser) -> None:
    from .commands.common import DEVICE_HELP

    parser.add_argument("--device", dest="global_device", metavar="DEVICE", default=None, help=DEVICE_HELP)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv for debug output)")
    parser.add_argument("--version", action=_VersionAction, nargs=0, help="show gpulab's version and exit")


class _VersionAction(argparse.Action):
    """``--version``: the version is read (importlib.metadata) only when asked for."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser._print_message(_version_line() + "\n", sys.stdout)
        parser.exit()


def _version_line() -> str:
    """``gpulab X.Y.Z`` (importlib.metadata is read only now)."""
    from . import __version__

    return f"gpulab {__version__}"


def build_parser() -> tuple[argparse.ArgumentParser, list[str]]:
    """The parser for headless commands, and the names of the subcommands."""
    from .commands import command_modules
    from .commands.common import ArgumentParser

    parser = ArgumentParser(
        prog="gpulab",
        usage=USAGE,
        description=(
            "GPU tools in one window: mesh segmentation, optical flow, echo motion, multi-view "
            "stereo and image segmentation. Without a COMMAND, opens the window (and FILEs in "
            "their tabs); with one, runs headless."
        ),
        epilog="Run 'gpulab COMMAND --help' for a command's options. GPULAB_DEBUG=1 shows tracebacks.",
    )
    _add_global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", prog="gpulab")
    for mod in command_modules():
        mod.register(sub)
    names = list(sub.choices)
    return parser, names


def build_gui_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpulab", usage=USAGE, add_help=True,
                                     description="Open the gpulab window.")
    _add_global_options(parser)
    parser.add_argument("files", nargs="*", type=Path, metavar="FILE",
                        help="files to open, each in the tab that handles its type")
    parser.add_argument("--samples", action="store_true",
                        help="open each tool's first bundled sample")
    # for the README screenshot and smoke tests: grab the window after start-up, then quit
    parser.add_argument("--screenshot", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--screenshot-delay", type=int, default=1500, help=argparse.SUPPRESS)
    parser.add_argument("--quit-after", type=int, default=None, help=argparse.SUPPRESS)
    # start the current tab's computation after opening (its Run button), e.g. for screenshots
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)
    # show this tab first (a tool name or key: mesh-seg, flow, echo, mvs, imseg)
    parser.add_argument("--tab", default=None, help=argparse.SUPPRESS)
    return parser


def _options_with_values(parser: argparse.ArgumentParser) -> set[str]:
    return {opt for a in parser._actions if a.option_strings and a.nargs != 0 for opt in a.option_strings}


def _first_positional(argv: list[str], valued: set[str] | frozenset = frozenset({"--device"})) -> str | None:
    """The first argument that is not an option or an option's value."""
    skip = False
    for tok in argv:
        if skip:
            skip = False
            continue
        if tok == "--":
            return None
        if tok in valued:
            skip = True
            continue
        if tok.startswith("-"):
            continue
        return tok
    return None


def _setup_logging(verbosity: int) -> None:
    """Warnings (or more with -v) to stderr; gpulab's loggers stay at INFO or below so
    the window's log panel still gets their records."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    root = logging.getLogger()
    if not any(getattr(h, "_gpulab_cli", False) for h in root.handlers):
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("gpulab: %(levelname)s: %(name)s: %(message)s"))
        h._gpulab_cli = True  # type: ignore[attr-defined]
        root.addHandler(h)
    for h in root.handlers:
        if getattr(h, "_gpulab_cli", False):
            h.setLevel(level)
    root.setLevel(min(level, logging.WARNING))
    for name in ("app", "gpu_kernels"):
        logging.getLogger(name).setLevel(min(level, logging.INFO))
    # Python warnings (numpy's RuntimeWarnings: overflow, invalid value) are details for -v,
    # not lines on a user's terminal: through logging, shown with -v (issue 18, case 9)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.WARNING if verbosity >= 1 else logging.ERROR)
    # nibabel logs through its own stderr handler and to the root logger: the same warning
    # printed twice; one route, at -v
    nib = logging.getLogger("nibabel.global")
    for h in list(nib.handlers):
        nib.removeHandler(h)
    nib.propagate = True
    nib.setLevel(logging.WARNING if verbosity >= 1 else logging.ERROR)


def _clean_after_killed_runs() -> None:
    """Remove what runs killed with SIGKILL left in /dev/shm (the shortest-path workers' result
    files of dead processes, orphaned semaphores): at every start, so a GPU-only user is not
    left with a 6 GB file from an old CPU run. Never fails a command."""
    try:
        from gpu_kernels.graph.shm import cleanup_stale_shared_memory

        removed = cleanup_stale_shared_memory()
    except Exception:  # noqa: BLE001 - housekeeping only
        return
    if removed:
        log.info("removed %d file(s) that killed runs left in /dev/shm", len(removed))


def _main(argv: list[str]) -> int:
    _clean_after_killed_runs()
    parser, names = build_parser()
    gui_parser = build_gui_parser()
    first = _first_positional(argv, _options_with_values(gui_parser))
    headless = first in names or (first is None and any(a in ("-h", "--help", "--version") for a in argv))
    if headless:
        args = parser.parse_args(argv)
        _setup_logging(args.verbose)
        return int(args.func(args) or 0)

    args = gui_parser.parse_args(argv)
    _setup_logging(args.verbose)
    if first is not None and not Path(first).exists() and "." not in Path(first).name and "/" not in first:
        # a mistyped command reads better as such than as a missing file
        parser.error(f"unknown command {first!r} (choose from {', '.join(names)}), or no such file")
    for f in args.files:
        if not f.exists():
            raise FileNotFoundError(2, "No such file or directory", str(f))
    from .commands.common import select_device

    select_device(args)  # before Qt starts: a bad --device is one line, not a dialog
    check_display()      # before Qt starts: an unusable DISPLAY aborted Qt with exit 134
    from .gui.app import run_gui  # Qt is imported only for the window

    return run_gui(args)


# --------------------------------------------------------------------------- help cache
# ``gpulab COMMAND --help`` needs every parameter of the tool, and the tools' modules import
# NumPy, SciPy and the compute kernels (about 2 s on a quiet 2-core machine). The help text is
# kept in the user's cache, keyed by the exact arguments, the terminal width, the version,
# GPULAB_TOOLS and the size and time of every source file of gpulab: a repeated --help, or any
# --help after the first, prints it without importing anything but the standard library.

def _help_key(argv: list[str]) -> str | None:
    """The cache key of a pure help request (``[WORD ...] -h|--help``), else None."""
    if not argv or argv[-1] not in ("-h", "--help") or len(argv) > 4:
        return None
    words = argv[:-1]
    if any(w.startswith("-") or "/" in w or "." in w for w in words):
        return None
    if os.environ.get("GPULAB_NO_HELP_CACHE"):
        return None
    import hashlib
    import shutil

    h = hashlib.sha1()
    # (the help text does not show the version: the sources' sizes and times below key it)
    h.update(repr((words, argv[-1], shutil.get_terminal_size().columns,
                   os.environ.get("GPULAB_TOOLS", ""), sys.version_info[:2])).encode())
    here = Path(__file__).resolve().parent
    for root in (here, here.parent / "gpu_kernels"):
        stack = [str(root)]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                if e.is_dir(follow_symlinks=False) and not e.name.startswith((".", "__")):
                    stack.append(e.path)
                elif e.name.endswith(".py"):
                    st = e.stat()
                    h.update(f"{e.path}:{st.st_mtime_ns}:{st.st_size};".encode())
    return h.hexdigest()


def _help_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpulab" / "help"


def _help_cached(key: str) -> str | None:
    try:
        return (_help_dir() / f"{key}.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _help_and_cache(key: str, argv: list[str]) -> int:
    """Print the help as argparse makes it, and keep the text for the next time."""
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    code = 0
    try:
        with redirect_stdout(buf):
            code = _main(argv)
    except SystemExit as exc:       # argparse's --help: exit 0 after printing
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    text = buf.getvalue()
    sys.stdout.write(text)
    if code == 0 and text:
        d = _help_dir()
        try:
            d.mkdir(parents=True, exist_ok=True)
            tmp = d / f".{key}.{os.getpid()}.tmp"
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, d / f"{key}.txt")
        except OSError:
            pass                     # no cache (read-only home): just slower
    return code


def check_display() -> None:
    """Raise a one-line :class:`~app.errors.UserError` when Qt's X11 (xcb) platform is going to
    be used but cannot work: no X server answers at ``DISPLAY`` (or it refuses us), or libxcb
    is missing. Qt itself would abort the process (exit 134) with a hint about libraries.

    Checked with libxcb through ctypes (``xcb_connect``, a few milliseconds), the library Qt's
    xcb plugin uses; nothing is checked where Qt will not use xcb (``QT_QPA_PLATFORM`` set to
    another platform, Wayland, macOS, Windows, or no DISPLAY: the window then falls back to
    the offscreen platform itself)."""
    if not sys.platform.startswith("linux"):
        return
    platform = os.environ.get("QT_QPA_PLATFORM", "").split(":", 1)[0].strip().lower()
    display = os.environ.get("DISPLAY", "")
    if platform and platform != "xcb":
        return
    if not platform and (os.environ.get("WAYLAND_DISPLAY") or not display):
        return
    from .errors import UserError

    hint = ("run with QT_QPA_PLATFORM=offscreen (no window on screen), under Xvfb "
            "(xvfb-run gpulab ...), or set DISPLAY to a running X server")
    if not display:
        raise UserError(f"QT_QPA_PLATFORM=xcb but DISPLAY is not set: {hint}")
    import ctypes
    import ctypes.util

    try:
        xcb = ctypes.CDLL(ctypes.util.find_library("xcb") or "libxcb.so.1")
    except OSError:
        raise UserError(f"the X11 library libxcb is not installed, so no window can open on {display}: "
                        f"install libxcb1 (apt install libxcb1 libxcb-cursor0), or {hint}") from None
    xcb.xcb_connect.restype = ctypes.c_void_p
    xcb.xcb_connect.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
    xcb.xcb_connection_has_error.argtypes = [ctypes.c_void_p]
    xcb.xcb_disconnect.argtypes = [ctypes.c_void_p]
    conn = xcb.xcb_connect(display.encode(), None)
    try:
        err = xcb.xcb_connection_has_error(conn) if conn else 1
    finally:
        if conn:
            xcb.xcb_disconnect(conn)
    if err:
        raise UserError(f"cannot open a window: no X server answers at DISPLAY={display} (or it refused the "
                        f"connection); {hint}")
    missing = _missing_xcb_library()
    if missing:
        raise UserError(f"Qt's X11 platform cannot load: {missing} is not installed (on Debian/Ubuntu: apt install "
                        f"{_APT_NAMES.get(missing.split('.so')[0], missing.split('.so')[0])}); or {hint}")


#: Debian packages of the libraries Qt's xcb platform needs beyond libxcb itself
_APT_NAMES = {"libxcb-cursor": "libxcb-cursor0", "libxkbcommon-x11": "libxkbcommon-x11-0",
              "libxcb-icccm": "libxcb-icccm4", "libxcb-image": "libxcb-image0", "libxcb-keysyms": "libxcb-keysyms1",
              "libxcb-randr": "libxcb-randr0", "libxcb-render-util": "libxcb-render-util0",
              "libxcb-shape": "libxcb-shape0", "libxcb-xinerama": "libxcb-xinerama0", "libxcb-xkb": "libxcb-xkb1",
              "libEGL": "libegl1", "libGL": "libgl1", "libfontconfig": "libfontconfig1"}


def _missing_xcb_library() -> str | None:
    """The shared library that Qt's xcb platform plugin (PySide6's libQt6XcbQpa) cannot find, or
    None: loading it with ctypes reports the first missing one, where Qt would abort."""
    import ctypes
    import importlib.util
    import re

    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    lib = Path(list(spec.submodule_search_locations)[0]) / "Qt" / "lib" / "libQt6XcbQpa.so.6"
    if not lib.is_file():
        return None
    try:
        ctypes.CDLL(str(lib))
    except OSError as exc:
        m = re.search(r"([\w.+-]+\.so[\w.]*): cannot open shared object file", str(exc))
        return m.group(1) if m else None
    return None


class _Interrupts:
    """Whether SIGINT arrived in this command (truthy once it did)."""

    def __init__(self):
        self.seen = False
        self._previous = None

    def __bool__(self) -> bool:
        return self.seen

    def restore(self) -> None:
        """Put back the SIGINT handler found at the start (main() may run again in-process)."""
        if self._previous is not None:
            import signal

            signal.signal(signal.SIGINT, self._previous)
            self._previous = None


def _note_interrupts() -> _Interrupts:
    """Keep Python's Ctrl+C behaviour (KeyboardInterrupt) and remember that it came. Only in
    the main thread, and only where SIGINT has Python's default handler (the window installs
    its own)."""
    import signal
    import threading

    state = _Interrupts()
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return state

    def on_sigint(signum, frame):
        state.seen = True
        signal.default_int_handler(signum, frame)

    state._previous = signal.signal(signal.SIGINT, on_sigint)
    return state


#: after a cancel, how long :func:`_finish_threads` waits at most for the threads the command started
FINISH_THREADS_S = 60.0
#: ... and after how long a wait it says, once, what it waits for (a large mesh's simplification is C++
#: that cannot be stopped half-way: the cancel lands when it returns)
FINISH_NOTE_S = 2.0
#: what a gpulab thread does, for that line (by the thread's name)
_THREAD_WORK = {"gpulab-simplify": "the mesh simplification", "gpulab-part-dijkstra": "the parts' shortest paths",
                "gpulab-kd-nearest": "the nearest-point search"}
# (the warm-up compiles, gpulab-*-warm-up, are not waited for: see _is_warm_up)
# (the MVS tool's gpulab-mvs-* threads are pool workers, which _finish_threads leaves to the interpreter's exit)


def waiting_note(thread_name: str) -> str:
    """The one line said while a cancel waits for a gpulab thread (see :data:`FINISH_NOTE_S`)."""
    what = _THREAD_WORK.get(thread_name, f"a running step ({thread_name})")
    return f"gpulab: waiting for {what} to stop (Ctrl+C again to quit at once)"


def _finish_threads(before: set) -> None:
    """After a cancel: make sure that no thread this command started (``before``: the threads there
    were at its start) is inside C++ code when the interpreter finalizes.

    A thread inside a C++ extension at finalization aborts the process: pymeshlab's decimation (the
    mesh tool's simplification, on a thread of its own) re-takes the GIL through pybind11 when it
    returns, Python ends the thread there (``pthread_exit``), and the C++ runtime calls
    ``std::terminate``: "terminate called without an active exception", exit -6 (session 10's
    ``test_signal_mid_run[mesh-seg-sigint]``). The interpreter's exit waits for non-daemon threads,
    but only for those that have run: a Ctrl+C that lands in ``Thread.start()`` (its wait for the
    new thread's first time slice, long on a loaded machine) leaves a thread that registers itself
    too late for that wait. So:

    * a thread whose start was cut short is waited for until it runs (the exit then waits for it);
    * gpulab's own threads (named ``gpulab-...``: the simplification, the k-d tree searches; not pool
      workers, not the warm-up compiles, which :func:`main` leaves behind) are joined here, where a second Ctrl+C exits at once
      (``os._exit(130)``: no finalization, so no C++ is left half-way); in the interpreter's own
      wait a second Ctrl+C printed a traceback and went on to finalize.

    Other threads (pools, which the exit wakes and joins itself) are left to the exit, as before.
    At most :data:`FINISH_THREADS_S` in all; a wait past :data:`FINISH_NOTE_S` says what it waits for, once
    (:func:`waiting_note`), so that a slow cancel does not look like a frozen command."""
    import signal
    import threading
    import time

    main_thread = threading.current_thread() is threading.main_thread()

    def exit_now(signum, frame):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(130)

    previous = signal.signal(signal.SIGINT, exit_now) if main_thread else None
    try:
        start = time.monotonic()
        deadline, note_at, noted = start + FINISH_THREADS_S, start + FINISH_NOTE_S, False
        me = threading.current_thread()
        for t in threading.enumerate():
            if t in before or t is me or t.daemon:
                continue
            # started, not yet running (its start() was cut short): it registers itself when it runs
            while not t.is_alive() and t in threading.enumerate() and time.monotonic() < deadline:
                time.sleep(0.002)
            if t.is_alive() and t.name.startswith("gpulab-") and not _is_pool_worker(t) and not _is_warm_up(t):
                if not noted:
                    t.join(max(0.0, min(note_at, deadline) - time.monotonic()))
                    if t.is_alive():
                        print(waiting_note(t.name), file=sys.stderr, flush=True)
                        noted = True
                t.join(max(0.0, deadline - time.monotonic()))
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _is_warm_up(t) -> bool:
    """A compile started ahead of need (the text reader's, the mesh merge loop's): no result waits for it."""
    return t.name.endswith("-warm-up")


def _cancelled(threads_before: set, *, process_entry: bool = False) -> int:
    """A cancelled command's end: the one line, then the wait for the threads it started
    (:func:`_finish_threads`); returns the cancel's exit status, 130. A warm-up compile still running is
    not waited for: as the process's entry (``process_entry``: the ``gpulab`` command, ``python -m app``;
    not a caller of :func:`main` in its own process) the process ends here (:func:`_leave_warm_ups`)."""

    print("gpulab: cancelled", file=sys.stderr)
    _finish_threads(threads_before)
    _forget_inner_interrupt()
    if process_entry:
        _leave_warm_ups(130)
    return 130


def _leave_warm_ups(code: int) -> None:
    """End the process now with ``code`` (after the flush, ``os._exit``: no finalization, so no thread is
    left half-way in C++) when a warm-up compile is still running: after a cancel or an error nothing
    needs it, and the interpreter's exit would wait for it in silence (up to ~10 s on an empty numba cache;
    session 13 review #13 and final read)."""
    import threading

    if any(t.is_alive() and not t.daemon and _is_warm_up(t) for t in threading.enumerate()):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _forget_inner_interrupt() -> None:
    """Clear CPython's "unhandled KeyboardInterrupt" flag after a cancel that was handled.

    A Ctrl+C that lands while an extension runs Python code through ``PyRun_*`` (pybind11's
    ``py::exec``, say, in an import) sets that flag when the KeyboardInterrupt leaves that code, even
    though gpulab catches it further up; ``python -m app`` then ends the process with SIGINT (exit -2)
    instead of 130 after printing "gpulab: cancelled" (1 run in 40 of session 11's loaded Ctrl+C loop). Every ``PyRun_*`` call clears the flag when it starts: an empty one
    does here (the public C API, through ctypes)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.pythonapi.PyRun_SimpleString(b"")


def _is_pool_worker(thread) -> bool:
    """A ``concurrent.futures`` pool's worker (it waits for work until the interpreter's exit wakes it)."""
    target = getattr(thread, "_target", None)
    return getattr(target, "__module__", None) == "concurrent.futures.thread"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``gpulab`` command. Returns the exit status."""
    process_entry = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        # answered before anything heavy is imported (start-up: well under 0.2 s)
        print(_version_line())
        return 0
    key = _help_key(argv)
    if key is not None:
        text = _help_cached(key)
        if text is not None:
            sys.stdout.write(text)
            return 0
    debug = os.environ.get("GPULAB_DEBUG", "") not in ("", "0")
    import threading

    from gpu_kernels.jobs import Cancelled

    from .commands.common import end_progress_line
    from .errors import classify

    threads_before = set(threading.enumerate())
    interrupted = _note_interrupts()
    try:
        if key is not None:
            return _help_and_cache(key, argv)
        return _main(argv)
    except BrokenPipeError:
        # the reader went away (``gpulab ... | head``): not an error of ours
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    except (Cancelled, KeyboardInterrupt):
        end_progress_line()
        return _cancelled(threads_before, process_entry=process_entry)
    except Exception as exc:
        end_progress_line()
        if interrupted and not debug:
            # Ctrl+C that landed inside an extension module's import or a C call comes back
            # as that call's own error ("ImportError: initialization failed"): a cancel all the same
            return _cancelled(threads_before, process_entry=process_entry)
        if debug:
            raise
        kind, msg = classify(exc, "the command")
        if kind == "bug":
            print(f"gpulab: internal error: {msg}\nThis is a bug in gpulab; please report it with the "
                  "traceback below.\n\n" + traceback.format_exc().rstrip(), file=sys.stderr)
            return 3
        print(f"gpulab: error: {msg}", file=sys.stderr)
        if process_entry:
            _leave_warm_ups(2)
        return 2
    finally:
        interrupted.restore()
