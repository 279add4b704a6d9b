"""Strip the symbol tables and debug sections from the bundle's shared libraries, and prove that
every stripped library still loads.

    python packaging/strip_libs.py BUNDLE_INTERNAL_DIR

Many wheels ship their libraries unstripped (VTK's symbol tables, 17 MB of debug sections in
libpython, kiwisolver, PyYAML, msgpack, OpenBLAS ...). ``strip --strip-unneeded`` removes only
what the dynamic loader never reads (the dynamic symbols stay), but a library rewritten by
``patchelf`` (auditwheel's ``*.libs`` folders) can be damaged by a strip. So each library is
loaded (``dlopen``, every symbol bound now) in a child process before and after: a library is
kept stripped only if it loaded before and still loads after; every other one gets its original
bytes back. The executable is never touched (PyInstaller appends its archive to it).
Prints what was stripped, what was put back and the bytes saved.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# the child: dlopen each path in order (RTLD_NOW: every symbol bound, so a damaged relocation or
# section table shows), and print one JSON line per library, so a crash costs only that library
LOADER = r"""
import ctypes, json, os, sys
for p in sys.argv[1:]:
    try:
        ctypes.CDLL(p, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        ok = True
    except OSError:
        ok = False
    print(json.dumps([p, ok]), flush=True)
"""


def _is_elf(p: Path) -> bool:
    try:
        with p.open("rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def _has_symbols(p: Path) -> bool:
    out = subprocess.run(["readelf", "-S", "-W", str(p)], capture_output=True, text=True).stdout
    return " .symtab " in out or " .debug_" in out


def loads(paths: list[Path], libdir: Path) -> dict[str, bool]:
    """Which of ``paths`` a fresh process can dlopen (LD_LIBRARY_PATH as the bundle sets it)."""
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               QT_QPA_PLATFORM="offscreen")
    result: dict[str, bool] = {}
    todo = [str(p) for p in paths]
    while todo:
        proc = subprocess.run([sys.executable, "-c", LOADER, *todo], capture_output=True, text=True,
                              env=env, timeout=600)
        for line in proc.stdout.splitlines():
            try:
                p, ok = json.loads(line)
            except ValueError:
                continue
            result[p] = ok
        rest = [p for p in todo if p not in result]
        if rest:  # this one took the process down (or garbled its line): not proven to load
            result[rest[0]] = False
            rest = rest[1:]
        todo = rest
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    root = Path(argv[0]).resolve()
    if shutil.which("strip") is None:
        print("   strip (binutils) is missing: libraries left as they are")
        return 0
    libs = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()
                  and (p.suffix == ".so" or ".so." in p.name) and _is_elf(p) and _has_symbols(p))
    if not libs:
        print("   nothing to strip")
        return 0
    before = loads(libs, root)
    backup = Path(tempfile.mkdtemp(prefix="gpulab-strip-"))
    saved, stripped, restored, unstrippable = 0, [], [], []
    try:
        for i, p in enumerate(libs):
            if not before.get(str(p)):
                continue  # cannot prove it still works: leave it as it is
            keep = backup / str(i)
            shutil.copy2(p, keep)
            size = p.stat().st_size
            if subprocess.run(["strip", "--strip-unneeded", str(p)], capture_output=True).returncode != 0:
                shutil.copy2(keep, p)
                unstrippable.append(p)
                continue
            stripped.append((p, keep, size))
        after = loads([p for p, _, _ in stripped], root)
        failed = []
        for p, keep, size in stripped:
            if not after.get(str(p)):
                shutil.copy2(keep, p)
                failed.append((p, keep, size))
        # a library that failed may only have needed one the strip broke (every extension linked
        # to a damaged OpenBLAS fails with it): with all of those back, try each alone again
        for p, keep, _size in failed:
            if subprocess.run(["strip", "--strip-unneeded", str(p)], capture_output=True).returncode != 0 \
                    or not loads([p], root).get(str(p)):
                shutil.copy2(keep, p)
                restored.append(p)
        for p, _, size in stripped:
            if p not in restored:
                saved += size - p.stat().st_size
    finally:
        shutil.rmtree(backup, ignore_errors=True)
    n_ok = len(stripped) - len(restored)
    n_unloadable = len(libs) - len(stripped) - len(unstrippable)
    print(f"   stripped {n_ok} of {len(libs)} unstripped libraries, {saved / 1e6:.1f} MB saved "
          f"({n_unloadable} left as they were: they do not load alone, so a strip "
          "could not be checked)")
    for p in unstrippable:
        print(f"   left as it was (strip failed on it): {p.relative_to(root)}")
    for p in restored:
        print(f"   put back (did not load after strip): {p.relative_to(root)}")
    for p, _, size in sorted(stripped, key=lambda t: -t[2])[:8]:
        if p not in restored:
            print(f"     {p.relative_to(root)}: {size / 1e6:.1f} -> {p.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
