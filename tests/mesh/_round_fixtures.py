"""The round harness tests' one set-up (issue 22; tests/mesh/test_round_*): ``mr``, ``benchmarks/mesh_round.py``
imported with ``benchmarks/`` on the path for the test only, and dropped from ``sys.modules`` after it. A test module
takes it by name: ``mr = rf.mr``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def mr(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import mesh_round

    yield mesh_round
    sys.modules.pop("mesh_round", None)
