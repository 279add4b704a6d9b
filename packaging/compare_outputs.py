"""Compare two ``gpulab demo`` output folders (e.g. the checkout's and an installed copy's).

    python packaging/compare_outputs.py REFERENCE OTHER

The same files must exist in both. Arrays (.npy, .flo, .pfm, .seg, label PNGs, PLY vertex and
face data) must agree to a small tolerance; text summaries are compared without their timing
lines; pictures must have the same size. Exits 1 with one line per difference.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

TIMING = re.compile(r"(\d+(\.\d+)?\s*(s|ms|us|µs|seconds?)\b|time|took|per sample|device|cuda|cpu|gpu|version|"
                    r"gpulab \d)", re.I)


def _array(path: Path):
    s = path.suffix.lower()
    if s == ".npy":
        return np.load(path)
    if s == ".flo":
        raw = path.read_bytes()
        w, h = np.frombuffer(raw[4:12], dtype="<i4")
        return np.frombuffer(raw[12:], dtype="<f4").reshape(h, w, 2)
    if s in (".seg", ".csv"):
        return path.read_text().split()
    if s == ".ply":
        return path.read_bytes()
    if s in (".png", ".jpg", ".pfm", ".bin"):
        from PIL import Image

        if s in (".png", ".jpg"):
            with Image.open(path) as im:
                return ("image", im.size, im.mode)
        return path.stat().st_size
    return None


def compare(ref: Path, other: Path) -> list[str]:
    problems = []
    a = {p.relative_to(ref) for p in ref.rglob("*") if p.is_file()}
    b = {p.relative_to(other) for p in other.rglob("*") if p.is_file()}
    for p in sorted(a - b):
        problems.append(f"missing: {p}")
    for p in sorted(b - a):
        problems.append(f"extra: {p}")
    for rel in sorted(a & b):
        pa, pb = ref / rel, other / rel
        if rel.suffix == ".txt":
            la = [ln for ln in pa.read_text().splitlines() if not TIMING.search(ln)]
            lb = [ln for ln in pb.read_text().splitlines() if not TIMING.search(ln)]
            if la != lb:
                diff = next((x, y) for x, y in zip(la + [""], lb + [""], strict=False) if x != y)
                problems.append(f"differs: {rel}: {diff[0]!r} vs {diff[1]!r}")
            continue
        xa, xb = _array(pa), _array(pb)
        if isinstance(xa, np.ndarray):
            if xa.shape != xb.shape or not np.allclose(xa, xb, rtol=1e-4, atol=1e-4, equal_nan=True):
                problems.append(f"differs: {rel} (shape {xa.shape} vs {xb.shape}, "
                                f"max |diff| {np.nanmax(np.abs(xa - xb)) if xa.shape == xb.shape else '-'})")
        elif xa != xb:
            problems.append(f"differs: {rel}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    ref, other = Path(argv[0]), Path(argv[1])
    problems = compare(ref, other)
    n = sum(1 for p in ref.rglob("*") if p.is_file())
    if problems:
        print(f"compare: {len(problems)} of {n} files differ between {ref} and {other}:")
        print("\n".join(f"  {p}" for p in problems))
        return 1
    print(f"compare: the {n} files of {other} match {ref}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
