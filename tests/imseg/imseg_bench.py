"""Loading a benchmark script (benchmarks/<name>.py) as a module for the tests that check it
scores what the product computes (one loader for the imseg benchmark tests)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a fresh module (named ``<name>_for_tests``)."""
    spec = importlib.util.spec_from_file_location(f"{name}_for_tests", ROOT / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
