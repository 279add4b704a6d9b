"""Before the local cluster stops, its workers' Dask loggers are silenced (session 30).

CI run d of session 30 caught ``gpulab batch`` after a Ctrl+C printing, beside "gpulab: cancelled", a worker's
"distributed.worker - ERROR - Failed to communicate with scheduler during heartbeat" and a CommClosedError's
traceback: the worker's heartbeat met the closed scheduler, and that worker's log comes from its own process, which
the driver's quiet loggers do not reach (tests/framework/test_mends11_batch_sigint.py, which passed in runs a-c).
``app.batch._quiet_workers`` runs ``_quiet_worker_logs`` on every worker first, and never holds the shutdown up."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from app import batch


@pytest.fixture
def levels():
    names = ("distributed", "tornado", "asyncio")
    old = [logging.getLogger(n).level for n in names]
    yield names
    for n, lv in zip(names, old, strict=True):
        logging.getLogger(n).setLevel(lv)


def test_the_worker_side_function_silences_dasks_loggers(levels):
    for n in levels:
        logging.getLogger(n).setLevel(logging.ERROR)
    batch._quiet_worker_logs()
    assert all(logging.getLogger(n).level > logging.CRITICAL for n in levels)


def test_it_runs_that_function_on_the_workers():
    seen = []

    class Client:
        def run(self, fn, *a, **kw):
            seen.append((fn, kw))

    batch._quiet_workers(Client())
    assert seen == [(batch._quiet_worker_logs, {"on_error": "ignore"})]


def test_a_worker_that_does_not_answer_does_not_hold_the_shutdown():
    release = threading.Event()

    class Stuck:
        def run(self, fn, *a, **kw):
            release.wait(30)

    t0 = time.monotonic()
    batch._quiet_workers(Stuck(), timeout=0.5)
    assert time.monotonic() - t0 < 5
    release.set()


def test_an_error_of_the_client_is_not_the_users():
    class Broken:
        def run(self, fn, *a, **kw):
            raise OSError("scheduler gone")

    batch._quiet_workers(Broken())   # (no exception)


def test_a_real_local_cluster_runs_it(levels):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        batch._quiet_workers(client, timeout=30)
        got = client.run(lambda: logging.getLogger("distributed").level)
    assert list(got.values()) == [logging.CRITICAL + 1]
