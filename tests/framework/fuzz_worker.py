"""Run one registered reader over every file of a folder, in a memory-limited process.

``python fuzz_worker.py READER FOLDER MEMORY_MB TIMEOUT_S`` prints one JSON line per file
(``START`` before it, so a crash names its file): ``ok``, ``input_error`` (the one allowed
failure) or ``other`` with the exception, ``timeout`` past TIMEOUT_S.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import pkgutil
import resource
import signal
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


class _Timeout(BaseException):
    pass


def main() -> int:
    name, folder, mem_mb, timeout = sys.argv[1], pathlib.Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    import app.io
    from app.io.registry import reader_by_name
    from gpu_kernels.errors import InputError

    for m in pkgutil.iter_modules(app.io.__path__):
        importlib.import_module(f"app.io.{m.name}")
    reader = reader_by_name(name)
    # warm up the reader's libraries before the memory limit (their code maps are not the input's)
    for p in sorted(folder.iterdir()):
        if p.name.startswith("valid-"):
            try:
                reader.read(p)
            except Exception:  # noqa: BLE001
                pass
            break
    limit = mem_mb << 20
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

    def on_alarm(*_):
        raise _Timeout()

    signal.signal(signal.SIGALRM, on_alarm)
    for p in sorted(folder.iterdir()):
        print(json.dumps({"start": p.name}), flush=True)
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            reader.read(p)
            out = {"case": p.name, "outcome": "ok"}
        except _Timeout:
            out = {"case": p.name, "outcome": "timeout"}
        except InputError as exc:
            msg = str(exc)
            out = {"case": p.name, "outcome": "input_error", "message": msg,
                   "one_line": "\n" not in msg.strip()}
        except BaseException as exc:  # noqa: BLE001
            out = {"case": p.name, "outcome": "other", "message": f"{type(exc).__name__}: {exc}"[:300]}
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out["seconds"] = round(time.perf_counter() - t0, 3)
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
