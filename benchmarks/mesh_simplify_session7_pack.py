"""Issue 22 (session 7, second simplifier helper): a lossless, smaller form of ``.npz`` files (the
PSB pack, the ``stored=`` working-mesh stores) to carry to the device, which allows 64 MiB per call
(``--f32``: float64 as float32, not lossless, for when even that does not fit).
Each array's bytes are split into byte planes (the high bytes of floats and ints compress well
apart from the noisy low ones), then LZMA-compressed; ``unpack`` gives back an ``.npz`` whose
arrays are bit-identical (same names, dtypes, shapes, bytes) to the original.

    python benchmarks/mesh_simplify_session7_pack.py pack IN.npz OUT.npzx
    python benchmarks/mesh_simplify_session7_pack.py pack IN.npz OUT.npzx --f32   # floats rounded
    python benchmarks/mesh_simplify_session7_pack.py unpack IN.npzx OUT.npz   # on the device
"""
from __future__ import annotations

import argparse
import json
import lzma
import struct
import sys
from pathlib import Path

import numpy as np

MAGIC = b"NPZX1\n"


def pack_arrays(arrays: dict, f32: bool = False) -> bytes:
    """``{name: array}`` -> bytes (header, then the LZMA stream of every array's byte planes).
    ``f32``: float64 arrays travel as float32 (NOT lossless: ~6e-8 relative) and come back as
    float64; int arrays whose values fit travel as int16 (lossless)."""
    head, body = [], []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a)
        dtype = a.dtype.str
        if f32 and a.dtype == np.float64:
            a = a.astype(np.float32)
        elif f32 and a.dtype.kind == "i" and a.size and -32768 <= a.min() and a.max() < 32768:
            a = a.astype(np.int16)
        head.append({"name": name, "dtype": dtype, "as": a.dtype.str, "shape": list(a.shape)})
        body.append(a.reshape(-1).view(np.uint8).reshape(a.size, a.itemsize).T.tobytes())
    h = json.dumps(head).encode()
    return MAGIC + struct.pack("<Q", len(h)) + h + lzma.compress(b"".join(body), preset=9 | lzma.PRESET_EXTREME)


def unpack_arrays(blob: bytes) -> dict:
    if not blob.startswith(MAGIC):
        raise ValueError("not a packed npz (bad magic)")
    n = struct.unpack_from("<Q", blob, len(MAGIC))[0]
    start = len(MAGIC) + 8
    head = json.loads(blob[start:start + n])
    raw = lzma.decompress(blob[start + n:])
    out, pos = {}, 0
    for h in head:
        dt = np.dtype(h.get("as", h["dtype"]))
        size = int(np.prod(h["shape"], dtype=np.int64))
        nb = size * dt.itemsize
        planes = np.frombuffer(raw, np.uint8, nb, pos).reshape(dt.itemsize, size)
        a = np.ascontiguousarray(planes.T).view(dt).reshape(h["shape"])
        out[h["name"]] = a.astype(h["dtype"]) if dt.str != h["dtype"] else a
        pos += nb
    if pos != len(raw):
        raise ValueError("packed npz: trailing bytes")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("op", choices=["pack", "unpack"])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--f32", action="store_true", help="pack float64 as float32 (lossy, ~6e-8 relative), ints as int16")
    a = ap.parse_args(argv)
    if a.op == "pack":
        with np.load(a.src) as z:
            a.dst.write_bytes(pack_arrays({k: z[k] for k in z.files}, f32=a.f32))
    else:
        np.savez(a.dst, **unpack_arrays(a.src.read_bytes()))
    print(f"{a.op}: {a.src} ({a.src.stat().st_size / 1e6:.2f} MB) -> {a.dst} ({a.dst.stat().st_size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
