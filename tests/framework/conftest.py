"""The fuzz harness's totals in the terminal summary and in a JSON file: the plugin
``fuzz_summary`` (beside this file). ``tests/conftest.py`` registers it at the start of every run,
as pytest-xdist's controller needs (it collects no test, so it never loads this file); here it
is registered when that did not happen (a run of an older root conftest)."""

from __future__ import annotations

import fuzz_summary


def pytest_configure(config):
    if not config.pluginmanager.is_registered(fuzz_summary):
        config.pluginmanager.register(fuzz_summary, "gpulab-fuzz-summary")
