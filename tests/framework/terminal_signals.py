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
