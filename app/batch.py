"""Batch processing on Dask: many meshes, frame pairs, volume pairs, views or images, on every
GPU (or CPU core) of this machine or on an existing Dask cluster. No Qt.

Each item runs through the tool layer exactly as the single-item command does (the same
:class:`~app.tools.base.Tool`, the same validated parameters, a JSON preset from the window
works unchanged), on a worker: it is loaded there from its file path, computed on that
worker's device, and its outputs are written there, each atomically. Only file paths, the
parameter dict and a small record travel over the network, never arrays.

``OUT/manifest.jsonl`` gets one JSON line per finished item (``done``, ``failed`` or
``skipped``, the worker, the device, the time, the tool's key metrics, the error text and the
number of attempts). Running the same batch again skips items whose outputs are complete and
retries the failed ones. A worker that dies mid-item (a killed process, a crash) has its item
rescheduled on another worker up to ``retries`` times; an item that ran out of GPU memory is
retried the same way. A user's mistake in one item (an unreadable file) fails that item only.

Example
-------
>>> from app.batch import run_batch                                          # doctest: +SKIP
>>> summary = run_batch("imseg", ["photos/"], "out/", workers=2, gpus="none")  # doctest: +SKIP
>>> summary.done, summary.failed                                              # doctest: +SKIP
(100000, 0)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
import shutil
import socket
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import UserError, classify
from .io.atomic import (
    OUTPUT_MARKER,
    cannot_write,
    foreign_message,
    marker_names,
    unwritable_reason,
    write_output_marker,
    write_reason,
)
from .tools import TOOLS, tool_by_name
from .tools.base import BatchItem, Tool

__all__ = ["run_batch", "process_item", "BatchSummary", "read_manifest", "make_cluster", "plan",
           "MANIFEST", "BatchProgress", "check_batch_out", "batch_owned"]

log = logging.getLogger(__name__)

MANIFEST = "manifest.jsonl"
_ATTEMPTS = ".attempts"
#: every file a worker publishes into OUT is listed here first (one relative path a line), so a
#: batch killed mid-item still knows what in OUT is its own
JOURNAL = ".gpulab-written"
#: items write into OUT/.gpulab-staging/<key>.<pid>/ and their files are then moved into OUT
_STAGING = ".gpulab-staging"
_BOOKKEEPING = (MANIFEST, _ATTEMPTS, JOURNAL, _STAGING, OUTPUT_MARKER)
#: how long ``--scheduler ADDRESS`` tries to reach the scheduler before its one-line error
SCHEDULER_CONNECT_S = 10.0


# --------------------------------------------------------------------------- what OUT may hold
def _top(out: pathlib.Path, p: str | os.PathLike) -> str | None:
    """The first component of ``p`` relative to ``out`` (None if outside it)."""
    q = pathlib.Path(p)
    if not q.is_absolute():
        return q.parts[0] if q.parts else None
    try:
        rel = q.resolve().relative_to(out.resolve())
    except ValueError:
        return None
    return rel.parts[0] if rel.parts else None


def batch_owned(out_dir: str | os.PathLike) -> set[str]:
    """The top-level names in ``out_dir`` that gpulab batch wrote: its bookkeeping, the names
    its marker and journal list, and every output the manifest records."""
    out = pathlib.Path(out_dir)
    owned = set(_BOOKKEEPING) | (marker_names(out) or set())
    with contextlib.suppress(OSError):
        owned |= {ln.split("/", 1)[0] for ln in (out / JOURNAL).read_text(encoding="utf-8").splitlines() if ln}
    for rec in read_manifest(out).values():
        for o in rec.get("outputs") or ():
            t = _top(out, o)
            if t:
                owned.add(t)
    return owned


def check_batch_out(out: pathlib.Path, inputs: Sequence[str | os.PathLike], *, option: str = "--out") -> None:
    """Refuse an output folder that holds anything gpulab batch did not write there (the
    user's files, the inputs), or that is, or holds, one of the inputs: a batch never
    overwrites a file it did not write and never reads its own outputs as inputs."""
    out = pathlib.Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"{option} {out}: a file has that name; give a folder")
    out_r = out.resolve()
    for p in inputs:
        rp = pathlib.Path(p).resolve()
        if rp == out_r or out_r in rp.parents:
            raise UserError(f"{option} {out}: it holds the input {p}; write the outputs into a separate folder")
    if out.is_dir():
        owned = batch_owned(out)
        foreign = sorted(q.name for q in out.iterdir() if q.name not in owned)
        if foreign:
            raise UserError(foreign_message(f"{option} {out}", foreign, "give a new or empty folder, or the "
                                            "folder of an earlier batch to resume it"))


def _journal(out: pathlib.Path, rels: Sequence[str]) -> None:
    if not rels:
        return
    with open(out / JOURNAL, "a", encoding="utf-8") as fh:
        fh.write("".join(f"{r}\n" for r in rels))
        fh.flush()
        os.fsync(fh.fileno())


def _publish(stage: pathlib.Path, out: pathlib.Path, files: Sequence[pathlib.Path]) -> list[pathlib.Path]:
    """Move an item's staged files into ``out``; an existing file there is replaced only if
    gpulab batch wrote it (else the item fails and nothing is moved)."""
    owned: set[str] | None = None  # read (marker, journal, manifest) only when a file is in the way
    rels = []
    for f in files:
        rel = pathlib.Path(f).resolve().relative_to(stage.resolve())
        dest = out / rel
        if dest.exists() and owned is None:
            owned = batch_owned(out)
        if dest.exists() and rel.parts[0] not in owned:
            raise UserError(f"{dest} exists and gpulab did not write it; it is left alone (choose a new --out)")
        rels.append(rel.as_posix())
    _journal(out, rels)
    published = []
    for rel in rels:
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(stage / rel, dest)
        published.append(dest)
    return published


# --------------------------------------------------------------------------- on the worker
def _bump_attempts(out_dir: pathlib.Path, key: str) -> int:
    d = out_dir / _ATTEMPTS
    d.mkdir(exist_ok=True)
    f = d / key
    n = 1
    with contextlib.suppress(OSError, ValueError):
        n = int(f.read_text().strip() or 0) + 1
    f.write_text(str(n))
    return n


class RetryableError(RuntimeError):
    """Raised on a worker for a failure worth another attempt (out of GPU memory): Dask retries."""


def _import_on_main_thread() -> None:
    """Libraries whose first import must happen on the process's main thread (pymeshlab)."""
    with contextlib.suppress(ImportError):
        import pymeshlab  # noqa: F401


def process_item(tool_name: str, item: BatchItem, out_dir: str, params: dict, device: str | None) -> dict:
    """Run one item on this worker: load it, run the tool, write its outputs. Returns its
    manifest record; a user's mistake or a bug becomes a ``failed`` record (not retried),
    running out of memory raises :class:`RetryableError` (Dask retries it elsewhere)."""
    from gpu_kernels.backend import get_backend

    t0 = time.perf_counter()
    out = pathlib.Path(out_dir)
    attempts = _bump_attempts(out, item.key)
    rec: dict[str, Any] = {"key": item.key, "inputs": list(item.inputs), "attempts": attempts,
                           "worker": f"{socket.gethostname()}:{os.getpid()}",
                           "visible_gpus": os.environ.get("CUDA_VISIBLE_DEVICES", "")}
    try:
        tool = tool_by_name(tool_name)
        be = get_backend(device)
        rec["device"] = be.label
        with be.activate():
            data = tool.load_item(item)
            if tool.item_params is not None:
                params = tool.item_params(item, params)
            result = tool.run(data, params, device=be, progress=None)
            stage = out / _STAGING / f"{item.key}.{os.getpid()}"
            shutil.rmtree(stage, ignore_errors=True)
            stage.mkdir(parents=True)
            try:
                files = _publish(stage, out, tool.write_item(result, stage, item.key))
            finally:
                shutil.rmtree(stage, ignore_errors=True)
            metrics = tool.metrics_of(result)
        rec.update(status="done", outputs=[str(p) for p in files],
                   metrics={k: v for k, v in (metrics or {}).items() if isinstance(v, int | float | str | bool)})
    except Exception as exc:  # noqa: BLE001 - every failure becomes a record
        kind, msg = classify(exc, f"item {item.key}")
        if kind == "oom":
            raise RetryableError(msg) from None
        rec.update(status="failed", error=msg, error_kind=kind)
        if kind == "bug":
            rec["traceback"] = traceback.format_exc()[-4000:]
    rec["seconds"] = round(time.perf_counter() - t0, 4)
    return rec


# --------------------------------------------------------------------------- manifest
def read_manifest(out_dir: str | os.PathLike) -> dict[str, dict]:
    """The latest record of each item key in ``OUT/manifest.jsonl`` (empty if none)."""
    path = pathlib.Path(out_dir) / MANIFEST
    latest: dict[str, dict] = {}
    if not path.is_file():
        return latest
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash
        if isinstance(rec, dict) and "key" in rec:
            latest[rec["key"]] = rec
    return latest


class _Manifest:
    def __init__(self, out_dir: pathlib.Path):
        self.path = out_dir / MANIFEST
        self.lock = threading.Lock()

    def append(self, rec: dict) -> None:
        line = json.dumps(rec, sort_keys=True) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


# --------------------------------------------------------------------------- planning
@dataclass
class BatchSummary:
    """What a batch did; ``records`` are the manifest lines written by this run."""

    total: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    seconds: float = 0.0
    workers: int = 0
    devices: list[str] = field(default_factory=list)
    dashboard: str = ""
    startup_seconds: float = 0.0
    records: list[dict] = field(default_factory=list)
    finish: dict | None = None

    @property
    def items_per_second(self) -> float:
        """Finished items per second once the workers were up."""
        n = self.done + self.failed
        t = self.seconds - self.startup_seconds
        return n / t if t > 0 else 0.0


def plan(tool: Tool, inputs: Sequence[str | os.PathLike], out_dir: pathlib.Path) -> tuple[list[BatchItem], list[dict]]:
    """The items to run, and skip records for those already done (outputs complete)."""
    items = tool.items(list(inputs))
    if not items:
        raise UserError(f"no {tool.input_kind.lower()} to process in {', '.join(map(str, inputs))}")
    keys = [i.key for i in items]
    if len(set(keys)) != len(keys):
        raise UserError("two batch items have the same name; rename one of the inputs")
    previous = read_manifest(out_dir)
    previous.pop("__finish__", None)
    todo, skipped = [], []
    for it in items:
        prev = previous.get(it.key)
        if prev and prev.get("status") in ("done", "skipped") and prev.get("outputs") and \
                all(pathlib.Path(o).is_file() for o in prev["outputs"]):
            skipped.append({"key": it.key, "status": "skipped", "inputs": list(it.inputs),
                            "outputs": prev["outputs"], "reason": "done in an earlier run"})
        else:
            todo.append(it)
    return todo, skipped


def _gpu_ids(gpus: str | int | None) -> list[int]:
    """The GPUs to use: ``all``, a number, or ``none``."""
    if gpus in (None, "none", 0, "0"):
        return []
    from gpu_kernels.backend import cuda_device_count

    n = cuda_device_count()
    if gpus == "all":
        return list(range(n))
    try:
        k = int(gpus)
    except (TypeError, ValueError):
        raise UserError(f"--gpus must be all, none or a number, not {gpus!r}") from None
    if k > n:
        raise UserError(f"--gpus {k} asks for more GPUs than this machine has ({n})")
    return list(range(k))


def require_dask() -> None:
    """A one-line :class:`UserError` naming the extra when Dask is not installed."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise UserError("install gpulab[batch] to run batches (Dask and distributed are not installed)") from None


def make_cluster(*, workers: int | None = None, gpus: str | int | None = "all", retries: int = 2,
                 dashboard: bool = True):
    """A local cluster: one worker per GPU, each pinned to its own device (dask-cuda's
    LocalCUDACluster when installed, else the same pinning through ``CUDA_VISIBLE_DEVICES``),
    or ``workers`` CPU worker processes. Returns ``(cluster, device_spec, n_workers)``."""
    require_dask()
    import dask
    from distributed import LocalCluster

    dask.config.set({"distributed.scheduler.allowed-failures": int(retries),
                     "distributed.worker.daemon": False})
    ids = _gpu_ids(gpus)
    dash = ":0" if dashboard else None
    if ids:
        try:
            from dask_cuda import LocalCUDACluster

            cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=ids, threads_per_worker=1,
                                       dashboard_address=dash, silence_logs=logging.ERROR)
        except ImportError:
            from distributed import Nanny, Scheduler, SpecCluster

            spec = {f"gpu-{i}": {"cls": Nanny, "options": {"nthreads": 1, "env": {
                "CUDA_VISIBLE_DEVICES": str(i), "GPULAB_DEVICE": "cuda:0"}, "silence_logs": logging.ERROR}}
                for i in ids}
            cluster = SpecCluster(workers=spec, scheduler={"cls": Scheduler, "options": {
                "dashboard_address": dash}}, silence_logs=logging.ERROR)
        return cluster, "cuda:0", len(ids)
    n = int(workers or max(1, (os.cpu_count() or 2)))
    cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=dash,
                           silence_logs=logging.ERROR)
    return cluster, "cpu", n


def _main_thread_plugin():
    """A Dask worker plugin that imports on the worker's main thread (its event loop) at start:
    pymeshlab imported first from a task thread corrupts the heap."""
    from distributed import WorkerPlugin

    class MainThreadImports(WorkerPlugin):
        name = "gpulab-main-thread-imports"

        def setup(self, worker):
            _import_on_main_thread()

    return MainThreadImports()


def _no_sigint_plugin():
    """A Dask worker plugin for the local cluster's workers: SIGINT ignored. A terminal's Ctrl+C reaches
    every process of its group; the driver cancels the batch and stops the workers, which otherwise
    printed their own shutdown's tracebacks beside "gpulab: cancelled". (Not for ``--scheduler``'s
    workers: a user stops those with Ctrl+C in their own terminal.)"""
    from distributed import WorkerPlugin

    class IgnoreSigint(WorkerPlugin):
        name = "gpulab-ignore-sigint"

        def setup(self, worker):
            import signal

            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    return IgnoreSigint()


# --------------------------------------------------------------------------- the driver
BatchProgress = Callable[[BatchSummary, dict], None]


def run_batch(tool: str | Tool, inputs: Sequence[str | os.PathLike], out_dir: str | os.PathLike, *,
              params: dict | None = None, scheduler: str | None = None, workers: int | None = None,
              gpus: str | int | None = "all", retries: int = 2, device: str | None = None,
              on_record: BatchProgress | None = None, on_start: Callable[..., None] | None = None,
              cancel: threading.Event | None = None) -> BatchSummary:
    """Run ``tool`` over every item of ``inputs``, writing into ``out_dir``.

    Parameters
    ----------
    tool : str or Tool
        A tool name from :data:`app.tools.TOOLS` (``mesh-seg``, ``imseg``, ...).
    inputs : paths
        Files and folders; the tool says what an item is (:meth:`Tool.items`).
    params : dict, optional
        The tool's parameters (validated here, exactly as the single-item command does).
    scheduler : str, optional
        ``tcp://host:port`` of an existing Dask scheduler; its workers need gpulab installed.
        Without it a local cluster is started (:func:`make_cluster`).
    workers, gpus, retries
        Local cluster size; ``retries`` is how often an item whose worker died (or that ran out
        of GPU memory) is rescheduled.
    device : str, optional
        The device spec each worker uses (default: its own GPU, or the CPU).
    on_record : callable, optional
        Called as ``on_record(summary, record)`` for every finished item (progress bars).
    on_start : callable, optional
        Called as ``on_start(summary, client)`` once the workers are up.
    cancel : threading.Event, optional
        When set, the batch stops: running items are cancelled, finished ones stay recorded.
    """
    require_dask()
    from distributed import Client, as_completed

    tool = tool if isinstance(tool, Tool) else _tool(tool)
    p = tool.params.validate(params or {})
    out = pathlib.Path(out_dir)
    check_batch_out(out, inputs)
    # one wording with every writer's and output check's (app.io.atomic.cannot_write; review B #6)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(cannot_write(f"--out {out}", write_reason(exc, out))) from None
    if not os.access(out, os.W_OK):
        raise UserError(cannot_write(f"--out {out}", unwritable_reason(out)))
    todo, skipped = plan(tool, inputs, out)
    check_batch_out(out, [f for it in todo for f in it.inputs] + [f for r in skipped for f in r["inputs"]])
    if not (out / OUTPUT_MARKER).exists():
        write_output_marker(out, [MANIFEST, _ATTEMPTS, JOURNAL, _STAGING])
    manifest = _Manifest(out)
    summary = BatchSummary(total=len(todo) + len(skipped))
    t0 = time.perf_counter()
    for rec in skipped:
        manifest.append(rec)
        summary.skipped += 1
        summary.records.append(rec)
        if on_record:
            on_record(summary, rec)
    if not todo:
        summary.seconds = time.perf_counter() - t0
        return summary
    cluster = None
    client = None
    cancelled = False
    try:
        if scheduler:
            try:
                client = Client(scheduler, timeout=f"{SCHEDULER_CONNECT_S}s")
            except OSError as exc:
                raise UserError(f"--scheduler {scheduler}: no Dask scheduler answers there ({exc})") from None
            try:
                client.wait_for_workers(1, timeout=120)
            except TimeoutError:
                raise UserError(f"--scheduler {scheduler}: the scheduler has no workers (start some with "
                                f"'dask worker {scheduler}')") from None
            spec = device
            summary.workers = len(client.scheduler_info().get("workers", {}))
        else:
            cluster, spec, summary.workers = make_cluster(workers=workers, gpus=gpus, retries=retries)
            spec = device or spec
            client = Client(cluster)
        try:
            client.register_plugin(_main_thread_plugin())
        except Exception as exc:  # noqa: BLE001 - an old worker: items still run, pymeshlab may not
            log.warning("could not register the worker plugin: %s", exc)
        if cluster is not None:
            with contextlib.suppress(Exception):
                client.register_plugin(_no_sigint_plugin())
        summary.dashboard = getattr(client, "dashboard_link", "") or ""
        summary.startup_seconds = time.perf_counter() - t0
        if on_start:
            on_start(summary, client)
        futures = {client.submit(process_item, tool.name, it, str(out.resolve()), p, spec, pure=False,
                                 retries=int(retries), key=f"gpulab-{tool.name}-{it.key}-{time.time_ns()}"): it
                   for it in todo}
        ac = as_completed(futures)
        for fut in ac:
            it = futures[fut]
            try:
                rec = fut.result()
            except Exception as exc:  # noqa: BLE001 - KilledWorker, RetryableError after the retries
                rec = {"key": it.key, "inputs": list(it.inputs), "status": "failed",
                       "error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500],
                       "error_kind": "worker"}
                with contextlib.suppress(Exception):
                    rec["attempts"] = int((out / _ATTEMPTS / it.key).read_text())
            manifest.append(rec)
            summary.records.append(rec)
            if rec["status"] == "done":
                summary.done += 1
                if rec.get("device") and rec["device"] not in summary.devices:
                    summary.devices.append(rec["device"])
            else:
                summary.failed += 1
            summary.seconds = time.perf_counter() - t0
            if on_record:
                on_record(summary, rec)
            if cancel is not None and cancel.is_set():
                for f in futures:
                    f.cancel()
                from gpu_kernels.jobs import Cancelled

                raise Cancelled()
        if tool.batch_finish is not None:
            done = [r for r in read_manifest(out).values() if r.get("status") in ("done", "skipped")
                    and r["key"] != "__finish__"]
            rec = client.submit(finish_batch, tool.name, str(out.resolve()), done, p, spec, pure=False).result()
            manifest.append(rec)
            summary.records.append(rec)
            summary.finish = rec
            if rec["status"] != "done":
                summary.failed += 1
            if on_record:
                on_record(summary, rec)
    except BaseException as exc:
        from gpu_kernels.jobs import Cancelled

        cancelled = isinstance(exc, (KeyboardInterrupt, Cancelled))
        raise
    finally:
        summary.seconds = time.perf_counter() - t0
        with contextlib.suppress(OSError):
            (out / _STAGING).rmdir()  # only when empty: a killed worker's stage stays for the next run
        # after a cancel (a terminal's Ctrl+C reaches the workers too), Dask's complaints while it
        # stops them ("Worker process still alive after 4.0 seconds, killing", a CancelledError's
        # traceback) are not the user's business: the command says "cancelled", one line
        with _quiet_dask() if cancelled else contextlib.nullcontext():
            if client is not None and cluster is not None:
                _quiet_workers(client)   # (our own workers: their shutdown's heartbeat errors are not the user's)
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close(timeout=10)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close(timeout=20)
    return summary


def _quiet_worker_logs() -> None:
    """On a worker: Dask's loggers (distributed, tornado, asyncio) silent from now on."""
    for n in ("distributed", "tornado", "asyncio"):
        logging.getLogger(n).setLevel(logging.CRITICAL + 1)


def _quiet_workers(client, timeout: float = 5.0) -> None:
    """Silence the local cluster's workers before it stops (session 30): a worker whose heartbeat meets the closed
    scheduler logs "Failed to communicate with scheduler during heartbeat" and a CommClosedError's traceback from its
    own process, beside "gpulab: cancelled" (seen once in CI after a Ctrl+C, tests/framework/
    test_mends11_batch_sigint.py). At most ``timeout`` seconds: a worker that does not answer does not hold the
    shutdown up."""
    def run():
        with contextlib.suppress(Exception):
            client.run(_quiet_worker_logs, on_error="ignore")

    t = threading.Thread(target=run, name="gpulab-quiet-workers", daemon=True)
    t.start()
    t.join(timeout)


@contextlib.contextmanager
def _quiet_dask():
    """Dask's loggers (distributed, tornado, asyncio) silent inside."""
    loggers = [logging.getLogger(n) for n in ("distributed", "tornado", "asyncio")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.setLevel(level)


def finish_batch(tool_name: str, out_dir: str, records: list[dict], params: dict, device: str | None) -> dict:
    """The tool's ``batch_finish`` on a worker, after every item (a ``finish`` record)."""
    from gpu_kernels.backend import get_backend

    t0 = time.perf_counter()
    rec: dict[str, Any] = {"key": "__finish__", "worker": f"{socket.gethostname()}:{os.getpid()}"}
    try:
        tool = tool_by_name(tool_name)
        be = get_backend(device)
        rec["device"] = be.label
        with be.activate():
            files = tool.batch_finish(pathlib.Path(out_dir), records, params, device=be)
        _journal(pathlib.Path(out_dir), [t for t in (_top(pathlib.Path(out_dir), p) for p in files) if t])
        rec.update(status="done", outputs=[str(p) for p in files])
    except Exception as exc:  # noqa: BLE001
        kind, msg = classify(exc, "finishing the batch")
        rec.update(status="failed", error=msg, error_kind=kind)
    rec["seconds"] = round(time.perf_counter() - t0, 4)
    return rec


def _tool(name: str) -> Tool:
    try:
        return tool_by_name(name)
    except KeyError:
        raise UserError(f"unknown task {name!r}; choose from {', '.join(t.name for t in TOOLS)}") from None
