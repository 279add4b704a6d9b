"""The ``gpulab`` command line: dispatch, one-line errors, progress output, demo."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import app.commands
import app.commands.demo as demo_cmd
from app.cli import main
from app.commands.common import cli_progress, end_progress_line
from gpu_kernels import backend

ROOT = Path(__file__).resolve().parents[2]


def _gpulab(*args, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("GPULAB_DEBUG", None)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=e)


@pytest.mark.skipif(backend.cupy_available(), reason="this machine has a CUDA device")
@pytest.mark.parametrize("args", [["--device", "cuda"], ["info", "--device", "cuda"],
                                  ["demo", "--device", "cuda:1", "--out", "unused"]])
def test_asking_for_cuda_without_a_gpu_is_one_line_and_exit_2(args, tmp_path):
    r = _gpulab(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("gpulab: error: ") and "CUDA" in lines[0] and "--device cpu" in lines[0]
    assert "Traceback" not in r.stderr
    assert not (ROOT / "unused").exists()


def test_bad_device_spelling_is_one_line():
    r = _gpulab("info", "--device", "tpu")
    assert r.returncode == 2
    assert r.stderr.strip() == ("gpulab: error: unknown device 'tpu': use cpu, cuda, cuda:N "
                                "(N a device number) or auto")


def test_demo_writes_the_device_report(tmp_path):
    out = tmp_path / "demo"
    r = _gpulab("demo", "--out", str(out), "--device", "cpu", "--only", "no-such-demo", timeout=300)
    assert r.returncode == 0, r.stderr
    report = (out / "device_report.txt").read_text()
    assert report.startswith("Compute device: CPU (NumPy)")
    assert "numpy:" in report and "gpulab:" in report
    assert f"wrote {out / 'device_report.txt'}" in r.stdout
    assert [p.name for p in out.iterdir() if p.name != ".gpulab-output"] == ["device_report.txt"]


def test_demo_into_a_file_is_a_clear_error(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    r = _gpulab("demo", "--out", str(f), "--device", "cpu")
    assert r.returncode == 2
    assert r.stderr.strip().startswith(f"gpulab: error: --out {f}: a file has that name; give a folder")


def test_help_lists_the_commands():
    r = _gpulab("--help")
    assert r.returncode == 0
    assert "demo" in r.stdout and "info" in r.stdout and "gpulab [--device DEVICE] [FILE ...]" in r.stdout
    from app.tools import TOOLS

    for t in TOOLS:
        assert t.name in r.stdout


def test_info_prints_the_device_report(capsys):
    assert main(["info", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Compute device: CPU (NumPy)")


def test_global_device_option_works_before_the_command(capsys):
    before = backend._default_spec
    assert main(["--device", "cpu", "info"]) == 0
    assert "CPU (NumPy)" in capsys.readouterr().out
    assert backend._default_spec == before  # passed to the command, not made the process default


def test_opening_a_missing_file_fails_before_the_window(capsys, tmp_path):
    missing = tmp_path / "nope.ply"
    assert main([str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"gpulab: error: no such file or directory: {missing}"


def test_a_mistyped_command_is_reported_as_such(capsys):
    assert main(["dmeo"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "unknown command 'dmeo'" in err


def test_a_bad_option_value_is_one_line_without_usage(capsys):
    assert main(["mesh-seg", "x.ply", "-o", "y.ply", "--epsilon", "2"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "gpulab: error: mesh-seg: argument --epsilon: epsilon must lie in [0, 1], not 2 "
        "(see 'gpulab mesh-seg --help')"]


# ----------------------------------------------------------------- fake command modules
@pytest.fixture
def fake_commands(tmp_path, monkeypatch):
    pkg = tmp_path / "fakecmds"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "boom.py").write_text(textwrap.dedent("""
        from app.errors import UserError
        from gpu_kernels.jobs import Cancelled

        from gpu_kernels.errors import InputError

        class MeshIOError(InputError):
            def __init__(self):
                super().__init__("bunny.ply is not a mesh: no faces")

        def register(sub):
            p = sub.add_parser("boom")
            p.add_argument("kind")
            p.set_defaults(func=run)

        def run(args):
            if args.kind == "user":
                raise UserError("the mesh has NaN coordinates\\nsecond line is dropped")
            if args.kind == "attr":
                raise MeshIOError()
            if args.kind == "value":
                raise ValueError("k must be at least 2")
            if args.kind == "cancel":
                raise Cancelled()
            if args.kind == "interrupt":
                raise KeyboardInterrupt()
            if args.kind == "oom":
                class OutOfMemoryError(Exception):
                    pass
                raise OutOfMemoryError("out of memory allocating 1 GiB")
            if args.kind == "bug":
                raise ZeroDivisionError("a real bug")
            return 0
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    boom = importlib.import_module("fakecmds.boom")
    monkeypatch.setattr(app.commands, "command_modules", lambda: [app.commands.info, boom])
    return pkg


@pytest.mark.parametrize("kind, message", [
    ("user", "the mesh has NaN coordinates"),
    ("attr", "bunny.ply is not a mesh: no faces"),
    ("oom", "the command ran out of GPU memory (out of memory allocating 1 GiB). Try a smaller input"),
])
def test_user_errors_are_one_line_exit_2(fake_commands, capsys, kind, message):
    assert main(["boom", kind]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(f"gpulab: error: {message}")


@pytest.mark.parametrize("kind", ["cancel", "interrupt"])
def test_cancel_exits_130(fake_commands, capsys, kind):
    assert main(["boom", kind]) == 130
    assert capsys.readouterr().err.strip() == "gpulab: cancelled"


@pytest.mark.parametrize("kind", ["bug", "value"])
def test_bugs_say_so_and_keep_their_traceback(fake_commands, capsys, kind):
    """A ValueError escaping a command is a bug, in the CLI as in the window (exit 3)."""
    assert main(["boom", kind]) == 3
    err = capsys.readouterr().err
    assert err.startswith("gpulab: internal error: ")
    assert "This is a bug in gpulab" in err and "Traceback (most recent call last)" in err


def test_debug_env_shows_the_traceback(fake_commands, monkeypatch):
    monkeypatch.setenv("GPULAB_DEBUG", "1")
    with pytest.raises(ValueError):
        main(["boom", "value"])


# ----------------------------------------------------------------- demo registry
def _fake_tool(name, demo):
    from app.tools import Param, ParamSet, Tool

    return Tool(name=name, title=name, key=name, description="", params=ParamSet([Param("x", int, 1, "x", "x")]),
                load=lambda path, *, progress=None: path, run=lambda d, p, *, device, progress=None: d,
                summary=lambda r: [], demo=demo)


def test_demo_runs_every_tools_demo_and_reports_failures(tmp_path, monkeypatch, capsys):
    def good(out_dir, *, device, progress):
        assert device.name == "cpu"  # the device reaches the demo
        progress.update(0.5, "half")
        out_dir.mkdir(parents=True, exist_ok=True)
        p = out_dir / "good.txt"
        p.write_text("ok")
        return [p]

    def bad(out_dir, *, device, progress):
        raise RuntimeError("sample missing")

    monkeypatch.setattr(demo_cmd, "TOOLS", (_fake_tool("bad", bad), _fake_tool("good", good)))
    out = tmp_path / "out"
    assert main(["demo", "--out", str(out), "--device", "cpu", "--quiet"]) == 1
    captured = capsys.readouterr()
    assert sorted(p.name for p in out.iterdir() if p.name != ".gpulab-output") == ["device_report.txt", "good"]
    assert (out / "good" / "good.txt").read_text() == "ok"
    assert "FAILED bad: RuntimeError: sample missing" in captured.out
    assert "1 demo(s) failed" in captured.err


def test_demo_covers_every_tool():
    from app.tools import TOOLS

    assert TOOLS[0].name == "mesh-seg"
    assert all(t.demo is not None for t in TOOLS)


# ----------------------------------------------------------------- progress printing
class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_cli_progress_plain_lines_when_not_a_terminal():
    buf = io.StringIO()
    p = cli_progress(stream=buf)
    for i in range(1001):
        p.update(i / 1000, "APSP")
    p.update(1.0, "clustering")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "[  0%] APSP" and lines[-1] == "[100%] clustering"
    assert 10 <= len(lines) <= 13, lines  # one per 10 %, not one per update
    assert "\r" not in buf.getvalue()


def test_cli_progress_rewrites_one_line_on_a_terminal():
    buf = _Tty()
    p = cli_progress(stream=buf)
    p.update(0.0, "dual graph")
    p.update(0.5, "a much longer stage name")
    p.update(0.6, "short")
    text = buf.getvalue()
    assert text.startswith("\r[  0%] dual graph")
    assert "\n" not in text
    end_progress_line()
    assert buf.getvalue().endswith("\n")
    end_progress_line()  # idempotent
    assert buf.getvalue().count("\n") == 1
    # the shorter line blanks out the rest of the longer one
    last = text.rsplit("\r", 1)[1]
    assert last.startswith("[ 60%] short") and len(last) == len("[ 50%] a much longer stage name")


def test_cli_progress_quiet_prints_nothing_but_cancels(capsys):
    p = cli_progress(quiet=True)
    p.update(0.5, "x")
    p.cancel()
    assert p.cancelled
    assert capsys.readouterr().err == ""


def test_ctrl_c_inside_an_extension_import_is_a_cancel(monkeypatch, capsys):
    """Found by the fuzz harness under load: SIGINT while pymeshlab's extension initialised came
    back as "ImportError: initialization failed" and the command printed a traceback (exit 3)."""
    import signal
    import threading
    import time

    import app.cli as cli

    def interrupted_import(argv):
        try:
            # to this (the main) thread: a signal to the process may land on another thread
            # (numba's, Qt's) under load, and then the sleep is not interrupted (CI, session 4)
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:
            raise ImportError("initialization failed") from None   # what the extension reports
        return 0

    monkeypatch.setattr(cli, "_main", interrupted_import)
    monkeypatch.delenv("GPULAB_DEBUG", raising=False)
    # Python's own Ctrl+C handler, as a command started from a terminal has: a test process
    # started in the background by a shell inherits SIGINT ignored (session 4's CI simulation)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["mesh-seg", "x.ply"]) == 130
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # put back by main()
    finally:
        signal.signal(signal.SIGINT, before)
    assert "gpulab: cancelled" in capsys.readouterr().err

    def broken_import(argv):
        raise ImportError("initialization failed")       # no Ctrl+C: still a bug report

    monkeypatch.setattr(cli, "_main", broken_import)
    assert main(["mesh-seg", "x.ply"]) == 3
    assert "internal error" in capsys.readouterr().err
