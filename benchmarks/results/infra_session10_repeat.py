"""pytest plugin for the infra session-10 device call: ``REPEAT=N`` runs every collected test N
times in one process (as pytest-repeat, which the device does not have):
``REPEAT=20 PYTHONPATH=benchmarks/results pytest -p infra_session10_repeat ...``."""

import os


def pytest_generate_tests(metafunc):
    n = int(os.environ.get("REPEAT", "1"))
    if n > 1:
        metafunc.fixturenames.append("_repeat_index")
        metafunc.parametrize("_repeat_index", range(n))
