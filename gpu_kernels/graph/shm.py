"""Shared-memory files of the multi-process APSP (:mod:`gpu_kernels.graph.apsp`) and their
clean-up after a killed run. Standard library only: the CLI and the window call
:func:`cleanup_stale_shared_memory` at start-up.
"""

from __future__ import annotations

import contextlib
import os
import time

__all__ = ["SHM_PREFIX", "cleanup_stale_shared_memory"]

#: the shared result files: ``gpulab-apsp-<pid of the process that made it>-<random>``
SHM_PREFIX = "gpulab-apsp-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mapped_shm_files() -> set[str] | None:
    """Names of the /dev/shm files some process maps now (from /proc/*/maps), or None when a
    process of ours could not be inspected (then nothing may be called stale)."""
    names: set[str] = set()
    uid = os.getuid()
    try:
        pids = [d for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps", "rb") as fh:
                for line in fh:
                    i = line.find(b"/dev/shm/")
                    if i >= 0:
                        names.add(line[i + 9:].split(b" (deleted)")[0].strip().decode("utf-8", "replace"))
        except (FileNotFoundError, ProcessLookupError):
            continue
        except OSError:
            # a process of ours we may not inspect could be a Python program using the files
            # (init of a sandbox is root's and unreadable, but is not Python)
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    cmd = fh.read(4096)
                if os.stat(f"/proc/{pid}").st_uid == uid and (b"python" in cmd.lower() or not cmd):
                    return None
            except OSError:
                continue
    return names


def cleanup_stale_shared_memory(shm_dir: str = "/dev/shm", *, min_age_s: float = 60.0) -> list[str]:
    """Remove what killed runs left in ``shm_dir``: result files ``gpulab-apsp-<pid>-*`` of
    processes that no longer exist, and multiprocessing semaphores (``sem.mp-*``) and older
    unnamed result files that no process maps any more and that are older than ``min_age_s``.

    A run killed with SIGKILL cannot remove its own files (a killed 40,000-face run left
    6.4 GB); the next run calls this before it starts its workers. Only files of this user
    are touched. Returns the names removed.
    """
    removed: list[str] = []
    try:
        entries = os.listdir(shm_dir)
    except OSError:
        return removed
    uid = os.getuid()
    unowned: list[str] = []
    for name in entries:
        if not (name.startswith(SHM_PREFIX) or name.startswith("sem.mp-")):
            continue
        path = os.path.join(shm_dir, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid != uid:
            continue
        pid_part = name[len(SHM_PREFIX):].split("-", 1)[0] if name.startswith(SHM_PREFIX) else ""
        if pid_part.isdigit() and "-" in name[len(SHM_PREFIX):]:
            if not _pid_alive(int(pid_part)):
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed.append(name)
            continue
        if time.time() - st.st_mtime >= min_age_s:
            unowned.append(name)
    if unowned:
        mapped = _mapped_shm_files()
        if mapped is not None:
            for name in unowned:
                if name not in mapped:
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(shm_dir, name))
                        removed.append(name)
    return removed
