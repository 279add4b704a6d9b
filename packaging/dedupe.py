"""Replace duplicate files in a folder by relative symbolic links (for the PyInstaller bundle).

    python packaging/dedupe.py FOLDER

Wheels cannot hold symbolic links, so libraries ship the same shared object under two names
(pymeshlab's libembree4.so and libembree4.so.4: 44 MB each). The first copy in sorted order
stays; the others become links to it. Prints what it saved.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections import defaultdict
from pathlib import Path

MIN_SIZE = 256 * 1024  # small files are not worth a link


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=20)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dedupe(root: Path) -> tuple[int, int]:
    by_size: dict[int, list[Path]] = defaultdict(list)
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and p.stat().st_size >= MIN_SIZE:
            by_size[p.stat().st_size].append(p)
    n = saved = 0
    for size, paths in by_size.items():
        if len(paths) < 2:
            continue
        groups: dict[str, list[Path]] = defaultdict(list)
        for p in paths:
            groups[_digest(p)].append(p)
        for same in groups.values():
            keep, *rest = same
            for p in rest:
                p.unlink()
                p.symlink_to(os.path.relpath(keep, p.parent))
                n += 1
                saved += size
    return n, saved


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python packaging/dedupe.py FOLDER", file=sys.stderr)
        return 2
    n, saved = dedupe(Path(argv[0]))
    print(f"   {n} duplicate files replaced by links, {saved / 2**20:.0f} MB saved")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
