"""A pytest plugin (``-p cpuplug`` with this folder on PYTHONPATH): each test's wall time and the CPU time of
the test process and its reaped children, appended to $CPUPLUG_OUT as tab-separated lines."""
import os
import resource
import time

import pytest

_OUT = os.environ.get("CPUPLUG_OUT", "/tmp/cpuplug.tsv")


def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = time.monotonic()
    s0, c0 = _cpu()
    yield
    t1 = time.monotonic()
    s1, c1 = _cpu()
    with open(_OUT, "a") as f:
        f.write(f"{item.nodeid}\t{t1 - t0:.2f}\t{s1 - s0:.2f}\t{c1 - c0:.2f}\n")
