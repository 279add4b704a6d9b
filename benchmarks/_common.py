"""Timing helpers shared by the benchmarks: warm-up, CUDA events, medians, tables.

Only numpy (and cupy where there is a GPU) are needed, so the scripts run on a bare GPU
host.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = [
    "median",
    "time_cpu",
    "time_gpu",
    "device_name",
    "host_description",
    "format_table",
    "save_results",
    "fmt_bytes",
    "fmt_seconds",
]

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs)) if xs else float("nan")


def time_cpu(fn: Callable[[], object], *, warmup: int = 0, repeat: int = 1) -> dict:
    """Wall-clock seconds of ``fn()``: ``{"median", "min", "times"}``."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median": median(times), "min": min(times), "times": times}


def time_gpu(fn: Callable[[], object], *, warmup: int = 1, repeat: int = 3, max_seconds: float | None = None) -> dict:
    """Seconds of ``fn()`` on the current CUDA stream, timed with CUDA events.

    ``fn`` may synchronise itself (the APSP entry points do); the events bracket the
    whole call, so host work inside it counts as well. After ``max_seconds`` of timed
    runs no further repetition is started.
    """
    import cupy as cp

    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    times = []
    spent = 0.0
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        t = cp.cuda.get_elapsed_time(start, stop) / 1e3
        times.append(t)
        spent += t
        if max_seconds is not None and spent > max_seconds:
            break
    return {"median": median(times), "min": min(times), "times": times}


def device_name() -> str:
    try:
        import cupy as cp

        props = cp.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        return (f"{name} ({props['multiProcessorCount']} SMs, {props['clockRate'] / 1e6:.2f} GHz, "
                f"{props['totalGlobalMem'] / 1024**3:.0f} GiB)")
    except Exception as exc:  # noqa: BLE001 - no GPU is a normal case here
        return f"no GPU ({type(exc).__name__})"


def host_description() -> str:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{platform.processor() or platform.machine()}, {cores} cores, Python {platform.python_version()}"


def fmt_bytes(b) -> str:
    if b is None:
        return "-"
    b = float(b)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1024
    return f"{b:.2f} GiB"


def fmt_seconds(t) -> str:
    if t is None or t != t:
        return "-"
    if t < 1e-3:
        return f"{t * 1e6:.0f} us"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def format_table(rows: list[dict], columns: list[tuple[str, str]]) -> str:
    """Markdown table. ``columns``: (key, header); values are str()-ed, None as '-'."""
    head = "| " + " | ".join(h for _, h in columns) + " |"
    sep = "|" + "|".join("---" for _ in columns) + "|"
    lines = [head, sep]
    for r in rows:
        lines.append("| " + " | ".join("-" if r.get(k) is None else str(r.get(k)) for k, _ in columns) + " |")
    return "\n".join(lines)


def save_results(path: str | os.PathLike, payload: dict, table_md: str) -> None:
    """Write ``payload`` as JSON (``.json``) or the table with a header (``.md``); any other
    suffix writes both ``path.json`` and ``path.md``."""
    path = Path(path)
    payload = dict(payload)
    payload.setdefault("date", _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"))
    payload.setdefault("device", device_name())
    payload.setdefault("host", host_description())
    payload.setdefault("command", " ".join(sys.argv))
    md = (f"Device: {payload['device']}; host: {payload['host']}; {payload['date']}\n\n"
          f"Command: `{payload['command']}`\n\n{table_md}\n")
    targets = [path] if path.suffix in (".json", ".md") else [path.with_suffix(".json"), path.with_suffix(".md")]
    for p in targets:
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".json":
            p.write_text(json.dumps(payload, indent=1, default=str))
        else:
            p.write_text(md)
