"""A child process started as from a terminal, whatever started the tests.

A test run launched in the background of a non-interactive shell (``cmd &``, ``nohup``) starts with SIGINT
ignored, and every process it starts inherits that: Python then installs no KeyboardInterrupt handler, and a
Ctrl+C test sees a command that cannot be interrupted. ``preexec_fn=terminal_sigint`` gives the child the
default SIGINT of a terminal session (CI run 11 of session 11 failed four Ctrl+C tests that way)."""

from __future__ import annotations

import signal


def terminal_sigint() -> None:
    """For ``subprocess``'s ``preexec_fn``: SIGINT back to its default action in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def after_progress(err: str) -> list[str]:
    """stderr's lines other than the progress lines (``[ 12%] ...``)."""
    return [ln for ln in err.replace("\r", "\n").splitlines() if ln.strip() and not ln.lstrip().startswith("[")]


def ctrl_c_to_group_after(cmd: list[str], *, marker: str, delay: float, env: dict, cwd,
                          wait_s: float = 30.0) -> tuple[int, str, str, int]:
    """Start ``cmd`` in a session of its own (as from a terminal), wait for the stderr line holding ``marker``
    (120 s at most), ``delay`` seconds more, then SIGINT to its whole process group, as a terminal's Ctrl+C.
    Returns (exit status, the marker's line, all of stderr from that line, the group's id); a command still
    running ``wait_s`` seconds after the Ctrl+C is killed (and its status says so)."""
    import os
    import subprocess
    import time

    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            encoding="utf-8", errors="replace", start_new_session=True, preexec_fn=terminal_sigint)
    line = err = ""
    try:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 120 and marker not in line:
            line = proc.stderr.readline()
            if not line:
                break
        if marker in line:
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(wait_s)
        err = line + proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, line, err, proc.pid


def group_gone(pgid: int, seconds: float = 15.0) -> bool:
    """Whether no process of the group ``pgid`` is left within ``seconds``."""
    import os
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False
